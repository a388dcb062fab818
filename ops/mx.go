package ops

import (
	"math"
	"math/rand/v2"

	"github.com/fp8gen/fp8gen/expr"
	"github.com/fp8gen/fp8gen/fp8"
	"github.com/fp8gen/fp8gen/internal/refnum"
	"github.com/fp8gen/fp8gen/schedule"
)

// MXFP8 (OCP Microscaling v1.0): blocks of 32 consecutive elements along
// the reduced axis share one E8M0 scale 2^X, stored as the byte X + 127.
// The numerics, identical in the reference, the interpreter and every
// emitted target:
//
//	amax  = max |x| over the block, a NaN included: a block holding a
//	        NaN or an Inf has amax NaN or Inf
//	X     = mx_round=floor (OCP's rule, torchao's default FLOOR):
//	          floor(log2 amax) − emax, emax = 8 (e4m3) or 15 (e5m2),
//	          at least −127: an amax of 0 or an f32 subnormal takes
//	          byte 0 (2^-127)
//	        mx_round=rceil (NVIDIA's: TransformerEngine, cuBLAS,
//	          torchao's RCEIL): descale = amax · (1/fmt_max) in f32, then
//	          the smallest E8M0 value at or above it (a subnormal descale
//	          rounds to byte 0 up to 2^-127, to byte 1 past it)
//	scale = 0xFF (NaN) where amax is Inf or NaN, X + 127 otherwise
//	q     = fp8(x · 2^-X): exact scaling, round to nearest even,
//	        saturate to ±fmt_max; every element of a 0xFF block is NaN
//
// floor may scale the block's largest elements past fmt_max (up to
// 2·fmt_max): they saturate, as OCP specifies. rceil never saturates a
// finite block. Its f32 product amax · fl(1/fmt_max) could only cross a
// power of two next to amax = fmt_max·2^k, and for a normal product it
// does not (fl(1/448)·448 and fl(1/57344)·57344 round to 1;
// TestMXRceilExact walks those neighbours): rceil is
// ceil(log2(amax / fmt_max)) exactly, the bytes of TransformerEngine and
// torchao, but for the f32 amax just above fmt_max·2^-127, whose
// subnormal product rounds down to 2^-127 (byte 0, not 1). Neither rule goes
// through a bf16 intermediate (whose rounding would move X at the top of
// a binade). The formats are OCP's: gfx942's e4m3fnuz is refused.

var mxOptions = []Option{
	castOptions[0], castOptions[1],
	{Name: "mx_round", Doc: "the scale rule: floor (OCP) or rceil (NVIDIA's, round the descale up)", Values: []string{"floor", "rceil"}, Default: "floor"},
	{Name: "dim", Doc: "0: q[M,K] with blocks along K; 1: qt[K,M] (transposed) with blocks along M; both: both from one read", Values: []string{"0", "1", "both"}, Default: "0"},
	{Name: "scales", Doc: "rowmajor: [rows, blocks]; swizzled: the 128x4 tiles cuBLASLt (VEC32_UE8M0) and torch._scaled_mm read, rows padded to 128 and blocks to 4; gfx950: the 32x8 tiles hipBLASLt's pre-swizzled BLK32_UE8M0_32_8_EXT reads, rows padded to 32 and blocks to 8; padding 0", Values: []string{"rowmajor", "swizzled", "gfx950"}, Default: "rowmajor"},
}

// The swizzled layout of an E8M0 scale matrix S[rows, cols] (cuBLASLt's
// VEC32_UE8M0, torch's SWIZZLE_32_4_4 and to_blocked): rows padded to a
// multiple of 128, cols to a multiple of 4, cut into 128x4 tiles stored
// one after another in row-major order of tiles, 512 bytes each; within a
// tile, S[r, c] sits at (r % 32)·16 + (r / 32)·4 + c. The padding bytes
// are 0 (what to_blocked's zero padding gives). mxSwizzledLen is the
// padded length in sizes.
func mxSwizzledLen(rows, cols string) expr.Expr {
	return e("cdiv(rows, 128) * 128 * (cdiv(cols, 4) * 4)", "rows", rows, "cols", cols)
}

