package ops

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/fp8gen/fp8gen/expr"
	"github.com/fp8gen/fp8gen/internal/refnum"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/schedule"
)

// The MoE expert activation, SwiGLU times the routing probability, and
// its backward. h[R, 2F] holds each row's gate g and up u halves (split:
// g then u; interleaved: g and u alternating), probs[R] the row's routing
// probability p. In f32, the same operations in the same order in the
// reference, the interpreter and every emitted target:
//
//	e     = exp(−min(|g|, 104))                  (below)
//	silu  = (g ≥ 0 ? g : (g < −104 ? −104 : g)·e) / (1 + e)
//	y     = (silu · u) · p                       (· p only with probs)
//
// then y as bf16 (round to nearest even), or quantized as the casts
// quantize x (rowwise: a scale per row; tensorwise: one for the tensor).
// The backward, from dy[R, F] (bf16):
//
//	inv   = 1 / (1 + e)
//	sig   = g ≥ 0 ? inv : e · inv          1 − sig as g ≥ 0 ? e · inv : inv
//	silu  = (g < −104 ? −104 : g) · sig     (the backward's: one division)
//	ds    = sig · fma(gc, 1 − sig, 1)       gc: g clamped to [−104, 104]
//	a     = dy · silu
//	d_up  = a · p,   d_gate = ((dy · u) · ds) · p
//	d_probs[r] = Σ_f a · u                  (f32, the schedule's order)
//
// exp(−a), a in [0, 104], is the target-independent form, in fused
// multiply-adds (each rounded once, on every target): t = a·log2 e +
// 1.5·2^23, so that k = rne(a·log2 e) is t's low mantissa bits (an
// integer subtraction) and t − 1.5·2^23 is k exactly (as f32); x =
// (a − k·ln2_hi) − k·ln2_lo (ln2_hi with 15 significant bits, so that
// k·ln2_hi is exact); e^−x by its Taylor polynomial of degree 7 (Horner);
// then times 2^−⌊k/2⌋ and 2^−⌈k/2⌉ (two normal powers of two, so that a
// result below 2^−126 is rounded once).
// Against float64, exp(−a) is within 1 f32 ulp and silu within 3 (the
// backward's within 3.5) for every g whose silu is a normal f32 (g ≥ −87),
// below that within 2^−140 absolute, and ds within 2^−22 absolute
// (swiglu_test.go measures them at every bf16 gate). So silu(+Inf) = +Inf,
// silu(−Inf) = −0 (the limit: −Inf·0 would give NaN), ds(±Inf) = 1 and −0,
// and a NaN in g, u, p or dy gives NaN in every value it enters (its sign
// and payload the hardware's: bf16 outputs are held to NaN, not to NaN
// bits; an fp8 NaN is the format's). No
// sum but d_probs: every other output is the same bits on every target and
// schedule.

// Limits of the activation's exp: exp(−104) is below half the smallest
// f32 subnormal, so clamping |g| there changes nothing but keeps k small.
const siluClamp = 104

// The constants of exp(−a), as f32.
var (
	expLog2E = float32(math.Log2E)
	expRound = float32(1.5 * (1 << 23))
	expLn2Hi = float32(0.693145751953125) // 0x3f317200
	expLn2Lo = float32(math.Ln2 - 0.693145751953125)
	// expTaylor are e^−x's Taylor coefficients −1/7!, 1/6!, …, −1/1!, 1/0!:
	// Horner's order.
	expTaylor = []float32{-1.0 / 5040, 1.0 / 720, -1.0 / 120, 1.0 / 24, -1.0 / 6, 0.5, -1, 1}
)

// refExpNeg is exp(−a) for a ≥ 0 (or NaN), as the doc above says, in plain
// Go float32 with each fused multiply-add rounded once (refnum.FMA).
func refExpNeg(a float32) float32 {
	if !(a < siluClamp) { // NaN too: minNum(NaN, 104) is 104
		a = siluClamp
	}
	kf := refnum.FMA(a, expLog2E, expRound) - expRound
	x := refnum.FMA(kf, -expLn2Lo, refnum.FMA(kf, -expLn2Hi, a))
	p := expTaylor[0]
	for _, c := range expTaylor[1:] {
		p = refnum.FMA(p, x, c)
	}
	k := int32(kf)
	lo, hi := k>>1, k-k>>1
	return float32(p*math.Float32frombits(uint32(127-lo)<<23)) * math.Float32frombits(uint32(127-hi)<<23)
}

// refSilu is silu(g) and the e = exp(−min(|g|, 104)) it used.
func refSilu(g float32) (silu, e float32) {
	e = refExpNeg(float32(math.Abs(float64(g))))
	num := g
	if !(g >= 0) {
		gn := g
		if g < -siluClamp {
			gn = -siluClamp
		}
		num = gn * e
	}
	return num / (1 + e), e
}

// refSiluGrad is the backward's silu and silu' at g, as the doc says.
func refSiluGrad(g float32) (silu, ds float32) {
	e := refExpNeg(float32(math.Abs(float64(g))))
	inv := 1 / (1 + e)
	sig, rest := e*inv, inv
	if g >= 0 {
		sig, rest = inv, e*inv
	}
	gn, gc := g, g
	if g < -siluClamp {
		gn, gc = -siluClamp, -siluClamp
	} else if g > siluClamp {
		gc = siluClamp
	}
	return gn * sig, sig * refnum.FMA(gc, rest, 1)
}

var swigluOptions = []Option{
	{Name: "layout", Doc: "h's halves: gate then up (split), or gate and up alternating (interleaved)", Values: []string{"split", "interleaved"}, Default: "split"},
	{Name: "probs", Doc: "multiply each row by its routing probability probs[R]", Values: []string{"true", "false"}, Default: "true"},
	castOptions[1], castOptions[2],
}

