package lower

import (
	"fmt"

	"github.com/fp8gen/fp8gen/ir"
)

// anchor is the layout a global access of a tile of the given shape wants:
// each lane holds 16 bytes (or the whole extent) contiguously along the
// contiguous axis, a wave's lanes run along that axis first, and waves are
// spread over the other axis first, so that a wave touches whole rows of
// consecutive bytes. lanes > 0 caps the lanes along the contiguous axis.
// rows > 1 gives each lane that many consecutive elements along the other
// axis of a 2-D tile (fewer where the waves would no longer all spread
// along it): a tile that is transposed then moves to LDS in words of rows
// elements instead of one element at a time.
//
// With fill, a tile too small for 16 bytes in every lane holds fewer
// elements a lane instead, so that no lane holds another's copy: loads
// of mixed widths sized for the narrowest (fp8 beside bf16) at the
// threads the wider ones were scheduled for.
func anchor(shape []int, contig, elemBytes, wave, warps, lanes, rows int, fill bool) *ir.Layout {
	r := len(shape)
	if r == 1 {
		spt := min(max(16/elemBytes, 1), shape[0])
		if lanes > 0 && lanes < min(wave, shape[0]/spt) {
			// A row of the [rows, n] tiles it is broadcast into: those
			// lanes and registers, every wave and lane row alike.
			return anchor([]int{warps * wave / lanes, shape[0]}, 1, elemBytes, wave, warps, lanes, 1, fill).Slice(0)
		}
		return ir.Blocked([]int{spt}, []int{wave}, []int{warps}, []int{0})
	}
	o := 1 - contig
	spt, tpw, wpb := make([]int, 2), make([]int, 2), make([]int, 2)
	spt[contig] = min(max(16/elemBytes, 1), shape[contig])
	if per := shape[0] * shape[1] / (wave * warps); fill && per < spt[contig] {
		spt[contig] = max(per, 1)
	}
	spt[o] = 1
	tpw[contig] = min(wave, shape[contig]/spt[contig])
	if lanes > 0 {
		tpw[contig] = min(tpw[contig], lanes)
	}
	tpw[o] = wave / tpw[contig]
	for ; rows > 1; rows /= 2 {
		if shape[o] >= rows*tpw[o]*warps {
			spt[o] = rows
			break
		}
	}
	rest := max(shape[o]/(spt[o]*tpw[o]), 1)
	wpb[o] = min(warps, rest)
	wpb[contig] = warps / wpb[o]
	return ir.Blocked(spt, tpw, wpb, []int{contig, o})
}

// transposedRows finds the 2-D loads whose data reaches a trans through
// elementwise ops alone, and gives their pointers the rows a lane should
// hold: a word of the transposed element (4 for fp8). The data may be
// carried by a loop (a tile loaded one trip ahead): its initial and
// yielded values are followed too.
func transposedRows(f *ir.Func) map[*ir.Value]int {
	rows := map[*ir.Value]int{}
	var seen map[*ir.Value]bool // per trans: carried values form cycles
	var back func(v *ir.Value, n int)
	back = func(v *ir.Value, n int) {
		if seen[v] {
			return
		}
		seen[v] = true
		switch {
		case v.Op == ir.OpLoad && v.Type.Rank() == 2:
			rows[v.Ptr()] = max(rows[v.Ptr()], n)
		case v.Op == ir.OpUnstage:
			rows[v] = max(rows[v], n)
		case v.Op == ir.OpLoopVar && v.Index() > 0 && v.Type.Rank() == 2:
			loop := v.Loop()
			back(loop.Args[2+v.Index()], n)
			back(loop.Yield().Args[v.Index()-1], n)
		case v.Op.IsElementwise() && v.Type.Rank() == 2:
			for _, a := range v.Args {
				if a.Type.Rank() == 2 {
					back(a, n)
				}
			}
		}
	}
	f.Walk(func(v *ir.Value) {
		if v.Op == ir.OpTrans {
			seen = map[*ir.Value]bool{}
			back(v.Args[0], max(4/max(v.Type.DType.Bytes(), 1), 1))
		}
	})
	return rows
}

func isAccess(v *ir.Value) bool {
	return v.Op == ir.OpStore || v.Op == ir.OpAtomic
}

