// Package ops holds the kernels fp8gen generates, each written once in the
// DSL of package ir, with a plain-Go reference that defines what it must
// compute bit for bit.
//
// An Op is data: its sizes, inputs and outputs, the kernels it launches in
// order (each with its schedule space and grid), and its reference. Plan
// turns an op, a target and a shape into lowered kernels with chosen
// schedules; back ends run a Plan.
//
// Numerics shared by every cast op (and so by the reference, the interpreter
// and every emitted target):
//
//	amax      = max over |x| with IEEE maxNum: NaN elements are ignored
//	scale     = fmt_max / max(amax, 1e-12)           (f32, correctly rounded)
//	            rounded down to a power of two with Options.Pow2
//	q         = fp8(x · scale): round to nearest even, saturate to ±fmt_max
//	inv_scale = 1 / scale
//
// So zeros give amax 0 and scale fmt_max/1e-12; a NaN element becomes the
// format's NaN and does not disturb its neighbours; a ±Inf element makes
// amax Inf, scale 0 and inv_scale Inf, so that group's finite elements
// quantize to 0 and the infinite ones to NaN (Inf·0): the overflow is
// visible, never silently clipped.
package ops

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strings"

	"github.com/fp8gen/fp8gen/fp8"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/lower"
	"github.com/fp8gen/fp8gen/schedule"
	"github.com/fp8gen/fp8gen/target"
)

// Eps bounds amax from below so that a zero group gets a finite scale.
const Eps = 1e-12

// Options are the user's choices that change what a kernel computes.
type Options struct {
	In     ir.DType // element type of x: ir.BF16 or ir.F32
	Family string   // "e4m3" or "e5m2": the format itself comes from the target
	Pow2   bool     // round scales down to powers of two
}

// DefaultOptions: bf16 in, e4m3 out, exact scales.
func DefaultOptions() Options { return Options{In: ir.BF16, Family: "e4m3"} }

// Shape is a problem size: the named sizes of an op (M, K).
type Shape map[string]int

func (s Shape) String() string {
	k := slices.Sorted(maps.Keys(s))
	for i, n := range k {
		k[i] = fmt.Sprintf("%s=%d", n, s[n])
	}
	return strings.Join(k, ",")
}

// Spec describes one tensor argument.
type Spec struct {
	Name  string
	DType ir.DType
	Shape []int
	Zero  bool // scratch that must be zeroed before the first kernel
}

// Bytes is the tensor's size in memory.
func (s Spec) Bytes() int {
	n := s.DType.Bytes()
	for _, d := range s.Shape {
		n *= d
	}
	return n
}

// Tensor is a tensor in host memory, little-endian.
type Tensor struct {
	Spec
	Data []byte
}

// Kernel is one launch of an op.
type Kernel struct {
	Name string
	// Build writes the kernel in the DSL.
	Build func(b *ir.Builder, s schedule.Params, sh Shape, o Options, f *fp8.Format)
	// Space lists candidate schedules, most preferred first.
	Space func(t *target.Target, sh Shape) []schedule.Params
	// Grid is the number of programs along each axis.
	Grid func(t *target.Target, sh Shape, s schedule.Params) [3]int
}

// Op is one operation users call.
type Op struct {
	Name    string
	Doc     string
	Sizes   []string
	Inputs  func(sh Shape, o Options) []Spec
	Outputs func(sh Shape, o Options, f *fp8.Format) []Spec // scratch (Zero) included
	Kernels []*Kernel
	// Reference computes the outputs from the inputs in plain Go.
	Reference func(in map[string]*Tensor, sh Shape, o Options, f *fp8.Format) map[string]*Tensor
	// Dequantize rebuilds x's values (in x's layout) from the outputs.
	Dequantize func(out map[string]*Tensor, sh Shape, f *fp8.Format) []float32
	// Ceiling is the fraction of copy bandwidth the op can reach at this
	// shape: 1 when x is read once, 3/5 when it must be read twice.
	Ceiling func(t *target.Target, sh Shape, s []schedule.Params) float64
}

