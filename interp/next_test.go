package interp_test

import (
	"testing"

	"github.com/fp8gen/fp8gen/internal/captest"
	"github.com/fp8gen/fp8gen/ir"
)

// The IR already carries what the next kernels need. Per-expert (MoE)
// casts walk groups whose row bounds are loaded from an offsets tensor:
// here each program sums the rows of its group, with an empty group too.
func TestLoopBoundsLoadedFromMemory(t *testing.T) {
	const k = 64
	f := kernel(t, 2, nil, func(b *ir.Builder) {
		x := b.Param("x", ir.F32)
		offs := b.Param("offsets", ir.I32)
		out := b.Param("out", ir.F32)
		g := b.ProgramID(0)
		lo := b.Load(b.PtrAdd(offs, g), nil, nil)
		hi := b.Load(b.PtrAdd(offs, b.Add(g, 1)), nil, nil)
		cols := b.Arange(k)
		acc := b.For(lo, hi, 1, []*ir.Value{b.Full(ir.F32, 0, k)}, func(r *ir.Value, c []*ir.Value) []*ir.Value {
			return []*ir.Value{b.Add(c[0], b.Load(b.PtrAdd(x, b.Add(b.Mul(r, k), cols)), nil, nil))}
		})
		b.Store(b.PtrAdd(out, b.Add(b.Mul(g, k), b.Arange(k))), acc[0], nil)
	})
	groups := []int32{0, 3, 3, 7, 10} // group 1 is empty
	rows := int(groups[len(groups)-1])
	x := make([]float32, rows*k)
	for i := range x {
		x[i] = float32(i % 97)
	}
	out := make([]byte, 4*k*(len(groups)-1))
	if err := launch(t, f, [3]int{len(groups) - 1, 1, 1}, captest.F32s(x), captest.I32s(groups), out); err != nil {
		t.Fatal(err)
	}
	for g := 0; g+1 < len(groups); g++ {
		for c := 0; c < k; c++ {
			want := float32(0)
			for r := groups[g]; r < groups[g+1]; r++ {
				want += x[int(r)*k+c]
			}
			if got := captest.GetF32(out, g*k+c); got != want {
				t.Fatalf("group %d column %d: %v, want %v", g, c, got, want)
			}
		}
	}
}

// RoPE's rotate-half pairs element i of a head with i ± D/2: a second load
// with the partner's offsets gives each lane its partner, coalesced, with no
// cross-lane op. out = x·cos − rot(x)·sin with rot(x)[i] = −x[i+D/2] for the
// first half and x[i−D/2] for the second.
func TestRotateHalfPartner(t *testing.T) {
	const d = 128
	f := kernel(t, 1, map[string]int{}, func(b *ir.Builder) {
		x := b.Param("x", ir.F32)
		cs := b.Param("cos", ir.F32)
		sn := b.Param("sin", ir.F32)
		out := b.Param("out", ir.F32)
		row := b.Mul(b.ProgramID(0), d)
		i := b.Arange(d)
		first := b.Lt(i, d/2)
		partner := b.Where(first, b.Add(i, d/2), b.Sub(i, d/2))
		v := b.Load(b.PtrAdd(x, b.Add(row, i)), nil, nil)
		p := b.Load(b.PtrAdd(x, b.Add(row, partner)), nil, nil)
		rot := b.Where(first, b.Neg(p), p)
		c := b.Load(b.PtrAdd(cs, i), nil, nil)
		s := b.Load(b.PtrAdd(sn, i), nil, nil)
		b.Store(b.PtrAdd(out, b.Add(row, i)), b.Sub(b.Mul(v, c), b.Mul(rot, s)), nil)
	})
	const rows = 3
	x, cs, sn := make([]float32, rows*d), make([]float32, d), make([]float32, d)
	for i := range x {
		x[i] = float32(i%13) - 6
	}
	for i := range cs {
		cs[i], sn[i] = float32(i%5)/4, float32(i%7)/8
	}
	out := make([]byte, 4*rows*d)
	if err := launch(t, f, [3]int{rows, 1, 1}, captest.F32s(x), captest.F32s(cs), captest.F32s(sn), out); err != nil {
		t.Fatal(err)
	}
	for r := 0; r < rows; r++ {
		for i := 0; i < d; i++ {
			var rot float32
			if i < d/2 {
				rot = -x[r*d+i+d/2]
			} else {
				rot = x[r*d+i-d/2]
			}
			want := float32(x[r*d+i]*cs[i]) - float32(rot*sn[i]) // conversions forbid a fused multiply-add
			if got := captest.GetF32(out, r*d+i); got != want {
				t.Fatalf("row %d element %d: %v, want %v", r, i, got, want)
			}
		}
	}
}
