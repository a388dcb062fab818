package ops

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/fp8gen/fp8gen/expr"
	"github.com/fp8gen/fp8gen/fp8"
	"github.com/fp8gen/fp8gen/internal/refnum"
	"github.com/fp8gen/fp8gen/schedule"
)

// The casts' numerics, identical in the reference, the interpreter and
// every emitted target:
//
//	amax      = max over |x| with IEEE maxNum: NaN elements are ignored
//	scale     = fmt_max / max(amax, 1e-12)           (f32, correctly rounded)
//	            rounded down to a power of two with the pow2 option
//	q         = fp8(x · scale): round to nearest even, saturate to ±fmt_max
//	inv_scale = 1 / scale
//
// So zeros give amax 0 and scale fmt_max/1e-12; a NaN element becomes the
// format's NaN and does not disturb its neighbours; a ±Inf element makes
// amax Inf, scale 0 and inv_scale Inf, so that group's finite elements
// quantize to 0 and the infinite ones to NaN (Inf·0): the overflow is
// visible, never silently clipped. The casts have no float sums, so every
// schedule computes the same bits.

// Eps bounds amax from below so that a zero group gets a finite scale.
const Eps = 1e-12

// e parses an expression of an op description. Descriptions repeat many
// ("1", "pow2ceil(K)", …), and every program that links the package parses
// them at its start: each is parsed once (an Expr is immutable). A template
// names its placeholders in lower case (sizes, knobs and target facts are
// upper case) and with gives each, in pairs, its value: an int, the source
// of another expression, or an expr.Expr, placed as a whole operand (its
// parentheses come from the tree, not from the text).
func e(src string, with ...any) expr.Expr {
	x, ok := parsed.Load(src)
	if !ok {
		x = expr.MustParse(src)
		parsed.Store(src, x)
	}
	if len(with) == 0 {
		return x.(expr.Expr)
	}
	if len(with)%2 != 0 {
		panic("BUG: e(" + src + "): placeholders and values in pairs")
	}
	m := map[string]expr.Expr{}
	for i := 0; i < len(with); i += 2 {
		name, _ := with[i].(string)
		if name == "" || strings.ToLower(name) != name || !slices.Contains(x.(expr.Expr).Names(), name) {
			panic(fmt.Sprintf("BUG: e(%s): %v is no lower-case placeholder of it", src, with[i]))
		}
		if _, twice := m[name]; twice {
			panic(fmt.Sprintf("BUG: e(%s): placeholder %s given twice", src, name))
		}
		switch v := with[i+1].(type) {
		case int:
			m[name] = expr.Int(int64(v))
		case string:
			m[name] = e(v)
		case expr.Expr:
			if v.IsZero() {
				panic(fmt.Sprintf("BUG: e(%s): placeholder %s given no expression", src, name))
			}
			m[name] = v
		default:
			panic(fmt.Sprintf("BUG: e(%s): placeholder %s of %T", src, name, v))
		}
	}
	return x.(expr.Expr).Subst(m)
}

var parsed sync.Map // source → expr.Expr

// castOptions are the choices every cast takes.
var castOptions = []Option{
	{Name: "in", Doc: "element type of x", Values: []string{"bf16", "f32"}, Default: "bf16"},
	{Name: "fp8", Doc: "fp8 family; the format itself comes from the target", Values: []string{"e4m3", "e5m2"}, Default: "e4m3"},
	{Name: "pow2", Doc: "round scales down to powers of two", Values: []string{"false", "true"}, Default: "false"},
}

var warpsKnob = schedule.Knob{Name: "WARPS", Doc: "waves per block", Domain: schedule.Pow2("1", "MAXBLOCK / WAVE")}

// tileLimit keeps a tile within what lowering enumerates.
func tileLimit(extents string) schedule.Constraint {
	return schedule.Constraint{Cond: e("extents <= 65536", "extents", extents), Why: "a tile holds at most 65536 elements"}
}

// twoPass is the ceiling of an op that reads x twice (bf16 in, fp8 out: 2+1
// ideal bytes an element, 2+2+1 moved) unless x fits in half the L2 for
// the second read.
var twoPass = e("2 * M * K <= L2 / 2 ? 100 : 60")

