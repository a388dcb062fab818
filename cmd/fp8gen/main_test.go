package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/fp8gen/fp8gen/backend"
	"github.com/fp8gen/fp8gen/fp8"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/lower"
	"github.com/fp8gen/fp8gen/npy"
	"github.com/fp8gen/fp8gen/ops"
	"github.com/fp8gen/fp8gen/target"
)

// The test binary doubles as the command when FP8GEN_TEST_ARGS is set (the
// arguments separated by \x1f), optionally under a file size limit of
// FP8GEN_TEST_FSIZE bytes: that is how a write is made to fail midway even
// for root, who ignores file permissions.
func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv("FP8GEN_TEST_ARGS"); ok {
		if s := os.Getenv("FP8GEN_TEST_FSIZE"); s != "" {
			n, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				panic(err)
			}
			if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: n, Max: n}); err != nil {
				panic(err)
			}
		}
		os.Exit(Main(strings.Split(args, "\x1f"), os.Stdout, os.Stderr))
	}
	// No tuning cache of the user's changes what the tests see (the tests
	// of the cache set their own).
	os.Setenv("FP8GEN_TUNE_CACHE", filepath.Join(os.TempDir(), fmt.Sprintf("fp8gen-test-%d-no-tune.json", os.Getpid())))
	os.Exit(m.Run())
}

// fp8gen runs Main in-process.
func fp8gen(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = Main(args, &o, &e)
	return code, o.String(), e.String()
}

// want checks the exit status and that text holds every string.
func want(t *testing.T, args []string, code, wantCode int, text string, subs ...string) {
	t.Helper()
	if code != wantCode {
		t.Errorf("fp8gen %s: exit %d, want %d; output:\n%s", strings.Join(args, " "), code, wantCode, text)
	}
	for _, s := range subs {
		if !strings.Contains(text, s) {
			t.Errorf("fp8gen %s: output does not contain %q:\n%s", strings.Join(args, " "), s, text)
		}
	}
}

var gpu = sync.OnceValue(func() bool {
	g, err := backend.OpenGPU()
	if err != nil {
		return false
	}
	g.Close()
	return true
})

// noGPU skips tests of the behaviour without a GPU on a machine with one.
func noGPU(t *testing.T) {
	t.Helper()
	if gpu() {
		t.Skip("a GPU is present")
	}
}

// cpu forces the interpreter on a machine with a GPU, so that the test
// checks the same thing everywhere; without one it leaves --device at auto.
func cpu(args ...string) []string {
	if gpu() {
		return append(args, "--device", "cpu")
	}
	return args
}

func TestList(t *testing.T) {
	code, out, errs := fp8gen(t, "list")
	want(t, []string{"list"}, code, 0, out)
	if errs != "" {
		t.Errorf("stderr: %q", errs)
	}
	for _, n := range ops.Names() {
		op, _ := ops.Lookup(n)
		if !strings.Contains(out, "  "+n+" ") {
			t.Errorf("list does not show op %s", n)
		}
		for _, k := range op.Kernels {
			if !strings.Contains(out, k.Name) {
				t.Errorf("list does not show kernel %s of %s", k.Name, n)
			}
			if k.Option != "" && !strings.Contains(out, k.Name+" if "+k.Option) {
				t.Errorf("list does not say that kernel %s of %s runs only under %s", k.Name, n, k.Option)
			}
		}
	}
	formats := map[string]string{"gfx942": "e4m3 = e4m3fnuz (max 240)", "gfx950": "e4m3 = e4m3fn (max 448)", "sm_90": "e4m3 = e4m3fn (max 448)"}
	if len(target.Names()) != len(formats) {
		t.Errorf("targets %v, the test knows %d", target.Names(), len(formats))
	}
	for _, n := range target.Names() {
		line := ""
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "  "+n+" ") {
				line = l
			}
		}
		if line == "" {
			t.Errorf("list shows no line for target %s", n)
			continue
		}
		if f, ok := formats[n]; !ok || !strings.Contains(line, f) {
			t.Errorf("target line %q: want %q", line, f)
		}
	}
	code, _, errs = fp8gen(t, "list", "extra")
	want(t, []string{"list", "extra"}, code, 2, errs, "extra")
}