// The gfx950 layout (hipBLASLt's HIPBLASLT_MATMUL_MATRIX_SCALE_BLK32_UE8M0_32_8_EXT,
// its pre-swizzled scales on gfx950): rows padded to a multiple of 32, cols
// to a multiple of 8, cut into 32x8 tiles stored one after another in
// row-major order of tiles, 256 bytes each; within a tile, S[r, c] sits at
// (c % 4)·64 + (r % 16)·4 + (c / 4)·2 + r / 16. Padding 0. mxGfx950Len
// is the padded length.
func mxGfx950Len(rows, cols string) expr.Expr {
	return e("cdiv(rows, 32) * 32 * (cdiv(cols, 8) * 8)", "rows", rows, "cols", cols)
}

var MXCast = register(&Op{
	Name: "mx_cast",
	Doc: "x[M,K] → MXFP8: q[M,K] fp8 with scale[M,K/32] e8m0 (dim=0), qt[K,M] fp8 with scale_t[K,M/32] (dim=1), " +
		"or both from one read (dim=both): 32-element blocks sharing a power-of-two scale",
	Sizes:   []string{"M", "K"},
	Options: mxOptions,
	OCP:     true,
	Peers:   true,
	Tensors: []Arg{
		{Name: "x", DType: "{in}", Shape: []expr.Expr{e("M"), e("K")}, Role: Input},
		{Name: "q", DType: "fp8", Shape: []expr.Expr{e("M"), e("K")}, Role: Output, When: "dim=0|both"},
		{Name: "scale", DType: "e8m0", Shape: []expr.Expr{e("M"), e("K / 32")}, Role: Output, When: "dim=0|both,scales=rowmajor", Doc: "block (i, j)'s scale: x[i, 32j : 32j+32]"},
		{Name: "scale", DType: "e8m0", Shape: []expr.Expr{mxSwizzledLen("M", "K / 32")}, Role: Output, When: "dim=0|both,scales=swizzled", Doc: "the scales [M, K/32] swizzled into 128x4 tiles (docs/ops.md)"},
		{Name: "scale", DType: "e8m0", Shape: []expr.Expr{mxGfx950Len("M", "K / 32")}, Role: Output, When: "dim=0|both,scales=gfx950", Doc: "the scales [M, K/32] in gfx950's 32x8 tiles (docs/ops.md)"},
		{Name: "qt", DType: "fp8", Shape: []expr.Expr{e("K"), e("M")}, Role: Output, When: "dim=1|both"},
		{Name: "scale_t", DType: "e8m0", Shape: []expr.Expr{e("K"), e("M / 32")}, Role: Output, When: "dim=1|both,scales=rowmajor", Doc: "block (j, i)'s scale: x[32i : 32i+32, j]"},
		{Name: "scale_t", DType: "e8m0", Shape: []expr.Expr{mxSwizzledLen("K", "M / 32")}, Role: Output, When: "dim=1|both,scales=swizzled", Doc: "the scales [K, M/32] swizzled into 128x4 tiles (docs/ops.md)"},
		{Name: "scale_t", DType: "e8m0", Shape: []expr.Expr{mxGfx950Len("K", "M / 32")}, Role: Output, When: "dim=1|both,scales=gfx950", Doc: "the scales [K, M/32] in gfx950's 32x8 tiles (docs/ops.md)"},
	},
	// Under scales=swizzled the grids cover the padded scale matrices, so
	// that the kernels write the padding too.
	Kernels: []*Kernel{
		{Name: "mx_cast_rows", Build: mxRowsKernel, Option: "dim=0,scales=rowmajor", Grid: [3]expr.Expr{e("cdiv(M * K / 32, ROWS)"), e("1"), e("1")}},
		{Name: "mx_cast_rows", Build: mxRowsKernel, Option: "dim=0,scales=swizzled", Grid: [3]expr.Expr{e("cdiv(slots, ROWS)", "slots", mxSwizzledLen("M", "K / 32")), e("1"), e("1")}},
		{Name: "mx_cast_cols", Build: mxColsKernel, Option: "dim=1|both,scales=rowmajor", Grid: [3]expr.Expr{e("cdiv(K, BLOCK_K)"), e("cdiv(M / 32, RB)"), e("1")}},
		{Name: "mx_cast_rows", Build: mxRowsKernel, Option: "dim=0,scales=gfx950", Grid: [3]expr.Expr{e("cdiv(slots, ROWS)", "slots", mxGfx950Len("M", "K / 32")), e("1"), e("1")}},
		{Name: "mx_cast_cols", Build: mxColsKernel, Option: "dim=1|both,scales=swizzled", Grid: [3]expr.Expr{e("cdiv(cdiv(K, 128) * 128, BLOCK_K)"), e("cdiv(cdiv(M / 32, 4) * 4, RB)"), e("1")}},
		// K padded to 256: both's scale[M, K/32] pads its blocks to 8.
		{Name: "mx_cast_cols", Build: mxColsKernel, Option: "dim=1|both,scales=gfx950", Grid: [3]expr.Expr{e("cdiv(cdiv(K, 256) * 256, BLOCK_K)"), e("cdiv(cdiv(M / 32, 8) * 8, RB)"), e("1")}},
	},
	OptionRules: []OptionRule{
		{When: "dim=0|both", Constraint: schedule.Constraint{Cond: e("K % 32 == 0"), Why: "MX blocks are 32 elements along K: K must be a multiple of 32"}},
		{When: "dim=1|both", Constraint: schedule.Constraint{Cond: e("M % 32 == 0"), Why: "MX blocks of qt are 32 rows of x: M must be a multiple of 32"}},
	},
	Knobs: []schedule.Knob{
		warpsKnob,
		{Name: "ROWS", Doc: "blocks per program (dim=0)", Domain: schedule.Pow2("1", "2048")},
		{Name: "BLOCK_K", Doc: "columns per program (dim=1, both)", Domain: schedule.Pow2("32", "2048")},
		{Name: "RB", Doc: "blocks of 32 rows per program, one a trip (dim=1, both)", Domain: schedule.Pow2("1", "65536")},
	},
	Constraints: []schedule.Constraint{
		tileLimit("ROWS * 32"), tileLimit("32 * BLOCK_K"),
		{Cond: e("cdiv(slots, ROWS) <= 2147483647", "slots", mxSwizzledLen("M", "K / 32")), Why: "grid axis 0 (blocks, padded as swizzled scales are) holds at most 2^31-1 programs"},
		{Cond: e("cdiv(slots, ROWS) <= 2147483647", "slots", mxGfx950Len("M", "K / 32")), Why: "grid axis 0 (blocks, padded as gfx950's scales are) holds at most 2^31-1 programs"},
		{Cond: e("cdiv(cdiv(M / 32, 8) * 8, RB) <= 65535"), Why: "grid axis 1 (row blocks, padded to 8) holds at most 65535 programs"},
	},
	Candidates: func() []Candidate {
		var out []Candidate
		for _, c := range []struct{ warps, per, bk, rb string }{{"4", "8", "128", "8"}, {"8", "16", "256", "4"}, {"4", "16", "64", "16"}, {"2", "8", "128", "2"}} {
			out = append(out, Candidate{
				{"WARPS", e(c.warps)},
				{"ROWS", e("WARPS * WAVE * per / 32", "per", c.per)},
				{"BLOCK_K", e(c.bk)},
				{"RB", e("max(rb, pow2ceil(cdiv(cdiv(M, 256) * 8, 65535)))", "rb", c.rb)},
			})
		}
		return out
	},
	Ceiling: e("100"),
	Example: Shape{"M": 4096, "K": 4096},
	Bench:   benchShapes,
	Tests: Tests{
		Shapes: []Shape{{"M": 32, "K": 32}, {"M": 64, "K": 96}, {"M": 96, "K": 1024}, {"M": 32, "K": 4000}, {"M": 160, "K": 64}},
		GPU:    []Shape{{"M": 1024, "K": 4096}, {"M": 4096, "K": 14336}, {"M": 4992, "K": 96}},
		Options: []Options{
			{"dim": "1"}, {"dim": "both"},
			{"in": "f32", "fp8": "e5m2", "mx_round": "rceil"},
			{"dim": "1", "mx_round": "rceil", "fp8": "e5m2"},
			{"dim": "both", "mx_round": "rceil", "in": "f32"},
			{"scales": "swizzled"}, {"dim": "1", "scales": "swizzled", "mx_round": "rceil"}, {"dim": "both", "scales": "swizzled"},
			{"scales": "gfx950"}, {"dim": "1", "scales": "gfx950", "fp8": "e5m2"}, {"dim": "both", "scales": "gfx950", "mx_round": "rceil"},
		},
		Odd:       Shape{"M": 96, "K": 160},
		Schedules: []schedule.Params{{"WARPS": 1, "ROWS": 4, "BLOCK_K": 32, "RB": 2}, {"WARPS": 2, "ROWS": 64, "BLOCK_K": 64, "RB": 1}},
		Wide:      Shape{"M": 1 << 16, "K": 1 << 15},
	},
	FillInputs: mxPlantBlocks,
	Goldens: []Variant{
		{Name: "dim1", Options: Options{"dim": "1"}},
		{Name: "both", Options: Options{"dim": "both"}},
		{Name: "both_rceil_e5m2_f32", Options: Options{"dim": "both", "mx_round": "rceil", "fp8": "e5m2", "in": "f32"}},
		{Name: "swizzled", Options: Options{"scales": "swizzled"}},
		{Name: "both_swizzled", Options: Options{"dim": "both", "scales": "swizzled"}},
		{Name: "gfx950_scales", Options: Options{"scales": "gfx950"}},
		{Name: "both_gfx950_scales", Options: Options{"dim": "both", "scales": "gfx950"}},
	},
	Reference: func(c *Call, in map[string]*Tensor) map[string]*Tensor {
		m, k := c.Size("M"), c.Size("K")
		x := in["x"].Floats()
		out := Tensors(c.SpecsOf(Output))
		enc := refnum.Encoder(c.Format)
		rceil := c.Opt(opt.MXRound) == "rceil"
		block := make([]float32, 32)
		// quantize sets block's scale byte and its 32 codes through put.
		quantize := func(put func(e int, b uint8)) uint8 {
			s := refMXScale(block, c.Format, rceil)
			for e, v := range block {
				if s == 0xFF {
					put(e, enc(float32(math.NaN())))
				} else {
					put(e, enc(v*refPow2(127-int(s))))
				}
			}
			return s
		}
		lay := refScaleLayouts[c.Opt(opt.Scales)].lay
		if q := out["q"]; q != nil {
			refMXRows(c, x, m, k, q, out["scale"])
		}
		if qt := out["qt"]; qt != nil {
			mb := m / 32
			s := make([]uint8, k*mb)
			for j := range k {
				for i := range mb {
					for e := range block {
						block[e] = x[(i*32+e)*k+j]
					}
					s[j*mb+i] = quantize(func(e int, b uint8) { qt.Data[j*m+i*32+e] = b })
				}
			}
			copy(out["scale_t"].Data, lay(s, k, mb))
		}
		return out
	},
	Dequantize: func(c *Call, _, out map[string]*Tensor) []float32 {
		m, k := c.Size("M"), c.Size("K")
		at := refScaleLayouts[c.Opt(opt.Scales)].index
		if out["q"] == nil { // dim=1: qt back into x's layout
			qt, st := out["qt"], out["scale_t"]
			x := make([]float32, m*k)
			for j := range k {
				for i := range m {
					x[i*k+j] = c.Format.Decode(qt.Data[j*m+i]) * float32(st.Float(at(j, i/32, m/32)))
				}
			}
			return x
		}
		s := out["scale"]
		return dequant(out["q"], c.Format, func(i int) float32 { return float32(s.Float(at(i/k, i%k/32, k/32))) })
	},
})

