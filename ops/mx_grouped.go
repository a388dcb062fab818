package ops

import (
	"math"
	"math/rand/v2"

	"github.com/fp8gen/fp8gen/expr"
	"github.com/fp8gen/fp8gen/internal/refnum"
	"github.com/fp8gen/fp8gen/schedule"
)

// grouped_mx_cast is mx_cast's dim=1 for the tokens of a grouped GEMM:
// the weight gradient of expert g, dy_gᵀ·x_g, reduces over group g's rows
// only, so no MX block of 32 rows may hold rows of two groups. Each
// group's rows start a fresh block in qt[K, TP], and its last block is
// padded with zero columns: group g takes columns padded_offsets[g-1] …
// padded_offsets[g]-1, its rows offsets[g-1] … offsets[g]-1 first, then
// zeros up to a multiple of 32. The padded ends are cumulative on the
// device (no sync), written for the GEMM to read; TP = 32·⌈(T + 31·E)/32⌉
// is the most they can need, and the columns past the last group's
// padded end are zeros with scale byte 0, as are the padding columns'
// blocks' zeros (a zero never moves a block's amax). The numerics of a
// block are mx_cast's.
//
// Under scales=swizzled the scales are laid out per group as the grouped
// GEMM with groups along its contraction dimension reads them (torch's
// MXFP8 _scaled_grouped_mm for the weight gradient; torchao's blocked
// layout "K groups"): group g's scales S_g[K, n_g] (n_g = its padded
// columns / 32) padded with zero bytes to [K', c_g] (K' = K rounded up to
// 128, c_g = n_g rounded up to 4) and swizzled into 128x4 tiles as
// mx_cast's swizzled layout; those K'·c_g bytes are stored in order from
// byte K'·scale_offsets[g-1] of scale_t[K', SC] (flat: the groups' tiles
// one after another), and the bytes after the last group's are 0.
// SC = 4·⌈(TP/32 + 3·E)/4⌉ is an upper bound of Σ c_g.

// groupedMXBlocks is TP / 32, qt's blocks a row: T rows and at most 31
// padding rows a group, in whole blocks.
const groupedMXBlocks = "cdiv(T + 31 * E, 32)"

// groupedMXScaleCols is SC, the columns of the swizzled scale_t: every
// group's blocks rounded up to 4.
var groupedMXScaleCols = e("cdiv(blocks + 3 * E, 4) * 4", "blocks", groupedMXBlocks)