var benchShapes = []Shape{{"M": 8192, "K": 8192}, {"M": 16384, "K": 8192}, {"M": 32768, "K": 4096}, {"M": 4096, "K": 14336}}

// castTests: odd sizes (1×1, sizes that divide by no vector width, rows
// shorter than a wave) and, for the GPU, a few larger and lopsided shapes.
var castTests = Tests{
	Shapes:  []Shape{{"M": 1, "K": 1}, {"M": 7, "K": 33}, {"M": 64, "K": 256}, {"M": 33, "K": 1000}, {"M": 130, "K": 17}, {"M": 4, "K": 20000}},
	GPU:     []Shape{{"M": 256, "K": 4096}, {"M": 1023, "K": 771}, {"M": 4096, "K": 14336}, {"M": 5000, "K": 64}},
	Options: []Options{{"in": "f32", "fp8": "e5m2", "pow2": "true"}},
	Odd:     Shape{"M": 40, "K": 72},
	Wide:    Shape{"M": 1 << 16, "K": 1 << 15},
}

// colTests are castTests and, at Odd (M=40), an amax whose programs take
// two tiles and one down M, without and with the next tile prefetched.
var colTests = func() Tests {
	t := castTests
	t.Schedules = []schedule.Params{{"BLOCK_M": 16, "BLOCK_K": 32, "WARPS": 4, "SPLIT": 2, "PREFETCH": 0, "KEEP": 8}, {"BLOCK_M": 16, "BLOCK_K": 32, "WARPS": 4, "SPLIT": 2, "PREFETCH": 1, "KEEP": 8},
		// The amax's rows above the kept band read once, the cut inside a
		// program's tiles (and, at KEEP=0, before every row), the cast
		// from the bottom band.
		{"BLOCK_M": 16, "BLOCK_K": 32, "WARPS": 4, "SPLIT": 2, "PREFETCH": 0, "KEEP": 3}, {"BLOCK_M": 16, "BLOCK_K": 32, "WARPS": 4, "SPLIT": 2, "PREFETCH": 1, "KEEP": 3},
		{"BLOCK_M": 16, "BLOCK_K": 32, "WARPS": 4, "SPLIT": 1, "PREFETCH": 1, "KEEP": 0}}
	return t
}()

// castGoldens: every option set but the defaults.
func castGoldens() []Variant {
	var vs []Variant
	for _, fam := range []string{"e4m3", "e5m2"} {
		for _, in := range []string{"bf16", "f32"} {
			for _, pow2 := range []string{"false", "true"} {
				if fam == "e4m3" && in == "bf16" && pow2 == "false" {
					continue // the defaults
				}
				name := fam + "_" + in
				if pow2 == "true" {
					name += "_pow2"
				}
				vs = append(vs, Variant{Name: name, Options: Options{"fp8": fam, "in": in, "pow2": pow2}})
			}
		}
	}
	return vs
}

