package emit

import (
	"strings"
	"testing"

	"github.com/fp8gen/fp8gen/target"
)

// A stage's copies are cp.async on NVIDIA, with the wait before the
// barrier that shows them; on AMD a load and an LDS store, and no wait.
func TestStagedCopies(t *testing.T) {
	for _, e := range emittedOn(t, "rows staged in LDS", "staged", "sm_90", "gfx942") {
		name, src := e.tg.Name, e.src
		t.Logf("%s:\n%s", name, src)
		if e.tg.Vendor == target.AMD {
			if strings.Contains(src, "cp.async") || strings.Contains(src, "fp8g_cp_async") {
				t.Errorf("%s: an asynchronous copy on AMD:\n%s", name, src)
			}
			continue
		}
		for _, want := range []string{
			"fp8g_cp_async16(lds + ",
			"fp8g_cp_async4(lds + ",
			"cp.async.cg.shared.global [%0], [%1], 16, %2;",
			"cp.async.ca.shared.global [%0], [%1], 4, %2;",
			"asm volatile(\"cp.async.wait_all;\" ::: \"memory\");\n  __syncthreads();",
		} {
			if !strings.Contains(src, want) {
				t.Errorf("%s: no %q in:\n%s", name, want, src)
			}
		}
	}
}
