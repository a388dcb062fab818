package ops

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/fp8gen/fp8gen/expr"
	"github.com/fp8gen/fp8gen/internal/refnum"
	"github.com/fp8gen/fp8gen/schedule"
)

// The MoE scales. Their numerics are the casts' (amax by maxNum, NaN
// ignored; scale = fmt_max / max(amax, 1e-12), pow2 optional; q rounded to
// nearest even and saturated; inv_scale = 1/scale), over other groups:
//
//   - expert_colwise_cast: per expert e and column n of w[e], the amax
//     over K. The weights of a grouped GEMM, one scale per expert and
//     output column.
//   - grouped_colwise_cast: per token group g and column k, the amax over
//     the group's rows of x. The groups are given by offsets on the device
//     (never read on the host: no sync), and the output is transposed,
//     qt[K, T] with the groups side by side along T, as the weight-gradient
//     GEMM x_gᵀ·dy_g reads it.
//
// Both are two launches: the amax with relaxed atomics (each group's or
// expert's columns may be split over several programs, each a loop down
// its tiles), then the cast, which reads x again. A schedule may instead
// take one launch (FUSED=1), whose program reads its group's column block
// or its expert's column strip twice, the second time from L2 where the
// blocks of the programs running at once fit there. The grouped op's
// programs may also take equal ranges of rows instead of groups
// (BY_ROWS=1), so that a long group makes no tail.
//
// qt's rows start T bytes apart, so T's alignment reaches the memory
// system. Where T is not a multiple of 32, rows' stores (at T ≡ 16 mod 32
// every other row's) begin and end inside 32-byte sectors that a
// neighbouring tile completes, and the H200 pays for such sectors with
// DRAM reads and second writes (ncu, at T = 65520 with 64-row tiles: 63 MB
// read and 44 MB written more, the cast kernel 600–616 µs against
// 382–384). Tall tiles straddle less (the first candidate takes 256 rows
// where groups are long), and where T is not a multiple of 16 the stores
// move in aligned pieces (ir.MemAttr.Unaligned) rather than in narrower
// vectors or bytes: at K = 7168, E = 8 the op takes 619.5 µs at T = 65536,
// 666.0 at 65520, 721.7 at 65528 and 996.7 at 65535 (3566.6 with
// narrower vectors; docs/performance.md). Padding T to a multiple of 32
// still pays.

var expertOptions = append(slices.Clone(castOptions),
	Option{Name: "layout", Doc: "q[E,K,N] as w (kn), or the transposed qt[E,N,K] (nk) for the backward GEMM", Values: []string{"kn", "nk"}, Default: "kn"})

