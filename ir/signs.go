package ir

import "math"

// NoNegZero is the set of f32 values of f that are never −0 in any
// element: absolute values, non-negative constants, and what max, min,
// selects, moves and max/min reductions make of them. Where both operands
// of a max or min are in it, IEEE maxNum needs no care for signed zeros
// (equal operands have equal bits), so the emitter may print the
// hardware's max. NaNs are not excluded: maxNum's NaN rule is another
// matter (NoNaN).
//
// Loop-carried values are in the set when their initial and yielded
// values are (the largest fixed point: every f32 value starts in the set
// and leaves it once an operand has). An f32 read from LDS is in it when
// every f32 written to LDS is and no copy from global memory writes LDS:
// a kernel reads an LDS tile in the type it stored it in.
func (f *Func) NoNegZero() map[*Value]bool {
	return f.floatFact(func(v *Value, arg func(int) bool) bool {
		switch v.Op {
		case OpConst:
			return !math.Signbit(float64(float32(v.Const().Float)))
		case OpAbs:
			return true
		case OpMax, OpMin: // maxNum returns an operand
			return arg(0) && arg(1)
		}
		return false
	})
}

// NoNaN is the set of f32 values of f that are never NaN, by the rules of
// NoNegZero but for these: constants other than NaN, absolute values of
// such values, and a max or min of which either operand is one (maxNum
// returns the other operand only where that one is NaN). An amax carried
// from +0 is never NaN, whatever it folds in.
func (f *Func) NoNaN() map[*Value]bool {
	return f.floatFact(func(v *Value, arg func(int) bool) bool {
		switch v.Op {
		case OpConst:
			return !math.IsNaN(float64(float32(v.Const().Float)))
		case OpAbs:
			return arg(0)
		case OpMax, OpMin:
			return arg(0) || arg(1)
		}
		return false
	})
}

// floatFact is the largest set of f's f32 values closed under the rules
// NoNegZero describes for moves, selects, max/min folds, loop-carried
// values and LDS reads, with leaf deciding the other ops from their
// operands' membership.
func (f *Func) floatFact(leaf func(v *Value, arg func(int) bool) bool) map[*Value]bool {
	in := map[*Value]bool{}
	var vals []*Value
	f.Walk(func(v *Value) {
		if v.Type.DType.K == KF32 && v.Op.HasResult() {
			in[v] = true
			vals = append(vals, v)
		}
	})
	for changed := true; changed; {
		changed = false
		lds := ldsHolds(f, in)
		for _, v := range vals {
			if in[v] && !holds(v, in, lds, leaf) {
				in[v] = false
				changed = true
			}
		}
	}
	for v, ok := range in {
		if !ok {
			delete(in, v)
		}
	}
	return in
}

// ldsHolds reports whether every f32 that f writes to LDS is in the set
// in, and nothing else fills LDS from memory.
func ldsHolds(f *Func, in map[*Value]bool) bool {
	ok := true
	f.Walk(func(v *Value) {
		switch v.Op {
		case OpLDSStore:
			if x := v.Data(); x.Type.DType.K == KF32 && !in[x] {
				ok = false
			}
		case OpLDSCopy, OpStage:
			ok = false
		}
	})
	return ok
}

// holds applies floatFact's rules to v, its operands judged by in.
func holds(v *Value, in map[*Value]bool, lds bool, leaf func(*Value, func(int) bool) bool) bool {
	arg := func(i int) bool { return in[v.Args[i]] }
	minMax := func(k ReduceKind) bool { return k == RMax || k == RMin }
	switch v.Op {
	case OpWhere:
		return arg(1) && arg(2)
	case OpSplat, OpAssume, OpExpandDims, OpBroadcast, OpTrans, OpRotate, OpConvert, OpGatherRegs, OpShflXor:
		return arg(0)
	case OpReduce:
		return minMax(v.Reduction().Kind) && arg(0)
	case OpReduceRegs:
		return minMax(v.Fold().Kind) && arg(0)
	case OpButterfly:
		return minMax(v.Butterfly().Kind) && arg(0)
	case OpLDSLoad:
		return lds
	case OpLDSReduce:
		return minMax(v.LDSFold().Kind) && lds
	case OpLoopVar:
		loop := v.Loop()
		if loop == nil || v == loop.Body.Vars[0] {
			return false
		}
		i := v.Index() - 1
		return in[loop.Inits()[i]] && in[loop.Yield().Args[i]]
	case OpForResult:
		_, carried := v.Args[0].ForVars()
		return in[carried[v.Index()]]
	}
	return leaf(v, arg)
}
