package ops

import (
	"encoding/binary"
	"math"

	"github.com/fp8gen/fp8gen/fp8"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/schedule"
	"github.com/fp8gen/fp8gen/target"
)

// scaleOf is fmt_max / max(amax, eps), optionally rounded down to a power of two.
func scaleOf(b *ir.Builder, amax *ir.Value, f *fp8.Format, o Options) *ir.Value {
	s := b.Div(b.FP8Max(f), b.Max(amax, Eps))
	if o.Pow2 {
		s = b.Pow2Floor(s)
	}
	return s
}

// loadF32 loads x (bf16 or f32) where mask holds, 0 elsewhere, as f32.
func loadF32(b *ir.Builder, x, offs, mask *ir.Value) *ir.Value {
	v := b.Load(b.PtrAdd(x, offs), mask, nil)
	if v.Type.DType != ir.F32 {
		v = b.Cast(v, ir.F32)
	}
	return v
}

var Rowwise = register(&Op{
	Name:  "rowwise_cast",
	Doc:   "x[M,K] → q[M,K] fp8, inv_scale[M] f32: one scale per row",
	Sizes: []string{"M", "K"},
	Inputs: func(sh Shape, o Options) []Spec {
		return []Spec{{Name: "x", DType: o.In, Shape: []int{sh["M"], sh["K"]}}}
	},
	Outputs: rowwiseOutputs,
	Kernels: []*Kernel{{
		Name:  "rowwise_cast",
		Build: rowwiseKernel,
		Space: rowwiseSpace,
		Grid: func(t *target.Target, sh Shape, s schedule.Params) [3]int {
			return [3]int{cdiv(sh["M"], s.Get("ROWS")), 1, 1}
		},
	}},
	Reference: func(in map[string]*Tensor, sh Shape, o Options, f *fp8.Format) map[string]*Tensor {
		m, k := sh["M"], sh["K"]
		x := floats(in["x"])
		out := Tensors(rowwiseOutputs(sh, o, f))
		for i := 0; i < m; i++ {
			row := x[i*k : (i+1)*k]
			scale := refScale(row, f, o)
			for j, v := range row {
				out["q"].Data[i*k+j] = f.EncodeSat(v * scale)
			}
			putF32(out["inv_scale"].Data, i, 1/scale)
		}
		return out
	},
	Ceiling: func(*target.Target, Shape, []schedule.Params) float64 { return 1 },
	Dequantize: func(out map[string]*Tensor, sh Shape, f *fp8.Format) []float32 {
		inv := floats(out["inv_scale"])
		return dequant(out["q"], f, func(i int) float32 { return inv[i/sh["K"]] })
	},
})

// rowwiseSpace: a whole row in registers (BLOCK_K ≥ K, the single pass);
// rows of more than 16384 elements loop over K twice. Preference: enough
// waves that each lane holds at most 16 elements of x, several rows per
// program when rows are short.
func rowwiseSpace(t *target.Target, sh Shape) []schedule.Params {
	k := sh["K"]
	bk := pow2AtLeast(k)
	var out []schedule.Params
	if bk <= 16384 {
		for _, c := range [][2]int{{16, 1}, {8, 1}, {32, 1}, {16, 2}, {32, 2}, {32, 4}} {
			per, rows := c[0], c[1]
			warps := max(1, min(rows*bk/(per*t.WaveSize), t.MaxBlock/t.WaveSize))
			for rows*bk < per*t.WaveSize*warps && rows < 64 {
				rows *= 2
			}
			out = append(out, schedule.Params{"WARPS": warps, "ROWS": rows, "BLOCK_K": bk, "LOOP": 0})
		}
	}
	for _, bk := range []int{4096, 2048} {
		out = append(out, schedule.Params{"WARPS": 8, "ROWS": 1, "BLOCK_K": bk, "LOOP": 1})
	}
	return out
}

