package lower

import "github.com/fp8gen/fp8gen/ir"

// axisInfo is what is known of an integer or pointer tile along each axis:
// runs of contig elements that step by +1, runs of constant elements, and a
// power of two dividing the first element of every run (in elements). It is
// how lowering knows that x + rows*K + cols is contiguous along the columns
// and aligned for 16-byte vectors when K is a multiple of 8. For a boolean
// tile, convex is the length of aligned blocks on each of which it holds
// on one interval (or nowhere): rows >= lo && rows < hi, which a group
// boundary may cut inside a vector, is convex, so the vector is wholly in
// exactly when its two end elements are.
type axisInfo struct {
	contig, constant, convex []int
	div                      int
}

const maxDiv = 1 << 20

func divOf(x int64) int {
	if x == 0 {
		return maxDiv
	}
	d := 1
	for x%2 == 0 && d < maxDiv {
		x /= 2
		d *= 2
	}
	return d
}

func ones(n int) []int {
	o := make([]int, n)
	for i := range o {
		o[i] = 1
	}
	return o
}

func analyze(f *ir.Func, cfg *Config) map[*ir.Value]axisInfo {
	m := map[*ir.Value]axisInfo{}
	get := func(v *ir.Value) axisInfo {
		if a, ok := m[v]; ok {
			return a
		}
		return axisInfo{contig: ones(v.Type.Rank()), constant: ones(v.Type.Rank()), convex: ones(v.Type.Rank()), div: 1}
	}
	z := axes{get: get, cfg: cfg}
	f.Walk(func(v *ir.Value) {
		r := v.Type.Rank()
		a := axisInfo{contig: ones(r), constant: ones(r), convex: ones(r), div: 1}
		if rule := axisRules.Of(v.Op); rule != nil {
			rule(z, v, &a)
		}
		for i := range a.convex {
			a.convex[i] = max(a.convex[i], a.constant[i]) // constant is convex
		}
		m[v] = a
	})
	return m
}

// axes is what an axis rule reads: its operands' facts, the config's
// divisors of the sizes.
type axes struct {
	get func(*ir.Value) axisInfo
	cfg *Config
}

// An axis rule refines a, v's facts (each axis a run of one element, the
// divisor 1), from v's operands.
type axisRule func(z axes, v *ir.Value, a *axisInfo)

var axisRules = ir.Rules[axisRule]{
	ir.OpConst: func(_ axes, v *ir.Value, a *axisInfo) { a.div = divOf(v.Const().Int) },
	ir.OpSize: func(z axes, v *ir.Value, a *axisInfo) {
		if d, ok := z.cfg.Div[v.ArgName()]; ok {
			a.div = d
		}
	},
	ir.OpParam: func(_ axes, v *ir.Value, a *axisInfo) {
		a.div = 16 / v.Type.DType.Elem().Bytes() // device allocations are 16-byte aligned at least
	},
	ir.OpArange: func(_ axes, v *ir.Value, a *axisInfo) { a.contig[0], a.div = v.Type.Shape[0], maxDiv },
	ir.OpLoopVar: func(z axes, v *ir.Value, a *axisInfo) {
		if v.Index() == 0 {
			loop := v.Loop()
			a.div = min(z.get(loop.Args[0]).div, z.get(loop.Args[2]).div)
		}
	},
	ir.OpSplat: func(z axes, v *ir.Value, a *axisInfo) {
		a.constant, a.div = append([]int(nil), v.Type.Shape...), z.get(v.Args[0]).div
		a.convex = append([]int(nil), v.Type.Shape...)
	},
	ir.OpExpandDims: func(z axes, v *ir.Value, a *axisInfo) {
		x := z.get(v.Args[0])
		ax := v.Axis()
		a.contig = insert(x.contig, ax)
		a.constant = insert(x.constant, ax)
		a.convex = insert(x.convex, ax)
		a.div = x.div
	},
	ir.OpBroadcast: func(z axes, v *ir.Value, a *axisInfo) {
		x := z.get(v.Args[0])
		for i, s := range v.Args[0].Type.Shape {
			if s == 1 {
				a.constant[i], a.convex[i] = v.Type.Shape[i], v.Type.Shape[i]
			} else {
				a.contig[i], a.constant[i], a.convex[i] = x.contig[i], x.constant[i], x.convex[i]
			}
		}
		a.div = x.div
	},
	ir.OpAdd:    sumAxes(false),
	ir.OpPtrAdd: sumAxes(false),
	ir.OpSub:    sumAxes(true),
	ir.OpMul: func(z axes, v *ir.Value, a *axisInfo) {
		// A product is no longer contiguous, so each element starts a run:
		// an operand's runs of x0, x0+1, … divide only by 1 element-wise.
		x, y := z.get(v.Args[0]), z.get(v.Args[1])
		for i := range a.constant {
			a.constant[i] = min(x.constant[i], y.constant[i])
		}
		a.div = min(x.elemDiv()*y.elemDiv(), maxDiv)
	},
	ir.OpLt: compareAxes(true),
	ir.OpLe: compareAxes(true),
	ir.OpGt: compareAxes(true),
	ir.OpGe: compareAxes(true),
	ir.OpEq: compareAxes(true),
	// != of a run against a constant fails on one element at most: its
	// truth is no interval.
	ir.OpNe:  compareAxes(false),
	ir.OpAnd: logicAxes(true),
	ir.OpOr:  logicAxes(false),
	ir.OpCast: func(z axes, v *ir.Value, a *axisInfo) {
		if v.Type.DType.IsInt() && v.Args[0].Type.DType.IsInt() {
			*a = z.get(v.Args[0]) // widening keeps runs and divisors
		}
	},
	ir.OpAssume: func(z axes, v *ir.Value, a *axisInfo) {
		x, h := z.get(v.Args[0]), v.Assumption()
		*a = axisInfo{contig: append([]int(nil), x.contig...), constant: append([]int(nil), x.constant...), convex: append([]int(nil), x.convex...), div: max(x.div, h.Div)}
		if r := v.Type.Rank(); r > 0 {
			a.contig[r-1] = max(a.contig[r-1], min(h.Contig, v.Type.Shape[r-1]))
		}
	},
	ir.OpConvert: func(z axes, v *ir.Value, a *axisInfo) { *a = z.get(v.Args[0]) },
}

