// A call: an op at a target, shape and options, its tensors' specs and
// the host-side checks of its inputs.

package ops

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/fp8gen/fp8gen/expr"
	"github.com/fp8gen/fp8gen/fp8"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/schedule"
	"github.com/fp8gen/fp8gen/target"
)

// Shape is a problem size: the named sizes of an op.
type Shape map[string]int

func (s Shape) String() string {
	k := slices.Sorted(maps.Keys(s))
	for i, n := range k {
		k[i] = fmt.Sprintf("%s=%d", n, s[n])
	}
	return strings.Join(k, ",")
}

func (s Shape) env() expr.Env {
	e := expr.Env{}
	for k, v := range s {
		e[k] = int64(v)
	}
	return e
}

// Call is an op made concrete: what its kernels' bodies and its reference
// read.
type Call struct {
	Op       *Op
	Target   *target.Target
	Shape    Shape
	Options  Options
	Format   *fp8.Format // the target's format of the fp8 option, if the op has one
	Index    ir.DType    // the kernels' index arithmetic: i32, or i64 for tensors past 2^31 elements
	Schedule schedule.Params
}

// Size is a size of the shape.
func (c *Call) Size(n string) int {
	v, ok := c.Shape[n]
	if !ok {
		panic("BUG: " + c.Op.Name + " has no size " + n)
	}
	return v
}

// Knob is a schedule knob's value.
func (c *Call) Knob(k KnobName) int { return c.Schedule.Get(k.name) }

// Opt is an option's value.
func (c *Call) Opt(o OptName) string {
	v, ok := c.Options[o.name]
	if !ok {
		panic("BUG: " + c.Op.Name + " has no option " + o.name)
	}
	return v
}

// Flag is a yes/no option.
func (c *Call) Flag(o OptName) bool { return c.Opt(o) == "true" }

// DType is the element type of one of the op's tensors.
func (c *Call) DType(tensor string) ir.DType {
	for _, t := range c.Op.Tensors {
		if t.Name == tensor && t.Present(c.Options) { // a name may stand for one tensor under each option value
			d, err := c.dtype(t.DType)
			if err != nil {
				panic("BUG: " + err.Error())
			}
			return d
		}
	}
	panic("BUG: " + c.Op.Name + " has no tensor " + tensor)
}

func (c *Call) dtype(s string) (ir.DType, error) {
	if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
		s = c.Options[s[1:len(s)-1]]
	}
	if s == "fp8" { // the call's format
		if c.Format == nil {
			return ir.DType{}, fmt.Errorf("%s: an fp8 tensor needs an fp8 option", c.Op.Name)
		}
		return ir.FP8(c.Format), nil
	}
	if d, ok := ir.DTypeNamed(s); ok && d.K != ir.KFP8 { // a format by name would bypass the target's
		return d, nil
	}
	return ir.DType{}, fmt.Errorf("%s: no element type %q", c.Op.Name, s)
}

// env is what expressions of this call read: sizes, target facts, and the
// schedule where one is chosen.
func (c *Call) env() expr.Env {
	e := schedule.Env(c.Target)
	for k, v := range c.Shape.env() {
		e[k] = v
	}
	for k, v := range c.Schedule {
		e[k] = int64(v)
	}
	return e
}

// Spec is one tensor made concrete.
type Spec struct {
	Name  string
	DType ir.DType
	Shape []int
	Role  Role
	Init  float64
}

// Elems is the number of elements.
func (s Spec) Elems() int {
	n := 1
	for _, d := range s.Shape {
		n *= d
	}
	return n
}

// Bytes is the tensor's size in memory.
func (s Spec) Bytes() int { return s.Elems() * s.DType.Bytes() }

// Specs are the op's tensors at this call's shape, in argument order.
func (c *Call) Specs() []Spec {
	var out []Spec
	for _, t := range c.Op.Tensors {
		if !t.Present(c.Options) {
			continue
		}
		d, err := c.dtype(t.DType)
		if err != nil {
			panic("BUG: " + err.Error())
		}
		s := Spec{Name: t.Name, DType: d, Role: t.Role, Init: t.Init}
		for _, e := range t.Shape {
			v, err := e.Eval(c.env())
			if err != nil {
				panic("BUG: " + err.Error())
			}
			s.Shape = append(s.Shape, int(v))
		}
		out = append(out, s)
	}
	return out
}

// SpecsOf are the tensors of the given roles.
func (c *Call) SpecsOf(roles ...Role) []Spec {
	var out []Spec
	for _, s := range c.Specs() {
		if slices.Contains(roles, s.Role) {
			out = append(out, s)
		}
	}
	return out
}

// Tensor is a tensor in host memory, little-endian.
type Tensor struct {
	Spec
	Data []byte
}

// Tensors allocates host tensors for specs, scratch filled with its
// initial value and the rest zeroed.
func Tensors(specs []Spec) map[string]*Tensor {
	m := map[string]*Tensor{}
	for _, s := range specs {
		t := &Tensor{Spec: s, Data: make([]byte, s.Bytes())}
		if s.Role == Scratch && s.Init != 0 {
			for i := 0; i < s.Elems(); i++ {
				t.Set(i, float64(s.Init))
			}
		}
		m[s.Name] = t
	}
	return m
}

// MaxElems is the most elements a tensor may have: 64-bit indexing steps
// up to one tile past the last element, and device pointers hold 48 bits.
const MaxElems = 1 << 46

// MaxI32Elems is the most elements a tensor indexed in 32 bits may have:
// index arithmetic steps up to one tile past the last element.
const MaxI32Elems = math.MaxInt32 - ir.MaxTileElems