var ExpertColwise = register(&Op{
	Name:    "expert_colwise_cast",
	Doc:     "w[E,K,N] → q[E,K,N] (or qt[E,N,K] with layout=nk) fp8, inv_scale[E,N] f32: one scale per expert and column",
	Sizes:   []string{"E", "K", "N"},
	Options: expertOptions,
	Tensors: []Arg{
		{Name: "w", DType: "{in}", Shape: []expr.Expr{e("E"), e("K"), e("N")}, Role: Input},
		{Name: "q", DType: "fp8", Shape: []expr.Expr{e("E"), e("K"), e("N")}, Role: Output, When: "layout=kn"},
		{Name: "qt", DType: "fp8", Shape: []expr.Expr{e("E"), e("N"), e("K")}, Role: Output, When: "layout=nk"},
		{Name: "inv_scale", DType: "f32", Shape: []expr.Expr{e("E"), e("N")}, Role: Output},
		{Name: "amax", DType: "f32", Shape: []expr.Expr{e("E"), e("N")}, Role: Scratch, Init: 0, Doc: "each expert's column amaxes, combined by atomics (stored by the fused kernel)"},
	},
	Kernels: []*Kernel{
		{Name: "expert_amax", Build: expertAmaxKernel, Grid: [3]expr.Expr{e("cdiv(N, BLOCK_N)"), e("SPLIT"), e("E")}, When: e("FUSED == 0")},
		{Name: "expert_cast", Build: expertCastKernel, Grid: expertGrid, When: e("FUSED == 0")},
		{Name: "expert_fused", Build: expertFusedKernel, Grid: [3]expr.Expr{e("cdiv(N, BLOCK_N)"), e("1"), e("E")}, When: e("FUSED == 1")},
	},
	Knobs: []schedule.Knob{
		warpsKnob,
		{Name: "BLOCK_K", Doc: "rows (along K) of a tile", Domain: schedule.Pow2("1", "4096")},
		{Name: "BLOCK_N", Doc: "columns of a tile", Domain: schedule.Pow2("1", "4096")},
		{Name: "SPLIT", Doc: "amax programs per expert and column block, each taking every SPLIT-th tile down K (those past the last tile only add an amax of 0)", Domain: schedule.Pow2("1", "65535")},
		{Name: "FUSED", Doc: "1: one kernel, whose program reads its expert's column strip twice (the amax, then the cast: the second read from L2 where the strips fit); 0: the amax kernel, then the cast kernel", Domain: schedule.Range("0", "1")},
		prefetchKnob,
	},
	Constraints: []schedule.Constraint{
		tileLimit("BLOCK_K * BLOCK_N"),
		{Cond: e("cdiv(K, BLOCK_K) <= 65535 && E <= 65535"), Why: "grid axes 1 and 2 (the cast's K tiles, experts) hold at most 65535 programs"},
		{Cond: e("FUSED == 0 || SPLIT == 1"), Why: "the fused kernel takes an expert's column strip in one program: SPLIT must be 1"},
	},
	Candidates: expertCandidates,
	Ceiling:    e("2 * E * K * N <= L2 / 2 ? 100 : 60"),
	Example:    Shape{"E": 8, "K": 2048, "N": 1408},
	// DeepSeek-V3 w1 with 8-way expert parallelism, Qwen3-30B-A3B,
	// DeepSeek-MoE-16B, Llama 4 Scout.
	Peers: true,
	Bench: []Shape{{"E": 32, "K": 7168, "N": 2048}, {"E": 128, "K": 2048, "N": 768}, {"E": 64, "K": 2048, "N": 1408}, {"E": 16, "K": 5120, "N": 8192}},
	Tests: Tests{
		Shapes: []Shape{{"E": 1, "K": 1, "N": 1}, {"E": 3, "K": 33, "N": 7}, {"E": 2, "K": 130, "N": 65}, {"E": 5, "K": 17, "N": 300}, {"E": 1, "K": 1000, "N": 33}},
		GPU:    []Shape{{"E": 4, "K": 2048, "N": 768}, {"E": 3, "K": 777, "N": 1030}},
		Options: []Options{
			{"in": "f32", "fp8": "e5m2", "pow2": "true"},
			{"layout": "nk"},
			{"layout": "nk", "in": "f32", "fp8": "e5m2", "pow2": "true"},
		},
		Odd: Shape{"E": 3, "K": 72, "N": 40},
		// 3 and 2 trips down K, without and with the next tile
		// prefetched; the fused kernel prefetched.
		Schedules: []schedule.Params{
			{"BLOCK_K": 16, "BLOCK_N": 32, "WARPS": 4, "SPLIT": 2, "PREFETCH": 0},
			{"BLOCK_K": 16, "BLOCK_N": 32, "WARPS": 4, "SPLIT": 2, "PREFETCH": 1},
			{"BLOCK_K": 16, "BLOCK_N": 32, "WARPS": 4, "SPLIT": 1, "FUSED": 1, "PREFETCH": 1},
		},
		Wide: Shape{"E": 256, "K": 7168, "N": 2048}, // DeepSeek-V3's full w1: 3.76e9 elements
	},
	Goldens: []Variant{
		{Name: "nk", Options: Options{"layout": "nk"}},
		{Name: "odd", Shape: Shape{"E": 3, "K": 333, "N": 1000}},
		{Name: "odd_nk", Options: Options{"layout": "nk"}, Shape: Shape{"E": 3, "K": 333, "N": 1000}},
		{Name: "i64", Shape: Shape{"E": 256, "K": 7168, "N": 2048}},
		{Name: "fused", Schedule: schedule.Params{"BLOCK_K": 64, "BLOCK_N": 32, "WARPS": 4, "SPLIT": 1, "FUSED": 1, "PREFETCH": 0}},
		{Name: "fused_nk", Options: Options{"layout": "nk"}, Schedule: schedule.Params{"BLOCK_K": 64, "BLOCK_N": 32, "WARPS": 4, "SPLIT": 1, "FUSED": 1, "PREFETCH": 0}},
		// The amax's next tile prefetched, the tuned choice at the bench shapes.
		{Name: "prefetch", Schedule: schedule.Params{"BLOCK_K": 64, "BLOCK_N": 64, "WARPS": 4, "SPLIT": 4, "FUSED": 0, "PREFETCH": 1}},
	},
	// Row by row, expert by expert in parallel (column by column, strided,
	// the DeepSeek-V3 shape took a minute): a max does not depend on the
	// order of its terms.
	Reference: func(c *Call, in map[string]*Tensor) map[string]*Tensor {
		ne, k, n := c.Size("E"), c.Size("K"), c.Size("N")
		w := in["w"].Floats()
		out := Tensors(c.SpecsOf(Output, Scratch))
		kn := c.Opt(opt.Layout) == "kn"
		enc := refnum.Encoder(c.Format)
		var q []byte
		if kn {
			q = out["q"].Data
		} else {
			q = out["qt"].Data
		}
		inv, am := out["inv_scale"].Data, out["amax"].Data
		refParallel(ne, func(lo, hi, _ int) {
			amax, scale := make([]float32, n), make([]float32, n)
			for ex := lo; ex < hi; ex++ {
				clear(amax)
				for i := 0; i < k; i++ {
					for j, v := range w[(ex*k+i)*n : (ex*k+i+1)*n] {
						amax[j] = refnum.MaxNum(amax[j], refnum.Abs(v))
					}
				}
				for j := range scale {
					scale[j] = refScale(amax[j], c)
					refnum.PutF32(inv, ex*n+j, 1/scale[j])
					refnum.PutF32(am, ex*n+j, amax[j])
				}
				for i := 0; i < k; i++ {
					for j, v := range w[(ex*k+i)*n : (ex*k+i+1)*n] {
						if kn {
							q[(ex*k+i)*n+j] = enc(v * scale[j])
						} else {
							q[(ex*n+j)*k+i] = enc(v * scale[j])
						}
					}
				}
			}
		})
		return out
	},
	Dequantize: func(c *Call, _, out map[string]*Tensor) []float32 {
		ne, k, n := c.Size("E"), c.Size("K"), c.Size("N")
		inv := out["inv_scale"].Floats()
		w := make([]float32, ne*k*n)
		for ex := 0; ex < ne; ex++ {
			for i := 0; i < k; i++ {
				for j := 0; j < n; j++ {
					var b byte
					if c.Opt(opt.Layout) == "kn" {
						b = out["q"].Data[(ex*k+i)*n+j]
					} else {
						b = out["qt"].Data[(ex*n+j)*k+i]
					}
					w[(ex*k+i)*n+j] = c.Format.Decode(b) * inv[ex*n+j]
				}
			}
		}
		return w
	},
})

