package ops

import (
	"github.com/fp8gen/fp8gen/expr"
	"github.com/fp8gen/fp8gen/internal/refnum"
	"github.com/fp8gen/fp8gen/schedule"
)

// The dual casts give an FP8 linear layer its activation in both
// orientations from one read of x for the cast: row-major q for the
// forward GEMM and transposed qt for the weight-gradient GEMM, each with
// the scales its GEMM takes. The numerics are the casts' (cast.go): the
// bits are those of the single casts run apart, which a test holds.

// dualCeiling: an amax pass and a cast pass read x (2 bytes an element
// for bf16) twice and write q and qt once: 4 ideal bytes of the 6 moved,
// unless x fits in half the L2 for the second read.
var dualCeiling = e("2 * M * K <= L2 / 2 ? 100 : 67")

// dualTests are castTests with f32 in and the default format as a
// further option set; each op adds small tiles at Odd (M=40, K=72), so
// that the loops take several trips and the tiles straddle both edges.
var dualTests = func() Tests {
	t := castTests
	t.Options = []Options{{"in": "f32", "fp8": "e5m2", "pow2": "true"}, {"in": "f32"}}
	return t
}()

// dualGoldens: an odd shape and the other end of every option.
var dualGoldens = []Variant{{Name: "odd", Shape: Shape{"M": 1000, "K": 333}}, {Name: "e5m2_f32_pow2", Options: Options{"fp8": "e5m2", "in": "f32", "pow2": "true"}}}

// refRows scales each of the m rows of x (k elements a row) by its own
// amax into q, with the amaxes and inverse scales into am and inv: rows in
// parallel.
func refRows(c *Call, x []float32, m, k int, q, inv, am []byte) {
	enc := refnum.Encoder(c.Format)
	rowsParallel(m, k, func(lo, hi, _ int) {
		for i := lo; i < hi; i++ {
			row := x[i*k : (i+1)*k]
			a := refAmax(row)
			s := refScale(a, c)
			refnum.PutF32(am, i, a)
			refnum.PutF32(inv, i, 1/s)
			for j, v := range row {
				q[i*k+j] = enc(v * s)
			}
		}
	})
}

// dualTileKnobs are the cast tile's knobs: the tile is read once and
// written twice, the transposed copy through LDS.
var dualTileKnobs = []schedule.Knob{
	warpsKnob,
	{Name: "BLOCK_M", Doc: "rows of the cast's tile", Domain: schedule.Pow2("1", "4096")},
	{Name: "BLOCK_K", Doc: "columns of the cast's tile", Domain: schedule.Pow2("1", "4096")},
}

// dualCastGrid: column blocks along axis 0, row blocks along axis 1, the
// bottom row block first (dualRowBlock).
var dualCastGrid = [3]expr.Expr{e("cdiv(K, BLOCK_K)"), e("cdiv(M, BLOCK_M)"), e("1")}

var dualGridRule = schedule.Constraint{Cond: e("cdiv(M, BLOCK_M) <= 65535"), Why: "grid axis 1 (row blocks of the cast) holds at most 65535 programs"}

