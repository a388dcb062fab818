package ops

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/fp8gen/fp8gen/expr"
	"github.com/fp8gen/fp8gen/internal/refnum"
	"github.com/fp8gen/fp8gen/schedule"
)

// moe_permute groups a rank's received tokens by expert for the grouped
// GEMM, quantizing as it copies. indices[t, k] is the k-th local expert
// token t is routed to, in [0, E), or −1 where that route leaves the rank.
// The permuted rows are ordered by expert, then token, then k (a stable
// order: the result never depends on the schedule); each expert's rows
// start at a multiple of PAD, the rows between its used ones and the next
// expert's start written as zeros (under quant=rowwise inv_scale there
// that of a row of zeros; out_probs 0). out holds T·TOPK + E·(PAD−1)
// rows, the most any routing fills; its rows past offsets[E-1] are not
// written (the grouped GEMM reads no further), so that nothing waits for
// the routed count on the host.
//
// With quant=rowwise each permuted row is its token's row quantized as
// rowwise_cast quantizes it (amax by maxNum, scale = fmt_max / max(amax,
// 1e-12), pow2 optional, q rounded to nearest even and saturated); with
// quant=tensorwise every permuted row shares one scale, tensorwise_cast's
// over the routed tokens' rows (a token routed to no local expert does not
// count), and inv_scale[0] is that scale's inverse; with quant=none it is
// x's row, bit for bit. A token routed to no local expert is not read.
//
// Three launches, no atomics (quant=tensorwise: four, one atomic a
// program of moe_amax): moe_count counts each block of BLOCK_T tokens'
// routes per expert; moe_scan (a program an expert) turns the
// counts into each block's first row within its expert and the expert's
// total; moe_permute lays out the experts (padded ends by a prefix over
// them), then walks its block's tokens ROWS at a time, carrying each
// expert's next row, and copies each routed token's row, read once, to
// its routes' rows. Its programs also write the padding rows, expert e by
// program e mod the programs. quant=tensorwise adds moe_amax before the
// permute, a persistent loop over ROWS tokens a trip combining the routed
// rows' amax by a relaxed atomic max: x's routed rows are read twice (the
// scale must be known before the first row is quantized).
const permuteCap = "T * TOPK + E * (PAD - 1)"

// permuteScanChunk is the blocks moe_scan sums at once (a prefix over a
// chunk is a chunk × chunk triangle).
const permuteScanChunk = 32

// permuteMinBlock is the fewest tokens a block takes: the block scratch is
// sized for it.
const permuteMinBlock = 16

func permuteRows(c *Call, out map[string]*Tensor) int {
	offs := out["offsets"].Ints()
	if len(offs) == 0 {
		return 0
	}
	return int(offs[len(offs)-1])
}

// moeAmaxGrid: the tensorwise amax's persistent programs, enough to fill
// every CU a few times over (one atomic each), no more than ROWS-token trips.
var moeAmaxGrid = [3]expr.Expr{e("max(1, min(cdiv(T, ROWS), CUS * max(1, 2048 / (WARPS * WAVE))))"), e("1"), e("1")}

