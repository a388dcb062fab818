package runtime

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fp8gen/fp8gen/target"
)

func lookup(t *testing.T, name string) *target.Target {
	t.Helper()
	tgt, err := target.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return tgt
}

// fakeCompiler writes a shell script that acts as nvcc/hipcc: it answers
// --version, logs each compile (one line in count, its arguments in args),
// takes a moment ($FAKE_SLEEP seconds, 0.2 by default), fails with a
// located error on sources containing FAIL, and otherwise writes "IMAGE"
// plus the source as the output file. $FAKE_HANG (a file for the pid of
// the child it hangs in), $FAKE_HANG_VERSION and $FAKE_CRASH make it hang
// or die of SIGSEGV instead; $FAKE_STRAGGLER (a file for its pid) leaves a
// child running after a successful compile.
type fake struct{ script, count, args string }

func newFake(t *testing.T) fake {
	t.Helper()
	dir := t.TempDir()
	f := fake{script: filepath.Join(dir, "fakecc"), count: filepath.Join(dir, "count"), args: filepath.Join(dir, "args")}
	body := `#!/bin/sh
if [ "$1" = "--version" ]; then
	if [ -n "$FAKE_HANG_VERSION" ]; then sleep 60; fi
	echo "fake compiler"; echo "Cuda compilation tools, release 0.0, V0.0.0"; exit 0
fi
echo run >> '` + f.count + `'
echo "$*" >> '` + f.args + `'
out=""; src=""
while [ $# -gt 0 ]; do
	case "$1" in
	-o) out="$2"; shift ;;
	*.cu|*.hip) src="$1" ;;
	esac
	shift
done
if [ -n "$FAKE_HANG" ]; then
	# Hang in a child, as nvcc does in cicc or ptxas; the child holds
	# stderr open.
	echo "fake: hanging" >&2
	sleep 60 &
	echo $! > "$FAKE_HANG"
	wait
fi
if [ -n "$FAKE_CRASH" ]; then kill -SEGV $$; fi
if [ -n "$FAKE_STRAGGLER" ]; then
	# A child that outlives a successful compile, holding stderr open.
	sleep 60 &
	echo $! > "$FAKE_STRAGGLER"
fi
sleep "${FAKE_SLEEP:-0.2}"
if grep -q FAIL "$src"; then
	case "$src" in
	*.hip) echo "$src:3:9: error: use of undeclared identifier 'oops'" >&2 ;;
	*) echo "$src(3): error: identifier \"oops\" is undefined" >&2 ;;
	esac
	echo "1 error detected in the compilation of \"$src\"." >&2
	exit 1
fi
echo "ptxas info    : Used 8 registers, 360 bytes cmem[0]" >&2
{ echo IMAGE; cat "$src"; } > "$out"
`
	if err := os.WriteFile(f.script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f fake) runs(t *testing.T) int {
	b, err := os.ReadFile(f.count)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "run\n")
}

// cacheFiles lists the cache directory's images, temporary files
// included (not the compiler versions kept in tool-versions).
func cacheFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if e.Name() != "tool-versions" {
			names = append(names, e.Name())
		}
	}
	return names
}

const goodSrc = `extern "C" __global__ void k1(float* x) {
	x[threadIdx.x] = 1.0f;
}
`

func TestCacheKey(t *testing.T) {
	flags := []string{"--cubin", "-arch=sm_90"}
	base := cacheKey("src", "sm_90", "/usr/bin/nvcc", "release 13.0", flags)
	if base != cacheKey("src", "sm_90", "/usr/bin/nvcc", "release 13.0", []string{"--cubin", "-arch=sm_90"}) {
		t.Fatal("key not stable")
	}
	if len(base) != 64 {
		t.Errorf("key %q is not hex sha256", base)
	}
	for name, k := range map[string]string{
		"source":  cacheKey("src ", "sm_90", "/usr/bin/nvcc", "release 13.0", flags),
		"target":  cacheKey("src", "sm_89", "/usr/bin/nvcc", "release 13.0", flags),
		"tool":    cacheKey("src", "sm_90", "/opt/nvcc", "release 13.0", flags),
		"version": cacheKey("src", "sm_90", "/usr/bin/nvcc", "release 13.1", flags),
		"flags":   cacheKey("src", "sm_90", "/usr/bin/nvcc", "release 13.0", []string{"--cubin", "-arch=sm_90", "-G"}),
		"split":   cacheKey("sr", "csm_90", "/usr/bin/nvcc", "release 13.0", flags),
		"joined":  cacheKey("src", "sm_90", "/usr/bin/nvcc", "release 13.0", []string{"--cubin-arch=sm_90"}),
	} {
		if k == base {
			t.Errorf("changing the %s does not change the key", name)
		}
	}
}

