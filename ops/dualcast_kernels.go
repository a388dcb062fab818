package ops

import "github.com/fp8gen/fp8gen/ir"

// dualRowBlock is the cast's row block: the bottom one first, since the
// amax pass reads the bottom of x last and the L2 may still hold it.
func dualRowBlock(b *ir.Builder) *ir.Value {
	return b.NumPrograms(1).Sub(1).Sub(b.ProgramID(1)).Named("pm")
}

// storeRows writes the fp8 tile v of program (pm, pk) into q ([M, K],
// row-major), and storeTransposed the tile vt transposed into qt ([K, M],
// through LDS): each access with index tiles of its own, so that each
// takes the layout it wants.
func storeRows(b *ir.Builder, c *Call, q, v, pm, pk, m, k *ir.Value) {
	rows, cols := tileRows(b, c, pm), tileCols(b, c, pk)
	offs := rows.Col().Mul(k).Add(cols.Row()).Named("offs")
	b.Store(b.PtrAdd(q, offs), v, rows.Lt(m).Col().And(cols.Lt(k).Row()))
}

func storeTransposed(b *ir.Builder, c *Call, qt, vt, pm, pk, m, k *ir.Value) {
	rows, cols := tileRows(b, c, pm), tileCols(b, c, pk)
	offsT := cols.Col().Mul(m).Add(rows.Row()).Named("offs_t")
	maskT := cols.Lt(k).Col().And(rows.Lt(m).Row()).Named("mask_t")
	b.Store(b.PtrAdd(qt, offsT), vt.Trans(), maskT) // [BLOCK_K, BLOCK_M], coalesced along M
}

// tileRows and tileCols are the rows and columns of program (pm, pk)'s tile.
func tileRows(b *ir.Builder, c *Call, pm *ir.Value) *ir.Value {
	return pm.Mul(c.Knob(knob.BlockM)).Add(b.Arange(c.Knob(knob.BlockM))).Named("rows")
}

func tileCols(b *ir.Builder, c *Call, pk *ir.Value) *ir.Value {
	return pk.Mul(c.Knob(knob.BlockK)).Add(b.Arange(c.Knob(knob.BlockK))).Named("cols")
}

func tensorCastTransposeKernel(b *ir.Builder, c *Call) {
	x := b.Param("x", c.DType("x"))
	q := b.Param("q", ir.FP8(c.Format))
	qt := b.Param("qt", ir.FP8(c.Format))
	inv := b.Param("inv_scale", ir.F32)
	amaxp := b.Param("amax", ir.F32)
	m, k := b.Size("M"), b.Size("K")
	pk, pm := b.ProgramID(0), dualRowBlock(b)
	scale := scaleOf(b, b.Load(amaxp, nil, nil).Named("amax"), c)
	v := colTile(b, c, x, m, k, pm, pk).Mul(scale).Cast(ir.FP8(c.Format)).Named("q")
	storeRows(b, c, q, v, pm, pk, m, k)
	storeTransposed(b, c, qt, v, pm, pk, m, k)
	b.Store(inv, b.Div(1, scale), pk.Eq(0).And(pm.Eq(0)))
}

// rowcolAmaxKernel: program (ps, pk) takes every SPLIT-th tile of column
// block pk down M, from its ps-th: each tile's row maxima go out by one
// relaxed atomic a row (the other column blocks hold the rest of the
// row), its column maxima into a register accumulator that one tree and
// one atomic a column end, as colwise's amax.
func rowcolAmaxKernel(b *ir.Builder, c *Call) {
	x := b.Param("x", c.DType("x"))
	amaxRow := b.Param("amax_row", ir.F32)
	amaxCol := b.Param("amax_col", ir.F32)
	m, k := b.Size("M"), b.Size("K")
	bm, bk := c.Knob(knob.BlockM), c.Knob(knob.BlockK)
	cols := b.ProgramID(1).Mul(bk).Add(b.Arange(bk)).Named("cols")
	start := b.ProgramID(0).Mul(bm).Named("m_start")
	acc := b.For(start, m, bm*c.Knob(knob.Split), []*ir.Value{b.Full(ir.F32, 0, bm, bk).Named("amax_cols")}, func(r0 *ir.Value, acc []*ir.Value) []*ir.Value {
		r0 = r0.MultipleOf(bm)
		rows := r0.Add(b.Arange(bm)).Named("rows")
		offs := rows.Col().Mul(k).Add(cols.Row()).Named("offs")
		mask := rows.Lt(m).Col().And(cols.Lt(k).Row()).Named("mask")
		a := loadF32(b, x, offs, mask).Abs().Named("ax")
		// Relaxed is enough: the cast kernel reads the amaxes after this launch ends.
		b.AtomicMax(b.PtrAdd(amaxRow, rows), a.Reduce(1, ir.RMax).Named("amax_rows"), rows.Lt(m), ir.Relaxed, ir.ScopeAgent)
		return []*ir.Value{acc[0].Max(a)}
	})
	part := acc[0].Reduce(0, ir.RMax).Named("amax_part")
	b.AtomicMax(b.PtrAdd(amaxCol, cols), part, cols.Lt(k), ir.Relaxed, ir.ScopeAgent)
}