var GroupedMXCast = register(&Op{
	Name: "grouped_mx_cast",
	Doc: "x[T,K], offsets[E] (each group's end row, on the device) → qt[K,TP] MXFP8 with scale_t[K,TP/32] e8m0, " +
		"blocks of 32 rows within a group (each group padded to a multiple of 32 columns), padded_offsets[E]; " +
		"scales=swizzled: each group's scales in 128x4 tiles as grouped GEMMs read them, with scale_offsets[E]",
	Sizes: []string{"T", "K", "E"},
	Options: append(append([]Option{}, mxOptions[:3]...), Option{Name: "scales",
		Doc:    "rowmajor: scale_t[K, TP/32]; swizzled: each group's scales in 128x4 tiles, as the grouped GEMM reads them (torch's MXFP8 _scaled_grouped_mm, groups along K): scale_t[K rounded up to 128, SC], group g's tiles from byte K'·scale_offsets[g-1] on, padding 0",
		Values: []string{"rowmajor", "swizzled"}, Default: "rowmajor"}),
	OCP:   true,
	Peers: true,
	Tensors: []Arg{
		{Name: "x", DType: "{in}", Shape: []expr.Expr{e("T"), e("K")}, Role: Input},
		{Name: "offsets", DType: "i32", Shape: []expr.Expr{e("E")}, Role: Input,
			Doc: "cumulative end row of each group: group g holds rows offsets[g-1] … offsets[g]-1 (offsets[-1] = 0), offsets[E-1] = T"},
		{Name: "qt", DType: "fp8", Shape: []expr.Expr{e("K"), e("blocks * 32", "blocks", groupedMXBlocks)}, Role: Output,
			Doc: "x transposed, group g in columns padded_offsets[g-1] … padded_offsets[g]-1, its rows then zeros; zeros past the last group"},
		{Name: "scale_t", DType: "e8m0", Shape: []expr.Expr{e("K"), e(groupedMXBlocks)}, Role: Output, When: "scales=rowmajor",
			Doc: "block (j, i)'s scale: qt[j, 32i : 32i+32]"},
		{Name: "scale_t", DType: "e8m0", Shape: []expr.Expr{e("cdiv(K, 128) * 128"), groupedMXScaleCols}, Role: Output, When: "scales=swizzled",
			Doc: "each group's scales [K, its blocks] in 128x4 tiles, stored in order from byte (K rounded up to 128)·scale_offsets[g-1] (docs/ops.md)"},
		{Name: "scale_rows", DType: "e8m0", Shape: []expr.Expr{e("K"), e(groupedMXBlocks)}, Role: Scratch, When: "scales=swizzled",
			Doc: "the scales row-major, as scales=rowmajor's scale_t, before the swizzle"},
		{Name: "padded_offsets", DType: "i32", Shape: []expr.Expr{e("E")}, Role: Output,
			Doc: "cumulative end column of each group in qt: offsets' group sizes each rounded up to a multiple of 32"},
		{Name: "scale_offsets", DType: "i32", Shape: []expr.Expr{e("E")}, Role: Output, When: "scales=swizzled",
			Doc: "cumulative end column of each group in scale_t: its blocks rounded up to 4"},
		{Name: "status", DType: "i32", Shape: []expr.Expr{e("1")}, Role: Scratch, Init: 0,
			Doc: "0, or E - g for the first group g whose offsets are bad (then the outputs hold no defined values; every access stays inside the tensors)", Status: groupStatus},
	},
	Kernels: []*Kernel{
		{Name: "grouped_mx_offsets", Build: groupedMXOffsetsKernel, Grid: [3]expr.Expr{e("E"), e("1"), e("1")}},
		{Name: "grouped_mx_cast", Build: groupedMXCastKernel, Grid: [3]expr.Expr{e("cdiv(K, BLOCK_K)"), e("cdiv(blocks, RB)", "blocks", groupedMXBlocks), e("1")}},
		{Name: "grouped_mx_swizzle", Build: groupedMXSwizzleKernel, Option: "scales=swizzled",
			Grid: [3]expr.Expr{e("cdiv(cols / 4, WARPS)", "cols", groupedMXScaleCols), e("cdiv(K, 128)"), e("1")}},
	},
	OptionRules: []OptionRule{
		{When: "scales=swizzled", Constraint: schedule.Constraint{Cond: e("cdiv(K, 128) <= 65535"),
			Why: "grid axis 1 of the swizzle kernel (tiles of 128 rows of scale_t) holds at most 65535 programs: K at most 8388480 with scales=swizzled"}},
	},
	Knobs: []schedule.Knob{
		warpsKnob,
		{Name: "BLOCK_K", Doc: "columns of x per program", Domain: schedule.Pow2("1", "2048")},
		{Name: "RB", Doc: "blocks of 32 columns of qt per program, one a trip", Domain: schedule.Pow2("1", "65536")},
		{Name: "BLOCK_E", Doc: "groups a program reads the padded ends of at once (at least E)", Domain: schedule.Pow2("1", "4096")},
	},
	Constraints: []schedule.Constraint{
		tileLimit("32 * BLOCK_K"),
		{Cond: e("BLOCK_E >= E"), Why: "a program reads every group's padded end at once: BLOCK_E must be at least E"},
		{Cond: e("cdiv(blocks, RB) <= 65535", "blocks", groupedMXBlocks), Why: "grid axis 1 (blocks of qt's columns) holds at most 65535 programs"},
		{Cond: e("E <= 2147483647"), Why: "grid axis 0 of the offsets kernel (groups) holds at most 2^31-1 programs"},
	},
	Candidates: func() []Candidate {
		var out []Candidate
		for _, c := range []struct{ warps, bk, rb string }{{"4", "128", "8"}, {"8", "256", "4"}, {"4", "64", "16"}, {"2", "128", "2"}} {
			out = append(out, Candidate{
				{"WARPS", e(c.warps)},
				{"BLOCK_K", e(c.bk)},
				{"RB", e("max(rb, pow2ceil(cdiv(blocks, 65535)))", "rb", c.rb, "blocks", groupedMXBlocks)},
				{"BLOCK_E", e("pow2ceil(E)")},
			})
		}
		return out
	},
	Ceiling: e("100"),
	Example: Shape{"T": 8192, "K": 2048, "E": 8},
	Bench:   []Shape{{"T": 65536, "K": 7168, "E": 8}, {"T": 32768, "K": 2048, "E": 16}, {"T": 16384, "K": 5120, "E": 64}},
	Tests: Tests{
		// T < E (empty groups), one group, groups shorter and longer than
		// a block, K not a multiple of a vector.
		Shapes: []Shape{{"T": 1, "K": 1, "E": 1}, {"T": 7, "K": 33, "E": 3}, {"T": 5, "K": 40, "E": 8}, {"T": 130, "K": 17, "E": 4},
			{"T": 300, "K": 70, "E": 5}, {"T": 64, "K": 256, "E": 2}, {"T": 1000, "K": 33, "E": 9}},
		GPU: []Shape{{"T": 4096, "K": 2048, "E": 16}, {"T": 3000, "K": 777, "E": 7}, {"T": 20000, "K": 64, "E": 3}},
		Options: []Options{{"in": "f32", "fp8": "e5m2", "mx_round": "rceil"}, {"mx_round": "rceil"},
			{"scales": "swizzled"}, {"scales": "swizzled", "fp8": "e5m2", "mx_round": "rceil"}},
		Odd: Shape{"T": 200, "K": 72, "E": 5},
		Schedules: []schedule.Params{
			{"WARPS": 1, "BLOCK_K": 32, "RB": 2, "BLOCK_E": 16},
			{"WARPS": 2, "BLOCK_K": 64, "RB": 1, "BLOCK_E": 32},
		},
		Wide: Shape{"T": 1 << 16, "K": 1 << 15, "E": 8},
	},
	Goldens: []Variant{
		{Name: "rceil_e5m2_f32", Options: Options{"mx_round": "rceil", "fp8": "e5m2", "in": "f32"}},
		{Name: "odd", Shape: Shape{"T": 1000, "K": 333, "E": 7}},
		{Name: "swizzled", Options: Options{"scales": "swizzled"}},
		// 64-bit indices: the lane sums of group counts in 64 bits (AMD's freestanding prelude).
		{Name: "swizzled_i64", Options: Options{"scales": "swizzled"}, Shape: Shape{"T": 1 << 16, "K": 1 << 15, "E": 8}},
	},
	FillInputs: func(c *Call, r *rand.Rand, adversarial bool, in map[string]*Tensor) {
		groupOffsets(c, r, adversarial, in)
		if adversarial {
			plantMXBlocks(in["x"], c.Size("T"), c.Size("K"), c.Format.Max, r)
		}
	},
	Validate: checkOffsets,
	Reference: func(c *Call, in map[string]*Tensor) map[string]*Tensor {
		t, k := c.Size("T"), c.Size("K")
		tp := groupedMXPadded(t, c.Size("E"))
		x := in["x"].Floats()
		out := Tensors(c.SpecsOf(Output, Scratch))
		swizzled := c.Opt(opt.Scales) == "swizzled"
		st := out["scale_t"].Data
		if swizzled {
			st = out["scale_rows"].Data
		}
		qt, po := out["qt"].Data, out["padded_offsets"]
		enc := refnum.Encoder(c.Format)
		rceil := c.Opt(opt.MXRound) == "rceil"
		lo, col := 0, 0 // the group's first row of x and column of qt
		block := make([]float32, 32)
		var blocks []int // each group's blocks of 32 columns
		for g, end := range in["offsets"].Ints() {
			hi, col0 := int(end), col
			for ; lo < hi; lo, col = lo+32, col+32 {
				for j := range k {
					for e := range block {
						block[e] = 0
						if lo+e < hi {
							block[e] = x[(lo+e)*k+j]
						}
					}
					s := refMXScale(block, c.Format, rceil)
					st[j*(tp/32)+col/32] = s
					for e, v := range block {
						code := enc(float32(math.NaN()))
						if s != 0xFF {
							code = enc(v * refPow2(127-int(s)))
						}
						qt[j*tp+col+e] = code
					}
				}
			}
			lo = hi
			po.SetBits(g, uint64(col))
			blocks = append(blocks, (col-col0)/32)
		}
		if swizzled {
			refGroupSwizzle(out["scale_t"].Data, out["scale_offsets"], st, k, tp/32, blocks)
		}
		return out
	},
	Dequantize: func(c *Call, in, out map[string]*Tensor) []float32 {
		t, k := c.Size("T"), c.Size("K")
		tp := groupedMXPadded(t, c.Size("E"))
		qt, st := out["qt"], out["scale_t"]
		// scale of qt[j, p] in group g, p its column from the group's first
		scale := func(j, p, g, col int) float32 { return float32(st.Float(j*(tp/32) + (col+p)/32)) }
		if c.Opt(opt.Scales) == "swizzled" {
			kp, sw := (k+127)/128*128, refScaleLayouts["swizzled"].index
			so := out["scale_offsets"].Ints()
			scale = func(j, p, g, _ int) float32 {
				s0 := 0
				if g > 0 {
					s0 = int(so[g-1])
				}
				f := sw(j, p/32, int(so[g])-s0)
				return float32(st.Float(s0*kp + f))
			}
		}
		x := make([]float32, t*k)
		lo, col := 0, 0
		for g, end := range in["offsets"].Ints() {
			for i := lo; i < int(end); i++ {
				p := col + i - lo
				for j := range k {
					x[i*k+j] = c.Format.Decode(qt.Data[j*tp+p]) * scale(j, i-lo, g, col)
				}
			}
			col += (int(end) - lo + 31) / 32 * 32
			lo = int(end)
		}
		return x
	},
})

// refGroupSwizzle lays the row-major scales s[k, cols] out per group as
// scales=swizzled reads: group g's blocks[g] columns (after the groups
// before it) as a [k, blocks[g]] matrix in mx_cast's swizzled layout,
// c_g = blocks[g] rounded up to 4 columns wide, its bytes in order from
// byte k'·end(g-1) of dst (k' = k rounded up to 128); the ends (in
// columns) go to offsets.
func refGroupSwizzle(dst []uint8, offsets *Tensor, s []uint8, k, cols int, blocks []int) {
	kp := (k + 127) / 128 * 128
	sw := refScaleLayouts["swizzled"].index
	first, end := 0, 0 // the group's first column of s, its first of dst
	for g, nb := range blocks {
		cg := (nb + 3) / 4 * 4
		for r := range k {
			for j := range nb {
				f := sw(r, j, nb)
				dst[end*kp+f] = s[r*cols+first+j]
			}
		}
		first, end = first+nb, end+cg
		offsets.SetBits(g, uint64(end))
	}
}

// groupedMXPadded is TP (32 groupedMXBlocks) at t rows and ne groups.
func groupedMXPadded(t, ne int) int { return (t + 31*ne + 31) / 32 * 32 }