var TensorwiseCastTranspose = register(&Op{
	Name: "tensorwise_cast_transpose",
	Doc: "x[M,K] → q[M,K] and qt[K,M] fp8 (the same values, transposed), inv_scale[1] f32: " +
		"one scale for the tensor (amax with relaxed atomics), then one pass that writes both",
	Sizes:   []string{"M", "K"},
	Options: castOptions,
	Tensors: []Arg{
		{Name: "x", DType: "{in}", Shape: []expr.Expr{e("M"), e("K")}, Role: Input},
		{Name: "q", DType: "fp8", Shape: []expr.Expr{e("M"), e("K")}, Role: Output},
		{Name: "qt", DType: "fp8", Shape: []expr.Expr{e("K"), e("M")}, Role: Output},
		{Name: "inv_scale", DType: "f32", Shape: []expr.Expr{e("1")}, Role: Output},
		{Name: "amax", DType: "f32", Shape: []expr.Expr{e("1")}, Role: Scratch, Init: 0, Doc: "the tensor's amax, combined by atomics"},
	},
	Kernels: []*Kernel{
		{Name: "tensorwise_amax", Build: tensorAmaxKernel, Grid: flatGrid},
		{Name: "tensorwise_cast_transpose", Build: tensorCastTransposeKernel, Grid: dualCastGrid},
	},
	Knobs: append(dualTileKnobs[:3:3],
		schedule.Knob{Name: "BLOCK", Doc: "elements per tile of the amax's persistent loop", Domain: schedule.Pow2("1", "65536")}),
	Constraints: []schedule.Constraint{tileLimit("BLOCK"), tileLimit("BLOCK_M * BLOCK_K"), dualGridRule},
	Candidates: func() []Candidate {
		return dualCandidates("BLOCK_M", Assign{"BLOCK", e("WARPS * WAVE * 16")})
	},
	Ceiling: dualCeiling,
	Example: Shape{"M": 4096, "K": 4096},
	Bench:   benchShapes,
	// What a user runs without it: tensorwise_cast for q, colwise_cast
	// for the transposed operand (whose scales are per column).
	Apart: []Part{{Op: Tensorwise}, {Op: Colwise}},
	Tests: func() Tests {
		t := dualTests
		t.Schedules = []schedule.Params{{"BLOCK_M": 16, "BLOCK_K": 32, "WARPS": 4, "BLOCK": 128}, {"BLOCK_M": 8, "BLOCK_K": 64, "WARPS": 2, "BLOCK": 64}}
		return t
	}(),
	Peers:   true,
	Goldens: dualGoldens,
	Reference: func(c *Call, in map[string]*Tensor) map[string]*Tensor {
		m, k := c.Size("M"), c.Size("K")
		x := in["x"].Floats()
		out := Tensors(c.SpecsOf(Output, Scratch))
		amax := refTensorAmax(x)
		scale := refScale(amax, c)
		enc := refnum.Encoder(c.Format)
		q, qt := out["q"].Data, out["qt"].Data
		rowsParallel(m, k, func(lo, hi, _ int) {
			for i := lo; i < hi; i++ {
				for j, v := range x[i*k : (i+1)*k] {
					b := enc(v * scale)
					q[i*k+j], qt[j*m+i] = b, b
				}
			}
		})
		refnum.PutF32(out["inv_scale"].Data, 0, 1/scale)
		refnum.PutF32(out["amax"].Data, 0, amax)
		return out
	},
	Dequantize: func(c *Call, _, out map[string]*Tensor) []float32 {
		inv := out["inv_scale"].Floats()[0]
		return dequant(out["q"], c.Format, func(int) float32 { return inv })
	},
})

var RowcolCast = register(&Op{
	Name: "rowcol_cast",
	Doc: "x[M,K] → q[M,K] fp8 with inv_scale_row[M], and qt[K,M] fp8 with inv_scale_col[K]: " +
		"one scale per row for q, one per column for qt (one amax pass forms both), then one pass that writes both",
	Sizes:   []string{"M", "K"},
	Options: castOptions,
	Tensors: []Arg{
		{Name: "x", DType: "{in}", Shape: []expr.Expr{e("M"), e("K")}, Role: Input},
		{Name: "q", DType: "fp8", Shape: []expr.Expr{e("M"), e("K")}, Role: Output},
		{Name: "inv_scale_row", DType: "f32", Shape: []expr.Expr{e("M")}, Role: Output},
		{Name: "qt", DType: "fp8", Shape: []expr.Expr{e("K"), e("M")}, Role: Output},
		{Name: "inv_scale_col", DType: "f32", Shape: []expr.Expr{e("K")}, Role: Output},
		{Name: "amax_row", DType: "f32", Shape: []expr.Expr{e("M")}, Role: Scratch, Init: 0, Doc: "each row's amax, combined by atomics"},
		{Name: "amax_col", DType: "f32", Shape: []expr.Expr{e("K")}, Role: Scratch, Init: 0, Doc: "each column's amax, combined by atomics"},
	},
	Kernels: []*Kernel{
		{Name: "rowcol_amax", Build: rowcolAmaxKernel, Grid: [3]expr.Expr{e("SPLIT"), e("cdiv(K, BLOCK_K)"), e("1")}},
		{Name: "rowcol_cast", Build: rowcolCastKernel, Grid: dualCastGrid},
	},
	Knobs: append(dualTileKnobs[:3:3],
		schedule.Knob{Name: "SPLIT", Doc: "amax programs per column block, each taking every SPLIT-th tile down M (those past the last tile only add an amax of 0)", Domain: schedule.Pow2("1", "65535")}),
	Constraints: []schedule.Constraint{
		tileLimit("BLOCK_M * BLOCK_K"), dualGridRule,
		{Cond: e("cdiv(K, BLOCK_K) <= 65535"), Why: "grid axis 1 (column blocks of the amax) holds at most 65535 programs"},
	},
	Candidates: func() []Candidate {
		return dualCandidates("BLOCK_M", Assign{"SPLIT", e("max(1, min(pow2ceil(cdiv(M, BLOCK_M)), pow2ceil(cdiv(4 * CUS, cdiv(K, BLOCK_K)))))")})
	},
	Ceiling: dualCeiling,
	Example: Shape{"M": 4096, "K": 4096},
	Bench:   benchShapes,
	Apart:   []Part{{Op: Rowwise}, {Op: Colwise}},
	Tests: func() Tests {
		t := dualTests
		t.Schedules = []schedule.Params{{"BLOCK_M": 16, "BLOCK_K": 32, "WARPS": 4, "SPLIT": 2}, {"BLOCK_M": 8, "BLOCK_K": 16, "WARPS": 1, "SPLIT": 1}}
		return t
	}(),
	Peers:   true,
	Goldens: dualGoldens,
	Reference: func(c *Call, in map[string]*Tensor) map[string]*Tensor {
		m, k := c.Size("M"), c.Size("K")
		x := in["x"].Floats()
		out := Tensors(c.SpecsOf(Output, Scratch))
		refRows(c, x, m, k, out["q"].Data, out["inv_scale_row"].Data, out["amax_row"].Data)
		// One group of every row: the grouped reference's column blocks.
		refParallel(k, func(j0, j1, _ int) {
			refColumnGroup(c, x, k, j0, j1, 0, m, m, 0, out["qt"].Data, out["inv_scale_col"].Data, out["amax_col"].Data)
		})
		return out
	},
	Dequantize: func(c *Call, _, out map[string]*Tensor) []float32 {
		inv := out["inv_scale_row"].Floats()
		k := c.Size("K")
		return dequant(out["q"], c.Format, func(i int) float32 { return inv[i/k] })
	},
})