func TestCompileKeyFollowsInputs(t *testing.T) {
	f := newFake(t)
	t.Setenv("NVCC", f.script)
	c := &Compiler{CacheDir: t.TempDir()}
	ctx := context.Background()
	_, a, err := c.Compile(ctx, goodSrc, lookup(t, "sm_90"), "k1")
	if err != nil {
		t.Fatal(err)
	}
	_, b, err := (&Compiler{CacheDir: t.TempDir()}).Compile(ctx, goodSrc, lookup(t, "sm_90"), "k1")
	if err != nil {
		t.Fatal(err)
	}
	if a.Key != b.Key {
		t.Error("same input, different cache directory: keys differ")
	}
	_, e, err := c.Compile(ctx, goodSrc+"\n", lookup(t, "sm_90"), "k1")
	if err != nil {
		t.Fatal(err)
	}
	if e.Key == a.Key {
		t.Error("changed source, same key")
	}
	if a.Tool != f.script || a.ToolVersion != "Cuda compilation tools, release 0.0, V0.0.0" {
		t.Errorf("tool %q version %q", a.Tool, a.ToolVersion)
	}
}

func TestCompileOnceAndHit(t *testing.T) {
	f := newFake(t)
	t.Setenv("NVCC", f.script)
	dir := t.TempDir()
	c := &Compiler{CacheDir: dir}
	tgt := lookup(t, "sm_90")

	const callers = 8
	var wg sync.WaitGroup
	bins := make([][]byte, callers)
	infos := make([]CompileInfo, callers)
	errs := make([]error, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bins[i], infos[i], errs[i] = c.Compile(context.Background(), goodSrc, tgt, "k1")
		}()
	}
	wg.Wait()
	for i := range callers {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if !bytes.Equal(bins[i], []byte("IMAGE\n"+goodSrc)) {
			t.Errorf("caller %d got %q", i, bins[i])
		}
		if infos[i].Key != infos[0].Key {
			t.Errorf("caller %d: key %s, caller 0: %s", i, infos[i].Key, infos[0].Key)
		}
	}
	if n := f.runs(t); n != 1 {
		t.Fatalf("%d concurrent calls ran the compiler %d times; want 1", callers, n)
	}
	args, _ := os.ReadFile(f.args)
	if want := "--cubin -arch=sm_90 -O3 --fmad=false -ftz=false -prec-div=true -prec-sqrt=true -Xptxas -v -o k.cubin k.cu"; strings.TrimSpace(string(args)) != want {
		t.Errorf("compiler arguments %q, want %q", strings.TrimSpace(string(args)), want)
	}
	if !strings.Contains(infos[0].Log, "Used 8 registers") {
		t.Errorf("log %q lacks the compiler's stderr", infos[0].Log)
	}
	t.Logf("miss: %v", infos[0].Duration)

	bin, info, err := c.Compile(context.Background(), goodSrc, tgt, "k1")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("hit: %v", info.Duration)
	if !info.Hit || !bytes.Equal(bin, bins[0]) || f.runs(t) != 1 {
		t.Errorf("second call: hit %v, same image %v, compiler runs %d", info.Hit, bytes.Equal(bin, bins[0]), f.runs(t))
	}
	if !strings.Contains(info.Log, "Used 8 registers") {
		t.Errorf("hit lost the compiler log: %q", info.Log)
	}
	if info.Duration <= 0 || info.Duration > 50*time.Millisecond {
		t.Errorf("hit took %v", info.Duration)
	}
	want := []string{info.Key + ".jit"}
	if got := cacheFiles(t, dir); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("cache holds %v, want %v", got, want)
	}

	// A second process's view: a fresh Compiler over the same directory hits.
	_, info, err = (&Compiler{CacheDir: dir}).Compile(context.Background(), goodSrc, tgt, "k1")
	if err != nil || !info.Hit {
		t.Errorf("fresh Compiler on the same cache: hit %v, %v", info.Hit, err)
	}
}

