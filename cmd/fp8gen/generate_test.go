package main

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fp8gen/fp8gen/export"
)

var update = flag.Bool("update", false, "rewrite testdata/generate.golden")

// The generated Go is golden: a change to it is reviewed like code. Its
// exports are in place, one per variant and target.
func TestGenerate(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "kernels_gen.go")
	args := []string{"generate", "-o", out, "-package", "kernels", "--targets", "gfx942,sm_90",
		"Quantize=rowwise_cast:in=f32,fp8=e5m2@M=7,K=33+M=1,K=16385", "grouped_colwise_cast"}
	code, stdout, stderr := fp8gen(t, args...)
	want(t, args, code, 0, stdout+stderr, "2 launchers for 2 targets")
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// The command line in the header names the temporary folder.
	got = []byte(strings.ReplaceAll(string(got), dir+string(filepath.Separator), ""))
	golden := filepath.Join("testdata", "generate.golden")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wantSrc, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(wantSrc), string(got)); diff != "" {
		t.Errorf("generated Go (-golden +got); if intended, run go test ./cmd/fp8gen -run TestGenerate -update:\n%s", diff)
	}
	for _, v := range []string{"quantize/0", "quantize/1", "grouped_colwise_cast"} {
		for _, tg := range []string{"gfx942", "sm_90"} {
			b, err := export.Read(filepath.Join(dir, "kernels_gen_kernels", v, tg))
			if err != nil {
				t.Fatal(err)
			}
			if b.Manifest.Target.Name != tg {
				t.Errorf("%s/%s: a manifest for %s", v, tg, b.Manifest.Target.Name)
			}
		}
	}
	// Regenerating with one launcher fewer leaves no stale export.
	args = []string{"generate", "-o", out, "-package", "kernels", "--targets", "gfx942", "grouped_colwise_cast"}
	code, stdout, stderr = fp8gen(t, args...)
	want(t, args, code, 0, stdout+stderr)
	ents, _ := os.ReadDir(filepath.Join(dir, "kernels_gen_kernels"))
	if len(ents) != 1 || ents[0].Name() != "grouped_colwise_cast" {
		t.Errorf("after regenerating: %v", ents)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("%s holds %d entries; want the Go file and its kernels", dir, len(ents))
	}
}

func TestGenerateRefuses(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "k.go")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"generate", "-package", "p", "rowwise_cast"}, "-o FILE.go is required"},
		{[]string{"generate", "-o", out, "-package", "p"}, "no SPEC"},
		{[]string{"generate", "-o", out, "-package", "1p", "rowwise_cast"}, "want a Go package name"},
		{[]string{"generate", "-o", out, "-package", "p", "nosuch"}, `SPEC "nosuch"`},
		{[]string{"generate", "-o", out, "-package", "p", "rowwise_cast", "rowwise_cast:in=f32"}, "two SPECs make the launcher RowwiseCast"},
		{[]string{"generate", "-o", out, "-package", "p", "rowwise_cast:in=f16"}, "option in=f16"},
		{[]string{"generate", "-o", out, "-package", "p", "rowwise_cast:in=f32,in=bf16"}, "option in given twice"},
		{[]string{"generate", "-o", out, "-package", "p", "lower=rowwise_cast"}, "want an exported Go identifier"},
		{[]string{"generate", "-o", out, "-package", "p", "rowwise_cast@M=0,K=3"}, "must be positive"},
		{[]string{"generate", "-o", out, "-package", "p", "--targets", "gfx942", "--objects", "sm_90", "rowwise_cast"}, "--objects sm_90: not one of --targets"},
		{[]string{"generate", "-o", out, "-package", "p", "--targets", "gfx942,gfx942", "rowwise_cast"}, "gfx942 given twice"},
		{[]string{"generate", "-o", out, "-package", "p", "FooBar=rowwise_cast", "Foo_bar=rowwise_cast:fp8=e5m2"}, "would share the exports folder foo_bar"},
		{[]string{"generate", "-o", out, "-package", "p", "X=rowwise_cast", "XTensor=colwise_cast"}, "XTensor is X's tensor allocator"},
		{[]string{"generate", "-o", out, "-package", "p", "--targets", "sm_90", "rowwise_cast@M=2048,K=4096+M=4096,K=4096"}, "make the same kernels (one class of shapes)"},
		{[]string{"generate", "-o", out, "-package", "p", "rowwise_cast@M=64,K=64+"}, "an empty shape"},
		{[]string{"generate", "-o", out, "-package", "func", "rowwise_cast"}, "want a Go package name"},
		{[]string{"generate", "-o", filepath.Join(dir, "1k.go"), "-package", "p", "rowwise_cast"}, "must make a Go identifier"},
	} {
		code, stdout, stderr := fp8gen(t, c.args...)
		want(t, c.args, code, 2, stdout+stderr, c.want)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("refused runs left %d files", len(ents))
	}
}

