package backend

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fp8gen/fp8gen/emit"
	"github.com/fp8gen/fp8gen/internal/captest"
	"github.com/fp8gen/fp8gen/interp"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/ops"
	"github.com/fp8gen/fp8gen/target"
)

// oneSource holds the interpreter and the emitter to one program: every
// value the interpreter executes is in the emitted source (a statement or
// part of an expression), and every value the source shows is executed.
// Neither may compute something of its own from a layout.
func oneSource(t *testing.T, f *ir.Func, grid [3]int, args []any) {
	t.Helper()
	ran := map[*ir.Value]bool{}
	if err := interp.LaunchTraced(f, grid, args, func(v *ir.Value) { ran[v] = true }); err != nil {
		t.Fatal(err)
	}
	printed, err := emit.Printed(f)
	if err != nil {
		t.Fatal(err)
	}
	shown := map[*ir.Value]bool{}
	for _, v := range printed {
		shown[v] = true
		if !ran[v] {
			t.Errorf("%s: the source shows %s, which the interpreter never ran", f.Name, v.LongString())
		}
	}
	n := 0
	f.Walk(func(v *ir.Value) {
		n++
		if ran[v] && !shown[v] {
			t.Errorf("%s: the interpreter ran %s, which the source does not show", f.Name, v.LongString())
		}
		if !ran[v] {
			t.Errorf("%s: program 0 did not run %s: the check cannot see it", f.Name, v.LongString())
		}
	})
	if len(printed) != n {
		t.Errorf("%s: %d values, %d printed", f.Name, n, len(printed))
	}
}

// programZeroRunsAll reports whether program 0 of f runs every value on
// args (whose contents it may change).
func programZeroRunsAll(f *ir.Func, grid [3]int, args []any) bool {
	ran := map[*ir.Value]bool{}
	if interp.LaunchTraced(f, grid, args, func(v *ir.Value) { ran[v] = true }) != nil {
		return false
	}
	all := true
	f.Walk(func(v *ir.Value) { all = all && ran[v] })
	return all
}

func TestInterpreterRunsWhatTheEmitterPrints(t *testing.T) {
	for _, tn := range []string{"sm_90", "gfx942"} {
		tg, _ := target.Lookup(tn)
		for _, name := range ops.Names() {
			op, _ := ops.Lookup(name)
			tg := tg
			if op.RunsOn(tg) != nil {
				tg, _ = target.Lookup("gfx950") // the AMD target that runs OCP formats
			}
			for _, sh := range append([]ops.Shape{op.Tests.Odd}, op.Tests.Shapes...) {
				p, err := op.NewPlan(tg, sh, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				// Inputs on which program 0 runs all of each kernel (where
				// its work depends on them, as a group's rows on the
				// offsets): the first of a few seeds that gives them. Each
				// kernel's arguments are the tensors as the kernels before
				// it leave them (a count one writes bounds a loop of the
				// next).
				args := func(seed uint64) [][]any {
					all, _ := p.WithOutputs(ops.Inputs(p.Call, seed, false))
					var out [][]any
					for _, s := range p.Steps {
						snap := map[string]*ops.Tensor{}
						for n, x := range all {
							snap[n] = &ops.Tensor{Spec: x.Spec, Data: slices.Clone(x.Data)}
						}
						a, err := s.Args(p.Shape, snap)
						if err != nil {
							t.Fatal(err)
						}
						out = append(out, a)
						live, err := s.Args(p.Shape, all)
						if err != nil {
							t.Fatal(err)
						}
						if err := interp.Launch(s.Func, s.Grid, live); err != nil {
							t.Fatal(err)
						}
					}
					return out
				}
				seed := uint64(1)
				for ; seed <= 16; seed++ {
					full := true
					for i, a := range args(seed) {
						full = full && programZeroRunsAll(p.Steps[i].Func, p.Steps[i].Grid, a)
					}
					if full {
						break
					}
				}
				if seed > 16 {
					t.Errorf("%s on %s at %v: on none of 16 seeds' inputs does program 0 run every value", name, tn, sh)
					continue
				}
				as := args(seed)
				for i, s := range p.Steps {
					t.Run(fmt.Sprintf("%s/%s/%v", tn, s.Func.Name, sh), func(t *testing.T) {
						oneSource(t, s.Func, s.Grid, as[i])
					})
				}
			}
		}
		for _, c := range captest.All() {
			f := c.Lower(t, tg)
			grid, args := c.Inputs(rand.New(rand.NewPCG(1, 2)))
			oneSource(t, f, grid, args)
		}
	}
}