var Rowwise = register(&Op{
	Name:    "rowwise_cast",
	Doc:     "x[M,K] → q[M,K] fp8, inv_scale[M] f32: one scale per row",
	Sizes:   []string{"M", "K"},
	Options: castOptions,
	Tensors: []Arg{
		{Name: "x", DType: "{in}", Shape: []expr.Expr{e("M"), e("K")}, Role: Input},
		{Name: "q", DType: "fp8", Shape: []expr.Expr{e("M"), e("K")}, Role: Output},
		{Name: "inv_scale", DType: "f32", Shape: []expr.Expr{e("M")}, Role: Output},
	},
	Kernels: []*Kernel{{Name: "rowwise_cast", Build: rowwiseKernel, Grid: [3]expr.Expr{e("PER_CU == 0 ? cdiv(M, ROWS) : min(cdiv(M, ROWS), PER_CU * CUS)"), e("1"), e("1")}}},
	Knobs: []schedule.Knob{
		warpsKnob,
		{Name: "ROWS", Doc: "rows per program (per trip of its loop with PER_CU)", Domain: schedule.Pow2("1", "64")},
		{Name: "BLOCK_K", Doc: "columns per tile", Domain: schedule.Pow2("1", "65536")},
		{Name: "LOOP", Doc: "0: the row in registers, one pass; 1: two passes over K in tiles of BLOCK_K", Domain: schedule.Bool()},
		{Name: "PER_CU", Doc: "0: a program for each ROWS rows; n: n programs a CU (at most one a block of rows), each a loop over blocks of ROWS rows (one pass)", Domain: schedule.Range("0", "64")},
		{Name: "PREFETCH", Doc: "1: the loop of PER_CU loads its next block of rows before it reduces and stores this one", Domain: schedule.Bool()},
	},
	Constraints: []schedule.Constraint{
		{Cond: e("LOOP == 1 || BLOCK_K >= K"), Why: "a one-pass schedule (LOOP=0) holds the whole row: BLOCK_K must be at least K"},
		{Cond: e("LOOP == 1 || BLOCK_K <= 16384"), Why: "rows longer than 16384 take the two-pass schedule (LOOP=1)"},
		{Cond: e("LOOP == 0 || PER_CU == 0"), Why: "the persistent loop (PER_CU > 0) is one-pass: LOOP must be 0"},
		{Cond: e("PER_CU > 0 || PREFETCH == 0"), Why: "PREFETCH loads ahead in the persistent loop: it needs PER_CU > 0"},
		// The loop's row counter and the block it loads ahead reach up to
		// PER_CU·CUS·ROWS + ROWS rows past M; a 32-bit export's manifest
		// bounds only elements, so the loop is held to where that reach
		// stays below 2^31 whatever the index width.
		{Cond: e("PER_CU == 0 || M <= 2147483647 - 2 * PER_CU * CUS * ROWS"), Why: "the persistent loop (PER_CU > 0) steps PER_CU·CUS·ROWS rows past M: M must stay that far below 2^31 (take PER_CU=0)"},
		tileLimit("ROWS * BLOCK_K"),
	},
	Candidates: rowwiseCandidates,
	Ceiling:    e("100"),
	Example:    Shape{"M": 4096, "K": 4096},
	Bench:      append(benchShapes[:4:4], Shape{"M": 65536, "K": 2048}),
	Tests:      castTests,
	Peers:      true,
	Goldens: append(castGoldens(),
		Variant{Name: "two_pass", Shape: Shape{"M": 4096, "K": 40000}},
		Variant{Name: "persistent", Shape: Shape{"M": 4099, "K": 4096}, Schedule: schedule.Params{"BLOCK_K": 4096, "WARPS": 4, "ROWS": 1, "LOOP": 0, "PER_CU": 2, "PREFETCH": 1}},
		Variant{Name: "i64", Shape: Shape{"M": 65536, "K": 40000}}),
	Reference: func(c *Call, in map[string]*Tensor) map[string]*Tensor {
		m, k := c.Size("M"), c.Size("K")
		x := in["x"]
		out := Tensors(c.SpecsOf(Output, Scratch))
		enc := refnum.Encoder(c.Format)
		rowsParallel(m, k, func(lo, hi, _ int) {
			if lo == hi {
				return
			}
			row := make([]float32, k)
			for i := lo; i < hi; i++ {
				for j := range row {
					row[j] = float32(x.Float(i*k + j))
				}
				scale := refScale(refAmax(row), c)
				for j, v := range row {
					out["q"].Data[i*k+j] = enc(v * scale)
				}
				refnum.PutF32(out["inv_scale"].Data, i, 1/scale)
			}
		})
		return out
	},
	Dequantize: func(c *Call, _, out map[string]*Tensor) []float32 {
		inv := out["inv_scale"].Floats()
		k := c.Size("K")
		return dequant(out["q"], c.Format, func(i int) float32 { return inv[i/k] })
	},
})

