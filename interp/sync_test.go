package interp_test

import (
	"encoding/binary"
	"strings"
	"testing"

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
	for _, n := range []int{1, 3, interp.MaxResident, 50} {
		sum, cnt, out := make([]byte, 4), make([]byte, 4), make([]byte, 4*50)
		if err := launch(t, f, [3]int{n, 1, 1}, sum, cnt, out); err != nil {
			t.Fatalf("grid %d: %v", n, err)
		}
		ran := min(n, interp.MaxResident) // the interpreter clamps a waiting kernel's grid
		want := uint32(ran * (ran + 1) / 2)
		for p := range ran {
			if got := binary.LittleEndian.Uint32(out[4*p:]); got != want {
				t.Errorf("grid %d: program %d read sum %d after the barrier, want %d", n, p, got, want)
			}
		}
		if got := binary.LittleEndian.Uint32(cnt); got != uint32(ran) {
			t.Errorf("grid %d: counter %d, want one signal a program (%d)", n, got, ran)
		}
		for p := ran; p < 50; p++ {
			if got := binary.LittleEndian.Uint32(out[4*p:]); got != 0 {
				t.Errorf("grid %d: program %d ran past the clamp", n, p)
			}
		}
	}
}

func TestWaitDeadlock(t *testing.T) {
	f := kernel(t, 2, nil, gridBarrier(1))
	err := launch(t, f, [3]int{4, 1, 1}, make([]byte, 4), make([]byte, 4), make([]byte, 16))
	if err == nil || !strings.Contains(err.Error(), "deadlock") || !strings.Contains(err.Error(), "count ≥ 5, at 4") {
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
	err := launch(t, f, [3]int{4, 1, 1}, make([]byte, 4), make([]byte, 16))
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
