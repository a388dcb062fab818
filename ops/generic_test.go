package ops

import (
	"testing"

	"github.com/fp8gen/fp8gen/expr"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/schedule"
	"github.com/fp8gen/fp8gen/target"
)

// expertOp is an op the casts do not exercise: rank-3 and rank-4 tensors,
// i32, i64 and f32 of several roles, a third grid axis. Per expert e:
// out[e, n] = max over k of |w[e, k, n]| + bias[n] (i32), and
// rows[e] = its initial 5 + Σ_n out[e, n] (i64 scratch); x4 [E, 2, K, N] f32 is read and
// copied into y4 doubled.
var expertOp = &Op{
	Name:  "expert_test",
	Doc:   "a test op of rank-3 and rank-4 tensors",
	Sizes: []string{"E", "K", "N"},
	Tensors: []Arg{
		{Name: "w", DType: "i32", Shape: []expr.Expr{e("E"), e("K"), e("N")}, Role: Input},
		{Name: "bias", DType: "i32", Shape: []expr.Expr{e("N")}, Role: Input},
		{Name: "x4", DType: "f32", Shape: []expr.Expr{e("E"), e("2"), e("K"), e("N")}, Role: Input},
		{Name: "out", DType: "i32", Shape: []expr.Expr{e("E"), e("N")}, Role: Output},
		{Name: "y4", DType: "f32", Shape: []expr.Expr{e("E"), e("2"), e("K"), e("N")}, Role: Output},
		{Name: "rows", DType: "i64", Shape: []expr.Expr{e("E")}, Role: Scratch, Init: 5},
	},
	Kernels:    []*Kernel{{Name: "expert_test", Build: expertKernel, Grid: [3]expr.Expr{e("1"), e("1"), e("E")}}},
	Knobs:      []schedule.Knob{warpsKnob},
	Candidates: func() []Candidate { return []Candidate{{{"WARPS", e("2")}}} },
	Ceiling:    e("100"),
	Tests:      Tests{Shapes: []Shape{{"E": 3, "K": 5, "N": 70}}, Odd: Shape{"E": 3, "K": 5, "N": 70}, Wide: Shape{"E": 1 << 20, "K": 1 << 10, "N": 2}},
	Reference: func(c *Call, in map[string]*Tensor) map[string]*Tensor {
		ne, k, n := c.Size("E"), c.Size("K"), c.Size("N")
		out := Tensors(c.SpecsOf(Output, Scratch))
		w, bias, x4 := in["w"].Ints(), in["bias"].Ints(), in["x4"].Floats()
		for ei := 0; ei < ne; ei++ {
			for j := 0; j < n; j++ {
				m := int64(0)
				for i := 0; i < k; i++ {
					m = max(m, w[(ei*k+i)*n+j], -w[(ei*k+i)*n+j])
				}
				out["out"].SetBits(ei*n+j, uint64(m+bias[j]))
				out["rows"].SetBits(ei, out["rows"].Bits(ei)+uint64(m+bias[j]))
			}
		}
		for i, v := range x4 {
			out["y4"].Set(i, float64(v*2))
		}
		return out
	},
}

func expertKernel(b *ir.Builder, c *Call) {
	w := b.Param("w", ir.I32)
	bias := b.Param("bias", ir.I32)
	x4 := b.Param("x4", ir.F32)
	out := b.Param("out", ir.I32)
	y4 := b.Param("y4", ir.F32)
	rows := b.Param("rows", ir.I64)
	k, n := b.Size("K"), b.Size("N")
	ei := b.ProgramID(2)
	cols := b.Arange(128) // N ≤ 128: one program an expert
	cm := b.Lt(cols, n)
	acc := b.For(0, k, 1, []*ir.Value{b.Full(ir.I32, 0, 128)}, func(i *ir.Value, acc []*ir.Value) []*ir.Value {
		offs := b.Add(b.Mul(b.Add(b.Mul(ei, k), i), n), cols)
		v := b.Load(b.PtrAdd(w, offs), cm, nil)
		for j := 0; j < 2; j++ { // x4[e, j, i, :] doubled
			o4 := b.Add(b.Mul(b.Add(b.Mul(b.Add(b.Mul(ei, 2), j), k), i), n), cols)
			b.Store(b.PtrAdd(y4, o4), b.Mul(b.Load(b.PtrAdd(x4, o4), cm, nil), 2.0), cm)
		}
		return []*ir.Value{b.Max(acc[0], b.Abs(v))}
	})
	m := b.Add(acc[0], b.Load(b.PtrAdd(bias, cols), cm, nil))
	b.Store(b.PtrAdd(out, b.Add(b.Mul(ei, n), cols)), m, cm)
	rp := b.PtrAdd(rows, ei)
	b.Store(rp, b.Add(b.Load(rp, nil, nil), b.Reduce(b.Cast(m, ir.I64), 0, ir.RSum)), nil)
}

func TestGenericOp(t *testing.T) {
	if err := expertOp.check(); err != nil {
		t.Fatal(err)
	}
	tg, _ := target.Lookup("gfx942")
	sh := Shape{"E": 3, "K": 5, "N": 70}
	p, err := expertOp.NewPlan(tg, sh, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ranks := map[string]int{}
	for _, s := range p.Specs() {
		ranks[s.Name] = len(s.Shape)
	}
	if ranks["w"] != 3 || ranks["x4"] != 4 || ranks["bias"] != 1 || ranks["out"] != 2 {
		t.Errorf("ranks %v", ranks)
	}
	in := Inputs(p.Call, 4, true)
	if len(in) != 3 || in["w"].DType != ir.I32 || in["x4"].DType != ir.F32 {
		t.Fatalf("inputs %v", in)
	}
	compare(t, expertOp.Reference(p.Call, in), runInterp(t, p, in))
	if got := p.IdealBytes(); got != 4*(3*5*70+70+2*3*2*5*70+3*70) {
		t.Errorf("ideal bytes %d", got)
	}
}
