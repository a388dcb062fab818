//go:build cgo

package runtime

import (
	"strings"
	"testing"

	"github.com/fp8gen/fp8gen/target"
)

// The driver's symbol table and loader exist in the cgo build only.

func TestSymbolTable(t *testing.T) {
	seen := map[int]bool{}
	for _, s := range symbols {
		if seen[s.slot] {
			t.Errorf("slot %d listed twice", s.slot)
		}
		seen[s.slot] = true
		if s.cuda == "" && s.hip == "" {
			t.Errorf("slot %d has no symbol for either vendor", s.slot)
		}
	}
	if len(seen) != len(driver{}.names) {
		t.Errorf("table has %d slots, C enum %d", len(seen), len(driver{}.names))
	}
}

func TestLoadMissingLibrary(t *testing.T) {
	_, err := tryLoad(target.NVIDIA, []string{"libfp8gen-does-not-exist.so.1"})
	if err == nil || !strings.Contains(err.Error(), "libfp8gen-does-not-exist.so.1") {
		t.Fatalf("tryLoad of a missing library: %v; want an error naming it", err)
	}
	t.Logf("missing library: %v", err)

	drvMu.Lock()
	loaded := drv != nil
	drvMu.Unlock()
	if loaded {
		t.Skip("a driver is already loaded in this process; FP8GEN_GPU no longer matters")
	}
	t.Setenv("FP8GEN_GPU", "opencl")
	if _, err := Open(0); err == nil || !strings.Contains(err.Error(), "FP8GEN_GPU") {
		t.Errorf("Open with FP8GEN_GPU=opencl: %v; want an error naming the variable", err)
	}
}