var MoEPermute = register(&Op{
	Name: "moe_permute",
	Doc: "x[T,H], indices[T,TOPK] (local expert or −1), probs[T,TOPK] → out[T·TOPK+E·(PAD−1), H] grouped by expert " +
		"(fp8 rowwise or tensorwise, or as x), each expert padded to a multiple of PAD, row_map[T,TOPK], offsets[E], counts[E]",
	Sizes: []string{"T", "H", "E", "TOPK", "PAD"},
	Options: append(slices.Clone(castOptions),
		Option{Name: "quant", Doc: "the permuted rows: fp8 with a scale per row (rowwise) or one over the routed rows (tensorwise), or x's element type (none)",
			Values: []string{"rowwise", "none", "tensorwise"}, Default: "rowwise"},
		Option{Name: "probs", Doc: "also permute the routing probabilities (out_probs[R], what grouped_swiglu_probs reads)", Values: []string{"true", "false"}, Default: "true"},
		Option{Name: "ep", Doc: "generated routing only: the ranks of expert parallelism; each token picks TOPK distinct experts of E·ep, of which this rank holds the first E",
			Values: []string{"1", "2", "4", "8", "16", "32"}, Default: "8"}),
	Conflicts: []Conflict{
		{When: "quant=none,fp8=e5m2", Why: "quant=none copies x's rows: there is no FP8 format to choose"},
		{When: "quant=none,pow2=true", Why: "quant=none copies x's rows: there are no scales to round"},
	},
	Tensors: []Arg{
		{Name: "x", DType: "{in}", Shape: []expr.Expr{e("T"), e("H")}, Role: Input},
		{Name: "indices", DType: "i32", Shape: []expr.Expr{e("T"), e("TOPK")}, Role: Input,
			Doc: "token t's k-th local expert, or −1 (not routed to this rank)"},
		{Name: "probs", DType: "f32", Shape: []expr.Expr{e("T"), e("TOPK")}, Role: Input, When: "probs=true"},
		{Name: "out", DType: "fp8", Shape: []expr.Expr{e(permuteCap), e("H")}, Role: Output, When: "quant=rowwise|tensorwise", Rows: permuteRows,
			Doc: "the permuted rows; those from offsets[E-1] on are not written"},
		{Name: "out", DType: "{in}", Shape: []expr.Expr{e(permuteCap), e("H")}, Role: Output, When: "quant=none", Rows: permuteRows,
			Doc: "the permuted rows; those from offsets[E-1] on are not written"},
		{Name: "inv_scale", DType: "f32", Shape: []expr.Expr{e(permuteCap)}, Role: Output, When: "quant=rowwise", Rows: permuteRows},
		{Name: "inv_scale", DType: "f32", Shape: []expr.Expr{e("1")}, Role: Output, When: "quant=tensorwise", Doc: "the one inverse scale of every permuted row"},
		{Name: "amax", DType: "f32", Shape: []expr.Expr{e("1")}, Role: Scratch, Init: 0, When: "quant=tensorwise", Doc: "the routed rows' amax, combined by atomics"},
		{Name: "out_probs", DType: "f32", Shape: []expr.Expr{e(permuteCap)}, Role: Output, When: "probs=true", Rows: permuteRows},
		{Name: "row_map", DType: "i32", Shape: []expr.Expr{e("T"), e("TOPK")}, Role: Output,
			Doc: "the row of out that route (t, k) went to, or −1"},
		{Name: "offsets", DType: "i32", Shape: []expr.Expr{e("E")}, Role: Output,
			Doc: "cumulative padded end row of each expert (expert g holds rows offsets[g-1] … offsets[g]-1)"},
		{Name: "counts", DType: "i32", Shape: []expr.Expr{e("E")}, Role: Output, Doc: "each expert's routed rows, its first"},
		{Name: "block_counts", DType: "i32", Shape: []expr.Expr{e("cdiv(T, block)", "block", permuteMinBlock), e("E")}, Role: Scratch,
			Doc: "routes of each block of BLOCK_T tokens per expert"},
		{Name: "block_base", DType: "i32", Shape: []expr.Expr{e("cdiv(T, block)", "block", permuteMinBlock), e("E")}, Role: Scratch,
			Doc: "routes of the blocks before each block per expert"},
	},
	Kernels: []*Kernel{
		{Name: "moe_count", Build: moeCountKernel, Grid: [3]expr.Expr{e("cdiv(T, BLOCK_T)"), e("1"), e("1")}},
		{Name: "moe_scan", Build: moeScanKernel, Grid: [3]expr.Expr{e("E"), e("1"), e("1")}},
		{Name: "moe_amax", Build: moeAmaxKernel, Grid: moeAmaxGrid, Option: "quant=tensorwise"},
		{Name: "moe_permute", Build: moePermuteKernel, Grid: [3]expr.Expr{e("cdiv(T, BLOCK_T)"), e("1"), e("1")}},
	},
	Knobs: []schedule.Knob{
		warpsKnob,
		{Name: "BLOCK_T", Doc: "tokens a program of moe_count and moe_permute takes", Domain: schedule.Pow2(strconv.Itoa(permuteMinBlock), "4096")},
		{Name: "ROWS", Doc: "tokens per trip of moe_permute's loop (and of moe_amax's)", Domain: schedule.Pow2("1", "64")},
		{Name: "BLOCK_H", Doc: "columns per tile", Domain: schedule.Pow2("8", "16384")},
		{Name: "TILES", Doc: "tiles a row, unrolled: the row is TILES · BLOCK_H columns wide", Domain: schedule.Range("1", "16")},
		{Name: "BLOCK_E", Doc: "experts a program lays out at once (at least E)", Domain: schedule.Pow2("1", "128")},
		{Name: "TOPKB", Doc: "routes a token's trip reads, unrolled (at least TOPK)", Domain: schedule.Pow2("1", "16")},
	},
	Constraints: []schedule.Constraint{
		{Cond: e("BLOCK_E >= E"), Why: "a program lays out every expert at once: BLOCK_E must be at least E"},
		{Cond: e("TOPKB >= TOPK"), Why: "a trip reads every route of its tokens: TOPKB must be at least TOPK"},
		{Cond: e("BLOCK_T >= ROWS"), Why: "a program's block holds whole trips: BLOCK_T must be at least ROWS"},
		{Cond: e("TILES * BLOCK_H >= H"), Why: "a row's tiles (TILES · BLOCK_H) must cover H"},
		{Cond: e("(TILES - 1) * BLOCK_H < H"), Why: "every tile of a row must hold a column"},
		{Cond: e("BLOCK_T * BLOCK_E <= 16384"), Why: "moe_count compares BLOCK_T tokens' routes with BLOCK_E experts at once: at most 16384 pairs"},
		{Cond: e("ROWS * ROWS * TOPKB <= 4096"), Why: "a trip orders its ROWS · TOPKB routes pairwise: ROWS² · TOPKB at most 4096"},
		tileLimit("ROWS * BLOCK_H"),
		{Cond: e("TILES * ROWS * BLOCK_H <= 32768"), Why: "a program holds at most 32768 columns of x in registers"},
	},
	SizeRules: []schedule.Constraint{
		{Cond: e("H % 8 == 0"), Why: "H must be a multiple of 8 (16-byte vectors of bf16)"},
		{Cond: e("H <= 32768"), Why: "H must be at most 32768 (a row is held in registers)"},
		{Cond: e("E <= 128"), Why: "E must be at most 128 (a program lays out every expert at once)"},
		{Cond: e("TOPK <= 16"), Why: "TOPK must be at most 16"},
		{Cond: e("PAD >= 1 && PAD <= 4096"), Why: "PAD must be within 1 … 4096"},
		{Cond: e("rows <= 2147483647", "rows", permuteCap), Why: "out's rows (T·TOPK + E·(PAD−1)) must be fewer than 2^31"},
	},
	Candidates: func() []Candidate {
		var out []Candidate
		for _, per := range []string{"16", "8", "32"} {
			for _, bt := range []string{"64", "32", "128"} {
				out = append(out, Candidate{
					{"BLOCK_H", e("pow2ceil(H) <= 4096 ? pow2ceil(H) : 1024")},
					{"TILES", e("cdiv(H, BLOCK_H)")},
					{"WARPS", e("max(1, min(pow2ceil(cdiv(TILES * BLOCK_H, per * WAVE)), MAXBLOCK / WAVE))", "per", per)},
					{"ROWS", e("max(1, min(8, pow2ceil(cdiv(per * WAVE * WARPS, TILES * BLOCK_H))))", "per", per)},
					{"BLOCK_E", e("pow2ceil(E)")},
					{"TOPKB", e("pow2ceil(TOPK)")},
					{"BLOCK_T", e("max(bt, ROWS)", "bt", bt)},
				})
			}
		}
		return out
	},
	Ceiling:    e("100"),
	Example:    Shape{"T": 4096, "H": 2048, "E": 16, "TOPK": 8, "PAD": 16},
	Bench:      []Shape{{"T": 32768, "H": 2048, "E": 16, "TOPK": 8, "PAD": 16}, {"T": 16384, "H": 7168, "E": 32, "TOPK": 8, "PAD": 128}},
	Peers:      true,
	FillInputs: permuteInputs,
	Validate:   checkPermuteIndices,
	Bytes:      permuteBytes,
	Tests: Tests{
		Shapes: []Shape{{"T": 1, "H": 8, "E": 1, "TOPK": 1, "PAD": 2}, {"T": 3, "H": 8, "E": 1, "TOPK": 1, "PAD": 6}, {"T": 37, "H": 24, "E": 3, "TOPK": 2, "PAD": 4},
			{"T": 70, "H": 136, "E": 5, "TOPK": 3, "PAD": 16}, {"T": 129, "H": 8, "E": 33, "TOPK": 8, "PAD": 2}},
		GPU: []Shape{{"T": 4096, "H": 2048, "E": 16, "TOPK": 8, "PAD": 16}, {"T": 1000, "H": 7168, "E": 32, "TOPK": 8, "PAD": 128},
			{"T": 777, "H": 4096, "E": 64, "TOPK": 6, "PAD": 1}},
		Options: []Options{{"quant": "none"}, {"probs": "false", "fp8": "e5m2", "pow2": "true", "ep": "1"}, {"quant": "none", "in": "f32", "ep": "2"},
			{"quant": "tensorwise"}, {"quant": "tensorwise", "probs": "false", "pow2": "true", "in": "f32", "ep": "1"}},
		Odd: Shape{"T": 100, "H": 72, "E": 6, "TOPK": 4, "PAD": 8},
		Schedules: []schedule.Params{{"BLOCK_T": 16, "ROWS": 2, "BLOCK_H": 16, "TILES": 5, "WARPS": 1, "BLOCK_E": 8, "TOPKB": 4},
			{"BLOCK_T": 16, "ROWS": 16, "BLOCK_H": 8, "TILES": 9, "WARPS": 2, "BLOCK_E": 16, "TOPKB": 8}},
		Wide: Shape{"T": 1 << 17, "H": 16384, "E": 64, "TOPK": 8, "PAD": 128},
	},
	Goldens: []Variant{{Name: "none", Options: Options{"quant": "none", "probs": "false"}}, {Name: "tensorwise", Options: Options{"quant": "tensorwise"}}},
	Reference: func(c *Call, in map[string]*Tensor) map[string]*Tensor {
		return permuteRef(c, in)
	},
})

