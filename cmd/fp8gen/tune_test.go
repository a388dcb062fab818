package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fp8gen/fp8gen/backend"
	"github.com/fp8gen/fp8gen/ops"
	"github.com/fp8gen/fp8gen/runtime"
	"github.com/fp8gen/fp8gen/target"
	"github.com/fp8gen/fp8gen/tune"
)

// Without a GPU, tune lists the candidates it would time, says that it
// timed nothing, and leaves the cache alone.
func TestTuneWithoutGPU(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "tune.json")
	args := []string{"tune", "rowwise_cast", "--shape", "M=64,K=256", "--target", "gfx942", "--cache", cache, "--explain"}
	code, out, errs := fp8gen(t, args...)
	if !strings.Contains(out+errs, "no GPU") {
		t.Skip("a GPU is here: tune measures (the GPU tests cover it)")
	}
	want(t, args, code, 0, out+errs, "rowwise_cast at M=64,K=256 on gfx942", "feasible candidates", "nothing timed, the cache unchanged", "  1. ", " predicted ", "model: ", " B in flight")
	if _, err := os.Stat(cache); !os.IsNotExist(err) {
		t.Errorf("tune without a GPU wrote %s", cache)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tune", "rowwise_cast", "--budget", "9"}, "--budget 9: want 1 to 8"},
		{[]string{"tune", "rowwise_cast", "--schedule", "WARPS=4"}, "tune chooses the schedule"},
		{[]string{"tune", "nosuch"}, "nosuch"},
		{[]string{"tune", "rowwise_cast", "--shape", "M=0,K=4"}, "must be positive"},
	} {
		code, out, errs := fp8gen(t, c.args...)
		want(t, c.args, code, 2, out+errs, c.want)
	}
}

// fakeHIPCC puts a stand-in hipcc that only answers --version on $HIPCC
// for the test and returns its identity for tg: the tuning cache is keyed
// by the compiler, and these tests compile nothing.
func fakeHIPCC(t *testing.T, tg *target.Target) string {
	t.Helper()
	fake := filepath.Join(t.TempDir(), "hipcc")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'HIP version: 0.0-test'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HIPCC", fake)
	t.Setenv("FP8GEN_CACHE", t.TempDir()) // its --version memo, not in the user's JIT cache
	ident, err := (&runtime.Compiler{}).Identity(context.Background(), tg)
	if err != nil {
		t.Fatal(err)
	}
	return ident
}