func TestHelp(t *testing.T) {
	for _, a := range []string{"help", "--help", "-h"} {
		code, out, _ := fp8gen(t, a)
		want(t, []string{a}, code, 0, out, "Usage: fp8gen COMMAND", "list", "ir", "emit", "run", "bench")
	}
	// No command at all is misuse: the usage on stderr, nothing on stdout.
	code, out, errs := fp8gen(t)
	want(t, nil, code, 2, errs, "Usage: fp8gen COMMAND", "run")
	if out != "" {
		t.Errorf("fp8gen with no command wrote to stdout: %q", out)
	}
	code, _, errs = fp8gen(t, "frobnicate")
	want(t, []string{"frobnicate"}, code, 2, errs, `unknown command "frobnicate"`)
	for _, c := range []string{"list", "ir", "emit", "run", "bench"} {
		code, _, errs := fp8gen(t, c, "--help")
		want(t, []string{c, "--help"}, code, 0, errs, "Usage: fp8gen "+c)
	}
	code, _, errs = fp8gen(t, "run", "--nosuchflag")
	want(t, []string{"run", "--nosuchflag"}, code, 2, errs, "nosuchflag")
}

func TestIR(t *testing.T) {
	args := []string{"ir", "rowwise_cast", "--shape", "M=5,K=33"}
	code, out, errs := fp8gen(t, args...)
	want(t, args, code, 0, out+errs, "func rowwise_cast(", "reduce", "// fp8gen rowwise_cast (op rowwise_cast) for sm_90")
	if strings.Contains(out, "vec=") {
		t.Errorf("IR before lowering shows vec=:\n%s", out)
	}

	args = append(args, "--after", "vectorize")
	code, out2, errs := fp8gen(t, args...)
	want(t, args, code, 0, out2+errs, "func rowwise_cast(", "vec=")
	if out2 == out {
		t.Error("--after vectorize prints the same IR as before lowering")
	}

	args = []string{"ir", "rowwise_cast", "--after", "nosuch"}
	code, _, errs = fp8gen(t, args...)
	want(t, args, code, 2, errs, append([]string{`"nosuch"`}, lower.PassNames()...)...)

	// An op of two kernels prints both, or the one --kernel names.
	args = []string{"ir", "colwise_cast", "--shape", "M=8,K=8", "--target", "gfx942"}
	code, out, errs = fp8gen(t, args...)
	want(t, args, code, 0, out+errs, "func colwise_amax(", "func colwise_cast(", "e4m3fnuz")
	args = append(args, "--kernel", "colwise_cast")
	code, out, errs = fp8gen(t, args...)
	want(t, args, code, 0, out+errs, "func colwise_cast(")
	if strings.Contains(out, "colwise_amax") {
		t.Errorf("--kernel colwise_cast prints colwise_amax too")
	}

	for _, args := range [][]string{{"ir"}, {"ir", "nosuch"}, {"ir", "rowwise_cast", "--target", "sm_99"}, {"ir", "rowwise_cast", "--shape", "M=0,K=4"}} {
		code, _, errs := fp8gen(t, args...)
		want(t, args, code, 2, errs)
		if errs == "" {
			t.Errorf("fp8gen %v: no message", args)
		}
	}
}

func TestIRUnknownKernel(t *testing.T) {
	args := []string{"ir", "rowwise_cast", "--shape", "M=5,K=33", "--kernel", "nosuch"}
	code, _, errs := fp8gen(t, args...)
	want(t, args, code, 2, errs, "nosuch", "rowwise_cast")
}

func TestEmitFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "k.hip")
	args := []string{"emit", "rowwise_cast", "--target", "gfx942", "--shape", "M=64,K=256", "-o", path}
	code, out, errs := fp8gen(t, args...)
	want(t, args, code, 0, out+errs)
	if out != "" {
		t.Errorf("emit -o wrote to stdout: %q", out)
	}
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	for _, w := range []string{"#include <hip/hip_runtime.h>", "__launch_bounds__(", `extern "C"`, "rowwise_cast_"} {
		if !strings.Contains(s, w) {
			t.Errorf("%s does not contain %q", path, w)
		}
	}
	comment := false
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "//") && strings.Contains(l, "op rowwise_cast") && strings.Contains(l, "gfx942") &&
			strings.Contains(l, "e4m3fnuz") && strings.Contains(l, "schedule ") && strings.Contains(l, "WARPS=") {
			comment = true
		}
	}
	if !comment {
		t.Errorf("%s has no comment line naming op, target, format and schedule:\n%s", path, s)
	}
	// The file is what stdout gets, and nothing else is left in the folder.
	code, out, _ = fp8gen(t, args[:len(args)-2]...)
	if code != 0 || out != s {
		t.Errorf("emit to stdout (exit %d) differs from the file", code)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("folder holds %v, want k.hip alone", ents)
	}
	// Emitting again replaces the file.
	args[3] = "sm_90"
	code, _, errs = fp8gen(t, args...)
	want(t, args, code, 0, errs)
	if src2, _ := os.ReadFile(path); !strings.Contains(string(src2), "sm_90") || strings.Contains(string(src2), "e4m3fnuz") {
		t.Errorf("second emit did not replace the file")
	}
}

