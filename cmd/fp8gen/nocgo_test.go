package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// fp8gen builds with CGO_ENABLED=0, and that binary does everything that
// needs no GPU; what needs one is refused with exit 2 and the reason.
func TestBuildWithoutCgo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fp8gen (-short)")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build with: %v", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "fp8gen")
	build := exec.Command(goTool, "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build: %v\n%s", err, out)
	}
	run := func(args ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "FP8GEN_TUNE_CACHE="+filepath.Join(dir, "tune.json"), "FP8GEN_CACHE="+filepath.Join(dir, "cache"))
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0, string(out)
		case errors.As(err, &ee):
			return ee.ExitCode(), string(out)
		}
		t.Fatalf("fp8gen %v: %v", args, err)
		return 0, ""
	}
	const why = "this fp8gen was built without cgo; GPUs need the cgo build"
	for _, c := range []struct {
		args []string
		code int
		subs []string
	}{
		{[]string{"version"}, 0, []string{"cgo: no (" + why + ")"}},
		{[]string{"emit", "rowwise_cast", "--target", "sm_90", "--shape", "M=4,K=64"}, 0, []string{`extern "C"`}},
		{[]string{"run", "rowwise_cast", "--shape", "M=4,K=64"}, 0, []string{"interpreter (no GPU: this fp8gen was built without cgo)", "bit-exact"}},
		{[]string{"run", "rowwise_cast", "--shape", "M=4,K=64", "--device", "gpu"}, 2, []string{"fp8gen run: ", why}},
		{[]string{"bench", "--ops", "rowwise_cast", "--shapes", "64x64", "--peers", "off", "--out", "res"}, 2, []string{"fp8gen bench: ", why}},
		{[]string{"export", "rowwise_cast", "--target", "sm_90", "--shape", "M=4,K=64", "--compile", "no", "-o", "ex"}, 0, []string{"manifest.json", "no code object"}},
		{[]string{"generate", "-o", "k_gen.go", "-package", "k", "rowwise_cast@M=4,K=64"}, 0, []string{"1 launchers"}},
	} {
		code, out := run(c.args...)
		want(t, c.args, code, c.code, out, c.subs...)
	}
	if _, err := os.Stat(filepath.Join(dir, "k_gen_kernels", "rowwise_cast", "sm_90", "manifest.json")); err != nil {
		t.Errorf("generate without cgo wrote no exports: %v", err)
	}
}