// assignLayout gives every tile a layout. Loads take the anchor layout of
// their pointers (a spread load its elements over the block's lanes in
// order: MemAttr.Spread); layouts flow forward from loads through the
// data path (reductions slice, expand_dims and broadcasts keep the base,
// trans transposes); a store keeps its value's layout when that is coalesced along
// the pointer's contiguous axis, and takes its anchor otherwise; index
// computations then take, backward, the layouts their users need; what is
// left gets a default. Where an operand's layout differs from what its user
// needs, index arithmetic is recomputed in the needed layout and data is
// converted: the one place LDS traffic is introduced.
func assignLayout(f *ir.Func, cfg *Config) error {
	info := analyze(f, cfg)
	wave := f.Target.WaveSize
	// Loads of one tile shape share their anchor, sized for the narrowest
	// element among them when that is half as wide: a bf16 tile and the
	// f32 tables it is combined with then sit in the same lanes (the f32
	// load is two 16-byte vectors a lane, each instruction using half its
	// span) instead of meeting through LDS. A wider gap (fp8 beside f32:
	// four vectors a lane, a quarter of each span) keeps its own anchor.
	narrowest, widest := map[string]int{}, map[string]int{}
	key := func(p *ir.Value) string { return fmt.Sprint(p.Type.Shape, info[p].contigAxis()) }
	f.Walk(func(v *ir.Value) {
		if v.Op == ir.OpLoad && v.Type.Rank() > 0 && !v.Mem().Spread { // a spread load takes no anchor
			k, b := key(v.Ptr()), max(v.Type.DType.Bytes(), 1)
			if n, ok := narrowest[k]; !ok || b < n {
				narrowest[k] = b
			}
			widest[k] = max(widest[k], b)
		}
	})
	rows := transposedRows(f)
	anchorOf := func(p *ir.Value, elem ir.DType) *ir.Layout {
		b, k := max(elem.Bytes(), 1), key(p)
		n, ok := narrowest[k]
		if ok && n < b && b <= 2*n {
			b = n
		}
		// The loads of a tile shape share the narrowest's anchor: sized
		// for it, it may not fill the lanes the schedule gave the wider.
		shared := ok && n < widest[k] && widest[k] <= 2*n
		return anchor(p.Type.Shape, info[p].contigAxis(), b, wave, cfg.Warps, cfg.Lanes, max(rows[p], 1), shared)
	}
	// A spread load's 1-D tile: one element a lane, lanes then waves.
	spread := ir.Blocked([]int{1}, []int{wave}, []int{cfg.Warps}, []int{0})
	set := func(v *ir.Value, l *ir.Layout) bool {
		if v.Type.Rank() == 0 || v.Type.Layout != nil || l == nil {
			return false
		}
		if l.Rank() != v.Type.Rank() {
			panic(fmt.Sprintf("BUG: layout %v for %v", l, v.LongString()))
		}
		v.Type.Layout = l
		return true
	}
	var all []*ir.Value
	f.Walk(func(v *ir.Value) { all = append(all, v) })

	// Forward from loads, backward to index computations, until nothing changes.
	for changed := true; changed; {
		changed = false
		for _, v := range all {
			if v.Op == ir.OpUnstage {
				// Read from LDS as a load of its shape reads memory: 16 bytes
				// a lane along the rows, and rows a lane where it is transposed.
				changed = set(v, anchor(v.Type.Shape, 1, max(v.Type.DType.Bytes(), 1), wave, cfg.Warps, cfg.Lanes, max(rows[v], 1), false)) || changed
				continue
			}
			if l := forward(v, anchorOf, spread); l != nil {
				changed = set(v, l) || changed
			}
		}
		for _, v := range all {
			if !isAccess(v) {
				continue
			}
			p, x := v.Ptr(), v.Data()
			if p.Type.Rank() == 0 || p.Type.Layout != nil || x.Type.Layout == nil {
				continue // scalar, decided, or not yet known: a later round
			}
			l := x.Type.Layout
			if l.Order[0] != l.BaseDim(info[p].contigAxis()) {
				l = anchorOf(p, x.Type.DType)
			}
			changed = set(p, l) || changed
		}
		for i := len(all) - 1; i >= 0; i-- {
			v := all[i]
			l := v.Type.Layout
			if l == nil && !isAccess(v) && v.Op != ir.OpYield {
				continue
			}
			for j, a := range v.Args {
				if !derived(a) {
					changed = set(a, backward(v, j, l)) || changed
				}
			}
			if v.Op == ir.OpLoopVar && v.Index() > 0 {
				changed = set(v.Loop().Args[2+v.Index()], l) || changed
			}
		}
		if !changed {
			// Last resort: anchor layouts for tiles nothing decided.
			for _, v := range all {
				if v.Type.Rank() > 0 && v.Type.Layout == nil && v.Op.HasResult() && !derived(v) {
					contig := v.Type.Rank() - 1
					changed = set(v, anchor(v.Type.Shape, contig, max(v.Type.DType.Bytes(), 1), wave, cfg.Warps, cfg.Lanes, 1, false)) || changed
					break
				}
			}
		}
	}
	insertConverts(f)
	return nil
}