func TestEmitTwoKernels(t *testing.T) {
	args := []string{"emit", "tensorwise_cast", "--target", "sm_90", "--shape", "M=64,K=256"}
	code, out, errs := fp8gen(t, args...)
	want(t, args, code, 0, out+errs, "tensorwise_amax_", "tensorwise_cast_", "e4m3fn")
	for w, n := range map[string]int{
		`extern "C" __global__`:          2,
		"#include <stdint.h>":            1,
		"#include <hip/hip_runtime.h>":   0, // NVIDIA sources include no HIP header
		"float fp8g_maxf(float a":        1,
		"(op tensorwise_cast) for sm_90": 2,
	} {
		if got := strings.Count(out, w); got != n {
			t.Errorf("%q appears %d times, want %d", w, got, n)
		}
	}
	if strings.Contains(out, "e4m3fnuz") {
		t.Error("sm_90 source names e4m3fnuz")
	}
	if a, c := strings.Index(out, "tensorwise_amax_"), strings.Index(out, "tensorwise_cast_"); a > c {
		t.Error("tensorwise_cast comes before tensorwise_amax")
	}
}

func TestEmitErrors(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "k.hip")
	cases := []struct {
		args []string
		subs []string
	}{
		{[]string{"emit", "rowwise_cast", "--target", "sm_99"}, []string{`"sm_99"`, "gfx942, gfx950, sm_90"}},
		{[]string{"emit", "rowwise_cast", "--target", "gfx942", "--schedule", "WARPS=64", "-o", out}, []string{"schedule knob WARPS=64: want a power of two in [1, 16] on gfx942"}},
		{[]string{"emit", "rowwise_cast", "--target", "gfx942", "--schedule", "WARPS=4611686018427387904", "-o", out}, []string{"WARPS=4611686018427387904: want a power of two in [1, 16]"}},
		{[]string{"emit", "rowwise_cast", "--target", "gfx942", "--schedule", "BLOCK_K=1024", "-o", out}, []string{"BLOCK_K must be at least K"}},
		{[]string{"emit", "rowwise_cast", "--target", "gfx942", "--schedule", "LOOP=2", "-o", out}, []string{"LOOP=2: want 0 or 1"}},
		{[]string{"emit", "rowwise_cast", "--target", "gfx942", "--schedule", "WARPS=2,WARPS=4", "-o", out}, []string{"WARPS given twice"}},
		{[]string{"emit", "rowwise_cast", "--target", "gfx942", "--schedule", "NOPE=1", "-o", out}, []string{"NOPE", "WARPS"}},
		{[]string{"emit", "rowwise_cast", "--target", "gfx942", "--schedule", "WARPS"}, []string{"WARPS"}},
		{[]string{"emit", "nosuch", "--target", "gfx942"}, []string{`"nosuch"`, "rowwise_cast"}},
		{[]string{"emit", "--target", "gfx942"}, []string{"which op"}},
		{[]string{"emit", "rowwise_cast", "--target", "gfx942", "--fp8", "e3m4"}, []string{"e3m4"}},
	}
	for _, c := range cases {
		code, stdout, errs := fp8gen(t, c.args...)
		want(t, c.args, code, 2, errs, c.subs...)
		if stdout != "" {
			t.Errorf("fp8gen %v: stdout %q", c.args, stdout)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("failed emits left %v", ents)
	}
}

// noTemp fails if dir holds anything but the names given.
func noTemp(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !slices.Contains(names, e.Name()) {
			t.Errorf("%s holds %s after a failed write", dir, e.Name())
		}
	}
}

