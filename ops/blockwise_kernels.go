package ops

import "github.com/fp8gen/fp8gen/ir"

// blockRowsKernel: each program's ROWS 1×128 blocks (block n is row
// n / cdiv(K,128), columns 128·(n mod cdiv(K,128)) on) taken as the rows
// of a [ROWS, 128] tile, so that a block's amax is a reduction along the
// tile's rows; a row's last block holds the columns below K. Under
// scales=colmajor a program takes one column of blocks of ROWS rows
// instead, so that its scale store is contiguous (M' = M rounded up to 4
// rows, a padding row reads nothing and writes the scale of a zero
// block); program p holds the rows ROWS·(p / cdiv(K,128)) on, so that
// neighbouring programs read one stripe of whole rows, not columns of
// blocks spread over all of x.
func blockRowsKernel(b *ir.Builder, c *Call) {
	x := b.Param("x", c.DType("x"))
	q := b.Param("q", ir.FP8(c.Format))
	inv := b.Param("inv_scale", ir.F32)
	m, k := b.Size("M"), b.Size("K")
	kb := k.CDiv(blockEdge).Named("k_blocks")
	nr := c.Knob(knob.Rows)
	var ok, stored, row, first, at *ir.Value // first: a block's first column
	if c.Opt(opt.Scales) == "colmajor" {
		mp := roundUp(m, 4).Named("padded_rows")
		pid := b.ProgramID(0)
		kblk := pid.Rem(kb).Named("k_block")
		row = pid.Div(kb).Mul(nr).Add(b.Arange(nr)).Named("row")
		stored = row.Lt(mp).Named("block_stored")
		ok = row.Lt(m).Named("block_ok")
		first, at = kblk.Mul(blockEdge), kblk.Mul(mp).Add(row)
	} else {
		blk := b.ProgramID(0).Mul(nr).Add(b.Arange(nr)).Named("block")
		ok = blk.Lt(m.Mul(kb)).Named("block_ok")
		stored, row, first, at = ok, blk.Div(kb).Named("row"), blk.Rem(kb).Mul(blockEdge).Col(), blk
	}
	cols := b.Arange(blockEdge).Row().Add(first).Named("cols")
	mask := ok.Col().And(cols.Lt(k)).Named("mask")
	offs := row.Col().Mul(k).Add(cols).Named("offs")
	xf := loadF32(b, x, offs, mask)
	scale := scaleOf(b, xf.Abs().Reduce(1, ir.RMax).Named("amax"), c)
	b.Store(b.PtrAdd(q, offs), xf.Mul(scale.Col()).Cast(ir.FP8(c.Format)), mask)
	b.Store(b.PtrAdd(inv, at), b.Div(1, scale), stored)
}

// blockColsKernel: program (pk, pi) takes columns pk·BLOCK_K … of rows
// 128·pi …: a [128, BLOCK_K] tile whose column maxima are its 128×1
// blocks', written transposed into qt through LDS.
func blockColsKernel(b *ir.Builder, c *Call) {
	x := b.Param("x", c.DType("x"))
	qt := b.Param("qt", ir.FP8(c.Format))
	inv := b.Param("inv_scale_t", ir.F32)
	m, k := b.Size("M"), b.Size("K")
	bk := c.Knob(knob.BlockK)
	mb := m.CDiv(blockEdge).Named("m_blocks")
	cols := b.ProgramID(0).Mul(bk).Add(b.Arange(bk)).Named("cols")
	colOK := cols.Lt(k).Named("col_ok")
	pi := b.ProgramID(1)
	rows := pi.Mul(blockEdge).Add(b.Arange(blockEdge)).Named("rows")
	rowOK := rows.Lt(m).Named("row_ok")
	xf := loadF32(b, x, rows.Col().Mul(k).Add(cols.Row()), rowOK.Col().And(colOK.Row()))
	scale := scaleOf(b, xf.Abs().Reduce(0, ir.RMax).Named("amax"), c)
	offsT := cols.Col().Mul(m).Add(rows.Row()).Named("offs_t")
	b.Store(b.PtrAdd(qt, offsT), xf.Mul(scale.Row()).Cast(ir.FP8(c.Format)).Named("qt").Trans(), colOK.Col().And(rowOK.Row()))
	b.Store(b.PtrAdd(inv, cols.Mul(mb).Add(pi)), b.Div(1, scale), colOK)
}

// blockTilesKernel: program (pk, pi) scales the 128×128 tile at rows
// 128·pi …, columns 128·pk … by its one amax, the tile held in registers
// (x read once).
func blockTilesKernel(b *ir.Builder, c *Call) {
	x := b.Param("x", c.DType("x"))
	q := b.Param("q", ir.FP8(c.Format))
	inv := b.Param("inv_scale", ir.F32)
	m, k := b.Size("M"), b.Size("K")
	kb := k.CDiv(blockEdge).Named("k_blocks")
	pk, pi := b.ProgramID(0), b.ProgramID(1)
	rows := pi.Mul(blockEdge).Add(b.Arange(blockEdge)).Named("rows")
	cols := pk.Mul(blockEdge).Add(b.Arange(blockEdge)).Named("cols")
	mask := rows.Lt(m).Col().And(cols.Lt(k).Row()).Named("mask")
	offs := rows.Col().Mul(k).Add(cols.Row()).Named("offs")
	xf := loadF32(b, x, offs, mask)
	scale := scaleOf(b, xf.Abs().Reduce(1, ir.RMax).Reduce(0, ir.RMax).Named("amax"), c)
	b.Store(b.PtrAdd(q, offs), xf.Mul(scale).Cast(ir.FP8(c.Format)), mask)
	b.Store(b.PtrAdd(inv, pi.Mul(kb).Add(pk)), b.Div(1, scale), nil)
}
