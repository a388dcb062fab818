// Package ops holds the kernels fp8gen generates. An op is a description:
// its named sizes; its options (choices that change what it computes);
// its tensors, each with a role (input, output, or scratch with an initial
// value), an element type and a shape written as expressions of the sizes;
// its kernels in launch order, each with a grid of expressions and a body
// written once in the DSL of package ir; its schedule knobs with typed
// domains, the constraints between knobs and sizes, and the candidate
// points it prefers; and a plain-Go reference that defines what it must
// compute bit for bit. Everything generic — the command line, the
// benchmark, the golden tests, input generation, .npy files and exported
// manifests — works from the description, for any op.
//
// NewPlan makes an op concrete for a target, a shape and options: it
// checks them, chooses the index width (32-bit where every tensor fits,
// 64-bit otherwise), picks a feasible schedule and lowers each kernel.
package ops

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/fp8gen/fp8gen/expr"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/schedule"
	"github.com/fp8gen/fp8gen/target"
)

// Role is what a tensor is to an op.
type Role int

const (
	Input   Role = iota // read; the caller provides it
	Output              // written; every element, by the kernels
	Scratch             // the kernels' own memory, filled with Init before the first
)

func (r Role) String() string { return [...]string{"input", "output", "scratch"}[r] }

// Arg is one tensor argument of an op.
type Arg struct {
	Name string
	// DType is f32, bf16, i32, i64, fp8 (the target's format of the fp8
	// option's family), or {opt}: the value of option opt.
	DType string
	Shape []expr.Expr // of the sizes
	Role  Role
	Init  float64 // scratch: every element's initial value
	Doc   string
	// When, if set, is the condition on the options ("layout=nk",
	// "dim=0|both,scales=swizzled": every term holds) under which the
	// tensor exists; other values leave it out.
	When string
	// Status, if set, makes a scratch tensor a status word: the kernels
	// set it where they find bad input on the device (offsets that
	// decrease, say), which the host cannot check without a sync. After a
	// run, Status turns its contents into an error naming the violation,
	// or nil.
	Status func(c *Call, data []byte) error
	// Rows, if set, says that an output's kernels write only its leading
	// rows, as many as Rows reads from the tensors (the inputs and the
	// outputs: a capacity known from the sizes, filled as far as counts on
	// the device say, with no host sync);
	// the rows past them keep what the buffer held. Checks and the
	// determinism test hold only the written rows.
	Rows func(c *Call, tensors map[string]*Tensor) int
}

// Present reports whether the tensor exists under the call's options.
func (t *Arg) Present(o Options) bool { return holds(t.When, o) }

// holds reports whether options o meet cond: "option=value" or
// "option=value|value…", or several such joined by "," (all must hold);
// "" always holds. Tensors, kernels and size rules are conditioned alike.
func holds(cond string, o Options) bool {
	for _, t := range condTerms(cond) {
		if !slices.Contains(t.values, o[t.option]) {
			return false
		}
	}
	return true
}

// condTerm is one "option=value|value…" of a condition.
type condTerm struct {
	option string
	values []string
}

// condTerms splits a condition into its terms (none for "").
func condTerms(cond string) []condTerm {
	if cond == "" {
		return nil
	}
	var ts []condTerm
	for _, t := range strings.Split(cond, ",") {
		k, v, _ := strings.Cut(t, "=")
		ts = append(ts, condTerm{k, strings.Split(v, "|")})
	}
	return ts
}

// disjoint reports whether no options meet both conditions: some option
// both name takes disjoint values in the two.
func disjoint(a, b string) bool {
	for _, s := range condTerms(a) {
		for _, t := range condTerms(b) {
			if s.option == t.option && !slices.ContainsFunc(s.values, func(v string) bool { return slices.Contains(t.values, v) }) {
				return true
			}
		}
	}
	return false
}

// optionCond says what is wrong with a condition of op's description, if
// anything.
func (op *Op) optionCond(what, cond string) error {
	for _, t := range condTerms(cond) {
		i := slices.IndexFunc(op.Options, func(o Option) bool { return o.Name == t.option })
		for _, v := range t.values {
			if i < 0 || !slices.Contains(op.Options[i].Values, v) {
				return fmt.Errorf("%s: when %q names no option value", what, cond)
			}
		}
	}
	return nil
}

// OptionRule is a size rule that holds when an option has a value.
type OptionRule struct {
	When string // a condition on the options, as Arg.When
	schedule.Constraint
}

// Applies reports whether the rule holds under options o.
func (r OptionRule) Applies(o Options) bool { return holds(r.When, o) }