// refMXRows quantizes x[m, k] to MXFP8 with blocks along its rows:
// codes into q, scales laid out (the scales option) into scale.
func refMXRows(c *Call, x []float32, m, k int, q, scale *Tensor) {
	enc := refnum.Encoder(c.Format)
	rceil := c.Opt(opt.MXRound) == "rceil"
	kb := k / 32
	s := make([]uint8, m*kb)
	for i := range m {
		for j := range kb {
			block := x[i*k+j*32 : i*k+j*32+32]
			b := refMXScale(block, c.Format, rceil)
			for e, v := range block {
				if b == 0xFF {
					q.Data[i*k+j*32+e] = enc(float32(math.NaN()))
				} else {
					q.Data[i*k+j*32+e] = enc(v * refPow2(127-int(b)))
				}
			}
			s[i*kb+j] = b
		}
	}
	copy(scale.Data, refScaleLayouts[c.Opt(opt.Scales)].lay(s, m, kb))
}

// refMXScale is the E8M0 byte of a block by the rule above, from the
// block's values with float64 arithmetic where the rule is exact.
func refMXScale(block []float32, f *fp8.Format, rceil bool) uint8 {
	amax := 0.0
	for _, v := range block {
		a := math.Abs(float64(v))
		if math.IsNaN(a) || math.IsInf(a, 0) {
			return 0xFF
		}
		amax = math.Max(amax, a)
	}
	if rceil {
		d := float32(amax) * (1 / f.Max) // both f32 roundings, as NVIDIA's
		x := 0
		for refPow2(x) < d && x < 128 {
			x++
		}
		for x > -127 && refPow2(x-1) >= d {
			x--
		}
		return uint8(x + 127)
	}
	if amax == 0 {
		return 0
	}
	emax := map[float32]int{448: 8, 57344: 15}[f.Max]
	_, e := math.Frexp(amax) // amax = frac · 2^e, frac in [0.5, 1)
	return uint8(max(e-1-emax, -127) + 127)
}

