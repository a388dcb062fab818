package interp_test

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fp8gen/fp8gen/interp"
	"github.com/fp8gen/fp8gen/ir"
)

// gridBarrier: every program adds its id to sum, signals the counter, waits
// for all num_programs signals, and then reads sum: only correct if every
// program ran up to its signal before any went past its wait.
func gridBarrier(extra int) func(b *ir.Builder) {
	return func(b *ir.Builder) {
		sum, cnt, out := b.Param("sum", ir.I32), b.Param("count", ir.I32), b.Param("out", ir.I32)
		pid := b.ProgramID(0)
		b.AtomicAdd(sum, b.Add(pid, 1), nil, ir.Relaxed, ir.ScopeAgent)
		b.Signal(cnt, 1)
		b.Wait(cnt, b.Add(b.NumPrograms(0), extra))
		b.Store(b.PtrAdd(out, pid), b.Load(sum, nil, nil), nil)
	}
}

func TestWaitIsAGridBarrier(t *testing.T) {
	f := kernel(t, 2, nil, gridBarrier(0))
	if !f.Waits() {
		t.Fatal("Waits() = false for a kernel that waits")
	}
	defer func(n int) { interp.MaxResident = n }(interp.MaxResident)
	for _, n := range []int{1, 3, 8, 50} {
		for _, resident := range []int{1, 2, 8, 33} {
			interp.MaxResident = resident
			gridBarrierRun(t, f, n)
		}
	}
}

// gridBarrierRun launches gridBarrier(0) over n programs and checks that
// the clamped grid's programs each read the whole sum.
func gridBarrierRun(t *testing.T, f *ir.Func, n int) {
	t.Helper()
	what := fmt.Sprintf("grid %d (resident %d)", n, interp.MaxResident)
	sum, cnt, out := make([]byte, 4), make([]byte, 4), make([]byte, 4*50)
	if err := waitLaunch(t, f, [3]int{n, 1, 1}, sum, cnt, out); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	ran := min(n, interp.MaxResident) // the interpreter clamps a waiting kernel's grid
	want := uint32(ran * (ran + 1) / 2)
	for p := range ran {
		if got := binary.LittleEndian.Uint32(out[4*p:]); got != want {
			t.Errorf("%s: program %d read sum %d after the barrier, want %d", what, p, got, want)
		}
	}
	if got := binary.LittleEndian.Uint32(cnt); got != uint32(ran) {
		t.Errorf("%s: counter %d, want one signal a program (%d)", what, got, ran)
	}
	for p := ran; p < len(out)/4; p++ {
		if got := binary.LittleEndian.Uint32(out[4*p:]); got != 0 {
			t.Errorf("%s: program %d ran past the clamp", what, p)
		}
	}
}

func TestWaitDeadlock(t *testing.T) {
	f := kernel(t, 2, nil, gridBarrier(1))
	err := waitLaunch(t, f, [3]int{4, 1, 1}, make([]byte, 4), make([]byte, 4), make([]byte, 16))
	if err == nil || !strings.Contains(err.Error(), "deadlock") || !strings.Contains(err.Error(), "count[0] ≥ 5, at 4") {
		t.Fatalf("a wait no program can end: got %v, want a deadlock error naming the counter", err)
	}
}

// A program that fails leaves the others waiting: its error is reported,
// not theirs.
func TestWaitFailureNotDeadlock(t *testing.T) {
	f := kernel(t, 2, nil, func(b *ir.Builder) {
		cnt, out := b.Param("count", ir.I32), b.Param("out", ir.I32)
		pid := b.ProgramID(0)
		b.Store(b.PtrAdd(out, b.Mul(pid, 100)), pid, b.Eq(pid, 3)) // out of bounds in program 3 only
		b.Signal(cnt, 1)
		b.Wait(cnt, b.NumPrograms(0))
	})
	err := waitLaunch(t, f, [3]int{4, 1, 1}, make([]byte, 4), make([]byte, 16))
	if err == nil || strings.Contains(err.Error(), "deadlock") || !strings.Contains(err.Error(), "out-of-bounds") {
		t.Fatalf("got %v, want program 3's out-of-bounds store", err)
	}
}

func TestSyncChecks(t *testing.T) {
	b := ir.NewBuilder("k", nil)
	x := b.Param("x", ir.F32)
	b.Wait(x, 1)
	if _, err := b.Func(); err == nil || !strings.Contains(err.Error(), "pointer to i32") {
		t.Errorf("wait on an f32 pointer: got %v", err)
	}
}