// expertGrid: the cast's column blocks × K blocks × experts (the amax
// has SPLIT programs down K instead of one a K block).
var expertGrid = [3]expr.Expr{e("cdiv(N, BLOCK_N)"), e("cdiv(K, BLOCK_K)"), e("E")}

// expertCandidates: tiles of BLOCK_K rows × BLOCK_N columns: 64 × 64 in 4
// waves first (it won the tune at the three shapes that ran on the H200,
// 2026-12-01), without and with the amax's next tile prefetched (0.9-1.8%
// faster at the four bench shapes, the tuned choice there; without first,
// as it ran at 3.76·10^9 elements on the H200), then the colwise tiles, then wider
// ones, whose rows of 128 and 256 columns read 256 and 512 contiguous
// bytes. The amax takes enough programs to fill the GPU about 16 blocks a
// CU over.
func expertCandidates() []Candidate {
	split := Assign{"SPLIT", e("max(1, min(pow2ceil(cdiv(K, BLOCK_K)), pow2ceil(cdiv(16 * CUS, cdiv(N, BLOCK_N) * E))))")}
	var out []Candidate
	// BLOCK_K, BLOCK_N, WARPS, PREFETCH
	for _, c := range [][4]string{{"64", "64", "4", "0"}, {"64", "64", "4", "1"}, {"128", "64", "8", "0"}, {"64", "32", "4", "0"}, {"32", "32", "4", "0"}, {"64", "128", "8", "0"}, {"32", "256", "8", "0"}} {
		out = append(out, Candidate{{"BLOCK_K", e(c[0])}, {"BLOCK_N", e(c[1])}, {"WARPS", e(c[2])}, split, {"FUSED", e("0")}, {"PREFETCH", e(c[3])}})
	}
	// The fused kernel, in narrow strips so that those in flight fit in L2.
	for _, c := range [][3]string{{"64", "32", "4"}, {"128", "16", "4"}} {
		out = append(out, Candidate{{"BLOCK_K", e(c[0])}, {"BLOCK_N", e(c[1])}, {"WARPS", e(c[2])}, {"SPLIT", e("1")}, {"FUSED", e("1")}, {"PREFETCH", e("0")}})
	}
	return out
}

