package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/fp8gen/fp8gen/expr"
	"github.com/fp8gen/fp8gen/internal/refnum"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/schedule"
)

// QK-norm: the packed QKV projection of an attention layer with QK-norm
// (Qwen3, GPT-OSS) split into q, k and v, q and k normalised per head and
// rotated, in one kernel forward and one (plus a fixed-order fold of the
// weight gradients) backward.
//
// qkv is packed as Megatron packs it: each token's row is (HQ + 2·HKV)·D
// wide, grouped by KV head — for group g, its G = HQ/HKV query heads, then
// k_g, then v_g, D each; query head h = g·G + j. Token rows are b·S + s
// (order=bshd) or s·B + b (order=sbhd); q, k and v come out in the same
// token order, [B, S, H, D] or [S, B, H, D], contiguous bf16.
//
// Forward, per query or key head t (f32 arithmetic, each operation
// rounded; no fused multiply-add):
//
//	r = 1 / sqrt(Σ t² / D + eps)   the sum in the schedule's order
//	n = (t · r) · w                w = q_weight or k_weight
//	n = bf16(n)                    only with round_norm=true
//	y = bf16(n · cos[s] + rot(n) · sin[s])
//
// with rot the rotate-half pairing (rope=neox: rot(n) = concat(−n[D/2:],
// n[:D/2])) or the interleaved one (rope=gptj: rot(n)[2i] = −n[2i+1],
// rot(n)[2i+1] = n[2i]), and cos, sin the [S, D] tables at the token's
// position s. v is copied. NaN and ±Inf follow IEEE: a NaN or Inf in a
// head makes the head's sum NaN or Inf, and the head NaN (Inf·0) or 0. A
// NaN's sign and payload are the hardware's (NVIDIA's 0x7fff…, the
// interpreter's host's), so results are held to NaN, not to NaN bits
// (ops.CompareUpToNaN); v, a copy, keeps its bits.
//
// Backward, from dy = dq or dk of each head (v's gradient is dv):
//
//	dn = dy · cos + rotᵀ(dy · sin)
//	dw += dn · (t · r)             summed over the heads and tokens
//	dx̂ = dn · w
//	dt = (dx̂ − (t · r) · Σ(dx̂ · t · r) / D) · r
//
// It recomputes r from qkv, which it reads anyway. The weight gradients
// are deterministic: each of P = PER_CU·CUS programs sums its tiles in
// order into partials[program], and a second kernel folds the partials in
// a fixed order (128 rows at a time, then their tree; 16 columns a
// program); no float atomics.
//
// A float sum's association follows the schedule, so the kernels match
// the plain-Go references (which sum in float64) within a bf16 ulp, or a
// few float32 ulps of the terms where they cancel (the Allowance); the
// interpreter and every GPU give the same bits for one schedule.

// qkOptions are the choices both directions take.
var qkOptions = []Option{
	{Name: "order", Doc: "token order of qkv and the outputs: bshd (row b·S+s) or sbhd (row s·B+b)", Values: []string{"bshd", "sbhd"}, Default: "bshd"},
	{Name: "rope", Doc: "RoPE pairing: neox (rotate-half) or gptj (interleaved)", Values: []string{"neox", "gptj"}, Default: "neox"},
	{Name: "weight", Doc: "element type of q_weight and k_weight", Values: []string{"bf16", "f32"}, Default: "bf16"},
	{Name: "eps", Doc: "RMSNorm's epsilon", Values: []string{"1e-6", "1e-5"}, Default: "1e-6"},
	{Name: "angles", Doc: "RoPE's cos and sin: read from [S, D] tables, or computed in the kernel from inv_freq[D/2] (θ^(−2i/D)) and the position", Values: []string{"table", "theta"}, Default: "table"},
}

func qkEps(c *Call) float64 {
	v, err := strconv.ParseFloat(c.Opt(opt.Eps), 64)
	if err != nil {
		panic("BUG: eps option " + c.Opt(opt.Eps))
	}
	return float64(float32(v))
}

// qkPartsExpr is the backward's program count: PER_CU programs for each
// CU (SM), all of them resident only where the compiled kernel's
// registers allow (else a tail of programs runs after the rest, each as
// long as any: the tune measures which pays). The partials hold the most
// programs the knob allows, qkPartsRows, so that no tensor's shape
// depends on the schedule; the fold reads the rows of those that ran.
const (
	qkPartsExpr = "PER_CU * CUS"
	qkPartsRows = "16 * CUS"
)