// A layoutRule is how an op's layout relates to its operands'. A nil
// function is the elementwise rule: one layout for the result and every
// tile operand (ops that are not elementwise then have none).
type layoutRule struct {
	// derived: the layout follows from the operand's alone, so that
	// users never choose it.
	derived bool
	// forward is the layout v takes from its operands, or nil.
	forward func(v *ir.Value, anchorOf func(*ir.Value, ir.DType) *ir.Layout, spread *ir.Layout) *ir.Layout
	// backward is the layout v wants for operand j, given its own l.
	backward func(v *ir.Value, j int, l *ir.Layout) *ir.Layout
	// need is the layout operand j must have (nil: any); nil here is
	// backward's rule at v's own layout.
	need func(v *ir.Value, j int) *ir.Layout
}

// layoutRules: a reduction's layout is the slice of its operand's, a
// load's (and a stage's) its pointer's anchor (or the spread layout), an
// atomic's its pointer's, a loop result's the layout its value is carried
// in, an unstage's the anchor of its shape.
var layoutRules = ir.Rules[layoutRule]{
	ir.OpStage: {derived: true, forward: func(v *ir.Value, anchorOf func(*ir.Value, ir.DType) *ir.Layout, _ *ir.Layout) *ir.Layout {
		return anchorOf(v.Ptr(), v.Type.DType)
	}},
	ir.OpLoad: {derived: true, forward: func(v *ir.Value, anchorOf func(*ir.Value, ir.DType) *ir.Layout, spread *ir.Layout) *ir.Layout {
		if v.Mem().Spread {
			return spread
		}
		return anchorOf(v.Ptr(), v.Type.DType)
	}},
	ir.OpAtomic: {derived: true, forward: func(v *ir.Value, _ func(*ir.Value, ir.DType) *ir.Layout, _ *ir.Layout) *ir.Layout {
		return v.Ptr().Type.Layout // its old values come back where it accesses memory
	}, backward: pointers},
	ir.OpStore: {backward: pointers},
	ir.OpReduce: {derived: true, forward: func(v *ir.Value, _ func(*ir.Value, ir.DType) *ir.Layout, _ *ir.Layout) *ir.Layout {
		if l := v.Args[0].Type.Layout; l != nil {
			return l.Slice(v.Reduction().Axis)
		}
		return nil
	}, backward: noLayout},
	ir.OpExpandDims: {forward: func(v *ir.Value, _ func(*ir.Value, ir.DType) *ir.Layout, _ *ir.Layout) *ir.Layout {
		if l := v.Args[0].Type.Layout; l != nil {
			if e, ok := l.Expand(v.Axis()); ok {
				return e
			}
		}
		return nil
	}, backward: func(v *ir.Value, _ int, l *ir.Layout) *ir.Layout { return l.Slice(v.Axis()) }},
	ir.OpTrans: {forward: func(v *ir.Value, _ func(*ir.Value, ir.DType) *ir.Layout, _ *ir.Layout) *ir.Layout {
		if l := v.Args[0].Type.Layout; l != nil {
			return l.Trans()
		}
		return nil
	}, backward: func(_ *ir.Value, _ int, l *ir.Layout) *ir.Layout { return l.Trans() }},
	ir.OpBroadcast: {forward: operandsLayout, backward: ownLayout},
	ir.OpRotate:    {forward: operandsLayout, backward: ownLayout},
	ir.OpForResult: {derived: true, forward: func(v *ir.Value, _ func(*ir.Value, ir.DType) *ir.Layout, _ *ir.Layout) *ir.Layout {
		_, carried := v.Args[0].ForVars()
		return carried[v.Index()].Type.Layout
	}, backward: noLayout},
	ir.OpLoopVar: {forward: func(v *ir.Value, _ func(*ir.Value, ir.DType) *ir.Layout, _ *ir.Layout) *ir.Layout {
		if v.Index() == 0 {
			return nil
		}
		loop := v.Loop()
		if l := loop.Args[2+v.Index()].Type.Layout; l != nil {
			return l
		}
		return loop.Yield().Args[v.Index()-1].Type.Layout
	}},
	ir.OpYield: {backward: func(v *ir.Value, j int, _ *ir.Layout) *ir.Layout {
		_, carried := v.Block.Parent.ForVars()
		return carried[j].Type.Layout
	}},
	ir.OpFor: {backward: noLayout, need: func(v *ir.Value, j int) *ir.Layout {
		if j >= 3 {
			return v.Body.Vars[j-2].Type.Layout
		}
		return nil
	}},
	ir.OpUnstage: {derived: true, backward: noLayout},
	ir.OpArange:  {forward: noForward},
	ir.OpSplat:   {forward: noForward, backward: noLayout},
	ir.OpIf:      {backward: noLayout},
	ir.OpConvert: {need: func(*ir.Value, int) *ir.Layout { return nil }},
}

