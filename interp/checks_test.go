package interp_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fp8gen/fp8gen/internal/captest"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/target"
)

// The interpreter checks what lowering claims and the GPU relies on; each
// test breaks one claim and expects it named.

// copyKernel copies n floats of x to y in a tile of 256.
func copyKernel(b *ir.Builder) {
	x := b.Param("x", ir.F32)
	y := b.Param("y", ir.F32)
	n := b.Size("n")
	offs := b.Arange(256)
	m := b.Lt(offs, n)
	b.Store(b.PtrAdd(y, offs), b.Load(b.PtrAdd(x, offs), m, nil), m)
}

func findOp(f *ir.Func, op ir.Op) *ir.Value {
	var found *ir.Value
	f.Walk(func(v *ir.Value) {
		if v.Op == op && found == nil {
			found = v
		}
	})
	return found
}

// A kernel specialized for n % 16 == 0 guards each vector by one mask bit;
// run at another n, that claim is false, and the GPU would read and write
// past the end: the interpreter says so instead of copying.
func TestUniformMaskClaimChecked(t *testing.T) {
	f := kernel(t, 4, map[string]int{"n": 16}, copyKernel)
	if ld := findOp(f, ir.OpLoad); !ld.Mem().Uniform || ld.Mem().Vec != 4 {
		t.Fatalf("load %s: want vec=4 uniform", ld.LongString())
	}
	x, y := captest.F32s(make([]float32, 256)), captest.F32s(make([]float32, 256))
	if err := launch(t, f, [3]int{1, 1, 1}, x, y, 32); err != nil {
		t.Fatalf("n=32, as specialized: %v", err)
	}
	err := launch(t, f, [3]int{1, 1, 1}, x, y, 7)
	if err == nil || !strings.Contains(err.Error(), "claimed uniform, but element 3 differs") {
		t.Fatalf("n=7: error %v; want the uniform-mask claim refuted", err)
	}
}

// rangeCopy copies x[lo:hi] to y (256 floats), or with hole every element
// but x[lo].
func rangeCopy(hole bool) func(b *ir.Builder) {
	return func(b *ir.Builder) {
		x := b.Param("x", ir.F32)
		y := b.Param("y", ir.F32)
		lo, hi := b.Size("lo"), b.Size("hi")
		offs := b.Arange(256)
		m := b.And(b.Ge(offs, lo), b.Lt(offs, hi))
		if hole {
			m = b.Ne(offs, lo)
		}
		b.Store(b.PtrAdd(y, offs), b.Load(b.PtrAdd(x, offs), m, nil), m)
	}
}

// A mask that holds on one interval of each vector (rows of a group,
// whose bounds fall anywhere) is tested at the vector's two ends: the
// copy of any range is exact, and a mask with a hole, claimed to be an
// interval, is refuted before anything is written.
func TestIntervalMaskClaimChecked(t *testing.T) {
	f := kernel(t, 4, nil, rangeCopy(false))
	st := findOp(f, ir.OpStore)
	if !st.Mem().Ends || st.Mem().Uniform || st.Mem().Vec != 4 {
		t.Fatalf("store %s: want vec=4 ends", st.LongString())
	}
	src := make([]float32, 256)
	for i := range src {
		src[i] = float32(i + 1)
	}
	for _, r := range [][2]int{{0, 256}, {1, 255}, {3, 5}, {5, 6}, {8, 8}, {7, 9}, {250, 256}} {
		y := captest.F32s(make([]float32, 256))
		if err := launch(t, f, [3]int{1, 1, 1}, captest.F32s(src), y, r[0], r[1]); err != nil {
			t.Fatalf("range %v: %v", r, err)
		}
		for i := 0; i < 256; i++ {
			want := float32(0)
			if i >= r[0] && i < r[1] {
				want = src[i]
			}
			if got := captest.GetF32(y, i); got != want {
				t.Fatalf("range %v: y[%d] = %v; want %v", r, i, got, want)
			}
		}
	}
	g := kernel(t, 4, nil, rangeCopy(true))
	st = findOp(g, ir.OpStore)
	if st.Mem().Ends || st.Mem().Uniform {
		t.Fatalf("store %s: != is no interval", st.LongString())
	}
	st.Mem().Ends = true
	y := captest.F32s(make([]float32, 256))
	err := launch(t, g, [3]int{1, 1, 1}, captest.F32s(src), y, 5, 0)
	if err == nil || !strings.Contains(err.Error(), "claimed to hold on one interval, but it holds on two") {
		t.Fatalf("error %v; want the interval claim refuted", err)
	}
}