var swigluQuant = Option{Name: "quant", Doc: "the output as bf16 (none), or fp8 with a scale per row (rowwise) or one for the tensor (tensorwise), fp8 and pow2 as the casts", Values: []string{"rowwise", "none", "tensorwise"}, Default: "rowwise"}

// swigluKnobs: rows of TILES tiles of BLOCK_F columns, as rowwise_cast's
// rows (one pass, optionally a persistent loop that loads ahead).
var swigluKnobs = []schedule.Knob{
	warpsKnob,
	{Name: "ROWS", Doc: "rows per program (per trip of its loop with PER_CU)", Domain: schedule.Pow2("1", "64")},
	{Name: "BLOCK_F", Doc: "columns of y per tile", Domain: schedule.Pow2("1", "16384")},
	{Name: "TILES", Doc: "tiles a row, unrolled: the row is TILES · BLOCK_F columns wide (F = 768 as 3 × 256, not a tile of 1024)", Domain: schedule.Range("1", "16")},
	{Name: "PER_CU", Doc: "0: a program for each ROWS rows; n: n programs a CU, each a loop over blocks of ROWS rows", Domain: schedule.Range("0", "64")},
	{Name: "PREFETCH", Doc: "1: the loop of PER_CU loads its next block of rows before it works on this one", Domain: schedule.Bool()},
}

var swigluConstraints = []schedule.Constraint{
	{Cond: e("TILES * BLOCK_F >= F"), Why: "a row's tiles (TILES · BLOCK_F) must cover F"},
	{Cond: e("(TILES - 1) * BLOCK_F < F"), Why: "every tile of a row must hold a column (TILES − 1 tiles of BLOCK_F are short of F)"},
	{Cond: e("PER_CU > 0 || PREFETCH == 0"), Why: "PREFETCH loads ahead in the persistent loop: it needs PER_CU > 0"},
	{Cond: e("PER_CU == 0 || R <= 2147483647 - 2 * PER_CU * CUS * ROWS"), Why: "the persistent loop (PER_CU > 0) steps PER_CU·CUS·ROWS rows past R: R must stay that far below 2^31 (take PER_CU=0)"},
	tileLimit("ROWS * BLOCK_F"),
	{Cond: e("TILES * ROWS * BLOCK_F <= 32768"), Why: "a program holds at most 32768 columns of gate and up in registers"},
}

var swigluSizeRules = []schedule.Constraint{
	{Cond: e("F % 8 == 0"), Why: "F must be a multiple of 8 (16-byte vectors of bf16)"},
	{Cond: e("F <= 16384"), Why: "F must be at most 16384 (a row is held in registers)"},
}

// swigluCandidates: a row in registers, `per` columns of gate and up a
// lane (the forward's 16 and 8; the backward, which holds dy too, half
// that), but at least a 16-byte vector of each tile (8 · TILES: fewer
// would leave lanes holding copies), in blocks of 4 waves or more (as many
// rows as that takes for short F; one row of long F), as rowwise_cast's:
// a persistent loop that loads ahead, with the threads a CU would hold,
// then a program for each ROWS rows. A row of F not a power of two is
// either one tile of pow2ceil(F), some lanes idle (8 a lane), or tiles of
// a quarter of it (768 as 3 × 256: 24 a lane, none idle). The one tile
// comes first: at 24 a lane hipcc spilled SGPRs (the interleaved loads'
// masks) for the forward and 2–73 for the backward on gfx940, and the
// backward's 236 VGPRs fell to 94.
func swigluCandidates(lane int) func() []Candidate {
	return func() []Candidate {
		var out []Candidate
		row := func(per int, bf string, cu expr.Expr, prefetch string) Candidate {
			p := e("max(per, 8 * TILES)", "per", per*lane/16)
			return Candidate{
				{"BLOCK_F", e(bf)},
				{"TILES", e("cdiv(F, BLOCK_F)")},
				{"WARPS", e("max(4, min(pow2ceil(cdiv(TILES * BLOCK_F, per * WAVE)), MAXBLOCK / WAVE))", "per", p)},
				{"ROWS", e("max(1, min(64, pow2ceil(cdiv(per * WAVE * WARPS, TILES * BLOCK_F))))", "per", p)},
				{"PER_CU", cu},
				{"PREFETCH", e(prefetch)},
			}
		}
		quarter, one := "F == pow2ceil(F) ? F : pow2ceil(F) / 4", "pow2ceil(F)"
		for _, c := range []struct {
			per       int
			bf, perCU string
		}{{16, one, "4096"}, {16, one, "2048"}, {8, one, "4096"}, {16, quarter, "4096"}, {16, quarter, "2048"}} {
			out = append(out, row(c.per, c.bf, e("max(1, min(64, threads / (WARPS * WAVE)))", "threads", c.perCU), "1"))
		}
		for _, bf := range []string{one, quarter} {
			out = append(out, row(16, bf, e("0"), "0"))
		}
		return out
	}
}

// swigluRowsGrid: a program for each ROWS rows, or PER_CU a CU.
var swigluRowsGrid = [3]expr.Expr{e("PER_CU == 0 ? cdiv(R, ROWS) : min(cdiv(R, ROWS), PER_CU * CUS)"), e("1"), e("1")}

var swigluTests = Tests{
	Shapes: []Shape{{"R": 1, "F": 8}, {"R": 7, "F": 24}, {"R": 33, "F": 136}, {"R": 130, "F": 8}, {"R": 3, "F": 2056}},
	// 256 × 256: every bf16 gate (adversarial inputs walk the codes).
	GPU:     []Shape{{"R": 4096, "F": 768}, {"R": 1023, "F": 2048}, {"R": 300, "F": 8192}, {"R": 256, "F": 256}},
	Options: []Options{{"layout": "interleaved", "probs": "false", "fp8": "e5m2", "pow2": "true"}},
	Odd:     Shape{"R": 40, "F": 72},
	Wide:    Shape{"R": 1 << 17, "F": 1 << 14},
	Schedules: []schedule.Params{
		{"BLOCK_F": 16, "TILES": 5, "WARPS": 1, "ROWS": 4, "PER_CU": 1, "PREFETCH": 1},
		{"BLOCK_F": 32, "TILES": 3, "WARPS": 2, "ROWS": 2, "PER_CU": 0, "PREFETCH": 0},
	},
}

