package ir_test

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/target"
)

func sm90(t testing.TB) *target.Target {
	t.Helper()
	tg, err := target.Lookup("sm_90")
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// at runs f and returns the line it was called on: a DSL call written
// inside f on that same line is the call an error must point at.
func at(f func()) int {
	_, _, line, _ := runtime.Caller(1)
	f()
	return line
}

func thisFile() string {
	_, file, _, _ := runtime.Caller(1)
	return filepath.Base(file)
}

// TestDSLMisuse checks that each misuse of the DSL gives an error that
// starts with the file:line of the kernel's own offending call and says what
// is wrong, and that the builder keeps going to the kernel's end.
func TestDSLMisuse(t *testing.T) {
	tests := []struct {
		name string
		// build returns the line of the offending call and a value to keep
		// computing with (nil if the call has no result).
		build func(b *ir.Builder) (int, *ir.Value)
		want  string
		bug   string // set where the builder is known to get it wrong
	}{
		{
			name: "add f32 to i32",
			build: func(b *ir.Builder) (int, *ir.Value) {
				x, y := b.Full(ir.F32, 1, 4), b.Full(ir.I32, 1, 4)
				var v *ir.Value
				return at(func() { v = b.Add(x, y) }), v
			},
			want: "add: operand types f32 and i32 differ: Cast one",
		},
		{
			name: "shapes 4x8 and 8x4",
			build: func(b *ir.Builder) (int, *ir.Value) {
				x, y := b.Full(ir.F32, 0, 4, 8), b.Full(ir.F32, 0, 8, 4)
				var v *ir.Value
				return at(func() { v = b.Mul(x, y) }), v
			},
			want: "shapes [4 8] and [8 4] do not broadcast: axis 0 is 4 and 8",
		},
		{
			name: "rank mismatch without Col or Row",
			build: func(b *ir.Builder) (int, *ir.Value) {
				x, y := b.Arange(4), b.Full(ir.I32, 0, 4, 8)
				var v *ir.Value
				return at(func() { v = b.Add(x, y) }), v
			},
			want: "shapes [4] and [4 8] have different ranks: use Col or Row",
		},
		{
			name: "arange not a power of two",
			build: func(b *ir.Builder) (int, *ir.Value) {
				var v *ir.Value
				return at(func() { v = b.Arange(3) }), v
			},
			want: "arange(3): the extent must be a power of two",
		},
		{
			name: "reduce over axis 2 of a 2-D tile",
			build: func(b *ir.Builder) (int, *ir.Value) {
				x := b.Full(ir.F32, 0, 4, 8)
				var v *ir.Value
				return at(func() { v = b.Reduce(x, 2, ir.RMax) }), v
			},
			want: "reduce over axis 2 of a rank-2 tile",
		},
		{
			name: "reduce over a negative axis",
			build: func(b *ir.Builder) (int, *ir.Value) {
				x := b.Full(ir.F32, 0, 4)
				var v *ir.Value
				return at(func() { v = b.Reduce(x, -1, ir.RSum) }), v
			},
			want: "reduce over axis -1 of a rank-1 tile",
		},
		{
			name: "trans of a 1-D tile",
			build: func(b *ir.Builder) (int, *ir.Value) {
				x := b.Arange(8)
				var v *ir.Value
				return at(func() { v = b.Trans(x) }), v
			},
			want: "trans of a rank-1 tile: want rank 2",
		},
		{
			name: "load from a non-pointer",
			build: func(b *ir.Builder) (int, *ir.Value) {
				x := b.Full(ir.F32, 0, 16)
				var v *ir.Value
				return at(func() { v = b.Load(x, nil, nil) }), v
			},
			want: "load from f32: want a pointer tile",
		},
		{
			name: "store to a non-pointer",
			build: func(b *ir.Builder) (int, *ir.Value) {
				x := b.Full(ir.I32, 0, 16)
				return at(func() { b.Store(x, 1, nil) }), nil
			},
			want: "store to i32: want a pointer tile",
		},
		{
			name: "param declared twice",
			build: func(b *ir.Builder) (int, *ir.Value) {
				b.Param("x", ir.F32)
				var v *ir.Value
				return at(func() { v = b.Param("x", ir.BF16) }), v
			},
			want: `parameter "x" declared twice`,
		},
		{
			name: "size named like a param",
			build: func(b *ir.Builder) (int, *ir.Value) {
				b.Param("M", ir.F32)
				var v *ir.Value
				return at(func() { v = b.Size("M") }), v
			},
			want: `parameter "M" declared twice`,
		},
		{
			name: "for body returns too few values",
			build: func(b *ir.Builder) (int, *ir.Value) {
				init := []*ir.Value{b.Full(ir.F32, 0, 4)}
				body := func(i *ir.Value, c []*ir.Value) []*ir.Value { return nil }
				var r []*ir.Value
				return at(func() { r = b.For(0, 8, 1, init, body) }), r[0]
			},
			want: "for: the body returns 0 values for 1 carried",
		},
		{
			name: "for body returns another type",
			build: func(b *ir.Builder) (int, *ir.Value) {
				init := []*ir.Value{b.Full(ir.F32, 0, 4)}
				body := func(i *ir.Value, c []*ir.Value) []*ir.Value { return []*ir.Value{b.Cast(c[0], ir.I32)} }
				var r []*ir.Value
				return at(func() { r = b.For(0, 8, 1, init, body) }), r[0]
			},
			want: "for: carried value 0 enters as tile<4xf32> and comes back as tile<4xi32>",
		},
		{
			name: "for body returns another shape",
			build: func(b *ir.Builder) (int, *ir.Value) {
				init := []*ir.Value{b.Full(ir.F32, 0, 4)}
				body := func(i *ir.Value, c []*ir.Value) []*ir.Value { return []*ir.Value{b.Full(ir.F32, 0, 8)} }
				var r []*ir.Value
				return at(func() { r = b.For(0, 8, 1, init, body) }), r[0]
			},
			want: "for: carried value 0 enters as tile<4xf32> and comes back as tile<8xf32>",
		},
		{
			name: "param inside a loop",
			build: func(b *ir.Builder) (int, *ir.Value) {
				line := 0
				b.For(0, 8, 1, nil, func(i *ir.Value, _ []*ir.Value) []*ir.Value {
					line = at(func() { b.Param("late", ir.F32) })
					return nil
				})
				return line, nil
			},
			want: `parameter "late" declared inside a loop or if`,
		},
		{
			name: "bf16 arithmetic without cast",
			build: func(b *ir.Builder) (int, *ir.Value) {
				x := b.Load(b.PtrAdd(b.Param("x", ir.BF16), b.Arange(8)), nil, nil)
				var v *ir.Value
				return at(func() { v = b.Mul(x, 2.0) }), v
			},
			want: "mul: arithmetic on bf16: Cast to f32 first",
		},
		{
			name: "bf16 reduce without cast",
			build: func(b *ir.Builder) (int, *ir.Value) {
				x := b.Load(b.PtrAdd(b.Param("x", ir.BF16), b.Arange(8)), nil, nil)
				var v *ir.Value
				return at(func() { v = b.Reduce(x, 0, ir.RMax) }), v
			},
			want: "reduce: reduce of bf16: Cast to f32 first",
		},
		{
			name: "atomic max on bf16",
			build: func(b *ir.Builder) (int, *ir.Value) {
				p := b.PtrAdd(b.Param("a", ir.BF16), b.Arange(8))
				x := b.Load(p, nil, nil)
				return at(func() { b.AtomicMax(p, x, nil, ir.Relaxed, ir.ScopeAgent) }), nil
			},
			want: "atomic: atomic on bf16: atomics take f32 or i32",
		},
		{
			name: "atomic add on bf16 of a Go number",
			build: func(b *ir.Builder) (int, *ir.Value) {
				p := b.Param("a", ir.BF16)
				return at(func() { b.AtomicAdd(p, 1.5, nil, ir.Relaxed, ir.ScopeAgent) }), nil
			},
			want: "atomic: atomic on bf16: atomics take f32 or i32",
		},
		{
			name: "atomic on a non-pointer with a Go number",
			build: func(b *ir.Builder) (int, *ir.Value) {
				x := b.Full(ir.F32, 0, 4)
				return at(func() { b.AtomicMax(x, 1.0, nil, ir.Relaxed, ir.ScopeAgent) }), nil
			},
			want: "want a pointer",
		},
	}
	file := thisFile()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.bug != "" {
				t.Skip("BUG: " + tt.bug)
			}
			b := ir.NewBuilder("k", sm90(t))
			if b.Err() != nil {
				t.Fatalf("fresh builder has error %v", b.Err())
			}
			line, bad := tt.build(b)
			err := b.Err()
			if err == nil {
				t.Fatalf("no error; want %q", tt.want)
			}
			prefix := fmt.Sprintf("%s:%d: ", file, line)
			if msg := err.Error(); !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, tt.want) {
				t.Fatalf("error %q\nwant prefix %q and text %q", msg, prefix, tt.want)
			}
			keepGoing(t, b, bad)
			if got := b.Err(); got == nil || got.Error() != err.Error() {
				t.Errorf("after more calls the error is %v; want the first one, %v", got, err)
			}
			f, ferr := b.Func()
			if f != nil || ferr == nil || ferr.Error() != err.Error() {
				t.Errorf("Func() = %v, %v; want nil and the first error %v", f, ferr, err)
			}
		})
	}
}

