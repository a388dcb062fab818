package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

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
	{Cond: e("rows <= 2147483647", "rows", permuteCap), Why: "the permuted rows (T·TOPK + E·(PAD−1)) must be fewer than 2^31"},
}

// unpermuteCandidates: 8 or 16 columns a lane of a tile 4 or 8 waves wide,
// as many tokens as fill it.
func unpermuteCandidates() []Candidate {
	var out []Candidate
	for _, c := range [][2]string{{"8", "8"}, {"16", "8"}, {"8", "4"}, {"16", "4"}} {
		out = append(out, Candidate{
			{"BLOCK_H", e("min(pow2ceil(H), per * WAVE * warps)", "per", c[0], "warps", c[1])},
			{"WARPS", e("max(1, min(warps, BLOCK_H / (8 * WAVE)))", "warps", c[1])},
			{"ROWS", e("max(1, min(64, per * WAVE * WARPS / BLOCK_H))", "per", c[0])},
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
	poisonUnrouted(rows, rowMap)
}

// poisonUnrouted fills the permuted rows no route reads (padding, and past
// the used rows) with NaN: a kernel that read one would show it.
func poisonUnrouted(rows *Tensor, rowMap []int64) {
	used := make([]bool, rows.Shape[0])
	for _, v := range rowMap {
		if v >= 0 {
			used[v] = true
		}
	}
	h := rows.Shape[1]
	for r, ok := range used {
		if !ok {
			for j := range h {
				rows.Set(r*h+j, math.NaN())
			}
		}
	}
}

// permuteCapacity is the permuted rows' capacity, T·TOPK + E·(PAD−1).
func permuteCapacity(c *Call) int64 {
	return int64(c.Size("T")*c.Size("TOPK") + c.Size("E")*(c.Size("PAD")-1))
}

func checkRowMap(c *Call, in map[string]*Tensor) error {
	rows := permuteCapacity(c)
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

// moe_unpermute_bwd is moe_unpermute's gradient, returned in FP8 for the
// experts' backward GEMMs: each route's row d_expert_out[row_map[t, k]] =
// probs[t, k] · dy[t] (an f32 product, then quantized as rowwise_cast
// quantizes a row: e5m2 by default, the HYBRID backward format; or bf16
// with quant=none; with quant=tensorwise every row shares one scale,
// tensorwise_cast's over all the routes' products), and d_probs[t, k] =
// Σ_h dy[t, h] · expert_out[row, h], f32 terms summed in the schedule's
// order (held within (H − 1)·2^−24 of Σ|term| of the float64 sum), 0 for a
// route without a row. Without probs (probs=false) each route's row is
// dy[t] and there is no d_probs. The padding rows (each expert's rows past
// its counts, as offsets and counts lay them out) are written as zeros
// (under quant=rowwise with a row of zeros' inv_scale); rows from
// offsets[E-1] on are not written. The host holds row_map to the layout:
// every route's row within its expert's used rows, no two routes on one
// row.
//
// One launch (two under quant=tensorwise): ROWS tokens a program, the dy
// rows a route writes in registers, each route's row scaled, quantized and
// stored, and its d_prob a reduction against the expert's row; the
// programs also zero the padding rows, expert e by program e mod the
// programs. quant=tensorwise adds moe_unpermute_bwd_amax before it: the
// products' amax, a persistent loop over ROWS tokens a trip, one relaxed
// atomic max a program (dy is read twice).
var MoEUnpermuteBwd = register(&Op{
	Name: "moe_unpermute_bwd",
	Doc: "dy[T,H], row_map, probs, expert_out, offsets[E], counts[E] → d_expert_out[T·TOPK+E·(PAD−1),H] = probs·dy " +
		"(fp8 rowwise or tensorwise, or bf16), padding rows zero, d_probs[T,TOPK] = ⟨dy, expert_out[row]⟩",
	Sizes: []string{"T", "H", "E", "TOPK", "PAD"},
	Options: []Option{
		{Name: "fp8", Doc: "fp8 family; the format itself comes from the target", Values: []string{"e5m2", "e4m3"}, Default: "e5m2"},
		{Name: "pow2", Doc: "round scales down to powers of two", Values: []string{"false", "true"}, Default: "false"},
		{Name: "quant", Doc: "d_expert_out fp8 with a scale per row (rowwise) or one for every row (tensorwise), or bf16 (none)",
			Values: []string{"rowwise", "none", "tensorwise"}, Default: "rowwise"},
		{Name: "probs", Doc: "the forward weighted the routes by probs: scale by them and return d_probs", Values: []string{"true", "false"}, Default: "true"},
		MoEUnpermute.Options[0],
	},
	Conflicts: []Conflict{
		{When: "quant=none,fp8=e4m3", Why: "quant=none writes bf16: there is no FP8 format to choose"},
		{When: "quant=none,pow2=true", Why: "quant=none writes bf16: there are no scales to round"},
	},
	Tensors: []Arg{
		{Name: "dy", DType: "bf16", Shape: []expr.Expr{e("T"), e("H")}, Role: Input},
		{Name: "row_map", DType: "i32", Shape: []expr.Expr{e("T"), e("TOPK")}, Role: Input, Doc: "moe_permute's row_map"},
		{Name: "probs", DType: "f32", Shape: []expr.Expr{e("T"), e("TOPK")}, Role: Input, When: "probs=true"},
		{Name: "expert_out", DType: "bf16", Shape: []expr.Expr{e(permuteCap), e("H")}, Role: Input, When: "probs=true", Doc: "the forward's input rows"},
		{Name: "offsets", DType: "i32", Shape: []expr.Expr{e("E")}, Role: Input, Doc: "moe_permute's offsets"},
		{Name: "counts", DType: "i32", Shape: []expr.Expr{e("E")}, Role: Input, Doc: "moe_permute's counts"},
		{Name: "d_expert_out", DType: "fp8", Shape: []expr.Expr{e(permuteCap), e("H")}, Role: Output, When: "quant=rowwise|tensorwise", Rows: permuteRows,
			Doc: "each route's gradient row; rows from offsets[E-1] on are not written"},
		{Name: "d_expert_out", DType: "bf16", Shape: []expr.Expr{e(permuteCap), e("H")}, Role: Output, When: "quant=none", Rows: permuteRows,
			Doc: "each route's gradient row; rows from offsets[E-1] on are not written"},
		{Name: "inv_scale", DType: "f32", Shape: []expr.Expr{e(permuteCap)}, Role: Output, When: "quant=rowwise", Rows: permuteRows},
		{Name: "inv_scale", DType: "f32", Shape: []expr.Expr{e("1")}, Role: Output, When: "quant=tensorwise", Doc: "the one inverse scale of every row"},
		{Name: "amax", DType: "f32", Shape: []expr.Expr{e("1")}, Role: Scratch, Init: 0, When: "quant=tensorwise", Doc: "the products' amax, combined by atomics"},
		{Name: "d_probs", DType: "f32", Shape: []expr.Expr{e("T"), e("TOPK")}, Role: Output, When: "probs=true"},
	},
	Kernels: []*Kernel{
		{Name: "moe_unpermute_bwd_amax", Build: unpermuteBwdAmaxKernel, Grid: moeAmaxGrid, Option: "quant=tensorwise"},
		{Name: "moe_unpermute_bwd", Build: unpermuteBwdKernel, Grid: [3]expr.Expr{e("cdiv(T, ROWS)"), e("1"), e("1")}},
	},
	Knobs: []schedule.Knob{
		warpsKnob,
		{Name: "ROWS", Doc: "tokens a program", Domain: schedule.Pow2("1", "64")},
		{Name: "BLOCK_H", Doc: "columns per tile", Domain: schedule.Pow2("8", "16384")},
		{Name: "TILES", Doc: "tiles a row, unrolled: the row is TILES · BLOCK_H columns wide", Domain: schedule.Range("1", "16")},
		{Name: "TOPKB", Doc: "routes a token, unrolled (at least TOPK)", Domain: schedule.Pow2("1", "16")},
	},
	Constraints: []schedule.Constraint{
		{Cond: e("TOPKB >= TOPK"), Why: "a program reads every route of its tokens: TOPKB must be at least TOPK"},
		{Cond: e("TILES * BLOCK_H >= H"), Why: "a row's tiles (TILES · BLOCK_H) must cover H"},
		{Cond: e("(TILES - 1) * BLOCK_H < H"), Why: "every tile of a row must hold a column"},
		tileLimit("ROWS * BLOCK_H"),
		{Cond: e("TILES * ROWS * BLOCK_H <= 32768"), Why: "a program holds at most 32768 columns of dy in registers"},
		{Cond: e("cdiv(T, ROWS) <= 2147483647"), Why: "grid axis 0 (tokens) holds at most 2^31-1 programs"},
	},
	SizeRules: append(append([]schedule.Constraint(nil), unpermuteSizeRules...),
		schedule.Constraint{Cond: e("H <= 32768"), Why: "H must be at most 32768 (a row is held in registers)"}),
	Candidates: func() []Candidate {
		var out []Candidate
		for _, per := range []string{"16", "8", "32"} {
			out = append(out, Candidate{
				{"BLOCK_H", e("pow2ceil(H) <= 4096 ? pow2ceil(H) : 1024")},
				{"TILES", e("cdiv(H, BLOCK_H)")},
				{"WARPS", e("max(1, min(pow2ceil(cdiv(TILES * BLOCK_H, per * WAVE)), MAXBLOCK / WAVE))", "per", per)},
				{"ROWS", e("max(1, min(8, pow2ceil(cdiv(per * WAVE * WARPS, TILES * BLOCK_H))))", "per", per)},
				{"TOPKB", e("pow2ceil(TOPK)")},
			})
		}
		return out
	},
	Ceiling:    e("100"),
	Example:    MoEPermute.Example,
	Bench:      MoEPermute.Bench,
	Peers:      true,
	FillInputs: unpermuteBwdInputs,
	Validate:   checkUnpermuteBwd,
	Bytes:      unpermuteBwdBytes,
	AnyNaN:     true,
	Tests: Tests{
		Shapes: unpermuteTests.Shapes,
		GPU:    unpermuteTests.GPU,
		Options: []Options{{"quant": "none"}, {"probs": "false", "fp8": "e4m3", "pow2": "true", "ep": "1"},
			{"quant": "tensorwise"}, {"quant": "tensorwise", "probs": "false", "pow2": "true", "ep": "1"}},
		Odd: unpermuteTests.Odd,
		Schedules: []schedule.Params{{"ROWS": 2, "BLOCK_H": 16, "TILES": 5, "WARPS": 1, "TOPKB": 4},
			{"ROWS": 16, "BLOCK_H": 8, "TILES": 9, "WARPS": 2, "TOPKB": 8}},
		Wide: unpermuteTests.Wide,
	},
	Goldens:  []Variant{{Name: "none", Options: Options{"quant": "none", "probs": "false"}}, {Name: "tensorwise", Options: Options{"quant": "tensorwise"}}},
	Expected: unpermuteBwdRef,
})

func unpermuteBwdInputs(c *Call, r *rand.Rand, adversarial bool, in map[string]*Tensor) {
	rowMap, counts, ends := permuteLayout(c, routing(c, r, adversarial))
	for i, v := range rowMap {
		in["row_map"].SetBits(i, uint64(uint32(int32(v))))
	}
	for g := range counts {
		in["counts"].SetBits(g, uint64(counts[g]))
		in["offsets"].SetBits(g, uint64(ends[g]))
	}
	eo := in["expert_out"]
	if !adversarial || eo == nil {
		return
	}
	poisonUnrouted(eo, rowMap)
}

// checkUnpermuteBwd holds offsets, counts and row_map to moe_permute's
// layout: offsets nondecreasing within the capacity, each count within its
// expert's rows, each route's row one of an expert's used rows, no row
// twice (the padding kernel and the routes would race for it).
func checkUnpermuteBwd(c *Call, in map[string]*Tensor) error {
	if err := checkRowMap(c, in); err != nil {
		return err
	}
	capRows := permuteCapacity(c)
	offs, counts := in["offsets"].Ints(), in["counts"].Ints()
	owner := map[int64]bool{}
	prev := int64(0)
	for g := range offs {
		if offs[g] < prev || offs[g] > capRows {
			return fmt.Errorf("offsets[%d] = %d: want nondecreasing ends within [%d, %d]", g, offs[g], prev, capRows)
		}
		if counts[g] < 0 || counts[g] > offs[g]-prev {
			return fmt.Errorf("counts[%d] = %d: expert %d holds %d rows", g, counts[g], g, offs[g]-prev)
		}
		prev = offs[g]
	}
	topk := c.Size("TOPK")
	for i, r := range in["row_map"].Ints() {
		if r < 0 {
			continue
		}
		g := sort.Search(len(offs), func(i int) bool { return offs[i] > r }) // the expert holding row r
		start := int64(0)
		if g > 0 {
			start = offs[g-1]
		}
		if g == len(offs) || r >= start+counts[g] {
			return fmt.Errorf("row_map[%d, %d] = %d: not a used row of any expert (offsets and counts)", i/topk, i%topk, r)
		}
		if owner[r] {
			return fmt.Errorf("row_map[%d, %d] = %d: a row another route also names", i/topk, i%topk, r)
		}
		owner[r] = true
	}
	return nil
}

func unpermuteBwdBytes(c *Call, in map[string]*Tensor) int {
	h, ne := c.Size("H"), c.Size("E")
	routes := 0
	for _, v := range in["row_map"].Ints() {
		if v >= 0 {
			routes++
		}
	}
	rows := int(in["offsets"].Ints()[ne-1])
	per, scales := h*c.DType("d_expert_out").Bytes(), 0
	switch c.Opt(opt.Quant) {
	case "rowwise":
		per += 4
	case "tensorwise":
		scales = 4 // and dy is read once: the ideal, not the kernels' two reads
	}
	n := c.Size("T")*h*2 + rows*per + scales + in["row_map"].Bytes() + 2*ne*4
	if c.Flag(opt.Probs) {
		n += routes*h*2 + 2*in["probs"].Bytes() // expert_out's routed rows; probs and d_probs
	}
	return n
}

func unpermuteBwdRef(c *Call, in map[string]*Tensor) (map[string]*Tensor, map[string]Allow) {
	h, topk := c.Size("H"), c.Size("TOPK")
	out := Tensors(c.SpecsOf(Output))
	allow := map[string]Allow{}
	dy, rm, probs, eo := in["dy"], in["row_map"].Ints(), in["probs"], in["expert_out"]
	if probs != nil {
		allow["d_probs"] = Allow{Value: make([]float64, len(rm)), Slack: make([]float64, len(rm))}
	}
	rowwise, tensorwise := c.Opt(opt.Quant) == "rowwise", c.Opt(opt.Quant) == "tensorwise"
	dst := out["d_expert_out"]
	enc := refnum.Encoder(c.Format)
	prob := func(i int) float32 {
		if probs == nil {
			return 1
		}
		return float32(probs.Float(i))
	}
	var tensorScale float32
	if tensorwise { // one amax over every route's products, first
		parts := make([]float32, refChunks)
		rowsParallel(c.Size("T"), h*topk, func(lo, hi, chunk int) {
			for t := lo; t < hi; t++ {
				for k := range topk {
					if i := t*topk + k; rm[i] >= 0 {
						for j := range h {
							parts[chunk] = refnum.MaxNum(parts[chunk], refnum.Abs(refnum.BF16ToF32(uint16(dy.Bits(t*h+j)))*prob(i)))
						}
					}
				}
			}
		})
		tensorScale = refScale(refAmax(parts), c)
		refnum.PutF32(out["inv_scale"].Data, 0, 1/tensorScale)
	}
	if rowwise {
		offs, counts := in["offsets"].Ints(), in["counts"].Ints()
		zero := 1 / refScale(0, c)
		prev := int64(0)
		for g := range offs {
			for r := prev + counts[g]; r < offs[g]; r++ {
				refnum.PutF32(out["inv_scale"].Data, int(r), zero)
			}
			prev = offs[g]
		}
	}
	rowsParallel(c.Size("T"), h*topk, func(lo, hi, _ int) {
		g := make([]float32, h)
		for t := lo; t < hi; t++ {
			for k := range topk {
				i := t*topk + k
				r := int(rm[i])
				if r < 0 {
					continue
				}
				p := prob(i)
				var sum, abs float64
				for j := range g {
					d := refnum.BF16ToF32(uint16(dy.Bits(t*h + j)))
					g[j] = d * p
					if probs != nil {
						term := float64(d * refnum.BF16ToF32(uint16(eo.Bits(r*h+j))))
						sum, abs = sum+term, abs+math.Abs(term)
					}
				}
				if probs != nil {
					setRef(out["d_probs"], i, sum)
					slack := float64(max(h-1, 0)) * abs / (1 << 24)
					if abs > math.MaxFloat32 {
						slack = math.Inf(1)
					}
					allow["d_probs"].Value[i], allow["d_probs"].Slack[i] = sum, slack
				}
				switch {
				case tensorwise:
					for j, v := range g {
						dst.Data[r*h+j] = enc(v * tensorScale)
					}
					continue
				case !rowwise:
					for j, v := range g {
						dst.SetBits(r*h+j, uint64(refnum.BF16(v)))
					}
					continue
				}
				scale := refScale(refAmax(g), c)
				for j, v := range g {
					dst.Data[r*h+j] = enc(v * scale)
				}
				refnum.PutF32(out["inv_scale"].Data, r, 1/scale)
			}
		}
	})
	return out, allow
}