var GroupedColwise = register(&Op{
	Name: "grouped_colwise_cast",
	Doc: "x[T,K], offsets[E] (each group's end row, on the device) → qt[K,T] fp8 (transposed, groups side by side along T), " +
		"inv_scale[E,K] f32: one scale per token group and column",
	Sizes:   []string{"T", "K", "E"},
	Options: castOptions,
	Tensors: []Arg{
		{Name: "x", DType: "{in}", Shape: []expr.Expr{e("T"), e("K")}, Role: Input},
		{Name: "offsets", DType: "i32", Shape: []expr.Expr{e("E")}, Role: Input,
			Doc: "cumulative end row of each group: group g holds rows offsets[g-1] … offsets[g]-1 (offsets[-1] = 0), offsets[E-1] = T"},
		{Name: "qt", DType: "fp8", Shape: []expr.Expr{e("K"), e("T")}, Role: Output},
		{Name: "inv_scale", DType: "f32", Shape: []expr.Expr{e("E"), e("K")}, Role: Output},
		{Name: "amax", DType: "f32", Shape: []expr.Expr{e("E"), e("K")}, Role: Scratch, Init: 0, Doc: "each group's column amaxes, combined by atomics (stored by the fused kernel)"},
		{Name: "status", DType: "i32", Shape: []expr.Expr{e("1")}, Role: Scratch, Init: 0,
			Doc: "0, or E - g for the first group g whose offsets are bad (then qt and inv_scale hold no defined values: groups may overlap, and their rows are written more than once; every access stays inside the tensors)", Status: groupStatus},
	},
	Kernels: []*Kernel{
		{Name: "grouped_amax", Build: groupedAmaxKernel, Grid: groupedGrid, When: e("FUSED == 0 && BY_ROWS == 0")},
		{Name: "grouped_cast", Build: groupedCastKernel, Grid: groupedGrid, When: e("FUSED == 0 && BY_ROWS == 0")},
		{Name: "grouped_amax_rows", Build: groupedAmaxByRowsKernel, Grid: byRowsGrid, When: e("BY_ROWS == 1")},
		{Name: "grouped_cast_rows", Build: groupedCastByRowsKernel, Grid: byRowsGrid, When: e("BY_ROWS == 1")},
		{Name: "grouped_fused", Build: groupedFusedKernel, Grid: groupedGrid, When: e("FUSED == 1")},
		{Name: "grouped_held", Build: groupedHeldKernel, Grid: groupedGrid, When: e("FUSED == 2")},
	},
	Knobs: []schedule.Knob{
		warpsKnob,
		{Name: "BLOCK_T", Doc: "rows (tokens) of a tile", Domain: schedule.Pow2("1", "4096")},
		{Name: "BLOCK_K", Doc: "columns of a tile", Domain: schedule.Pow2("1", "4096")},
		{Name: "SPLIT", Doc: "programs per group and column block, each taking every SPLIT-th tile of the group's rows (BY_ROWS=1: ranges of rows per column block)", Domain: schedule.Pow2("1", "1024")},
		{Name: "FUSED", Doc: "1: one kernel, whose program reads its group's column block twice (the amax, then the cast: the second read from L2 where the strips fit); 2: one kernel whose program holds its group's first HOLD tiles in LDS (read from memory once) and reads the rest twice; 0: the amax kernel, then the cast kernel", Domain: schedule.Range("0", "2")},
		{Name: "HOLD", Doc: "tiles of its group's first rows the FUSED=2 kernel's program holds in LDS, copied asynchronously on NVIDIA (0 unless FUSED=2)", Domain: schedule.Range("0", "8")},
		{Name: "BY_ROWS", Doc: "1: the two kernels' programs take SPLIT equal ranges of rows whatever the groups, each group of its range in turn; 0: SPLIT programs a group", Domain: schedule.Bool()},
		{Name: "BLOCK_E", Doc: "groups a by-rows program reads offsets for at once (at least E)", Domain: schedule.Pow2("1", "4096")},
		{Name: "PREFETCH", Doc: "1: the grouped loops over a program's tiles load the next tile of x before working on this one (twice x's registers), so that its latency overlaps this tile's work and barriers; 0: each tile is loaded when its turn comes", Domain: schedule.Bool()},
		{Name: "ORDER", Doc: "1: the grid has a group's SPLIT programs (by rows: the ranges) fastest, then the column blocks, then the groups, so that the two-pass programs running at once store runs of SPLIT neighbouring tiles into each row of qt; 0: the column blocks fastest (one tile of each qt row at a time)", Domain: schedule.Bool()},
	},
	Constraints: []schedule.Constraint{
		tileLimit("BLOCK_T * BLOCK_K"),
		{Cond: e("FUSED == 0 || SPLIT == 1"), Why: "the fused kernels take a group's column block in one program: SPLIT must be 1"},
		{Cond: e("(FUSED == 2) == (HOLD > 0)"), Why: "HOLD is the FUSED=2 kernel's, which holds at least one tile; elsewhere it must be 0"},
		{Cond: e("HOLD == 0 || HOLD == 1 || HOLD == 2 || HOLD == 4 || HOLD == 8"), Why: "the held rows are one tile, whose extent (HOLD·BLOCK_T) must be a power of two: so must HOLD"},
		{Cond: e("HOLD * BLOCK_T * BLOCK_K * 4 <= LDS"), Why: "the held rows (4 bytes an element at most) fit in LDS"},
		{Cond: e("FUSED != 2 || BLOCK_T % 16 == 0"), Why: "the FUSED=2 kernel's tiles start on multiples of 16 rows: BLOCK_T must be one"},
		{Cond: e("E <= 65535"), Why: "grid axis 1 (groups; 2 with ORDER=1) holds at most 65535 programs"},
		{Cond: e("ORDER == 0 || cdiv(K, BLOCK_K) <= 65535"), Why: "with ORDER=1 grid axis 1 (column blocks) holds at most 65535 programs"},
		{Cond: e("BY_ROWS == 0 || FUSED == 0"), Why: "the by-rows kernels are two (FUSED=0)"},
		{Cond: e("BY_ROWS == 0 || BLOCK_E >= E"), Why: "a by-rows program reads every group's offsets at once: BLOCK_E must be at least E"},
		{Cond: e("BY_ROWS == 1 || BLOCK_E == 1"), Why: "BLOCK_E is the by-rows kernels' (BY_ROWS=1); elsewhere it must be 1"},
	},
	Candidates: groupedCandidates,
	Ceiling:    e("2 * T * K <= L2 / 2 ? 100 : 60"),
	Example:    Shape{"T": 8192, "K": 2048, "E": 8},
	Peers:      true,
	Bench:      []Shape{{"T": 65536, "K": 7168, "E": 8}, {"T": 32768, "K": 2048, "E": 16}, {"T": 16384, "K": 5120, "E": 64}},
	Tests: Tests{
		// T < E (empty groups whatever the offsets), one group, groups
		// shorter and longer than a tile.
		Shapes: []Shape{{"T": 1, "K": 1, "E": 1}, {"T": 7, "K": 33, "E": 3}, {"T": 5, "K": 40, "E": 8}, {"T": 130, "K": 17, "E": 4},
			{"T": 300, "K": 70, "E": 5}, {"T": 64, "K": 256, "E": 2}, {"T": 1000, "K": 33, "E": 9}},
		GPU:       []Shape{{"T": 4096, "K": 2048, "E": 16}, {"T": 3000, "K": 777, "E": 7}, {"T": 20000, "K": 64, "E": 3}},
		Options:   []Options{{"in": "f32", "fp8": "e5m2", "pow2": "true"}},
		Odd:       Shape{"T": 200, "K": 72, "E": 5},
		Schedules: groupedTestSchedules(),
		Wide:      Shape{"T": 1 << 16, "K": 1 << 15, "E": 8},
	},
	Goldens: []Variant{
		{Name: "odd", Shape: Shape{"T": 1000, "K": 333, "E": 7}},
		// The fused and by-rows kernels as the H200's tuning ships them
		// (PREFETCH=1).
		{Name: "fused", Schedule: schedule.Params{"BLOCK_T": 128, "BLOCK_K": 64, "WARPS": 8, "SPLIT": 1, "FUSED": 1, "BY_ROWS": 0, "BLOCK_E": 1, "ORDER": 0, "PREFETCH": 1, "HOLD": 0}},
		// The fused kernel holding its groups' first 256 rows in LDS.
		{Name: "held", Schedule: schedule.Params{"BLOCK_T": 128, "BLOCK_K": 64, "WARPS": 8, "SPLIT": 1, "FUSED": 2, "BY_ROWS": 0, "BLOCK_E": 1, "ORDER": 0, "PREFETCH": 1, "HOLD": 2}},
		{Name: "rows", Schedule: schedule.Params{"BLOCK_T": 128, "BLOCK_K": 64, "WARPS": 8, "SPLIT": 64, "FUSED": 0, "BY_ROWS": 1, "BLOCK_E": 8, "ORDER": 0, "PREFETCH": 1, "HOLD": 0}},
		// The two-pass kernels as they were before ORDER and PREFETCH.
		{Name: "column_blocks_first", Schedule: schedule.Params{"BLOCK_T": 128, "BLOCK_K": 64, "WARPS": 8, "SPLIT": 8, "FUSED": 0, "BY_ROWS": 0, "BLOCK_E": 1, "ORDER": 0, "PREFETCH": 0, "HOLD": 0}},
	},
	FillInputs: groupOffsets,
	Validate:   checkOffsets,
	Reference: func(c *Call, in map[string]*Tensor) map[string]*Tensor {
		out := Tensors(c.SpecsOf(Output, Scratch))
		refGroupedColumns(c, in, out["qt"].Data, out["inv_scale"].Data, out["amax"].Data)
		return out
	},
	Dequantize: func(c *Call, in, out map[string]*Tensor) []float32 {
		t, k := c.Size("T"), c.Size("K")
		inv := out["inv_scale"].Floats()
		x := make([]float32, t*k)
		lo := 0
		for g, end := range in["offsets"].Ints() {
			for i := lo; i < int(end); i++ {
				for j := 0; j < k; j++ {
					x[i*k+j] = c.Format.Decode(out["qt"].Data[j*t+i]) * inv[g*k+j]
				}
			}
			lo = int(end)
		}
		return x
	},
})