func TestEmitAtomic(t *testing.T) {
	emitTo := func(path string) []string {
		return []string{"emit", "rowwise_cast", "--target", "gfx942", "--shape", "M=64,K=256", "-o", path}
	}

	t.Run("path is a folder", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "k.hip")
		if err := os.Mkdir(path, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(path, "keep"), []byte("keep\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errs := fp8gen(t, emitTo(path)...)
		if code == 0 || errs == "" {
			t.Errorf("emit -o FOLDER: exit %d, stderr %q", code, errs)
		}
		if b, err := os.ReadFile(filepath.Join(path, "keep")); err != nil || string(b) != "keep\n" {
			t.Errorf("folder content changed: %q %v", b, err)
		}
		noTemp(t, dir, "k.hip")
		noTemp(t, path, "keep")
	})

	t.Run("folder not writable", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root writes into read-only folders")
		}
		dir := t.TempDir()
		path := filepath.Join(dir, "k.hip")
		if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
		code, _, errs := fp8gen(t, emitTo(path)...)
		if code == 0 || errs == "" {
			t.Errorf("emit into a read-only folder: exit %d, stderr %q", code, errs)
		}
		if b, _ := os.ReadFile(path); string(b) != "old\n" {
			t.Errorf("old file now holds %d bytes", len(b))
		}
		noTemp(t, dir, "k.hip")
	})

	// The write itself fails midway (file size limit): the old file must
	// stay whole and no temporary file may be left.
	t.Run("write fails midway", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "k.hip")
		if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "FP8GEN_TEST_ARGS="+strings.Join(emitTo(path), "\x1f"), "FP8GEN_TEST_FSIZE=1000")
		out, err := cmd.CombinedOutput()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 1 {
			t.Fatalf("emit under a 1000-byte file limit: %v, want exit 1; output:\n%s", err, out)
		}
		if !strings.Contains(string(out), "fp8gen emit:") {
			t.Errorf("no error message: %q", out)
		}
		if b, _ := os.ReadFile(path); string(b) != "old\n" {
			t.Errorf("old file now holds %d bytes: %.60q", len(b), b)
		}
		noTemp(t, dir, "k.hip")
		// The same command without the limit succeeds, so the limit was
		// what failed it.
		cmd = exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "FP8GEN_TEST_ARGS="+strings.Join(emitTo(path), "\x1f"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("emit without a limit: %v\n%s", err, out)
		}
		if b, _ := os.ReadFile(path); len(b) <= 1000 {
			t.Errorf("the source is only %d bytes: the 1000-byte limit tests nothing", len(b))
		}
	})
}

func TestRunInterpreter(t *testing.T) {
	noGPU(t)
	args := []string{"run", "rowwise_cast", "--shape", "M=5,K=33"}
	code, out, errs := fp8gen(t, args...)
	want(t, args, code, 0, out+errs, "bit-exact", "interpreter", "K=33,M=5", "target sm_90", "e4m3fn (max 448)", "kernel rowwise_cast")
	args = append(args, "--adversarial")
	code, out, errs = fp8gen(t, args...)
	want(t, args, code, 0, out+errs, "bit-exact", "interpreter")
	args = append(args, "--target", "gfx942")
	code, out, errs = fp8gen(t, args...)
	want(t, args, code, 0, out+errs, "bit-exact", "target gfx942", "e4m3fnuz (max 240)")
}

func TestRunOps(t *testing.T) {
	for _, name := range ops.Names() {
		op, _ := ops.Lookup(name)
		sh := op.Tests.Odd
		var opts []string // the tests' other option set, as --opt flags
		if len(op.Tests.Options) > 0 {
			for k, v := range op.Tests.Options[0] {
				opts = append(opts, "--opt", k+"="+v)
			}
		}
		check := "check: bit-exact against the reference"
		if op.Allowance != nil {
			check = "  check: " // bit-exact or within the allowance; exit 0 says it matched
		}
		for _, extra := range [][]string{
			{"--adversarial"},
			append([]string{"--adversarial", "--target", "gfx942"}, opts...),
			{"--target", "gfx950", "--seed", "9"},
		} {
			args := cpu(append([]string{"run", name, "--shape", sh.String()}, extra...)...)
			code, out, errs := fp8gen(t, args...)
			if op.OCP && slices.Contains(extra, "gfx942") {
				// One line, exit 2, naming the targets that run it.
				want(t, args, code, 2, errs, "MX formats are OCP's", "gfx950")
				if strings.Count(errs, "\n") != 1 || out != "" {
					t.Errorf("fp8gen %v: stdout %q, stderr %q; want one line on stderr", args, out, errs)
				}
				continue
			}
			want(t, args, code, 0, out+errs, check, name+" "+sh.String())
			if errs != "" {
				t.Errorf("fp8gen %v: stderr %q", args, errs)
			}
		}
	}
}

