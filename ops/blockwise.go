package ops

import (
	"github.com/fp8gen/fp8gen/expr"
	"github.com/fp8gen/fp8gen/internal/refnum"
	"github.com/fp8gen/fp8gen/schedule"
)

// Blockwise FP8 (DeepSeek-V3's recipe): a scale per 1×128 block of an
// activation's row, per 128×1 block of its column (the transposed copy
// the weight-gradient GEMM reads), or per 128×128 tile of a weight, with
// the target's FP8 format (e4m3fnuz on gfx942). Each block is scaled as
// the casts scale their groups: amax = maxNum |x| over the block (NaN
// ignored), scale = fmt_max / max(amax, 1e-12) in f32 (pow2: rounded
// down to a power of two, a UE8M0-compatible scale), q = fp8(x · scale)
// saturated, inv_scale = 1 / scale; an Inf makes its block's scale 0. A
// block that runs past K (or M) holds the elements that exist: neither
// needs to be a multiple of 128.

// blockEdge is the side of a DeepSeek block.
const blockEdge = 128

var BlockCast = register(&Op{
	Name: "block_cast",
	Doc: "x[M,K] → fp8 with an f32 scale per 1×128 block along K (q[M,K], inv_scale[M,cdiv(K,128)]), " +
		"per 128×1 block down M (block=128x1: qt[K,M], inv_scale_t[K,cdiv(M,128)]) or per 128×128 tile " +
		"(block=128x128: q[M,K], inv_scale[cdiv(M,128),cdiv(K,128)])",
	Sizes: []string{"M", "K"},
	Peers: true,
	Options: append(append([]Option{}, castOptions...),
		Option{Name: "block", Doc: "1x128: 128 elements of a row (activations); 128x1: 128 of a column, written transposed; 128x128: a tile (weights)",
			Values: []string{"1x128", "128x1", "128x128"}, Default: "1x128"},
		Option{Name: "scales", Doc: "rowmajor; colmajor (block=1x128): inv_scale[cdiv(K,128), M rounded up to 4], M contiguous, as DeepGEMM reads activation scales",
			Values: []string{"rowmajor", "colmajor"}, Default: "rowmajor"}),
	Tensors: []Arg{
		{Name: "x", DType: "{in}", Shape: []expr.Expr{e("M"), e("K")}, Role: Input},
		{Name: "q", DType: "fp8", Shape: []expr.Expr{e("M"), e("K")}, Role: Output, When: "block=1x128|128x128"},
		{Name: "inv_scale", DType: "f32", Shape: []expr.Expr{e("M"), e("cdiv(K, 128)")}, Role: Output, When: "block=1x128,scales=rowmajor", Doc: "block (i, j): x[i, 128j : 128j+128]"},
		{Name: "inv_scale", DType: "f32", Shape: []expr.Expr{e("cdiv(K, 128)"), e("cdiv(M, 4) * 4")}, Role: Output, When: "block=1x128,scales=colmajor", Doc: "[j, i]: block x[i, 128j : 128j+128]; rows i past M hold a zero block's"},
		{Name: "inv_scale", DType: "f32", Shape: []expr.Expr{e("cdiv(M, 128)"), e("cdiv(K, 128)")}, Role: Output, When: "block=128x128", Doc: "tile (i, j): x[128i : 128i+128, 128j : 128j+128]"},
		{Name: "qt", DType: "fp8", Shape: []expr.Expr{e("K"), e("M")}, Role: Output, When: "block=128x1"},
		{Name: "inv_scale_t", DType: "f32", Shape: []expr.Expr{e("K"), e("cdiv(M, 128)")}, Role: Output, When: "block=128x1", Doc: "block (j, i): x[128i : 128i+128, j]"},
	},
	Kernels: []*Kernel{
		{Name: "block_cast_rows", Build: blockRowsKernel, Option: "block=1x128,scales=rowmajor", Grid: [3]expr.Expr{e("cdiv(M * cdiv(K, 128), ROWS)"), e("1"), e("1")}},
		{Name: "block_cast_rows", Build: blockRowsKernel, Option: "block=1x128,scales=colmajor", Grid: [3]expr.Expr{e("cdiv(cdiv(M, 4) * 4, ROWS) * cdiv(K, 128)"), e("1"), e("1")}},
		{Name: "block_cast_cols", Build: blockColsKernel, Option: "block=128x1", Grid: [3]expr.Expr{e("cdiv(K, BLOCK_K)"), e("cdiv(M, 128)"), e("1")}},
		{Name: "block_cast_tiles", Build: blockTilesKernel, Option: "block=128x128", Grid: [3]expr.Expr{e("cdiv(K, 128)"), e("cdiv(M, 128)"), e("1")}},
	},
	Conflicts: []Conflict{{When: "block=128x1|128x128,scales=colmajor",
		Why: "scales=colmajor is the layout of block=1x128's activation scales (DeepGEMM's); 128x1 and 128x128 scales are row-major"}},
	Knobs: []schedule.Knob{
		warpsKnob,
		{Name: "ROWS", Doc: "1×128 blocks per program (block=1x128)", Domain: schedule.Pow2("1", "1024")},
		{Name: "BLOCK_K", Doc: "columns per program (block=128x1)", Domain: schedule.Pow2("16", "1024")},
	},
	Constraints: []schedule.Constraint{
		tileLimit("ROWS * 128"), tileLimit("128 * BLOCK_K"),
		{Cond: e("cdiv(cdiv(M, 4) * 4, ROWS) * cdiv(K, 128) <= 2147483647"), Why: "grid axis 0 holds at most 2^31-1 programs"},
		{Cond: e("cdiv(M, 128) <= 65535"), Why: "grid axis 1 (blocks of 128 rows) holds at most 65535 programs: M at most 8388480"},
	},
	// Candidates hold the elements a lane carries (per) in every kernel:
	// ROWS 1×128 blocks, a [128, BLOCK_K] tile, and a 128×128 tile over
	// WARPS waves (16 waves: 32 a lane on sm_90); ~16 to 32 a lane keeps a
	// tile's registers below 128. In the H100's tune (2026-12-06) 32 a
	// lane at 16 waves won most bench shapes.
	Candidates: func() []Candidate {
		var out []Candidate
		for _, c := range []struct{ warps, per string }{{"16", "32"}, {"8", "16"}, {"16", "16"}, {"8", "8"}} {
			out = append(out, Candidate{
				{"WARPS", e(c.warps)},
				{"ROWS", e("WARPS * WAVE * per / 128", "per", c.per)},
				{"BLOCK_K", e("WARPS * WAVE * per / 128", "per", c.per)},
			})
		}
		return out
	},
	Ceiling: e("100"),
	Example: Shape{"M": 4096, "K": 4096},
	Bench:   append(benchShapes[:4:4], Shape{"M": 7168, "K": 2048}, Shape{"M": 2048, "K": 7168}), // and DeepSeek's weight shapes
	Tests: Tests{
		Shapes: []Shape{{"M": 1, "K": 1}, {"M": 3, "K": 200}, {"M": 130, "K": 128}, {"M": 257, "K": 300}, {"M": 64, "K": 1024}},
		GPU:    []Shape{{"M": 1024, "K": 4096}, {"M": 4096, "K": 14336}, {"M": 4999, "K": 97}},
		Options: []Options{
			{"block": "128x1"}, {"block": "128x128"},
			{"in": "f32", "fp8": "e5m2", "pow2": "true"},
			{"block": "128x1", "pow2": "true", "fp8": "e5m2"},
			{"block": "128x128", "pow2": "true", "in": "f32"},
			{"scales": "colmajor"}, {"scales": "colmajor", "pow2": "true", "fp8": "e5m2"},
		},
		Odd:       Shape{"M": 131, "K": 200},
		Schedules: []schedule.Params{{"WARPS": 1, "ROWS": 2, "BLOCK_K": 16}, {"WARPS": 2, "ROWS": 16, "BLOCK_K": 256}},
		Wide:      Shape{"M": 1 << 16, "K": 1 << 15},
	},
	Goldens: []Variant{
		{Name: "128x1", Options: Options{"block": "128x1"}},
		{Name: "128x128_pow2_e5m2", Options: Options{"block": "128x128", "pow2": "true", "fp8": "e5m2"}},
		{Name: "colmajor", Options: Options{"scales": "colmajor"}},
	},
	Reference: func(c *Call, in map[string]*Tensor) map[string]*Tensor {
		m, k := c.Size("M"), c.Size("K")
		x := in["x"].Floats()
		out := Tensors(c.SpecsOf(Output))
		enc := refnum.Encoder(c.Format)
		kb, mb := cdiv(k, blockEdge), cdiv(m, blockEdge)
		// block scales x[r0:r1, c0:c1] by one scale into q (or qt) and
		// puts the scale's inverse at inv[slot].
		block := func(r0, r1, c0, c1 int, inv *Tensor, slot int) {
			var g []float32
			for i := r0; i < r1; i++ {
				g = append(g, x[i*k+c0:i*k+c1]...)
			}
			scale := refScale(refAmax(g), c)
			refnum.PutF32(inv.Data, slot, 1/scale)
			for i := r0; i < r1; i++ {
				for j := c0; j < c1; j++ {
					if qt := out["qt"]; qt != nil {
						qt.Data[j*m+i] = enc(x[i*k+j] * scale)
					} else {
						out["q"].Data[i*k+j] = enc(x[i*k+j] * scale)
					}
				}
			}
		}
		switch c.Opt(opt.Block) {
		case "1x128":
			colMajor := c.Opt(opt.Scales) == "colmajor"
			mp := cdiv(m, 4) * 4
			for i := range m {
				for j := range kb {
					slot := i*kb + j
					if colMajor {
						slot = j*mp + i
					}
					block(i, i+1, j*blockEdge, min(k, (j+1)*blockEdge), out["inv_scale"], slot)
				}
			}
			if colMajor { // rows past M: what a block of zeros gets
				zero := 1 / refScale(0, c)
				for j := range kb {
					for i := m; i < mp; i++ {
						refnum.PutF32(out["inv_scale"].Data, j*mp+i, zero)
					}
				}
			}
		case "128x1":
			for j := range k {
				for i := range mb {
					block(i*blockEdge, min(m, (i+1)*blockEdge), j, j+1, out["inv_scale_t"], j*mb+i)
				}
			}
		default:
			for i := range mb {
				for j := range kb {
					block(i*blockEdge, min(m, (i+1)*blockEdge), j*blockEdge, min(k, (j+1)*blockEdge), out["inv_scale"], i*kb+j)
				}
			}
		}
		return out
	},
	Dequantize: func(c *Call, _, out map[string]*Tensor) []float32 {
		m, k := c.Size("M"), c.Size("K")
		kb, mb := cdiv(k, blockEdge), cdiv(m, blockEdge)
		if qt := out["qt"]; qt != nil {
			inv := out["inv_scale_t"].Floats()
			x := make([]float32, m*k)
			for j := range k {
				for i := range m {
					x[i*k+j] = c.Format.Decode(qt.Data[j*m+i]) * inv[j*mb+i/blockEdge]
				}
			}
			return x
		}
		inv := out["inv_scale"].Floats()
		tiles, colMajor := c.Opt(opt.Block) == "128x128", c.Opt(opt.Scales) == "colmajor"
		mp := cdiv(m, 4) * 4 // colmajor's rows of scales
		return dequant(out["q"], c.Format, func(n int) float32 {
			i, j := n/k, n%k
			switch {
			case tiles:
				return inv[(i/blockEdge)*kb+j/blockEdge]
			case colMajor:
				return inv[j/blockEdge*mp+i]
			}
			return inv[i*kb+j/blockEdge]
		})
	},
})

func cdiv(a, b int) int { return (a + b - 1) / b }
