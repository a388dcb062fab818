// Planning: a call's schedule space, its chosen point, and its kernels
// lowered (the only importer of package lower).

package ops

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/lower"
	"github.com/fp8gen/fp8gen/schedule"
	"github.com/fp8gen/fp8gen/target"
)

// Step is one planned launch.
type Step struct {
	Kernel    *Kernel
	Func      *ir.Func
	Resources schedule.Resources
	Grid      [3]int
	Div       map[string]int // size specialization the kernel was compiled for
}

// Plan is an op made concrete for a target, shape and options, with a
// schedule and lowered kernels.
type Plan struct {
	*Call
	Steps []*Step
	// Candidates are the points tried before the chosen one (which is
	// last), each rejected candidate with its reason.
	Candidates []schedule.Candidate
}

// Params is the plan's schedule.
func (p *Plan) Params() schedule.Params { return p.Schedule }

// Divisors is the specialization of a shape: for each size, the largest
// power of two up to 16 that divides it. Kernels are compiled per value.
func Divisors(sh Shape) map[string]int {
	d := map[string]int{}
	for n, v := range sh {
		k := 1
		for k < 16 && v%(k*2) == 0 {
			k *= 2
		}
		d[n] = k
	}
	return d
}

// Point evaluates a candidate: its knobs in order, each assignment reading
// the sizes, the target and the knobs before it.
func (c *Call) Point(cand Candidate) (schedule.Params, error) {
	env := c.env()
	p := schedule.Params{}
	for _, a := range cand {
		v, err := a.Value.Eval(env)
		if err != nil {
			return nil, fmt.Errorf("%s: candidate %s: %v", c.Op.Name, a.Knob, err)
		}
		if v < math.MinInt32 || v > math.MaxInt32 {
			return nil, fmt.Errorf("%s: candidate %s=%d out of range", c.Op.Name, a.Knob, v)
		}
		p[a.Knob] = int(v)
		env[a.Knob] = v
	}
	return p, nil
}

// Space is the distinct candidate points at this call, most preferred
// first (candidates that differ on one target may meet on another).
func (c *Call) Space() ([]schedule.Params, error) {
	var out []schedule.Params
	for _, cand := range c.Op.Candidates() {
		p, err := c.Point(cand)
		if err != nil {
			return nil, err
		}
		out = appendPoint(out, p)
	}
	return out, nil
}

// appendPoint appends p to ps unless ps holds it already.
func appendPoint(ps []schedule.Params, p schedule.Params) []schedule.Params {
	if slices.ContainsFunc(ps, func(q schedule.Params) bool { return maps.Equal(p, q) }) {
		return ps
	}
	return append(ps, p)
}

// CheckSchedule holds a point to the knobs' domains and the op's
// constraints, before anything is built.
func (c *Call) CheckSchedule(p schedule.Params) error {
	env := schedule.Env(c.Target)
	for k, v := range c.Shape.env() {
		env[k] = v
	}
	return schedule.CheckPoint(p, c.Op.Knobs, c.Op.Constraints, env, c.Target)
}

// tiles writes one kernel's tile program at the call's schedule, indexing
// in index: the DSL's output, before lowering.
func (c *Call) tiles(k *Kernel, index ir.DType) (*ir.Func, error) {
	b := ir.NewBuilder(k.Name, c.Target)
	b.SetIndex(index)
	k.Build(b, c)
	fn, err := b.Func()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k.Name, err)
	}
	return fn, nil
}

// Build writes and lowers one kernel at the call's schedule.
func (c *Call) Build(k *Kernel, cfg *lower.Config) (*ir.Func, error) {
	fn, err := c.tiles(k, c.Index)
	if err != nil {
		return nil, err
	}
	cc := *cfg
	cc.Warps = c.Knob(knob.Warps)
	if _, ok := c.Schedule["LANES"]; ok {
		cc.Lanes = c.Knob(knob.Lanes)
	}
	if cc.Div == nil {
		cc.Div = Divisors(c.Shape)
	}
	if err := lower.Run(fn, &cc); err != nil {
		return nil, err
	}
	fn.Symbol = k.Name + "_" + c.variantHash(k.Name, cc.Div)
	return fn, nil
}

// variantHash names a kernel's variant: 8 hex digits of a hash of what
// changes the code — target, format, options, schedule, the size
// specialization and the index width — so that the variants of one kernel
// can share a module or a process. The same variant hashes the same in
// every run.
func (c *Call) variantHash(kernel string, div map[string]int) string {
	format := ""
	if c.Format != nil {
		format = c.Format.Name
	}
	key := strings.Join([]string{
		"op=" + c.Op.Name, "kernel=" + kernel, "target=" + c.Target.Name, "format=" + format,
		"options=" + c.Options.String(), "schedule=" + c.Schedule.String(), "div=" + schedule.Params(div).String(), "index=" + c.Index.String(),
	}, ";")
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:4])
}

// With is the call at another schedule.
func (c *Call) With(p schedule.Params) *Call {
	d := *c
	d.Schedule = p
	return &d
}