// run takes its schedule from the tuning cache where an entry holds for
// the call's class, target and compiler, and says so; an entry whose
// schedule does not hold at the shape is reported and not used.
func TestRunUsesTuningCache(t *testing.T) {
	tg, _ := target.Lookup("gfx942")
	ident := fakeHIPCC(t, tg) // the run is in the interpreter
	op, _ := ops.Lookup("rowwise_cast")
	sh := ops.Shape{"M": 64, "K": 256}
	c, _ := op.NewCall(tg, sh, nil)
	path := filepath.Join(t.TempDir(), "tune.json")
	t.Setenv("FP8GEN_TUNE_CACHE", path)
	cache := tune.New()
	key := tune.Key{Op: op.Name, Options: c.Options.String(), Target: "gfx942", Class: tune.Class(op, sh), Compiler: ident}
	cache.Put(tune.Entry{Key: key, Schedule: map[string]int{"BLOCK_K": 256, "LOOP": 1, "PER_CU": 0, "PREFETCH": 0, "ROWS": 2, "WARPS": 2}})
	if err := cache.Save(path); err != nil {
		t.Fatal(err)
	}
	args := cpu("run", "rowwise_cast", "--shape", "M=64,K=256", "--target", "gfx942")
	code, out, errs := fp8gen(t, args...)
	want(t, args, code, 0, out+errs, "schedule BLOCK_K=256,LOOP=1,PER_CU=0,PREFETCH=0,ROWS=2,WARPS=2", "schedule from the tuning cache", "bit-exact")
	// Another shape of the class (K rounds up to 256, divisible by 32).
	other := cpu("run", "rowwise_cast", "--shape", "M=64,K=224", "--target", "gfx942")
	code, out, errs = fp8gen(t, other...)
	want(t, other, code, 0, out+errs, "schedule BLOCK_K=256,LOOP=1,PER_CU=0,PREFETCH=0,ROWS=2,WARPS=2", "schedule from the tuning cache", "bit-exact")
	// Entries that do not hold at the shape are reported and not used: a
	// one-pass BLOCK_K below K (a constraint), and a tile one wave cannot
	// hold in registers (the lowered kernel's resources).
	for _, sched := range []map[string]int{
		{"BLOCK_K": 64, "LOOP": 0, "PER_CU": 0, "PREFETCH": 0, "ROWS": 2, "WARPS": 2},
		{"BLOCK_K": 16384, "LOOP": 1, "PER_CU": 0, "PREFETCH": 0, "ROWS": 4, "WARPS": 1},
	} {
		cache.Put(tune.Entry{Key: key, Schedule: sched})
		if err := cache.Save(path); err != nil {
			t.Fatal(err)
		}
		code, out, errs = fp8gen(t, args...)
		want(t, args, code, 0, out+errs, "does not hold at", "using the default", "bit-exact")
		if strings.Contains(out, "schedule from the tuning cache") {
			t.Errorf("%v: a schedule that does not hold was used:\n%s", sched, out)
		}
	}
	// ir, emit and export take the op's default, whatever the cache holds.
	cache.Put(tune.Entry{Key: key, Schedule: map[string]int{"BLOCK_K": 256, "LOOP": 1, "PER_CU": 0, "PREFETCH": 0, "ROWS": 2, "WARPS": 2}})
	cache.Save(path)
	emit := []string{"emit", "rowwise_cast", "--shape", "M=64,K=256", "--target", "gfx942"}
	code, out, errs = fp8gen(t, emit...)
	want(t, emit, code, 0, out+errs)
	if strings.Contains(out, "BLOCK_K=256,LOOP=1") {
		t.Error("emit took the tuning cache's schedule")
	}
}

// With --target, tune answers a cached class from the cache alone, with
// no device opened, on any machine (here on one with no GPU); a shape the
// cache does not hold, or --force, takes the slow path (with no GPU: the
// list of candidates, nothing timed).
func TestTuneCachedNeedsNoDevice(t *testing.T) {
	tg, _ := target.Lookup("gfx942")
	ident := fakeHIPCC(t, tg)
	op, _ := ops.Lookup("rowwise_cast")
	sh := ops.Shape{"M": 64, "K": 256}
	c, _ := op.NewCall(tg, sh, nil)
	path := filepath.Join(t.TempDir(), "tune.json")
	cache := tune.New()
	cache.Put(tune.Entry{Key: keyOf(c, sh, ident), Schedule: map[string]int{"BLOCK_K": 256, "LOOP": 1, "PER_CU": 0, "PREFETCH": 0, "ROWS": 2, "WARPS": 2},
		TimeUS: 12.5, Shape: "M=64,K=256", GPU: "test GPU", Date: "2026-12-02"})
	// An entry outside the space (3 warps) is not an answer.
	shBad := ops.Shape{"M": 256, "K": 1024}
	cBad, _ := op.NewCall(tg, shBad, nil)
	cache.Put(tune.Entry{Key: keyOf(cBad, shBad, ident), Schedule: map[string]int{"BLOCK_K": 1024, "LOOP": 0, "PER_CU": 0, "PREFETCH": 0, "ROWS": 1, "WARPS": 3},
		TimeUS: 12.5, Shape: "M=256,K=1024", GPU: "test GPU", Date: "2026-12-02"})
	if err := cache.Save(path); err != nil {
		t.Fatal(err)
	}
	hit := []string{"tune", "rowwise_cast", "--shape", "M=64,K=256", "--target", "gfx942", "--cache", path}
	start := time.Now()
	code, out, errs := fp8gen(t, hit...)
	took := time.Since(start)
	want(t, hit, code, 0, out+errs, "cached: BLOCK_K=256,LOOP=1,PER_CU=0,PREFETCH=0,ROWS=2,WARPS=2", "12.5 µs at M=64,K=256 on test GPU")
	t.Logf("cache hit answered in %v", took)
	if strings.Contains(out+errs, "no GPU") || strings.Contains(out+errs, "feasible candidates") {
		t.Errorf("a cached class took the slow path:\n%s", out+errs)
	}
	for _, slow := range [][]string{
		{"tune", "rowwise_cast", "--shape", "M=64,K=4096", "--target", "gfx942", "--cache", path},
		{"tune", "rowwise_cast", "--shape", "M=64,K=256", "--target", "gfx942", "--cache", path, "--force"},
		{"tune", "rowwise_cast", "--shape", "M=256,K=1024", "--target", "gfx942", "--cache", path},
	} {
		code, out, errs := fp8gen(t, slow...)
		if strings.Contains(out+errs, "cached: ") {
			t.Errorf("fp8gen %s answered from the cache:\n%s", strings.Join(slow, " "), out+errs)
		}
		if gpu() {
			continue // the slow path measures; TestGPUTune covers it
		}
		want(t, slow, code, 0, out+errs, "feasible candidates", "nothing timed")
	}
}