// NewCall checks a target, shape and options, and makes the call without
// a schedule.
func (op *Op) NewCall(t *target.Target, sh Shape, o Options) (*Call, error) {
	o, err := op.CheckOptions(o)
	if err != nil {
		return nil, err
	}
	if err := op.RunsOn(t); err != nil {
		return nil, err
	}
	c := &Call{Op: op, Target: t, Shape: sh, Options: o, Index: ir.I32}
	if fam, ok := o["fp8"]; ok {
		if c.Format, err = t.FP8(fam); err != nil {
			return nil, err
		}
	}
	if err := op.checkShape(c); err != nil {
		return nil, err
	}
	return c, nil
}

// checkShape: every size given, positive and known; every tensor small
// enough to index; the index width chosen.
func (op *Op) checkShape(c *Call) error {
	sh := c.Shape
	for _, n := range op.Sizes {
		v, ok := sh[n]
		if !ok {
			return fmt.Errorf("%s: size %s missing (want %s)", op.Name, n, strings.Join(op.Sizes, ","))
		}
		if v <= 0 {
			return fmt.Errorf("%s: size %s=%d must be positive", op.Name, n, v)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(sh)) {
		if !slices.Contains(op.Sizes, n) {
			return fmt.Errorf("%s: unknown size %s (want %s)", op.Name, n, strings.Join(op.Sizes, ","))
		}
	}
	for _, r := range c.Rules() {
		if v, err := r.Cond.Eval(c.env()); err != nil || v == 0 {
			return fmt.Errorf("%s: at %v, %v fails: %s", op.Name, sh, r.Cond, r.Why)
		}
	}
	env := c.env()
	for _, t := range op.Tensors {
		if !t.Present(c.Options) {
			continue
		}
		elems := int64(1)
		for _, e := range t.Shape {
			d, err := e.Eval(env)
			if err != nil {
				return fmt.Errorf("%s: %s's shape at %v: %v", op.Name, t.Name, sh, err)
			}
			if d <= 0 {
				return fmt.Errorf("%s: at %v, %s's dimension %v is %d: want at least 1", op.Name, sh, t.Name, e, d)
			}
			if elems > MaxElems/d {
				return fmt.Errorf("%s: at %v, %s would have more than %d elements (its dimension %v is %d)", op.Name, sh, t.Name, int64(MaxElems), e, d)
			}
			elems *= d
		}
		if elems > MaxI32Elems {
			c.Index = ir.I64
		}
	}
	return nil
}

// WithOutputs returns the inputs with the outputs and scratch, freshly
// allocated (scratch at its initial value), added; and those alone.
func (c *Call) WithOutputs(in map[string]*Tensor) (all, out map[string]*Tensor) {
	out = Tensors(c.SpecsOf(Output, Scratch))
	all = maps.Clone(in)
	maps.Copy(all, out)
	return all, out
}

// CheckInputs runs the op's host-side input checks, if it has any.
// Its error is an *InputError.
func (c *Call) CheckInputs(in map[string]*Tensor) error {
	if c.Op.Validate == nil {
		return nil
	}
	if err := c.Op.Validate(c, in); err != nil {
		return &InputError{Op: c.Op.Name, Err: err}
	}
	return nil
}

// InputError is inputs an op refuses (offsets that decrease, say): the
// caller's mistake, found on the host before any launch.
type InputError struct {
	Op  string
	Err error
}

func (e *InputError) Error() string { return e.Op + ": " + e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// CheckStatus reads the status words the kernels set after a run and
// returns the violations they report.
func (c *Call) CheckStatus(tensors map[string]*Tensor) error {
	var errs []error
	for _, t := range c.Op.Tensors {
		if t.Status == nil || !t.Present(c.Options) {
			continue
		}
		if d, ok := tensors[t.Name]; ok {
			if err := t.Status(c, d.Data); err != nil {
				errs = append(errs, fmt.Errorf("%s: the kernels found bad input on the device: %w", c.Op.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// IdealBytes is the traffic of an ideal kernel: each input read once and
// each output written once (scratch not counted).
func (c *Call) IdealBytes() int {
	n := 0
	for _, s := range c.SpecsOf(Input, Output) {
		n += s.Bytes()
	}
	return n
}

// BytesFor is the ideal traffic at inputs in: Op.Bytes where the op's
// traffic depends on them, IdealBytes otherwise.
func (c *Call) BytesFor(in map[string]*Tensor) int {
	if c.Op.Bytes != nil && in != nil {
		return c.Op.Bytes(c, in)
	}
	return c.IdealBytes()
}

// Written is out with each output that Arg.Rows bounds cut to the rows
// its kernels write, counted in the inputs in and the outputs counts (nil:
// out's own). Other tensors are out's.
func (c *Call) Written(out, in, counts map[string]*Tensor) map[string]*Tensor {
	if counts == nil {
		counts = out
	}
	counts = maps.Clone(counts)
	for n, t := range in {
		if _, ok := counts[n]; !ok {
			counts[n] = t
		}
	}
	cut := maps.Clone(out)
	for _, a := range c.Op.Tensors {
		t := out[a.Name]
		if a.Rows == nil || t == nil || !a.Present(c.Options) || len(t.Shape) == 0 {
			continue
		}
		rows := min(max(a.Rows(c, counts), 0), t.Shape[0])
		row := t.Elems() / max(t.Shape[0], 1) * t.DType.Bytes()
		sp := t.Spec
		sp.Shape = append([]int{rows}, t.Shape[1:]...)
		cut[a.Name] = &Tensor{Spec: sp, Data: t.Data[:rows*row]}
	}
	return cut
}

// CeilingPct is the percentage of copy bandwidth the op can reach.
func (c *Call) CeilingPct() float64 {
	v, err := c.Op.Ceiling.Eval(c.env())
	if err != nil {
		panic("BUG: " + err.Error())
	}
	return float64(v)
}
