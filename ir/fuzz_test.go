package ir_test

import (
	"fmt"
	"testing"

	"github.com/fp8gen/fp8gen/interp"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/lower"
)

// dslProgram builds a kernel from bytes: each byte picks a DSL call and its
// operands from the values made so far. Most programs are wrong; the
// builder must say so with an error, never a panic, and a program it
// accepts must verify, lower and run (or fail the run with an error).
func dslProgram(b *ir.Builder, data []byte) {
	x := b.Param("x", ir.F32)
	y := b.Param("y", ir.I32)
	n := b.Size("n")
	vals := []*ir.Value{b.Arange(8), b.Full(ir.F32, 1, 8), n, b.F32(2)}
	pick := func(i int) *ir.Value { return vals[i%len(vals)] }
	for i := 0; i+2 < len(data); i += 3 {
		a, c := pick(int(data[i+1])), pick(int(data[i+2]))
		var v *ir.Value
		switch data[i] % 24 {
		case 0:
			v = b.Add(a, c)
		case 1:
			v = b.Mul(a, c)
		case 2:
			v = b.Max(a, c)
		case 3:
			v = b.Lt(a, c)
		case 4:
			v = b.Where(b.Lt(a, c), a, c)
		case 5:
			v = b.Abs(a)
		case 6:
			v = b.Cast(a, ir.F32)
		case 7:
			v = b.Cast(a, ir.I32)
		case 8:
			v = b.Reduce(a, 0, ir.ReduceKind(data[i+2]%3))
		case 9:
			v = b.Col(a)
		case 10:
			v = b.Row(a)
		case 11:
			v = b.Trans(a)
		case 12:
			v = b.Load(b.PtrAdd(x, a), nil, nil)
		case 13:
			b.Store(b.PtrAdd(y, a), c, nil)
		case 14:
			v = b.Rotate(a, int(data[i+2]%2), int(data[i+2]))
		case 15:
			v = b.Arange(1 << (data[i+1] % 8))
		case 16:
			v = b.Xor(a, c)
		case 17:
			v = b.Shl(a, c)
		case 18:
			v = b.Bitcast(a, ir.I32)
		case 19:
			v = b.MultipleOf(a, 1<<(data[i+2]%4))
		case 20:
			r := b.For(0, n, 1, []*ir.Value{a}, func(i *ir.Value, c []*ir.Value) []*ir.Value { return []*ir.Value{b.Add(c[0], c[0])} })
			v = r[0]
		case 21:
			b.If(b.Lt(n, 4), func() { b.Store(y, b.Cast(a, ir.I32), nil) })
		case 22:
			v = b.AtomicAdd(b.PtrAdd(x, a), c, nil, ir.Relaxed, ir.ScopeAgent)
		case 23:
			v = b.Sub(a, c)
		}
		if v != nil {
			vals = append(vals, v)
		}
	}
	if len(vals) > 4 {
		last := vals[len(vals)-1]
		if last.Type.Rank() > 0 {
			b.Store(b.PtrAdd(y, b.Arange(last.Type.Shape[0])), b.Cast(b.Reduce(b.Cast(last, ir.F32), last.Type.Rank()-1, ir.RMax), ir.I32), nil)
		}
	}
}

func FuzzDSL(f *testing.F) {
	for _, s := range [][]byte{{0, 0, 1}, {12, 0, 0, 2, 4, 1, 13, 0, 4}, {9, 0, 0, 10, 1, 1, 0, 4, 5, 8, 6, 6}, {14, 0, 3, 20, 1, 0, 22, 0, 1}} {
		f.Add(s)
	}
	tg := sm90(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 120 {
			return
		}
		b := ir.NewBuilder("fuzz", tg)
		dslProgram(b, data)
		fn, err := b.Func()
		if err != nil {
			return // a DSL error, reported with its position
		}
		if err := ir.Verify(fn, ir.PhaseTile); err != nil {
			t.Fatalf("Func accepted a kernel the verifier rejects: %v", err)
		}
		if err := lower.Run(fn, &lower.Config{Warps: 1 + int(len(data)%2), Verify: true}); err != nil {
			return // refused, with an error
		}
		args := []any{make([]byte, 4*64), make([]byte, 4*64), 3}
		interp.Launch(fn, [3]int{1, 1, 1}, args) //nolint:errcheck // out-of-bounds and the like are errors, not panics
		_ = fmt.Sprint(fn)
	})
}
