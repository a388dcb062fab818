package ops

import (
	"math"

	"github.com/fp8gen/fp8gen/ir"
)

// mxBlock is the MX block: 32 elements share one E8M0 scale.
const mxBlock = 32

// mxScales reduces the blocks of xf (f32) along axis to their E8M0 scale
// bytes (i32) and the reciprocal of each scale (f32, 2^-X, NaN for a
// block whose amax is not finite). |x| is compared as integers: the bits
// of a non-negative float order as it does, and a NaN's sit above
// Inf's, so the block's amax is NaN where any element is (unlike the
// current-scaling casts, whose maxNum skips it).
func mxScales(b *ir.Builder, c *Call, xf *ir.Value, axis int) (scale, recip *ir.Value) {
	amax := xf.Bitcast(ir.I32).And(0x7FFFFFFF).Reduce(axis, ir.RMax).Named("amax_bits")
	exp := amax.ShrU(23).Named("amax_exp") // biased; 255: Inf or NaN
	var s *ir.Value
	if c.Opt(opt.MXRound) == "rceil" {
		// descale = amax · (1/fmt_max) in f32, rounded up to a power of two.
		d := amax.Bitcast(ir.F32).Mul(float64(1 / c.Format.Max)).Bitcast(ir.I32).Named("descale")
		de, man := d.ShrU(23), d.And(0x7FFFFF)
		// An f32 subnormal rounds up to 2^-126 only above 2^-127 (byte 0).
		up := b.Where(de.Eq(0), man.Gt(0x400000), man.Ne(0)).Cast(ir.I32)
		s = de.Add(up)
	} else {
		// floor(log2 amax) − emax, at least −127 (an amax of zero or
		// subnormal takes the smallest scale).
		s = exp.Sub(mxEmax(c)).Max(0)
	}
	scale = b.Where(exp.Eq(255), 255, s).Named("scale_bits")
	// A finite block's byte is at most 254 − emax (e4m3, rceil: 247), so
	// 2^(127 − byte) is a normal f32 and its bits are (254 − byte) << 23.
	recip = b.Where(scale.Eq(255), 0x7FC00000, b.I32(254).Sub(scale).Shl(23)).Bitcast(ir.F32).Named("rscale")
	return scale, recip
}

// mxEmax is the exponent of the largest power of two the element format holds.
func mxEmax(c *Call) int { return int(math.Floor(math.Log2(float64(c.Format.Max)))) }

// roundUp is n rounded up to a multiple of p.
func roundUp(n *ir.Value, p int) *ir.Value { return n.Add(p - 1).Div(p).Mul(p) }

// mxTiled is a layout of an E8M0 scale matrix S[rows, cols] that a GEMM
// reads (mx.go): the matrix padded to whole tiles of tr x tc, the tiles
// stored one after another in row-major order, tr·tc bytes each; at is
// the byte of S[r, c] in its tile (r < tr, c < tc) and of its inverse.
type mxTiled struct {
	tr, tc int
	at     func(r, c *ir.Value) *ir.Value
	of     func(in *ir.Value) (r, c *ir.Value)
}

// mxLayouts are the tiled scale layouts by the option scales.
var mxLayouts = map[string]mxTiled{
	// cuBLASLt's VEC32_UE8M0: rows r, r+32, r+64, r+96 side by side, four
	// bytes of a row together.
	"swizzled": {tr: 128, tc: 4,
		at: func(r, c *ir.Value) *ir.Value { return r.Rem(32).Mul(16).Add(r.Div(32).Mul(4)).Add(c) },
		of: func(in *ir.Value) (*ir.Value, *ir.Value) { return in.Div(4).Rem(4).Mul(32).Add(in.Div(16)), in.Rem(4) }},
	// hipBLASLt's BLK32_UE8M0_32_8_EXT on gfx950: rows r and r+16, then
	// columns c and c+4, then the 16 rows, then the 4 columns.
	"gfx950": {tr: 32, tc: 8,
		at: func(r, c *ir.Value) *ir.Value {
			return c.Rem(4).Mul(64).Add(r.Rem(16).Mul(4)).Add(c.Div(4).Mul(2)).Add(r.Div(16))
		},
		of: func(in *ir.Value) (*ir.Value, *ir.Value) {
			return in.Rem(2).Mul(16).Add(in.Div(4).Rem(16)), in.Div(2).Rem(2).Mul(4).Add(in.Div(64))
		}},
}