// permuteLayout is the reference's routing: each route's row (−1: none),
// each expert's routed count and padded end.
func permuteLayout(c *Call, idx []int64) (rowMap []int64, counts, ends []int64) {
	ne, pad := c.Size("E"), int64(c.Size("PAD"))
	counts, ends = make([]int64, ne), make([]int64, ne)
	for _, g := range idx {
		if g >= 0 && g < int64(ne) {
			counts[g]++
		}
	}
	end := int64(0)
	for g, n := range counts {
		end += (n + pad - 1) / pad * pad
		ends[g] = end
	}
	next := make([]int64, ne)
	for g := range next {
		next[g] = ends[g] - (counts[g]+pad-1)/pad*pad
	}
	rowMap = make([]int64, len(idx))
	for i, g := range idx { // token-major, then k: the stable order
		rowMap[i] = -1
		if g >= 0 && g < int64(ne) {
			rowMap[i] = next[g]
			next[g]++
		}
	}
	return rowMap, counts, ends
}

func permuteRef(c *Call, in map[string]*Tensor) map[string]*Tensor {
	h, topk := c.Size("H"), c.Size("TOPK")
	// The block scratch depends on the schedule's blocks: the reference
	// leaves it out, and checks hold the outputs alone.
	out := Tensors(c.SpecsOf(Output))
	rowMap, counts, ends := permuteLayout(c, in["indices"].Ints())
	for g := range counts {
		out["counts"].SetBits(g, uint64(counts[g]))
		out["offsets"].SetBits(g, uint64(ends[g]))
	}
	x, o := in["x"], out["out"]
	rowwise, tensorwise := c.Opt(opt.Quant) == "rowwise", c.Opt(opt.Quant) == "tensorwise"
	enc := refnum.Encoder(c.Format)
	var tensorScale float32
	if tensorwise { // one amax over the rows of the tokens with a route
		parts := make([]float32, refChunks)
		rowsParallel(c.Size("T"), h, func(lo, hi, chunk int) {
			for t := lo; t < hi; t++ {
				if slices.ContainsFunc(rowMap[t*topk:(t+1)*topk], func(r int64) bool { return r >= 0 }) {
					for j := range h {
						parts[chunk] = refnum.MaxNum(parts[chunk], refnum.Abs(float32(x.Float(t*h+j))))
					}
				}
			}
		})
		tensorScale = refScale(refAmax(parts), c)
		refnum.PutF32(out["inv_scale"].Data, 0, 1/tensorScale)
	}
	if rowwise {
		// Padding rows: zeros, and a row of zeros' scale.
		zero := 1 / refScale(0, c)
		for g := range counts {
			start := ends[g] - (counts[g]+int64(c.Size("PAD"))-1)/int64(c.Size("PAD"))*int64(c.Size("PAD"))
			for r := start + counts[g]; r < ends[g]; r++ {
				refnum.PutF32(out["inv_scale"].Data, int(r), zero)
			}
		}
	}
	size := x.DType.Bytes()
	row := make([]float32, h)
	for i, r := range rowMap {
		out["row_map"].SetBits(i, uint64(uint32(int32(r))))
		if r < 0 {
			continue
		}
		t := i / topk
		if p := in["probs"]; p != nil {
			out["out_probs"].SetBits(int(r), p.Bits(i))
		}
		switch {
		case tensorwise:
			for j := range h {
				o.Data[int(r)*h+j] = enc(float32(x.Float(t*h+j)) * tensorScale)
			}
			continue
		case !rowwise:
			copy(o.Data[int(r)*h*size:(int(r)+1)*h*size], x.Data[t*h*size:(t+1)*h*size])
			continue
		}
		for j := range row {
			row[j] = float32(x.Float(t*h + j))
		}
		scale := refScale(refAmax(row), c)
		for j, v := range row {
			o.Data[int(r)*h+j] = enc(v * scale)
		}
		refnum.PutF32(out["inv_scale"].Data, int(r), 1/scale)
	}
	return out
}