// refLayout is a scale layout of the reference: index is the byte of
// S[r, c] of a matrix of cols scales a row, tr x tc its tiles (1 x 1:
// row-major, no padding).
type refLayout struct {
	tr, tc int
	index  func(r, c, cols int) int
}

// refScaleLayouts are the layouts of option scales, from their
// definitions above: tiles of the padded matrix in row-major order, and
// each tile's bytes as the layout orders them.
var refScaleLayouts = map[string]refLayout{
	"rowmajor": {1, 1, func(r, c, cols int) int { return r*cols + c }},
	"swizzled": {128, 4, func(r, c, cols int) int { // rows r, r+32, r+64, r+96 side by side
		return (r/128*((cols+3)/4)+c/4)*512 + r%32*16 + r%128/32*4 + c%4
	}},
	"gfx950": {32, 8, func(r, c, cols int) int { // column quarter, row of 16, column half, row half
		return (r/32*((cols+7)/8)+c/8)*256 + c%4*64 + r%16*4 + c%8/4*2 + r%32/16
	}},
}

// lay lays the scales s[rows, cols] out, padding 0.
func (l refLayout) lay(s []uint8, rows, cols int) []uint8 {
	out := make([]uint8, (rows+l.tr-1)/l.tr*l.tr*((cols+l.tc-1)/l.tc*l.tc))
	for r := range rows {
		for c := range cols {
			out[l.index(r, c, cols)] = s[r*cols+c]
		}
	}
	return out
}