// swigluInputs: probabilities in [0, 1) (softmax outputs), with zeros;
// adversarial, probabilities of 0, 1, NaN, ±Inf and −0, and gates walking
// the bf16 codes (code 40503·i mod 2^16 at gate i: every code once in
// 65536 gates, so that a shape of R·F ≥ 65536 holds every bf16 gate, NaN
// and ±Inf among them), the first of them where silu saturates or
// underflows (±20, ±87, ±88, ±103, ±104, ±105, ±1e30, −0).
func swigluInputs(c *Call, r *rand.Rand, adversarial bool, in map[string]*Tensor) {
	if p := in["probs"]; p != nil {
		for i := range p.Elems() {
			v := r.Float32()
			if i%11 == 5 {
				v = 0
			}
			p.Set(i, float64(v))
		}
		if adversarial {
			for i, v := range []float64{0, 1, math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 1e-30} {
				if j := 7*i + 3; j < p.Elems() {
					p.Set(j, v)
				}
			}
		}
	}
	if d := in["dy_inv_scale"]; d != nil {
		// dy's inverse scales as a cast makes them: amax/fmt_max, here
		// 2^−20 to 2^4; adversarial, 0, ±Inf, NaN, a subnormal, −1.
		for i := range d.Elems() {
			d.Set(i, math.Ldexp(1+r.Float64(), -r.IntN(24)+4))
		}
		if adversarial {
			for i, v := range []float64{0, math.Inf(1), math.NaN(), 1e-40, -1, math.Inf(-1)} {
				if j := 5*i + 2; j < d.Elems() {
					d.Set(j, v)
				}
			}
		}
	}
	if !adversarial {
		return
	}
	h, f := in["h"], c.Size("F")
	gates := []float64{20, -20, 87, -87, 88, -88, 103, -103, 104, -104, 105, -105, 1e30, -1e30, math.Copysign(0, -1)}
	for i := range h.Elems() / 2 {
		row, col := i/f, i%f
		at := row*2*f + col // split: the gate half
		if c.Opt(opt.Layout) == "interleaved" {
			at = row*2*f + 2*col
		}
		if i < len(gates) {
			h.Set(at, gates[i])
		} else {
			h.SetBits(at, uint64(uint16(40503*i)))
		}
	}
}

// swigluRef is the reference's f32 activations: y[r·F + f] before its
// output rounding, and, for the backward, the e of each gate.
func swigluRef(c *Call, in map[string]*Tensor) (y []float32) {
	rows, f := c.Size("R"), c.Size("F")
	y = make([]float32, rows*f)
	rowsParallel(rows, 2*f, func(lo, hi, _ int) {
		for i := lo; i < hi; i++ {
			for j := 0; j < f; j++ {
				g, u := swigluAt(c, in["h"], i, j, f)
				s, _ := refSilu(g)
				v := s * u
				if p := in["probs"]; p != nil {
					v *= float32(p.Float(i))
				}
				y[i*f+j] = v
			}
		}
	})
	return y
}

// swigluAt is row i's gate and up at column j.
func swigluAt(c *Call, h *Tensor, i, j, f int) (g, u float32) {
	if c.Opt(opt.Layout) == "interleaved" {
		return float32(h.Float(i*2*f + 2*j)), float32(h.Float(i*2*f + 2*j + 1))
	}
	return float32(h.Float(i*2*f + j)), float32(h.Float(i*2*f + f + j))
}

// swigluOut writes y (f32, rows of f) as the quant option says: bf16, or
// fp8 with the casts' scales.
func swigluOut(c *Call, y []float32, f int, out map[string]*Tensor) {
	q := out["y"]
	switch c.Opt(opt.Quant) {
	case "none":
		bigParallel(len(y), func(lo, hi, _ int) {
			for i := lo; i < hi; i++ {
				q.SetBits(i, uint64(refnum.BF16(y[i])))
			}
		})
	case "rowwise":
		enc := refnum.Encoder(c.Format)
		rowsParallel(len(y)/max(f, 1), f, func(lo, hi, _ int) {
			for i := lo; i < hi; i++ {
				row := y[i*f : (i+1)*f]
				scale := refScale(refAmax(row), c)
				for j, v := range row {
					q.Data[i*f+j] = enc(v * scale)
				}
				refnum.PutF32(out["inv_scale"].Data, i, 1/scale)
			}
		})
	case "tensorwise":
		enc := refnum.Encoder(c.Format)
		amax := refTensorAmax(y)
		scale := refScale(amax, c)
		bigParallel(len(y), func(lo, hi, _ int) {
			for i := lo; i < hi; i++ {
				q.Data[i] = enc(y[i] * scale)
			}
		})
		refnum.PutF32(out["inv_scale"].Data, 0, 1/scale)
		refnum.PutF32(out["amax"].Data, 0, amax)
	}
}

var swigluIn = []Arg{
	{Name: "h", DType: "bf16", Shape: []expr.Expr{e("R"), e("2 * F")}, Role: Input, Doc: "each row's gate and up halves (the layout option)"},
	{Name: "probs", DType: "f32", Shape: []expr.Expr{e("R")}, Role: Input, When: "probs=true", Doc: "each row's routing probability"},
}