// refGroupedColumns scales each token group's columns of x (in["x"],
// groups by in["offsets"]) into the transposed qt, with each group's
// column amaxes and inverse scales at [g·K + column] of am and inv: row by
// row, column blocks in parallel (as the expert op's).
func refGroupedColumns(c *Call, in map[string]*Tensor, qt, inv, am []byte) {
	t, k, ne := c.Size("T"), c.Size("K"), c.Size("E")
	x := in["x"].Floats()
	offs := in["offsets"].Ints()
	refParallel(k, func(j0, j1, _ int) {
		lo := 0
		for g := 0; g < ne; g++ {
			hi := int(offs[g])
			refColumnGroup(c, x, k, j0, j1, lo, hi, t, g*k, qt, inv, am)
			lo = hi
		}
	})
}

// groupedGrid: column blocks × groups × programs per group, or (ORDER=1)
// programs per group × column blocks × groups.
var groupedGrid = [3]expr.Expr{e("ORDER == 1 ? SPLIT : cdiv(K, BLOCK_K)"), e("ORDER == 1 ? cdiv(K, BLOCK_K) : E"), e("ORDER == 1 ? E : SPLIT")}

// byRowsGrid: column blocks × 1 × ranges of rows, or (ORDER=1) ranges ×
// column blocks × 1.
var byRowsGrid = [3]expr.Expr{e("ORDER == 1 ? SPLIT : cdiv(K, BLOCK_K)"), e("ORDER == 1 ? cdiv(K, BLOCK_K) : 1"), e("ORDER == 1 ? 1 : SPLIT")}