const failSrc = `extern "C" __global__ void k2(float* x) {
	int i = threadIdx.x;
	x[i] = oops; // FAIL
	x[i] += 1.0f;
	x[i] *= 2.0f;
	x[i] -= 3.0f;
}
`

func TestCompileErrorQuotesSource(t *testing.T) {
	for _, c := range []struct{ target, env, loc string }{
		{"sm_90", "NVCC", "k.cu(3): error"},
		{"gfx942", "HIPCC", "k.hip:3:9: error"},
	} {
		t.Run(c.target, func(t *testing.T) {
			f := newFake(t)
			t.Setenv(c.env, f.script)
			dir := t.TempDir()
			_, info, err := (&Compiler{CacheDir: dir}).Compile(context.Background(), failSrc, lookup(t, c.target), "k2")
			if err == nil {
				t.Fatal("no error")
			}
			t.Logf("error:\n%v", err)
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("want *CompileError, got %T", err)
			}
			msg := err.Error()
			for _, w := range []string{
				c.loc, "oops",
				"  1 | extern \"C\" __global__ void k2(float* x) {",
				"> 3 | \tx[i] = oops; // FAIL",
				"  5 | \tx[i] *= 2.0f;",
			} {
				if !strings.Contains(msg, w) {
					t.Errorf("error lacks %q", w)
				}
			}
			if strings.Contains(msg, "6 | ") {
				t.Error("error quotes line 6, outside LINE-2..LINE+2")
			}
			if files := cacheFiles(t, dir); len(files) != 0 {
				t.Errorf("failed compile left %v in the cache", files)
			}
			if info.Duration <= 0 {
				t.Error("no duration for a failed compile")
			}
			// Failures are not cached: the next call runs the compiler again.
			(&Compiler{CacheDir: dir}).Compile(context.Background(), failSrc, lookup(t, c.target), "k2")
			if n := f.runs(t); n != 2 {
				t.Errorf("compiler ran %d times for two failing calls", n)
			}
		})
	}
}

func TestCompileHIPFlags(t *testing.T) {
	f := newFake(t)
	t.Setenv("HIPCC", f.script)
	_, _, err := (&Compiler{CacheDir: t.TempDir()}).Compile(context.Background(), goodSrc, lookup(t, "gfx942"), "k1")
	if err != nil {
		t.Fatal(err)
	}
	args, _ := os.ReadFile(f.args)
	if want := "--genco --offload-arch=gfx942 -O3 -ffp-contract=off -fno-gpu-flush-denormals-to-zero -o k.hsaco k.hip"; strings.TrimSpace(string(args)) != want {
		t.Errorf("hipcc arguments %q, want %q", strings.TrimSpace(string(args)), want)
	}
}

func TestCompileMissingCompiler(t *testing.T) {
	empty := t.TempDir()
	t.Setenv("NVCC", "")
	t.Setenv("CUDA_PATH", empty)
	t.Setenv("PATH", empty)
	old := nvccDefaults
	nvccDefaults = []string{filepath.Join(empty, "cuda/bin/nvcc")}
	defer func() { nvccDefaults = old }()

	_, _, err := (&Compiler{CacheDir: t.TempDir()}).Compile(context.Background(), goodSrc, lookup(t, "sm_90"), "k1")
	t.Logf("error: %v", err)
	if !errors.Is(err, ErrNoCompiler) {
		t.Fatalf("want ErrNoCompiler, got %v", err)
	}
	for _, w := range []string{"$NVCC", "$CUDA_PATH/bin/nvcc", "$PATH", nvccDefaults[0], "sm_90"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q", w)
		}
	}

	t.Setenv("NVCC", filepath.Join(empty, "no-such-nvcc"))
	_, _, err = (&Compiler{CacheDir: t.TempDir()}).Compile(context.Background(), goodSrc, lookup(t, "sm_90"), "k1")
	if !errors.Is(err, ErrNoCompiler) || !strings.Contains(err.Error(), "no-such-nvcc") {
		t.Errorf("NVCC naming a missing file: %v", err)
	}
}