var SwigluProbs = register(&Op{
	Name:    "swiglu_probs",
	Doc:     "h[R,2F] (gate, up), probs[R] → y[R,F] = silu(gate)·up·prob, bf16 or fp8 with its scales: the MoE expert activation",
	Sizes:   []string{"R", "F"},
	Options: append(append([]Option(nil), swigluOptions...), swigluQuant),
	Tensors: append(append([]Arg(nil), swigluIn...),
		Arg{Name: "y", DType: "bf16", Shape: []expr.Expr{e("R"), e("F")}, Role: Output, When: "quant=none"},
		Arg{Name: "y", DType: "fp8", Shape: []expr.Expr{e("R"), e("F")}, Role: Output, When: "quant=rowwise|tensorwise"},
		Arg{Name: "inv_scale", DType: "f32", Shape: []expr.Expr{e("R")}, Role: Output, When: "quant=rowwise"},
		Arg{Name: "inv_scale", DType: "f32", Shape: []expr.Expr{e("1")}, Role: Output, When: "quant=tensorwise"},
		Arg{Name: "amax", DType: "f32", Shape: []expr.Expr{e("1")}, Role: Scratch, Init: 0, When: "quant=tensorwise", Doc: "y's amax, combined by atomics"},
	),
	Kernels: []*Kernel{
		{Name: "swiglu_probs", Build: swigluKernel, Grid: swigluRowsGrid, Option: "quant=none|rowwise"},
		{Name: "swiglu_amax", Build: swigluAmaxKernel, Grid: swigluRowsGrid, Option: "quant=tensorwise"},
		{Name: "swiglu_cast", Build: swigluKernel, Grid: swigluRowsGrid, Option: "quant=tensorwise"},
	},
	Knobs:       swigluKnobs,
	Constraints: swigluConstraints,
	SizeRules:   swigluSizeRules,
	Candidates:  swigluCandidates(16),
	Ceiling:     e("100"),
	Example:     Shape{"R": 4096, "F": 768},
	Bench:       []Shape{{"R": 65536, "F": 768}, {"R": 32768, "F": 2048}, {"R": 16384, "F": 8192}},
	Peers:       true,
	FillInputs:  swigluInputs,
	AnyNaN:      true,
	Tests: func() Tests {
		t := swigluTests
		t.Options = append(t.Options, Options{"quant": "none"}, Options{"quant": "tensorwise", "layout": "interleaved"}, Options{"quant": "none", "probs": "false"})
		return t
	}(),
	Goldens: []Variant{
		{Name: "bf16", Options: Options{"quant": "none"}},
		{Name: "tensorwise", Options: Options{"quant": "tensorwise"}},
		{Name: "interleaved", Options: Options{"layout": "interleaved", "probs": "false"}},
	},
	Reference: func(c *Call, in map[string]*Tensor) map[string]*Tensor {
		out := Tensors(c.SpecsOf(Output, Scratch))
		swigluOut(c, swigluRef(c, in), c.Size("F"), out)
		return out
	},
})