// NewPlan makes a call and picks a schedule for it: override, merged into
// the first candidate, if given (it must be feasible); else the first
// feasible candidate. A point outside the knobs' domains or the op's
// constraints is refused before anything is lowered.
func (op *Op) NewPlan(t *target.Target, sh Shape, o Options, override schedule.Params) (*Plan, error) {
	c, err := op.NewCall(t, sh, o)
	if err != nil {
		return nil, err
	}
	space, err := c.Space()
	if err != nil {
		return nil, err
	}
	if len(override) > 0 {
		m := space[0].Clone()
		maps.Copy(m, override)
		if err := c.CheckSchedule(m); err != nil {
			return nil, err
		}
		space = []schedule.Params{m}
	}
	var cands []schedule.Candidate
	for _, s := range space {
		cand := schedule.Candidate{Params: s}
		p, err := c.With(s).Plan()
		if err == nil {
			p.Candidates = append(cands, cand)
			return p, nil
		}
		cand.Reject = err
		cands = append(cands, cand)
	}
	var why []string
	for _, cd := range cands {
		why = append(why, fmt.Sprintf("%v: %v", cd.Params, cd.Reject))
	}
	return nil, fmt.Errorf("%s on %s at %v: no feasible schedule:\n  %s", op.Name, t.Name, sh, strings.Join(why, "\n  "))
}

// Plan builds every kernel at the call's schedule, after holding it to the
// knobs' domains and the constraints, and checks the resources.
func (c *Call) Plan() (*Plan, error) {
	if err := c.CheckSchedule(c.Schedule); err != nil {
		return nil, err
	}
	if c.Index == ir.I32 {
		wide, err := c.IndexOverflows()
		if err != nil {
			return nil, err
		}
		if wide {
			d := *c
			d.Index = ir.I64
			c = &d
		}
	}
	p := &Plan{Call: c}
	env := c.env()
	ks, err := c.Kernels()
	if err != nil {
		return nil, err
	}
	for _, k := range ks {
		fn, err := c.Build(k, &lower.Config{})
		if err != nil {
			return nil, err
		}
		r := schedule.Measure(fn)
		if err := schedule.Check(r, c.Target); err != nil {
			return nil, fmt.Errorf("%s: %w", k.Name, err)
		}
		s := &Step{Kernel: k, Func: fn, Resources: r, Div: Divisors(c.Shape)}
		for i, g := range k.Grid {
			v, err := g.Eval(env)
			if err != nil {
				return nil, fmt.Errorf("%s: grid: %w", k.Name, err)
			}
			if v < 0 || v > math.MaxInt32 {
				return nil, fmt.Errorf("%s: grid %v = %d along axis %d: more programs than a launch takes", k.Name, g, v, i)
			}
			s.Grid[i] = int(v)
		}
		if err := c.bindArgs(fn); err != nil {
			return nil, err
		}
		p.Steps = append(p.Steps, s)
	}
	return p, nil
}

// Kernels are the op's kernels that this call runs: those whose Option
// and When hold, in order.
func (c *Call) Kernels() ([]*Kernel, error) {
	env := c.env()
	var out []*Kernel
	for _, k := range c.Op.Kernels {
		if !holds(k.Option, c.Options) {
			continue
		}
		if !k.When.IsZero() {
			v, err := k.When.Eval(env)
			if err != nil {
				return nil, fmt.Errorf("%s: when: %w", k.Name, err)
			}
			if v == 0 {
				continue
			}
		}
		out = append(out, k)
	}
	return out, nil
}

// IndexOverflows reports whether some kernel's 32-bit index arithmetic
// can leave the 32-bit range at this shape and schedule (the padding rows
// of a tile past the last element, a loop counter stepping past 2^31),
// which the element count alone does not show: such a call indexes in 64
// bits.
func (c *Call) IndexOverflows() (bool, error) {
	env := c.env()
	sizes := map[string]int64{}
	for k, v := range c.Shape {
		sizes[k] = int64(v)
	}
	ks, err := c.Kernels()
	if err != nil {
		return false, err
	}
	for _, k := range ks {
		var grid [3]int
		for i, g := range k.Grid {
			v, err := g.Eval(env)
			if err != nil {
				return false, fmt.Errorf("%s: grid: %w", k.Name, err)
			}
			grid[i] = int(min(v, math.MaxInt32))
		}
		fn, err := c.tiles(k, ir.I32)
		if err != nil {
			return false, err
		}
		if fn.IndexOverflow(grid, sizes) != nil {
			return true, nil
		}
	}
	return false, nil
}

// bindArgs checks that every kernel argument is one of the op's tensors
// (of its element type) or sizes.
func (c *Call) bindArgs(fn *ir.Func) error {
	specs := map[string]Spec{}
	for _, s := range c.Specs() {
		specs[s.Name] = s
	}
	for _, p := range fn.Params {
		n := p.ArgName()
		if p.Op == ir.OpSize {
			if !slices.Contains(c.Op.Sizes, n) {
				return fmt.Errorf("BUG: %s: size argument %s is not a size of %s", fn.Name, n, c.Op.Name)
			}
			continue
		}
		s, ok := specs[n]
		if !ok || s.DType != p.Type.DType.Elem() {
			return fmt.Errorf("BUG: %s: argument %s <%v> is not a tensor of %s", fn.Name, n, p.Type.DType, c.Op.Name)
		}
	}
	return nil
}

// Args lists a step's kernel arguments in parameter order: tensor data for
// pointers, the shape's sizes for sizes.
func (s *Step) Args(sh Shape, tensors map[string]*Tensor) ([]any, error) {
	var args []any
	for _, p := range s.Func.Params {
		// op switch: a kernel's parameters are of two kinds, buffers and sizes.
		switch p.Op {
		case ir.OpParam:
			t, ok := tensors[p.ArgName()]
			if !ok {
				return nil, fmt.Errorf("no tensor %s for %s", p.ArgName(), s.Func.Name)
			}
			args = append(args, t.Data)
		case ir.OpSize:
			args = append(args, sh[p.ArgName()])
		}
	}
	return args, nil
}
