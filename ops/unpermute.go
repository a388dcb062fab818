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

// moe_unpermute brings the experts' output rows back to their tokens:
// y[t] = Σ_k probs[t, k] · expert_out[row_map[t, k]] over the routes with
// a row (row_map ≥ 0), accumulated in f32 in k order, each term by one
// fused multiply-add (acc = fma(p, e, acc), from 0), rounded once to bf16;
// a token with no route gets a row of zeros. Without probs (probs=false:
// applied in the experts' activation, as grouped_swiglu_probs does) the
// terms are added (acc = acc + e). row_map is moe_permute's; a row outside
// [0, T·TOPK + E·(PAD−1)) counts as −1 on the device (the host refuses
// it first), so nothing is read outside expert_out. moe_permute_bwd is
// the same sum without probs, d_x from d_perm: the permute's gradient.
//
// One launch, a program a block of ROWS tokens: each route's row index is
// read once, then the columns in tiles of BLOCK_H, the routes' rows
// gathered tile by tile.

var unpermuteTests = Tests{
	Shapes: []Shape{{"T": 1, "H": 8, "E": 1, "TOPK": 1, "PAD": 2}, {"T": 3, "H": 8, "E": 1, "TOPK": 1, "PAD": 6}, {"T": 37, "H": 24, "E": 3, "TOPK": 2, "PAD": 4},
		{"T": 70, "H": 136, "E": 5, "TOPK": 3, "PAD": 16}, {"T": 129, "H": 8, "E": 33, "TOPK": 8, "PAD": 2}},
	GPU: []Shape{{"T": 4096, "H": 2048, "E": 16, "TOPK": 8, "PAD": 16}, {"T": 1000, "H": 7168, "E": 32, "TOPK": 8, "PAD": 128},
		{"T": 777, "H": 4096, "E": 64, "TOPK": 6, "PAD": 1}},
	Odd:       Shape{"T": 100, "H": 72, "E": 6, "TOPK": 4, "PAD": 8},
	Schedules: []schedule.Params{{"ROWS": 2, "BLOCK_H": 16, "WARPS": 1, "TOPKB": 4}, {"ROWS": 16, "BLOCK_H": 8, "WARPS": 2, "TOPKB": 8}},
	Wide:      Shape{"T": 1 << 17, "H": 16384, "E": 64, "TOPK": 8, "PAD": 128},
}

var unpermuteKnobs = []schedule.Knob{
	warpsKnob,
	{Name: "ROWS", Doc: "tokens a program", Domain: schedule.Pow2("1", "64")},
	{Name: "BLOCK_H", Doc: "columns per tile", Domain: schedule.Pow2("8", "16384")},
	{Name: "TOPKB", Doc: "routes a token, unrolled (at least TOPK)", Domain: schedule.Pow2("1", "16")},
}

var unpermuteConstraints = []schedule.Constraint{
	{Cond: e("TOPKB >= TOPK"), Why: "a program reads every route of its tokens: TOPKB must be at least TOPK"},
	tileLimit("ROWS * BLOCK_H"),
	{Cond: e("cdiv(T, ROWS) <= 2147483647"), Why: "grid axis 0 (tokens) holds at most 2^31-1 programs"},
}

var unpermuteSizeRules = []schedule.Constraint{
	{Cond: e("H % 8 == 0"), Why: "H must be a multiple of 8 (16-byte vectors of bf16)"},
	{Cond: e("TOPK <= 16"), Why: "TOPK must be at most 16"},
	{Cond: e("PAD >= 1 && PAD <= 4096"), Why: "PAD must be within 1 … 4096"},
	{Cond: e(permuteCap + " <= 2147483647"), Why: "the permuted rows (T·TOPK + E·(PAD−1)) must be fewer than 2^31"},
}

// unpermuteCandidates: 8 or 16 columns a lane of a tile 4 or 8 waves wide,
// as many tokens as fill it.
func unpermuteCandidates() []Candidate {
	var out []Candidate
	for _, c := range [][2]string{{"8", "8"}, {"16", "8"}, {"8", "4"}, {"16", "4"}} {
		out = append(out, Candidate{
			{"BLOCK_H", e("min(pow2ceil(H), " + c[0] + " * WAVE * " + c[1] + ")")},
			{"WARPS", e("max(1, min(" + c[1] + ", BLOCK_H / (8 * WAVE)))")},
			{"ROWS", e("max(1, min(64, " + c[0] + " * WAVE * WARPS / BLOCK_H))")},
			{"TOPKB", e("pow2ceil(TOPK)")},
		})
	}
	return out
}

