package lower

import "github.com/fp8gen/fp8gen/ir"

// hoist moves the values of a loop body that do not change between
// iterations to before the loop: above all the converts layout puts where
// a loop-invariant tile (a column's scale) meets the loop's tiles, which
// would otherwise take an LDS round trip, with its barriers, on every
// iteration. Inner loops go first, so an invariant of two loops rises out
// of both.
//
// What moves: converts of values from outside the loop, and scalars —
// neither costs more than a few registers held across the loop. Other
// tiles stay: a splat or a mask recomputed in the loop is cheaper than
// its registers kept live through it. Only values without effects move:
// no loads (the loop may store to what they read), atomics, stores or
// regions. Integer division and remainder move only by a nonzero
// constant: a loop that runs no iteration must not divide by zero before
// it.
func hoist(f *ir.Func, _ *Config) error {
	hoistIn(f.Entry)
	return nil
}

func hoistIn(b *ir.Block) {
	var out []*ir.Value
	for _, v := range b.Values {
		if v.Body != nil {
			hoistIn(v.Body)
		}
		if v.Op == ir.OpFor {
			out = append(out, invariants(v)...)
		}
		out = append(out, v)
	}
	b.Values = out
}

// invariants removes loop's invariant values from its body, in order, and
// returns them, now in the loop's block.
func invariants(loop *ir.Value) []*ir.Value {
	inside := map[*ir.Value]bool{}
	var mark func(b *ir.Block)
	mark = func(b *ir.Block) {
		for _, v := range b.Vars {
			inside[v] = true
		}
		for _, v := range b.Values {
			inside[v] = true
			if v.Body != nil {
				mark(v.Body)
			}
		}
	}
	mark(loop.Body)
	var moved []*ir.Value
	keep := loop.Body.Values[:0]
	for _, v := range loop.Body.Values {
		if movable(v) && !usesAny(v, inside) {
			delete(inside, v)
			v.Block = loop.Block
			moved = append(moved, v)
			continue
		}
		keep = append(keep, v)
	}
	loop.Body.Values = keep
	return moved
}

func movable(v *ir.Value) bool {
	if v.Body != nil || v.Op.Effect() != 0 || !v.Op.HasResult() {
		return false
	}
	if v.Op != ir.OpConvert && v.Type.Rank() != 0 {
		return false
	}
	if v.Op.IsPlaced() {
		return false
	}
	if (v.Op == ir.OpDiv || v.Op == ir.OpRem) && v.Type.DType.K != ir.KF32 {
		// An integer division faults on zero: moved out of its loop it
		// would run where the loop runs no trip.
		d := v.Args[1]
		return d.Op == ir.OpConst && d.Const().Int != 0
	}
	return true
}

func usesAny(v *ir.Value, set map[*ir.Value]bool) bool {
	for _, a := range v.Args {
		if set[a] {
			return true
		}
	}
	return false
}
