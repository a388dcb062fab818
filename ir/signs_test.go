package ir_test

import (
	"math"
	"testing"

	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/target"
)

// An amax (a max of absolute values, carried by a loop from +0 and reduced
// by max) is never −0; starting from −0, folding in a raw value, a sum or
// a negation lose the fact, and so does a loop whose other carried value
// feeds it one of those.
func TestNoNegZero(t *testing.T) {
	amax := func(init float64, fold func(b *ir.Builder, acc, x *ir.Value) *ir.Value) func(*ir.Builder) *ir.Value {
		return func(b *ir.Builder) *ir.Value {
			x, n := b.Param("x", ir.F32), b.Size("N")
			out := b.For(0, n, 64, []*ir.Value{b.Full(ir.F32, init, 64)}, func(i *ir.Value, c []*ir.Value) []*ir.Value {
				return []*ir.Value{fold(b, c[0], b.Load(b.PtrAdd(x, b.Add(i, b.Arange(64))), nil, 0.0))}
			})
			return b.Reduce(out[0], 0, ir.RMax)
		}
	}
	absMax := func(b *ir.Builder, acc, x *ir.Value) *ir.Value { return b.Max(acc, b.Abs(x)) }
	for _, c := range []struct {
		name  string
		build func(*ir.Builder) *ir.Value
		want  bool
	}{
		{"amax", amax(0, absMax), true},
		{"amax from -0", amax(math.Copysign(0, -1), absMax), false},
		{"max of raw values", amax(0, func(b *ir.Builder, acc, x *ir.Value) *ir.Value { return b.Max(acc, x) }), false},
		{"min of absolute values", amax(0, func(b *ir.Builder, acc, x *ir.Value) *ir.Value { return b.Min(acc, b.Abs(x)) }), true},
		{"negated", func(b *ir.Builder) *ir.Value { return b.Neg(amax(0, absMax)(b)) }, false},
		{"sum of absolute values", func(b *ir.Builder) *ir.Value {
			x := b.Param("x", ir.F32)
			return b.Reduce(b.Abs(b.Load(b.PtrAdd(x, b.Arange(64)), nil, 0.0)), 0, ir.RSum)
		}, false},
		{"select of absolute values and +0", func(b *ir.Builder) *ir.Value {
			x := b.Param("x", ir.F32)
			v := b.Load(b.PtrAdd(x, b.Arange(64)), nil, 0.0)
			return b.Where(b.Gt(v, 1.0), b.Abs(v), b.Full(ir.F32, 0, 64))
		}, true},
		{"select of an absolute value and a raw one", func(b *ir.Builder) *ir.Value {
			x := b.Param("x", ir.F32)
			v := b.Load(b.PtrAdd(x, b.Arange(64)), nil, 0.0)
			return b.Where(b.Gt(v, 1.0), b.Abs(v), v)
		}, false},
		// The second carried value takes the first's raw load each turn.
		{"carried from a raw value", func(b *ir.Builder) *ir.Value {
			x, n := b.Param("x", ir.F32), b.Size("N")
			z := b.Full(ir.F32, 0, 64)
			out := b.For(0, n, 64, []*ir.Value{z, z}, func(i *ir.Value, c []*ir.Value) []*ir.Value {
				v := b.Load(b.PtrAdd(x, b.Add(i, b.Arange(64))), nil, 0.0)
				return []*ir.Value{v, b.Max(c[1], c[0])}
			})
			return out[1]
		}, false},
	} {
		if got := holds(t, c.name, c.build, (*ir.Func).NoNegZero); got != c.want {
			t.Errorf("%s: NoNegZero holds the value: %v; want %v", c.name, got, c.want)
		}
	}
}

// holds builds a kernel that stores the value build makes (a tile of 64,
// or a scalar splat to one) and reports whether fact's set has it.
func holds(t *testing.T, name string, build func(*ir.Builder) *ir.Value, fact func(*ir.Func) map[*ir.Value]bool) bool {
	t.Helper()
	tg, _ := target.Lookup("sm_90")
	b := ir.NewBuilder("k", tg)
	v := build(b)
	st := v
	if len(v.Type.Shape) == 0 {
		st = b.Splat(v, 64)
	}
	b.Store(b.PtrAdd(b.Param("y", ir.F32), b.Arange(64)), st, nil)
	f, err := b.Func()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return fact(f)[v]
}

// An amax carried from +0 is never NaN, whatever it folds in; a max of
// absolute values of loads, or a loop from a NaN, may be.
func TestNoNaN(t *testing.T) {
	loop := func(init float64) func(b *ir.Builder) *ir.Value {
		return func(b *ir.Builder) *ir.Value {
			x, n := b.Param("x", ir.F32), b.Size("N")
			out := b.For(0, n, 64, []*ir.Value{b.Full(ir.F32, init, 64)}, func(i *ir.Value, c []*ir.Value) []*ir.Value {
				return []*ir.Value{b.Max(b.Abs(b.Load(b.PtrAdd(x, b.Add(i, b.Arange(64))), nil, 0.0)), c[0])}
			})
			return b.Reduce(out[0], 0, ir.RMax)
		}
	}
	loaded := func(b *ir.Builder) *ir.Value {
		x := b.Param("x", ir.F32)
		return b.Abs(b.Load(b.PtrAdd(x, b.Arange(64)), nil, 0.0))
	}
	twoLoaded := func(b *ir.Builder) *ir.Value {
		x := b.Param("x", ir.F32)
		abs := func(off int) *ir.Value { return b.Abs(b.Load(b.PtrAdd(x, b.Add(b.Arange(64), off)), nil, 0.0)) }
		return b.Max(abs(0), abs(64))
	}
	for _, c := range []struct {
		name  string
		build func(*ir.Builder) *ir.Value
		want  bool
	}{
		{"amax from +0", loop(0), true},
		{"amax from NaN", loop(math.NaN()), false},
		{"absolute value of a load", loaded, false},
		{"max of two loads' absolute values", twoLoaded, false},
		{"max of a load's absolute value and 1", func(b *ir.Builder) *ir.Value { return b.Max(loaded(b), b.Full(ir.F32, 1, 64)) }, true},
	} {
		if got := holds(t, c.name, c.build, (*ir.Func).NoNaN); got != c.want {
			t.Errorf("%s: NoNaN holds the value: %v; want %v", c.name, got, c.want)
		}
	}
}
