package interp_test

import (
	"strings"
	"testing"

	"github.com/fp8gen/fp8gen/fp8"
	"github.com/fp8gen/fp8gen/internal/captest"
	"github.com/fp8gen/fp8gen/ir"
)

// stagedTranspose is transpose with x's [64,16] tile staged in LDS and read
// back in two halves of 32 rows (masked to rows < M), each cast and stored
// transposed: the staged copy, its wait and the unstaged reads at a row
// offset, as the grouped kernel uses them.
func stagedTranspose(b *ir.Builder) {
	x := b.Param("x", ir.BF16)
	qt := b.Param("qt", ir.FP8(fp8.E4M3FN))
	m, k := b.Size("M"), b.Size("K")
	pid := b.ProgramID(0)
	rows, cols := b.Arange(64), b.Add(b.Mul(pid, 16), b.Arange(16))
	st := b.Stage(b.PtrAdd(x, b.Add(b.Mul(b.Col(rows), k), b.Row(cols))), b.Col(b.Lt(rows, m)))
	for h := 0; h < 2; h++ {
		v := b.Cast(b.Unstage(st, 32*h, 32), ir.F32)
		q := b.Trans(b.Cast(v, ir.FP8(fp8.E4M3FN)))
		rows2, cols2 := b.Add(b.Arange(32), 32*h), b.Add(b.Mul(pid, 16), b.Arange(16))
		b.Store(b.PtrAdd(qt, b.Add(b.Mul(b.Col(cols2), m), b.Row(rows2))), q, b.Row(b.Lt(rows2, m)))
	}
}

func TestStageUnstage(t *testing.T) {
	x, want := transposeData(3)
	f := kernel(t, 4, map[string]int{"K": 16}, stagedTranspose)
	copies := 0
	f.Walk(func(v *ir.Value) {
		if v.Op == ir.OpLDSCopy {
			copies++
			if v.Mem().Vec != 8 {
				t.Errorf("%s: want 16-byte vectors (8 bf16)", v.LongString())
			}
		}
	})
	if copies != 1 {
		t.Fatalf("%d lds_copy ops, want 1:\n%v", copies, f)
	}
	qt := make([]byte, len(want))
	if err := launch(t, f, [3]int{3, 1, 1}, x, qt, 64, 48); err != nil {
		t.Fatal(err)
	}
	if string(qt) != string(want) {
		t.Fatalf("staged transpose wrong:\n got %v\nwant %v", qt, want)
	}
}

// A read of the staged bytes before the copies' wait is reported: on the
// GPU they may not have landed.
func TestUnstageWithoutWait(t *testing.T) {
	x, want := transposeData(1)
	f := kernel(t, 4, nil, stagedTranspose)
	removed := false
	for i, v := range f.Entry.Values {
		if v.Op == ir.OpAsyncWait {
			f.Entry.Values = append(f.Entry.Values[:i:i], f.Entry.Values[i+1:]...)
			removed = true
			break
		}
	}
	if !removed {
		t.Fatalf("no async_wait at the top level of\n%v", f)
	}
	err := launch(t, f, [3]int{1, 1, 1}, x, make([]byte, len(want)), 64, 16)
	if err == nil || !strings.Contains(err.Error(), "no async_wait has completed") {
		t.Fatalf("unstage without the wait: error %v; want the pending copy named", err)
	}
}

// Rows past M are masked: the staged region holds zeros there, and the
// stores leave qt's rows alone.
func TestStageMaskedRows(t *testing.T) {
	const m = 40
	x, full := transposeData(1) // x is [64,16]; M = 40 reads its first 40 rows
	f := kernel(t, 4, nil, stagedTranspose)
	qt := make([]byte, m*16)
	if err := launch(t, f, [3]int{1, 1, 1}, x[:2*m*16], qt, m, 16); err != nil {
		t.Fatal(err)
	}
	for j := 0; j < 16; j++ {
		for i := 0; i < m; i++ {
			if qt[j*m+i] != full[j*64+i] {
				t.Fatalf("qt[%d][%d] = %#x, want %#x", j, i, qt[j*m+i], full[j*64+i])
			}
		}
	}
}

