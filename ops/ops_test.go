package ops

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fp8gen/fp8gen/expr"
	"github.com/fp8gen/fp8gen/interp"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/schedule"
	"github.com/fp8gen/fp8gen/target"
)

// runInterp runs a plan's kernels in the CPU interpreter.
func runInterp(t *testing.T, p *Plan, in map[string]*Tensor) map[string]*Tensor {
	t.Helper()
	all, out := p.WithOutputs(in)
	// Outputs start as garbage, as device memory does: a byte a kernel
	// should write and does not (padding, say) shows.
	for _, spec := range p.Call.SpecsOf(Output) {
		for i := range out[spec.Name].Data {
			out[spec.Name].Data[i] = 0xA5
		}
	}
	for _, s := range p.Steps {
		args, err := s.Args(p.Shape, all)
		if err != nil {
			t.Fatal(err)
		}
		if err := interp.Launch(s.Func, s.Grid, args); err != nil {
			t.Fatalf("%s: %v", s.Func.Name, err)
		}
	}
	return out
}

func compare(t *testing.T, want, got map[string]*Tensor) {
	t.Helper()
	if err := Compare(want, got); err != nil {
		t.Error(err)
	}
}

// check holds a run to the op's reference, bit for bit or within its
// allowance.
func check(t *testing.T, c *Call, in, got map[string]*Tensor) {
	t.Helper()
	if _, err := c.CheckOutputs(in, got); err != nil {
		t.Error(err)
	}
}

// The option sets the cast tests run: the defaults (bf16 in, e4m3, exact
// scales), and f32 in, e5m2 out, power-of-two scales.
var optionSets = Rowwise.OptionSets()

func TestOpsInterpMatchReference(t *testing.T) {
	for _, tname := range target.Names() {
		tg, _ := target.Lookup(tname)
		for _, name := range Names() {
			op, _ := Lookup(name)
			if op.RunsOn(tg) != nil {
				continue // refused (TestOCPOnly)
			}
			for i, sh := range op.Tests.Shapes {
				tg := tg
				if i > 0 {
					tg = fewCUs(tg)
				}
				for _, o := range op.OptionSets() {
					for _, adv := range []bool{false, true} {
						t.Run(fmt.Sprintf("%s/%s/%v/%v/adv=%v", tname, name, sh, o, adv), func(t *testing.T) {
							p, err := op.NewPlan(tg, sh, o, nil)
							if err != nil {
								t.Fatal(err)
							}
							in := Inputs(p.Call, 7, adv)
							check(t, p.Call, in, runInterp(t, p, in))
						})
					}
				}
			}
		}
	}
}

// fewCUs is tg with 8 CUs. Past each op's first shape the interpreter
// tests run on it: a persistent or split grid sized by the CU count then
// takes several trips even at the small test shapes (on 304 CUs every
// program has one tile at most), and the interpreter does not step through
// hundreds of empty programs a case (qk_norm_rope_bwd launches PER_CU·CUS
// whatever the shape). The first shape keeps the target's own count.
func fewCUs(tg *target.Target) *target.Target {
	small := *tg
	small.CUs = 8
	return &small
}

// TestEverySchedule runs each op at each candidate of its space that is
// feasible at a small odd shape.
func TestEverySchedule(t *testing.T) {
	tg, _ := target.Lookup("sm_90")
	for _, name := range Names() {
		op, _ := Lookup(name)
		sh := op.Tests.Odd
		space, err := op.TestSchedules(tg)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range space {
			t.Run(fmt.Sprintf("%s/%v", name, s), func(t *testing.T) {
				p, err := op.NewPlan(tg, sh, nil, s)
				if err != nil {
					if slices.ContainsFunc(op.Tests.Schedules, func(q schedule.Params) bool { return maps.Equal(s, q) }) {
						t.Fatalf("a schedule of Tests.Schedules is infeasible: %v", err)
					}
					t.Skipf("infeasible here: %v", err) // a candidate that does not hold at the odd shape
				}
				in := Inputs(p.Call, 3, true)
				check(t, p.Call, in, runInterp(t, p, in))
			})
		}
	}
}