// rowwiseCandidates: first a persistent loop that loads its next rows
// before it reduces and stores these (PER_CU, PREFETCH), each lane
// holding `per` elements of a row, as many programs as `threads` threads
// a CU would hold (more than are resident where registers are short:
// those start as the first finish); then a whole row in registers, one
// program for each ROWS rows, 32 or 16 elements a lane (the single pass
// of the earlier default); rows of more than 16384 elements loop over K
// twice. In the H200's tune of all eight (2026-12-02) the loop at 64
// elements a lane and 4096 threads a CU won at three of the five bench
// shapes and was within 2.1 and 2.4% at the other two, where 64 a lane
// at 2048 threads and 32 at 4096 won; tuned, rowwise moved 8192²,
// 16384×8192 and 4096×14336 from 87, 89 and 69% of a copy to 95–97,
// 99–100 and 89–90% (two runs). Eight candidates, so that a tune times
// every one (the cost model does not see the prefetch). The loop has not
// run on AMD hardware: it is compiled by hipcc and exact in the
// interpreter there, its speed unmeasured.
func rowwiseCandidates() []Candidate {
	var out []Candidate
	row := func(per, rows string, cu expr.Expr, prefetch string) Candidate {
		return Candidate{
			{"BLOCK_K", e("pow2ceil(K)")},
			{"WARPS", e("max(1, min(rows * BLOCK_K / (per * WAVE), MAXBLOCK / WAVE))", "rows", rows, "per", per)},
			{"ROWS", e("min(64, max(rows, pow2ceil(cdiv(per * WAVE * WARPS, BLOCK_K))))", "rows", rows, "per", per)},
			{"LOOP", e("0")},
			{"PER_CU", cu},
			{"PREFETCH", e(prefetch)},
		}
	}
	for _, c := range [][2]string{{"64", "4096"}, {"64", "2048"}, {"32", "4096"}, {"32", "2048"}} {
		out = append(out, row(c[0], "1", e("max(1, min(64, threads / (WARPS * WAVE)))", "threads", c[1]), "1"))
	}
	for _, per := range []string{"32", "16"} {
		out = append(out, row(per, "1", e("0"), "0"))
	}
	for _, bk := range []string{"4096", "2048"} {
		out = append(out, Candidate{{"BLOCK_K", e(bk)}, {"WARPS", e("8")}, {"ROWS", e("1")}, {"LOOP", e("1")}, {"PER_CU", e("0")}, {"PREFETCH", e("0")}})
	}
	return out
}