func rowwiseKernel(b *ir.Builder, s schedule.Params, sh Shape, o Options, f *fp8.Format) {
	x := b.Param("x", o.In)
	q := b.Param("q", ir.FP8(f))
	inv := b.Param("inv_scale", ir.F32)
	m, k := b.Size("M"), b.Size("K")
	nr, bk := s.Get("ROWS"), s.Get("BLOCK_K")

	rows := b.Add(b.Mul(b.ProgramID(0), nr), b.Arange(nr))
	rmask := b.Lt(rows, m)
	tile := func(k0 *ir.Value) (offs, mask *ir.Value) {
		cols := b.Add(k0, b.Arange(bk))
		offs = b.Add(b.Mul(b.Col(rows), k), b.Row(cols))
		mask = b.And(b.Col(rmask), b.Row(b.Lt(cols, k)))
		return offs, mask
	}
	var scale *ir.Value
	if s.Get("LOOP") == 0 {
		offs, mask := tile(b.I32(0))
		v := loadF32(b, x, offs, mask)
		scale = scaleOf(b, b.Reduce(b.Abs(v), 1, ir.RMax), f, o)
		b.Store(b.PtrAdd(q, offs), b.Cast(b.Mul(v, b.Col(scale)), ir.FP8(f)), mask)
	} else {
		// Rows too long for registers: one pass for amax, one to cast.
		acc := b.For(0, k, bk, []*ir.Value{b.Full(ir.F32, 0, nr, bk)}, func(k0 *ir.Value, c []*ir.Value) []*ir.Value {
			offs, mask := tile(k0)
			return []*ir.Value{b.Max(c[0], b.Abs(loadF32(b, x, offs, mask)))}
		})
		scale = scaleOf(b, b.Reduce(acc[0], 1, ir.RMax), f, o)
		b.For(0, k, bk, nil, func(k0 *ir.Value, _ []*ir.Value) []*ir.Value {
			offs, mask := tile(k0)
			v := loadF32(b, x, offs, mask)
			b.Store(b.PtrAdd(q, offs), b.Cast(b.Mul(v, b.Col(scale)), ir.FP8(f)), mask)
			return nil
		})
	}
	b.Store(b.PtrAdd(inv, rows), b.Div(1, scale), rmask)
}

var Tensorwise = register(&Op{
	Name:  "tensorwise_cast",
	Doc:   "x[M,K] → q[M,K] fp8, inv_scale[1] f32: one scale for the tensor (amax with relaxed atomics, then the cast)",
	Sizes: []string{"M", "K"},
	Inputs: func(sh Shape, o Options) []Spec {
		return []Spec{{Name: "x", DType: o.In, Shape: []int{sh["M"], sh["K"]}}}
	},
	Outputs: tensorwiseOutputs,
	Kernels: []*Kernel{
		{Name: "tensorwise_amax", Build: tensorAmaxKernel, Space: flatSpace, Grid: flatGrid},
		{Name: "tensorwise_cast", Build: tensorCastKernel, Space: flatSpace, Grid: flatGrid},
	},
	Reference: func(in map[string]*Tensor, sh Shape, o Options, f *fp8.Format) map[string]*Tensor {
		x := floats(in["x"])
		out := Tensors(tensorwiseOutputs(sh, o, f))
		amax := float32(0)
		for _, v := range x {
			amax = ir.MaxF32(amax, abs32(v))
		}
		scale := scaleFrom(amax, f, o)
		for i, v := range x {
			out["q"].Data[i] = f.EncodeSat(v * scale)
		}
		putF32(out["inv_scale"].Data, 0, 1/scale)
		putF32(out["amax"].Data, 0, amax)
		return out
	},
	Ceiling: func(t *target.Target, sh Shape, _ []schedule.Params) float64 {
		return twoPassCeiling(t, sh)
	},
	Dequantize: func(out map[string]*Tensor, sh Shape, f *fp8.Format) []float32 {
		inv := floats(out["inv_scale"])[0]
		return dequant(out["q"], f, func(int) float32 { return inv })
	},
})

// twoPassCeiling: x read twice, unless it fits in L2 for the second read.
// Ideal bytes are 2 (read) + 1 (write) per bf16 element, moved bytes 2+2+1.
func twoPassCeiling(t *target.Target, sh Shape) float64 {
	if 2*sh["M"]*sh["K"] <= t.L2Bytes/2 {
		return 1
	}
	return 3.0 / 5.0
}