func TestRunErrors(t *testing.T) {
	cases := []struct {
		args []string
		subs []string
	}{
		{[]string{"run", "rowwise_cast", "--shape", "M=0,K=4"}, []string{"M=0"}},
		{[]string{"run", "rowwise_cast", "--shape", "M=-2,K=4"}, []string{"M=-2"}},
		{[]string{"run", "rowwise_cast", "--shape", "M=70000,K=70000", "--device", "cpu"}, []string{"the interpreter", "14700280000 bytes"}},
		{[]string{"run", "rowwise_cast", "--shape", "M=4,K=4,M=5"}, []string{"M given twice"}},
		{[]string{"run", "rowwise_cast", "--shape", "M=4,K=4", "--opt", "eps=1"}, []string{"unknown option eps"}},
		{[]string{"run", "rowwise_cast", "--shape", "M=4,K=4", "--opt", "in=f32", "--in-dtype", "bf16"}, []string{"both set the option in"}},
		{[]string{"run", "rowwise_cast", "--shape", "M=4,K=4", "--in", "x=a.npy", "--in", "x=b.npy"}, []string{"x given twice"}},
		{[]string{"run", "rowwise_cast", "--shape", "M=4"}, []string{"K", "missing"}},
		{[]string{"run", "rowwise_cast", "--shape", "M=4,K=4,N=4"}, []string{"N"}},
		{[]string{"run", "rowwise_cast", "--shape", "M=four,K=4"}, []string{"M=four is not an integer"}},
		{[]string{"run", "rowwise_cast", "--shape", "E=99999999999999999999,K=4"}, []string{"E=99999999999999999999 overflows int64 (at most 9223372036854775807)"}},
		{[]string{"run", "rowwise_cast", "--shape", "M=-99999999999999999999,K=4"}, []string{"M=-99999999999999999999 overflows int64 (at least -9223372036854775808)"}},
		{[]string{"run", "rowwise_cast", "--shape", "M=4,K=4", "--schedule", "WARPS=99999999999999999999"}, []string{"--schedule", "WARPS=99999999999999999999 overflows int64"}},
		{[]string{"run", "rowwise_cast", "--shape", "M4"}, []string{"M4"}},
		{[]string{"run", "nosuch", "--shape", "M=4,K=4"}, []string{`unknown op "nosuch"`}},
		{[]string{"run", "rowwise_cast", "--shape", "M=4,K=4", "--device", "nope"}, []string{`"nope"`, "auto, cpu or gpu"}},
		{[]string{"run", "rowwise_cast", "--shape", "M=4,K=4", "--device", "cpu", "--target", "sm_99"}, []string{"sm_99"}},
		{[]string{"run", "rowwise_cast", "--shape", "M=4,K=4", "--device", "cpu", "--in-dtype", "f16"}, []string{"f16"}},
		{[]string{"run", "rowwise_cast", "--shape", "M=4,K=4", "--device", "cpu", "--schedule", "WARPS=64", "--target", "gfx942"}, []string{"WARPS=64: want a power of two in [1, 16] on gfx942"}},
		{[]string{"run", "rowwise_cast", "--shape", "M=4,K=4", "--in", "x"}, []string{"NAME=FILE"}},
		{[]string{"run", "rowwise_cast", "--in", "x=" + filepath.Join(t.TempDir(), "none.npy")}, []string{"none.npy"}},
	}
	for _, c := range cases {
		code, out, errs := fp8gen(t, c.args...)
		want(t, c.args, code, 2, errs, c.subs...)
		if out != "" {
			t.Errorf("fp8gen %v: stdout %q", c.args, out)
		}
	}
}

func TestRunDeviceGPU(t *testing.T) {
	noGPU(t)
	args := []string{"run", "rowwise_cast", "--shape", "M=4,K=4", "--device", "gpu"}
	code, out, errs := fp8gen(t, args...)
	if code == 0 {
		t.Errorf("fp8gen %v: exit 0 without a GPU", args)
	}
	if !strings.Contains(errs, "fp8gen run:") || !strings.Contains(errs, "GPU") {
		t.Errorf("fp8gen %v: stderr %q does not say that no GPU was found", args, errs)
	}
	if out != "" {
		t.Errorf("fp8gen %v: stdout %q", args, out)
	}
}

func TestBenchNeedsGPU(t *testing.T) {
	noGPU(t)
	res := filepath.Join(t.TempDir(), "results")
	args := []string{"bench", "--ops", "rowwise_cast", "--shapes", "64x64", "--out", res, "--peers", "off"}
	code, out, errs := fp8gen(t, args...)
	if code == 0 {
		t.Errorf("bench without a GPU: exit 0")
	}
	if !strings.Contains(errs, "bench needs a GPU") {
		t.Errorf("bench: stderr %q does not say it needs a GPU", errs)
	}
	if out != "" {
		t.Errorf("bench: stdout %q", out)
	}
	if _, err := os.Stat(res); !os.IsNotExist(err) {
		t.Errorf("bench without a GPU created %s", res)
	}
	args = []string{"bench", "--bogus"}
	code, _, errs = fp8gen(t, args...)
	want(t, args, code, 2, errs, "bogus")
}

