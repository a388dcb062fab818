// Package schedule holds the knobs of a kernel — waves per block, tile
// sizes, rows per program — as typed data: each knob declares its domain
// (a power of two in a range, a range, a flag), and an op states the
// constraints between its knobs and its sizes. CheckPoint holds a point to
// both before anything is lowered, so a bad point is refused in
// microseconds with the knob and the bound it breaks; Check then holds the
// lowered kernel's resources to the target's limits.
//
// A schedule never changes what a kernel computes, only how the work is
// cut — except the association of float sums (see package ops). Ops
// propose candidates in their order of preference; the first feasible one
// wins, and each rejected candidate carries the limit that rejected it.
package schedule

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/fp8gen/fp8gen/expr"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/target"
)

// Kind is the shape of a knob's domain.
type Kind int

const (
	Pow2Range Kind = iota // a power of two in [Lo, Hi]
	IntRange              // an integer in [Lo, Hi]
	Flag                  // 0 or 1
)

// Domain is the set of values a knob may take; its bounds are expressions
// of the target (WAVE, MAXBLOCK, …).
type Domain struct {
	Kind   Kind
	Lo, Hi expr.Expr
}

// Pow2 is the domain of powers of two in [lo, hi].
func Pow2(lo, hi string) Domain {
	return Domain{Kind: Pow2Range, Lo: expr.MustParse(lo), Hi: expr.MustParse(hi)}
}

// Range is the domain of integers in [lo, hi].
func Range(lo, hi string) Domain {
	return Domain{Kind: IntRange, Lo: expr.MustParse(lo), Hi: expr.MustParse(hi)}
}

// Bool is the domain {0, 1}.
func Bool() Domain { return Domain{Kind: Flag, Lo: expr.Int(0), Hi: expr.Int(1)} }

// String describes the domain with its bounds evaluated in env.
func (d Domain) String(env expr.Env) string {
	lo, err1 := d.Lo.Eval(env)
	hi, err2 := d.Hi.Eval(env)
	if err1 != nil || err2 != nil {
		return fmt.Sprintf("[%v, %v]", d.Lo, d.Hi)
	}
	switch d.Kind {
	case Pow2Range:
		return fmt.Sprintf("a power of two in [%d, %d]", lo, hi)
	case Flag:
		return "0 or 1"
	}
	return fmt.Sprintf("an integer in [%d, %d]", lo, hi)
}

// Contains reports whether x lies in the domain.
func (d Domain) Contains(x int64, env expr.Env) (bool, error) {
	lo, err := d.Lo.Eval(env)
	if err != nil {
		return false, err
	}
	hi, err := d.Hi.Eval(env)
	if err != nil {
		return false, err
	}
	if x < lo || x > hi {
		return false, nil
	}
	return d.Kind != Pow2Range || x > 0 && x&(x-1) == 0, nil
}

// Knob is one schedule parameter of an op.
type Knob struct {
	Name   string
	Doc    string
	Domain Domain
}

// Constraint is a condition a point must meet, with what it means when it
// does not.
type Constraint struct {
	Cond expr.Expr
	Why  string
}

// Env is what knob bounds and constraints may read of a target.
func Env(t *target.Target) expr.Env {
	return expr.Env{"WAVE": int64(t.WaveSize), "MAXBLOCK": int64(t.MaxBlock), "CUS": int64(t.CUs),
		"LDS": int64(t.LDSBytes), "L2": int64(t.L2Bytes), "MAXWAVES": int64(t.MaxWaves)}
}

