package interp_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fp8gen/fp8gen/fp8"
	"github.com/fp8gen/fp8gen/internal/captest"
	"github.com/fp8gen/fp8gen/interp"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/lower"
	"github.com/fp8gen/fp8gen/target"
)

// at runs f and returns the line it was called on.
func at(f func()) int {
	_, _, line, _ := runtime.Caller(1)
	f()
	return line
}

func thisFile() string {
	_, file, _, _ := runtime.Caller(1)
	return filepath.Base(file)
}

// kernel builds setup for sm_90 and lowers it with the verifier on.
func kernel(t *testing.T, warps int, div map[string]int, setup func(b *ir.Builder)) *ir.Func {
	t.Helper()
	tg, err := target.Lookup("sm_90")
	if err != nil {
		t.Fatal(err)
	}
	b := ir.NewBuilder("k", tg)
	setup(b)
	f, err := b.Func()
	if err != nil {
		t.Fatal(err)
	}
	if err := lower.Run(f, &lower.Config{Warps: warps, Div: div, Verify: true}); err != nil {
		t.Fatal(err)
	}
	return f
}

// launch runs f, failing the test if it hangs.
func launch(t *testing.T, f *ir.Func, grid [3]int, args ...any) error {
	t.Helper()
	return launchWithin(t, 10*time.Second, f, grid, args...)
}

// launchWithin is launch with its own bound on the wall time.
func launchWithin(t *testing.T, d time.Duration, f *ir.Func, grid [3]int, args ...any) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- interp.Launch(f, grid, args) }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("Launch of %s over %v did not return in %v", f.Name, grid, d)
		return nil
	}
}

// transpose is colwise_cast's store half on a [64,16] tile of bf16 x[M,K]:
// cast to fp8 and stored transposed into qt[K,M], through one LDS round trip.
func transpose(b *ir.Builder) {
	x := b.Param("x", ir.BF16)
	qt := b.Param("qt", ir.FP8(fp8.E4M3FN))
	m, k := b.Size("M"), b.Size("K")
	pid := b.ProgramID(0)
	rows, cols := b.Arange(64), b.Add(b.Mul(pid, 16), b.Arange(16))
	v := b.Cast(b.Load(b.PtrAdd(x, b.Add(b.Mul(b.Col(rows), k), b.Row(cols))), nil, nil), ir.F32)
	q := b.Trans(b.Cast(v, ir.FP8(fp8.E4M3FN)))
	rows2, cols2 := b.Arange(64), b.Add(b.Mul(pid, 16), b.Arange(16))
	b.Store(b.PtrAdd(qt, b.Add(b.Mul(b.Col(cols2), m), b.Row(rows2))), q, nil)
}

// transposeData is x[64, 16*programs] in bf16 with small integers, exact in
// e4m3fn, and the qt it transposes to.
func transposeData(programs int) (x, want []byte) {
	const m = 64
	k := 16 * programs
	x = make([]byte, 2*m*k)
	want = make([]byte, m*k)
	for i := 0; i < m; i++ {
		for j := 0; j < k; j++ {
			v := float32((i*7+j*3)%31 - 15)
			binary.LittleEndian.PutUint16(x[2*(i*k+j):], ir.F32ToBF16(v))
			want[j*m+i] = fp8.E4M3FN.EncodeSat(v)
		}
	}
	return x, want
}

// deleteBarrier removes the n-th barrier after the LDS store (n = 0: the one
// between store and load; n = 1: the one after the load).
func deleteBarrier(t *testing.T, f *ir.Func, n int) {
	t.Helper()
	blk := f.Entry
	seen := -1
	for i, v := range blk.Values {
		if v.Op == ir.OpLDSStore && seen < 0 {
			seen = 0
			continue
		}
		if seen < 0 || v.Op != ir.OpBarrier {
			continue
		}
		if seen == n {
			blk.Values = append(blk.Values[:i:i], blk.Values[i+1:]...)
			return
		}
		seen++
	}
	t.Fatalf("no barrier %d after an lds_store in\n%v", n, f)
}