// swiglu_probs with MXFP8 output (the down GEMM's input on gfx950 and
// Blackwell): y's f32 values quantized as mx_cast quantizes x (dim=0),
// blocks of 32 along F.
var SwigluProbsMX = register(&Op{
	Name:    "swiglu_probs_mx",
	Doc:     "h[R,2F] (gate, up), probs[R] → y[R,F] = silu(gate)·up·prob as MXFP8: fp8 with scale[R,F/32] e8m0, blocks along F",
	Sizes:   []string{"R", "F"},
	OCP:     true,
	Options: []Option{swigluOptions[0], swigluOptions[1], mxOptions[1], mxOptions[2], mxOptions[4]},
	Tensors: append(append([]Arg(nil), swigluIn...),
		Arg{Name: "y", DType: "fp8", Shape: []expr.Expr{e("R"), e("F")}, Role: Output},
		Arg{Name: "scale", DType: "e8m0", Shape: []expr.Expr{e("R"), e("F / 32")}, Role: Output, When: "scales=rowmajor", Doc: "block (i, j)'s scale: y[i, 32j : 32j+32]"},
		Arg{Name: "scale", DType: "e8m0", Shape: []expr.Expr{mxSwizzledLen("R", "F / 32")}, Role: Output, When: "scales=swizzled", Doc: "the scales [R, F/32] swizzled into 128x4 tiles (docs/ops.md)"},
		Arg{Name: "scale", DType: "e8m0", Shape: []expr.Expr{mxGfx950Len("R", "F / 32")}, Role: Output, When: "scales=gfx950", Doc: "the scales [R, F/32] in gfx950's 32x8 tiles (docs/ops.md)"},
	),
	// Under a tiled layout the grid covers the padded scale matrix, so
	// that the kernel writes the padding too.
	Kernels: []*Kernel{
		{Name: "swiglu_mx", Build: swigluMXKernel, Option: "scales=rowmajor", Grid: swigluMXGrid("R * F / 32")},
		{Name: "swiglu_mx", Build: swigluMXKernel, Option: "scales=swizzled", Grid: swigluMXGrid(mxSwizzledLen("R", "F / 32"))},
		{Name: "swiglu_mx", Build: swigluMXKernel, Option: "scales=gfx950", Grid: swigluMXGrid(mxGfx950Len("R", "F / 32"))},
	},
	Knobs: []schedule.Knob{
		warpsKnob,
		{Name: "ROWS", Doc: "MX blocks (32 columns of y) per program (per trip of its loop with PER_CU)", Domain: schedule.Pow2("1", "2048")},
		{Name: "PER_CU", Doc: "0: a program for each ROWS blocks; n: n programs a CU, each a loop over trips of ROWS blocks", Domain: schedule.Range("0", "64")},
		{Name: "PREFETCH", Doc: "1: the loop of PER_CU loads its next blocks before it works on these", Domain: schedule.Bool()},
	},
	Constraints: []schedule.Constraint{
		tileLimit("ROWS * 32"),
		{Cond: e("cdiv(slots, ROWS) <= 2147483647", "slots", mxSwizzledLen("R", "F / 32")), Why: "grid axis 0 (blocks, padded as swizzled scales are) holds at most 2^31-1 programs"},
		{Cond: e("cdiv(slots, ROWS) <= 2147483647", "slots", mxGfx950Len("R", "F / 32")), Why: "grid axis 0 (blocks, padded as gfx950's scales are) holds at most 2^31-1 programs"},
		{Cond: e("PER_CU > 0 || PREFETCH == 0"), Why: "PREFETCH loads ahead in the persistent loop: it needs PER_CU > 0"},
		{Cond: e("PER_CU == 0 || slots <= 2147483647 - 2 * PER_CU * CUS * ROWS", "slots", mxSwizzledLen("R", "F / 32")), Why: "the persistent loop (PER_CU > 0) steps PER_CU·CUS·ROWS blocks past the last: the blocks must stay that far below 2^31 (take PER_CU=0)"},
	},
	SizeRules: []schedule.Constraint{{Cond: e("F % 32 == 0"), Why: "MX blocks are 32 columns of y: F must be a multiple of 32"}},
	// A program for each ROWS blocks first, 8 to 32 elements a lane (on
	// an H100 at 65536×768, swizzled: 148 µs against 160–195 µs for the
	// persistent loops, which follow).
	Candidates: func() []Candidate {
		var out []Candidate
		for _, c := range []struct{ warps, per, perCU string }{{"4", "16", "0"}, {"4", "32", "0"}, {"8", "16", "0"}, {"2", "16", "0"}, {"4", "8", "0"}, {"4", "16", "2048"}, {"8", "16", "2048"}} {
			cu, prefetch := e("max(1, min(64, threads / (WARPS * WAVE)))", "threads", c.perCU), "1"
			if c.perCU == "0" {
				cu, prefetch = e("0"), "0"
			}
			out = append(out, Candidate{{"WARPS", e(c.warps)}, {"ROWS", e("WARPS * WAVE * per / 32", "per", c.per)}, {"PER_CU", cu}, {"PREFETCH", e(prefetch)}})
		}
		return out
	},
	Ceiling:    e("100"),
	Example:    Shape{"R": 4096, "F": 768},
	Bench:      SwigluProbs.Bench,
	Peers:      true,
	FillInputs: swigluMXInputs,
	Tests: Tests{
		Shapes: []Shape{{"R": 1, "F": 32}, {"R": 7, "F": 96}, {"R": 130, "F": 160}, {"R": 3, "F": 2080}},
		GPU:    []Shape{{"R": 4096, "F": 768}, {"R": 1023, "F": 2048}, {"R": 300, "F": 8192}, {"R": 256, "F": 256}},
		Options: []Options{{"layout": "interleaved", "probs": "false", "fp8": "e5m2", "mx_round": "rceil"},
			{"scales": "swizzled"}, {"scales": "gfx950", "layout": "interleaved", "mx_round": "rceil"}},
		Odd: Shape{"R": 40, "F": 96},
		Schedules: []schedule.Params{{"WARPS": 1, "ROWS": 4, "PER_CU": 1, "PREFETCH": 1}, {"WARPS": 2, "ROWS": 64, "PER_CU": 0, "PREFETCH": 0},
			{"WARPS": 1, "ROWS": 8, "PER_CU": 2, "PREFETCH": 0}},
		Wide: Shape{"R": 1 << 17, "F": 1 << 14},
	},
	Goldens: []Variant{
		{Name: "swizzled", Options: Options{"scales": "swizzled"}},
		{Name: "interleaved_rceil", Options: Options{"layout": "interleaved", "probs": "false", "mx_round": "rceil"}},
	},
	Reference: func(c *Call, in map[string]*Tensor) map[string]*Tensor {
		out := Tensors(c.SpecsOf(Output))
		refMXRows(c, swigluRef(c, in), c.Size("R"), c.Size("F"), out["y"], out["scale"])
		return out
	},
})

// swigluMXInputs are swigluInputs; adversarially, then, mx_cast's
// planted blocks as blocks of y: gate 32 (whose silu is 32 exactly), up
// the planted value / 32 (or, below 2^−100, the value: y then 32 times
// it, the same class), probability 1.
func swigluMXInputs(c *Call, r *rand.Rand, adversarial bool, in map[string]*Tensor) {
	swigluInputs(c, r, adversarial, in)
	if !adversarial {
		return
	}
	rows, f := c.Size("R"), c.Size("F")
	x := Tensors([]Spec{{Name: "x", DType: ir.F32, Shape: []int{rows, f}}})["x"]
	const unset = 0x7FBADBAD // a NaN no plant makes
	for i := range x.Elems() {
		x.SetBits(i, unset)
	}
	plantMXBlocks(x, rows, f, c.Format.Max, r)
	h, probs := in["h"], in["probs"]
	for i := range x.Elems() {
		if x.Bits(i) == unset {
			continue
		}
		v, row, col := x.Float(i), i/f, i%f
		up := v / 32
		if math.Abs(v) < 0x1p-100 {
			up = v
		}
		gi, ui := row*2*f+col, row*2*f+f+col
		if c.Opt(opt.Layout) == "interleaved" {
			gi, ui = row*2*f+2*col, row*2*f+2*col+1
		}
		h.Set(gi, 32)
		h.Set(ui, up)
		if probs != nil {
			probs.Set(row, 1)
		}
	}
}

// swigluMXGrid: a program for each ROWS of the slots (scale bytes), or
// PER_CU a CU.
func swigluMXGrid(slots any) [3]expr.Expr {
	n := e("cdiv(slots, ROWS)", "slots", slots)
	return [3]expr.Expr{e("PER_CU == 0 ? n : min(n, PER_CU * CUS)", "n", n), e("1"), e("1")}
}

