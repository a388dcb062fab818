package lower

import "github.com/fp8gen/fp8gen/ir"

// vectorize sets the vector width of global loads and stores: as many
// consecutive elements as a lane holds along the contiguous axis, the
// pointer's runs allow, alignment guarantees, and 16 bytes hold. Where the
// mask is provably constant over each vector, one mask bit guards the whole
// access (Triton's predicated vectors); where it holds on one interval of
// each vector, its two end bits tell whether the whole vector moves. The
// interpreter checks both claims. A store whose run is longer than its
// alignment allows (a transposed fp8 output with T not a multiple of 16:
// qt's rows start off the vector's grid) takes the whole run, Unaligned,
// and moves in aligned pieces. A stage's copy is vectorized as a load.
func vectorize(f *ir.Func, cfg *Config) error {
	info := analyze(f, cfg)
	f.Walk(func(v *ir.Value) {
		if v.Op != ir.OpLoad && v.Op != ir.OpStore && v.Op != ir.OpStage {
			return
		}
		m := v.Mem()
		m.Vec, m.Uniform, m.Ends, m.Unaligned = 1, false, false, false
		p := v.Ptr()
		if p.Type.Rank() == 0 {
			return
		}
		l := p.Type.Layout
		a := info[p]
		ax := a.contigAxis()
		d := l.BaseDim(ax)
		if l.Order[0] != d || v.Op == ir.OpStage && d != l.BaseDim(1) {
			return // a stage's region is row-major: its vectors run along the rows
		}
		_, spt, _, _, _ := l.Geometry(p.Type.Shape)
		elem := p.Type.DType.Elem().Bytes()
		run := pow2Floor(min(spt[d], p.Type.Shape[ax], a.contig[ax], 16/elem))
		m.Vec = pow2Floor(min(run, a.div))
		if v.Op == ir.OpStore && run > m.Vec && elem < 4 { // 4-byte elements gain little from pieces
			m.Vec, m.Unaligned = run, true
		}
		m.Uniform = m.Vec > 1 && info[v.Mask()].constant[ax] >= m.Vec
		m.Ends = m.Vec > 1 && !m.Uniform && info[v.Mask()].convex[ax] >= m.Vec
	})
	return nil
}
