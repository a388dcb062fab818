package ir_test

import (
	"strings"
	"testing"

	"github.com/fp8gen/fp8gen/ir"
)

// A kernel written with the values' methods is the kernel written with the
// builder's: the same IR, value for value, positions at the kernel's lines.
func TestFluentIsTheBuilder(t *testing.T) {
	kernel := func(fluent bool) string {
		b := ir.NewBuilder("k", sm90(t))
		x := b.Load(b.PtrAdd(b.Param("x", ir.BF16), b.Arange(64)), nil, nil)
		y := b.Param("y", ir.F32)
		var v *ir.Value
		if fluent {
			f := x.Cast(ir.F32)
			v = f.Abs().Max(0.5).Mul(f.Neg().Add(1)).Row().Reduce(1, ir.RMax).Div(3).Sub(f.Lt(0).Cast(ir.I32).Cast(ir.F32).Reduce(0, ir.RSum))
		} else {
			f := b.Cast(x, ir.F32)
			v = b.Sub(b.Div(b.Reduce(b.Row(b.Mul(b.Max(b.Abs(f), 0.5), b.Add(b.Neg(f), 1))), 1, ir.RMax), 3),
				b.Reduce(b.Cast(b.Cast(b.Lt(f, 0), ir.I32), ir.F32), 0, ir.RSum))
		}
		b.Store(b.PtrAdd(y, b.Arange(1)), v, nil)
		fn, err := b.Func()
		if err != nil {
			t.Fatal(err)
		}
		return fn.String()
	}
	builder, fluent := kernel(false), kernel(true)
	if fluent != builder {
		t.Errorf("fluent:\n%s\nbuilder:\n%s", fluent, builder)
	}
	if !strings.Contains(fluent, "reduce") || strings.Count(fluent, "cast") != 3 {
		t.Errorf("the kernel lacks its reductions or casts:\n%s", fluent)
	}
}

// A method on a value lowering made (no builder's) is a broken invariant.
func TestFluentNeedsABuilder(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "BUG: a DSL method") {
			t.Errorf("recovered %v; want a BUG panic", r)
		}
	}()
	f := ir.NewFunc("k", sm90(t))
	f.NewValue(ir.OpConst, ir.Scalar(ir.F32), ir.ConstAttr{}).Abs()
}

// A loop's index and carried values take the methods too.
func TestFluentInLoops(t *testing.T) {
	b := ir.NewBuilder("k", sm90(t))
	y := b.Param("y", ir.F32)
	acc := b.For(b.I32(0), b.I32(8), b.I32(1), []*ir.Value{b.F32(0)}, func(i *ir.Value, c []*ir.Value) []*ir.Value {
		return []*ir.Value{c[0].Max(i.Add(1).Cast(ir.F32))}
	})
	b.Store(y, acc[0], nil)
	if _, err := b.Func(); err != nil {
		t.Fatal(err)
	}
}