// CheckPoint holds a point to the knobs' domains and the constraints, in
// env (sizes and target facts): every knob given, none unknown, each in
// its domain, every constraint met. It lowers nothing, so it is fast.
func CheckPoint(p Params, knobs []Knob, cons []Constraint, env expr.Env, t *target.Target) error {
	var errs []error
	full := maps.Clone(env)
	for _, k := range knobs {
		x, ok := p[k.Name]
		if !ok {
			errs = append(errs, fmt.Errorf("schedule knob %s missing", k.Name))
			continue
		}
		full[k.Name] = int64(x)
		in, err := k.Domain.Contains(int64(x), env)
		if err != nil {
			return fmt.Errorf("BUG: domain of %s: %v", k.Name, err)
		}
		if !in {
			errs = append(errs, fmt.Errorf("schedule knob %s=%d: want %s on %s", k.Name, x, k.Domain.String(env), t.Name))
		}
	}
	for _, n := range slices.Sorted(maps.Keys(p)) {
		if !slices.ContainsFunc(knobs, func(k Knob) bool { return k.Name == n }) {
			var names []string
			for _, k := range knobs {
				names = append(names, k.Name)
			}
			errs = append(errs, fmt.Errorf("schedule knob %s unknown (knobs: %s)", n, strings.Join(names, ", ")))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, c := range cons {
		ok, err := c.Cond.Eval(full)
		if err != nil {
			return fmt.Errorf("constraint %v: %v", c.Cond, err)
		}
		if ok == 0 {
			return fmt.Errorf("schedule %v breaks %q: %s", p, c.Cond, c.Why)
		}
	}
	return nil
}

// Params is a schedule: named integers such as WARPS=8, BLOCK_K=4096.
type Params map[string]int

// Get returns a knob the kernel requires; a missing one is a bug in the op.
func (p Params) Get(name string) int {
	v, ok := p[name]
	if !ok {
		panic(fmt.Sprintf("BUG: schedule %v has no %s", p, name))
	}
	return v
}

// String prints the knobs sorted by name: WARPS=8,BLOCK_K=4096.
func (p Params) String() string {
	k := slices.Sorted(maps.Keys(p))
	for i, n := range k {
		k[i] = n + "=" + strconv.Itoa(p[n])
	}
	return strings.Join(k, ",")
}

// Clone copies p.
func (p Params) Clone() Params {
	q := Params{}
	for k, v := range p {
		q[k] = v
	}
	return q
}

// Parse reads "K=V,K=V".
func Parse(s string) (Params, error) {
	p := Params{}
	if strings.TrimSpace(s) == "" {
		return p, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("schedule %q: %q is not NAME=VALUE", s, kv)
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("schedule %q: %s=%s is not a non-negative integer", s, k, v)
		}
		p[strings.TrimSpace(k)] = n
	}
	return p, nil
}

// Resources is what a lowered kernel needs of the hardware.
type Resources struct {
	Threads  int // lanes per block
	LDSBytes int
	Regs     int // estimated 32-bit registers per lane at the point of most pressure
}

// Measure estimates the resources of a lowered kernel. Registers are the
// largest sum, over program points, of the live values' registers (a value
// is live from its definition to its last use; values a loop uses are live
// through the whole loop), plus a fixed allowance for addresses and indices.
func Measure(f *ir.Func) Resources {
	return Resources{Threads: f.Threads, LDSBytes: f.LDSBytes, Regs: regPressure(f) + regOverhead}
}

const regOverhead = 16

// regs is what a lanes value costs in registers. Uniform values live in
// scalar registers (AMD) or the constant bank (NVIDIA); pointer arrays cost
// nothing of their own (the compiler keeps a base and the offsets, counted
// apart), nor do masks (predicates) or per-register constants (immediates);
// sub-word elements pack into words.
func regs(v *ir.Value) int {
	n := v.Type.Regs
	if n == 0 || v.Op == ir.OpRegConst {
		return 0
	}
	switch v.Type.DType.K {
	case ir.KInvalid, ir.KBool:
		return 0
	case ir.KPtr:
		if n > 1 {
			return 0
		}
	case ir.KBF16:
		return (n + 1) / 2
	case ir.KFP8:
		return (n + 3) / 4
	}
	return n * v.Type.DType.Words()
}

func regPressure(f *ir.Func) int {
	// Number the values in program order; a use inside a loop of a value
	// defined outside it extends the value to the loop's end.
	pos := map[*ir.Value]int{}
	end := map[*ir.Value]int{}
	n := 0
	var number func(b *ir.Block)
	number = func(b *ir.Block) {
		for _, v := range b.Vars {
			pos[v] = n
			n++
		}
		for _, v := range b.Values {
			pos[v] = n
			n++
			if v.Body != nil {
				number(v.Body)
				end[v] = n
			}
		}
	}
	number(f.Entry)
	last := map[*ir.Value]int{}
	f.Walk(func(v *ir.Value) {
		for _, a := range v.Args {
			use := pos[v]
			for p := v.Block.Parent; p != nil; p = p.Block.Parent {
				if !a.Inside(p) {
					use = max(use, end[p])
				}
			}
			last[a] = max(last[a], use)
		}
	})
	for v, p := range pos {
		if v.Op == ir.OpLoopVar {
			last[v] = max(last[v], end[v.Block.Parent])
		}
		last[v] = max(last[v], p)
	}
	remat := rematerializable(f)
	live := make([]int, n+1)
	for v, p := range pos {
		if remat[v] {
			continue // index arithmetic: the compiler folds it into addresses or recomputes it
		}
		r := regs(v)
		for i := p; i <= last[v] && i < len(live); i++ {
			live[i] += r
		}
	}
	peak := 0
	for _, x := range live {
		peak = max(peak, x)
	}
	return peak
}

// Check holds resources against a target's limits; its error names the
// limit. Registers are held as the target's compiler is expected to use
// them: the estimate times the target's RegFit, the median of the
// compiler's count over the estimate (the estimate counts every live tile
// register, and ptxas keeps many fewer on sm_90); a kernel the compiler
// cannot fit in them spills, which its resource report shows.
func Check(r Resources, t *target.Target) error {
	regs := CompilerRegs(r, t)
	switch {
	case r.Threads%t.WaveSize != 0:
		return fmt.Errorf("threads %d not a multiple of the wave size %d on %s", r.Threads, t.WaveSize, t.Name)
	case r.Threads > t.MaxBlock:
		return fmt.Errorf("threads %d > %d on %s", r.Threads, t.MaxBlock, t.Name)
	case r.LDSBytes > t.LDSBytes:
		return fmt.Errorf("LDS %d B > %d B on %s", r.LDSBytes, t.LDSBytes, t.Name)
	case regs > t.RegsLane:
		return fmt.Errorf("registers ~%d per lane%s > %d on %s", regs, fitted(r, t), t.RegsLane, t.Name)
	case regs*r.Threads > t.RegsCU:
		return fmt.Errorf("registers ~%d%s × %d lanes > %d per CU on %s", regs, fitted(r, t), r.Threads, t.RegsCU, t.Name)
	}
	return nil
}

// CompilerRegs is the registers a lane is expected to take once the
// target's compiler has allocated them: the estimate times its RegFit.
func CompilerRegs(r Resources, t *target.Target) int {
	if t.RegFit <= 0 || t.RegFit == 1 {
		return r.Regs
	}
	return int(math.Ceil(float64(r.Regs) * t.RegFit))
}

// fitted says how the expected registers came from the estimate, where
// they differ.
func fitted(r Resources, t *target.Target) string {
	if CompilerRegs(r, t) == r.Regs {
		return ""
	}
	return fmt.Sprintf(" (estimate %d × fit %.2f)", r.Regs, t.RegFit)
}

// Candidate is one point of an op's space, with the verdict on it.
type Candidate struct {
	Params    Params
	Resources Resources
	Reject    error // nil if feasible
}

// rematerializable marks integer and bool tiles computed only from indices
// (tid, per-register constants, program ids, sizes, constants) by cheap
// arithmetic: compilers
// fold them into address offsets or recompute them rather than keep them.
// What rematerializable makes of an op: an index source, cheap arithmetic
// (rematerializable where its operands are), or neither.
const (
	notIndex = iota
	indexSource
	indexArith
)

var remat = ir.Rules[uint8]{
	ir.OpTid: indexSource, ir.OpRegConst: indexSource, ir.OpConst: indexSource, ir.OpSize: indexSource,
	ir.OpProgramID: indexSource, ir.OpNumPrograms: indexSource,

	ir.OpSplat: indexArith, ir.OpGatherRegs: indexArith, ir.OpCast: indexArith,
	ir.OpAdd: indexArith, ir.OpSub: indexArith, ir.OpMul: indexArith, ir.OpDiv: indexArith, ir.OpRem: indexArith,
	ir.OpLt: indexArith, ir.OpLe: indexArith, ir.OpGt: indexArith, ir.OpGe: indexArith, ir.OpEq: indexArith, ir.OpNe: indexArith,
	ir.OpAnd: indexArith, ir.OpOr: indexArith,
}

func rematerializable(f *ir.Func) map[*ir.Value]bool {
	m := map[*ir.Value]bool{}
	f.Walk(func(v *ir.Value) {
		switch remat.Of(v.Op) {
		case indexSource:
			m[v] = true
			return
		case indexArith:
		default:
			return
		}
		if k := v.Type.DType.K; k != ir.KI32 && k != ir.KI64 && k != ir.KBool {
			return
		}
		for _, a := range v.Args {
			if !m[a] {
				return
			}
		}
		m[v] = true
	})
	return m
}
