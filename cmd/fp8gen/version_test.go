package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	goruntime "runtime"

	fpruntime "github.com/fp8gen/fp8gen/runtime"
)

// version names the build and each compiler: one found, with its path and
// version line, and one not found, saying so.
func TestVersion(t *testing.T) {
	dir := t.TempDir()
	hipcc := filepath.Join(dir, "hipcc")
	if err := os.WriteFile(hipcc, []byte("#!/bin/sh\necho 'HIP version: 9.9.9-test'\necho 'clang version 99'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HIPCC", hipcc)
	t.Setenv("NVCC", filepath.Join(dir, "no-nvcc"))
	t.Setenv("FP8GEN_CACHE", filepath.Join(dir, "cache"))
	code, out, errs := fp8gen(t, "version")
	want(t, []string{"version"}, code, 0, out+errs,
		"fp8gen ", ", commit ", "built with "+goruntime.Version(),
		"hipcc "+hipcc+": HIP version: 9.9.9-test\n",
		"nvcc  not found (", "no-nvcc")
	if errs != "" {
		t.Errorf("version wrote to stderr: %q", errs)
	}
	cgo := "cgo: yes"
	if !fpruntime.Cgo {
		cgo = "cgo: no"
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[1], cgo) {
		t.Errorf("version: want 4 lines (build, cgo, nvcc, hipcc), got:\n%s", out)
	}
	code, out2, _ := fp8gen(t, "--version")
	if code != 0 || out2 != out {
		t.Errorf("--version (exit %d) differs from version:\n%s", code, out2)
	}
	code, _, errs = fp8gen(t, "version", "extra")
	want(t, []string{"version", "extra"}, code, 2, errs, "extra")
}
