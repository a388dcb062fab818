package ops

import (
	"github.com/fp8gen/fp8gen/expr"
	"github.com/fp8gen/fp8gen/fp8"
	"github.com/fp8gen/fp8gen/internal/refnum"
	"github.com/fp8gen/fp8gen/ir"
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

var e = expr.MustParse

// castOptions are the choices every cast takes.
var castOptions = []Option{
	{Name: "in", Doc: "element type of x", Values: []string{"bf16", "f32"}, Default: "bf16"},
	{Name: "fp8", Doc: "fp8 family; the format itself comes from the target", Values: []string{"e4m3", "e5m2"}, Default: "e4m3"},
	{Name: "pow2", Doc: "round scales down to powers of two", Values: []string{"false", "true"}, Default: "false"},
}

var warpsKnob = schedule.Knob{Name: "WARPS", Doc: "waves per block", Domain: schedule.Pow2("1", "MAXBLOCK / WAVE")}

// tileLimit keeps a tile within what lowering enumerates.
func tileLimit(extents string) schedule.Constraint {
	return schedule.Constraint{Cond: e(extents + " <= 65536"), Why: "a tile holds at most 65536 elements"}
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

// scaleOf is fmt_max / max(amax, eps), optionally rounded down to a power of two.
func scaleOf(b *ir.Builder, amax *ir.Value, c *Call) *ir.Value {
	s := b.Div(b.FP8Max(c.Format), b.Max(amax, Eps))
	if c.Flag("pow2") {
		s = b.Pow2Floor(s)
	}
	return s.Named("scale")
}

// loadF32 loads x (bf16 or f32) where mask holds, 0 elsewhere, as f32.
func loadF32(b *ir.Builder, x, offs, mask *ir.Value) *ir.Value {
	return b.Cast(b.Load(b.PtrAdd(x, offs), mask, nil), ir.F32).Named("xf")
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
	Kernels: []*Kernel{{Name: "rowwise_cast", Build: rowwiseKernel, Grid: [3]expr.Expr{e("cdiv(M, ROWS)"), e("1"), e("1")}}},
	Knobs: []schedule.Knob{
		warpsKnob,
		{Name: "ROWS", Doc: "rows per program", Domain: schedule.Pow2("1", "64")},
		{Name: "BLOCK_K", Doc: "columns per tile", Domain: schedule.Pow2("1", "65536")},
		{Name: "LOOP", Doc: "0: the row in registers, one pass; 1: two passes over K in tiles of BLOCK_K", Domain: schedule.Bool()},
	},
	Constraints: []schedule.Constraint{
		{Cond: e("LOOP == 1 || BLOCK_K >= K"), Why: "a one-pass schedule (LOOP=0) holds the whole row: BLOCK_K must be at least K"},
		{Cond: e("LOOP == 1 || BLOCK_K <= 16384"), Why: "rows longer than 16384 take the two-pass schedule (LOOP=1)"},
		tileLimit("ROWS * BLOCK_K"),
	},
	Candidates: rowwiseCandidates(),
	Ceiling:    e("100"),
	Example:    Shape{"M": 4096, "K": 4096},
	Bench:      append(benchShapes[:4:4], Shape{"M": 65536, "K": 2048}),
	Tests:      castTests,
	Goldens: append(castGoldens(),
		Variant{Name: "two_pass", Shape: Shape{"M": 4096, "K": 40000}},
		Variant{Name: "i64", Shape: Shape{"M": 65536, "K": 40000}}),
	Reference: func(c *Call, in map[string]*Tensor) map[string]*Tensor {
		m, k := c.Size("M"), c.Size("K")
		x := in["x"].Floats()
		out := Tensors(c.SpecsOf(Output, Scratch))
		for i := 0; i < m; i++ {
			row := x[i*k : (i+1)*k]
			scale := refScale(refAmax(row), c)
			for j, v := range row {
				out["q"].Data[i*k+j] = refnum.EncodeFP8(c.Format, v*scale)
			}
			refnum.PutF32(out["inv_scale"].Data, i, 1/scale)
		}
		return out
	},
	Dequantize: func(c *Call, out map[string]*Tensor) []float32 {
		inv := out["inv_scale"].Floats()
		k := c.Size("K")
		return dequant(out["q"], c.Format, func(i int) float32 { return inv[i/k] })
	},
})

// rowwiseCandidates: a whole row in registers (BLOCK_K ≥ K, the single
// pass), with enough waves that each lane holds `per` elements of x and
// several rows per program when rows are short; rows of more than 16384
// elements loop over K twice.
func rowwiseCandidates() []Candidate {
	var out []Candidate
	for _, c := range [][2]string{{"16", "1"}, {"8", "1"}, {"32", "1"}, {"16", "2"}, {"32", "2"}, {"32", "4"}} {
		per, rows := c[0], c[1]
		out = append(out, Candidate{
			{"BLOCK_K", e("pow2ceil(K)")},
			{"WARPS", e("max(1, min(" + rows + " * BLOCK_K / (" + per + " * WAVE), MAXBLOCK / WAVE))")},
			{"ROWS", e("min(64, max(" + rows + ", pow2ceil(cdiv(" + per + " * WAVE * WARPS, BLOCK_K))))")},
			{"LOOP", e("0")},
		})
	}
	for _, bk := range []string{"4096", "2048"} {
		out = append(out, Candidate{{"BLOCK_K", e(bk)}, {"WARPS", e("8")}, {"ROWS", e("1")}, {"LOOP", e("1")}})
	}
	return out
}

func rowwiseKernel(b *ir.Builder, c *Call) {
	x := b.Param("x", c.DType("x"))
	q := b.Param("q", ir.FP8(c.Format))
	inv := b.Param("inv_scale", ir.F32)
	m, k := b.Size("M"), b.Size("K")
	nr, bk := c.Knob("ROWS"), c.Knob("BLOCK_K")

	rows := b.Add(b.Mul(b.ProgramID(0), nr), b.Arange(nr)).Named("rows")
	rmask := b.Lt(rows, m).Named("row_ok")
	tile := func(k0 *ir.Value) (offs, mask *ir.Value) {
		cols := b.Add(k0, b.Arange(bk)).Named("cols")
		offs = b.Add(b.Mul(b.Col(rows), k), b.Row(cols)).Named("offs")
		mask = b.And(b.Col(rmask), b.Row(b.Lt(cols, k))).Named("mask")
		return offs, mask
	}
	var scale *ir.Value
	if c.Knob("LOOP") == 0 {
		offs, mask := tile(b.Int(0))
		v := loadF32(b, x, offs, mask)
		scale = scaleOf(b, b.Reduce(b.Abs(v), 1, ir.RMax).Named("amax"), c)
		b.Store(b.PtrAdd(q, offs), b.Cast(b.Mul(v, b.Col(scale)), ir.FP8(c.Format)), mask)
	} else {
		// Rows too long for registers: one pass for amax, one to cast.
		acc := b.For(0, k, bk, []*ir.Value{b.Full(ir.F32, 0, nr, bk).Named("amax_part")}, func(k0 *ir.Value, acc []*ir.Value) []*ir.Value {
			offs, mask := tile(k0)
			return []*ir.Value{b.Max(acc[0], b.Abs(loadF32(b, x, offs, mask)))}
		})
		scale = scaleOf(b, b.Reduce(acc[0], 1, ir.RMax).Named("amax"), c)
		b.For(0, k, bk, nil, func(k0 *ir.Value, _ []*ir.Value) []*ir.Value {
			offs, mask := tile(k0)
			v := loadF32(b, x, offs, mask)
			b.Store(b.PtrAdd(q, offs), b.Cast(b.Mul(v, b.Col(scale)), ir.FP8(c.Format)), mask)
			return nil
		})
	}
	b.Store(b.PtrAdd(inv, rows), b.Div(1, scale), rmask)
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
	Candidates:  flatCandidates(),
	Ceiling:     twoPass,
	Example:     Shape{"M": 4096, "K": 4096},
	Bench:       benchShapes,
	Tests:       castTests,
	Reference: func(c *Call, in map[string]*Tensor) map[string]*Tensor {
		x := in["x"].Floats()
		out := Tensors(c.SpecsOf(Output, Scratch))
		amax := refAmax(x)
		scale := refScale(amax, c)
		for i, v := range x {
			out["q"].Data[i] = refnum.EncodeFP8(c.Format, v*scale)
		}
		refnum.PutF32(out["inv_scale"].Data, 0, 1/scale)
		refnum.PutF32(out["amax"].Data, 0, amax)
		return out
	},
	Dequantize: func(c *Call, out map[string]*Tensor) []float32 {
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
		out = append(out, Candidate{{"WARPS", e(c[0])}, {"BLOCK", e("WARPS * WAVE * " + c[1])}})
	}
	return out
}

// flatGrid: enough programs to fill every CU a few times over, no more than tiles.
var flatGrid = [3]expr.Expr{e("max(1, min(cdiv(M * K, BLOCK), CUS * max(1, 2048 / (WARPS * WAVE))))"), e("1"), e("1")}

func tensorAmaxKernel(b *ir.Builder, c *Call) {
	x := b.Param("x", c.DType("x"))
	amaxp := b.Param("amax", ir.F32)
	m, k := b.Size("M"), b.Size("K")
	bs := c.Knob("BLOCK")
	n := b.Mul(m, k).Named("n")
	tiles := b.CDiv(n, bs).Named("tiles") // no overflow: the index type holds n plus a tile
	acc := b.For(b.ProgramID(0), tiles, b.NumPrograms(0), []*ir.Value{b.Full(ir.F32, 0, bs).Named("amax_part")}, func(i *ir.Value, acc []*ir.Value) []*ir.Value {
		offs := b.Add(b.Mul(i, bs), b.Arange(bs)).Named("offs")
		return []*ir.Value{b.Max(acc[0], b.Abs(loadF32(b, x, offs, b.Lt(offs, n))))}
	})
	// Relaxed is enough: the cast kernel reads amax after this launch ends.
	b.AtomicMax(amaxp, b.Reduce(acc[0], 0, ir.RMax).Named("amax"), nil, ir.Relaxed, ir.ScopeAgent)
}

func tensorCastKernel(b *ir.Builder, c *Call) {
	x := b.Param("x", c.DType("x"))
	q := b.Param("q", ir.FP8(c.Format))
	inv := b.Param("inv_scale", ir.F32)
	amaxp := b.Param("amax", ir.F32)
	m, k := b.Size("M"), b.Size("K")
	bs := c.Knob("BLOCK")
	n := b.Mul(m, k).Named("n")
	tiles := b.CDiv(n, bs).Named("tiles")
	scale := scaleOf(b, b.Load(amaxp, nil, nil).Named("amax"), c)
	pid := b.ProgramID(0)
	b.For(pid, tiles, b.NumPrograms(0), nil, func(i *ir.Value, _ []*ir.Value) []*ir.Value {
		offs := b.Add(b.Mul(i, bs), b.Arange(bs)).Named("offs")
		mask := b.Lt(offs, n).Named("mask")
		b.Store(b.PtrAdd(q, offs), b.Cast(b.Mul(loadF32(b, x, offs, mask), scale), ir.FP8(c.Format)), mask)
		return nil
	})
	b.Store(inv, b.Div(1, scale), b.Eq(pid, 0))
}

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
		{Name: "colwise_amax", Build: colAmaxKernel, Grid: colGrid},
		{Name: "colwise_cast", Build: colCastKernel, Grid: colGrid},
	},
	Knobs: []schedule.Knob{
		warpsKnob,
		{Name: "BLOCK_M", Doc: "rows of a tile", Domain: schedule.Pow2("1", "4096")},
		{Name: "BLOCK_K", Doc: "columns of a tile", Domain: schedule.Pow2("1", "4096")},
	},
	Constraints: []schedule.Constraint{tileLimit("BLOCK_M * BLOCK_K")},
	Candidates:  colCandidates(),
	Ceiling:     twoPass,
	Example:     Shape{"M": 4096, "K": 4096},
	Bench:       []Shape{{"M": 8192, "K": 8192}, {"M": 16384, "K": 4096}, {"M": 4096, "K": 14336}},
	Tests:       castTests,
	Goldens:     []Variant{{Name: "odd", Shape: Shape{"M": 1000, "K": 333}}},
	Reference: func(c *Call, in map[string]*Tensor) map[string]*Tensor {
		m, k := c.Size("M"), c.Size("K")
		x := in["x"].Floats()
		out := Tensors(c.SpecsOf(Output, Scratch))
		col := make([]float32, m)
		for j := 0; j < k; j++ {
			for i := 0; i < m; i++ {
				col[i] = x[i*k+j]
			}
			amax := refAmax(col)
			scale := refScale(amax, c)
			for i, v := range col {
				out["qt"].Data[j*m+i] = refnum.EncodeFP8(c.Format, v*scale)
			}
			refnum.PutF32(out["inv_scale"].Data, j, 1/scale)
			refnum.PutF32(out["amax"].Data, j, amax)
		}
		return out
	},
	Dequantize: func(c *Call, out map[string]*Tensor) []float32 {
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

// colCandidates: tiles of BLOCK_M rows × BLOCK_K columns, 2-D grid. Columns
// of 64 bf16 give 128-byte row segments to read; the transposed tile leaves
// through LDS in rows of BLOCK_M bytes of qt.
func colCandidates() []Candidate {
	var out []Candidate
	for _, c := range [][3]string{{"128", "64", "8"}, {"64", "64", "4"}, {"64", "32", "4"}, {"32", "32", "4"}} {
		out = append(out, Candidate{{"BLOCK_M", e(c[0])}, {"BLOCK_K", e(c[1])}, {"WARPS", e(c[2])}})
	}
	return out
}

var colGrid = [3]expr.Expr{e("cdiv(M, BLOCK_M)"), e("cdiv(K, BLOCK_K)"), e("1")}

// colTile loads the [BLOCK_M, BLOCK_K] tile of program (pid_m, pid_k) as f32.
func colTile(b *ir.Builder, c *Call, x, m, k *ir.Value) *ir.Value {
	bm, bk := c.Knob("BLOCK_M"), c.Knob("BLOCK_K")
	rows := b.Add(b.Mul(b.ProgramID(0), bm), b.Arange(bm)).Named("rows")
	cols := b.Add(b.Mul(b.ProgramID(1), bk), b.Arange(bk)).Named("cols")
	offs := b.Add(b.Mul(b.Col(rows), k), b.Row(cols)).Named("offs")
	mask := b.And(b.Col(b.Lt(rows, m)), b.Row(b.Lt(cols, k))).Named("mask")
	return loadF32(b, x, offs, mask)
}

func colAmaxKernel(b *ir.Builder, c *Call) {
	x := b.Param("x", c.DType("x"))
	amax := b.Param("amax", ir.F32)
	m, k := b.Size("M"), b.Size("K")
	cols := b.Add(b.Mul(b.ProgramID(1), c.Knob("BLOCK_K")), b.Arange(c.Knob("BLOCK_K"))).Named("cols")
	part := b.Reduce(b.Abs(colTile(b, c, x, m, k)), 0, ir.RMax).Named("amax_part")
	// Relaxed is enough: the cast kernel reads amax after this launch ends.
	b.AtomicMax(b.PtrAdd(amax, cols), part, b.Lt(cols, k), ir.Relaxed, ir.ScopeAgent)
}

func colCastKernel(b *ir.Builder, c *Call) {
	x := b.Param("x", c.DType("x"))
	qt := b.Param("qt", ir.FP8(c.Format))
	inv := b.Param("inv_scale", ir.F32)
	amax := b.Param("amax", ir.F32)
	m, k := b.Size("M"), b.Size("K")
	bm, bk := c.Knob("BLOCK_M"), c.Knob("BLOCK_K")
	pm, pk := b.ProgramID(0), b.ProgramID(1)
	// Index tiles are built apart for each access, so that each takes the
	// layout its access wants and only the data goes through LDS.
	colsOf := func() *ir.Value { return b.Add(b.Mul(pk, bk), b.Arange(bk)).Named("cols") }
	rowsOf := func() *ir.Value { return b.Add(b.Mul(pm, bm), b.Arange(bm)).Named("rows") }
	cols := colsOf()
	scale := scaleOf(b, b.Load(b.PtrAdd(amax, cols), b.Lt(cols, k), nil).Named("amax"), c)
	q := b.Cast(b.Mul(colTile(b, c, x, m, k), b.Row(scale)), ir.FP8(c.Format)).Named("q")
	rows, cols2 := rowsOf(), colsOf()
	offs := b.Add(b.Mul(b.Col(cols2), m), b.Row(rows)).Named("offs_t")
	mask := b.And(b.Col(b.Lt(cols2, k)), b.Row(b.Lt(rows, m))).Named("mask_t")
	b.Store(b.PtrAdd(qt, offs), b.Trans(q), mask) // [BLOCK_K, BLOCK_M], coalesced along M
	b.Store(b.PtrAdd(inv, cols), b.Div(1, scale), b.And(b.Lt(cols, k), b.Eq(pm, 0)))
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
	if c.Flag("pow2") {
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