// An LDS vector must be aligned to its width: 8 bytes from rows 68 bytes
// apart are not.
func TestLDSVectorChecked(t *testing.T) {
	f := kernel(t, 4, nil, transpose)
	ld := findOp(f, ir.OpLDSLoad)
	if ld.Mem().Vec != 4 {
		t.Fatalf("lds_load %s: want vec=4", ld.LongString())
	}
	x, want := transposeData(1)
	qt := make([]byte, len(want))
	ld.Mem().Vec = 8
	err := launch(t, f, [3]int{1, 1, 1}, x, qt, 64, 16)
	if err == nil || !strings.Contains(err.Error(), "lds_load: 8-byte vector access at byte offset 68 is misaligned") {
		t.Fatalf("error %v; want a misaligned LDS vector", err)
	}
	// Registers that are not consecutive bytes do not form a vector.
	st := findOp(f, ir.OpLDSStore)
	ld.Mem().Vec = 4
	st.Mem().Vec = 2 // the transposing write: a lane's registers run down a column
	err = launch(t, f, [3]int{1, 1, 1}, x, qt, 64, 16)
	if err == nil || !strings.Contains(err.Error(), "lds_store: a 2-element vector is not contiguous") {
		t.Fatalf("error %v; want a non-contiguous LDS vector", err)
	}
}

// lanesFunc is a hand-written lanes program of one wave.
func lanesFunc(t *testing.T, body func(f *ir.Func, add func(*ir.Value) *ir.Value)) *ir.Func {
	tg, err := target.Lookup("sm_90")
	if err != nil {
		t.Fatal(err)
	}
	f := ir.NewFunc("k", tg)
	f.Phase, f.Threads = ir.PhaseLanes, 32
	add := func(v *ir.Value) *ir.Value { f.Entry.Append(v); return v }
	body(f, add)
	if err := ir.Verify(f, ir.PhaseLanes); err != nil {
		t.Fatal(err)
	}
	return f
}

// Loop bounds and if conditions must be the same in every lane (the GPU
// would diverge around barriers otherwise).
func TestDivergenceChecked(t *testing.T) {
	for _, op := range []ir.Op{ir.OpFor, ir.OpIf} {
		f := lanesFunc(t, func(f *ir.Func, add func(*ir.Value) *ir.Value) {
			tid := add(f.NewValue(ir.OpTid, ir.Lanes(ir.I32, 1), nil))
			zero := add(f.NewValue(ir.OpConst, ir.Scalar(ir.I32), ir.ConstAttr{}))
			one := add(f.NewValue(ir.OpConst, ir.Scalar(ir.I32), ir.ConstAttr{Int: 1}))
			var v *ir.Value
			if op == ir.OpFor {
				v = f.NewValue(ir.OpFor, ir.Type{}, nil, zero, tid, one)
				v.Body = &ir.Block{Parent: v}
				iv := f.NewValue(ir.OpLoopVar, ir.Lanes(ir.I32, 0), ir.IntAttr{})
				iv.Block = v.Body
				v.Body.Vars = []*ir.Value{iv}
				v.Body.Append(f.NewValue(ir.OpYield, ir.Type{}, nil))
			} else {
				c := add(f.NewValue(ir.OpLt, ir.Lanes(ir.Bool, 1), nil, tid, one))
				v = f.NewValue(ir.OpIf, ir.Type{}, nil, c)
				v.Body = &ir.Block{Parent: v}
			}
			add(v)
		})
		err := launch(t, f, [3]int{1, 1, 1})
		want := map[ir.Op]string{ir.OpFor: "the loop's end differs between lanes 0 and 1", ir.OpIf: "the if condition differs between lanes 0 and 1"}[op]
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v; want %q", op.Name(), err, want)
		}
	}
}

// MultipleOf is trusted by lowering and checked by the interpreter.
func TestMultipleOfChecked(t *testing.T) {
	var line int
	f := kernel(t, 1, nil, func(b *ir.Builder) {
		offs := b.Param("offsets", ir.I32)
		x := b.Param("x", ir.F32)
		var start *ir.Value
		line = at(func() { start = b.MultipleOf(b.Load(offs, nil, nil), 4) })
		idx := b.Add(start, b.Arange(32))
		b.Store(b.PtrAdd(x, idx), 1.0, nil)
	})
	if st := findOp(f, ir.OpStore); st.Mem().Vec != 4 {
		t.Errorf("store %s: the hint should allow 16-byte vectors", st.LongString())
	}
	if err := launch(t, f, [3]int{1, 1, 1}, captest.I32s([]int32{8}), captest.F32s(make([]float32, 48))); err != nil {
		t.Fatalf("start 8: %v", err)
	}
	err := launch(t, f, [3]int{1, 1, 1}, captest.I32s([]int32{6}), captest.F32s(make([]float32, 48)))
	want := fmt.Sprintf("%s:%d: assume: the kernel asserts a multiple of 4, lane 0 register 0 holds 6", thisFile(), line)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("start 6: error %v; want %q", err, want)
	}
}