func pointers(v *ir.Value, _ int, _ *ir.Layout) *ir.Layout  { return v.Ptr().Type.Layout }
func noLayout(*ir.Value, int, *ir.Layout) *ir.Layout        { return nil }
func ownLayout(_ *ir.Value, _ int, l *ir.Layout) *ir.Layout { return l }
func noForward(*ir.Value, func(*ir.Value, ir.DType) *ir.Layout, *ir.Layout) *ir.Layout {
	return nil
}
func operandsLayout(v *ir.Value, _ func(*ir.Value, ir.DType) *ir.Layout, _ *ir.Layout) *ir.Layout {
	return v.Args[0].Type.Layout
}

// derived reports whether v's layout follows from its operand's alone.
func derived(v *ir.Value) bool { return layoutRules.Of(v.Op).derived }

// forward is the layout v takes from its operands, or nil.
func forward(v *ir.Value, anchorOf func(*ir.Value, ir.DType) *ir.Layout, spread *ir.Layout) *ir.Layout {
	if v.Type.Rank() == 0 {
		return nil
	}
	if r := layoutRules.Of(v.Op).forward; r != nil {
		return r(v, anchorOf, spread)
	}
	if v.Op.IsElementwise() {
		for _, a := range v.Args {
			if a.Type.Rank() > 0 && a.Type.Layout != nil {
				return a.Type.Layout
			}
		}
	}
	return nil
}

// backward is the layout v wants for operand j, given its own layout l.
func backward(v *ir.Value, j int, l *ir.Layout) *ir.Layout {
	if r := layoutRules.Of(v.Op).backward; r != nil {
		return r(v, j, l)
	}
	if v.Op.IsElementwise() {
		return l
	}
	return nil
}

// need is the layout operand j of v must have (nil: any).
func need(v *ir.Value, j int) *ir.Layout {
	if r := layoutRules.Of(v.Op).need; r != nil {
		return r(v, j)
	}
	if layoutRules.Of(v.Op).backward == nil && v.Op.IsElementwise() && v.Type.Rank() == 0 && len(v.Args) > 0 {
		return v.Args[0].Type.Layout
	}
	return backward(v, j, v.Type.Layout)
}

// insertConverts fixes every operand whose layout is not the one its user
// needs: index arithmetic (a function of aranges, scalars and constants) is
// recomputed in the needed layout, which costs a few instructions; anything
// else goes through LDS in a convert.
func insertConverts(f *ir.Func) {
	var fix func(b *ir.Block)
	fix = func(b *ir.Block) {
		for i := 0; i < len(b.Values); i++ {
			v := b.Values[i]
			if v.Body != nil {
				fix(v.Body)
			}
			for j, a := range v.Args {
				if a.Type.Rank() == 0 {
					continue
				}
				want := need(v, j)
				if want == nil || ir.Equivalent(a.Type.Layout, want, a.Type.Shape, f.Threads) {
					continue
				}
				if recomputable(a) {
					var made []*ir.Value
					v.Args[j] = recompute(f, a, want, &made)
					for _, m := range made {
						b.Insert(i, m)
						i++
					}
					continue
				}
				if c := rebroadcast(f, a, want); c != nil {
					// A row or column broadcast into a tile: the vector goes
					// into the wanted layout (usually as it is), not the tile.
					for _, m := range c {
						b.Insert(i, m)
						i++
					}
					v.Args[j] = c[len(c)-1]
					continue
				}
				c := f.NewValue(ir.OpConvert, ir.Type{Shape: a.Type.Shape, DType: a.Type.DType, Layout: want}, nil, a)
				c.Pos, c.Name = v.Pos, a.Name
				b.Insert(i, c)
				i++
				v.Args[j] = c
			}
		}
	}
	fix(f.Entry)
}

