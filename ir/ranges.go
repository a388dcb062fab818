package ir

import (
	"math"
	"math/bits"
)

// span is the range [lo, hi] an integer value may take, in int64;
// arithmetic on spans saturates at the int64 limits (which no 32-bit
// value reaches, so saturation reads as overflow).
type span struct{ lo, hi int64 }

var full64 = span{math.MinInt64, math.MaxInt64}

func fullOf(d DType) span {
	switch d.K {
	case KI32:
		return span{math.MinInt32, math.MaxInt32}
	case KBool:
		return span{0, 1}
	}
	return full64
}

func satAdd(a, b int64) int64 {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return math.MaxInt64
	case a < 0 && b < 0 && s >= 0:
		return math.MinInt64
	}
	return s
}

func satMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	neg := (a < 0) != (b < 0)
	ua, ub := uint64(a), uint64(b)
	if a < 0 {
		ua = -ua
	}
	if b < 0 {
		ub = -ub
	}
	hi, lo := bits.Mul64(ua, ub)
	if hi != 0 || lo > math.MaxInt64 {
		if neg {
			return math.MinInt64
		}
		return math.MaxInt64
	}
	if neg {
		return -int64(lo)
	}
	return int64(lo)
}

func corners(a, b span, f func(x, y int64) int64) span {
	vs := []int64{f(a.lo, b.lo), f(a.lo, b.hi), f(a.hi, b.lo), f(a.hi, b.hi)}
	s := span{vs[0], vs[0]}
	for _, v := range vs[1:] {
		s.lo, s.hi = min(s.lo, v), max(s.hi, v)
	}
	return s
}

// spanner is what a range rule knows: the value, its operands' ranges,
// the launch; a rule sets bad to a loop whose counter may overflow.
type spanner struct {
	v     *Value
	get   func(*Value) span
	grid  [3]int
	sizes map[string]int64
	bad   *Value
}

// a is operand i's range.
func (z *spanner) a(i int) span { return z.get(z.v.Args[i]) }

// full is the range of the value's type.
func (z *spanner) full() span { return fullOf(z.v.Type.DType) }

// spanRules bound an integer or bool op's value (moves keep their
// operand's; an op without a rule has its type's whole range).
var spanRules = Rules[func(z *spanner) span]{
	OpConst: func(z *spanner) span {
		c := z.v.Const().Int
		return span{c, c}
	},
	OpSize: func(z *spanner) span {
		if n, ok := z.sizes[z.v.ArgName()]; ok {
			return span{n, n}
		}
		return z.full()
	},
	OpProgramID: func(z *spanner) span { return span{0, int64(max(z.grid[z.v.Axis()], 1)) - 1} },
	OpNumPrograms: func(z *spanner) span {
		g := int64(z.grid[z.v.Axis()])
		return span{g, g}
	},
	OpArange: func(z *spanner) span { return span{0, int64(z.v.Index()) - 1} },
	OpAdd:    func(z *spanner) span { return span{satAdd(z.a(0).lo, z.a(1).lo), satAdd(z.a(0).hi, z.a(1).hi)} },
	OpSub:    func(z *spanner) span { return span{satAdd(z.a(0).lo, -z.a(1).hi), satAdd(z.a(0).hi, -z.a(1).lo)} },
	OpMul:    func(z *spanner) span { return corners(z.a(0), z.a(1), satMul) },
	OpDiv: func(z *spanner) span {
		if b := z.a(1); b.lo > 0 || b.hi < 0 {
			return corners(z.a(0), b, func(x, y int64) int64 { return x / y })
		}
		return z.full()
	},
	OpRem: func(z *spanner) span {
		b := z.a(1)
		if b.lo <= 0 {
			return z.full()
		}
		if z.a(0).lo >= 0 {
			return span{0, min(z.a(0).hi, b.hi-1)}
		}
		return span{-(b.hi - 1), b.hi - 1}
	},
	OpMax: func(z *spanner) span { return span{max(z.a(0).lo, z.a(1).lo), max(z.a(0).hi, z.a(1).hi)} },
	OpMin: func(z *spanner) span { return span{min(z.a(0).lo, z.a(1).lo), min(z.a(0).hi, z.a(1).hi)} },
	OpNeg: func(z *spanner) span { return span{-z.a(0).hi, -z.a(0).lo} },
	OpAbs: func(z *spanner) span {
		if x := z.a(0); x.lo < 0 {
			return span{0, max(-x.lo, x.hi)}
		}
		return z.a(0)
	},
	OpAnd: func(z *spanner) span {
		switch x, y := z.a(0), z.a(1); {
		case x.lo >= 0 && y.lo >= 0:
			return span{0, min(x.hi, y.hi)}
		case x.lo >= 0:
			return span{0, x.hi}
		case y.lo >= 0:
			return span{0, y.hi}
		}
		return z.full()
	},
	OpShr:  shiftSpan,
	OpShrU: shiftSpan,
	OpLt:   boolSpan,
	OpLe:   boolSpan,
	OpGt:   boolSpan,
	OpGe:   boolSpan,
	OpEq:   boolSpan,
	OpNe:   boolSpan,
	OpCast: func(z *spanner) span {
		if src := z.v.Args[0].Type.DType; src.IsInt() || src.K == KBool {
			return z.a(0)
		}
		return z.full() // a float converted saturates
	},
	OpWhere: func(z *spanner) span {
		x, y := z.a(1), z.a(2)
		return span{min(x.lo, y.lo), max(x.hi, y.hi)}
	},
	OpReduce: func(z *spanner) span {
		if k := z.v.Reduction().Kind; k == RMax || k == RMin {
			return z.a(0)
		}
		// a sum of n terms
		n := int64(z.v.Args[0].Type.Shape[z.v.Reduction().Axis])
		return span{satMul(z.a(0).lo, n), satMul(z.a(0).hi, n)}
	},
	OpLoopVar: func(z *spanner) span {
		if z.v.Index() != 0 {
			return z.full()
		}
		// i in [lo, hi): i + step must not overflow either
		loop := z.v.Loop()
		lo, hi, step := z.get(loop.Args[0]), z.get(loop.Args[1]), z.get(loop.Args[2])
		s := span{lo.lo, max(lo.lo, hi.hi-1)}
		if z.v.Type.DType.K == KI32 && satAdd(s.hi, step.hi) > math.MaxInt32 {
			z.bad = loop
		}
		return s
	},
}