// flatSpace: the tensor as a flat array, a persistent grid of programs each
// walking tiles of BLOCK elements; 16 bytes of x per lane per tile.
func flatSpace(t *target.Target, sh Shape) []schedule.Params {
	var out []schedule.Params
	for _, c := range [][2]int{{8, 16}, {4, 16}, {16, 16}, {8, 32}, {4, 32}} {
		out = append(out, schedule.Params{"WARPS": c[0], "BLOCK": c[0] * t.WaveSize * c[1]})
	}
	return out
}

// flatGrid: enough programs to fill every CU a few times over, no more than tiles.
func flatGrid(t *target.Target, sh Shape, s schedule.Params) [3]int {
	tiles := cdiv(sh["M"]*sh["K"], s.Get("BLOCK"))
	perCU := max(1, 2048/(s.Get("WARPS")*t.WaveSize))
	return [3]int{max(1, min(tiles, t.CUs*perCU)), 1, 1}
}

func tensorAmaxKernel(b *ir.Builder, s schedule.Params, sh Shape, o Options, f *fp8.Format) {
	x := b.Param("x", o.In)
	amaxp := b.Param("amax", ir.F32)
	m, k := b.Size("M"), b.Size("K")
	bs := s.Get("BLOCK")
	n := b.Mul(m, k)
	tiles := b.Div(b.Add(n, bs-1), bs) // no overflow: CheckShape keeps n ≤ MaxElems
	acc := b.For(b.ProgramID(0), tiles, b.NumPrograms(0), []*ir.Value{b.Full(ir.F32, 0, bs)}, func(i *ir.Value, c []*ir.Value) []*ir.Value {
		offs := b.Add(b.Mul(i, bs), b.Arange(bs))
		return []*ir.Value{b.Max(c[0], b.Abs(loadF32(b, x, offs, b.Lt(offs, n))))}
	})
	// Relaxed is enough: the cast kernel reads amax after this launch ends.
	b.AtomicMax(amaxp, b.Reduce(acc[0], 0, ir.RMax), nil, ir.Relaxed, ir.ScopeAgent)
}

func tensorCastKernel(b *ir.Builder, s schedule.Params, sh Shape, o Options, f *fp8.Format) {
	x := b.Param("x", o.In)
	q := b.Param("q", ir.FP8(f))
	inv := b.Param("inv_scale", ir.F32)
	amaxp := b.Param("amax", ir.F32)
	m, k := b.Size("M"), b.Size("K")
	bs := s.Get("BLOCK")
	n := b.Mul(m, k)
	tiles := b.Div(b.Add(n, bs-1), bs) // no overflow: CheckShape keeps n ≤ MaxElems
	scale := scaleOf(b, b.Load(amaxp, nil, nil), f, o)
	pid := b.ProgramID(0)
	b.For(pid, tiles, b.NumPrograms(0), nil, func(i *ir.Value, _ []*ir.Value) []*ir.Value {
		offs := b.Add(b.Mul(i, bs), b.Arange(bs))
		mask := b.Lt(offs, n)
		b.Store(b.PtrAdd(q, offs), b.Cast(b.Mul(loadF32(b, x, offs, mask), scale), ir.FP8(f)), mask)
		return nil
	})
	b.Store(inv, b.Div(1, scale), b.Eq(pid, 0))
}