// permuteBytes: x's routed rows read once (tensorwise reads them twice:
// the ideal is the one read), each route's row (and its scale and
// probability) and the padding rows written once, the indices,
// row_map, offsets and counts.
func permuteBytes(c *Call, in map[string]*Tensor) int {
	h, ne := c.Size("H"), c.Size("E")
	idx := in["indices"].Ints()
	_, _, ends := permuteLayout(c, idx)
	routed := 0
	topk := c.Size("TOPK")
	for t := range c.Size("T") {
		if slices.ContainsFunc(idx[t*topk:(t+1)*topk], func(g int64) bool { return g >= 0 && g < int64(ne) }) {
			routed++
		}
	}
	rows := 0
	if ne > 0 {
		rows = int(ends[ne-1])
	}
	perRow, scales := h*c.DType("out").Bytes(), 0
	switch c.Opt(opt.Quant) {
	case "rowwise":
		perRow += 4
	case "tensorwise":
		scales = 4
	}
	if c.Flag(opt.Probs) {
		perRow += 4
	}
	n := routed*h*c.DType("x").Bytes() + rows*perRow + scales + 2*len(idx)*4 + 2*ne*4
	if c.Flag(opt.Probs) {
		n += len(idx) * 4
	}
	return n
}

// checkPermuteIndices holds indices to [−1, E) on the host (the kernels
// take any other value as −1).
func checkPermuteIndices(c *Call, in map[string]*Tensor) error {
	ne, topk := int64(c.Size("E")), c.Size("TOPK")
	for i, g := range in["indices"].Ints() {
		if g < -1 || g >= ne {
			return fmt.Errorf("indices[%d, %d] = %d: want a local expert in [0, %d) or −1", i/topk, i%topk, g, ne)
		}
	}
	return nil
}