var registry = map[string]*Op{}

func register(op *Op) *Op { registry[op.Name] = op; return op }

// Lookup finds an op by name.
func Lookup(name string) (*Op, error) {
	if op, ok := registry[name]; ok {
		return op, nil
	}
	return nil, fmt.Errorf("unknown op %q (known: %s)", name, strings.Join(Names(), ", "))
}

// Names lists the ops, sorted.
func Names() []string {
	n := slices.Sorted(maps.Keys(registry))
	return n
}

// MaxElems is the most elements a tensor may have: kernels index with i32
// and step up to one tile (at most 65536 elements) past the last one.
const MaxElems = math.MaxInt32 - 65535

// CheckShape validates a problem size: every size given, positive, and
// small enough for the 32-bit indexing the kernels use.
func (op *Op) CheckShape(sh Shape, o Options) error {
	for _, n := range op.Sizes {
		v, ok := sh[n]
		if !ok {
			return fmt.Errorf("%s: size %s missing (want %s)", op.Name, n, strings.Join(op.Sizes, ","))
		}
		if v <= 0 {
			return fmt.Errorf("%s: size %s=%d must be positive", op.Name, n, v)
		}
	}
	for n := range sh {
		if !slices.Contains(op.Sizes, n) {
			return fmt.Errorf("%s: unknown size %s (want %s)", op.Name, n, strings.Join(op.Sizes, ","))
		}
	}
	for _, s := range op.Inputs(sh, o) {
		// Offsets are i32 and run up to a tile past the last element.
		elems := big.NewInt(1)
		for _, d := range s.Shape {
			elems.Mul(elems, big.NewInt(int64(d)))
		}
		if elems.Cmp(big.NewInt(MaxElems)) > 0 {
			return fmt.Errorf("%s: %s of shape %v has %v elements: too many for the kernels' 32-bit indexing (at most %d)", op.Name, s.Name, s.Shape, elems, MaxElems)
		}
	}
	if o.In != ir.BF16 && o.In != ir.F32 {
		return fmt.Errorf("%s: input type %v: want bf16 or f32", op.Name, o.In)
	}
	return nil
}

// Step is one planned launch.
type Step struct {
	Kernel     *Kernel
	Func       *ir.Func
	Params     schedule.Params
	Resources  schedule.Resources
	Grid       [3]int
	Candidates []schedule.Candidate
	Div        map[string]int // size specialization the kernel was compiled for
}

// Plan is an op made concrete for a target and shape.
type Plan struct {
	Op      *Op
	Target  *target.Target
	Shape   Shape
	Options Options
	Format  *fp8.Format
	Steps   []*Step
}

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

// Build writes and lowers one kernel at one schedule.
func (op *Op) Build(k *Kernel, t *target.Target, sh Shape, o Options, s schedule.Params, cfg *lower.Config) (*ir.Func, error) {
	f, err := t.FP8(o.Family)
	if err != nil {
		return nil, err
	}
	if _, ok := s["WARPS"]; !ok {
		return nil, fmt.Errorf("schedule %v has no WARPS", s)
	}
	b := ir.NewBuilder(k.Name, t)
	k.Build(b, s, sh, o, f)
	fn, err := b.Func()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k.Name, err)
	}
	c := *cfg
	c.Warps = s["WARPS"]
	if c.Div == nil {
		c.Div = Divisors(sh)
	}
	if err := lower.Run(fn, &c); err != nil {
		return nil, err
	}
	return fn, nil
}