var Colwise = register(&Op{
	Name:  "colwise_cast",
	Doc:   "x[M,K] → qt[K,M] fp8 (transposed), inv_scale[K] f32: one scale per column (amax with relaxed atomics, then the cast)",
	Sizes: []string{"M", "K"},
	Inputs: func(sh Shape, o Options) []Spec {
		return []Spec{{Name: "x", DType: o.In, Shape: []int{sh["M"], sh["K"]}}}
	},
	Outputs: colwiseOutputs,
	Kernels: []*Kernel{
		{Name: "colwise_amax", Build: colAmaxKernel, Space: colwiseSpace, Grid: colwiseGrid},
		{Name: "colwise_cast", Build: colCastKernel, Space: colwiseSpace, Grid: colwiseGrid},
	},
	Reference: func(in map[string]*Tensor, sh Shape, o Options, f *fp8.Format) map[string]*Tensor {
		m, k := sh["M"], sh["K"]
		x := floats(in["x"])
		out := Tensors(colwiseOutputs(sh, o, f))
		col := make([]float32, m)
		for j := 0; j < k; j++ {
			amax := float32(0)
			for i := 0; i < m; i++ {
				col[i] = x[i*k+j]
				amax = ir.MaxF32(amax, abs32(col[i]))
			}
			scale := scaleFrom(amax, f, o)
			for i, v := range col {
				out["qt"].Data[j*m+i] = f.EncodeSat(v * scale)
			}
			putF32(out["inv_scale"].Data, j, 1/scale)
			putF32(out["amax"].Data, j, amax)
		}
		return out
	},
	Ceiling: func(t *target.Target, sh Shape, _ []schedule.Params) float64 {
		return twoPassCeiling(t, sh)
	},
	Dequantize: func(out map[string]*Tensor, sh Shape, f *fp8.Format) []float32 {
		m, k := sh["M"], sh["K"]
		inv := floats(out["inv_scale"])
		x := make([]float32, m*k)
		for j := 0; j < k; j++ {
			for i := 0; i < m; i++ {
				x[i*k+j] = f.Decode(out["qt"].Data[j*m+i]) * inv[j]
			}
		}
		return x
	},
})

// colwiseSpace: tiles of BLOCK_M rows × BLOCK_K columns, 2-D grid. Columns
// of 64 bf16 give 128-byte row segments to read; the transposed tile leaves
// through LDS in rows of BLOCK_M bytes of qt.
func colwiseSpace(t *target.Target, sh Shape) []schedule.Params {
	var out []schedule.Params
	for _, c := range [][3]int{{128, 64, 8}, {64, 64, 4}, {64, 32, 4}, {32, 32, 4}} {
		out = append(out, schedule.Params{"BLOCK_M": c[0], "BLOCK_K": c[1], "WARPS": c[2]})
	}
	return out
}

func colwiseGrid(t *target.Target, sh Shape, s schedule.Params) [3]int {
	return [3]int{cdiv(sh["M"], s.Get("BLOCK_M")), cdiv(sh["K"], s.Get("BLOCK_K")), 1}
}

// colTile loads the [BLOCK_M, BLOCK_K] tile of program (pid_m, pid_k) as f32.
func colTile(b *ir.Builder, s schedule.Params, x, m, k *ir.Value) *ir.Value {
	bm, bk := s.Get("BLOCK_M"), s.Get("BLOCK_K")
	rows := b.Add(b.Mul(b.ProgramID(0), bm), b.Arange(bm))
	cols := b.Add(b.Mul(b.ProgramID(1), bk), b.Arange(bk))
	offs := b.Add(b.Mul(b.Col(rows), k), b.Row(cols))
	mask := b.And(b.Col(b.Lt(rows, m)), b.Row(b.Lt(cols, k)))
	return loadF32(b, x, offs, mask)
}

func colAmaxKernel(b *ir.Builder, s schedule.Params, sh Shape, o Options, f *fp8.Format) {
	x := b.Param("x", o.In)
	amax := b.Param("amax", ir.F32)
	m, k := b.Size("M"), b.Size("K")
	cols := b.Add(b.Mul(b.ProgramID(1), s.Get("BLOCK_K")), b.Arange(s.Get("BLOCK_K")))
	part := b.Reduce(b.Abs(colTile(b, s, x, m, k)), 0, ir.RMax)
	// Relaxed is enough: the cast kernel reads amax after this launch ends.
	b.AtomicMax(b.PtrAdd(amax, cols), part, b.Lt(cols, k), ir.Relaxed, ir.ScopeAgent)
}