// groupedCandidates, from the H200's sweeps (2026-12-01, at T=65536, K=7168,
// E=8; T=32768, K=2048, E=16; T=16384, K=5120, E=64): first the two-pass
// kernels with a group's programs fastest (ORDER=1: 714 against 756 µs at
// T=65536) and the next tile prefetched (PREFETCH=1: 628 against 752),
// enough programs a group to fill the GPU about 32 blocks a CU over when
// the groups are few (but not more than an average group has tiles), 64 ×
// 64 in 4 waves first; then 128 × 64 at 16 a CU; the fused kernel (172.6
// µs at E=64, against 184.3 two-pass); by rows, equal ranges of rows
// (125.9 µs at T=32768 at 4 blocks a CU, against 148.8 with 16 a CU;
// 64 × 64 at 8 a CU 114.9 there, 2026-12-03).
//
// Where T is not a multiple of 32, qt's rows start inside a 32-byte sector
// and each tile's stores leave a part-written sector at either end of a
// row; the first candidate then takes 256 rows a tile where the groups are
// long (an average of 4096 rows or more) so that its rows straddle a
// quarter as often: 666.0 against 850.8 µs at T=65520, K=7168, E=8 (H200,
// 2026-12-03, docs/performance.md); where groups are short a 256-row tile
// mostly straddles groups instead (286.0 against 181.1 µs at T=16368,
// E=64).
func groupedCandidates() []Candidate {
	split := func(perCU any) Assign {
		return Assign{"SPLIT", e("max(1, min(1024, pow2ceil(cdiv(per_cu * CUS, cdiv(K, BLOCK_K) * E)), pow2ceil(cdiv(T, E * BLOCK_T))))", "per_cu", perCU)}
	}
	two := []Assign{{"FUSED", e("0")}, {"BY_ROWS", e("0")}, {"BLOCK_E", e("1")}, {"ORDER", e("1")}, {"PREFETCH", e("1")}, {"HOLD", e("0")}}
	out := columnTiles("BLOCK_T", "BLOCK_K", append([]Assign{split("32")}, two...)...)
	out[0], out[1] = out[1], out[0]
	tall := "T % 32 != 0 && T >= 4096 * E"
	out[0] = append(Candidate{{"BLOCK_T", e("tall ? 256 : 64", "tall", tall)}, {"BLOCK_K", e("64")}, {"WARPS", e("tall ? 8 : 4", "tall", tall)},
		split(e("tall ? 16 : 32", "tall", tall))}, two...)
	out = append(out, columnTiles("BLOCK_T", "BLOCK_K", append([]Assign{split("16")}, two...)...)[0])
	// The fused kernel, one program a group's column block.
	for _, c := range [][3]string{{"64", "64", "4"}, {"128", "64", "8"}} {
		out = append(out, Candidate{{"BLOCK_T", e(c[0])}, {"BLOCK_K", e(c[1])}, {"WARPS", e(c[2])}, {"SPLIT", e("1")}, {"FUSED", e("1")}, {"BY_ROWS", e("0")}, {"BLOCK_E", e("1")}, {"ORDER", e("0")}, {"PREFETCH", e("1")}, {"HOLD", e("0")}})
	}
	// Not the fused kernel holding its group's first rows in LDS (FUSED=2):
	// bit-exact, x read once where a group fits, but slower than the
	// defaults at every bench shape on the H200 (178.9 / 206.5 / 806.1
	// against 160.1 / 114.9 / 618.3 µs, 2026-12-03): its code issues about
	// 1.8 times the instructions of the hand-written probe that reached
	// 89% of copy (probes/strip.cu).
	// By rows: equal ranges of rows, 128 × 64 in 8 waves about 4 blocks a
	// CU, 64 × 64 in 4 waves about 8 (the same lanes a CU: 114.9 against
	// 126.2 µs at 4 a CU, T=32768, 2026-12-03).
	ranges := func(perCU string) Assign {
		return Assign{"SPLIT", e("max(1, min(1024, pow2ceil(cdiv(T, BLOCK_T)), pow2ceil(cdiv(per_cu * CUS, cdiv(K, BLOCK_K)))))", "per_cu", perCU)}
	}
	byRows := []Assign{{"FUSED", e("0")}, {"BY_ROWS", e("1")}, {"BLOCK_E", e("pow2ceil(E)")}, {"ORDER", e("0")}, {"PREFETCH", e("1")}, {"HOLD", e("0")}}
	out = append(out, columnTiles("BLOCK_T", "BLOCK_K", append([]Assign{ranges("4")}, byRows...)...)[0])
	out = append(out, columnTiles("BLOCK_T", "BLOCK_K", append([]Assign{ranges("8")}, byRows...)...)[1])
	return out
}