func TestLDSRace(t *testing.T) {
	x, want := transposeData(1)

	f := kernel(t, 4, nil, transpose)
	qt := make([]byte, len(want))
	if err := launch(t, f, [3]int{1, 1, 1}, x, qt, 64, 16); err != nil {
		t.Fatalf("with barriers: %v", err)
	}
	if string(qt) != string(want) {
		t.Fatalf("transpose wrong: got %v\nwant %v", qt, want)
	}

	f = kernel(t, 4, nil, transpose)
	deleteBarrier(t, f, 0)
	if err := ir.Verify(f, ir.PhaseLanes); err != nil {
		t.Fatalf("the kernel without its barrier is still valid IR: %v", err)
	}
	err := launch(t, f, [3]int{1, 1, 1}, x, make([]byte, len(want)), 64, 16)
	if err == nil || !strings.Contains(err.Error(), "LDS race") {
		t.Fatalf("lds_load right after lds_store: error %v; want an LDS race", err)
	}
	if !strings.Contains(err.Error(), "lds_load") {
		t.Errorf("error %q does not name the racing lds_load", err)
	}
}

// TestLDSRaceAcrossPrograms: a kernel whose last LDS access has no barrier
// after it is race free: the next program runs in another block, with its
// own LDS. Only the barrier between lds_store and lds_load is needed.
func TestLDSRaceAcrossPrograms(t *testing.T) {
	programs := 2*runtime.GOMAXPROCS(0) + 1 // some worker runs two programs
	x, want := transposeData(programs)
	f := kernel(t, 4, nil, transpose)
	deleteBarrier(t, f, 1)
	qt := make([]byte, len(want))
	if err := launch(t, f, [3]int{1, 1, 1}, x, qt, 64, 16*programs); err != nil {
		t.Fatalf("one program: %v", err)
	}
	if err := launch(t, f, [3]int{programs, 1, 1}, x, qt, 64, 16*programs); err != nil {
		t.Fatalf("%d programs: %v", programs, err)
	}
	if string(qt) != string(want) {
		t.Errorf("transpose wrong")
	}
}

// transposeTwice is transpose on two tiles of one program, one after the
// other: the second tile's lds_store reuses the bytes the first lds_load
// read, so the barrier after the load is what keeps it correct.
func transposeTwice(b *ir.Builder) {
	x := b.Param("x", ir.BF16)
	qt := b.Param("qt", ir.FP8(fp8.E4M3FN))
	m, k := b.Size("M"), b.Size("K")
	pid := b.ProgramID(0)
	for tile := range 2 {
		rows := b.Arange(64)
		cols := b.Add(b.Mul(b.Add(b.Mul(pid, 2), tile), 16), b.Arange(16))
		v := b.Cast(b.Load(b.PtrAdd(x, b.Add(b.Mul(b.Col(rows), k), b.Row(cols))), nil, nil), ir.F32)
		q := b.Trans(b.Cast(v, ir.FP8(fp8.E4M3FN)))
		rows2 := b.Arange(64)
		cols2 := b.Add(b.Mul(b.Add(b.Mul(pid, 2), tile), 16), b.Arange(16))
		b.Store(b.PtrAdd(qt, b.Add(b.Mul(b.Col(cols2), m), b.Row(rows2))), q, nil)
	}
}

