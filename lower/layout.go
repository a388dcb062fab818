package lower

import (
	"fmt"

	"github.com/fp8gen/fp8gen/ir"
)

// anchor is the layout a global access of a tile of the given shape wants:
// each lane holds 16 bytes (or the whole extent) contiguously along the
// contiguous axis, a wave's lanes run along that axis first, and waves are
// spread over the other axis first, so that a wave touches whole rows of
// consecutive bytes.
func anchor(shape []int, contig, elemBytes, wave, warps int) *ir.Layout {
	r := len(shape)
	if r == 1 {
		spt := min(max(16/elemBytes, 1), shape[0])
		return ir.Blocked([]int{spt}, []int{wave}, []int{warps}, []int{0})
	}
	o := 1 - contig
	spt, tpw, wpb := make([]int, 2), make([]int, 2), make([]int, 2)
	spt[contig] = min(max(16/elemBytes, 1), shape[contig])
	spt[o] = 1
	tpw[contig] = min(wave, shape[contig]/spt[contig])
	tpw[o] = wave / tpw[contig]
	rest := max(shape[o]/(spt[o]*tpw[o]), 1)
	wpb[o] = min(warps, rest)
	wpb[contig] = warps / wpb[o]
	return ir.Blocked(spt, tpw, wpb, []int{contig, o})
}

// assignLayout gives every tile a layout. Loads take the anchor layout of
// their pointers; layouts flow forward from loads through the data path
// (reductions slice, expand_dims and broadcasts keep the base, trans
// transposes); a store keeps its value's layout when that is coalesced along
// the pointer's contiguous axis, and takes its anchor otherwise; index
// computations then take, backward, the layouts their users need; what is
// left gets a default. Where an operand's layout differs from what its user
// needs, a convert is inserted: the one place LDS traffic is introduced.
func assignLayout(f *ir.Func, cfg *Config) error {
	info := analyze(f, cfg)
	wave := f.Target.WaveSize
	anchorOf := func(p *ir.Value, elem ir.DType) *ir.Layout {
		return anchor(p.Type.Shape, info[p].contigAxis(), elem.Bytes(), wave, cfg.Warps)
	}
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
			if l := forward(v, anchorOf); l != nil {
				changed = set(v, l) || changed
			}
		}
		for _, v := range all {
			if v.Op == ir.OpStore || v.Op == ir.OpAtomicMax || v.Op == ir.OpAtomicAdd {
				p, x := v.Args[0], v.Args[1]
				if p.Type.Rank() == 0 || p.Type.Layout != nil {
					continue
				}
				if x.Type.Layout == nil {
					continue // not yet known: decided on a later round
				}
				want := anchorOf(p, x.Type.DType)
				l := x.Type.Layout
				if l.Order[0] != l.BaseDim(info[p].contigAxis()) {
					l = want
				}
				changed = set(p, l) || changed
			}
		}
		for i := len(all) - 1; i >= 0; i-- {
			v := all[i]
			l := v.Type.Layout
			if l == nil && v.Op != ir.OpStore && v.Op != ir.OpAtomicMax && v.Op != ir.OpAtomicAdd && v.Op != ir.OpYield {
				continue
			}
			for j, a := range v.Args {
				changed = set(a, backward(v, j, l)) || changed
			}
			if v.Op == ir.OpLoopVar && v.Aux > 0 {
				loop := v.Block.Parent
				changed = set(loop.Args[2+v.Aux], l) || changed
			}
		}
		if !changed {
			// Last resort: anchor layouts for tiles nothing decided.
			for _, v := range all {
				if v.Type.Rank() > 0 && v.Type.Layout == nil && v.Op != ir.OpStore {
					contig := v.Type.Rank() - 1
					changed = set(v, anchor(v.Type.Shape, contig, max(v.Type.DType.Bytes(), 1), wave, cfg.Warps)) || changed
					break
				}
			}
		}
	}
	return insertConverts(f, cfg)
}