// groupedTestSchedules are the points beyond the candidates that the
// every-schedule tests run at Odd: ORDER and PREFETCH, each way, in each
// kind of kernel (the two-pass with 2 and 4 programs a group; by rows,
// ranges of 64 rows that cut groups, the last one short); and the first
// candidate's 256-row tile where T is not a multiple of 32, which the
// small test shapes' groups are too short to choose.
func groupedTestSchedules() []schedule.Params {
	kinds := []schedule.Params{
		{"BLOCK_T": 16, "BLOCK_K": 32, "WARPS": 4, "SPLIT": 4, "FUSED": 0, "BY_ROWS": 0, "BLOCK_E": 1},
		{"BLOCK_T": 16, "BLOCK_K": 32, "WARPS": 4, "SPLIT": 2, "FUSED": 0, "BY_ROWS": 0, "BLOCK_E": 1},
		{"BLOCK_T": 16, "BLOCK_K": 32, "WARPS": 4, "SPLIT": 4, "FUSED": 0, "BY_ROWS": 1, "BLOCK_E": 8},
		{"BLOCK_T": 32, "BLOCK_K": 32, "WARPS": 4, "SPLIT": 1, "FUSED": 1, "BY_ROWS": 0, "BLOCK_E": 1},
		// held rows past, within and short of the groups
		{"BLOCK_T": 16, "BLOCK_K": 32, "WARPS": 4, "SPLIT": 1, "FUSED": 2, "BY_ROWS": 0, "BLOCK_E": 1, "HOLD": 2},
	}
	var out []schedule.Params
	for _, k := range kinds {
		for _, order := range []int{0, 1} {
			for _, prefetch := range []int{0, 1} {
				s := maps.Clone(k)
				s["ORDER"], s["PREFETCH"] = order, prefetch
				if _, ok := s["HOLD"]; !ok {
					s["HOLD"] = 0
				}
				out = append(out, s)
			}
		}
	}
	return append(out, schedule.Params{"BLOCK_T": 256, "BLOCK_K": 64, "WARPS": 8, "SPLIT": 4, "FUSED": 0, "BY_ROWS": 0, "BLOCK_E": 1, "ORDER": 1, "PREFETCH": 1, "HOLD": 0})
}