// index is the byte of S[r, c] in the layout of a matrix whose rows hold
// colsPadded scales (a multiple of tc).
func (l mxTiled) index(r, c, colsPadded *ir.Value) *ir.Value {
	tile := r.Div(l.tr).Mul(colsPadded.Div(l.tc)).Add(c.Div(l.tc))
	return tile.Mul(l.tr * l.tc).Add(l.at(r.Rem(l.tr), c.Rem(l.tc)))
}

// cell is the inverse of index: the (r, c) of byte slot.
func (l mxTiled) cell(slot, colsPadded *ir.Value) (r, c *ir.Value) {
	tile, in := slot.Div(l.tr*l.tc), slot.Rem(l.tr*l.tc)
	perRow := colsPadded.Div(l.tc)
	ri, ci := l.of(in)
	return tile.Div(perRow).Mul(l.tr).Add(ri), tile.Rem(perRow).Mul(l.tc).Add(ci)
}

// mxRowsKernel: each program's ROWS blocks of x taken as rows of 32
// (x row-major, K a multiple of 32: block j is x[32j : 32j+32]), so that
// the block's amax is a reduction along the tile's rows. Under a tiled
// scale layout the program's blocks are ROWS consecutive bytes of the
// laid-out scales instead, so that the scale store stays contiguous
// (swizzled: four blocks of a row of x together, x still read 128
// elements at a time); a padding byte's block is past x, reads nothing
// and takes scale 0.
func mxRowsKernel(b *ir.Builder, c *Call) {
	x := b.Param("x", c.DType("x"))
	q := b.Param("q", ir.FP8(c.Format))
	sc := b.Param("scale", ir.E8M0)
	m, k := b.Size("M"), b.Size("K")
	rows := c.Knob(knob.Rows)
	slot := b.ProgramID(0).Mul(rows).Add(b.Arange(rows)).Named("block")
	var base, ok, stored *ir.Value // x offset of the block; in x; scale written
	if l, tiled := mxLayouts[c.Opt(opt.Scales)]; tiled {
		kb := k.Div(mxBlock).Named("block_cols")
		kbp := roundUp(kb, l.tc).Named("padded_cols")
		r, col := l.cell(slot, kbp)
		r, col = r.Named("block_row"), col.Named("block_col")
		ok = r.Lt(m).And(col.Lt(kb)).Named("block_ok")
		stored = slot.Lt(roundUp(m, l.tr).Mul(kbp)).Named("slot_ok")
		base = r.Mul(k).Add(col.Mul(mxBlock)).MultipleOf(mxBlock)
	} else {
		ok = slot.Lt(m.Mul(k).Div(mxBlock).Named("blocks")).Named("block_ok")
		stored, base = ok, slot.Mul(mxBlock)
	}
	offs := base.Col().Add(b.Arange(mxBlock).Row()).Named("offs")
	xf := loadF32(b, x, offs, ok.Col())
	scale, recip := mxScales(b, c, xf, 1)
	b.Store(b.PtrAdd(q, offs), xf.Mul(recip.Col()).Cast(ir.FP8(c.Format)).Named("q"), ok.Col())
	b.Store(b.PtrAdd(sc, slot), scale.Cast(ir.E8M0), stored)
}