// sumAxes is the rule of x + y (and of x − y, whose runs come from x
// alone: a run of y would count down).
func sumAxes(sub bool) axisRule {
	return func(z axes, v *ir.Value, a *axisInfo) {
		x, y := z.get(v.Args[0]), z.get(v.Args[1])
		for i := range a.constant {
			a.constant[i] = min(x.constant[i], y.constant[i])
			a.contig[i] = max(min(x.contig[i], y.constant[i]), 1)
			if !sub {
				a.contig[i] = max(a.contig[i], min(x.constant[i], y.contig[i]))
			}
		}
		a.div = min(x.div, y.div)
	}
}

// compareAxes is a comparison's rule: x < K over an aligned run of x0,
// x0+1, … is constant over blocks of any power of two dividing both x0
// and K, where the comparison cannot change; and over a run against a
// constant an order comparison holds on a prefix or a suffix and == on one
// element at most: an interval (where interval says so).
func compareAxes(interval bool) axisRule {
	return func(z axes, v *ir.Value, a *axisInfo) {
		x, y := z.get(v.Args[0]), z.get(v.Args[1])
		for i := range a.constant {
			a.constant[i] = min(x.constant[i], y.constant[i])
			g := max(min(x.contig[i], y.constant[i], x.div, y.elemDiv()), min(y.contig[i], x.constant[i], y.div, x.elemDiv()))
			a.constant[i] = max(a.constant[i], pow2Floor(g))
			if interval {
				a.convex[i] = pow2Floor(max(min(x.contig[i], y.constant[i]), min(y.contig[i], x.constant[i])))
			}
		}
	}
}

// logicAxes is && and ||: constant over a block only where both operands
// are; two intervals meet in an interval (and), their union need not be
// one.
func logicAxes(and bool) axisRule {
	return func(z axes, v *ir.Value, a *axisInfo) {
		x, y := z.get(v.Args[0]), z.get(v.Args[1])
		for i := range a.constant {
			a.constant[i] = min(x.constant[i], y.constant[i])
			if and {
				a.convex[i] = min(x.convex[i], y.convex[i])
			}
		}
	}
}

// pow2Floor is the largest power of two not above n (1 for n < 2).
func pow2Floor(n int) int {
	p := 1
	for p*2 <= n {
		p *= 2
	}
	return p
}

func insert(x []int, at int) []int {
	out := append([]int(nil), x[:at]...)
	out = append(out, 1)
	return append(out, x[at:]...)
}

// elemDiv is a power of two dividing every element (not only run starts).
func (a axisInfo) elemDiv() int {
	for _, c := range a.contig {
		if c > 1 {
			return 1
		}
	}
	return a.div
}

// contigAxis is the axis along which a pointer tile's runs are longest.
func (a axisInfo) contigAxis() int {
	best := len(a.contig) - 1
	for i := range a.contig {
		if a.contig[i] > a.contig[best] {
			best = i
		}
	}
	return best
}
