package lower

import "github.com/fp8gen/fp8gen/ir"

// vectorize sets the vector width of global loads and stores: as many
// consecutive elements as a lane holds along the contiguous axis, the
// pointer's runs allow, alignment guarantees, and 16 bytes hold. Where the
// mask is provably constant over each vector, one mask bit guards the whole
// access (Triton's predicated vectors); where it holds on one interval of
// each vector, its two end bits tell whether the whole vector moves. The
// interpreter checks both claims.
func vectorize(f *ir.Func, cfg *Config) error {
	info := analyze(f, cfg)
	f.Walk(func(v *ir.Value) {
		if v.Op != ir.OpLoad && v.Op != ir.OpStore {
			return
		}
		m := v.Mem()
		m.Vec, m.Uniform, m.Ends = 1, false, false
		p := v.Ptr()
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
		_, spt, _, _, _ := l.Geometry(p.Type.Shape)
		elem := p.Type.DType.Elem().Bytes()
		vec := min(spt[d], p.Type.Shape[ax], a.contig[ax], a.div, 16/elem)
		m.Vec = pow2Floor(vec)
		m.Uniform = m.Vec > 1 && info[v.Mask()].constant[ax] >= m.Vec
		m.Ends = m.Vec > 1 && !m.Uniform && info[v.Mask()].convex[ax] >= m.Vec
	})
	return nil
}
