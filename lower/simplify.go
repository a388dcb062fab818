package lower

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/fp8gen/fp8gen/ir"
)

// simplify cleans the lanes program that expand wrote, without changing a
// bit of what it computes:
//
//   - constants fold, per register too: regconst ⊕ const is a regconst;
//   - integer identities go (x+0, x·1, x/1, x%1, b && true, where on a
//     constant);
//   - ranges decide what they can: thread coordinates are bounded by the
//     block, so x % m with 0 ≤ x < m is x and an owner test that always
//     holds is true;
//   - a splat feeding an elementwise op is read as the scalar it splats,
//     and an elementwise op on uniform or one-register operands keeps only
//     what they have (register counts narrow);
//   - common subexpressions are shared (value numbering over the
//     dominating blocks), and what nothing uses goes.
//
// Ops that need an operand's every register (folds, shuffles, LDS stores,
// loop-carried values) get a splat back where an operand narrowed.
func simplify(f *ir.Func, _ *Config) error {
	s := &simplifier{f: f, repl: map[*ir.Value]*ir.Value{}, rng: map[*ir.Value]interval{}, regs: map[*ir.Value]int{}}
	f.Walk(func(v *ir.Value) { s.regs[v] = v.Type.Regs })
	s.block(f.Entry, map[string]*ir.Value{})
	removeDead(f)
	return nil
}

type simplifier struct {
	f    *ir.Func
	repl map[*ir.Value]*ir.Value
	rng  map[*ir.Value]interval
	regs map[*ir.Value]int // register counts before simplify
	cur  *ir.Block
	idx  int // where cur's next value goes
}

// interval bounds an integer value over every lane and register.
type interval struct {
	lo, hi int64
	known  bool
}

func (s *simplifier) get(v *ir.Value) *ir.Value {
	for {
		r, ok := s.repl[v]
		if !ok {
			return v
		}
		v = r
	}
}

// insert places a new value before the one being simplified.
func (s *simplifier) insert(v *ir.Value) *ir.Value {
	s.cur.Insert(s.idx, v)
	s.idx++
	return v
}

func (s *simplifier) constant(d ir.DType, x int64) *ir.Value {
	return s.insert(s.f.NewValue(ir.OpConst, ir.Lanes(d, 0), ir.ConstAttr{Int: x}))
}

// exact reports whether operand j of v must keep every register it had.
func exact(v *ir.Value, j int) bool {
	r := exactRules.Of(v.Op)
	return r != nil && r(v, j)
}

// exactRules are the ops that need some operand's every register.
var exactRules = ir.Rules[func(v *ir.Value, j int) bool]{
	ir.OpGatherRegs: everyOperand,
	ir.OpReduceRegs: everyOperand,
	ir.OpButterfly:  everyOperand,
	ir.OpShflXor:    everyOperand,
	ir.OpYield:      everyOperand,
	ir.OpFor:        func(v *ir.Value, j int) bool { return v.RoleOf(j) == ir.RoleInit },
	ir.OpLDSStore:   func(v *ir.Value, j int) bool { return v.RoleOf(j) == ir.RoleData },
	ir.OpLDSCopy:    func(v *ir.Value, j int) bool { return v.RoleOf(j) == ir.RolePtr }, // its pointers give the copy its registers
}

func everyOperand(*ir.Value, int) bool { return true }

// pure reports whether v may be shared with an equal value before it.
func pure(v *ir.Value) bool {
	return !v.Op.IsPlaced() && v.Op.Effect() == 0 && v.Op.HasResult()
}

