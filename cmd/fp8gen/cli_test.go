package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fp8gen/fp8gen/runtime"
	"github.com/fp8gen/fp8gen/target"
)

// onGPU makes the commands see a GPU of target name (no GPU where name is
// empty) for the rest of the test.
func onGPU(t *testing.T, name string) {
	t.Helper()
	old := detectGPU
	t.Cleanup(func() { detectGPU = old })
	detectGPU = func() (*target.Target, error) {
		if name == "" {
			return nil, fmt.Errorf("%w: none in this test", runtime.ErrNoDevice)
		}
		return target.Lookup(name)
	}
}

// emit and export take the GPU's target where --target is not given, and
// without a GPU refuse, naming the targets; ir falls back to sm_90.
func TestTargetDefaultsToGPU(t *testing.T) {
	onGPU(t, "gfx950")
	code, out, errs := fp8gen(t, "emit", "rowwise_cast")
	want(t, []string{"emit", "rowwise_cast"}, code, 0, errs, "")
	if !strings.Contains(out, "for gfx950") {
		t.Errorf("emit without --target on a gfx950: not for gfx950:\n%.300s", out)
	}
	dir := t.TempDir()
	code, out, errs = fp8gen(t, "export", "rowwise_cast", "--compile", "no", "-o", dir)
	want(t, []string{"export"}, code, 0, out+errs, "for gfx950")

	onGPU(t, "")
	for _, args := range [][]string{
		{"emit", "rowwise_cast"},
		{"export", "rowwise_cast", "-o", filepath.Join(dir, "none")},
	} {
		code, out, errs := fp8gen(t, args...)
		want(t, args, code, 2, errs, "no GPU found", "pass --target", "gfx942, gfx950, sm_90")
		if out != "" {
			t.Errorf("fp8gen %v: stdout %q", args, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "none")); err == nil {
		t.Errorf("export without a target made its folder")
	}
	code, out, errs = fp8gen(t, "ir", "rowwise_cast")
	want(t, []string{"ir", "rowwise_cast"}, code, 0, errs)
	if !strings.Contains(out, "target=sm_90") {
		t.Errorf("ir without --target or GPU: not sm_90:\n%.300s", out)
	}
}

// Each command's help says what it takes where --target and --shape are
// left out, as the code does.
func TestHelpSaysTheDefaults(t *testing.T) {
	for _, c := range []struct {
		cmd  string
		subs []string
	}{
		{"emit", []string{"(default: the GPU's; without one, --target is required)", "(default: the op's example shape)"}},
		{"export", []string{"(default: the GPU's; without one, --target is required)"}},
		{"ir", []string{"(default: the GPU's, else sm_90)"}},
		{"run", []string{"(default: the GPU's, else sm_90 in the interpreter)", "the rest from the op's example shape"}},
		{"tune", []string{"not taken: tune chooses the schedule"}},
	} {
		code, out, errs := fp8gen(t, c.cmd, "--help")
		want(t, []string{c.cmd, "--help"}, code, 0, out+errs, c.subs...)
	}
}

// run with no --shape runs the op's example shape, with generated inputs.
func TestRunExampleShape(t *testing.T) {
	args := []string{"run", "rowwise_cast", "--device", "cpu"}
	code, out, errs := fp8gen(t, args...)
	want(t, args, code, 0, out+errs, "rowwise_cast K=4096,M=4096 on cpu", "check: bit-exact")
}
