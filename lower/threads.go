package lower

import (
	"github.com/fp8gen/fp8gen/ir"
)

// regMaps sets, for ops that only relabel registers, which source register
// each result register copies. The maps do not depend on the lane: a layout
// places coordinate c in the same register of every lane that holds it. They
// go through tile coordinates, not register coordinates, because the source
// may carry another layout that places the elements alike (insertConverts
// lets equivalent layouts meet without a convert).
func regMaps(f *ir.Func, _ *Config) error {
	f.Walk(func(v *ir.Value) {
		switch v.Op {
		case ir.OpBroadcast, ir.OpExpandDims, ir.OpTrans:
		default:
			return
		}
		t, s := v.Type, v.Args[0].Type
		n := t.Layout.Regs(t.Shape)
		v.Map = make([]int, n)
		for r := 0; r < n; r++ {
			c, _ := t.Layout.Elem(t.Shape, 0, r)
			var src []int
			switch v.Op {
			case ir.OpBroadcast:
				for a, e := range s.Shape {
					if e == 1 {
						c[a] = 0
					}
				}
				src = c
			case ir.OpTrans:
				src = []int{c[1], c[0]}
			case ir.OpExpandDims:
				src = append(append([]int(nil), c[:v.Aux]...), c[v.Aux+1:]...)
			}
			v.Map[r] = s.Layout.RegOf(s.Shape, src)
		}
	})
	return nil
}

// lowerReduce expands reduce x [axis] into
//
//	a = reduce_lanes x     each lane folds its registers along axis
//	b = reduce_wave a      butterfly shuffles over the lanes along axis (if any)
//	c = reduce_waves b     wave partials through LDS (if waves lie along axis)
//
// all in the sliced layout of x. A result whose layout users set otherwise
// is converted after.
func lowerReduce(f *ir.Func, _ *Config) error {
	var visit func(b *ir.Block)
	visit = func(b *ir.Block) {
		for i := 0; i < len(b.Values); i++ {
			v := b.Values[i]
			if v.Body != nil {
				visit(v.Body)
			}
			if v.Op != ir.OpReduce {
				continue
			}
			x := v.Args[0]
			l := x.Type.Layout
			axis := int(v.Aux)
			d := l.BaseDim(axis)
			sl := l.Slice(axis)
			// Rank-0 results keep the sliced layout too: it records the lanes
			// and waves the steps reduce across.
			t := ir.Type{Shape: v.Type.Shape, DType: v.Type.DType, Layout: sl}
			step := func(op ir.Op, arg *ir.Value) *ir.Value {
				s := f.NewValue(op, t, arg)
				s.Aux, s.Red, s.Pos = v.Aux, v.Red, v.Pos
				b.Insert(i, s)
				i++
				return s
			}
			cur := step(ir.OpReduceLanes, x)
			if l.TPW[d] > 1 {
				cur = step(ir.OpReduceWave, cur)
			}
			if l.WPB[d] > 1 {
				cur = step(ir.OpReduceWaves, cur)
			}
			// The reduce itself becomes a copy in the layout its users want.
			if v.Type.Layout == nil || ir.Equivalent(sl, v.Type.Layout, v.Type.Shape, f.Threads) {
				replace(f, v, cur)
				b.Values = append(b.Values[:i], b.Values[i+1:]...)
				i--
			} else {
				v.Op, v.Args, v.Aux = ir.OpConvert, []*ir.Value{cur}, 0
			}
		}
	}
	visit(f.Entry)
	return nil
}

// replace points every use of old at nu.
func replace(f *ir.Func, old, nu *ir.Value) {
	f.Walk(func(v *ir.Value) {
		for i, a := range v.Args {
			if a == old {
				v.Args[i] = nu
			}
		}
	})
}