var Tensorwise = register(&Op{
	Name:    "tensorwise_cast",
	Doc:     "x[M,K] → q[M,K] fp8, inv_scale[1] f32: one scale for the tensor (amax with relaxed atomics, then the cast)",
	Sizes:   []string{"M", "K"},
	Options: castOptions,
	Tensors: []Arg{
		{Name: "x", DType: "{in}", Shape: []expr.Expr{e("M"), e("K")}, Role: Input},
		{Name: "q", DType: "fp8", Shape: []expr.Expr{e("M"), e("K")}, Role: Output},
		{Name: "inv_scale", DType: "f32", Shape: []expr.Expr{e("1")}, Role: Output},
		{Name: "amax", DType: "f32", Shape: []expr.Expr{e("1")}, Role: Scratch, Init: 0, Doc: "the tensor's amax, combined by atomics"},
	},
	Kernels: []*Kernel{
		{Name: "tensorwise_amax", Build: tensorAmaxKernel, Grid: flatGrid},
		{Name: "tensorwise_cast", Build: tensorCastKernel, Grid: flatGrid},
	},
	Knobs: []schedule.Knob{
		warpsKnob,
		{Name: "BLOCK", Doc: "elements per tile of the persistent loop", Domain: schedule.Pow2("1", "65536")},
	},
	Constraints: []schedule.Constraint{tileLimit("BLOCK")},
	Candidates:  flatCandidates,
	Ceiling:     twoPass,
	Example:     Shape{"M": 4096, "K": 4096},
	Bench:       benchShapes,
	Tests:       castTests,
	Peers:       true,
	Reference: func(c *Call, in map[string]*Tensor) map[string]*Tensor {
		x := in["x"].Floats()
		out := Tensors(c.SpecsOf(Output, Scratch))
		amax := refTensorAmax(x)
		scale := refScale(amax, c)
		enc := refnum.Encoder(c.Format)
		bigParallel(len(x), func(lo, hi, _ int) {
			for i, v := range x[lo:hi] {
				out["q"].Data[lo+i] = enc(v * scale)
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

// flatCandidates: the tensor as a flat array, a persistent grid of
// programs each walking tiles of BLOCK elements; 16 bytes of x per lane
// per tile.
func flatCandidates() []Candidate {
	var out []Candidate
	for _, c := range [][2]string{{"8", "16"}, {"4", "16"}, {"16", "16"}, {"8", "32"}, {"4", "32"}} {
		out = append(out, Candidate{{"WARPS", e(c[0])}, {"BLOCK", e("WARPS * WAVE * per", "per", c[1])}})
	}
	return out
}

// flatGrid: enough programs to fill every CU a few times over, no more than tiles.
var flatGrid = [3]expr.Expr{e("max(1, min(cdiv(M * K, BLOCK), CUS * max(1, 2048 / (WARPS * WAVE))))"), e("1"), e("1")}

var Colwise = register(&Op{
	Name:    "colwise_cast",
	Doc:     "x[M,K] → qt[K,M] fp8 (transposed), inv_scale[K] f32: one scale per column (amax with relaxed atomics, then the cast)",
	Sizes:   []string{"M", "K"},
	Options: castOptions,
	Tensors: []Arg{
		{Name: "x", DType: "{in}", Shape: []expr.Expr{e("M"), e("K")}, Role: Input},
		{Name: "qt", DType: "fp8", Shape: []expr.Expr{e("K"), e("M")}, Role: Output},
		{Name: "inv_scale", DType: "f32", Shape: []expr.Expr{e("K")}, Role: Output},
		{Name: "amax", DType: "f32", Shape: []expr.Expr{e("K")}, Role: Scratch, Init: 0, Doc: "each column's amax, combined by atomics"},
	},
	Kernels: []*Kernel{
		{Name: "colwise_amax", Build: colAmaxKernel, Grid: [3]expr.Expr{e("SPLIT"), e("cdiv(K, BLOCK_K)"), e("1")}},
		{Name: "colwise_cast", Build: colCastKernel, Grid: colCastGrid},
	},
	Knobs: []schedule.Knob{
		warpsKnob,
		{Name: "BLOCK_M", Doc: "rows of a tile", Domain: schedule.Pow2("1", "4096")},
		{Name: "BLOCK_K", Doc: "columns of a tile", Domain: schedule.Pow2("1", "4096")},
		{Name: "SPLIT", Doc: "amax programs per column block, each taking every SPLIT-th tile down M (those past the last tile only add an amax of 0)", Domain: schedule.Pow2("1", "65535")},
		prefetchKnob,
		{Name: "KEEP", Doc: "the bottom KEEP eighths of x's rows, which the amax reads last with the cache's usual priority while it reads the rest as data read once (first to leave L2; NVIDIA), are where the cast starts, along the rows, so that it finds them in L2; 8: no priorities, the cast down each column block in turn", Domain: schedule.Range("0", "8")},
	},
	Constraints: []schedule.Constraint{
		tileLimit("BLOCK_M * BLOCK_K"),
		{Cond: e("cdiv(K, BLOCK_K) <= 65535"), Why: "grid axis 1 (column blocks) holds at most 65535 programs"},
		{Cond: e("KEEP == 8 || cdiv(M, BLOCK_M) <= 65535"), Why: "with KEEP < 8 the cast's grid axis 1 (row blocks) holds at most 65535 programs"},
	},
	Candidates: colCandidates,
	Ceiling:    twoPass,
	Example:    Shape{"M": 4096, "K": 4096},
	Bench:      []Shape{{"M": 8192, "K": 8192}, {"M": 16384, "K": 4096}, {"M": 4096, "K": 14336}},
	Tests:      colTests,
	Peers:      true,
	Goldens: []Variant{{Name: "odd", Shape: Shape{"M": 1000, "K": 333}},
		// f32 in: 4 columns and 8 rows a lane, the transposing write's
		// words in two rounds.
		{Name: "f32_rounds", Options: Options{"in": "f32"}, Schedule: schedule.Params{"BLOCK_M": 64, "BLOCK_K": 64, "WARPS": 4, "SPLIT": 8, "PREFETCH": 0, "KEEP": 8}},
		// The amax's first rows read once, the cast from the bottom band.
		{Name: "keep", Schedule: schedule.Params{"BLOCK_M": 64, "BLOCK_K": 64, "WARPS": 4, "SPLIT": 8, "PREFETCH": 1, "KEEP": 2}}},
	Reference: func(c *Call, in map[string]*Tensor) map[string]*Tensor {
		// One group of every row: the grouped reference's column blocks.
		m, k := c.Size("M"), c.Size("K")
		x := in["x"].Floats()
		out := Tensors(c.SpecsOf(Output, Scratch))
		refParallel(k, func(j0, j1, _ int) {
			refColumnGroup(c, x, k, j0, j1, 0, m, m, 0, out["qt"].Data, out["inv_scale"].Data, out["amax"].Data)
		})
		return out
	},
	Dequantize: func(c *Call, _, out map[string]*Tensor) []float32 {
		m, k := c.Size("M"), c.Size("K")
		inv := out["inv_scale"].Floats()
		x := make([]float32, m*k)
		for j := 0; j < k; j++ {
			for i := 0; i < m; i++ {
				x[i*k+j] = c.Format.Decode(out["qt"].Data[j*m+i]) * inv[j]
			}
		}
		return x
	},
})

// colCandidates: the column tiles, BLOCK_M rows × BLOCK_K columns, with
// about one wave of amax programs: 4 a CU, rounded up to a power of two
// of programs a column block (at 8192² 1024 programs, about 8 a CU, as
// many as its registers let a CU hold), then the first tile with half and
// twice that. One tile a program ran the H200's 8192×8192 at 38% of copy; 16
// blocks a CU, 4 tiles a program there, ran its amax at 2.8 TB/s, and 4
// a CU (16 tiles a program) at 3.4: 97.6 against 107.8 µs, 98.3 against
// 105.0 at 16384×4096, 86.9 against 94.3 at 4096×14336 (2026-12-01).
// 64 × 64 in 4 waves first, which won the tune at the three bench shapes
// (1.10-1.12× as fast as 128 × 64 in 8); the amax's next tile prefetched
// (0.1-2% faster at the bench shapes), and 64 × 64 without. Where the L2
// is large (16 MiB or more) but x is larger still (where it fits, the
// cast finds it all there anyway) the amax reads the first three quarters
// of x once (KEEP=2) and the cast starts at the last band: on the H200
// (2026-12-02) 5.3–5.9% faster at the three bench shapes than the same
// tiles without (93.5 / 93.5 / 83.0 against 98.7 / 99.4 / 88.1 µs); the
// last two candidates are the other way, with and without the prefetch.
// (32 × 32, 30% slower than 64 × 64 there, is out.) Where M is not a
// multiple of 32, qt's rows start inside a 32-byte sector and every tile
// leaves a part-written one at both ends of them; where M is large (8192
// rows or more: measured at 16K) the first candidate is then 256 × 64 in 8
// waves, which straddles a quarter as often: 199.2 against 205.5 µs at
// 16368×8192, 276.0 against 361.0 at 16383×8192 (the H200, 2026-12-03;
// docs/performance.md).
func colCandidates() []Candidate {
	split := func(perCU any) Assign {
		return Assign{"SPLIT", e("max(1, min(pow2ceil(cdiv(M, BLOCK_M)), pow2ceil(cdiv(per_cu * CUS, cdiv(K, BLOCK_K)))))", "per_cu", perCU)}
	}
	const bigX = "L2 >= 16777216 && 2 * M * K > L2"
	keep, other := Assign{"KEEP", e("big ? 2 : 8", "big", bigX)}, Assign{"KEEP", e("big ? 8 : 2", "big", bigX)}
	out := columnTiles("BLOCK_M", "BLOCK_K", split("4"), Assign{"PREFETCH", e("1")}, keep)[:3]
	out[0], out[1] = out[1], out[0]
	const tall = "M % 32 != 0 && M >= 8192"
	out[0] = Candidate{{"BLOCK_M", e("tall ? 256 : 64", "tall", tall)}, {"BLOCK_K", e("64")}, {"WARPS", e("tall ? 8 : 4", "tall", tall)},
		split(e("tall ? 2 : 4", "tall", tall)), {"PREFETCH", e("1")}, keep}
	for _, perCU := range []string{"2", "8"} {
		out = append(out, columnTiles("BLOCK_M", "BLOCK_K", split(perCU), Assign{"PREFETCH", e("1")}, keep)[1])
	}
	out = append(out, columnTiles("BLOCK_M", "BLOCK_K", split("4"), Assign{"PREFETCH", e("0")}, keep)[1])
	for _, prefetch := range []string{"1", "0"} {
		out = append(out, columnTiles("BLOCK_M", "BLOCK_K", split("4"), Assign{"PREFETCH", e(prefetch)}, other)[1])
	}
	return out
}

// columnTiles are the tiles of the ops with one scale per column (colwise,
// and the MoE scales), rows × cols knobs and the waves for them, most
// preferred first: columns of 64 bf16 give 128-byte row segments to read,
// and a transposed tile leaves through LDS in rows of `rows` bytes. more
// is appended to each.
func columnTiles(rows, cols string, more ...Assign) []Candidate {
	var out []Candidate
	for _, c := range [][3]string{{"128", "64", "8"}, {"64", "64", "4"}, {"64", "32", "4"}, {"32", "32", "4"}} {
		out = append(out, append(Candidate{{rows, e(c[0])}, {cols, e(c[1])}, {"WARPS", e(c[2])}}, more...))
	}
	return out
}

// prefetchKnob: the amax loops' software pipelining, a knob of the ops
// whose amax loops over tiles.
var prefetchKnob = schedule.Knob{Name: "PREFETCH", Doc: "1: the amax loop (in the expert's fused kernel, its amax loop only) loads its next tile before taking this one's max (twice the registers for x), so that a warp has two tiles' loads in flight; 0: one", Domain: schedule.Bool()}

// colCastGrid: down each column block in turn, or (KEEP < 8) along the
// rows first.
var colCastGrid = [3]expr.Expr{e("KEEP < 8 ? cdiv(K, BLOCK_K) : cdiv(M, BLOCK_M)"), e("KEEP < 8 ? cdiv(M, BLOCK_M) : cdiv(K, BLOCK_K)"), e("1")}

// refColumnGroup scales columns [j0, j1) of rows [lo, hi) of x (k
// columns a row), row by row (column by column, strided, the benchmark
// shapes took seconds): each column's amax (by maxNum) into am and the
// inverse of its scale into inv, at slot base + column, and its elements
// encoded into the transposed qt[column·t + row]. A max does not depend on
// the order of its terms.
func refColumnGroup(c *Call, x []float32, k, j0, j1, lo, hi, t, base int, qt, inv, am []byte) {
	enc := refnum.Encoder(c.Format)
	amax, scale := make([]float32, j1-j0), make([]float32, j1-j0)
	for i := lo; i < hi; i++ {
		for j, v := range x[i*k+j0 : i*k+j1] {
			amax[j] = refnum.MaxNum(amax[j], refnum.Abs(v))
		}
	}
	for j := range scale {
		scale[j] = refScale(amax[j], c)
		refnum.PutF32(inv, base+j0+j, 1/scale[j])
		refnum.PutF32(am, base+j0+j, amax[j])
	}
	for i := lo; i < hi; i++ {
		for j, v := range x[i*k+j0 : i*k+j1] {
			qt[(j0+j)*t+i] = enc(v * scale[j])
		}
	}
}

// refTensorAmax is refAmax of x by chunks in parallel, then the chunks'
// max: maxNum is exact in any order.
func refTensorAmax(x []float32) float32 {
	parts := make([]float32, refChunks)
	bigParallel(len(x), func(lo, hi, chunk int) { parts[chunk] = refAmax(x[lo:hi]) })
	return refAmax(parts)
}

// refAmax is max |x| by IEEE maxNum (NaN ignored), from 0.
func refAmax(g []float32) float32 {
	amax := float32(0)
	for _, v := range g {
		amax = refnum.MaxNum(amax, refnum.Abs(v))
	}
	return amax
}

func refScale(amax float32, c *Call) float32 {
	s := c.Format.Max / refnum.MaxNum(amax, float32(Eps))
	if c.Flag(opt.Pow2) {
		s = refnum.Pow2Floor(s)
	}
	return s
}

// dequant decodes q and multiplies element i by inv(i).
func dequant(q *Tensor, f *fp8.Format, inv func(i int) float32) []float32 {
	x := make([]float32, len(q.Data))
	for i, b := range q.Data {
		x[i] = f.Decode(b) * inv(i)
	}
	return x
}