// TestLDSWriteAfterRead: without the barrier between the first tile's
// lds_load and the second tile's lds_store, a lane overwrites bytes another
// lane has not finished reading; the interpreter must say so.
func TestLDSWriteAfterRead(t *testing.T) {
	x, want := transposeData(2)
	f := kernel(t, 4, nil, transposeTwice)
	qt := make([]byte, len(want))
	if err := launch(t, f, [3]int{1, 1, 1}, x, qt, 64, 32); err != nil {
		t.Fatalf("with barriers: %v", err)
	}
	if string(qt) != string(want) {
		t.Fatalf("transpose wrong: got %v\nwant %v", qt, want)
	}

	f = kernel(t, 4, nil, transposeTwice)
	deleteBarrier(t, f, 1)
	if err := ir.Verify(f, ir.PhaseLanes); err != nil {
		t.Fatalf("the kernel without its barrier is still valid IR: %v", err)
	}
	err := launch(t, f, [3]int{1, 1, 1}, x, make([]byte, len(want)), 64, 32)
	if err == nil || !strings.Contains(err.Error(), "writes byte") || !strings.Contains(err.Error(), "read") {
		t.Fatalf("lds_store over bytes still being read: error %v; want a write-after-read LDS race", err)
	}
}
func TestOutOfBounds(t *testing.T) {
	var line int
	f := kernel(t, 4, nil, func(b *ir.Builder) {
		x := b.Param("x", ir.F32)
		y := b.Param("y", ir.F32)
		offs := b.Arange(64)
		var v *ir.Value
		line = at(func() { v = b.Load(b.PtrAdd(x, offs), nil, nil) })
		b.Store(b.PtrAdd(y, offs), v, nil)
	})
	// In bounds: 64 floats each.
	if err := launch(t, f, [3]int{1, 1, 1}, captest.F32s(make([]float32, 64)), captest.F32s(make([]float32, 64))); err != nil {
		t.Fatalf("in bounds: %v", err)
	}
	err := launch(t, f, [3]int{1, 1, 1}, captest.F32s(make([]float32, 48)), captest.F32s(make([]float32, 64)))
	want := fmt.Sprintf("%s:%d: load: out-of-bounds access to x", thisFile(), line)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("load past x: error %v; want %q", err, want)
	}
	if !strings.Contains(err.Error(), "(192 bytes long)") {
		t.Errorf("error %q does not give the buffer's length", err)
	}
	err = launch(t, f, [3]int{1, 1, 1}, captest.F32s(make([]float32, 64)), captest.F32s(make([]float32, 63)))
	if err == nil || !strings.Contains(err.Error(), "out-of-bounds access to y at byte 252") {
		t.Fatalf("store past y: error %v; want an out-of-bounds access to y at byte 252", err)
	}
}

// TestOutOfBoundsMasked: masked-off lanes do not touch memory.
func TestOutOfBoundsMasked(t *testing.T) {
	f := kernel(t, 4, nil, func(b *ir.Builder) {
		x := b.Param("x", ir.F32)
		n := b.Size("n")
		offs := b.Arange(64)
		m := b.Lt(offs, n)
		b.Store(b.PtrAdd(x, offs), b.Add(b.Load(b.PtrAdd(x, offs), m, nil), 1.0), m)
	})
	buf := captest.F32s(make([]float32, 40))
	if err := launch(t, f, [3]int{1, 1, 1}, buf, 40); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		if captest.GetF32(buf, i) != 1 {
			t.Fatalf("x[%d] = %v; want 1", i, captest.GetF32(buf, i))
		}
	}
}

// amax is tensorwise_amax over f32 x[n]: a persistent loop of tiles of 256,
// an atomic max of each program's max |x|.
func amax(b *ir.Builder) {
	x := b.Param("x", ir.F32)
	a := b.Param("amax", ir.F32)
	n := b.Size("n")
	tiles := b.Div(b.Add(n, 255), 256)
	acc := b.For(b.ProgramID(0), tiles, b.NumPrograms(0), []*ir.Value{b.Full(ir.F32, 0, 256)}, func(i *ir.Value, c []*ir.Value) []*ir.Value {
		offs := b.Add(b.Mul(i, 256), b.Arange(256))
		return []*ir.Value{b.Max(c[0], b.Abs(b.Load(b.PtrAdd(x, offs), b.Lt(offs, n), nil)))}
	})
	b.AtomicMax(a, b.Reduce(acc[0], 0, ir.RMax), nil, ir.Relaxed, ir.ScopeAgent)
}

