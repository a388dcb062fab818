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
	if c.Opt("mx_round") == "rceil" {
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

// mxRowsKernel: each program's ROWS blocks of x taken as rows of 32
// (x row-major, K a multiple of 32: block j is x[32j : 32j+32]), so that
// the block's amax is a reduction along the tile's rows.
func mxRowsKernel(b *ir.Builder, c *Call) {
	x := b.Param("x", c.DType("x"))
	q := b.Param("q", ir.FP8(c.Format))
	sc := b.Param("scale", ir.E8M0)
	nb := b.Size("M").Mul(b.Size("K")).Div(mxBlock).Named("blocks")
	rows := c.Knob("ROWS")
	blocks := b.ProgramID(0).Mul(rows).Add(b.Arange(rows)).Named("block")
	ok := blocks.Lt(nb).Named("block_ok")
	offs := blocks.Col().Mul(mxBlock).Add(b.Arange(mxBlock).Row()).Named("offs")
	xf := loadF32(b, x, offs, ok.Col())
	scale, recip := mxScales(b, c, xf, 1)
	b.Store(b.PtrAdd(q, offs), xf.Mul(recip.Col()).Cast(ir.FP8(c.Format)).Named("q"), ok.Col())
	b.Store(b.PtrAdd(sc, blocks), scale.Cast(ir.E8M0), ok)
}

// mxColsKernel: program (pk, pr) takes columns pk·BLOCK_K … of RB
// blocks of 32 rows, one a trip: a [32, BLOCK_K] tile whose column
// maxima are its blocks', written transposed into qt through LDS. With
// both, the trip also reads the same rows as [BLOCK_K, 32] blocks along
// K (from the cache: the tile was just read) and writes q and its
// scales.
func mxColsKernel(b *ir.Builder, c *Call) {
	both := c.Opt("dim") == "both"
	x := b.Param("x", c.DType("x"))
	var q, sc *ir.Value
	if both {
		q = b.Param("q", ir.FP8(c.Format))
		sc = b.Param("scale", ir.E8M0)
	}
	qt := b.Param("qt", ir.FP8(c.Format))
	st := b.Param("scale_t", ir.E8M0)
	m, k := b.Size("M"), b.Size("K")
	bk, rb := c.Knob("BLOCK_K"), c.Knob("RB")
	mb := m.Div(mxBlock).Named("row_blocks")
	pk := b.ProgramID(0)
	cols := pk.Mul(bk).Add(b.Arange(bk)).Named("cols")
	colOK := cols.Lt(k).Named("col_ok")
	first := b.ProgramID(1).Mul(rb).Named("first")
	fp8 := ir.FP8(c.Format)
	b.For(first, first.Add(rb).Min(mb), 1, nil, func(i *ir.Value, _ []*ir.Value) []*ir.Value {
		rows := i.Mul(mxBlock).Add(b.Arange(mxBlock)).Named("rows")
		xf := loadF32(b, x, rows.Col().Mul(k).Add(cols.Row()), colOK.Row())
		scale, recip := mxScales(b, c, xf, 0)
		offsT := cols.Col().Mul(m).Add(rows.Row()).Named("offs_t")
		b.Store(b.PtrAdd(qt, offsT), xf.Mul(recip.Row()).Cast(fp8).Named("qt").Trans(), colOK.Col())
		b.Store(b.PtrAdd(st, cols.Mul(mb).Add(i)), scale.Cast(ir.E8M0), colOK)
		if both {
			// Block r of the trip: row 32i + r / per, blocks pk·per + r % per along K.
			per := bk / mxBlock
			r := b.Arange(bk)
			xrow := i.Mul(mxBlock).Add(r.Div(per)).Named("xrow")
			bcol := pk.Mul(per).Add(r.Rem(per)).Named("bcol")
			kb := k.Div(mxBlock)
			ok := bcol.Lt(kb).Named("block_ok")
			offs := xrow.Col().Mul(k).Add(bcol.Mul(mxBlock).Col()).Add(b.Arange(mxBlock).Row()).Named("offs")
			xr := loadF32(b, x, offs, ok.Col())
			s0, r0 := mxScales(b, c, xr, 1)
			b.Store(b.PtrAdd(q, offs), xr.Mul(r0.Col()).Cast(fp8).Named("q"), ok.Col())
			b.Store(b.PtrAdd(sc, xrow.Mul(kb).Add(bcol)), s0.Cast(ir.E8M0), ok)
		}
		return nil
	})
}
