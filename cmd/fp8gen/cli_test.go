package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/npy"
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

// run --out makes the folder and its missing parents, and writes the
// outputs only; --scratch adds the scratch tensors.
func TestRunOutScratchAndParents(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "a", "b", "c")
	args := cpu("run", "tensorwise_cast", "--shape", "M=4,K=64", "--out", out)
	code, stdout, errs := fp8gen(t, args...)
	want(t, args, code, 0, stdout+errs, "wrote 2 outputs", "inv_scale, q", "(scratch not written: amax; add --scratch)")
	if got := names(t, out); got != "inv_scale.npy q.npy" {
		t.Errorf("--out holds %s", got)
	}
	args = append(args, "--scratch")
	code, stdout, errs = fp8gen(t, args...)
	want(t, args, code, 0, stdout+errs, "wrote 3 outputs", "amax, inv_scale, q")
	if got := names(t, out); got != "amax.npy inv_scale.npy q.npy" {
		t.Errorf("--out --scratch holds %s", got)
	}
	args = cpu("run", "tensorwise_cast", "--shape", "M=4,K=64", "--scratch")
	code, stdout, errs = fp8gen(t, args...)
	want(t, args, code, 2, errs, "--scratch without --out")
	// A failed check of the outputs' paths leaves no folder behind.
	if err := os.Mkdir(filepath.Join(dir, "x", ""), 0o755); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "x", "new", "deeper")
	args = cpu("run", "rowwise_cast", "--shape", "M=4,K=64", "--out", bad, "--in", "x=nope")
	if code, _, _ := fp8gen(t, args...); code != 2 {
		t.Errorf("fp8gen %v: exit %d, want 2", args, code)
	}
	if _, err := os.Stat(filepath.Join(dir, "x", "new")); err == nil {
		t.Errorf("a refused run left %s", filepath.Join(dir, "x", "new"))
	}
}

func names(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ns []string
	for _, e := range ents {
		ns = append(ns, e.Name())
	}
	return strings.Join(ns, " ")
}

// An output path that is a symlink is written through, the link kept; one
// that is a folder is refused with exit 2 before any work.
func TestOutputsThroughLinksNotFolders(t *testing.T) {
	dir := t.TempDir()
	elsewhere := filepath.Join(dir, "elsewhere")
	if err := os.Mkdir(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	isLinkTo := func(link, to string) {
		t.Helper()
		fi, err := os.Lstat(link)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("%s is no longer a symlink (%v)", link, err)
		}
		b, err := os.ReadFile(to)
		if err != nil || len(b) == 0 {
			t.Fatalf("%s was not written through the link: %v", to, err)
		}
	}

	// run --out: q.npy a link (to a file not there yet), inv_scale.npy a folder.
	out := filepath.Join(dir, "out")
	os.Mkdir(out, 0o755)
	qTo := filepath.Join(elsewhere, "q.npy")
	if err := os.Symlink(qTo, filepath.Join(out, "q.npy")); err != nil {
		t.Fatal(err)
	}
	args := cpu("run", "rowwise_cast", "--shape", "M=4,K=64", "--out", out)
	code, stdout, errs := fp8gen(t, args...)
	want(t, args, code, 0, stdout+errs, "wrote 2 outputs")
	isLinkTo(filepath.Join(out, "q.npy"), qTo)
	if err := os.Mkdir(filepath.Join(dir, "out2"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "out2", "inv_scale.npy"), 0o755)
	args = cpu("run", "rowwise_cast", "--shape", "M=4,K=64", "--out", filepath.Join(dir, "out2"))
	code, stdout, errs = fp8gen(t, args...)
	want(t, args, code, 2, errs, "inv_scale.npy is a folder, not a file")
	if stdout != "" {
		t.Errorf("fp8gen %v ran anyway: %q", args, stdout)
	}

	// export -o: manifest.json a link, then the source a folder.
	exp := filepath.Join(dir, "exp")
	os.Mkdir(exp, 0o755)
	mTo := filepath.Join(elsewhere, "manifest.json")
	os.Symlink(mTo, filepath.Join(exp, "manifest.json"))
	args = []string{"export", "rowwise_cast", "--target", "sm_90", "--compile", "no", "-o", exp}
	code, stdout, errs = fp8gen(t, args...)
	want(t, args, code, 0, stdout+errs, "manifest.json")
	isLinkTo(filepath.Join(exp, "manifest.json"), mTo)
	var src string
	for _, n := range strings.Fields(names(t, exp)) {
		if n != "manifest.json" {
			src = n
		}
	}
	exp2 := filepath.Join(dir, "exp2")
	os.MkdirAll(filepath.Join(exp2, src), 0o755)
	args = []string{"export", "rowwise_cast", "--target", "sm_90", "--compile", "no", "-o", exp2}
	code, _, errs = fp8gen(t, args...)
	want(t, args, code, 2, errs, src+" is a folder, not a file")

	// generate -o: the Go file through its link; a folder refused.
	gdir := filepath.Join(dir, "gen")
	os.Mkdir(gdir, 0o755)
	gTo := filepath.Join(elsewhere, "real_gen.go")
	os.Symlink(gTo, filepath.Join(gdir, "k_gen.go"))
	args = []string{"generate", "-package", "k", "--targets", "sm_90", "-o", filepath.Join(gdir, "k_gen.go"), "rowwise_cast@M=1,K=16"}
	code, stdout, errs = fp8gen(t, args...)
	want(t, args, code, 0, stdout+errs)
	isLinkTo(filepath.Join(gdir, "k_gen.go"), gTo)
	os.Mkdir(filepath.Join(gdir, "d_gen.go"), 0o755)
	args = []string{"generate", "-package", "k", "-o", filepath.Join(gdir, "d_gen.go"), "rowwise_cast"}
	code, _, errs = fp8gen(t, args...)
	want(t, args, code, 2, errs, "is a folder, not a file")
}

