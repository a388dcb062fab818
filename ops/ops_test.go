package ops

import (
	"fmt"
	"testing"

	"github.com/fp8gen/fp8gen/interp"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/lower"
	"github.com/fp8gen/fp8gen/schedule"
	"github.com/fp8gen/fp8gen/target"
)

// runInterp runs a plan's kernels in the CPU interpreter.
func runInterp(t *testing.T, p *Plan, in map[string]*Tensor) map[string]*Tensor {
	t.Helper()
	all, out := p.WithOutputs(in)
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

func TestOpsInterpMatchReference(t *testing.T) {
	shapes := []Shape{{"M": 1, "K": 1}, {"M": 7, "K": 33}, {"M": 64, "K": 256}, {"M": 33, "K": 1000}, {"M": 130, "K": 17}}
	for _, tname := range target.Names() {
		tg, _ := target.Lookup(tname)
		for _, name := range Names() {
			op, _ := Lookup(name)
			for _, sh := range shapes {
				for _, o := range []Options{DefaultOptions(), {In: ir.F32, Family: "e5m2", Pow2: true}} {
					for _, adv := range []bool{false, true} {
						t.Run(fmt.Sprintf("%s/%s/%v/%v/%s/adv=%v", tname, name, sh, o.In, o.Family, adv), func(t *testing.T) {
							p, err := op.NewPlan(tg, sh, o, nil)
							if err != nil {
								t.Fatal(err)
							}
							in := Inputs(op, sh, o, p.Format, 7, adv)
							want := op.Reference(in, sh, o, p.Format)
							got := runInterp(t, p, in)
							compare(t, want, got)
						})
					}
				}
			}
		}
	}
}

// TestEverySchedule runs each op at each feasible schedule of its space.
func TestEverySchedule(t *testing.T) {
	tg, _ := target.Lookup("sm_90")
	sh := Shape{"M": 40, "K": 72}
	for _, name := range Names() {
		op, _ := Lookup(name)
		for ki, k := range op.Kernels {
			for _, s := range k.Space(tg, Shape{"M": 4096, "K": 4096}) {
				if _, err := op.Build(k, tg, sh, DefaultOptions(), s, &lower.Config{Verify: true}); err != nil {
					t.Errorf("%s %v: %v", k.Name, s, err)
				}
				if ki > 0 {
					continue
				}
				t.Run(fmt.Sprintf("%s/%v", name, s), func(t *testing.T) {
					p, err := op.NewPlan(tg, sh, DefaultOptions(), s)
					if err != nil {
						t.Skipf("infeasible here: %v", err)
					}
					in := Inputs(op, sh, p.Options, p.Format, 3, true)
					compare(t, op.Reference(in, sh, p.Options, p.Format), runInterp(t, p, in))
				})
			}
		}
	}
	_ = schedule.Params{}
}