func TestAtomicMax(t *testing.T) {
	f := kernel(t, 4, nil, amax)
	r := rand.New(rand.NewPCG(7, 8))
	const n = 5000 // not a multiple of the tile
	for trial := 0; trial < 4; trial++ {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		big := r.IntN(n)
		x[big] = -1000 - float32(trial) // the max is |a negative|
		for i := 0; i < 50; i++ {
			x[r.IntN(n)] = float32(math.NaN())
		}
		x[big] = -1000 - float32(trial)
		want := float32(0)
		for _, v := range x {
			want = ir.MaxF32(want, float32(math.Abs(float64(v))))
		}
		out := captest.F32s([]float32{0})
		// More programs than tiles, and fewer: both grids see every tile once.
		grid := []int{3, 8, 25}[trial%3]
		if err := launch(t, f, [3]int{grid, 1, 1}, captest.F32s(x), out, n); err != nil {
			t.Fatal(err)
		}
		if got := captest.GetF32(out, 0); got != want || want != 1000+float32(trial) {
			t.Errorf("grid %d: amax = %v; want %v (NaNs ignored)", grid, got, want)
		}
	}
	// All NaN: nothing beats the 0 amax starts at.
	x := make([]float32, 300)
	for i := range x {
		x[i] = float32(math.NaN())
	}
	out := captest.F32s([]float32{0})
	if err := launch(t, f, [3]int{4, 1, 1}, captest.F32s(x), out, len(x)); err != nil {
		t.Fatal(err)
	}
	if got := captest.GetF32(out, 0); got != 0 || math.Signbit(float64(got)) {
		t.Errorf("amax of NaNs = %v; want +0", got)
	}
}

// sum adds x[n] (of type d) into s[0] atomically, in tiles of bs.
func sum(d ir.DType, bs int) func(b *ir.Builder) {
	return func(b *ir.Builder) {
		x := b.Param("x", d)
		s := b.Param("s", d)
		n := b.Size("n")
		tiles := b.Div(b.Add(n, bs-1), bs)
		acc := b.For(b.ProgramID(0), tiles, b.NumPrograms(0), []*ir.Value{b.Full(d, 0, bs)}, func(i *ir.Value, c []*ir.Value) []*ir.Value {
			offs := b.Add(b.Mul(i, bs), b.Arange(bs))
			return []*ir.Value{b.Add(c[0], b.Load(b.PtrAdd(x, offs), b.Lt(offs, n), nil))}
		})
		b.AtomicAdd(s, b.Reduce(acc[0], 0, ir.RSum), nil, ir.Relaxed, ir.ScopeAgent)
	}
}

func TestAtomicAdd(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const n = 3001
	for _, bs := range []int{64, 256, 1024} { // 64 and 256 < 4 waves' coverage: replicas
		t.Run(fmt.Sprintf("i32/tile%d", bs), func(t *testing.T) {
			f := kernel(t, 4, nil, sum(ir.I32, bs))
			x := make([]int32, n)
			var want int32
			for i := range x {
				x[i] = int32(r.IntN(2001) - 1000)
				want += x[i]
			}
			out := captest.I32s([]int32{5})
			if err := launch(t, f, [3]int{7, 1, 1}, captest.I32s(x), out, n); err != nil {
				t.Fatal(err)
			}
			if got := captest.GetI32(out, 0); got != want+5 {
				t.Errorf("sum = %d; want %d", got, want+5)
			}
		})
		t.Run(fmt.Sprintf("f32/tile%d", bs), func(t *testing.T) {
			f := kernel(t, 4, nil, sum(ir.F32, bs))
			// Small integers: every partial sum is exact, whatever the order.
			x := make([]float32, n)
			var want float64
			for i := range x {
				x[i] = float32(r.IntN(201) - 100)
				want += float64(x[i])
			}
			out := captest.F32s([]float32{0.5})
			if err := launch(t, f, [3]int{5, 1, 1}, captest.F32s(x), out, n); err != nil {
				t.Fatal(err)
			}
			if got := captest.GetF32(out, 0); float64(got) != want+0.5 {
				t.Errorf("sum = %v; want %v", got, want+0.5)
			}
		})
	}
}