// The grouped activation: h holds the permuted tokens of E experts, each
// expert's rows padded (moe_permute's output, the grouped GEMM's). offsets
// are the experts' cumulative padded end rows (expert g holds rows
// offsets[g-1] … offsets[g]-1, offsets[-1] = 0), counts their used rows:
// row r is used where offsets[g-1] ≤ r < offsets[g-1] + counts[g] for
// some g, and every other row (an expert's padding, the rows past
// offsets[E-1]) is padding, with offsets and counts first clamped to
// [0, R] (so that the sum cannot wrap, whatever they hold). A used row
// is swiglu_probs' row; a padding row reads nothing (neither h nor
// probs) and is written as swiglu_probs writes a row of zeros: y zero,
// a rowwise inv_scale of amax 0, nothing in the tensorwise amax. The rule
// holds for any offsets and counts on the device (no access past h,
// whatever they hold); on the host, Validate holds them to their
// contract.
const groupedSwigluName = "grouped_swiglu_probs"

var GroupedSwigluProbs = register(&Op{
	Name: groupedSwigluName,
	Doc: "h[R,2F] (E experts' padded rows), probs[R], offsets[E], counts[E] → y[R,F] = silu(gate)·up·prob as swiglu_probs, " +
		"padding rows zero and never read",
	Sizes:   []string{"R", "F", "E"},
	Options: SwigluProbs.Options,
	Tensors: func() []Arg {
		ts := append([]Arg(nil), swigluIn...)
		ts = append(ts,
			Arg{Name: "offsets", DType: "i32", Shape: []expr.Expr{e("E")}, Role: Input,
				Doc: "cumulative padded end row of each expert: expert g holds rows offsets[g-1] … offsets[g]-1 (offsets[-1] = 0)"},
			Arg{Name: "counts", DType: "i32", Shape: []expr.Expr{e("E")}, Role: Input,
				Doc: "each expert's used rows, its first: the rest of its rows are padding"})
		ts = append(ts, SwigluProbs.Tensors[len(swigluIn):]...)
		return append(ts, Arg{Name: "row_used", DType: "i32", Shape: []expr.Expr{e("R")}, Role: Scratch,
			Doc: "1 where a row is used, 0 where it is padding (grouped_swiglu_rows writes every row)"})
	}(),
	Kernels: append([]*Kernel{{Name: "grouped_swiglu_rows", Build: groupedSwigluRowsKernel, Grid: [3]expr.Expr{e("cdiv(R, BLOCK_R)"), e("1"), e("1")}}},
		SwigluProbs.Kernels...),
	Knobs: append(append([]schedule.Knob(nil), swigluKnobs...),
		schedule.Knob{Name: "BLOCK_E", Doc: "experts grouped_swiglu_rows reads offsets and counts for at once (at least E)", Domain: schedule.Pow2("1", "4096")},
		schedule.Knob{Name: "BLOCK_R", Doc: "rows a grouped_swiglu_rows program flags", Domain: schedule.Pow2("1", "1024")}),
	Constraints: append(append([]schedule.Constraint(nil), swigluConstraints...),
		schedule.Constraint{Cond: e("BLOCK_E >= E"), Why: "a program reads every expert's offsets at once: BLOCK_E must be at least E"},
		schedule.Constraint{Cond: e("BLOCK_R * BLOCK_E <= 16384"), Why: "a grouped_swiglu_rows program compares BLOCK_R rows with BLOCK_E experts at once: at most 16384 pairs"},
		schedule.Constraint{Cond: e("cdiv(R, BLOCK_R) <= 2147483647"), Why: "grid axis 0 of grouped_swiglu_rows (rows) holds at most 2^31-1 programs"}),
	SizeRules: append(append([]schedule.Constraint(nil), swigluSizeRules...),
		schedule.Constraint{Cond: e("E <= 4096"), Why: "E must be at most 4096 (a program reads every expert's offsets)"}),
	Candidates: func() []Candidate {
		var out []Candidate
		for _, c := range swigluCandidates(16)() {
			out = append(out, append(c[:len(c):len(c)], Assign{"BLOCK_E", e("pow2ceil(E)")},
				Assign{"BLOCK_R", e("max(1, min(256, 16384 / pow2ceil(E)))")}))
		}
		return out
	},
	Ceiling:    e("100"),
	Example:    Shape{"R": 4096, "F": 768, "E": 16},
	Bench:      []Shape{{"R": 65536, "F": 768, "E": 16}},
	FillInputs: groupedSwigluInputs,
	Validate:   checkSwigluGroups,
	AnyNaN:     true,
	Tests: Tests{
		Shapes: []Shape{{"R": 1, "F": 8, "E": 1}, {"R": 40, "F": 24, "E": 3}, {"R": 130, "F": 136, "E": 5}, {"R": 70, "F": 8, "E": 33}, {"R": 129, "F": 8, "E": 1}},
		GPU:    []Shape{{"R": 4096, "F": 768, "E": 16}, {"R": 1023, "F": 2048, "E": 7}, {"R": 300, "F": 8192, "E": 64}},
		Options: []Options{{"layout": "interleaved", "probs": "false", "fp8": "e5m2", "pow2": "true"},
			{"quant": "none"}, {"quant": "tensorwise", "layout": "interleaved"}},
		Odd:       Shape{"R": 40, "F": 72, "E": 3},
		Schedules: []schedule.Params{{"BLOCK_F": 16, "TILES": 5, "WARPS": 1, "ROWS": 4, "PER_CU": 1, "PREFETCH": 1, "BLOCK_E": 4, "BLOCK_R": 8}},
		Wide:      Shape{"R": 1 << 17, "F": 1 << 14, "E": 128},
	},
	Goldens: []Variant{{Name: "tensorwise", Options: Options{"quant": "tensorwise"}}},
	Reference: func(c *Call, in map[string]*Tensor) map[string]*Tensor {
		out := Tensors(c.SpecsOf(Output, Scratch))
		used := swigluUsedRows(c, in)
		for r, ok := range used {
			if ok {
				out["row_used"].SetBits(r, 1)
			}
		}
		h, probs := in["h"], in["probs"]
		zh := &Tensor{Spec: h.Spec, Data: append([]byte(nil), h.Data...)}
		row := 2 * c.Size("F") * 2 // bytes of a row of h
		var zp *Tensor
		if probs != nil {
			zp = &Tensor{Spec: probs.Spec, Data: append([]byte(nil), probs.Data...)}
		}
		for r, ok := range used {
			if !ok {
				clear(zh.Data[r*row : (r+1)*row])
				if zp != nil {
					clear(zp.Data[4*r : 4*r+4])
				}
			}
		}
		zin := map[string]*Tensor{"h": zh}
		if zp != nil {
			zin["probs"] = zp
		}
		swigluOut(c, swigluRef(c, zin), c.Size("F"), out)
		return out
	},
})

