// Package schedule holds the knobs of a kernel — block threads, tile sizes,
// rows per program — as plain data, the limits a point must respect on a
// target, and the rule that picks one point among the feasible ones.
//
// A schedule never changes what a kernel computes, only how the work is cut.
// Ops propose candidates in their order of preference, shaped by the target
// (waves per block so that threads are a multiple of the wavefront, tiles
// that fit the problem); each candidate is lowered, its resources estimated
// from the lowered kernel, and checked here. The rule for now: the first
// feasible candidate in the op's order wins; each rejected candidate carries
// the limit that rejected it.
package schedule

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/target"
)

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

// Check holds resources against a target's limits; its error names the limit.
func Check(r Resources, t *target.Target) error {
	switch {
	case r.Threads%t.WaveSize != 0:
		return fmt.Errorf("threads %d not a multiple of the wave size %d on %s", r.Threads, t.WaveSize, t.Name)
	case r.Threads > t.MaxBlock:
		return fmt.Errorf("threads %d > %d on %s", r.Threads, t.MaxBlock, t.Name)
	case r.LDSBytes > t.LDSBytes:
		return fmt.Errorf("LDS %d B > %d B on %s", r.LDSBytes, t.LDSBytes, t.Name)
	case r.Regs > t.RegsLane:
		return fmt.Errorf("registers ~%d per lane > %d on %s", r.Regs, t.RegsLane, t.Name)
	case r.Regs*r.Threads > t.RegsCU:
		return fmt.Errorf("registers ~%d × %d lanes > %d per CU on %s", r.Regs, r.Threads, t.RegsCU, t.Name)
	}
	return nil
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
func rematerializable(f *ir.Func) map[*ir.Value]bool {
	m := map[*ir.Value]bool{}
	f.Walk(func(v *ir.Value) {
		switch v.Op {
		case ir.OpTid, ir.OpRegConst, ir.OpConst, ir.OpSize, ir.OpProgramID, ir.OpNumPrograms:
			m[v] = true
			return
		case ir.OpSplat, ir.OpGatherRegs, ir.OpAdd, ir.OpSub, ir.OpMul, ir.OpDiv, ir.OpRem,
			ir.OpLt, ir.OpLe, ir.OpGt, ir.OpGe, ir.OpEq, ir.OpNe, ir.OpAnd, ir.OpOr, ir.OpCast:
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