func (s *simplifier) block(b *ir.Block, seen map[string]*ir.Value) {
	saved, savedIdx := s.cur, s.idx
	defer func() { s.cur, s.idx = saved, savedIdx }()
	s.cur = b
	for s.idx = 0; s.idx < len(b.Values); s.idx++ {
		v := b.Values[s.idx]
		want := make([]int, len(v.Args))
		for j, a := range v.Args {
			want[j] = a.Type.Regs
			if n, ok := s.regs[a]; ok {
				want[j] = n
			}
			v.Args[j] = s.get(a)
		}
		s.forwardSplats(v)
		s.narrow(v)
		s.restore(v, want)
		if nv := s.fold(v); nv != nil && nv != v {
			s.repl[v] = nv
			continue
		}
		if v.Body != nil {
			inner := map[string]*ir.Value{}
			for k, x := range seen {
				inner[k] = x
			}
			s.block(v.Body, inner)
		}
		if pure(v) {
			k := key(v)
			if old, ok := seen[k]; ok {
				s.repl[v] = old
				continue
			}
			seen[k] = v
		}
		s.rng[v] = s.rangeOf(v)
	}
}

// forwardSplats reads a splat operand of an elementwise op as the scalar it
// splats.
func (s *simplifier) forwardSplats(v *ir.Value) {
	if !v.Op.IsElementwise() {
		return
	}
	for j, a := range v.Args {
		if a.Op == ir.OpSplat {
			v.Args[j] = a.Args[0]
		}
	}
}

// narrow gives an elementwise op the register count of its operands
// (memory accesses keep theirs: their vectors are laid over them).
func (s *simplifier) narrow(v *ir.Value) {
	if !v.Op.IsElementwise() || !v.Op.HasResult() || v.Op.Effect() != 0 {
		return
	}
	n := 0
	for _, a := range v.Args {
		n = max(n, a.Type.Regs)
	}
	if n < v.Type.Regs {
		v.Type.Regs = n
	}
}

// restore splats narrowed operands back where v needs every register
// (want holds the operands' counts before simplify).
func (s *simplifier) restore(v *ir.Value, want []int) {
	for j, a := range v.Args {
		if v.Op == ir.OpYield {
			_, carried := v.Block.Parent.ForVars()
			want[j] = carried[j].Type.Regs
		}
		if exact(v, j) && a.Type.Regs < want[j] {
			sp := s.f.NewValue(ir.OpSplat, ir.Lanes(a.Type.DType, want[j]), nil, a)
			sp.Pos, sp.Name = v.Pos, a.Name
			v.Args[j] = s.insert(sp)
		}
	}
}

func key(v *ir.Value) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d %v", v.Op, v.Type)
	if v.Attr != nil {
		sb.WriteString(v.AttrString())
	}
	ids := make([]int, len(v.Args))
	for i, a := range v.Args {
		ids[i] = a.ID
	}
	if v.Op.IsCommutative() {
		slices.Sort(ids)
	}
	fmt.Fprint(&sb, ids)
	return sb.String()
}

// known is v's value in each register where it is a constant (one entry
// for a uniform constant), or nil.
func known(v *ir.Value) []int64 {
	if v.Op == ir.OpConst && !v.Type.DType.IsFloat() {
		return []int64{v.Const().Int}
	}
	if v.Op == ir.OpRegConst {
		return v.Consts()
	}
	return nil
}

func isConst(v *ir.Value, c int64) bool {
	k := known(v)
	if k == nil {
		return false
	}
	for _, x := range k {
		if x != c {
			return false
		}
	}
	return true
}

// foldRules are the folds of ops that are not elementwise arithmetic
// (which fold through ir's evaluation and the identities below).
var foldRules = ir.Rules[func(s *simplifier, v *ir.Value) *ir.Value]{
	ir.OpGatherRegs: func(s *simplifier, v *ir.Value) *ir.Value {
		x := v.Args[0]
		if k := known(x); k != nil && len(k) > 1 {
			c := make([]int64, len(v.RegMap()))
			for r, src := range v.RegMap() {
				c[r] = k[src]
			}
			return s.consts(v.Type.DType, c)
		}
		if x.Op == ir.OpSplat {
			return s.insert(s.f.NewValue(ir.OpSplat, v.Type, nil, x.Args[0]))
		}
		if x.Op == ir.OpGatherRegs {
			m := make([]int, len(v.RegMap()))
			for r, src := range v.RegMap() {
				m[r] = x.RegMap()[src]
			}
			v.Args[0], v.Attr = x.Args[0], ir.RegMapAttr{Map: m}
		}
		return nil
	},
	ir.OpSplat: func(s *simplifier, v *ir.Value) *ir.Value {
		if x := v.Args[0]; x.Type.Regs == v.Type.Regs {
			return x
		}
		return nil
	},
	ir.OpWhere: func(s *simplifier, v *ir.Value) *ir.Value {
		switch c := v.Args[0]; {
		case isConst(c, 1):
			return v.Args[1]
		case isConst(c, 0):
			return v.Args[2]
		}
		if v.Args[1] == v.Args[2] {
			return v.Args[1]
		}
		return nil
	},
}