// rebroadcast is broadcast a (of expand_dims of a vector x) remade in
// layout l, x converted only where its own layout differs from l's slice:
// the values to insert, the new broadcast last; nil if a is no such
// broadcast.
func rebroadcast(f *ir.Func, a *ir.Value, l *ir.Layout) []*ir.Value {
	if a.Op != ir.OpBroadcast || a.Args[0].Op != ir.OpExpandDims {
		return nil
	}
	e := a.Args[0]
	x := e.Args[0]
	var made []*ir.Value
	if want := l.Slice(e.Axis()); !ir.Equivalent(x.Type.Layout, want, x.Type.Shape, f.Threads) {
		c := f.NewValue(ir.OpConvert, ir.Type{Shape: x.Type.Shape, DType: x.Type.DType, Layout: want}, nil, x)
		c.Pos, c.Name = a.Pos, x.Name
		made = append(made, c)
		x = c
	}
	ne := f.NewValue(ir.OpExpandDims, ir.Type{Shape: e.Type.Shape, DType: e.Type.DType, Layout: l}, e.Attr, x)
	ne.Pos, ne.Name = e.Pos, e.Name
	nb := f.NewValue(ir.OpBroadcast, ir.Type{Shape: a.Type.Shape, DType: a.Type.DType, Layout: l}, a.Attr, ne)
	nb.Pos, nb.Name = a.Pos, a.Name
	return append(made, ne, nb)
}

// recomputable reports whether tile v is index arithmetic: made only of
// aranges, splats of scalars and cheap elementwise ops on them, so that a
// copy in another layout costs less than an LDS round trip.
func recomputable(v *ir.Value) bool {
	if v.Type.Rank() == 0 {
		return true
	}
	switch indexOps.Of(v.Op) {
	case indexSource:
		return true
	case indexArith:
		if !v.Type.DType.IsInt() && v.Type.DType != ir.Bool && v.Type.DType.K != ir.KPtr {
			return false
		}
		for _, a := range v.Args {
			if !recomputable(a) {
				return false
			}
		}
		return true
	}
	return false
}

// What recomputable makes of an op: an index source, cheap arithmetic
// (recomputable where its operands are, in integers, bools or pointers),
// or neither.
const (
	notIndex = iota
	indexSource
	indexArith
)

var indexOps = ir.Rules[uint8]{
	ir.OpArange: indexSource, ir.OpSplat: indexSource,

	ir.OpExpandDims: indexArith, ir.OpBroadcast: indexArith, ir.OpPtrAdd: indexArith, ir.OpCast: indexArith,
	ir.OpWhere: indexArith, ir.OpAssume: indexArith,
	ir.OpAdd: indexArith, ir.OpSub: indexArith, ir.OpMul: indexArith, ir.OpDiv: indexArith, ir.OpRem: indexArith,
	ir.OpAnd: indexArith, ir.OpOr: indexArith, ir.OpXor: indexArith, ir.OpShl: indexArith, ir.OpShr: indexArith,
	ir.OpShrU: indexArith, ir.OpMin: indexArith, ir.OpMax: indexArith,
	ir.OpLt: indexArith, ir.OpLe: indexArith, ir.OpGt: indexArith, ir.OpGe: indexArith, ir.OpEq: indexArith, ir.OpNe: indexArith,
}

// recompute copies index arithmetic v into layout l; the new values, in
// order, go to made.
func recompute(f *ir.Func, v *ir.Value, l *ir.Layout, made *[]*ir.Value) *ir.Value {
	if v.Type.Rank() == 0 {
		return v
	}
	if ir.Equivalent(v.Type.Layout, l, v.Type.Shape, f.Threads) {
		return v
	}
	c := f.NewValue(v.Op, ir.Type{Shape: v.Type.Shape, DType: v.Type.DType, Layout: l}, v.Attr)
	c.Pos, c.Name = v.Pos, v.Name
	for j, a := range v.Args {
		al := backward(v, j, l)
		if a.Type.Rank() == 0 || al == nil {
			c.Args = append(c.Args, a)
		} else {
			c.Args = append(c.Args, recompute(f, a, al, made))
		}
	}
	*made = append(*made, c)
	return c
}