func TestLoopStepNotPositive(t *testing.T) {
	var line int
	f := kernel(t, 1, nil, func(b *ir.Builder) {
		x := b.Param("x", ir.I32)
		n, step := b.Size("n"), b.Size("step")
		body := func(i *ir.Value, _ []*ir.Value) []*ir.Value {
			b.Store(b.PtrAdd(x, i), 1, nil)
			return nil
		}
		line = at(func() { b.For(0, n, step, nil, body) })
	})
	buf := captest.I32s(make([]int32, 8))
	if err := launch(t, f, [3]int{1, 1, 1}, buf, 8, 3); err != nil {
		t.Fatalf("step 3: %v", err)
	}
	for i := 0; i < 8; i++ {
		if want := int32(b2i(i%3 == 0)); captest.GetI32(buf, i) != want {
			t.Errorf("x[%d] = %d; want %d", i, captest.GetI32(buf, i), want)
		}
	}
	for _, step := range []int{0, -1} {
		err := launch(t, f, [3]int{1, 1, 1}, buf, 8, step)
		want := fmt.Sprintf("%s:%d: for: loop step %d is not positive", thisFile(), line, step)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("step %d: error %v; want %q", step, err, want)
		}
	}
	// An empty range needs no step check to end, but still runs nothing.
	if err := launch(t, f, [3]int{1, 1, 1}, captest.I32s(make([]int32, 8)), 0, 1); err != nil {
		t.Errorf("empty loop: %v", err)
	}
}

func b2i(c bool) int {
	if c {
		return 1
	}
	return 0
}

func TestMisalignedVector(t *testing.T) {
	var line int
	// setup loads row pid of x, K wide; unmasked, it reads 256 elements
	// from the row's start.
	setup := func(masked bool) func(*ir.Builder) {
		return func(b *ir.Builder) {
			x := b.Param("x", ir.BF16)
			y := b.Param("y", ir.F32)
			k := b.Size("K")
			pid := b.ProgramID(0)
			cols := b.Arange(256)
			offs := b.Add(b.Mul(pid, k), b.Row(cols))
			var mask *ir.Value
			if masked {
				mask = b.Row(b.Lt(cols, k))
			}
			var v *ir.Value
			line = at(func() { v = b.Load(b.PtrAdd(x, offs), mask, nil) })
			b.Store(b.PtrAdd(y, offs), b.Cast(v, ir.F32), mask)
		}
	}
	// Compiled for K divisible by 16: 16-byte loads of 8 bf16.
	specialized := func(masked bool) *ir.Func {
		f := kernel(t, 4, map[string]int{"K": 16}, setup(masked))
		var load *ir.Value
		f.Walk(func(v *ir.Value) {
			if v.Op == ir.OpLoad {
				load = v
			}
		})
		if load.Mem().Vec != 8 {
			t.Fatalf("load %s: want vec=8", load.LongString())
		}
		return f
	}
	// run launches two programs over x = 0, 1, 2, ... of n elements and
	// checks the first 2·k elements of y.
	run := func(f *ir.Func, k, n int) error {
		x := make([]byte, 2*n)
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint16(x[2*i:], ir.F32ToBF16(float32(i)))
		}
		y := make([]byte, 4*n)
		err := launch(t, f, [3]int{2, 1, 1}, x, y, k)
		if err == nil {
			for i := 0; i < 2*k; i++ {
				if captest.GetF32(y, i) != float32(i) {
					t.Fatalf("K=%d: y[%d] = %v; want %d", k, i, captest.GetF32(y, i), i)
				}
			}
		}
		return err
	}
	masked := specialized(true)
	if err := run(masked, 48, 2*48); err != nil {
		t.Fatalf("K=48, as specialized: %v", err)
	}
	// Run with a K the kernel was not specialized for. Masked, program 0
	// already breaks the promise: its mask changes inside a vector.
	err := run(masked, 17, 2*17)
	want := fmt.Sprintf("%s:%d: load: the mask of a 8-element vector is claimed uniform, but element 1 differs", thisFile(), line)
	if err == nil || !strings.Contains(err.Error(), "program [0 0 0]: "+want) {
		t.Fatalf("K=17, masked: error %v; want program 0: %q", err, want)
	}
	// Unmasked, program 0 is aligned and row 1 starts at byte 34, not a
	// multiple of 16.
	err = run(specialized(false), 17, 17+256)
	want = fmt.Sprintf("program [1 0 0]: %s:%d: load: 16-byte vector access at byte offset 34 is misaligned", thisFile(), line)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("K=17, unmasked: error %v; want %q", err, want)
	}
	// The same kernel compiled for any K loads scalars and runs.
	if err := run(kernel(t, 4, map[string]int{"K": 1}, setup(true)), 17, 2*17); err != nil {
		t.Fatalf("K=17, unspecialized: %v", err)
	}
}