// fold returns what v simplifies to, or nil to keep it.
func (s *simplifier) fold(v *ir.Value) *ir.Value {
	d := v.Type.DType
	if r := foldRules.Of(v.Op); r != nil {
		return r(s, v)
	}
	if !v.Op.IsElementwise() || !v.Op.HasResult() || v.Op.Effect() != 0 || v.Op == ir.OpAssume {
		return nil
	}
	// Constant operands: evaluate, register by register.
	if d.K != ir.KPtr && !d.IsFloat() {
		ks := make([][]int64, len(v.Args))
		n := 1
		for i, a := range v.Args {
			if ks[i] = known(a); ks[i] == nil || a.Type.DType.IsFloat() {
				ks = nil
				break
			}
			n = max(n, len(ks[i]))
		}
		if ks != nil {
			c := make([]int64, n)
			for r := range c {
				xs := make([]uint64, len(ks))
				for i, k := range ks {
					xs[i] = uint64(k[min(r, len(k)-1)])
				}
				var out uint64
				var err error
				if len(xs) == 1 {
					out = ir.EvalUnary(v.Op, v.Args[0].Type.DType, d, xs[0])
				} else {
					out, err = ir.EvalBinary(v.Op, v.Args[0].Type.DType, xs[0], xs[1])
				}
				if err != nil {
					return nil // a division by zero stays for the run to report
				}
				c[r] = int64(out)
			}
			return s.consts(d, c)
		}
	}
	if len(v.Args) == 2 && d.IsInt() || d == ir.Bool && len(v.Args) == 2 {
		if r := s.identity(v); r != nil {
			return r
		}
	}
	// A range of one point is a constant.
	if d.IsInt() {
		if r := s.rangeOf(v); r.known && r.lo == r.hi {
			return s.constant(d, r.lo)
		}
	}
	if v.Op.IsCompare() {
		if c, ok := s.decide(v); ok {
			return s.constant(ir.Bool, b2i(c))
		}
	}
	return nil
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// consts is a constant per register, uniform where all agree.
func (s *simplifier) consts(d ir.DType, c []int64) *ir.Value {
	if !slices.ContainsFunc(c, func(x int64) bool { return x != c[0] }) {
		return s.constant(d, c[0])
	}
	return s.insert(s.f.NewValue(ir.OpRegConst, ir.Lanes(d, len(c)), ir.ConstsAttr{C: c}))
}

// identity is what an integer or bool op with a neutral operand reduces to.
func (s *simplifier) identity(v *ir.Value) *ir.Value {
	if r := identityRules.Of(v.Op); r != nil {
		return r(s, v, v.Args[0], v.Args[1])
	}
	return nil
}

// identityRules are the integer and bool identities, by op.
var identityRules = ir.Rules[func(s *simplifier, v, x, y *ir.Value) *ir.Value]{
	ir.OpAdd: func(s *simplifier, v, x, y *ir.Value) *ir.Value {
		if r := zeroIdentity(s, v, x, y); r != nil {
			return r
		}
		if a := s.recombined(x, y); a != nil {
			return a
		}
		return s.recombined(y, x)
	},
	ir.OpOr:   zeroIdentity,
	ir.OpXor:  zeroIdentity,
	ir.OpSub:  zeroRight,
	ir.OpShl:  zeroRight,
	ir.OpShr:  zeroRight,
	ir.OpShrU: zeroRight,
	ir.OpMul: func(s *simplifier, v, x, y *ir.Value) *ir.Value {
		if isConst(y, 1) {
			return x
		}
		if isConst(x, 1) {
			return y
		}
		if isConst(x, 0) || isConst(y, 0) {
			return s.constant(v.Type.DType, 0)
		}
		return nil
	},
	ir.OpDiv: func(s *simplifier, v, x, y *ir.Value) *ir.Value {
		if isConst(y, 1) {
			return x
		}
		if r := s.rng[x]; r.known && r.lo >= 0 && len(known(y)) == 1 && known(y)[0] > r.hi {
			return s.constant(v.Type.DType, 0)
		}
		return nil
	},
	ir.OpRem: func(s *simplifier, v, x, y *ir.Value) *ir.Value {
		if isConst(y, 1) || isConst(y, -1) {
			return s.constant(v.Type.DType, 0)
		}
		if r := s.rng[x]; r.known && r.lo >= 0 && len(known(y)) == 1 && known(y)[0] > r.hi {
			return x
		}
		return nil
	},
	ir.OpAnd: func(s *simplifier, v, x, y *ir.Value) *ir.Value {
		if v.Type.DType == ir.Bool {
			switch {
			case isConst(y, 1):
				return x
			case isConst(x, 1):
				return y
			case isConst(x, 0) || isConst(y, 0):
				return s.constant(ir.Bool, 0)
			}
			if x == y {
				return x
			}
			return nil
		}
		if r := s.rng[x]; r.known && r.lo >= 0 && len(known(y)) == 1 {
			if m := known(y)[0]; m >= 0 && m&(m+1) == 0 && m >= r.hi {
				return x
			}
		}
		return nil
	},
}

// zeroIdentity: x ⊕ 0 and 0 ⊕ x are x.
func zeroIdentity(s *simplifier, v, x, y *ir.Value) *ir.Value {
	if isConst(y, 0) {
		return x
	}
	if isConst(x, 0) {
		return y
	}
	return nil
}

// zeroRight: x ⊕ 0 is x.
func zeroRight(s *simplifier, v, x, y *ir.Value) *ir.Value {
	if isConst(y, 0) {
		return x
	}
	return nil
}

// recombined is a where hi = (a / c) * c and lo = a % c, for a ≥ 0 and a
// constant c > 0: a lane index split into wave and lane, put back.
func (s *simplifier) recombined(hi, lo *ir.Value) *ir.Value {
	if hi.Op != ir.OpMul || lo.Op != ir.OpRem || hi.Args[0].Op != ir.OpDiv {
		return nil
	}
	a, c := lo.Args[0], lo.Args[1]
	div := hi.Args[0]
	k := known(c)
	if len(k) != 1 || k[0] <= 0 || div.Args[0] != a || !isConst(div.Args[1], k[0]) || !isConst(hi.Args[1], k[0]) {
		return nil
	}
	if r := s.rangeOf(a); !r.known || r.lo < 0 {
		return nil
	}
	return a
}

// decide settles a comparison its operands' ranges settle.
func (s *simplifier) decide(v *ir.Value) (bool, bool) {
	a, b := s.rangeOf(v.Args[0]), s.rangeOf(v.Args[1])
	if !a.known || !b.known || !v.Args[0].Type.DType.IsInt() {
		return false, false
	}
	r := decideRules.Of(v.Op)
	switch {
	case r.yes != nil && r.yes(a, b):
		return true, true
	case r.no != nil && r.no(a, b):
		return false, true
	}
	return false, false
}

// decideRules say, for each comparison, when its operands' ranges make it
// always true (yes) and always false (no).
var decideRules = ir.Rules[struct{ yes, no func(a, b interval) bool }]{
	ir.OpLt: {yes: func(a, b interval) bool { return a.hi < b.lo }, no: func(a, b interval) bool { return a.lo >= b.hi }},
	ir.OpLe: {yes: func(a, b interval) bool { return a.hi <= b.lo }, no: func(a, b interval) bool { return a.lo > b.hi }},
	ir.OpGt: {yes: func(a, b interval) bool { return a.lo > b.hi }, no: func(a, b interval) bool { return a.hi <= b.lo }},
	ir.OpGe: {yes: func(a, b interval) bool { return a.lo >= b.hi }, no: func(a, b interval) bool { return a.hi < b.lo }},
	ir.OpEq: {no: disjoint},
	ir.OpNe: {yes: disjoint},
}

func disjoint(a, b interval) bool { return a.hi < b.lo || a.lo > b.hi }

// rangeOf bounds an integer value from what is known of its operands.
func (s *simplifier) rangeOf(v *ir.Value) interval {
	if r, ok := s.rng[v]; ok {
		return r
	}
	d := v.Type.DType
	if !d.IsInt() {
		return interval{}
	}
	if k := known(v); k != nil {
		return interval{slices.Min(k), slices.Max(k), true}
	}
	if r := rangeRules.Of(v.Op); r != nil {
		b := bounder{s, v, interval{math.MinInt32, math.MaxInt32, true}}
		if d.K == ir.KI64 {
			b.lim = interval{math.MinInt64 / 4, math.MaxInt64 / 4, true}
		}
		return r(b, b.arg(0), b.arg(1))
	}
	return interval{}
}

// bounder is what a range rule knows: the value, its operands' ranges, and
// the range its type holds without wrapping.
type bounder struct {
	s   *simplifier
	v   *ir.Value
	lim interval
}

// arg is operand i's range (unknown where v has none).
func (b bounder) arg(i int) interval {
	if i >= len(b.v.Args) {
		return interval{}
	}
	return b.s.rangeOf(b.v.Args[i])
}

// in is r where the type holds it, unknown otherwise.
func (b bounder) in(r interval) interval {
	if !r.known || r.lo < b.lim.lo || r.hi > b.lim.hi {
		return interval{}
	}
	return r
}

// rangeRules bound an integer op's value from its operands' ranges a and
// b (unknown where it has no such operand).
var rangeRules = ir.Rules[func(z bounder, a, b interval) interval]{
	ir.OpTid: func(z bounder, _, _ interval) interval { return interval{0, int64(z.s.f.Threads - 1), true} },
	ir.OpProgramID: func(bounder, interval, interval) interval {
		return interval{0, math.MaxInt32, true} // a grid axis holds < 2^31 programs
	},
	ir.OpCast: func(z bounder, a, _ interval) interval {
		if z.v.Args[0].Type.DType.IsInt() {
			return z.in(a) // an i64 → i32 cast of a wider value truncates
		}
		return interval{}
	},
	ir.OpAdd: func(z bounder, a, b interval) interval {
		if a.known && b.known {
			return z.in(interval{a.lo + b.lo, a.hi + b.hi, true})
		}
		return interval{}
	},
	ir.OpSub: func(z bounder, a, b interval) interval {
		if a.known && b.known {
			return z.in(interval{a.lo - b.hi, a.hi - b.lo, true})
		}
		return interval{}
	},
	ir.OpMul: func(z bounder, a, b interval) interval {
		// a.hi · b.hi must not wrap (bounds of i64 values reach 2^61).
		if a.known && b.known && a.lo >= 0 && b.lo >= 0 && (a.hi == 0 || b.hi <= z.lim.hi/a.hi) {
			return z.in(interval{a.lo * b.lo, a.hi * b.hi, true})
		}
		return interval{}
	},
	ir.OpDiv: func(_ bounder, a, b interval) interval {
		if a.known && b.known && a.lo >= 0 && b.lo > 0 {
			return interval{a.lo / b.hi, a.hi / b.lo, true}
		}
		return interval{}
	},
	ir.OpRem: func(_ bounder, a, b interval) interval {
		if a.known && b.known && a.lo >= 0 && b.lo > 0 {
			return interval{0, min(a.hi, b.hi-1), true}
		}
		return interval{}
	},
	ir.OpAnd: func(_ bounder, a, b interval) interval {
		if b.known && b.lo >= 0 && b.lo == b.hi { // x & m with m ≥ 0 lies in [0, m]
			hi := b.hi
			if a.known && a.lo >= 0 {
				hi = min(hi, a.hi)
			}
			return interval{0, hi, true}
		}
		return interval{}
	},
}