// dualCandidates: the cast's tiles (rows × BLOCK_K) as colwise's (64 × 64 in 4 waves
// first: 128-byte row segments of bf16 to read, 64-byte rows of qt through
// LDS), then 128 × 64 in 8, 64 × 32 and 32 × 32 in 4; more is appended to
// each. Not yet timed on a GPU: the order is colwise's tune.
func dualCandidates(rows string, more ...Assign) []Candidate {
	out := columnTiles(rows, "BLOCK_K", more...)
	out[0], out[1] = out[1], out[0]
	return out
}

var GroupedRowcol = register(&Op{
	Name: "grouped_rowcol_cast",
	Doc: "x[T,K], offsets[E] (each group's end row, on the device) → q[T,K] fp8 with inv_scale_row[T] (one scale per row), " +
		"and qt[K,T] fp8 (transposed, groups side by side along T) with inv_scale_col[E,K] (one per token group and column): " +
		"one amax pass forms both, then one pass writes both",
	Sizes:   []string{"T", "K", "E"},
	Options: castOptions,
	Tensors: []Arg{
		{Name: "x", DType: "{in}", Shape: []expr.Expr{e("T"), e("K")}, Role: Input},
		{Name: "offsets", DType: "i32", Shape: []expr.Expr{e("E")}, Role: Input,
			Doc: "cumulative end row of each group: group g holds rows offsets[g-1] … offsets[g]-1 (offsets[-1] = 0), offsets[E-1] = T"},
		{Name: "q", DType: "fp8", Shape: []expr.Expr{e("T"), e("K")}, Role: Output},
		{Name: "inv_scale_row", DType: "f32", Shape: []expr.Expr{e("T")}, Role: Output},
		{Name: "qt", DType: "fp8", Shape: []expr.Expr{e("K"), e("T")}, Role: Output},
		{Name: "inv_scale_col", DType: "f32", Shape: []expr.Expr{e("E"), e("K")}, Role: Output},
		{Name: "amax_row", DType: "f32", Shape: []expr.Expr{e("T")}, Role: Scratch, Init: 0, Doc: "each row's amax, combined by atomics"},
		{Name: "amax_col", DType: "f32", Shape: []expr.Expr{e("E"), e("K")}, Role: Scratch, Init: 0, Doc: "each group's column amaxes, combined by atomics"},
		{Name: "status", DType: "i32", Shape: []expr.Expr{e("1")}, Role: Scratch, Init: 0,
			Doc: "0, or E - g for the first group g whose offsets are bad (then the outputs hold no defined values: groups may overlap or leave rows out; every access stays inside the tensors)", Status: groupStatus},
	},
	Kernels: []*Kernel{
		{Name: "grouped_rowcol_amax", Build: groupedRowcolAmaxKernel, Grid: groupedGrid},
		{Name: "grouped_rowcol_cast", Build: groupedRowcolCastKernel, Grid: groupedGrid},
	},
	Knobs: []schedule.Knob{
		warpsKnob,
		{Name: "BLOCK_T", Doc: "rows (tokens) of a tile", Domain: schedule.Pow2("1", "4096")},
		{Name: "BLOCK_K", Doc: "columns of a tile", Domain: schedule.Pow2("1", "4096")},
		{Name: "SPLIT", Doc: "programs per group and column block, each taking every SPLIT-th tile of the group's rows", Domain: schedule.Pow2("1", "1024")},
		{Name: "PREFETCH", Doc: "1: the loops over a program's tiles load the next tile of x before working on this one (twice x's registers); 0: each tile when its turn comes", Domain: schedule.Bool()},
		{Name: "ORDER", Doc: "1: the grid has a group's SPLIT programs fastest, then the column blocks, then the groups; 0: the column blocks fastest", Domain: schedule.Bool()},
	},
	Constraints: []schedule.Constraint{
		tileLimit("BLOCK_T * BLOCK_K"),
		{Cond: e("E <= 65535"), Why: "grid axis 1 (groups; 2 with ORDER=1) holds at most 65535 programs"},
		{Cond: e("ORDER == 0 || cdiv(K, BLOCK_K) <= 65535"), Why: "with ORDER=1 grid axis 1 (column blocks) holds at most 65535 programs"},
	},
	// grouped_colwise_cast's two-pass tiles (its first candidates), with
	// the group's programs fastest and the next tile prefetched.
	Candidates: func() []Candidate {
		split := Assign{"SPLIT", e("max(1, min(1024, pow2ceil(cdiv(32 * CUS, cdiv(K, BLOCK_K) * E)), pow2ceil(cdiv(T, E * BLOCK_T))))")}
		return dualCandidates("BLOCK_T", split, Assign{"PREFETCH", e("1")}, Assign{"ORDER", e("1")})
	},
	Ceiling: e("2 * T * K <= L2 / 2 ? 100 : 67"),
	Example: Shape{"T": 8192, "K": 2048, "E": 8},
	Peers:   true,
	Bench:   GroupedColwise.Bench,
	Apart: []Part{{Op: Rowwise, Shape: func(sh Shape) Shape { return Shape{"M": sh["T"], "K": sh["K"]} }},
		{Op: GroupedColwise}},
	Tests: func() Tests {
		t := GroupedColwise.Tests
		t.Options = dualTests.Options
		t.Schedules = nil
		for _, order := range []int{0, 1} {
			for _, prefetch := range []int{0, 1} {
				t.Schedules = append(t.Schedules, schedule.Params{"BLOCK_T": 16, "BLOCK_K": 32, "WARPS": 4, "SPLIT": 2 + 2*order, "ORDER": order, "PREFETCH": prefetch})
			}
		}
		return t
	}(),
	Goldens:    []Variant{{Name: "odd", Shape: Shape{"T": 1000, "K": 333, "E": 7}}, {Name: "e5m2_f32_pow2", Options: Options{"fp8": "e5m2", "in": "f32", "pow2": "true"}}},
	FillInputs: groupOffsets,
	Validate:   checkOffsets,
	Reference: func(c *Call, in map[string]*Tensor) map[string]*Tensor {
		out := Tensors(c.SpecsOf(Output, Scratch))
		refRows(c, in["x"].Floats(), c.Size("T"), c.Size("K"), out["q"].Data, out["inv_scale_row"].Data, out["amax_row"].Data)
		refGroupedColumns(c, in, out["qt"].Data, out["inv_scale_col"].Data, out["amax_col"].Data)
		return out
	},
	Dequantize: func(c *Call, _, out map[string]*Tensor) []float32 {
		inv := out["inv_scale_row"].Floats()
		k := c.Size("K")
		return dequant(out["q"], c.Format, func(i int) float32 { return inv[i/k] })
	},
})