// TestReduceShapes runs one reduction per shape, axis, kind and block size
// against a plain sum or max: lane folds, shuffles, the LDS step across
// waves and the replicas of tiles smaller than the block all take part.
func TestReduceShapes(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, sh := range [][2]int{{1, 256}, {8, 64}, {2, 32}, {64, 16}, {4, 4}, {32, 2}, {16, 128}, {1, 1}} {
		for _, axis := range []int{0, 1} {
			for _, warps := range []int{1, 4} {
				for _, kind := range []ir.ReduceKind{ir.RSum, ir.RMax, ir.RMin} {
					rows, cols := sh[0], sh[1]
					name := fmt.Sprintf("%dx%d/axis%d/warps%d/%v", rows, cols, axis, warps, kind)
					t.Run(name, func(t *testing.T) {
						f := kernel(t, warps, nil, func(b *ir.Builder) {
							x := b.Param("x", ir.I32)
							y := b.Param("y", ir.I32)
							ri, ci := b.Arange(rows), b.Arange(cols)
							v := b.Load(b.PtrAdd(x, b.Add(b.Mul(b.Col(ri), cols), b.Row(ci))), nil, nil)
							out := cols
							if axis == 1 {
								out = rows
							}
							b.Store(b.PtrAdd(y, b.Arange(out)), b.Reduce(v, axis, kind), nil)
						})
						x := make([]int32, rows*cols)
						for i := range x {
							x[i] = int32(r.IntN(2001) - 1000)
						}
						n := cols
						if axis == 1 {
							n = rows
						}
						want := make([]int32, n)
						for o := 0; o < n; o++ {
							first := true
							for e := 0; e < rows*cols/n; e++ {
								i, j := e, o
								if axis == 1 {
									i, j = o, e
								}
								v := x[i*cols+j]
								switch {
								case first:
									want[o], first = v, false
								case kind == ir.RSum:
									want[o] += v
								case kind == ir.RMax:
									want[o] = max(want[o], v)
								default:
									want[o] = min(want[o], v)
								}
							}
						}
						y := make([]byte, 4*n)
						if err := launch(t, f, [3]int{1, 1, 1}, captest.I32s(x), y); err != nil {
							t.Fatal(err)
						}
						for o := range want {
							if got := captest.GetI32(y, o); got != want[o] {
								t.Fatalf("y[%d] = %d; want %d\n%v", o, got, want[o], f)
							}
						}
					})
				}
			}
		}
	}
}

// TestReduceTwice folds a 2-D tile to a scalar in two reductions, the
// second over a sliced layout, and adds it atomically.
func TestReduceTwice(t *testing.T) {
	for _, sh := range [][2]int{{8, 64}, {64, 16}, {2, 2}} {
		for _, first := range []int{0, 1} {
			rows, cols := sh[0], sh[1]
			t.Run(fmt.Sprintf("%dx%d/axis%d", rows, cols, first), func(t *testing.T) {
				f := kernel(t, 4, nil, func(b *ir.Builder) {
					x := b.Param("x", ir.I32)
					s := b.Param("s", ir.I32)
					v := b.Load(b.PtrAdd(x, b.Add(b.Mul(b.Col(b.Arange(rows)), cols), b.Row(b.Arange(cols)))), nil, nil)
					b.AtomicAdd(s, b.Reduce(b.Reduce(v, first, ir.RSum), 0, ir.RSum), nil, ir.Relaxed, ir.ScopeAgent)
				})
				x := make([]int32, rows*cols)
				var want int32
				for i := range x {
					x[i] = int32(i%17 - 8)
					want += x[i]
				}
				out := captest.I32s([]int32{0})
				if err := launch(t, f, [3]int{3, 1, 1}, captest.I32s(x), out); err != nil {
					t.Fatal(err)
				}
				if got := captest.GetI32(out, 0); got != 3*want {
					t.Errorf("3 programs' sums = %d; want %d", got, 3*want)
				}
			})
		}
	}
}