// keepGoing runs the rest of a kernel on a value that an earlier misuse
// made a placeholder: nothing may panic.
func keepGoing(t *testing.T, b *ir.Builder, v *ir.Value) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("builder panicked after an error: %v", r)
		}
	}()
	if v == nil {
		v = b.Full(ir.F32, 1, 4)
	}
	p := b.Param("out", ir.F32)
	n := b.Size("n")
	w := b.Mul(b.Abs(v), 2)
	w = b.Where(b.Gt(w, 1.0), w, 0.0)
	w = b.Add(b.Col(w), b.Row(w))
	w = b.Trans(w)
	s := b.Reduce(w, 1, ir.RSum)
	r := b.For(0, n, 1, []*ir.Value{s}, func(i *ir.Value, c []*ir.Value) []*ir.Value {
		return []*ir.Value{b.Max(c[0], b.Cast(i, ir.F32))}
	})
	q := b.PtrAdd(p, b.Arange(4))
	b.Store(q, b.Cast(r[0], ir.F32), b.Lt(b.Arange(4), n))
	b.AtomicMax(q, b.Load(q, nil, nil), nil, ir.Relaxed, ir.ScopeAgent)
}

// TestDSLValid builds a kernel that uses every DSL entry point correctly:
// the misuse cases above fail for their own reason, not for a broken base.
func TestDSLValid(t *testing.T) {
	b := ir.NewBuilder("ok", sm90(t))
	x := b.Param("x", ir.BF16)
	y := b.Param("y", ir.F32)
	n := b.Size("n")
	rows, cols := b.Arange(4), b.Arange(8)
	offs := b.Add(b.Mul(b.Col(rows), n), b.Row(cols))
	mask := b.And(b.Col(b.Lt(rows, n)), b.Row(b.Lt(cols, n)))
	v := b.Cast(b.Load(b.PtrAdd(x, offs), mask, nil), ir.F32)
	acc := b.For(0, n, 4, []*ir.Value{v}, func(i *ir.Value, c []*ir.Value) []*ir.Value {
		return []*ir.Value{b.Max(c[0], b.Abs(v))}
	})
	s := b.Reduce(b.Trans(acc[0]), 1, ir.RMax)
	b.Store(b.PtrAdd(y, cols), s, b.Lt(cols, n))
	b.AtomicAdd(y, b.Reduce(s, 0, ir.RSum), nil, ir.Relaxed, ir.ScopeAgent)
	f, err := b.Func()
	if err != nil {
		t.Fatal(err)
	}
	if err := ir.Verify(f, ir.PhaseTile); err != nil {
		t.Fatal(err)
	}
	if len(f.Params) != 3 || f.Params[2].ArgName() != "n" {
		t.Errorf("params %v; want x, y, n", f.Params)
	}
}

// A multiple_of hint implied by one the value already carries adds no op;
// one it does not imply does.
func TestMultipleOfImplied(t *testing.T) {
	b := ir.NewBuilder("hints", sm90(t))
	n := b.Size("n")
	h := b.MultipleOf(n, 8)
	if got := b.MultipleOf(h, 4); got != h {
		t.Errorf("multiple_of 4 of a multiple of 8: a new value %v; want the hinted one", got)
	}
	if got := b.MultipleOf(h, 16); got == h {
		t.Error("multiple_of 16 of a multiple of 8 returned the weaker hint")
	}
}