// The builder refuses what the verifier would: a stage in a loop, an
// unstage of a load, more rows than staged.
func TestStageBuilderErrors(t *testing.T) {
	for _, c := range []struct {
		name, want string
		build      func(b *ir.Builder)
	}{
		{"in a loop", "top level", func(b *ir.Builder) {
			x := b.Param("x", ir.F32)
			b.For(0, 4, 1, nil, func(i *ir.Value, _ []*ir.Value) []*ir.Value {
				b.Stage(b.PtrAdd(x, b.Add(b.Col(b.Arange(16)), b.Row(b.Arange(16)))), nil)
				return nil
			})
		}},
		{"unstage of a load", "want a stage", func(b *ir.Builder) {
			x := b.Param("x", ir.F32)
			b.Unstage(b.Load(b.PtrAdd(x, b.Add(b.Col(b.Arange(16)), b.Row(b.Arange(16)))), nil, nil), 0, 8)
		}},
		{"too many rows", "up to it", func(b *ir.Builder) {
			x := b.Param("x", ir.F32)
			b.Unstage(b.Stage(b.PtrAdd(x, b.Add(b.Col(b.Arange(16)), b.Row(b.Arange(16)))), nil), 0, 32)
		}},
	} {
		b := ir.NewBuilder("k", nil)
		c.build(b)
		if _, err := b.Func(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v; want one saying %q", c.name, err, c.want)
		}
	}
}

// Masked-off elements of a stage read back as 0 (cp.async's zero fill),
// which the grouped kernel's amax relies on.
func TestStageZeroFill(t *testing.T) {
	f := kernel(t, 4, nil, func(b *ir.Builder) {
		x, y := b.Param("x", ir.F32), b.Param("y", ir.F32)
		m := b.Size("M")
		rows, cols := b.Arange(64), b.Arange(16)
		offs := func() *ir.Value { return b.Add(b.Mul(b.Col(b.Arange(64)), 16), b.Row(b.Arange(16))) }
		st := b.Stage(b.PtrAdd(x, b.Add(b.Mul(b.Col(rows), 16), b.Row(cols))), b.Col(b.Lt(rows, m)))
		b.Store(b.PtrAdd(y, offs()), b.Unstage(st, 0, 64), nil)
	})
	const m = 37
	x := make([]float32, m*16)
	for i := range x {
		x[i] = float32(i + 1)
	}
	y := make([]byte, 4*64*16)
	for i := range y {
		y[i] = 0xa5
	}
	if err := launch(t, f, [3]int{1, 1, 1}, captest.F32s(x), y, m); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 64*16; i++ {
		want := float32(0)
		if i < m*16 {
			want = x[i]
		}
		if got := captest.GetF32(y, i); got != want {
			t.Fatalf("y[%d][%d] = %v, want %v", i/16, i%16, got, want)
		}
	}
}

// A stage whose memory runs down the columns copies element by element
// (its region is row-major) and reads back right.
func TestStageColumnMajor(t *testing.T) {
	f := kernel(t, 4, nil, func(b *ir.Builder) {
		x, y := b.Param("x", ir.F32), b.Param("y", ir.F32)
		rows, cols := b.Arange(64), b.Arange(16)
		st := b.Stage(b.PtrAdd(x, b.Add(b.Col(rows), b.Mul(b.Row(cols), 64))), nil)
		b.Store(b.PtrAdd(y, b.Add(b.Mul(b.Col(b.Arange(64)), 16), b.Row(b.Arange(16)))), b.Unstage(st, 0, 64), nil)
	})
	f.Walk(func(v *ir.Value) {
		if v.Op == ir.OpLDSCopy && v.Mem().Vec != 1 {
			t.Errorf("%s: a vector across the region's rows", v.LongString())
		}
	})
	x := make([]float32, 64*16)
	for i := range x {
		x[i] = float32(i)
	}
	y := make([]byte, 4*64*16)
	if err := launch(t, f, [3]int{1, 1, 1}, captest.F32s(x), y); err != nil {
		t.Fatal(err)
	}
	for r := 0; r < 64; r++ {
		for c := 0; c < 16; c++ {
			if got, want := captest.GetF32(y, r*16+c), x[c*64+r]; got != want {
				t.Fatalf("y[%d][%d] = %v, want %v", r, c, got, want)
			}
		}
	}
}

// The verifier refuses an unstage past the staged rows.
func TestUnstagePastRows(t *testing.T) {
	b := ir.NewBuilder("k", nil)
	x := b.Param("x", ir.F32)
	st := b.Stage(b.PtrAdd(x, b.Add(b.Col(b.Arange(32)), b.Row(b.Arange(16)))), nil)
	b.Unstage(st, 24, 16)
	if _, err := b.Func(); err == nil || !strings.Contains(err.Error(), "rows 24 … 39 of a 32-row stage") {
		t.Fatalf("unstage of rows 24 … 39 of 32: error %v; want it named", err)
	}
}