// --objects embeds a code object, here the gfx940 stand-in CI's hipcc
// builds; without the compiler it is an error, never a silent skip.
func TestGenerateObjects(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "k.go")
	t.Setenv("FP8GEN_CACHE", t.TempDir())
	t.Setenv("NVCC", filepath.Join(dir, "no-nvcc"))
	args := []string{"generate", "-o", out, "-package", "p", "--targets", "sm_90", "--objects", "sm_90", "rowwise_cast"}
	code, stdout, stderr := fp8gen(t, args...)
	want(t, args, code, 1, stdout+stderr, "--objects asks for a code object", "no-nvcc")
	if _, err := exec.LookPath("hipcc"); err != nil {
		if os.Getenv("FP8GEN_REQUIRE_HIPCC") == "1" {
			t.Fatal("hipcc not found, and FP8GEN_REQUIRE_HIPCC=1")
		}
		t.Skip("no hipcc")
	}
	args = []string{"generate", "-o", out, "-package", "p", "--targets", "gfx942", "--objects", "gfx942=gfx940", "rowwise_cast"}
	code, stdout, stderr = fp8gen(t, args...)
	want(t, args, code, 0, stdout+stderr)
	b, err := export.Read(filepath.Join(dir, "k_kernels", "rowwise_cast", "gfx942"))
	if err != nil {
		t.Fatal(err)
	}
	if co := b.Manifest.CodeObject; co == nil || co.Arch != "gfx940" || len(b.Object) == 0 {
		t.Errorf("code object %+v", co)
	}
}

// A Go file that cannot be written leaves the exports as they were.
func TestGenerateBothOrNeither(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "k.go")
	args := []string{"generate", "-o", out, "-package", "p", "--targets", "sm_90", "rowwise_cast"}
	code, stdout, stderr := fp8gen(t, args...)
	want(t, args, code, 0, stdout+stderr)
	if fi, err := os.Stat(filepath.Join(dir, "k_kernels")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("k_kernels: %v, %v; want a folder of mode 0755", fi.Mode(), err)
	}
	// k.go replaced by a folder: the write must fail and change nothing.
	os.Remove(out)
	os.Mkdir(out, 0o755)
	args = []string{"generate", "-o", out, "-package", "p", "--targets", "sm_90", "colwise_cast"}
	code, stdout, stderr = fp8gen(t, args...)
	if code == 0 {
		t.Fatalf("generate over a folder named k.go: exit 0\n%s", stdout+stderr)
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "k_kernels"))
	if len(ents) != 1 || ents[0].Name() != "rowwise_cast" {
		t.Errorf("after the failed run, k_kernels holds %v; want rowwise_cast as before", ents)
	}
	if all, _ := os.ReadDir(dir); len(all) != 2 {
		t.Errorf("the failed run left %d entries in %s; want k.go and k_kernels", len(all), dir)
	}
}