// swigluUsedRows is which rows of h the grouped op reads, by the rule
// above, for any offsets and counts.
func swigluUsedRows(c *Call, in map[string]*Tensor) []bool {
	used := make([]bool, c.Size("R"))
	offs, counts := in["offsets"].Ints(), in["counts"].Ints()
	rows := int64(len(used))
	clamp := func(v int64) int64 { return min(max(v, 0), rows) }
	for g := range offs {
		start := int64(0)
		if g > 0 {
			start = clamp(offs[g-1])
		}
		for r := start; r < start+clamp(counts[g]) && r < rows; r++ {
			used[r] = true
		}
	}
	return used
}

// checkSwigluGroups holds offsets and counts to their contract on the
// host: offsets nondecreasing within [0, R], each count within its
// expert's rows.
func checkSwigluGroups(c *Call, in map[string]*Tensor) error {
	rows := int64(c.Size("R"))
	offs, counts := in["offsets"].Ints(), in["counts"].Ints()
	prev := int64(0)
	for g, v := range offs {
		switch {
		case v < prev:
			return fmt.Errorf("offsets[%d] = %d is less than offsets[%d] = %d: offsets are cumulative end rows and may not decrease", g, v, g-1, prev)
		case v > rows:
			return fmt.Errorf("offsets[%d] = %d is past R = %d", g, v, rows)
		case counts[g] < 0:
			return fmt.Errorf("counts[%d] = %d is negative", g, counts[g])
		case counts[g] > v-prev:
			return fmt.Errorf("counts[%d] = %d is more than expert %d's %d rows (offsets[%d] − offsets[%d])", g, counts[g], g, v-prev, g, g-1)
		}
		prev = v
	}
	return nil
}

// groupedSwigluInputs makes the experts' rows as moe_permute lays them
// out: used counts of an exponential spread (adversarially at tile edges,
// all in one expert, or one a row), each padded to a multiple of a PAD of
// 1, 8, 16 or 128, the rows past the last expert padding too; then
// swigluInputs' values. Adversarially the padding rows hold NaN (gate, up
// and probs), which a read would carry into y.
func groupedSwigluInputs(c *Call, r *rand.Rand, adversarial bool, in map[string]*Tensor) {
	swigluInputs(c, r, adversarial, in)
	rows, ne := c.Size("R"), c.Size("E")
	pad := []int{1, 8, 16, 128}[r.IntN(4)]
	for pad > 1 && ne*(pad-1) > rows/2 {
		pad /= 2
	}
	pattern := patternRealistic
	if adversarial {
		pattern = offsetsPattern(r.IntN(3))
	}
	sizes := groupSizes(pattern, (rows-ne*(pad-1))*7/8, ne, r)
	end := 0
	for g, n := range sizes {
		in["counts"].SetBits(g, uint64(n))
		end += (n + pad - 1) / pad * pad
		in["offsets"].SetBits(g, uint64(end))
	}
	if !adversarial {
		return
	}
	h, probs := in["h"], in["probs"]
	f := c.Size("F")
	for r, ok := range swigluUsedRows(c, in) {
		if ok {
			continue
		}
		for j := range 2 * f {
			h.Set(r*2*f+j, math.NaN())
		}
		if probs != nil {
			probs.Set(r, math.NaN())
		}
	}
}

// swigluOutType is y's element type under the quant option.
func swigluOutType(c *Call) ir.DType {
	if c.Opt(opt.Quant) == "none" {
		return ir.BF16
	}
	return ir.FP8(c.Format)
}