// mxColsKernel: program (pk, pr) takes columns pk·BLOCK_K … of RB
// blocks of 32 rows, one a trip: a [32, BLOCK_K] tile whose column
// maxima are its blocks', written transposed into qt through LDS. With
// both, the trip also reads the same rows as [BLOCK_K, 32] blocks along
// K (from the cache: the tile was just read) and writes q and its
// scales. Under a tiled scale layout the grid and the trips run over the
// padded scale matrices; blocks past x read nothing and take scale 0.
func mxColsKernel(b *ir.Builder, c *Call) {
	both := c.Opt(opt.Dim) == "both"
	x := b.Param("x", c.DType("x"))
	var q, sc *ir.Value
	if both {
		q = b.Param("q", ir.FP8(c.Format))
		sc = b.Param("scale", ir.E8M0)
	}
	qt := b.Param("qt", ir.FP8(c.Format))
	st := b.Param("scale_t", ir.E8M0)
	m, k := b.Size("M"), b.Size("K")
	bk, rb := c.Knob(knob.BlockK), c.Knob(knob.RB)
	mb := m.Div(mxBlock).Named("row_blocks")
	l, tiled := mxLayouts[c.Opt(opt.Scales)]
	trips := mb // row blocks the trips run over
	if tiled {
		trips = roundUp(mb, l.tc).Named("padded_row_blocks")
	}
	pk := b.ProgramID(0)
	cols := pk.Mul(bk).Add(b.Arange(bk)).Named("cols")
	colOK := cols.Lt(k).Named("col_ok")
	first := b.ProgramID(1).Mul(rb).Named("first")
	fp8 := ir.FP8(c.Format)
	b.For(first, first.Add(rb).Min(trips), 1, nil, func(i *ir.Value, _ []*ir.Value) []*ir.Value {
		rows := i.Mul(mxBlock).Add(b.Arange(mxBlock)).Named("rows")
		in := colOK
		if tiled {
			in = colOK.And(i.Lt(mb)).Named("in_x")
		}
		xf := loadF32(b, x, rows.Col().Mul(k).Add(cols.Row()), in.Row())
		scale, recip := mxScales(b, c, xf, 0)
		offsT := cols.Col().Mul(m).Add(rows.Row()).Named("offs_t")
		b.Store(b.PtrAdd(qt, offsT), xf.Mul(recip.Row()).Cast(fp8).Named("qt").Trans(), in.Col())
		if tiled {
			b.Store(b.PtrAdd(st, l.index(cols, i, trips)), scale.Cast(ir.E8M0), cols.Lt(roundUp(k, l.tr)).Named("col_stored"))
		} else {
			b.Store(b.PtrAdd(st, cols.Mul(mb).Add(i)), scale.Cast(ir.E8M0), colOK)
		}
		if both {
			// Block r of the trip: row 32i + r / per, blocks pk·per + r % per along K.
			per := bk / mxBlock
			r := b.Arange(bk)
			xrow := i.Mul(mxBlock).Add(r.Div(per)).Named("xrow")
			bcol := pk.Mul(per).Add(r.Rem(per)).Named("bcol")
			kb := k.Div(mxBlock)
			ok := bcol.Lt(kb).Named("block_ok")
			if tiled {
				ok = ok.And(i.Lt(mb))
			}
			offs := xrow.Col().Mul(k).Add(bcol.Mul(mxBlock).Col()).Add(b.Arange(mxBlock).Row()).Named("offs")
			xr := loadF32(b, x, offs, ok.Col())
			s0, r0 := mxScales(b, c, xr, 1)
			b.Store(b.PtrAdd(q, offs), xr.Mul(r0.Col()).Cast(fp8).Named("q"), ok.Col())
			if tiled {
				// The trips cover scale's padded rows (M is a multiple of
				// 32, so a layout of 32-row tiles has none).
				kbp := roundUp(kb, l.tc).Named("padded_cols")
				b.Store(b.PtrAdd(sc, l.index(xrow, bcol, kbp)), s0.Cast(ir.E8M0), bcol.Lt(kbp).And(xrow.Lt(roundUp(m, l.tr))))
			} else {
				b.Store(b.PtrAdd(sc, xrow.Mul(kb).Add(bcol)), s0.Cast(ir.E8M0), ok)
			}
		}
		return nil
	})
}

// groupedMXOffsetsKernel: program g writes group g's padded end column,
// the sum of the group sizes up to g each rounded up to 32, from every
// group's bounds at once (clamped as groupRowsOf clamps them, and at most
// TP, so that bad offsets keep every column inside qt), and reports g's
// bounds if they are bad.
func groupedMXOffsetsKernel(b *ir.Builder, c *Call) {
	offsets := b.Param("offsets", ir.I32)
	po := b.Param("padded_offsets", ir.I32)
	status := b.Param("status", ir.I32)
	t, ne := b.Size("T"), b.Size("E")
	g := b.ProgramID(0)
	gs, starts, ends := groupedOffsets(b, c, offsets, t, ne)
	lo := starts.Max(0).Min(t)
	sizes := ends.Max(lo).Min(t).Sub(lo).Named("sizes")
	upTo := b.Where(gs.Le(g).And(gs.Lt(ne)), roundUp(sizes, mxBlock), b.Int(0))
	end := upTo.Reduce(0, ir.RSum).Min(groupedMXTP(b, t, ne)).Named("padded_end")
	b.Store(b.PtrAdd(po, g), end.Cast(ir.I32), nil)
	if c.Opt(opt.Scales) == "swizzled" {
		// Each group's blocks rounded up to 4: its rows rounded up to 128.
		upTo := b.Where(gs.Le(g).And(gs.Lt(ne)), roundUp(sizes, 4*mxBlock).Div(mxBlock), b.Int(0))
		end := upTo.Reduce(0, ir.RSum).Min(groupedMXScaleWidth(groupedMXTP(b, t, ne), ne)).Named("scale_end")
		b.Store(b.PtrAdd(b.Param("scale_offsets", ir.I32), g), end.Cast(ir.I32), nil)
	}
	_, _, bad := groupRowsOf(b, offsets, t, ne, g)
	b.AtomicMax(status, ne.Sub(g).Cast(ir.I32), bad, ir.Relaxed, ir.ScopeAgent)
}

