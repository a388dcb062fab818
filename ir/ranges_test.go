package ir_test

import (
	"math"
	"testing"

	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/target"
)

// A 2-D tile's row index times the row length reaches past 2^31 in the
// masked-off rows of the last tile before the elements do; a loop counter
// near 2^31 steps past it; values read from memory are not known, but
// clamped ones are.
func TestIndexOverflow(t *testing.T) {
	tg, _ := target.Lookup("sm_90")
	tile := func(b *ir.Builder) {
		x := b.Param("x", ir.F32)
		m, k := b.Size("M"), b.Size("K")
		rows := b.Add(b.Mul(b.ProgramID(0), 128), b.Arange(128))
		cols := b.Add(b.Mul(b.ProgramID(1), 64), b.Arange(64))
		offs := b.Add(b.Mul(b.Col(rows), k), b.Row(cols))
		mask := b.And(b.Col(b.Lt(rows, m)), b.Row(b.Lt(cols, k)))
		b.Store(b.PtrAdd(x, offs), b.Full(ir.F32, 0, 128, 64), mask)
	}
	loop := func(b *ir.Builder) {
		x := b.Param("x", ir.F32)
		n := b.Size("N")
		b.For(b.ProgramID(0), n, 1024, nil, func(i *ir.Value, _ []*ir.Value) []*ir.Value {
			b.Store(b.PtrAdd(x, b.Add(i, b.Arange(1024))), b.Full(ir.F32, 0, 1024), nil)
			return nil
		})
	}
	loaded := func(clamp bool) func(b *ir.Builder) {
		return func(b *ir.Builder) {
			x, o := b.Param("x", ir.F32), b.Param("o", ir.I32)
			k := b.Size("K")
			row := b.Load(b.PtrAdd(o, b.ProgramID(0)), nil, nil)
			if clamp {
				row = b.Min(b.Max(row, 0), 1000)
			}
			b.Store(b.PtrAdd(x, b.Add(b.Mul(row, k), b.Arange(64))), b.Full(ir.F32, 0, 64), nil)
		}
	}
	// A count (a sum of 0s and 1s) is at most the number of its terms; a
	// sum of loaded values is not known.
	count := func(ones bool) func(b *ir.Builder) {
		return func(b *ir.Builder) {
			x, o := b.Param("x", ir.F32), b.Param("o", ir.I32)
			k := b.Size("K")
			v := b.Index(b.Load(b.PtrAdd(o, b.Arange(64)), nil, nil))
			if ones {
				v = b.Where(b.Gt(v, 0), b.Int(1), b.Int(0))
			}
			n := b.Reduce(v, 0, ir.RSum)
			b.Store(b.PtrAdd(x, b.Add(b.Mul(n, k), b.Arange(64))), b.Full(ir.F32, 0, 64), nil)
		}
	}
	for _, c := range []struct {
		name  string
		build func(*ir.Builder)
		grid  [3]int
		sizes map[string]int64
		over  bool
	}{
		// 2^31 − 2^20 elements: the last tile's rows run to 16384·128 − 1.
		{"tile fits", tile, [3]int{16384, 2, 1}, map[string]int64{"M": 16376, "K": 128}, false},
		{"padding past 2^31", tile, [3]int{560, 470, 1}, map[string]int64{"M": 71580, "K": 30000}, true},
		{"loop fits", loop, [3]int{4, 1, 1}, map[string]int64{"N": 1 << 30}, false},
		{"loop counter past 2^31", loop, [3]int{4, 1, 1}, map[string]int64{"N": math.MaxInt32 - 100}, true},
		{"loaded row", loaded(false), [3]int{4, 1, 1}, map[string]int64{"K": 64}, true},
		{"clamped loaded row", loaded(true), [3]int{4, 1, 1}, map[string]int64{"K": 64}, false},
		{"count", count(true), [3]int{4, 1, 1}, map[string]int64{"K": 1 << 20}, false},
		{"count past 2^31", count(true), [3]int{4, 1, 1}, map[string]int64{"K": 1 << 25}, true},
		{"sum of loaded values", count(false), [3]int{4, 1, 1}, map[string]int64{"K": 64}, true},
	} {
		b := ir.NewBuilder("k", tg)
		c.build(b)
		f, err := b.Func()
		if err != nil {
			t.Fatal(err)
		}
		v := f.IndexOverflow(c.grid, c.sizes)
		if (v != nil) != c.over {
			t.Errorf("%s: overflow at %v; want overflow %v", c.name, v, c.over)
		}
	}
}