var SwigluProbsBwd = register(&Op{
	Name:  "swiglu_probs_bwd",
	Doc:   "h[R,2F], probs[R], dy[R,F] → dh[R,2F] bf16 or rowwise fp8, d_probs[R] f32: the backward of swiglu_probs, d_probs in a fixed order",
	Sizes: []string{"R", "F"},
	Options: append(append([]Option(nil), swigluOptions...),
		Option{Name: "quant", Doc: "dh as bf16 (none), or fp8 with a scale per row over its 2F gradients (rowwise), fp8 and pow2 as the casts", Values: []string{"none", "rowwise"}, Default: "none"},
		Option{Name: "dy", Doc: "dy as bf16, or fp8 (the fp8 option's format, as dh's) with an inverse scale per row (rowwise) or one for the tensor (tensorwise), as the down GEMM's dgrad writes it", Values: []string{"bf16", "rowwise", "tensorwise"}, Default: "bf16"}),
	Tensors: append(append([]Arg(nil), swigluIn...),
		Arg{Name: "dy", DType: "bf16", Shape: []expr.Expr{e("R"), e("F")}, Role: Input, When: "dy=bf16", Doc: "the gradient of y"},
		Arg{Name: "dy", DType: "fp8", Shape: []expr.Expr{e("R"), e("F")}, Role: Input, When: "dy=rowwise|tensorwise", Doc: "the gradient of y, quantized: dy[r, f] · dy_inv_scale[r] (or [0])"},
		Arg{Name: "dy_inv_scale", DType: "f32", Shape: []expr.Expr{e("R")}, Role: Input, When: "dy=rowwise", Doc: "dy's inverse scale per row"},
		Arg{Name: "dy_inv_scale", DType: "f32", Shape: []expr.Expr{e("1")}, Role: Input, When: "dy=tensorwise", Doc: "dy's inverse scale"},
		Arg{Name: "dh", DType: "bf16", Shape: []expr.Expr{e("R"), e("2 * F")}, Role: Output, When: "quant=none", Doc: "d_gate and d_up in h's layout"},
		Arg{Name: "dh", DType: "fp8", Shape: []expr.Expr{e("R"), e("2 * F")}, Role: Output, When: "quant=rowwise", Doc: "d_gate and d_up in h's layout"},
		Arg{Name: "inv_scale", DType: "f32", Shape: []expr.Expr{e("R")}, Role: Output, When: "quant=rowwise", Doc: "dh's inverse scale per row"},
		Arg{Name: "d_probs", DType: "f32", Shape: []expr.Expr{e("R")}, Role: Output, When: "probs=true"},
	),
	Kernels:     []*Kernel{{Name: "swiglu_probs_bwd", Build: swigluBwdKernel, Grid: swigluRowsGrid}},
	Knobs:       swigluKnobs,
	Constraints: swigluConstraints,
	SizeRules:   swigluSizeRules,
	Candidates:  swigluCandidates(8),
	Ceiling:     e("100"),
	Example:     Shape{"R": 4096, "F": 768},
	Bench:       SwigluProbs.Bench,
	FillInputs:  swigluInputs,
	AnyNaN:      true,
	Forward:     SwigluProbs,
	Peers:       true,
	Tests: func() Tests {
		t := swigluTests
		t.Options = append(t.Options, Options{"quant": "rowwise"}, Options{"quant": "rowwise", "probs": "false", "layout": "interleaved"},
			Options{"dy": "rowwise", "quant": "rowwise", "fp8": "e5m2"}, Options{"dy": "tensorwise", "layout": "interleaved"})
		return t
	}(),
	Goldens: []Variant{
		{Name: "rowwise", Options: Options{"quant": "rowwise"}},
		{Name: "interleaved", Options: Options{"layout": "interleaved", "probs": "false"}},
		{Name: "fp8_dy", Options: Options{"dy": "rowwise", "quant": "rowwise", "fp8": "e5m2"}},
	},
	Expected: swigluBackward,
})

// swigluDy is dy at row i, column j in f32: the bf16 value, or the fp8
// code's value times its inverse scale (one f32 rounding).
func swigluDy(c *Call, in map[string]*Tensor, i, j, f int) float32 {
	dy := in["dy"]
	switch c.Opt(opt.DY) {
	case "rowwise":
		return refnum.DecodeFP8(c.Format, dy.Data[i*f+j]) * float32(in["dy_inv_scale"].Float(i))
	case "tensorwise":
		return refnum.DecodeFP8(c.Format, dy.Data[i*f+j]) * float32(in["dy_inv_scale"].Float(0))
	}
	return refnum.BF16ToF32(uint16(dy.Bits(i*f + j)))
}

// swigluBackward is the backward reference; d_probs is held to its value
// as a float64 sum of the f32 terms, within (F − 1)·2^−24 of Σ|term|
// (any order of f32 additions), an infinite slack where that sum passes
// the f32 max (a partial sum may overflow).
func swigluBackward(c *Call, in map[string]*Tensor) (map[string]*Tensor, map[string]Allow) {
	rows, f := c.Size("R"), c.Size("F")
	out := Tensors(c.SpecsOf(Output))
	allow := map[string]Allow{}
	probs := in["probs"]
	if probs != nil {
		allow["d_probs"] = Allow{Value: make([]float64, rows), Slack: make([]float64, rows)}
	}
	grads := make([]float32, rows*2*f) // in h's layout
	rowsParallel(rows, 3*f, func(lo, hi, _ int) {
		for i := lo; i < hi; i++ {
			p := float32(1)
			if probs != nil {
				p = float32(probs.Float(i))
			}
			var sum, abs float64
			for j := 0; j < f; j++ {
				g, u := swigluAt(c, in["h"], i, j, f)
				dy := swigluDy(c, in, i, j, f)
				s, ds := refSiluGrad(g)
				a := dy * s
				dg, du := float32(dy*u)*ds, a
				if probs != nil {
					dg, du = dg*p, a*p
					term := float64(a * u)
					sum, abs = sum+term, abs+math.Abs(term)
				}
				gi, ui := i*2*f+j, i*2*f+f+j
				if c.Opt(opt.Layout) == "interleaved" {
					gi, ui = i*2*f+2*j, i*2*f+2*j+1
				}
				grads[gi], grads[ui] = dg, du
			}
			if probs != nil {
				setRef(out["d_probs"], i, sum)
				slack := float64(max(f-1, 0)) * abs / (1 << 24)
				if abs > math.MaxFloat32 {
					slack = math.Inf(1)
				}
				allow["d_probs"].Value[i], allow["d_probs"].Slack[i] = sum, slack
			}
		}
	})
	dh := out["dh"]
	if c.Opt(opt.Quant) == "none" {
		bigParallel(len(grads), func(lo, hi, _ int) {
			for i := lo; i < hi; i++ {
				dh.SetBits(i, uint64(refnum.BF16(grads[i])))
			}
		})
		return out, allow
	}
	enc := refnum.Encoder(c.Format)
	rowsParallel(rows, 2*f, func(lo, hi, _ int) {
		for i := lo; i < hi; i++ {
			row := grads[i*2*f : (i+1)*2*f]
			scale := refScale(refAmax(row), c)
			for j, v := range row {
				dh.Data[i*2*f+j] = enc(v * scale)
			}
			refnum.PutF32(out["inv_scale"].Data, i, 1/scale)
		}
	})
	return out, allow
}