func shiftSpan(z *spanner) span {
	if x, y := z.a(0), z.a(1); x.lo >= 0 && y.lo >= 0 && y.hi < 63 {
		return span{x.lo >> y.hi, x.hi >> y.lo}
	}
	return z.full()
}

func boolSpan(*spanner) span { return span{0, 1} }

// IndexOverflow finds a 32-bit value of f's index arithmetic — what
// reaches a pointer offset or a loop bound — that can leave the 32-bit
// range when the kernel runs over grid with the given sizes: a row index
// of a tile's masked-off padding times a long row, say, or a loop counter
// stepping past 2^31. It returns the first such value, or nil. f is in the
// tile phase (before lowering); a value whose range is not known (a loaded
// integer, a loop-carried one) has its type's whole range, so only what is
// computed from such values can overflow.
func (f *Func) IndexOverflow(grid [3]int, sizes map[string]int64) *Value {
	r := map[*Value]span{}
	get := func(v *Value) span {
		if s, ok := r[v]; ok {
			return s
		}
		return fullOf(v.Type.DType)
	}
	var bad *Value
	f.Walk(func(v *Value) {
		d := v.Type.DType
		if !d.IsInt() && d.K != KBool {
			return
		}
		z := spanner{v: v, get: get, grid: grid, sizes: sizes}
		s := fullOf(d)
		if v.Op.IsMove() {
			s = z.a(0)
		} else if rule := spanRules.Of(v.Op); rule != nil {
			s = rule(&z)
		}
		if bad == nil {
			bad = z.bad
		}
		r[v] = s
	})
	if bad != nil {
		return bad
	}
	// The index arithmetic: what flows into a pointer offset or a loop's
	// bounds, through integer values.
	var roots []*Value
	f.Walk(func(v *Value) {
		for i, a := range v.Args {
			if r := v.RoleOf(i); r == RoleOffset || r == RoleLo || r == RoleHi || r == RoleStep {
				roots = append(roots, a)
			}
		}
	})
	seen := map[*Value]bool{}
	for len(roots) > 0 {
		v := roots[len(roots)-1]
		roots = roots[:len(roots)-1]
		if seen[v] || !(v.Type.DType.IsInt() || v.Type.DType.K == KBool) {
			continue
		}
		seen[v] = true
		if s := get(v); v.Type.DType.K == KI32 && (s.lo < math.MinInt32 || s.hi > math.MaxInt32) {
			return v
		}
		if v.Op == OpLoad || v.Op == OpLoopVar && v.Index() > 0 {
			continue // a value from memory or a previous iteration: its type's range
		}
		roots = append(roots, v.Args...)
	}
	return nil
}