func qkParts(c *Call) int {
	v, err := e(qkPartsExpr).Eval(c.env())
	if err != nil {
		panic("BUG: " + err.Error())
	}
	return int(v)
}

// tokens is a token-major tensor's leading dims in the call's order.
func tokens(order string, rest ...string) []expr.Expr {
	dims := []string{"B", "S"}
	if order == "sbhd" {
		dims = []string{"S", "B"}
	}
	var out []expr.Expr
	for _, d := range append(dims, rest...) {
		out = append(out, e(d))
	}
	return out
}

// byOrder is a tensor in each token order.
func byOrder(name, dtype string, role Role, doc string, rest ...string) []Arg {
	var out []Arg
	for _, o := range []string{"bshd", "sbhd"} {
		out = append(out, Arg{Name: name, DType: dtype, Shape: tokens(o, rest...), Role: role, When: "order=" + o, Doc: doc})
	}
	return out
}

// qkTokenShape has 32 head rows a token (HKV · (HQ/HKV + 2)), the
// default tile's rows on wave32 and wave64: its golden tiles each hold
// one token's heads.
var qkTokenShape = Shape{"B": 1, "S": 64, "HQ": 16, "HKV": 8, "D": 64}

var qkSizeRules = []schedule.Constraint{
	{Cond: e("D == 64 || D == 128"), Why: "D (head_dim) must be 64 or 128"},
	{Cond: e("HQ % HKV == 0"), Why: "HQ must be a multiple of HKV (query heads share KV heads in groups)"},
}

var qkKnobs = []schedule.Knob{
	warpsKnob,
	{Name: "ROWS", Doc: "head rows (D elements each) per tile", Domain: schedule.Pow2("1", "256")},
	{Name: "HEAD_D", Doc: "the head size the kernels are compiled for", Domain: schedule.Pow2("64", "128")},
	{Name: "KV_HEADS", Doc: "the KV heads (HKV) the kernels are compiled for", Domain: schedule.Range("1", "65536")},
	{Name: "GROUP", Doc: "the query heads per KV head (HQ / HKV) the kernels are compiled for", Domain: schedule.Range("1", "65536")},
	{Name: "EARLY_LOADS", Doc: "1: a tile loads the norm weights and the RoPE tables with its rows, before the rows' sums, and waits for memory once (more registers live); 0: after the sums, a second, shorter wait (the L1 or L2 holds them)", Domain: schedule.Range("0", "1")},
	{Name: "LANES", Doc: "lanes of a wave along a head row, each holding D / LANES elements as 16-byte vectors; at D / 16 or fewer a lane holds both halves of its rotate-half pairs and the rotation is a register permutation, above that a shuffle", Domain: schedule.Pow2("1", "WAVE")},
}

var qkConstraints = []schedule.Constraint{
	{Cond: e("HEAD_D == D"), Why: "the kernels are compiled for one head size: HEAD_D must be D"},
	{Cond: e("KV_HEADS == HKV && GROUP * HKV == HQ"), Why: "the kernels are compiled for one head count: KV_HEADS must be HKV and GROUP must be HQ / HKV"},
	{Cond: e("LANES * 8 <= HEAD_D"), Why: "a lane holds at least one 16-byte vector (8 elements) of a head row: LANES at most HEAD_D / 8"},
	tileLimit("ROWS * HEAD_D"),
}