// Past 2^31 elements the kernels index in 64 bits; below, in 32. Forced
// to 64 bits at a small shape, they compute the same bits.
func TestIndexWidth(t *testing.T) {
	tg, _ := target.Lookup("sm_90")
	for _, name := range Names() {
		op, _ := Lookup(name)
		small, err := op.NewPlan(tg, op.Tests.Odd, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if small.Index != ir.I32 {
			t.Errorf("%s: index %v at %v; want i32", name, small.Index, op.Tests.Odd)
		}
		big, err := op.NewCall(tg, op.Tests.Wide, nil)
		if err != nil {
			t.Fatal(err)
		}
		if big.Index != ir.I64 {
			t.Errorf("%s: index %v at %v, past 2^31 elements; want i64", name, big.Index, op.Tests.Wide)
		}
		c := small.Call.With(small.Schedule)
		c.Index = ir.I64
		p, err := c.Plan()
		if err != nil {
			t.Fatal(err)
		}
		wide := false
		for _, s := range p.Steps {
			for _, prm := range s.Func.Params {
				wide = wide || prm.Op == ir.OpSize && prm.Type.DType == ir.I64
			}
		}
		if !wide {
			t.Errorf("%s: forced to i64, the kernels take no i64 sizes", name)
		}
		in := Inputs(p.Call, 9, true)
		check(t, p.Call, in, runInterp(t, p, in))
	}
}

// Schedules outside a knob's domain or an op's constraints are refused
// before anything is lowered, each naming the knob and its bound.
func TestBadSchedulesRefusedFast(t *testing.T) {
	tg, _ := target.Lookup("sm_90")
	sh := Shape{"M": 4096, "K": 4096}
	for _, tt := range []struct {
		op    *Op
		sched schedule.Params
		want  string
	}{
		{Rowwise, schedule.Params{"WARPS": 1 << 62}, "schedule knob WARPS=4611686018427387904: want a power of two in [1, 32] on sm_90"},
		{Rowwise, schedule.Params{"BLOCK_K": 1 << 31}, "schedule knob BLOCK_K=2147483648: want a power of two in [1, 65536] on sm_90"},
		{Rowwise, schedule.Params{"ROWS": 1 << 31}, "schedule knob ROWS=2147483648: want a power of two in [1, 64] on sm_90"},
		{Rowwise, schedule.Params{"BLOCK_K": 1 << 20}, "BLOCK_K=1048576: want a power of two in [1, 65536]"},
		{Rowwise, schedule.Params{"BLOCK_K": 1024}, "a one-pass schedule (LOOP=0) holds the whole row: BLOCK_K must be at least K"},
		{Rowwise, schedule.Params{"LOOP": 2}, "schedule knob LOOP=2: want 0 or 1"},
		{Rowwise, schedule.Params{"WARPS": 3}, "WARPS=3: want a power of two"},
		{Rowwise, schedule.Params{"ROWS": 64, "BLOCK_K": 4096}, "a tile holds at most 65536 elements"},
		{Rowwise, schedule.Params{"PER_CU": 0, "PREFETCH": 1}, "PREFETCH loads ahead in the persistent loop: it needs PER_CU > 0"},
		{Rowwise, schedule.Params{"PER_CU": 65}, "schedule knob PER_CU=65: want an integer in [0, 64]"},
		{Rowwise, schedule.Params{"NOPE": 1}, "schedule knob NOPE unknown (knobs: WARPS, ROWS, BLOCK_K, LOOP, PER_CU, PREFETCH)"},
		{Colwise, schedule.Params{"BLOCK_M": 4096, "BLOCK_K": 4096}, "a tile holds at most 65536 elements"},
		{Tensorwise, schedule.Params{"BLOCK": 1 << 40}, "BLOCK=1099511627776"},
	} {
		start := time.Now()
		_, err := tt.op.NewPlan(tg, sh, nil, tt.sched)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %v: %v; want %q", tt.op.Name, tt.sched, err, tt.want)
		}
		if d := time.Since(start); d > 50*time.Millisecond {
			t.Errorf("%s %v: refused in %v; want well under a second", tt.op.Name, tt.sched, d)
		}
	}
}

