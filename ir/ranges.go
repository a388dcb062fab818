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
		a := func(i int) span { return get(v.Args[i]) }
		var s span
		switch v.Op {
		case OpConst:
			c := v.Const().Int
			s = span{c, c}
		case OpSize:
			n, ok := sizes[v.ArgName()]
			if !ok {
				s = fullOf(d)
			} else {
				s = span{n, n}
			}
		case OpProgramID:
			s = span{0, int64(max(grid[v.Axis()], 1)) - 1}
		case OpNumPrograms:
			g := int64(grid[v.Axis()])
			s = span{g, g}
		case OpArange:
			s = span{0, int64(v.Index()) - 1}
		case OpSplat, OpExpandDims, OpBroadcast, OpTrans, OpRotate, OpAssume:
			s = a(0)
		case OpAdd:
			s = span{satAdd(a(0).lo, a(1).lo), satAdd(a(0).hi, a(1).hi)}
		case OpSub:
			s = span{satAdd(a(0).lo, -a(1).hi), satAdd(a(0).hi, -a(1).lo)}
		case OpMul:
			s = corners(a(0), a(1), satMul)
		case OpDiv:
			if b := a(1); b.lo > 0 || b.hi < 0 {
				s = corners(a(0), b, func(x, y int64) int64 { return x / y })
			} else {
				s = fullOf(d)
			}
		case OpRem:
			if b := a(1); b.lo > 0 {
				s = span{-(b.hi - 1), b.hi - 1}
				if a(0).lo >= 0 {
					s = span{0, min(a(0).hi, b.hi-1)}
				}
			} else {
				s = fullOf(d)
			}
		case OpMax:
			s = span{max(a(0).lo, a(1).lo), max(a(0).hi, a(1).hi)}
		case OpMin:
			s = span{min(a(0).lo, a(1).lo), min(a(0).hi, a(1).hi)}
		case OpNeg:
			s = span{-a(0).hi, -a(0).lo}
		case OpAbs:
			x := a(0)
			s = span{0, max(-x.lo, x.hi)}
			if x.lo >= 0 {
				s = x
			}
		case OpAnd:
			switch x, y := a(0), a(1); {
			case x.lo >= 0 && y.lo >= 0:
				s = span{0, min(x.hi, y.hi)}
			case x.lo >= 0:
				s = span{0, x.hi}
			case y.lo >= 0:
				s = span{0, y.hi}
			default:
				s = fullOf(d)
			}
		case OpShr, OpShrU:
			if x, y := a(0), a(1); x.lo >= 0 && y.lo >= 0 && y.hi < 63 {
				s = span{x.lo >> y.hi, x.hi >> y.lo}
			} else {
				s = fullOf(d)
			}
		case OpLt, OpLe, OpGt, OpGe, OpEq, OpNe:
			s = span{0, 1}
		case OpCast:
			if src := v.Args[0].Type.DType; src.IsInt() || src.K == KBool {
				s = a(0)
			} else {
				s = fullOf(d) // a float converted saturates
			}
		case OpWhere:
			x, y := a(1), a(2)
			s = span{min(x.lo, y.lo), max(x.hi, y.hi)}
		case OpReduce:
			if k := v.Reduction().Kind; k == RMax || k == RMin {
				s = a(0)
			} else { // a sum of n terms
				n := int64(v.Args[0].Type.Shape[v.Reduction().Axis])
				s = span{satMul(a(0).lo, n), satMul(a(0).hi, n)}
			}
		case OpFor:
			return
		case OpLoopVar:
			if v.Index() == 0 { // i in [lo, hi): i + step must not overflow either
				loop := v.Loop()
				lo, hi, step := get(loop.Args[0]), get(loop.Args[1]), get(loop.Args[2])
				s = span{lo.lo, max(lo.lo, hi.hi-1)}
				if d.K == KI32 && satAdd(s.hi, step.hi) > math.MaxInt32 && bad == nil {
					bad = loop
				}
			} else {
				s = fullOf(d)
			}
		default:
			s = fullOf(d)
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
		switch v.Op {
		case OpPtrAdd:
			roots = append(roots, v.Args[1])
		case OpFor:
			roots = append(roots, v.Args[:3]...)
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