// qkCandidates: tiles of one head row per WAVE / LANES lanes, a lane
// holding 8 elements of a row (a shuffle exchange for rotate-half), 16
// (both halves of its pairs: no exchange) or 32, mostly in blocks of 4
// waves; some with 2 rows a lane, whose loads are in flight together, or
// with the early loads. The H200 profile (2026-12-01) says why: the
// forward waits on its loads' latency (long-scoreboard stalls 69% of its
// cycles at 29% occupancy), so the choices trade the bytes a thread has
// in flight against the registers, and so the threads, that hold them.
// The untuned default holds 512 / WAVE elements a lane (16 on wave32, 8
// on wave64, as the backward's): 16 a lane in 4 waves won the tune at
// all three benchmark shapes on the H200 (2026-12-01), 1.38–1.44× as
// fast as the 8 a lane of the old default; the same in blocks of 2 waves
// was 0.8–1.2% faster again (2026-12-03: same registers and threads a SM,
// smaller blocks to place and retire), in 1 wave 5–7% slower; in 8 waves
// 32% slower, not a candidate. To keep eight, 8 a lane in 8 waves and 8
// a lane with the early loads, the slowest of every tune, are out. (The
// backward in 2-wave blocks ran 1.3–1.5× slower: its candidates stay.)
func qkCandidates() []Candidate {
	var out []Candidate
	for _, c := range []struct{ per, warps, rows, early string }{
		{"(512 / WAVE)", "4", "1", "0"}, {"16", "2", "1", "0"}, {"16", "1", "1", "0"}, {"8", "4", "1", "0"}, {"8", "4", "2", "0"},
		{"16", "4", "1", "0"}, {"16", "4", "1", "1"}, {"32", "4", "1", "0"}, {"8", "4", "2", "1"},
	} {
		lanes := e("min(WAVE, D / per)", "per", c.per)
		out = append(out, Candidate{
			{"HEAD_D", e("D")},
			{"KV_HEADS", e("HKV")},
			{"GROUP", e("HQ / HKV")},
			{"WARPS", e(c.warps)},
			{"LANES", lanes},
			{"ROWS", e("rows * warps * WAVE / lanes", "rows", c.rows, "warps", c.warps, "lanes", lanes)},
			{"EARLY_LOADS", e(c.early)},
		})
	}
	return out
}

// qkBwdKnobs are the forward's and the backward's program count.
var qkBwdKnobs = append(append([]schedule.Knob(nil), qkKnobs...),
	schedule.Knob{Name: "PER_CU", Doc: "backward programs (each a loop over its tiles, with one row of weight-gradient partials) per CU", Domain: schedule.Range("1", "16")})

// qkBwdCandidates: 16 elements a lane (both halves of the rotate-half
// pairs: no shuffle) in 2 to 4 programs of 4 waves a CU, or 8 elements a
// lane in 4 to 16; with the early loads or without. On the H200 the
// first beat the second by 1.3× at the Qwen3 shape (2026-12-01): at 124
// registers only 4 programs are resident, but each thread fetches 64
// bytes a tile (32 of qkv, 32 of the row's gradient: the dq, dk and dv
// loads are masked to the row's kind) against 32, and the instructions an
// element are half. The untuned
// default holds 512 / WAVE elements a lane, the same 512 a wave on
// either wave size: 16 on wave32, 8 on wave64, where 16 need about 180
// VGPRs and hipcc spills SGPRs under angles=theta. (32 a lane do not
// fit: the backward holds more values a row than the forward.)
func qkBwdCandidates() []Candidate {
	var out []Candidate
	for _, c := range []struct{ per, pc, early string }{
		{"(512 / WAVE)", "4", "0"}, {"16", "4", "1"}, {"16", "2", "0"}, {"16", "3", "0"},
		{"8", "4", "0"}, {"8", "4", "1"}, {"8", "8", "0"}, {"8", "16", "0"},
	} {
		lanes := e("min(WAVE, D / per)", "per", c.per)
		out = append(out, Candidate{
			{"HEAD_D", e("D")},
			{"KV_HEADS", e("HKV")},
			{"GROUP", e("HQ / HKV")},
			{"WARPS", e("4")},
			{"LANES", lanes},
			{"ROWS", e("4 * WAVE / lanes", "lanes", lanes)},
			{"PER_CU", e(c.pc)},
			{"EARLY_LOADS", e(c.early)},
		})
	}
	return out
}

// qkTests are both directions' test shapes, with their own option sets.
func qkTests(options []Options) Tests {
	return Tests{
		Shapes: []Shape{
			{"B": 1, "S": 1, "HQ": 1, "HKV": 1, "D": 64},
			{"B": 1, "S": 2, "HQ": 1, "HKV": 1, "D": 64}, // the heads above (the kernels' constants): in one export's class
			{"B": 1, "S": 3, "HQ": 4, "HKV": 2, "D": 64},
			{"B": 2, "S": 5, "HQ": 2, "HKV": 1, "D": 128},
			{"B": 3, "S": 7, "HQ": 8, "HKV": 2, "D": 64},
		},
		// The last two: a token's heads fill whole default tiles, whose
		// angles under theta are worked once a token.
		GPU:     []Shape{{"B": 2, "S": 333, "HQ": 32, "HKV": 4, "D": 128}, {"B": 1, "S": 1001, "HQ": 64, "HKV": 8, "D": 64}, {"B": 2, "S": 129, "HQ": 16, "HKV": 8, "D": 128}, qkTokenShape},
		Options: options,
		Odd:     Shape{"B": 2, "S": 5, "HQ": 4, "HKV": 2, "D": 64},
		Wide:    Shape{"B": 8, "S": 32768, "HQ": 64, "HKV": 8, "D": 128},
	}
}