// refPow2 is 2^x in f32 (x from −149 to 127).
func refPow2(x int) float32 { return float32(math.Ldexp(1, x)) }

// mxPlantBlocks, for adversarial inputs, makes whole blocks of x (along K
// at the top left, along M in column 3) the classes the scale rules
// break on: zeros, −0, an amax that is a power of two, one that is
// fmt_max·2^k (rceil's rounding), subnormal amaxes, the f32 and bf16
// extremes, ties of the element rounding, and a lone NaN or Inf.
func mxPlantBlocks(c *Call, r *rand.Rand, adversarial bool, in map[string]*Tensor) {
	if adversarial {
		plantMXBlocks(in["x"], c.Size("M"), c.Size("K"), c.Format.Max, r)
	}
}

// plantMXBlocks plants mxPlantBlocks' blocks into x[m, k].
func plantMXBlocks(x *Tensor, m, k int, fmt32 float32, r *rand.Rand) {
	fmax := float64(fmt32)
	kinds := []func(e int) float64{
		func(int) float64 { return 0 },
		func(int) float64 { return math.Copysign(0, -1) },
		func(e int) float64 { return float64(e%5) * 0.25 * math.Pow(2, 10) }, // amax 2^10 exactly
		func(e int) float64 { return []float64{fmax * 8, -fmax * 8, 3, -1e-3}[e%4] },
		func(e int) float64 { return []float64{fmax / 4, 1, -fmax / 4, 0.5}[e%4] },
		func(e int) float64 { return math.Ldexp(float64(1+e%3), -133) },   // bf16 subnormals
		func(e int) float64 { return math.Ldexp(1, -126) * float64(e%2) }, // the smallest normal
		func(e int) float64 { return []float64{3.3e38, -1, 2e38, 0}[e%4] },
		func(e int) float64 { return (float64(e) + 0.5) * 0.0625 * float64(1-2*(e%2)) }, // ties at 1 (amax 1.97)
		func(e int) float64 {
			if e == 7 {
				return math.NaN()
			}
			return float64(e)
		},
		func(e int) float64 {
			if e == 30 {
				return math.Inf(-1)
			}
			return float64(e) * 1e-3
		},
		func(e int) float64 { return r.NormFloat64() * math.Ldexp(1, -140+r.IntN(20)) }, // amax near the E8M0 floor
	}
	for n, g := range kinds {
		// Along K: row n's first blocks (dim=0's blocks).
		if i := n % m; k%32 == 0 && (n/m+1)*32 <= k {
			for e := range 32 {
				x.Set(i*k+(n/m)*32+e, g(e))
			}
		}
		// Along M: column 3 + n, rows 32 … 63 (dim=1's blocks).
		if j := 3 + n; m%32 == 0 && m >= 64 && j < k {
			for e := range 32 {
				x.Set((32+e)*k+j, g(e))
			}
		}
	}
}