// groupStatus explains the status word.
func groupStatus(c *Call, data []byte) error {
	v := int(int32(binary.LittleEndian.Uint32(data)))
	if v == 0 {
		return nil
	}
	ne := c.Size("E")
	g := ne - v
	if g < 0 || g >= ne {
		return fmt.Errorf("status word %d names no group of %d", v, ne)
	}
	what := fmt.Sprintf("offsets[%d]", g)
	if g > 0 {
		what = fmt.Sprintf("offsets[%d], offsets[%d]", g-1, g)
	}
	return fmt.Errorf("group %d (%s) is out of order, negative or past T=%d, or the last offset is not T; its rows were clamped into [0, T]",
		g, what, c.Size("T"))
}

// checkOffsets holds offsets to their contract on the host.
func checkOffsets(c *Call, in map[string]*Tensor) error {
	t := c.Size("T")
	offs := in["offsets"].Ints()
	prev := int64(0)
	for i, v := range offs {
		switch {
		case v < 0:
			return fmt.Errorf("offsets[%d] = %d is negative", i, v)
		case v < prev:
			return fmt.Errorf("offsets[%d] = %d is less than offsets[%d] = %d: offsets are cumulative end rows and may not decrease", i, v, i-1, prev)
		case v > int64(t):
			return fmt.Errorf("offsets[%d] = %d is past T = %d", i, v, t)
		}
		prev = v
	}
	if last := offs[len(offs)-1]; last != int64(t) {
		return fmt.Errorf("offsets[%d] = %d: the last offset must be T = %d", len(offs)-1, last, t)
	}
	return nil
}

// groupOffsets makes offsets: realistic random group sizes (an
// exponential spread, one group empty where E ≥ 3); adversarially one of
// groups at tile edges (0, 1, 15, 16, 17, 63, 64, 65, … rows), one group
// holding every row, or one-row groups.
func groupOffsets(c *Call, r *rand.Rand, adversarial bool, in map[string]*Tensor) {
	pattern := patternRealistic
	if adversarial {
		pattern = offsetsPattern(r.IntN(3))
	}
	sizes := groupSizes(pattern, c.Size("T"), c.Size("E"), r)
	o := in["offsets"]
	end := 0
	for g, n := range sizes {
		end += n
		o.SetBits(g, uint64(end))
	}
}

// offsetsPattern is a kind of group sizes.
type offsetsPattern int

const (
	patternEdges     offsetsPattern = iota // sizes at tile edges: 0, 1, 15, 16, 17, 63, 64, 65, …
	patternAllInOne                        // one group holds every row
	patternOneRow                          // groups of one row, the last the rest
	patternRealistic                       // an exponential spread, one group empty where E ≥ 3
)

// groupSizes draws the sizes of ne groups of t rows in all.
func groupSizes(pattern offsetsPattern, t, ne int, r *rand.Rand) []int {
	sizes := make([]int, ne)
	left := t
	take := func(g, n int) {
		n = min(n, left)
		sizes[g] += n
		left -= n
	}
	switch pattern {
	case patternEdges:
		edges := []int{0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 129, 2}
		start := r.IntN(len(edges))
		for g := 0; g < ne-1; g++ {
			take(g, edges[(start+g)%len(edges)])
		}
	case patternAllInOne:
		take(r.IntN(ne), t)
	case patternOneRow:
		for g := 0; g < ne-1; g++ {
			take(g, 1)
		}
	case patternRealistic:
		w := make([]float64, ne)
		sum := 0.0
		for g := range w {
			w[g] = -math.Log(1 - r.Float64())
			sum += w[g]
		}
		for g := range w {
			take(g, int(float64(t)*w[g]/sum))
		}
		take(r.IntN(ne), left)
		if ne >= 3 {
			g := r.IntN(ne)
			sizes[(g+1)%ne] += sizes[g]
			sizes[g] = 0
		}
	}
	take(ne-1, left)
	return sizes
}