// qkOp completes and registers a QK-norm description with what both
// directions share: sizes, schedule space, size rules, example and bench
// shapes, inputs and their host checks.
func qkOp(op Op) *Op {
	op.Sizes = []string{"B", "S", "HQ", "HKV", "D"}
	if op.Knobs == nil {
		op.Knobs = qkKnobs
	}
	if op.Candidates == nil {
		op.Candidates = qkCandidates
	}
	op.Constraints = qkConstraints
	op.SizeRules, op.OptionRules = qkSizeRules, qkThetaRule
	op.Ceiling = e("100")
	op.Example = Shape{"B": 2, "S": 512, "HQ": 32, "HKV": 4, "D": 128}
	op.Bench, op.Peers = qkBench, true
	op.FillInputs, op.Validate = qkInputs, qkValidate
	return register(&op)
}

var qkBench = []Shape{
	{"B": 8, "S": 4096, "HQ": 32, "HKV": 4, "D": 128}, // Qwen3-30B-A3B
	{"B": 4, "S": 4096, "HQ": 64, "HKV": 8, "D": 64},  // GPT-OSS-120B
	{"B": 8, "S": 4096, "HQ": 32, "HKV": 8, "D": 128},
}

var qkIn = []Arg{
	{Name: "q_weight", DType: "{weight}", Shape: []expr.Expr{e("D")}, Role: Input, Doc: "RMSNorm weight of the query heads"},
	{Name: "k_weight", DType: "{weight}", Shape: []expr.Expr{e("D")}, Role: Input, Doc: "RMSNorm weight of the key heads"},
	{Name: "cos", DType: "f32", Shape: []expr.Expr{e("S"), e("D")}, Role: Input, When: "angles=table", Doc: "RoPE cos table by position"},
	{Name: "sin", DType: "f32", Shape: []expr.Expr{e("S"), e("D")}, Role: Input, When: "angles=table", Doc: "RoPE sin table by position"},
	{Name: "inv_freq", DType: "f32", Shape: []expr.Expr{e("D / 2")}, Role: Input, When: "angles=theta", Doc: "RoPE inverse frequencies θ^(−2i/D), i < D/2; angle = position · inv_freq"},
}