func unpermuteOp(name, doc, rows, grads string, probs bool) *Op {
	tensors := []Arg{
		{Name: rows, DType: "bf16", Shape: []expr.Expr{e(permuteCap), e("H")}, Role: Input, Doc: "the permuted rows (moe_permute's layout)"},
		{Name: "row_map", DType: "i32", Shape: []expr.Expr{e("T"), e("TOPK")}, Role: Input, Doc: "moe_permute's row_map: route (t, k)'s row, or −1"},
	}
	options := []Option{{Name: "ep", Doc: "generated routing only, as moe_permute's", Values: MoEPermute.Options[len(MoEPermute.Options)-1].Values, Default: "8"}}
	if probs {
		tensors = append(tensors, Arg{Name: "probs", DType: "f32", Shape: []expr.Expr{e("T"), e("TOPK")}, Role: Input, When: "probs=true"})
		options = append(options, Option{Name: "probs", Doc: "weight each route by its probability (false: a plain sum)", Values: []string{"true", "false"}, Default: "true"})
	}
	tensors = append(tensors, Arg{Name: grads, DType: "bf16", Shape: []expr.Expr{e("T"), e("H")}, Role: Output})
	return register(&Op{
		Name:        name,
		Doc:         doc,
		Sizes:       []string{"T", "H", "E", "TOPK", "PAD"},
		Options:     options,
		Tensors:     tensors,
		Kernels:     []*Kernel{{Name: name, Build: unpermuteKernel(rows, grads), Grid: [3]expr.Expr{e("cdiv(T, ROWS)"), e("1"), e("1")}}},
		Knobs:       unpermuteKnobs,
		Constraints: unpermuteConstraints,
		SizeRules:   unpermuteSizeRules,
		Candidates:  unpermuteCandidates,
		Ceiling:     e("100"),
		Example:     MoEPermute.Example,
		Bench:       MoEPermute.Bench,
		Peers:       true,
		FillInputs:  unpermuteInputs,
		Validate:    checkRowMap,
		Bytes:       unpermuteBytes(rows),
		AnyNaN:      true,
		Tests:       unpermuteTests,
		Reference:   func(c *Call, in map[string]*Tensor) map[string]*Tensor { return unpermuteRef(c, in, rows, grads) },
	})
}

var MoEUnpermute = unpermuteOp("moe_unpermute",
	"expert_out[T·TOPK+E·(PAD−1), H], row_map[T,TOPK], probs[T,TOPK] → y[T,H] = Σ_k probs·expert_out[row_map] (f32, k order), bf16",
	"expert_out", "y", true)

var MoEPermuteBwd = unpermuteOp("moe_permute_bwd",
	"d_perm[T·TOPK+E·(PAD−1), H], row_map[T,TOPK] → d_x[T,H] = Σ_k d_perm[row_map] (f32, k order), bf16: moe_permute's gradient",
	"d_perm", "d_x", false)

// unpermuteInputs: row_map from a routing as moe_permute lays it out,
// the rows of the layout's padding NaN (never read).
func unpermuteInputs(c *Call, r *rand.Rand, adversarial bool, in map[string]*Tensor) {
	rowMap, _, _ := permuteLayout(c, routing(c, r, adversarial))
	for i, v := range rowMap {
		in["row_map"].SetBits(i, uint64(uint32(int32(v))))
	}
	if !adversarial {
		return
	}
	var rows *Tensor // the permuted rows: the op's one bf16 input
	for _, t := range in {
		if t.DType.K == ir.KBF16 {
			rows = t
		}
	}
	used := make([]bool, rows.Shape[0])
	for _, v := range rowMap {
		if v >= 0 {
			used[v] = true
		}
	}
	h := c.Size("H")
	for r, ok := range used {
		if !ok {
			for j := range h {
				rows.Set(r*h+j, math.NaN())
			}
		}
	}
}

func checkRowMap(c *Call, in map[string]*Tensor) error {
	rows := int64(c.Size("T")*c.Size("TOPK") + c.Size("E")*(c.Size("PAD")-1))
	topk := c.Size("TOPK")
	for i, v := range in["row_map"].Ints() {
		if v < -1 || v >= rows {
			return fmt.Errorf("row_map[%d, %d] = %d: want a permuted row in [0, %d) or −1", i/topk, i%topk, v, rows)
		}
	}
	return nil
}

func unpermuteBytes(rows string) func(c *Call, in map[string]*Tensor) int {
	return func(c *Call, in map[string]*Tensor) int {
		h := c.Size("H")
		routes := 0
		for _, v := range in["row_map"].Ints() {
			if v >= 0 {
				routes++
			}
		}
		n := routes*h*2 + c.Size("T")*h*2 + in["row_map"].Bytes()
		if p := in["probs"]; p != nil {
			n += p.Bytes()
		}
		return n
	}
}

func unpermuteRef(c *Call, in map[string]*Tensor, rows, grads string) map[string]*Tensor {
	h, topk := c.Size("H"), c.Size("TOPK")
	out := Tensors(c.SpecsOf(Output))
	src, dst, rm, probs := in[rows], out[grads], in["row_map"].Ints(), in["probs"]
	var pv []float32
	if probs != nil {
		pv = probs.Floats()
	}
	rowsParallel(c.Size("T"), h*topk, func(lo, hi, _ int) {
		acc := make([]float32, h)
		for t := lo; t < hi; t++ {
			clear(acc)
			for k := range topk {
				r := rm[t*topk+k]
				if r < 0 {
					continue
				}
				for j := range acc {
					v := refnum.BF16ToF32(uint16(src.Bits(int(r)*h + j)))
					if pv != nil {
						acc[j] = refnum.FMA(pv[t*topk+k], v, acc[j])
					} else {
						acc[j] += v
					}
				}
			}
			for j, v := range acc {
				dst.SetBits(t*h+j, uint64(refnum.BF16(v)))
			}
		}
	})
	return out
}