// colwiseCall is colwise_cast on sm_90 at m×k with x of type in.
func colwiseCall(t *testing.T, in ir.DType, m, k int) *ops.Call {
	t.Helper()
	tg, _ := target.Lookup("sm_90")
	c, err := ops.Colwise.NewCall(tg, ops.Shape{"M": m, "K": k}, ops.Options{"in": in.String()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// input makes x of shape m×k holding adversarial values, with +Inf, a
// signaling NaN and a subnormal planted where the seed may not put them.
func input(t *testing.T, in ir.DType, m, k int) (*ops.Tensor, *npy.Array) {
	t.Helper()
	c := colwiseCall(t, in, m, k)
	x := ops.Inputs(c, 11, true)["x"]
	if in == ir.F32 {
		for i, bits := range map[int]uint32{0*k + 5: 0x7f800000, 3*k + 6: 0x7f810000, 4*k + 7: 0x00000123, 5*k + 8: 0x80400000} {
			binary.LittleEndian.PutUint32(x.Data[4*i:], bits)
		}
		return x, npy.FromFloat32([]int{m, k}, x.Floats())
	}
	for i, bits := range map[int]uint16{0*k + 5: 0x7f80, 3*k + 6: 0x7f81, 4*k + 7: 0x0012, 5*k + 8: 0x8040} {
		binary.LittleEndian.PutUint16(x.Data[2*i:], bits)
	}
	v := make([]uint16, m*k)
	for i := range v {
		v[i] = binary.LittleEndian.Uint16(x.Data[2*i:])
	}
	return x, npy.FromUint16([]int{m, k}, v)
}

func TestRunNPYRoundTrip(t *testing.T) {
	const m, k = 7, 70
	f := fp8.E4M3FN
	op, _ := ops.Lookup("colwise_cast")
	for _, in := range []ir.DType{ir.F32, ir.BF16} {
		t.Run(in.String(), func(t *testing.T) {
			dir := t.TempDir()
			xt, xa := input(t, in, m, k)
			xfile := filepath.Join(dir, "x.npy")
			if err := npy.WriteFile(xfile, xa); err != nil {
				t.Fatal(err)
			}
			outDir := filepath.Join(dir, "out")
			args := cpu("run", "colwise_cast", "--in", "x="+xfile, "--out", outDir, "--scratch")
			code, out, errs := fp8gen(t, args...)
			want(t, args, code, 0, out+errs, "bit-exact", "K=70,M=7", "target sm_90", "e4m3fn (max 448)", "x "+in.String()+"[7 70]", "wrote 3 outputs")

			ref := op.Reference(colwiseCall(t, in, m, k), map[string]*ops.Tensor{"x": xt})
			read := func(name, dtype string, shape ...int) *npy.Array {
				t.Helper()
				a, err := npy.ReadFile(filepath.Join(outDir, name+".npy"))
				if err != nil {
					t.Fatal(err)
				}
				if a.Dtype != dtype || len(a.Shape) != len(shape) {
					t.Fatalf("%s: %s %v, want %s %v", name, a.Dtype, a.Shape, dtype, shape)
				}
				for i := range shape {
					if a.Shape[i] != shape[i] {
						t.Fatalf("%s: shape %v, want %v", name, a.Shape, shape)
					}
				}
				return a
			}
			qt := read("qt", npy.Uint8, k, m)
			inv := read("inv_scale", npy.Float32, k)
			read("amax", npy.Float32, k)
			if !bytes.Equal(qt.Data, ref["qt"].Data) {
				t.Errorf("qt.npy differs from the reference")
			}
			if !bytes.Equal(inv.Data, ref["inv_scale"].Data) {
				t.Errorf("inv_scale.npy differs from the reference")
			}

			// Independently of the reference: inv_scale is amax/448 per
			// column (Inf for the column holding +Inf), qt is x transposed
			// and scaled, within e4m3's half ulp.
			x := xt.Floats()
			q, _ := qt.Uint8s()
			s, _ := inv.Float32s()
			for j := 0; j < k; j++ {
				amax := 0.0
				for i := 0; i < m; i++ {
					if v := math.Abs(float64(x[i*k+j])); !math.IsNaN(v) {
						amax = math.Max(amax, v)
					}
				}
				switch {
				case math.IsInf(amax, 1):
					if !math.IsInf(float64(s[j]), 1) {
						t.Errorf("column %d holds Inf: inv_scale %v, want +Inf", j, s[j])
					}
					continue
				case amax == 0:
					continue
				}
				if d := math.Abs(float64(s[j])-amax/448) / (amax / 448); d > 1e-6 {
					t.Errorf("column %d: inv_scale %v, want amax/448 = %v", j, s[j], amax/448)
				}
				for i := 0; i < m; i++ {
					v := float64(x[i*k+j])
					got := float64(f.Decode(q[j*m+i])) * float64(s[j])
					if math.IsNaN(v) {
						if !math.IsNaN(got) {
							t.Errorf("x[%d,%d] NaN: qt gives %v", i, j, got)
						}
						continue
					}
					if tol := math.Max(math.Abs(v)/16, amax*math.Pow(2, -9)/448*1.01); math.Abs(got-v) > tol {
						t.Errorf("x[%d,%d] = %v: qt gives %v", i, j, v, got)
					}
				}
			}
		})
	}
}

// A --shape that agrees with the file's is accepted.
func TestRunNPYMatchingShape(t *testing.T) {
	dir := t.TempDir()
	_, xa := input(t, ir.F32, 7, 70)
	xfile := filepath.Join(dir, "x.npy")
	if err := npy.WriteFile(xfile, xa); err != nil {
		t.Fatal(err)
	}
	for _, shape := range []string{"M=7,K=70", "K=70,M=7"} {
		args := cpu("run", "colwise_cast", "--in", "x="+xfile, "--shape", shape)
		code, out, errs := fp8gen(t, args...)
		want(t, args, code, 0, out+errs, "bit-exact")
	}
}

func TestRunNPYErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, a *npy.Array) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := npy.WriteFile(p, a); err != nil {
			t.Fatal(err)
		}
		return p
	}
	i4 := write("i4.npy", &npy.Array{Dtype: "<i4", Shape: []int{2, 3}, Data: make([]byte, 24)})
	u1 := write("u1.npy", npy.FromUint8([]int{2, 3}, make([]uint8, 6)))
	_, xa := input(t, ir.F32, 7, 70)
	x := write("x.npy", xa)
	oneD := write("oned.npy", npy.FromFloat32([]int{6}, make([]float32, 6)))
	bad := filepath.Join(dir, "bad.npy")
	if err := os.WriteFile(bad, []byte("not a npy file"), 0o644); err != nil {
		t.Fatal(err)
	}
	outDir := filepath.Join(dir, "out")
	cases := []struct {
		args []string
		subs []string
	}{
		{[]string{"run", "colwise_cast", "--in", "x=" + i4, "--out", outDir}, []string{"<i4", "i4.npy"}},
		{[]string{"run", "colwise_cast", "--in", "x=" + u1, "--out", outDir}, []string{"holds |u1 (fp8 or e8m0); x takes bf16 or f32"}},
		{[]string{"run", "colwise_cast", "--in", "x=" + x, "--shape", "M=8,K=70", "--out", outDir}, []string{"M=8,K=70", "[7 70]"}},
		{[]string{"run", "colwise_cast", "--in", "x=" + x, "--shape", "M=70,K=7", "--out", outDir}, []string{"[7 70]"}},
		{[]string{"run", "colwise_cast", "--in", "x=" + oneD, "--out", outDir}, []string{"[6]", "2 dimensions"}},
		{[]string{"run", "colwise_cast", "--in", "x=" + bad, "--out", outDir}, []string{"bad.npy"}},
		{[]string{"run", "colwise_cast", "--shape", "M=7,K=70", "--in", "y=" + x, "--out", outDir, "--device", "cpu"}, []string{"no input y"}},
	}
	for _, c := range cases {
		code, out, errs := fp8gen(t, c.args...)
		want(t, c.args, code, 2, errs, c.subs...)
		if out != "" {
			t.Errorf("fp8gen %v: stdout %q", c.args, out)
		}
	}
	if _, err := os.Stat(outDir); !os.IsNotExist(err) {
		t.Errorf("failed runs created %s", outDir)
	}
}