// forward is the layout v takes from its operands, or nil.
func forward(v *ir.Value, anchorOf func(*ir.Value, ir.DType) *ir.Layout) *ir.Layout {
	if v.Type.Rank() == 0 {
		return nil
	}
	first := func() *ir.Layout {
		for _, a := range v.Args {
			if a.Type.Rank() > 0 && a.Type.Layout != nil {
				return a.Type.Layout
			}
		}
		return nil
	}
	switch v.Op {
	case ir.OpLoad:
		return anchorOf(v.Args[0], v.Type.DType)
	case ir.OpReduce:
		if l := v.Args[0].Type.Layout; l != nil {
			return l.Slice(int(v.Aux))
		}
	case ir.OpExpandDims:
		if l := v.Args[0].Type.Layout; l != nil {
			if e, ok := l.Expand(int(v.Aux)); ok {
				return e
			}
		}
	case ir.OpTrans:
		if l := v.Args[0].Type.Layout; l != nil {
			return l.Trans()
		}
	case ir.OpForResult:
		return v.Args[0].Body.Vars[1+v.Aux].Type.Layout
	case ir.OpLoopVar:
		if v.Aux > 0 {
			loop := v.Block.Parent
			if l := loop.Args[2+v.Aux].Type.Layout; l != nil {
				return l
			}
			body := loop.Body.Values
			return body[len(body)-1].Args[v.Aux-1].Type.Layout
		}
	case ir.OpArange, ir.OpSplat:
		return nil
	default:
		if v.Op.IsElementwise() || v.Op == ir.OpBroadcast {
			return first()
		}
	}
	return nil
}

// backward is the layout v wants for operand j, given its own layout l.
func backward(v *ir.Value, j int, l *ir.Layout) *ir.Layout {
	switch v.Op {
	case ir.OpStore, ir.OpAtomicMax, ir.OpAtomicAdd:
		return v.Args[0].Type.Layout
	case ir.OpYield:
		loop := v.Block.Parent
		return loop.Body.Vars[j+1].Type.Layout
	case ir.OpReduce, ir.OpSplat, ir.OpFor, ir.OpForResult:
		return nil
	case ir.OpExpandDims:
		return l.Slice(int(v.Aux))
	case ir.OpTrans:
		return l.Trans()
	case ir.OpBroadcast:
		return l
	}
	if v.Op.IsElementwise() {
		return l
	}
	return nil
}

// insertConverts puts a convert before every operand whose layout is not the
// one its user needs.
func insertConverts(f *ir.Func, cfg *Config) error {
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
				c := f.NewValue(ir.OpConvert, ir.Type{Shape: a.Type.Shape, DType: a.Type.DType, Layout: want}, a)
				c.Pos = v.Pos
				b.Insert(i, c)
				i++
				v.Args[j] = c
			}
		}
	}
	fix(f.Entry)
	return nil
}

// need is the layout operand j of v must have.
func need(v *ir.Value, j int) *ir.Layout {
	l := v.Type.Layout
	switch v.Op {
	case ir.OpStore, ir.OpAtomicMax, ir.OpAtomicAdd:
		return v.Args[0].Type.Layout
	case ir.OpYield:
		return v.Block.Parent.Body.Vars[j+1].Type.Layout
	case ir.OpFor:
		if j >= 3 {
			return v.Body.Vars[j-2].Type.Layout
		}
		return nil
	case ir.OpExpandDims:
		return l.Slice(int(v.Aux))
	case ir.OpTrans:
		return l.Trans()
	case ir.OpBroadcast:
		return l
	case ir.OpReduce, ir.OpSplat, ir.OpForResult, ir.OpConvert:
		return nil
	}
	if v.Op.IsElementwise() {
		if v.Type.Rank() == 0 && len(v.Args) > 0 {
			return v.Args[0].Type.Layout
		}
		return l
	}
	return nil
}