// Rules are the size rules that hold under the call's options.
func (c *Call) Rules() []schedule.Constraint {
	rules := slices.Clone(c.Op.SizeRules)
	for _, r := range c.Op.OptionRules {
		if r.Applies(c.Options) {
			rules = append(rules, r.Constraint)
		}
	}
	return rules
}

// Option is a user's choice that changes what an op computes.
type Option struct {
	Name    string
	Doc     string
	Values  []string // the domain
	Default string
}

// Options are option values by name.
type Options map[string]string

func (o Options) String() string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(o)) {
		kv = append(kv, k+"="+o[k])
	}
	return strings.Join(kv, ",")
}

// Kernel is one launch of an op.
type Kernel struct {
	Name string
	// Build writes the kernel in the DSL.
	Build func(b *ir.Builder, c *Call)
	// Grid is the number of programs along each axis: expressions of the
	// sizes, knobs and target (WAVE, CUS, …).
	Grid [3]expr.Expr
	// When, if not zero, is the condition (on the knobs) under which the
	// kernel is part of a plan: a schedule may choose between kernels.
	When expr.Expr
	// Option, if set, is the option value ("angles=theta") under which the
	// kernel is part of a plan, as Arg.When is for tensors.
	Option string
}

// Assign sets a knob of a candidate to an expression of the sizes, the
// target and the knobs assigned before it.
type Assign struct {
	Knob  string
	Value expr.Expr
}

// Candidate is a schedule point an op proposes.
type Candidate []Assign

// Op is one operation users call.
type Op struct {
	Name    string
	Doc     string
	Sizes   []string
	Options []Option
	// OCP says the op's formats are OCP's (MX): a target whose FP8 is
	// another (gfx942's e4m3fnuz) is refused.
	OCP     bool
	Tensors []Arg
	Kernels []*Kernel
	// Knobs are the schedule's parameters, shared by the op's kernels;
	// Constraints hold between knobs and sizes; Candidates makes the
	// points the op prefers, most preferred first (made when a space is
	// asked for: parsed at every start they were a third of the package's
	// init, which a tune cache hit waits for).
	Knobs       []schedule.Knob
	Constraints []schedule.Constraint
	// SizeRules hold between the sizes alone (HQ a multiple of HKV, D 64
	// or 128): a shape that breaks one is refused when the call is made,
	// with the rule's reason.
	SizeRules []schedule.Constraint
	// OptionRules are size rules that hold under one option value
	// ("angles=theta"), as Arg.When says.
	OptionRules []OptionRule
	// Conflicts are the option combinations the op refuses, whatever the
	// shape.
	Conflicts  []Conflict
	Candidates func() []Candidate
	// Ceiling is the percentage of copy bandwidth the op can reach at a
	// shape: 100 where x is read once, 60 where it must be read twice.
	Ceiling expr.Expr
	// Example is the shape of the golden files and of `ir` and `emit`
	// without --shape; Bench lists the realistic shapes `bench` times.
	Example Shape
	Bench   []Shape
	// Peers says bench/peers.py has this op's PyTorch versions (eager,
	// torch.compile) to time beside it.
	Peers bool
	// Apart, if set, are the ops that compute this op's outputs run one
	// after another (rowwise_cast, then colwise_cast): bench times them
	// back to back at the op's shape beside it.
	Apart []Part
	// Forward, on a backward op, is its forward: bench times the two at
	// each shape and reports the training step, forward then backward,
	// against the PyTorch chain's forward and backward.
	Forward *Op
	// Reference computes the outputs (scratch included) from the inputs in
	// plain Go, sharing no code with the kernels.
	Reference func(c *Call, in map[string]*Tensor) map[string]*Tensor
	// Allowance, if set, says that the kernels match Reference within a
	// bound, not bit for bit (a float sum associated as the schedule
	// says): for each output it names, the element's value before its
	// final rounding and how far a float32 computation of it may stray;
	// a result is right if it is a rounding of a value that near. Other
	// outputs are bit-exact.
	Allowance func(c *Call, in map[string]*Tensor) map[string]Allow
	// Expected, if set, computes Reference and Allowance in one pass, for
	// an op that derives them together (Call.Expect takes it); register
	// then derives those two from it.
	Expected func(c *Call, in map[string]*Tensor) (map[string]*Tensor, map[string]Allow)
	// AnyNaN says that the op's bf16 and f32 outputs are held to NaN
	// where the reference has a NaN, not to its bits: they come from float
	// arithmetic, whose NaNs' sign and payload are the hardware's
	// (CompareUpToNaN). Other elements stay bit-exact.
	AnyNaN bool
	// Dequantize, if set, rebuilds the first input's values from the
	// outputs (and the other inputs), for the quantization error a run
	// reports.
	Dequantize func(c *Call, in, out map[string]*Tensor) []float32
	// FillInputs, if set, makes the inputs that are more than random
	// numbers (group offsets) after Inputs has made the rest; with
	// adversarial set, the structures that break kernels (empty groups,
	// groups of one row, bounds at tile edges ±1).
	FillInputs func(c *Call, r *rand.Rand, adversarial bool, in map[string]*Tensor)
	// Validate, if set, checks inputs on the host before a launch and
	// names the first bad element.
	Validate func(c *Call, in map[string]*Tensor) error
	// Bytes, if set, is the ideal traffic at these inputs, for an op whose
	// outputs are filled as far as the inputs say (Arg.Rows): IdealBytes
	// counts its outputs' whole capacity.
	Bytes func(c *Call, in map[string]*Tensor) int
	// Tests are the shapes the generic tests run the op at; Goldens the
	// variants the golden files hold beyond the defaults.
	Tests   Tests
	Goldens []Variant
}