// grouped_colwise_cast from files: x and offsets, the shape read from
// them; bad offsets are refused before any launch, naming the element,
// and nothing is written.
func TestRunGroupedOffsetsFromFiles(t *testing.T) {
	dir := t.TempDir()
	_, xa := input(t, ir.F32, 7, 70) // T=7, K=70
	xfile := filepath.Join(dir, "x.npy")
	if err := npy.WriteFile(xfile, xa); err != nil {
		t.Fatal(err)
	}
	offs := func(name string, v ...int32) string {
		p := filepath.Join(dir, name)
		if err := npy.WriteFile(p, npy.FromInt32([]int{len(v)}, v)); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := offs("good.npy", 0, 3, 3, 7)
	outDir := filepath.Join(dir, "out")
	args := cpu("run", "grouped_colwise_cast", "--in", "x="+xfile, "--in", "offsets="+good, "--out", outDir)
	code, out, errs := fp8gen(t, args...)
	want(t, args, code, 0, out+errs, "bit-exact", "E=4,K=70,T=7", "offsets i32[4]")
	if _, err := os.Stat(filepath.Join(outDir, "qt.npy")); err != nil {
		t.Error(err)
	}
	bad := filepath.Join(dir, "bad-out")
	for _, c := range []struct{ file, want string }{
		{offs("decreasing.npy", 3, 2, 7), "offsets[1] = 2 is less than offsets[0] = 3"},
		{offs("short.npy", 1, 2, 6), "offsets[2] = 6: the last offset must be T = 7"},
		{offs("past.npy", 1, 9, 7), "offsets[1] = 9 is past T = 7"},
		{offs("negative.npy", -1, 2, 7), "offsets[0] = -1 is negative"},
	} {
		args := cpu("run", "grouped_colwise_cast", "--in", "x="+xfile, "--in", "offsets="+c.file, "--out", bad)
		code, out, errs := fp8gen(t, args...)
		want(t, args, code, 2, errs, c.want)
		if out != "" {
			t.Errorf("fp8gen %v: stdout %q", args, out)
		}
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Errorf("refused runs created %s", bad)
	}
}

// run --in takes the QK-norm op's inputs, whose names the op lists once
// per token order (qkv [B,S,…] if order=bshd, [S,B,…] if sbhd): only the
// order the flags select is held to the files.
func TestRunQKFromFiles(t *testing.T) {
	op, _ := ops.Lookup("qk_norm_rope")
	tg, _ := target.Lookup("sm_90")
	for _, order := range []string{"bshd", "sbhd"} {
		t.Run(order, func(t *testing.T) {
			sh := ops.Shape{"B": 2, "S": 3, "HQ": 4, "HKV": 2, "D": 64}
			c, err := op.NewCall(tg, sh, ops.Options{"order": order})
			if err != nil {
				t.Fatal(err)
			}
			in := ops.Inputs(c, 3, false)
			dir := t.TempDir()
			args := cpu("run", "qk_norm_rope", "--shape", "B=2,S=3,HQ=4,HKV=2,D=64", "--opt", "order="+order, "--out", filepath.Join(dir, "out"))
			for name, x := range in {
				var a *npy.Array
				if x.DType == ir.BF16 {
					v := make([]uint16, x.Elems())
					for i := range v {
						v[i] = uint16(x.Bits(i))
					}
					a = npy.FromUint16(x.Shape, v)
				} else {
					a = npy.FromFloat32(x.Shape, x.Floats())
				}
				f := filepath.Join(dir, name+".npy")
				if err := npy.WriteFile(f, a); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--in", name+"="+f)
			}
			code, out, errs := fp8gen(t, args...)
			want(t, args, code, 0, out+errs, "B=2,D=64,HKV=2,HQ=4,S=3", "wrote 3 outputs")
			got := map[string]*ops.Tensor{}
			for _, s := range c.SpecsOf(ops.Output) {
				a, err := npy.ReadFile(filepath.Join(dir, "out", s.Name+".npy"))
				if err != nil {
					t.Fatal(err)
				}
				got[s.Name] = &ops.Tensor{Spec: s, Data: a.Data}
			}
			if _, err := c.CheckOutputs(in, got); err != nil {
				t.Error(err)
			}
		})
	}
}

// A file for an input the options leave out is refused, not a crash.
func TestRunInputTheOptionsLeaveOut(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "cos.npy")
	if err := npy.WriteFile(f, npy.FromFloat32([]int{1, 64}, make([]float32, 64))); err != nil {
		t.Fatal(err)
	}
	args := cpu("run", "qk_norm_rope", "--shape", "B=1,S=1,HQ=1,HKV=1,D=64", "--opt", "angles=theta", "--in", "cos="+f)
	code, out, errs := fp8gen(t, args...)
	want(t, args, code, 2, out+errs, "--in cos", "takes no cos", "angles=theta")
}