// On the GPU: tune times, keeps the fastest, answers from the cache the
// second time (quickly) and run then takes the tuned schedule.
func TestGPUTune(t *testing.T) {
	g, err := backend.OpenGPU()
	if err != nil {
		if backend.IsNoDevice(err) && os.Getenv("FP8GEN_REQUIRE_GPU") != "1" {
			t.Skip("no GPU")
		}
		t.Fatal(err)
	}
	g.Close()
	path := filepath.Join(t.TempDir(), "tune.json")
	t.Setenv("FP8GEN_TUNE_CACHE", path)
	args := []string{"tune", "rowwise_cast", "--shape", "M=1024,K=4096", "--budget", "4"}
	start := time.Now()
	code, out, errs := fp8gen(t, args...)
	cold := time.Since(start)
	want(t, args, code, 0, out+errs, "timed 4", "kept ", " regs (~", " estimated), ", " predicted ")
	start = time.Now()
	code, out, errs = fp8gen(t, args...)
	warm := time.Since(start)
	want(t, args, code, 0, out+errs, "cached: ")
	t.Logf("cold tune %v, warm %v", cold, warm)
	if cold > 10*time.Second {
		t.Errorf("a cold tune of 4 candidates took %v; the target is 10 s for 8", cold)
	}
	run := []string{"run", "rowwise_cast", "--shape", "M=1024,K=4096", "--device", "gpu"}
	code, out, errs = fp8gen(t, run...)
	want(t, run, code, 0, out+errs, "schedule from the tuning cache", "bit-exact")
}

// A cached schedule inside the space whose kernels no longer fit the
// target (registers here) is answered by the device-free hit, which does
// not lower, and not by the tune on the GPU, which times again.
func TestCachedLineChecks(t *testing.T) {
	tg, _ := target.Lookup("gfx942")
	ident := fakeHIPCC(t, tg)
	op, _ := ops.Lookup("rowwise_cast")
	sh := ops.Shape{"M": 64, "K": 256}
	c, _ := op.NewCall(tg, sh, nil)
	big := map[string]int{"BLOCK_K": 16384, "LOOP": 1, "PER_CU": 0, "PREFETCH": 0, "ROWS": 1, "WARPS": 1}
	path := filepath.Join(t.TempDir(), "tune.json")
	cache := tune.New()
	cache.Put(tune.Entry{Key: keyOf(c, sh, ident), Schedule: big, TimeUS: 1, Shape: "M=64,K=256", GPU: "test GPU", Date: "2026-12-02"})
	if err := cache.Save(path); err != nil {
		t.Fatal(err)
	}
	if _, err := c.With(big).Plan(); err == nil {
		t.Fatalf("%v plans at %v on %s: the test needs a schedule that does not", big, sh, tg.Name)
	}
	if _, ok := cachedLine(c, sh, ident, path, inSpace, io.Discard); !ok {
		t.Errorf("inSpace: the entry in the space was not answered")
	}
	if line, ok := cachedLine(c, sh, ident, path, usable, io.Discard); ok {
		t.Errorf("usable: an entry that does not lower was answered: %s", line)
	}
}