func rowcolCastKernel(b *ir.Builder, c *Call) {
	x := b.Param("x", c.DType("x"))
	q := b.Param("q", ir.FP8(c.Format))
	invRow := b.Param("inv_scale_row", ir.F32)
	qt := b.Param("qt", ir.FP8(c.Format))
	invCol := b.Param("inv_scale_col", ir.F32)
	amaxRow := b.Param("amax_row", ir.F32)
	amaxCol := b.Param("amax_col", ir.F32)
	m, k := b.Size("M"), b.Size("K")
	pk, pm := b.ProgramID(0), dualRowBlock(b)
	rows, cols := tileRows(b, c, pm), tileCols(b, c, pk)
	rowOK, colOK := rows.Lt(m).Named("row_ok"), cols.Lt(k).Named("col_ok")
	sr := scaleOf(b, b.Load(b.PtrAdd(amaxRow, rows), rowOK, nil).Named("amax_r"), c).Named("scale_r")
	sc := scaleOf(b, b.Load(b.PtrAdd(amaxCol, cols), colOK, nil).Named("amax_c"), c).Named("scale_c")
	xf := colTile(b, c, x, m, k, pm, pk)
	fp8 := ir.FP8(c.Format)
	b.Store(b.PtrAdd(invRow, rows), b.Div(1, sr), rowOK.And(pk.Eq(0)))
	b.Store(b.PtrAdd(invCol, cols), b.Div(1, sc), colOK.And(pm.Eq(0)))
	// q from the row scales, qt from the column scales: the same tile of x.
	storeRows(b, c, q, xf.Mul(sr.Col()).Cast(fp8).Named("q"), pm, pk, m, k)
	storeTransposed(b, c, qt, xf.Mul(sc.Row()).Cast(fp8).Named("qt"), pm, pk, m, k)
}

// groupedRowcolAmaxKernel is grouped_colwise_cast's two-pass amax with
// each tile's row maxima (of the rows in the program's group) sent out
// by one relaxed atomic a row.
func groupedRowcolAmaxKernel(b *ir.Builder, c *Call) {
	x := b.Param("x", c.DType("x"))
	offsets := b.Param("offsets", ir.I32)
	amaxRow := b.Param("amax_row", ir.F32)
	amaxCol := b.Param("amax_col", ir.F32)
	status := b.Param("status", ir.I32)
	t, k, ne := b.Size("T"), b.Size("K"), b.Size("E")
	g := groupedPID(b, c, axisGroup)
	lo, hi, bad := groupRows(b, c, offsets, t, ne)
	// One program of each group reports it: the largest E - g is the
	// first bad group.
	b.AtomicMax(status, ne.Sub(g).Cast(ir.I32), bad.And(groupedPID(b, c, axisCol).Eq(0).And(groupedPID(b, c, axisSplit).Eq(0))), ir.Relaxed, ir.ScopeAgent)
	acc := groupTilesOfX(b, c, x, lo, hi, k, false, []*ir.Value{b.Full(ir.F32, 0, c.Knob(knob.BlockT), c.Knob(knob.BlockK)).Named("amax_cols")},
		func(t0, xf *ir.Value, acc []*ir.Value) []*ir.Value {
			a := xf.Abs().Named("ax")
			rows, ok := groupedRows(b, c, t0, lo, hi)
			// Relaxed is enough: the cast kernel reads the amaxes after this launch ends.
			b.AtomicMax(b.PtrAdd(amaxRow, rows), a.Reduce(1, ir.RMax).Named("amax_rows"), ok, ir.Relaxed, ir.ScopeAgent)
			return []*ir.Value{acc[0].Max(a)}
		})
	part := acc[0].Reduce(0, ir.RMax).Named("amax_part")
	cols := groupedCols(b, c)
	b.AtomicMax(b.PtrAdd(amaxCol, g.Mul(k).Add(cols)), part, cols.Lt(k), ir.Relaxed, ir.ScopeAgent)
}

// groupedRowcolCastKernel is grouped_colwise_cast's two-pass cast that
// also writes each tile as it is, by its rows' scales, into q.
func groupedRowcolCastKernel(b *ir.Builder, c *Call) {
	x := b.Param("x", c.DType("x"))
	offsets := b.Param("offsets", ir.I32)
	q := b.Param("q", ir.FP8(c.Format))
	invRow := b.Param("inv_scale_row", ir.F32)
	qt := b.Param("qt", ir.FP8(c.Format))
	invCol := b.Param("inv_scale_col", ir.F32)
	amaxRow := b.Param("amax_row", ir.F32)
	amaxCol := b.Param("amax_col", ir.F32)
	t, k, ne := b.Size("T"), b.Size("K"), b.Size("E")
	g := groupedPID(b, c, axisGroup)
	lo, hi, _ := groupRows(b, c, offsets, t, ne)
	cols := groupedCols(b, c)
	scols := g.Mul(k).Add(cols).Named("scale_offs")
	sc := scaleOf(b, b.Load(b.PtrAdd(amaxCol, scols), cols.Lt(k), nil).Named("amax_c"), c).Named("scale_c")
	firstCol := groupedPID(b, c, axisCol).Eq(0)
	groupTilesOfX(b, c, x, lo, hi, k, false, nil, func(t0, xf *ir.Value, _ []*ir.Value) []*ir.Value {
		rows, ok := groupedRows(b, c, t0, lo, hi)
		sr := scaleOf(b, b.Load(b.PtrAdd(amaxRow, rows), ok, nil).Named("amax_r"), c).Named("scale_r")
		b.Store(b.PtrAdd(invRow, rows), b.Div(1, sr), ok.And(firstCol))
		rowsQ, okQ := groupedRows(b, c, t0, lo, hi)
		colsQ := groupedCols(b, c)
		offs := rowsQ.Col().Mul(k).Add(colsQ.Row()).Named("offs")
		b.Store(b.PtrAdd(q, offs), xf.Mul(sr.Col()).Cast(ir.FP8(c.Format)).Named("q"), okQ.Col().And(colsQ.Lt(k).Row()))
		groupedStoreTile(b, c, qt, lo, hi, t, k, t0, xf, sc)
		return nil
	})
	b.Store(b.PtrAdd(invCol, scols), b.Div(1, sc), cols.Lt(k).And(groupedPID(b, c, axisSplit).Eq(0)))
}
