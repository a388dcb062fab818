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
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/fp8gen/fp8gen/expr"
	"github.com/fp8gen/fp8gen/fp8"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/lower"
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

// Allow is an output's reference before its final rounding, Value, and
// the error, Slack, a computation of it may carry before that rounding.
type Allow struct{ Value, Slack []float64 }

// Expected is an op's reference for one set of inputs: the outputs (and
// scratch) and, for an op with an Allowance, the bounds. It does not
// depend on the schedule, so one serves every candidate of a shape.
type Expected struct {
	c     *Call
	in    map[string]*Tensor
	want  map[string]*Tensor
	allow map[string]Allow
}

// Expect computes the reference for in.
func (c *Call) Expect(in map[string]*Tensor) *Expected {
	if c.Op.Expected != nil {
		want, allow := c.Op.Expected(c, in)
		return &Expected{c: c, in: in, want: want, allow: allow}
	}
	x := &Expected{c: c, in: in, want: c.Op.Reference(c, in)}
	if c.Op.Allowance != nil {
		x.allow = c.Op.Allowance(c, in)
	}
	return x
}

// CheckOutputs holds a run's outputs to the op's reference: bit for bit,
// or within the op's Allowance. Scratch is held too where got has it (a
// launcher's caller does not). It reports whether the match was exact.
func (c *Call) CheckOutputs(in, got map[string]*Tensor) (exact bool, err error) {
	return c.Expect(in).Check(got)
}

// Check holds got to the reference, as CheckOutputs says.
func (x *Expected) Check(got map[string]*Tensor) (exact bool, err error) {
	c, allow := x.c, x.allow
	// The rows the reference's counts say are written, in both.
	want, got := c.Written(x.want, x.in, nil), c.Written(got, x.in, x.want)
	for _, s := range c.SpecsOf(Scratch) {
		if got[s.Name] == nil {
			delete(want, s.Name)
		}
	}
	var errs []error
	exact = true
	for _, n := range slices.Sorted(maps.Keys(want)) {
		a, ok := allow[n]
		if !ok {
			errs = append(errs, compareBits(map[string]*Tensor{n: want[n]}, got, c.Op.AnyNaN))
			continue
		}
		w, g := want[n], got[n]
		if g == nil || len(g.Data) != len(w.Data) {
			errs = append(errs, Compare(map[string]*Tensor{n: want[n]}, got))
			continue
		}
		if len(a.Value) != w.Elems() || len(a.Slack) != w.Elems() {
			return false, fmt.Errorf("BUG: %s's allowance for %s holds %d values and %d slacks for %d elements", c.Op.Name, n, len(a.Value), len(a.Slack), w.Elems())
		}
		// The result must be a rounding of a value within the slack of
		// the reference's unrounded one: within the slack plus half a
		// unit in the last place. In chunks, in parallel (hundreds of
		// millions of elements at the benchmark shapes).
		bound := func(i int) float64 { return a.Slack[i] + ulp(g, i)/2 }
		var chunks [refChunks]struct {
			bad, first int
			inexact    bool
		}
		for k := range chunks {
			chunks[k].first = -1
		}
		bigParallel(w.Elems(), func(lo, hi, k int) {
			ch := &chunks[k]
			for i := lo; i < hi; i++ {
				if w.Bits(i) == g.Bits(i) {
					continue
				}
				ch.inexact = true
				x, y := w.Float(i), g.Float(i)
				if math.IsNaN(x) && math.IsNaN(y) {
					continue
				}
				// An infinite slack says an f32 intermediate may overflow
				// (terms of both signs past the format's max): the result
				// may then be ±Inf or NaN, whatever the association.
				if math.Abs(a.Value[i]-y) <= bound(i) || math.IsInf(bound(i), 1) {
					continue
				}
				ch.bad++
				if ch.first < 0 {
					ch.first = i
				}
			}
		})
		bad, first := 0, -1
		for _, ch := range chunks {
			bad += ch.bad
			if first < 0 {
				first = ch.first
			}
			if ch.inexact {
				exact = false
			}
		}
		if bad > 0 {
			errs = append(errs, fmt.Errorf("%s: %d of %d elements differ from the reference by more than allowed; first, element %d%s: want %s (%.9g before rounding), got %s (allowed %.3g)",
				n, bad, w.Elems(), first, w.index(first), w.show(first), a.Value[first], g.show(first), bound(first)))
		}
	}
	return exact, errors.Join(errs...)
}

// ulp is the spacing of t's element type at element i's value.
func ulp(t *Tensor, i int) float64 {
	x := math.Abs(t.Float(i))
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return 0
	}
	bits := 24 // f32's significand
	if t.DType.K == ir.KBF16 {
		bits = 8
	}
	if x < 0x1p-126 {
		return math.Ldexp(1, -126-bits+1)
	}
	_, e := math.Frexp(x)
	return math.Ldexp(1, e-bits)
}

// Compare checks outputs against the reference bit for bit and describes
// the first difference of each tensor.
func Compare(want, got map[string]*Tensor) error { return compareBits(want, got, false) }

// CompareUpToNaN is Compare, except that in bf16 and f32 tensors a NaN
// matches any NaN: the sign and payload of a NaN that float arithmetic
// makes are the hardware's (NVIDIA writes 0x7fffffff, AMD and the host
// other quiet NaNs), not part of an op's contract. FP8 and integer
// tensors are still compared bit for bit.
func CompareUpToNaN(want, got map[string]*Tensor) error { return compareBits(want, got, true) }

func compareBits(want, got map[string]*Tensor, anyNaN bool) error {
	var errs []error
	for _, n := range slices.Sorted(maps.Keys(want)) {
		w, g := want[n], got[n]
		if g == nil {
			errs = append(errs, fmt.Errorf("%s: missing", n))
			continue
		}
		if len(w.Data) != len(g.Data) {
			errs = append(errs, fmt.Errorf("%s: %d bytes, want %d", n, len(g.Data), len(w.Data)))
			continue
		}
		nan := anyNaN && (w.DType.K == ir.KBF16 || w.DType.K == ir.KF32)
		size := w.DType.Bytes()
		bad, first := 0, -1
		for i := range w.Data {
			if w.Data[i] == g.Data[i] {
				continue
			}
			if e := i / size; nan && math.IsNaN(w.Float(e)) && math.IsNaN(g.Float(e)) {
				continue
			}
			bad++
			if first < 0 {
				first = i
			}
		}
		if bad > 0 {
			e := first / size
			errs = append(errs, fmt.Errorf("%s: %d of %d bytes differ from the reference; first in element %d%s: want %s, got %s",
				n, bad, len(w.Data), e, w.index(e), w.show(e), g.show(e)))
		}
	}
	return errors.Join(errs...)
}

// index is element i's multi-index, e.g. " [3 7]".
func (t *Tensor) index(i int) string {
	if len(t.Shape) < 2 {
		return ""
	}
	idx := make([]int, len(t.Shape))
	for d := len(t.Shape) - 1; d >= 0; d-- {
		idx[d] = i % t.Shape[d]
		i /= t.Shape[d]
	}
	return " " + fmt.Sprint(idx)
}

// show is element i's bits and value.
func (t *Tensor) show(i int) string {
	b := t.Bits(i)
	size := t.DType.Bytes()
	return fmt.Sprintf("%#0*x (%s)", 2+2*size, b, strconv.FormatFloat(t.Float(i), 'g', -1, 64))
}