func TestCompileKernelNameChecked(t *testing.T) {
	f := newFake(t)
	t.Setenv("NVCC", f.script)
	_, _, err := (&Compiler{CacheDir: t.TempDir()}).Compile(context.Background(), goodSrc, lookup(t, "sm_90"), "k")
	if err == nil || !strings.Contains(err.Error(), `"k"`) {
		t.Errorf("kernel name that occurs only inside another identifier: %v", err)
	}
	if _, _, err := (&Compiler{}).Compile(context.Background(), goodSrc, nil, "k1"); err == nil {
		t.Error("nil target accepted")
	}
}

func TestCompileCanceled(t *testing.T) {
	f := newFake(t)
	t.Setenv("NVCC", f.script)
	dir := t.TempDir()
	c := &Compiler{CacheDir: dir}
	tgt := lookup(t, "sm_90")
	// Warm the version cache so the deadline hits the compile itself.
	if _, _, err := c.Compile(context.Background(), goodSrc, tgt, "k1"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	src := goodSrc + "// other\n"
	_, _, err := c.Compile(ctx, src, tgt, "k1")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want DeadlineExceeded, got %v", err)
	}
	if _, info, err := c.Compile(context.Background(), src, tgt, "k1"); err != nil || info.Hit {
		t.Errorf("after a canceled compile: hit %v, %v (want a fresh, successful compile)", info.Hit, err)
	}
	for _, name := range cacheFiles(t, dir) {
		if strings.Contains(name, ".tmp-") {
			t.Errorf("temporary file %s left in the cache", name)
		}
	}
}

func TestCacheDirDefault(t *testing.T) {
	t.Setenv("FP8GEN_CACHE", "/some/where")
	if d, _ := (&Compiler{}).dir(); d != "/some/where" {
		t.Errorf("FP8GEN_CACHE ignored: %s", d)
	}
	if d, _ := (&Compiler{CacheDir: "/x"}).dir(); d != "/x" {
		t.Errorf("CacheDir ignored: %s", d)
	}
	t.Setenv("FP8GEN_CACHE", "")
	d, err := (*Compiler)(nil).dir()
	if err == nil && !strings.HasSuffix(d, filepath.Join("fp8gen", "jit")) {
		t.Errorf("default cache dir %s", d)
	}
}

func TestQuoteSource(t *testing.T) {
	src := "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\nl11\nl12\n"
	out := "k.cu(2): warning: a\nk.cu(4): error: b\nk.cu(11): error: c\nxk.cu(7): not ours\nk.cu(99): out of range\n"
	got := quoteSource(src, out, "k.cu")
	want := `k.cu:
   1 | l1
>  2 | l2
   3 | l3
>  4 | l4
   5 | l5
   6 | l6
  ...
   9 | l9
  10 | l10
> 11 | l11
  12 | l12
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := quoteSource(src, "/tmp/x/k.hip:5:3: error: e\n", "k.hip"); !strings.Contains(got, "> 5 | l5") {
		t.Errorf("clang location: %q", got)
	}
	if got := quoteSource(src, "ptxas fatal: nothing located", "k.cu"); got != "" {
		t.Errorf("no location: %q", got)
	}
}

func TestHasIdent(t *testing.T) {
	for _, c := range []struct {
		src, name string
		want      bool
	}{
		{"void add1(float*)", "add1", true},
		{"void add10(float*)", "add1", false},
		{"void xadd1(float*)", "add1", false},
		{"add1", "add1", true},
		{"add1_ add1", "add1", true},
	} {
		if got := hasIdent(c.src, c.name); got != c.want {
			t.Errorf("hasIdent(%q, %q) = %v", c.src, c.name, got)
		}
	}
}
