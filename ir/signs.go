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
func (f *Func) NoNegZero() map[*Value]bool { return f.floatFact(&noNegZeroRules) }

// A fact rule says whether v has the fact, given which of its operands
// have it.
type factRule func(v *Value, arg func(int) bool) bool

// noNegZeroRules are NoNegZero's rules for the ops that make values.
var noNegZeroRules = Rules[factRule]{
	OpConst: func(v *Value, _ func(int) bool) bool { return !math.Signbit(float64(float32(v.Const().Float))) },
	OpAbs:   func(*Value, func(int) bool) bool { return true },
	OpMax:   func(_ *Value, arg func(int) bool) bool { return arg(0) && arg(1) }, // maxNum returns an operand
	OpMin:   func(_ *Value, arg func(int) bool) bool { return arg(0) && arg(1) },
}

// NoNaN is the set of f32 values of f that are never NaN, by the rules of
// NoNegZero but for these: constants other than NaN, absolute values of
// such values, and a max or min of which either operand is one (maxNum
// returns the other operand only where that one is NaN). An amax carried
// from +0 is never NaN, whatever it folds in.
func (f *Func) NoNaN() map[*Value]bool { return f.floatFact(&noNaNRules) }

// noNaNRules are NoNaN's rules for the ops that make values.
var noNaNRules = Rules[factRule]{
	OpConst: func(v *Value, _ func(int) bool) bool { return !math.IsNaN(float64(float32(v.Const().Float))) },
	OpAbs:   func(_ *Value, arg func(int) bool) bool { return arg(0) },
	OpMax:   func(_ *Value, arg func(int) bool) bool { return arg(0) || arg(1) },
	OpMin:   func(_ *Value, arg func(int) bool) bool { return arg(0) || arg(1) },
}

// floatFact is the largest set of f's f32 values closed under the rules
// NoNegZero describes for moves, selects, max/min folds, loop-carried
// values and LDS reads, with leaf deciding the other ops from their
// operands' membership.
func (f *Func) floatFact(leaf *Rules[factRule]) map[*Value]bool {
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
		if r := ldsWrites.Of(v.Op); r != nil && !r(v, in) {
			ok = false
		}
	})
	return ok
}

// ldsWrites are the ops that write LDS: whether what each writes is in
// the set (a copy from memory never is).
var ldsWrites = Rules[func(v *Value, in map[*Value]bool) bool]{
	OpLDSStore: func(v *Value, in map[*Value]bool) bool {
		if x := v.Data(); x.Type.DType.K == KF32 && !in[x] {
			return false
		}
		return true
	},
	OpLDSCopy: func(*Value, map[*Value]bool) bool { return false },
	OpStage:   func(*Value, map[*Value]bool) bool { return false },
}

func minMax(k ReduceKind) bool { return k == RMax || k == RMin }

// holds applies floatFact's rules to v, its operands judged by in: a move
// has the fact where its operand has, a select where both choices have, a
// max or min fold where what it folds has, a loop-carried value where its
// initial and yielded values have, an LDS read where every LDS write has;
// the fact's own rules decide the rest.
func holds(v *Value, in map[*Value]bool, lds bool, leaf *Rules[factRule]) bool {
	arg := func(i int) bool { return in[v.Args[i]] }
	if v.Op.IsMove() {
		return arg(0)
	}
	if r := carried.Of(v.Op); r != nil {
		return r(v, in, lds)
	}
	if r := leaf.Of(v.Op); r != nil {
		return r(v, arg)
	}
	return false
}

// carried are the rules of values that pass on other values': a select,
// max and min folds, an LDS read, a loop's carried values and results.
var carried = Rules[func(v *Value, in map[*Value]bool, lds bool) bool]{
	OpReduce:     func(v *Value, in map[*Value]bool, _ bool) bool { return minMax(v.Reduction().Kind) && in[v.Args[0]] },
	OpReduceRegs: func(v *Value, in map[*Value]bool, _ bool) bool { return minMax(v.Fold().Kind) && in[v.Args[0]] },
	OpButterfly:  func(v *Value, in map[*Value]bool, _ bool) bool { return minMax(v.Butterfly().Kind) && in[v.Args[0]] },
	OpLDSReduce:  func(v *Value, _ map[*Value]bool, lds bool) bool { return minMax(v.LDSFold().Kind) && lds },
	OpWhere:      func(v *Value, in map[*Value]bool, _ bool) bool { return in[v.Args[1]] && in[v.Args[2]] },
	OpLDSLoad:    func(_ *Value, _ map[*Value]bool, lds bool) bool { return lds },
	OpLoopVar: func(v *Value, in map[*Value]bool, _ bool) bool {
		loop := v.Loop()
		if loop == nil || v == loop.Body.Vars[0] {
			return false
		}
		i := v.Index() - 1
		return in[loop.Inits()[i]] && in[loop.Yield().Args[i]]
	},
	OpForResult: func(v *Value, in map[*Value]bool, _ bool) bool {
		_, c := v.Args[0].ForVars()
		return in[c[v.Index()]]
	},
}