// groupedMXTP is qt's row length TP (32 groupedMXBlocks).
func groupedMXTP(b *ir.Builder, t, ne *ir.Value) *ir.Value {
	return roundUp(t.Add(ne.Mul(mxBlock-1)), mxBlock).Named("tp")
}

// groupedMXScaleWidth is the swizzled scale_t's row length SC at qt's
// row length tp.
func groupedMXScaleWidth(tp, ne *ir.Value) *ir.Value {
	return roundUp(tp.Div(mxBlock).Add(ne.Mul(3)), 4).Named("scale_cols")
}

// groupedMXCastKernel: program (pk, pi) takes columns pk·BLOCK_K … of x
// and RB blocks of 32 columns of qt, one a trip. A block's group is the
// number of padded ends at or before its first column (groupsMet's
// count); its rows of x follow from the group's first row and first
// column, those past the group's end (and every row of a block past the
// last group) read as zeros. The [32, BLOCK_K] tile's column maxima are
// its blocks', written transposed into qt through LDS, as mx_cast_cols.
func groupedMXCastKernel(b *ir.Builder, c *Call) {
	x := b.Param("x", c.DType("x"))
	offsets := b.Param("offsets", ir.I32)
	po := b.Param("padded_offsets", ir.I32)
	qt := b.Param("qt", ir.FP8(c.Format))
	name := "scale_t"
	if c.Opt(opt.Scales) == "swizzled" {
		name = "scale_rows" // laid out per group by groupedMXSwizzleKernel
	}
	st := b.Param(name, ir.E8M0)
	t, k, ne := b.Size("T"), b.Size("K"), b.Size("E")
	bk, rb := c.Knob(knob.BlockK), c.Knob(knob.RB)
	tp := groupedMXTP(b, t, ne)
	blocks := tp.Div(mxBlock).Named("col_blocks")
	pk := b.ProgramID(0)
	cols := pk.Mul(bk).Add(b.Arange(bk)).Named("cols")
	colOK := cols.Lt(k).Named("col_ok")
	gs := b.Arange(c.Knob(knob.BlockE)).Named("groups")
	ends := b.Where(gs.Lt(ne), b.Index(b.Load(b.PtrAdd(po, gs), gs.Lt(ne), 0)), tp).Named("padded_ends")
	first := b.ProgramID(1).Mul(rb).Named("first")
	fp8 := ir.FP8(c.Format)
	b.For(first, first.Add(rb).Min(blocks), 1, nil, func(i *ir.Value, _ []*ir.Value) []*ir.Value {
		col0 := i.Mul(mxBlock).Named("col0")
		g := b.Where(ends.Le(col0), b.Int(1), b.Int(0)).Reduce(0, ir.RSum).Named("group")
		in := g.Lt(ne).Named("in_group")
		gc := g.Min(ne.Sub(1))
		lo, hi, _ := groupRowsOf(b, offsets, t, ne, gc)
		prev := b.Where(gc.Eq(0), b.Int(0), gc.Sub(1)) // no address before padded_offsets, even masked
		// At most col0 by the count (clamped to say so to the index width).
		start := b.Index(b.Load(b.PtrAdd(po, prev), gc.Gt(0), 0)).Max(0).Min(col0).Named("group_col0")
		src := lo.Add(col0.Sub(start)).Add(b.Arange(mxBlock)).Named("src_rows")
		rowOK := src.Lt(hi).And(in).Named("row_ok")
		xf := loadF32(b, x, src.Col().Mul(k).Add(cols.Row()), rowOK.Col().And(colOK.Row()))
		scale, recip := mxScales(b, c, xf, 0)
		offsT := cols.Col().Mul(tp).Add(col0.Add(b.Arange(mxBlock)).Row()).Named("offs_t")
		b.Store(b.PtrAdd(qt, offsT), xf.Mul(recip.Row()).Cast(fp8).Named("qt").Trans(), colOK.Col())
		b.Store(b.PtrAdd(st, cols.Mul(blocks).Add(i)), scale.Cast(ir.E8M0), colOK)
		return nil
	})
}