// A counter moved by an atomic, not a signal, ends a wait too: program 1
// adds to a with an atomic and then waits on b; program 0 waits on a,
// then signals b. It ends on a GPU; the interpreter must not call it a
// deadlock.
func TestWaitOnAnAtomicCounter(t *testing.T) {
	f := kernel(t, 2, nil, func(b *ir.Builder) {
		a, c := b.Param("a", ir.I32), b.Param("b", ir.I32)
		one := b.Eq(b.ProgramID(0), 1)
		b.If(one, func() {
			b.AtomicAdd(a, 1, nil, ir.AcqRel, ir.ScopeAgent)
			b.Wait(c, 1)
		})
		b.If(b.Eq(b.ProgramID(0), 0), func() {
			b.Wait(a, 1)
			b.Signal(c, b.Const(ir.I32, 1))
		})
	})
	for range 50 {
		if err := waitLaunch(t, f, [3]int{2, 1, 1}, make([]byte, 4), make([]byte, 4)); err != nil {
			t.Fatal(err)
		}
	}
}

// Waits on one counter over two epochs: the count of the second is the
// first's plus every program's signal again.
func TestWaitTwice(t *testing.T) {
	f := kernel(t, 2, nil, func(b *ir.Builder) {
		sum, cnt, out := b.Param("sum", ir.I32), b.Param("count", ir.I32), b.Param("out", ir.I32)
		pid, np := b.ProgramID(0), b.NumPrograms(0)
		b.AtomicAdd(sum, 1, nil, ir.Relaxed, ir.ScopeAgent)
		b.Signal(cnt, b.Const(ir.I32, 1))
		b.Wait(cnt, np)
		first := b.Load(sum, nil, nil)
		b.AtomicAdd(sum, 1, nil, ir.Relaxed, ir.ScopeAgent)
		b.Signal(cnt, b.Const(ir.I32, 1))
		b.Wait(cnt, b.Mul(np, 2))
		b.Store(b.PtrAdd(out, b.Mul(pid, 2)), first, nil)
		b.Store(b.PtrAdd(out, b.Add(b.Mul(pid, 2), 1)), b.Load(sum, nil, nil), nil)
	})
	for range 20 {
		out := make([]byte, 8*5)
		if err := waitLaunch(t, f, [3]int{5, 1, 1}, make([]byte, 4), make([]byte, 4), out); err != nil {
			t.Fatal(err)
		}
		for p := range 5 {
			// The first read sees every first add and maybe some second ones.
			if a, b := binary.LittleEndian.Uint32(out[8*p:]), binary.LittleEndian.Uint32(out[8*p+4:]); a < 5 || a > 10 || b != 10 {
				t.Fatalf("program %d read %d after the first wait and %d after the second, want 5–10 and 10", p, a, b)
			}
		}
	}
}

// A kernel that waits takes a grid of one axis, whatever its size.
func TestWaitGridOneAxis(t *testing.T) {
	f := kernel(t, 2, nil, gridBarrier(0))
	err := waitLaunch(t, f, [3]int{2, 2, 1}, make([]byte, 4), make([]byte, 4), make([]byte, 16))
	if err == nil || !strings.Contains(err.Error(), "one-dimensional") {
		t.Fatalf("a 2 × 2 grid: got %v, want it refused", err)
	}
}

// Signals alone move the counter: each must have the waiters count
// themselves afresh, or the stale counts add up to a false deadlock.
func TestWaitSignalsOnly(t *testing.T) {
	f := kernel(t, 2, nil, func(b *ir.Builder) {
		cnt := b.Param("count", ir.I32)
		b.Signal(cnt, b.Const(ir.I32, 1))
		b.Wait(cnt, b.NumPrograms(0))
	})
	for range 50 {
		if err := waitLaunch(t, f, [3]int{8, 1, 1}, make([]byte, 4)); err != nil {
			t.Fatal(err)
		}
	}
}

// waitLaunch bounds the grid-wait tests' launches to 2 s: their grids are
// a few programs that end in milliseconds, and a wait the interpreter
// fails to call a deadlock hangs until the bound.
func waitLaunch(t *testing.T, f *ir.Func, grid [3]int, args ...any) error {
	t.Helper()
	return launchWithin(t, 2*time.Second, f, grid, args...)
}