// Part is one op of an Op.Apart.
type Part struct {
	Op *Op
	// Shape is the part's shape at the op's (nil: the same).
	Shape func(Shape) Shape
}

// PartShape is p's shape at the op's shape sh.
func (p Part) PartShape(sh Shape) Shape {
	if p.Shape == nil {
		return sh
	}
	return p.Shape(sh)
}

// Tests are the shapes the generic tests run an op at.
type Tests struct {
	// Shapes are small, with odd sizes and edges; every one runs on every
	// target, with every option set and random and adversarial inputs.
	Shapes []Shape
	// GPU are larger shapes the GPU tests add.
	GPU []Shape
	// Options are option sets beyond the defaults the tests also run.
	Options []Options
	// Odd is a small odd shape at which every candidate schedule runs.
	Odd Shape
	// Schedules are points beyond the candidates that also run at Odd:
	// small tiles, so that loops take several trips there.
	Schedules []schedule.Params
	// Wide is a shape with a tensor past 2^31 elements (64-bit indexing),
	// only planned.
	Wide Shape
}

// TestSchedules are the points the every-schedule tests run at Odd: the
// space at the example shape (what realistic sizes get), the space at Odd
// itself (where knobs follow the sizes, as the head counts the QK kernels
// are compiled for do), then Tests.Schedules.
func (op *Op) TestSchedules(tg *target.Target) ([]schedule.Params, error) {
	var out []schedule.Params
	for _, at := range []Shape{op.Example, op.Tests.Odd} {
		c, err := op.NewCall(tg, at, nil)
		if err != nil {
			return nil, err
		}
		pts, err := c.Space()
		if err != nil {
			return nil, err
		}
		for _, p := range pts {
			out = appendPoint(out, p)
		}
	}
	return append(out, op.Tests.Schedules...), nil
}

// OptionSets are the option sets the tests run: the defaults, then
// Tests.Options.
func (op *Op) OptionSets() []Options { return append([]Options{{}}, op.Tests.Options...) }

// Variant is one golden file's plan beyond the op's defaults: options, a
// shape other than the example, or schedule knobs other than the default's.
type Variant struct {
	Name     string
	Options  Options
	Shape    Shape           // nil: the example shape
	Schedule schedule.Params // nil: the default
}

var registry = map[string]*Op{}

func register(op *Op) *Op {
	if x := op.Expected; x != nil {
		if op.Reference != nil || op.Allowance != nil {
			panic("BUG: op " + op.Name + ": Expected with Reference or Allowance of its own")
		}
		op.Reference = func(c *Call, in map[string]*Tensor) map[string]*Tensor { out, _ := x(c, in); return out }
		op.Allowance = func(c *Call, in map[string]*Tensor) map[string]Allow { _, a := x(c, in); return a }
	}
	// op.check runs in TestDescriptionsCheck, not here: a fifth of the
	// package's init, at every start of every program that links it.
	registry[op.Name] = op
	return op
}