func qkTensors(lists ...[]Arg) []Arg {
	var out []Arg
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

var QKNormRope = qkOp(Op{
	Name: "qk_norm_rope",
	Doc:  "qkv[B,S,(HQ+2·HKV)·D] packed → q[B,S,HQ,D], k, v[B,S,HKV,D] bf16: q and k RMS-normalised per head and rotated (RoPE), v copied",
	Options: append(append([]Option(nil), qkOptions...),
		Option{Name: "round_norm", Doc: "round the normalised value to bf16 before the rotation, as the unfused chain does", Values: []string{"false", "true"}, Default: "false"}),
	Tensors: qkTensors(
		byOrder("qkv", "bf16", Input, "the packed projection", "(HQ + 2 * HKV) * D"),
		qkIn,
		byOrder("q", "bf16", Output, "", "HQ", "D"),
		byOrder("k", "bf16", Output, "", "HKV", "D"),
		byOrder("v", "bf16", Output, "", "HKV", "D"),
	),
	Kernels: []*Kernel{{Name: "qk_norm_rope", Build: qkNormFwdKernel, Grid: [3]expr.Expr{e("cdiv(B * S * (HQ + 2 * HKV), ROWS)"), e("1"), e("1")}}},
	Tests:   qkTests([]Options{{"order": "sbhd", "rope": "gptj", "weight": "f32", "eps": "1e-5", "round_norm": "true"}, {"angles": "theta", "rope": "gptj"}}),
	Goldens: []Variant{
		{Name: "sbhd_gptj", Options: Options{"order": "sbhd", "rope": "gptj", "weight": "f32", "round_norm": "true"}},
		{Name: "d64", Shape: Shape{"B": 4, "S": 256, "HQ": 64, "HKV": 8, "D": 64}},
		{Name: "theta", Options: Options{"angles": "theta"}},
		// 32 head rows a token, as many as a tile: the angles worked
		// once a token and broadcast through LDS.
		{Name: "theta_token", Options: Options{"angles": "theta"}, Shape: qkTokenShape},
	},
	Expected: qkForward,
})

var QKNormRopeBwd = qkOp(Op{
	Name:       "qk_norm_rope_bwd",
	Knobs:      qkBwdKnobs,
	Candidates: qkBwdCandidates,
	Doc:        "qkv, dq, dk, dv → d_qkv packed as qkv, d_q_weight[D], d_k_weight[D] f32: the backward of qk_norm_rope, weight gradients in a fixed order",
	Options:    append(append([]Option(nil), qkOptions...), Option{Name: "dx", Doc: "element type of d_qkv", Values: []string{"bf16", "f32"}, Default: "bf16"}),
	Tensors: qkTensors(
		byOrder("qkv", "bf16", Input, "the packed projection the forward read", "(HQ + 2 * HKV) * D"),
		qkIn,
		byOrder("dq", "bf16", Input, "", "HQ", "D"),
		byOrder("dk", "bf16", Input, "", "HKV", "D"),
		byOrder("dv", "bf16", Input, "", "HKV", "D"),
		byOrder("d_qkv", "{dx}", Output, "", "(HQ + 2 * HKV) * D"),
		[]Arg{
			{Name: "d_q_weight", DType: "f32", Shape: []expr.Expr{e("D")}, Role: Output},
			{Name: "d_k_weight", DType: "f32", Shape: []expr.Expr{e("D")}, Role: Output},
			{Name: "partials", DType: "f32", Shape: []expr.Expr{e(qkPartsRows), e("2"), e("D")}, Role: Scratch, Doc: "each backward program's weight-gradient sums, q then k"},
			{Name: "rope_tables", DType: "f32", Shape: []expr.Expr{e("2"), e("S"), e("D")}, Role: Scratch, When: "angles=theta", Doc: "angles=theta: cos, then sin, at every position, worked once by the first kernel for the backward to read as the tables"},
		},
	),
	Kernels: []*Kernel{
		{Name: "qk_rope_tables", Build: qkRopeTablesKernel, Grid: [3]expr.Expr{e("cdiv(S, ROWS)"), e("1"), e("1")}, Option: "angles=theta"},
		{Name: "qk_norm_rope_bwd", Build: qkNormBwdKernel, Grid: [3]expr.Expr{e(qkPartsExpr), e("1"), e("1")}},
		{Name: "qk_norm_rope_dw", Build: qkNormDwKernel, Grid: [3]expr.Expr{e("2"), e("D / cols", "cols", qkFoldCols), e("1")}},
	},
	Forward: QKNormRope,
	Tests:   qkTests([]Options{{"order": "sbhd", "rope": "gptj", "weight": "f32", "eps": "1e-5", "dx": "f32"}, {"angles": "theta"}}),
	Goldens: []Variant{
		{Name: "sbhd_gptj_f32", Options: Options{"order": "sbhd", "rope": "gptj", "weight": "f32", "dx": "f32"}},
		{Name: "theta", Options: Options{"angles": "theta"}},
		{Name: "theta_token", Options: Options{"angles": "theta"}, Shape: qkTokenShape},
	},
	Expected: qkBackward,
})

// qkInputs: real RoPE tables (θ = 10000) and weights near 1; adversarial,
// whole heads of zeros, of values whose mean square is far below eps, of
// values whose squares overflow f32, and of one NaN or Inf.
func qkInputs(c *Call, r *rand.Rand, adversarial bool, in map[string]*Tensor) {
	sl, d := c.Size("S"), c.Size("D")
	if c.Opt(opt.Angles) == "theta" {
		for k := 0; k < d/2; k++ {
			in["inv_freq"].Set(k, math.Pow(10000, -2*float64(k)/float64(d)))
		}
	} else {
		for s := 0; s < sl; s++ {
			for i := 0; i < d; i++ {
				ang := float64(s) * math.Pow(10000, -2*float64(pairOf(c, i, d))/float64(d))
				in["cos"].Set(s*d+i, math.Cos(ang))
				in["sin"].Set(s*d+i, math.Sin(ang))
			}
		}
	}
	for _, w := range []string{"q_weight", "k_weight"} {
		for i := 0; i < d; i++ {
			in[w].Set(i, 1+0.1*r.NormFloat64())
		}
	}
	if !adversarial {
		return
	}
	x := in["qkv"]
	heads := x.Elems() / d
	fill := func(h int, f func(i int) float64) {
		for i := 0; i < d; i++ {
			x.Set(h*d+i, f(i))
		}
	}
	for k, f := range []func(int) float64{
		func(int) float64 { return 0 },
		func(i int) float64 { return 1e-30 * float64(1+i%3) },
		func(i int) float64 { return 1e18 * float64(1-2*(i%2)) },
		func(i int) float64 { return 1e25 },
		func(i int) float64 { return map[bool]float64{true: math.NaN(), false: 1}[i == 3] },
		func(i int) float64 { return map[bool]float64{true: math.Inf(-1), false: 0.5}[i == 5] },
	} {
		if h := 1 + k*7; h < heads {
			fill(h, f)
		}
	}
}

// qkLayout is where each head row of qkv lives and goes.
type qkLayout struct {
	rows, nh, grp, d, hq, hkv int
	bs, sl                    int
	bshd                      bool
}

func qkLayoutOf(c *Call) qkLayout {
	l := qkLayout{bs: c.Size("B"), sl: c.Size("S"), hq: c.Size("HQ"), hkv: c.Size("HKV"), d: c.Size("D"), bshd: c.Opt(opt.Order) == "bshd"}
	l.nh = l.hq + 2*l.hkv
	l.grp = l.hq / l.hkv
	l.rows = l.bs * l.sl * l.nh
	return l
}

// head describes head row hr: its token, kind (0 q, 1 k, 2 v), position,
// and its element offset in q, k or v.
func (l qkLayout) head(hr int) (tok, kind, pos, out int) {
	tok, u := hr/l.nh, hr%l.nh
	g, j := u/(l.grp+2), u%(l.grp+2)
	pos = tok / l.bs
	if l.bshd {
		pos = tok % l.sl
	}
	switch {
	case j < l.grp:
		return tok, 0, pos, (tok*l.hq + g*l.grp + j) * l.d
	case j == l.grp:
		return tok, 1, pos, (tok*l.hkv + g) * l.d
	}
	return tok, 2, pos, (tok*l.hkv + g) * l.d
}

// partner is element i's RoPE partner and its sign in rot (transposed:
// in rotᵀ), for the rotate-half pairing (neox) or the interleaved one.
func partner(neox bool, i, d int, transposed bool) (int, float64) {
	p, sign := i-1, 1.0 // gptj, odd i: rot(x)[i] = x[i-1]
	switch {
	case neox && i < d/2:
		p, sign = i+d/2, -1
	case neox:
		p = i - d/2
	case i%2 == 0:
		p, sign = i+1, -1
	}
	if transposed {
		sign = -sign
	}
	return p, sign
}

func f32(x float64) float64 { return float64(float32(x)) }

// pairOf is the frequency index of element i: rotate-half pairs i with
// i ± D/2, the interleaved pairing 2k with 2k+1.
func pairOf(c *Call, i, d int) int {
	if c.Opt(opt.Rope) == "gptj" {
		return i / 2
	}
	return i % (d / 2)
}

// trigOf is cos and sin of element i at position pos: from the tables,
// or of the f32 angle pos · inv_freq[pair] (angles=theta), rounded to f32.
func trigOf(c *Call, in map[string]*Tensor) func(pos, i, d int) (float64, float64) {
	if c.Opt(opt.Angles) == "theta" {
		f := in["inv_freq"]
		return func(pos, i, d int) (float64, float64) {
			ang := f32(float64(pos) * f.Float(pairOf(c, i, d)))
			return f32(math.Cos(ang)), f32(math.Sin(ang))
		}
	}
	cs, sn := in["cos"], in["sin"]
	return func(pos, i, d int) (float64, float64) { return cs.Float(pos*d + i), sn.Float(pos*d + i) }
}

// maxThetaPos bounds positions with angles=theta: with inv_freq ≤ 1 the
// angles stay below 10^5, where the kernels' reduction is exact.
const maxThetaPos = 65536

// qkThetaRule keeps angles=theta's positions where its reduction is
// exact; it is in every manifest of that option.
var qkThetaRule = []OptionRule{{When: "angles=theta", Constraint: schedule.Constraint{
	Cond: e("S <= most", "most", maxThetaPos), Why: "with angles=theta, positions must stay below 65536 (use the tables)"}}}

// qkValidate: with angles=theta, inverse frequencies in [0, 1] (checked
// on the host only: a caller's device buffer is not read).
func qkValidate(c *Call, in map[string]*Tensor) error {
	if c.Opt(opt.Angles) != "theta" {
		return nil
	}
	f := in["inv_freq"]
	for i := 0; i < f.Elems(); i++ {
		if v := f.Float(i); !(v >= 0 && v <= 1) {
			return fmt.Errorf("inv_freq[%d] = %v: want a value in [0, 1]", i, v)
		}
	}
	return nil
}

// rrms is the reference 1/sqrt(mean(t²) + eps): squares and the mean
// rounded to f32 as the kernels round them, the sum in float64.
func rrms(c *Call, t []float64) float64 {
	var ss float64
	for _, v := range t {
		ss += f32(v * v)
	}
	return f32(1 / f32(math.Sqrt(f32(f32(f32(ss)/float64(len(t)))+qkEps(c)))))
}

// qkForward is the forward reference, and for q and k their values
// before the bf16 rounding with the error a float32 computation may add:
// 2^-20 of the terms (they may cancel), and with round_norm whatever the
// neighbouring bf16 roundings of n change where n lies that near a
// rounding boundary.
func qkForward(c *Call, in map[string]*Tensor) (map[string]*Tensor, map[string]Allow) {
	l := qkLayoutOf(c)
	out := Tensors(c.SpecsOf(Output, Scratch))
	allow := map[string]Allow{}
	for _, n := range []string{"q", "k"} {
		allow[n] = Allow{Value: make([]float64, out[n].Elems()), Slack: make([]float64, out[n].Elems())}
	}
	x := in["qkv"]
	trig, neox, roundNorm := trigOf(c, in), c.Opt(opt.Rope) == "neox", c.Flag(opt.RoundNorm)
	rb := func(v float64) float64 { return float64(refnum.BF16ToF32(refnum.BF16(float32(v)))) }
	refParallel(l.rows, func(rlo, rhi, _ int) {
		t, n := make([]float64, l.d), make([]float64, l.d)
		// Without round_norm, n is one value; with it, the roundings of n's
		// neighbours within 2^-20 (the kernels' f32 n may be any of them).
		lo, hi := make([]float64, l.d), make([]float64, l.d)
		for hr := rlo; hr < rhi; hr++ {
			_, kind, pos, o := l.head(hr)
			name := [...]string{"q", "k", "v"}[kind]
			if kind == 2 {
				for i := 0; i < l.d; i++ {
					out["v"].SetBits(o+i, x.Bits(hr*l.d+i))
				}
				continue
			}
			w := in[[...]string{"q_weight", "k_weight"}[kind]]
			for i := range t {
				t[i] = x.Float(hr*l.d + i)
			}
			r := rrms(c, t)
			for i := range n {
				n[i] = f32(f32(t[i]*r) * w.Float(i))
				lo[i], hi[i] = n[i], n[i]
				if roundNorm {
					lo[i], hi[i] = rb(n[i]-math.Abs(n[i])/(1<<20)), rb(n[i]+math.Abs(n[i])/(1<<20))
					n[i] = rb(n[i])
				}
			}
			a := allow[name]
			for i := range n {
				p, sign := partner(neox, i, l.d, false)
				cs, sn := trig(pos, i, l.d)
				ta, tb := f32(n[i]*cs), f32(sign*n[p]*sn)
				setRef(out[name], o+i, ta+tb)
				v, base := ta+tb, (math.Abs(ta)+math.Abs(tb))/(1<<20)
				slack := base
				for _, ni := range [2]float64{lo[i], hi[i]} {
					for _, np := range [2]float64{lo[p], hi[p]} {
						slack = max(slack, math.Abs(ni*cs+sign*np*sn-v)+base)
					}
				}
				a.Value[o+i], a.Slack[o+i] = v, slack
			}
		}
	})
	return out, allow
}

// qkBackward is the backward reference, with the allowances as above.
func qkBackward(c *Call, in map[string]*Tensor) (map[string]*Tensor, map[string]Allow) {
	l := qkLayoutOf(c)
	out := Tensors(c.SpecsOf(Output))
	dx := out["d_qkv"]
	allow := map[string]Allow{}
	for _, n := range []string{"d_qkv", "d_q_weight", "d_k_weight"} {
		allow[n] = Allow{Value: make([]float64, out[n].Elems()), Slack: make([]float64, out[n].Elems())}
	}
	x := in["qkv"]
	trig, neox := trigOf(c, in), c.Opt(opt.Rope) == "neox"
	// Each chunk's weight-gradient sums, added in chunk order below.
	var dwc, dwAbsc [refChunks][2][]float64
	refParallel(l.rows, func(rlo, rhi, chunk int) {
		dw := [2][]float64{make([]float64, l.d), make([]float64, l.d)}
		dwAbs := [2][]float64{make([]float64, l.d), make([]float64, l.d)}
		dwc[chunk], dwAbsc[chunk] = dw, dwAbs
		t, xh, dy, dn, dnAbs, dxh := make([]float64, l.d), make([]float64, l.d), make([]float64, l.d), make([]float64, l.d), make([]float64, l.d), make([]float64, l.d)
		a := allow["d_qkv"]
		for hr := rlo; hr < rhi; hr++ {
			_, kind, pos, o := l.head(hr)
			if kind == 2 {
				for i := 0; i < l.d; i++ {
					setRef(dx, hr*l.d+i, in["dv"].Float(o+i))
					a.Value[hr*l.d+i] = in["dv"].Float(o + i)
				}
				continue
			}
			dout := in[[...]string{"dq", "dk"}[kind]]
			w := in[[...]string{"q_weight", "k_weight"}[kind]]
			for i := range t {
				t[i], dy[i] = x.Float(hr*l.d+i), dout.Float(o+i)
			}
			r := rrms(c, t)
			for i := range xh {
				xh[i] = f32(t[i] * r)
			}
			for i := range dn {
				p, sign := partner(neox, i, l.d, true)
				cs, _ := trig(pos, i, l.d)
				_, sn := trig(pos, p, l.d)
				dn[i] = f32(f32(dy[i]*cs) + sign*f32(dy[p]*sn))
				// The terms' size bounds dn's error where they cancel (cos
				// and sin computed in the kernel are within an ulp).
				dnAbs[i] = math.Abs(dy[i]*cs) + math.Abs(dy[p]*sn)
				dw[kind][i] += f32(dn[i] * xh[i])
				dwAbs[kind][i] += dnAbs[i] * math.Abs(xh[i])
			}
			var dot, dotAbs float64
			for i := range dxh {
				dxh[i] = f32(dn[i] * w.Float(i))
				dot += f32(dxh[i] * xh[i])
				dotAbs += dnAbs[i] * math.Abs(w.Float(i)*xh[i])
			}
			mean := f32(f32(dot) / float64(l.d))
			for i := range dxh {
				m := f32(xh[i] * mean)
				v := f32(dxh[i]-m) * r
				setRef(dx, hr*l.d+i, v)
				a.Value[hr*l.d+i] = v
				slack := math.Abs(r) * (dnAbs[i]*math.Abs(w.Float(i))/(1<<20) + math.Abs(xh[i])*dotAbs/float64(l.d)/(1<<18))
				if overF32(dnAbs[i]*max(1, math.Abs(w.Float(i)))) || overF32(dotAbs) {
					// The kernel's f32 terms or sums may overflow where this
					// float64 sum does not: the result may be ±Inf or NaN.
					slack = math.Inf(1)
				}
				a.Slack[hr*l.d+i] = slack
			}
		}
	})
	dw := [2][]float64{make([]float64, l.d), make([]float64, l.d)}
	dwAbs := [2][]float64{make([]float64, l.d), make([]float64, l.d)}
	for k := range dwc {
		for j := range dw {
			for i := range dw[j] {
				dw[j][i] += dwc[k][j][i]
				dwAbs[j][i] += dwAbsc[k][j][i]
			}
		}
	}
	for k, name := range []string{"d_q_weight", "d_k_weight"} {
		for i := 0; i < l.d; i++ {
			out[name].Set(i, dw[k][i])
			allow[name].Value[i], allow[name].Slack[i] = dw[k][i], 1e-5*dwAbs[k][i]
			if overF32(dwAbs[k][i]) {
				allow[name].Slack[i] = math.Inf(1)
			}
		}
	}
	return out, allow
}

// overF32 reports whether a bound on an f32 computation's terms reaches
// the largest f32: the computation may then overflow.
func overF32(x float64) bool { return x > math.MaxFloat32*(1-1.0/(1<<18)) } // the f32 roundings may carry it past

// setRef writes a reference value rounded to t's type by refnum's own
// rounding (not the kernels').
func setRef(t *Tensor, i int, x float64) {
	if t.DType.K == ir.KBF16 {
		t.SetBits(i, uint64(refnum.BF16(float32(x))))
		return
	}
	t.SetBits(i, uint64(math.Float32bits(float32(x))))
}