// lowerConvert turns convert x into a round trip through LDS:
//
//	lds_store x   [offset pitch]   each lane writes the elements it owns
//	barrier
//	v = lds_load  [offset pitch]   each lane reads the elements it needs
//	barrier                        so the buffer may be written again
//
// Rows of a 2-D buffer are padded by 4 bytes, so that a row is an odd number
// of words long: lanes that walk down a column (the transposing write) fall
// in different banks, and lanes reading words along rows do too. That keeps
// vector LDS accesses to one word (see ldsVec).
func lowerConvert(f *ir.Func, _ *Config) error {
	var visit func(b *ir.Block)
	visit = func(b *ir.Block) {
		for i := 0; i < len(b.Values); i++ {
			v := b.Values[i]
			if v.Body != nil {
				visit(v.Body)
			}
			if v.Op != ir.OpConvert {
				continue
			}
			x := v.Args[0]
			pitch := x.Type.Shape[len(x.Type.Shape)-1]
			if x.Type.Rank() == 2 {
				pitch += max(4/x.Type.DType.Bytes(), 1)
			}
			st := f.NewValue(ir.OpLDSStore, ir.Type{}, x)
			st.Pitch, st.Pos, st.Vec = pitch, v.Pos, ldsVec(x.Type)
			b.Insert(i, st)
			b.Insert(i+1, barrier(f, v.Pos))
			v.Op, v.Args, v.Pitch, v.Vec = ir.OpLDSLoad, nil, pitch, ldsVec(v.Type)
			b.Insert(i+3, barrier(f, v.Pos))
			i += 3
		}
	}
	visit(f.Entry)
	return nil
}

// ldsVec is how many consecutive elements a lane can move to or from LDS at
// once: those it holds along the last axis, which is contiguous in the
// buffer, up to one word (the row pitch keeps rows word-aligned, not more).
func ldsVec(t ir.Type) int {
	l := t.Layout
	last := t.Rank() - 1
	if last < 0 || l.Order[0] != l.BaseDim(last) {
		return 1
	}
	_, spt, _, _, _ := l.Geometry(t.Shape)
	return max(1, min(spt[l.BaseDim(last)], 4/t.DType.Bytes(), t.Shape[last]))
}

func barrier(f *ir.Func, p ir.Pos) *ir.Value {
	v := f.NewValue(ir.OpBarrier, ir.Type{})
	v.Pos = p
	return v
}

// vectorize sets the vector width of global loads and stores: as many
// consecutive elements as a lane holds along the contiguous axis, the
// pointer's runs allow, alignment guarantees, and 16 bytes hold.
func vectorize(f *ir.Func, cfg *Config) error {
	info := analyze(f, cfg)
	f.Walk(func(v *ir.Value) {
		if v.Op != ir.OpLoad && v.Op != ir.OpStore {
			return
		}
		p := v.Args[0]
		v.Vec = 1
		if p.Type.Rank() == 0 {
			return
		}
		l := p.Type.Layout
		a := info[p]
		ax := a.contigAxis()
		d := l.BaseDim(ax)
		if l.Order[0] != d {
			return
		}
		elem := p.Type.DType.Elem().Bytes()
		vec := min(l.SPT[d], p.Type.Shape[ax], a.contig[ax], a.div, 16/elem)
		for vec&(vec-1) != 0 {
			vec--
		}
		v.Vec = max(vec, 1)
		// A mask constant over each vector lets one test guard the whole
		// access: no per-element fallback (Triton's predicated vectors).
		mask := v.Args[1]
		if v.Op == ir.OpStore {
			mask = v.Args[2]
		}
		v.UniformMask = v.Vec > 1 && info[mask].constant[ax] >= v.Vec
	})
	return nil
}

// allocLDS sizes the LDS the kernel needs. Every LDS round trip is fenced
// by barriers on both sides, so all of them can start at offset 0 and the
// kernel needs the largest one.
func allocLDS(f *ir.Func, _ *Config) error {
	need := 0
	f.Walk(func(v *ir.Value) {
		switch v.Op {
		case ir.OpLDSStore:
			t := v.Args[0].Type
			rows := 1
			if t.Rank() == 2 {
				rows = t.Shape[0]
			}
			need = max(need, rows*v.Pitch*t.DType.Bytes())
		case ir.OpReduceWaves:
			x := v.Args[0].Type
			need = max(need, ReducedWaves(x.Layout)*x.Elems()*x.DType.Bytes())
		}
	})
	f.LDSBytes = need
	return nil
}

// ReducedDim is the base dim the last reduction of a sliced layout folded.
func ReducedDim(l *ir.Layout) int { return l.Drop[len(l.Drop)-1] }

// ReducedWaves is the number of waves along the reduced dim.
func ReducedWaves(l *ir.Layout) int { return l.WPB[ReducedDim(l)] }