// permuteInputs routes each token (routing).
func permuteInputs(c *Call, r *rand.Rand, adversarial bool, in map[string]*Tensor) {
	for i, g := range routing(c, r, adversarial) {
		in["indices"].SetBits(i, uint64(uint32(int32(g))))
	}
}

// routing draws each token's TOPK distinct experts of E·ep uniformly, the
// rank's the first E (−1 for the rest), so that at ep=8 a third of the
// tokens stay unrouted. Adversarial routing: every route to one expert,
// half the experts empty, a token routed twice to one expert, or no route
// at all.
func routing(c *Call, r *rand.Rand, adversarial bool) []int64 {
	tn, ne, topk := c.Size("T"), c.Size("E"), c.Size("TOPK")
	ep, _ := strconv.Atoi(c.Opt(opt.EP))
	idx := make([]int64, tn*topk)
	global := max(ne*ep, topk)
	pick := make([]int, global)
	for i := range pick {
		pick[i] = i
	}
	pattern := -1
	if adversarial {
		pattern = r.IntN(4)
	}
	for t := range tn {
		for k := range topk { // a partial shuffle: TOPK distinct experts
			j := k + r.IntN(global-k)
			pick[k], pick[j] = pick[j], pick[k]
		}
		for k := range topk {
			g := pick[k]
			switch pattern {
			case 0:
				g = map[bool]int{true: ne - 1, false: -1}[k == 0]
			case 1:
				g = g % ne
				if g%2 == 1 {
					g = -1
				}
			case 2:
				if k <= 1 {
					g = pick[0] % ne
				}
			case 3:
				g = -1
			}
			if g >= ne {
				g = -1
			}
			idx[t*topk+k] = int64(g)
		}
	}
	return idx
}