// Every description reads only its own sizes, knobs and the target.
func TestDescriptionsCheck(t *testing.T) {
	for _, name := range Names() {
		op, _ := Lookup(name)
		if err := op.check(); err != nil {
			t.Error(err)
		}
	}
	bad := *Rowwise
	bad.Kernels = []*Kernel{{Name: "k", Grid: [3]expr.Expr{e("cdiv(M, ROWZ)"), e("1"), e("1")}}}
	if err := bad.check(); err == nil || !strings.Contains(err.Error(), "reads ROWZ, which is no size, knob or target fact") {
		t.Errorf("a grid reading ROWZ: %v", err)
	}
	bad = *QKNormRopeBwd
	bad.Kernels = []*Kernel{{Name: "k", Grid: [3]expr.Expr{e("1"), e("1"), e("1")}, Option: "angles=sines"}}
	if err := bad.check(); err == nil || !strings.Contains(err.Error(), `kernel k: when "angles=sines" names no option value`) {
		t.Errorf("a kernel under angles=sines: %v", err)
	}
	bad = *SwigluProbs
	bad.Tensors = append(slices.Clone(bad.Tensors), Arg{Name: "y", DType: "f32", Shape: bad.Tensors[0].Shape, Role: Output, When: "quant=rowwise"})
	if err := bad.check(); err == nil || !strings.Contains(err.Error(), "tensor y is named twice") {
		t.Errorf("two tensors y under quant=rowwise: %v", err)
	}
	bad = *Rowwise
	bad.Candidates = func() []Candidate { return nil }
	if err := bad.check(); err == nil || !strings.Contains(err.Error(), "proposes no candidate schedules") {
		t.Errorf("a description without candidates: %v", err)
	}
}

// An E8M0 tensor holds scale bytes: its values are the powers of two
// 2^−127 … 2^127 and NaN, set and read exactly; anything else is no value
// of it.
func TestE8M0Tensor(t *testing.T) {
	x := &Tensor{Spec: Spec{Name: "s", DType: ir.E8M0, Shape: []int{5}}, Data: make([]byte, 5)}
	for i, v := range []float64{1, math.Ldexp(1, -127), math.Ldexp(1, 127), 0.5, math.NaN()} {
		x.Set(i, v)
		if got := x.Float(i); got != v && !(math.IsNaN(v) && math.IsNaN(got)) {
			t.Errorf("element %d: set %v, read %v", i, v, got)
		}
	}
	if want := []byte{127, 0, 254, 126, 0xFF}; !bytes.Equal(x.Data, want) {
		t.Errorf("bytes %v; want %v", x.Data, want)
	}
	for _, v := range []float64{3, 0, -1, math.Ldexp(1, 128), math.Inf(1)} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Set(%v) on e8m0: no panic", v)
				}
			}()
			x.Set(0, v)
		}()
	}
}

// Conditions join terms with ",": all must hold; two conditions are
// disjoint when one option they both name takes no common value.
func TestConditions(t *testing.T) {
	o := Options{"dim": "both", "scales": "swizzled"}
	for cond, want := range map[string]bool{"": true, "dim=0|both": true, "dim=0|both,scales=swizzled": true, "dim=0|both,scales=rowmajor": false, "dim=1,scales=swizzled": false} {
		if got := holds(cond, o); got != want {
			t.Errorf("holds(%q, %v) = %v, want %v", cond, o, got, want)
		}
	}
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"dim=0|both,scales=rowmajor", "dim=0|both,scales=swizzled", true},
		{"dim=0|both,scales=rowmajor", "dim=1|both,scales=rowmajor", false},
		{"dim=0", "scales=swizzled", false},
		{"dim=0", "dim=1|both", true},
		{"", "dim=0", false},
	} {
		if got := disjoint(c.a, c.b); got != c.want {
			t.Errorf("disjoint(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// An op refuses its conflicting options whatever the shape, naming the
// values given.
func TestConflicts(t *testing.T) {
	tg, _ := target.Lookup("sm_90")
	_, err := BlockCast.NewCall(tg, Shape{"M": 256, "K": 256}, Options{"block": "128x128", "scales": "colmajor"})
	if err == nil || !strings.Contains(err.Error(), "block=128x128 and scales=colmajor do not go together") {
		t.Errorf("block=128x128 with scales=colmajor: %v", err)
	}
	if _, err := BlockCast.NewCall(tg, Shape{"M": 256, "K": 256}, Options{"scales": "colmajor"}); err != nil {
		t.Errorf("block=1x128 with scales=colmajor: %v", err)
	}
}