func colCastKernel(b *ir.Builder, s schedule.Params, sh Shape, o Options, f *fp8.Format) {
	x := b.Param("x", o.In)
	qt := b.Param("qt", ir.FP8(f))
	inv := b.Param("inv_scale", ir.F32)
	amax := b.Param("amax", ir.F32)
	m, k := b.Size("M"), b.Size("K")
	bm, bk := s.Get("BLOCK_M"), s.Get("BLOCK_K")
	pm, pk := b.ProgramID(0), b.ProgramID(1)
	// Index tiles are built apart for each access, so that each takes the
	// layout its access wants and only the data goes through LDS.
	colsOf := func() *ir.Value { return b.Add(b.Mul(pk, bk), b.Arange(bk)) }
	rowsOf := func() *ir.Value { return b.Add(b.Mul(pm, bm), b.Arange(bm)) }
	cols := colsOf()
	scale := scaleOf(b, b.Load(b.PtrAdd(amax, cols), b.Lt(cols, k), nil), f, o)
	q := b.Cast(b.Mul(colTile(b, s, x, m, k), b.Row(scale)), ir.FP8(f))
	rows, cols2 := rowsOf(), colsOf()
	offs := b.Add(b.Mul(b.Col(cols2), m), b.Row(rows))
	mask := b.And(b.Col(b.Lt(cols2, k)), b.Row(b.Lt(rows, m)))
	b.Store(b.PtrAdd(qt, offs), b.Trans(q), mask) // [BLOCK_K, BLOCK_M], coalesced along M
	b.Store(b.PtrAdd(inv, cols), b.Div(1, scale), b.And(b.Lt(cols, k), b.Eq(pm, 0)))
}

// refScale is the reference's scale of one group.
func refScale(g []float32, f *fp8.Format, o Options) float32 {
	amax := float32(0)
	for _, v := range g {
		amax = ir.MaxF32(amax, abs32(v))
	}
	return scaleFrom(amax, f, o)
}

func scaleFrom(amax float32, f *fp8.Format, o Options) float32 {
	s := f.Max / ir.MaxF32(amax, float32(Eps))
	if o.Pow2 {
		s = ir.Pow2Floor(s)
	}
	return s
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// floats decodes a bf16 or f32 tensor.
func floats(t *Tensor) []float32 {
	n := len(t.Data) / t.DType.Bytes()
	out := make([]float32, n)
	for i := range out {
		if t.DType.K == ir.KBF16 {
			out[i] = ir.BF16ToF32(binary.LittleEndian.Uint16(t.Data[2*i:]))
		} else {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
		}
	}
	return out
}

func putF32(b []byte, i int, v float32) {
	binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
}

func rowwiseOutputs(sh Shape, o Options, f *fp8.Format) []Spec {
	return []Spec{
		{Name: "q", DType: ir.FP8(f), Shape: []int{sh["M"], sh["K"]}},
		{Name: "inv_scale", DType: ir.F32, Shape: []int{sh["M"]}},
	}
}

func tensorwiseOutputs(sh Shape, o Options, f *fp8.Format) []Spec {
	return []Spec{
		{Name: "q", DType: ir.FP8(f), Shape: []int{sh["M"], sh["K"]}},
		{Name: "inv_scale", DType: ir.F32, Shape: []int{1}},
		{Name: "amax", DType: ir.F32, Shape: []int{1}, Zero: true},
	}
}

func colwiseOutputs(sh Shape, o Options, f *fp8.Format) []Spec {
	return []Spec{
		{Name: "qt", DType: ir.FP8(f), Shape: []int{sh["K"], sh["M"]}},
		{Name: "inv_scale", DType: ir.F32, Shape: []int{sh["K"]}},
		{Name: "amax", DType: ir.F32, Shape: []int{sh["K"]}, Zero: true},
	}
}

// dequant decodes q and multiplies element i by inv(i).
func dequant(q *Tensor, f *fp8.Format, inv func(i int) float32) []float32 {
	x := make([]float32, len(q.Data))
	for i, b := range q.Data {
		x[i] = f.Decode(b) * inv(i)
	}
	return x
}

// Floats decodes a bf16 or f32 tensor.
func Floats(t *Tensor) []float32 { return floats(t) }