// check holds a description to itself: every name an expression reads is
// a size, a knob or a target fact, and every knob has a domain.
func (op *Op) check() error {
	known := map[string]bool{}
	for n := range schedule.Env(&target.Target{}) {
		known[n] = true
	}
	for _, s := range op.Sizes {
		known[s] = true
	}
	sizesOnly := maps.Clone(known)
	for _, k := range op.Knobs {
		known[k.Name] = true
	}
	uses := func(what string, e expr.Expr, names map[string]bool) error {
		for _, n := range e.Names() {
			if !names[n] {
				return fmt.Errorf("%s %v reads %s, which is no size, knob or target fact", what, e, n)
			}
		}
		return nil
	}
	var errs []error
	for i, t := range op.Tensors {
		// One name, several tensors: each under its own values of an
		// option, so that a call's options pick at most one.
		for _, u := range op.Tensors[:i] {
			if u.Name != t.Name {
				continue
			}
			if !disjoint(t.When, u.When) {
				errs = append(errs, fmt.Errorf("tensor %s is named twice: the two must be conditioned on disjoint values of an option (when %q and %q)", t.Name, u.When, t.When))
			}
		}
		if t.When != "" {
			errs = append(errs, op.optionCond("tensor "+t.Name, t.When))
		}
		if t.Status != nil && t.Role != Scratch {
			errs = append(errs, fmt.Errorf("tensor %s: a status word must be scratch", t.Name))
		}
		if t.Status != nil && t.Doc == "" {
			errs = append(errs, fmt.Errorf("tensor %s: a status word needs a Doc saying how to read it (exported manifests carry it)", t.Name))
		}
		for _, e := range t.Shape {
			errs = append(errs, uses("tensor "+t.Name+" shape", e, sizesOnly))
		}
	}
	for _, k := range op.Kernels {
		for _, e := range k.Grid {
			errs = append(errs, uses("kernel "+k.Name+" grid", e, known))
		}
		if !k.When.IsZero() {
			errs = append(errs, uses("kernel "+k.Name+" when", k.When, known))
		}
		if k.Option != "" {
			errs = append(errs, op.optionCond("kernel "+k.Name, k.Option))
		}
	}
	for _, c := range op.Constraints {
		errs = append(errs, uses("constraint", c.Cond, known))
	}
	for _, c := range op.SizeRules {
		errs = append(errs, uses("size rule", c.Cond, sizesOnly))
	}
	for _, r := range op.OptionRules {
		errs = append(errs, uses("option rule", r.Cond, sizesOnly))
		errs = append(errs, op.optionCond(fmt.Sprintf("option rule %v", r.Cond), r.When))
	}
	for _, x := range op.Conflicts {
		errs = append(errs, op.optionCond("conflict", x.When))
	}
	errs = append(errs, uses("ceiling", op.Ceiling, sizesOnly))
	if len(op.Tests.Shapes) == 0 || op.Tests.Odd == nil || op.Tests.Wide == nil {
		errs = append(errs, errors.New("the description names no test shapes (Tests.Shapes, Odd, Wide)"))
	}
	var cands []Candidate
	if op.Candidates != nil {
		cands = op.Candidates()
	}
	if len(cands) == 0 {
		errs = append(errs, errors.New("the description proposes no candidate schedules"))
	}
	for _, c := range cands {
		for _, a := range c {
			errs = append(errs, uses("candidate "+a.Knob, a.Value, known))
		}
	}
	return errors.Join(errs...)
}

// Lookup finds an op by name.
func Lookup(name string) (*Op, error) {
	if op, ok := registry[name]; ok {
		return op, nil
	}
	return nil, fmt.Errorf("unknown op %q (known: %s)", name, strings.Join(Names(), ", "))
}

// Names lists the ops, sorted.
func Names() []string { return slices.Sorted(maps.Keys(registry)) }

// CheckOptions fills in defaults and refuses unknown options and values.
func (op *Op) CheckOptions(o Options) (Options, error) {
	out := Options{}
	for _, opt := range op.Options {
		v, ok := o[opt.Name]
		if !ok {
			v = opt.Default
		}
		if !slices.Contains(opt.Values, v) {
			return nil, fmt.Errorf("%s: option %s=%s: want one of %s", op.Name, opt.Name, v, strings.Join(opt.Values, ", "))
		}
		out[opt.Name] = v
	}
	for _, n := range slices.Sorted(maps.Keys(o)) {
		if _, ok := out[n]; !ok {
			var names []string
			for _, opt := range op.Options {
				names = append(names, opt.Name)
			}
			return nil, fmt.Errorf("%s: unknown option %s (options: %s)", op.Name, n, strings.Join(names, ", "))
		}
	}
	for _, x := range op.Conflicts {
		if holds(x.When, out) {
			var set []string
			for _, t := range condTerms(x.When) {
				set = append(set, t.option+"="+out[t.option])
			}
			return nil, fmt.Errorf("%s: options %s do not go together: %s", op.Name, strings.Join(set, " and "), x.Why)
		}
	}
	return out, nil
}

// Conflict is a combination of option values an op refuses.
type Conflict struct {
	When string // a condition, as Arg.When
	Why  string
}

// RunsOn says why op cannot run on t, if it cannot.
func (op *Op) RunsOn(t *target.Target) error {
	if op.OCP && t.E4M3.FNUZ {
		return fmt.Errorf("%s: MX formats are OCP's (e4m3fn, e5m2) and %s (%s) has %s: run it on gfx950 (MI355X) or sm_90",
			op.Name, t.Name, t.Product, t.E4M3.Name)
	}
	return nil
}