// run says where each input came from, and --seed makes the generated
// ones: the same seed, the same outputs; another seed, others.
func TestRunInputProvenanceAndSeed(t *testing.T) {
	dir := t.TempDir()
	run := func(seed string) []byte {
		t.Helper()
		out := filepath.Join(dir, "s"+seed)
		args := cpu("run", "rowwise_cast", "--shape", "M=4,K=64", "--seed", seed, "--out", out)
		code, stdout, errs := fp8gen(t, args...)
		want(t, args, code, 0, stdout+errs, "input x bf16[4 64]: generated, seed "+seed+" (normal values × 3)")
		b, err := os.ReadFile(filepath.Join(out, "q.npy"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if a, b, c := run("5"), run("5"), run("6"); string(a) != string(b) || string(a) == string(c) {
		t.Errorf("--seed 5 twice gave the same q: %v; --seed 6 another: %v", string(a) == string(b), string(a) != string(c))
	}
	args := cpu("run", "rowwise_cast", "--shape", "M=4,K=64")
	code, stdout, errs := fp8gen(t, args...)
	want(t, args, code, 0, stdout+errs, "generated, seed 1 ")

	_, xa := input(t, ir.F32, 7, 70)
	xfile := filepath.Join(dir, "x.npy")
	if err := npy.WriteFile(xfile, xa); err != nil {
		t.Fatal(err)
	}
	args = cpu("run", "grouped_colwise_cast", "--in", "x="+xfile, "--shape", "E=4,K=70,T=7", "--seed", "3")
	code, stdout, errs = fp8gen(t, args...)
	want(t, args, code, 0, stdout+errs, "input x f32[7 70]: read from "+xfile+"\n",
		"input offsets i32[4]: generated, seed 3 (the op's generator of valid offsets)",
		"inputs: 1 read from files, 1 generated (seed 3)")
}

// Refusals of --in name each tensor once and its sizes by name.
func TestRunInMessagesNameSizes(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, a *npy.Array) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := npy.WriteFile(p, a); err != nil {
			t.Fatal(err)
		}
		return p
	}
	freq := write("freq.npy", npy.FromFloat32([]int{31}, make([]float32, 31)))
	_, xa := input(t, ir.F32, 7, 70)
	x := write("x.npy", xa)
	oneD := write("oned.npy", npy.FromFloat32([]int{6}, make([]float32, 6)))
	offs := write("offs.npy", npy.FromInt32([]int{3}, []int32{0, 1, 7}))
	for _, c := range []struct {
		args []string
		subs []string
	}{
		{cpu("run", "qk_norm_rope", "--opt", "angles=theta", "--shape", "B=2,S=3,HQ=4,HKV=2,D=64", "--in", "inv_freq="+freq),
			[]string{"--in inv_freq: " + freq + " has 31 elements; inv_freq is [D / 2] = [32] at B=2,D=64,HKV=2,HQ=4,S=3"}},
		{cpu("run", "qk_norm_rope", "--in", "nope="+freq), []string{"(inputs: qkv, q_weight, k_weight, cos, sin, inv_freq)"}},
		{cpu("run", "colwise_cast", "--in", "x="+x, "--shape", "M=8,K=70"), []string{"--shape M=8,K=70 gives M=8, but --in x: " + x + " has M=7 (shape [7 70])"}},
		{cpu("run", "colwise_cast", "--in", "x="+oneD), []string{"has shape [6], 1 dimension; x is [M, K], 2 dimensions"}},
		{cpu("run", "grouped_colwise_cast", "--in", "offsets="+offs, "--in", "x="+write("x2.npy", xa), "--shape", "E=4,K=70,T=7"), []string{"--shape E=4,K=70,T=7 gives E=4, but --in offsets: " + offs + " has E=3 (shape [3])"}},
		{[]string{"emit", "rowwise_cast", "--target", "sm_90", "--shape", "M=4611686018427387904,K=4611686018427387904"},
			[]string{"x would have more than", "(its dimension M is 4611686018427387904)"}},
	} {
		code, out, errs := fp8gen(t, c.args...)
		want(t, c.args, code, 2, errs, c.subs...)
		if out != "" {
			t.Errorf("fp8gen %v: stdout %q", c.args, out)
		}
	}
}

// A register estimate above the target's limit says, on its line, that
// the compiler is expected to fit it; one within the limit has no note.
func TestRunRegisterNote(t *testing.T) {
	args := cpu("run", "rowwise_cast", "--target", "sm_90")
	code, out, errs := fp8gen(t, args...)
	want(t, args, code, 0, out+errs, "~273 regs (an estimate above sm_90's 255; the compiler is expected to fit it in ~175)")
	args = cpu("run", "rowwise_cast", "--target", "gfx942", "--shape", "M=4,K=64")
	code, out, errs = fp8gen(t, args...)
	want(t, args, code, 0, out+errs, " regs\n")
	if strings.Contains(out, "an estimate above") {
		t.Errorf("a kernel within gfx942's registers got the note:\n%s", out)
	}
}

// export --target gfx942 under --compile auto writes the source and the
// manifest where hipcc knows no gfx942 (Debian's clang 15), saying why on
// its one line; --compile yes fails with the compiler's reason.
func TestExportAutoWithoutTheArch(t *testing.T) {
	if _, err := exec.LookPath("hipcc"); err != nil {
		t.Skip("no hipcc on PATH: nothing to refuse gfx942")
	}
	dir := filepath.Join(t.TempDir(), "k")
	args := []string{"export", "rowwise_cast", "--target", "gfx942", "-o", dir}
	code, out, errs := fp8gen(t, args...)
	want(t, args, code, 0, out+errs, "manifest.json: rowwise_cast for gfx942")
	if strings.Count(out, "\n") != 1 {
		t.Errorf("fp8gen %v: want one line, got:\n%s", args, out)
	}
	if !strings.Contains(out, "no code object: the installed hipcc does not know gfx942") {
		t.Logf("this hipcc knows gfx942 (%s): nothing more to check", strings.TrimSpace(out))
		return
	}
	if got := names(t, dir); got != "manifest.json rowwise_cast.hip" {
		t.Errorf("%s holds %s", dir, got)
	}
	args = []string{"export", "rowwise_cast", "--target", "gfx942", "--compile", "yes", "-o", filepath.Join(t.TempDir(), "y")}
	code, out, errs = fp8gen(t, args...)
	want(t, args, code, 1, out+errs, "invalid target ID 'gfx942'")
}