// TestLaunchErrors: mistakes of the caller are errors, not panics or
// silently wrong runs.
func TestLaunchErrors(t *testing.T) {
	f := kernel(t, 1, nil, func(b *ir.Builder) {
		x := b.Param("x", ir.I32)
		n := b.Size("n")
		offs := b.Arange(4)
		b.Store(b.PtrAdd(x, b.Sub(offs, n)), b.Div(offs, n), nil)
	})
	for _, tt := range []struct {
		name string
		grid [3]int
		args []any
		want string
	}{
		{"missing argument", [3]int{1, 1, 1}, []any{make([]byte, 16)}, "k takes 2 arguments, got 1"},
		{"size as a buffer", [3]int{1, 1, 1}, []any{make([]byte, 16), make([]byte, 4)}, "argument n: want int, got []uint8"},
		{"buffer as a size", [3]int{1, 1, 1}, []any{3, 1}, "argument x: want []byte, got int"},
		{"size past i32", [3]int{1, 1, 1}, []any{make([]byte, 16), 1 << 31}, "argument n = 2147483648 does not fit in i32"},
		{"division by zero", [3]int{1, 1, 1}, []any{make([]byte, 16), 0}, "div: lane 0 register 0: integer division by zero"},
		{"pointer before the buffer", [3]int{1, 1, 1}, []any{make([]byte, 16), 1}, "out-of-bounds access to x at byte -4"},
	} {
		err := launch(t, f, tt.grid, tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v; want %q", tt.name, err, tt.want)
		}
	}
	if err := launch(t, f, [3]int{0, 1, 1}, make([]byte, 16), 1); err != nil {
		t.Errorf("empty grid: %v", err)
	}
}

func TestLaunchNegativeGrid(t *testing.T) {
	f := kernel(t, 1, nil, func(b *ir.Builder) {
		b.Store(b.PtrAdd(b.Param("x", ir.F32), b.Arange(4)), 1.0, nil)
	})
	for _, grid := range [][3]int{{-1, 1, 1}, {-1, -1, 1}, {2, 1, -3}} {
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panic: %v", r)
				}
			}()
			return interp.Launch(f, grid, []any{make([]byte, 16)})
		}()
		if err == nil || strings.HasPrefix(err.Error(), "panic") || !strings.Contains(err.Error(), "grid") {
			t.Errorf("grid %v: %v; want an error about the grid", grid, err)
		}
	}
}

// TestLoopCarriedTransposed: a loop whose carried tile enters transposed
// (its layout the transpose of a load's) and meets, in the body, loads in
// the layout their own pointers want.
func TestLoopCarriedTransposed(t *testing.T) {
	// y[r][j] = max over k of x[k][j][r], x of [K][16][64].
	f := kernel(t, 4, nil, func(b *ir.Builder) {
		x := b.Param("x", ir.I32)
		y := b.Param("y", ir.I32)
		kk := b.Size("K")
		first := b.Add(b.Mul(b.Col(b.Arange(16)), 64), b.Row(b.Arange(64)))
		init := b.Trans(b.Load(b.PtrAdd(x, first), nil, nil))
		acc := b.For(1, kk, 1, []*ir.Value{init}, func(i *ir.Value, c []*ir.Value) []*ir.Value {
			idx := b.Add(b.Add(b.Mul(b.Row(b.Arange(16)), 64), b.Col(b.Arange(64))), b.Mul(i, 1024))
			return []*ir.Value{b.Max(c[0], b.Load(b.PtrAdd(x, idx), nil, nil))}
		})
		b.Store(b.PtrAdd(y, b.Add(b.Mul(b.Col(b.Arange(64)), 16), b.Row(b.Arange(16)))), acc[0], nil)
	})
	const k = 3
	x := make([]int32, k*16*64)
	for i := range x {
		x[i] = int32((i*7919)%1000 - 500)
	}
	y := make([]byte, 4*64*16)
	if err := launch(t, f, [3]int{1, 1, 1}, captest.I32s(x), y, k); err != nil {
		t.Fatal(err)
	}
	for r := 0; r < 64; r++ {
		for j := 0; j < 16; j++ {
			w := x[j*64+r]
			for i := 1; i < k; i++ {
				w = max(w, x[i*1024+j*64+r])
			}
			if got := captest.GetI32(y, r*16+j); got != w {
				t.Fatalf("y[%d][%d] = %d; want %d\n%v", r, j, got, w, f)
			}
		}
	}
}