// groupedMXSwizzleKernel: program (pj, pr) takes 4·WARPS columns of
// scale_t and 128 rows: a [128, 4·WARPS] tile whose element (r, j) is,
// where column j falls in group g's, the byte of the group's swizzled
// matrix at row r and its column j - scale_offsets[g-1] (a column's group
// is the number of scale ends at or before it, as groupedMXCastKernel
// finds a block's). That byte goes to its place in the group's K'·c_g
// bytes, which start at byte K'·scale_offsets[g-1] of scale_t: 4 columns
// and 128 rows are one 512-byte tile of the group. Its value is
// scale_rows' at (r, the group's first block + its column), or 0 past K
// or the group's blocks; past the last group, element (r, j) writes a
// zero at byte K'·j + r. Every byte of scale_t has one writer.
func groupedMXSwizzleKernel(b *ir.Builder, c *Call) {
	po := b.Param("padded_offsets", ir.I32)
	so := b.Param("scale_offsets", ir.I32)
	rows := b.Param("scale_rows", ir.E8M0)
	st := b.Param("scale_t", ir.E8M0)
	t, k, ne := b.Size("T"), b.Size("K"), b.Size("E")
	tp := groupedMXTP(b, t, ne)
	blocks := tp.Div(mxBlock).Named("col_blocks")
	sc := groupedMXScaleWidth(tp, ne)
	bj := 4 * c.Knob(knob.Warps)
	gs := b.Arange(c.Knob(knob.BlockE)).Named("groups")
	ends := b.Where(gs.Lt(ne), b.Index(b.Load(b.PtrAdd(so, gs), gs.Lt(ne), 0)), sc).Named("scale_ends")
	j := b.ProgramID(0).Mul(bj).Add(b.Arange(bj)).Named("col")
	g := b.Where(ends.Row().Le(j.Col()), b.Int(1), b.Int(0)).Reduce(1, ir.RSum).Named("group")
	in := g.Lt(ne).Named("in_group")
	gc := g.Min(ne.Sub(1))
	prev := b.Where(gc.Eq(0), b.Int(0), gc.Sub(1)) // no address before the offsets, even masked
	// The ends as the offsets kernel clamps them (to say so to the index width).
	bound := func(p, g, mask, hi *ir.Value) *ir.Value {
		return b.Index(b.Load(b.PtrAdd(p, g), mask, 0)).Max(0).Min(hi)
	}
	first := bound(so, prev, gc.Gt(0), sc).Named("group_col0")
	width := bound(so, gc, nil, sc).Sub(first).Max(1).Named("group_cols")
	// The group's first block in scale_rows and its blocks (qt's padded columns / 32).
	pstart := bound(po, prev, gc.Gt(0), tp).Div(mxBlock).Named("group_block0")
	nb := bound(po, gc, nil, tp).Div(mxBlock).Sub(pstart).Named("group_blocks")
	lj := j.Sub(first).Named("local_col")
	r := b.ProgramID(1).Mul(128).Add(b.Arange(128)).Named("row")
	slot := mxLayouts["swizzled"].index(r.Col(), lj.Row(), width.Row()).Named("slot")
	kp := roundUp(k, 128).Named("padded_rows")
	at := b.Where(in.Row(), first.Mul(kp).Row().Add(slot), j.Mul(kp).Row().Add(r.Col())).Named("at")
	src := r.Col().Lt(k).And(in.And(lj.Lt(nb)).Row()).Named("src_ok")
	v := b.Load(b.PtrAdd(rows, r.Col().Mul(blocks).Add(pstart.Add(lj).Row())), src, 0)
	b.Store(b.PtrAdd(st, at), v, j.Lt(sc).Row())
}