// NewPlan picks a schedule for every kernel of op: override if given (it
// must be feasible), else the first feasible candidate of the kernel's
// space.
func (op *Op) NewPlan(t *target.Target, sh Shape, o Options, override schedule.Params) (*Plan, error) {
	if err := op.CheckShape(sh, o); err != nil {
		return nil, err
	}
	f, err := t.FP8(o.Family)
	if err != nil {
		return nil, err
	}
	p := &Plan{Op: op, Target: t, Shape: sh, Options: o, Format: f}
	for _, k := range op.Kernels {
		step := &Step{Kernel: k, Div: Divisors(sh)}
		space := k.Space(t, sh)
		if len(override) > 0 {
			var merged []schedule.Params
			for _, c := range space[:1] {
				m := c.Clone()
				for n, v := range override {
					if _, ok := m[n]; !ok {
						return nil, fmt.Errorf("%s: schedule knob %s unknown (knobs: %v)", k.Name, n, c)
					}
					m[n] = v
				}
				merged = append(merged, m)
			}
			space = merged
		}
		for _, s := range space {
			cand := schedule.Candidate{Params: s}
			fn, err := op.Build(k, t, sh, o, s, &lower.Config{})
			if err != nil {
				cand.Reject = err
			} else {
				cand.Resources = schedule.Measure(fn)
				cand.Reject = schedule.Check(cand.Resources, t)
			}
			step.Candidates = append(step.Candidates, cand)
			if cand.Reject == nil && step.Func == nil {
				step.Func, step.Params, step.Resources = fn, s, cand.Resources
				if len(override) == 0 {
					break
				}
			}
		}
		if step.Func == nil {
			var why []string
			for _, c := range step.Candidates {
				why = append(why, fmt.Sprintf("%v: %v", c.Params, c.Reject))
			}
			return nil, fmt.Errorf("%s on %s at %v: no feasible schedule:\n  %s", k.Name, t.Name, sh, strings.Join(why, "\n  "))
		}
		step.Grid = k.Grid(t, sh, step.Params)
		p.Steps = append(p.Steps, step)
	}
	return p, nil
}

// Tensors allocates zeroed host tensors for specs.
func Tensors(specs []Spec) map[string]*Tensor {
	m := map[string]*Tensor{}
	for _, s := range specs {
		m[s.Name] = &Tensor{Spec: s, Data: make([]byte, s.Bytes())}
	}
	return m
}

// Args lists a step's kernel arguments in parameter order: tensor data for
// pointers, the shape's sizes for sizes.
func (s *Step) Args(sh Shape, tensors map[string]*Tensor) ([]any, error) {
	var args []any
	for _, p := range s.Func.Params {
		switch p.Op {
		case ir.OpParam:
			t, ok := tensors[p.Name]
			if !ok {
				return nil, fmt.Errorf("BUG: no tensor %s for %s", p.Name, s.Func.Name)
			}
			args = append(args, t.Data)
		case ir.OpSize:
			args = append(args, sh[p.Name])
		}
	}
	return args, nil
}

func cdiv(a, b int) int { return (a + b - 1) / b }

func pow2AtLeast(n int) int {
	p := 1
	for p < n {
		p *= 2
	}
	return p
}

// WithOutputs returns the inputs with the plan's outputs, freshly allocated
// and zeroed, added; and the outputs alone.
func (p *Plan) WithOutputs(in map[string]*Tensor) (all, out map[string]*Tensor) {
	out = Tensors(p.Op.Outputs(p.Shape, p.Options, p.Format))
	all = map[string]*Tensor{}
	for k, v := range in {
		all[k] = v
	}
	for k, v := range out {
		all[k] = v
	}
	return all, out
}

// Compare checks outputs against the reference bit for bit and describes
// the first difference of each tensor.
func Compare(want, got map[string]*Tensor) error {
	var errs []error
	names := slices.Sorted(maps.Keys(want))
	for _, n := range names {
		w, g := want[n], got[n]
		if g == nil {
			errs = append(errs, fmt.Errorf("%s: missing", n))
			continue
		}
		bad, first := 0, -1
		for i := range w.Data {
			if w.Data[i] != g.Data[i] {
				bad++
				if first < 0 {
					first = i
				}
			}
		}
		if bad > 0 {
			errs = append(errs, fmt.Errorf("%s: %d of %d bytes differ from the reference; first at byte %d (element %d): want %#02x, got %#02x",
				n, bad, len(w.Data), first, first/w.DType.Bytes(), w.Data[first], g.Data[first]))
		}
	}
	return errors.Join(errs...)
}
