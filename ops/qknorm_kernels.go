package ops

import (
	"math"

	"github.com/fp8gen/fp8gen/ir"
)

// The QK-norm kernels, in the DSL. A program takes ROWS head rows of the
// packed qkv viewed as [tokens · (HQ + 2·HKV), D]: consecutive rows are
// consecutive heads of one token, so every load is contiguous. Each row
// is a query head, a key head or a value head by its place in its KV
// group, and goes to q, k or v.

// qkRows is what every QK-norm kernel knows of its tile of head rows.
type qkRows struct {
	r, ok            *ir.Value                     // head-row indices [ROWS] and r < rows
	tok, g, j        *ir.Value                     // token row, KV group, place in the group
	isQ, isK, isV    *ir.Value                     // [ROWS]
	pos              *ir.Value                     // the token's position s, for the tables
	r0, heads        *ir.Value                     // the tile's first head row; head rows a token
	s                *ir.Value                     // the size S
	posOf            func(tok *ir.Value) *ir.Value // a token row's position s (bshd: tok % S; sbhd: tok / B)
	d                *ir.Value                     // [D]
	offs             *ir.Value                     // [ROWS, D] into qkv
	qOffs, kvOffs    *ir.Value                     // [ROWS, D] into q and into k, v
	hd, hq, hkv, grp *ir.Value
}

// qkSizes are the sizes, declared once per kernel. The head counts are
// the schedule's constants (KV_HEADS = HKV, GROUP = HQ / HKV): a model's
// heads do not change, and the divisions by them that place each row in
// its group then cost a multiply and a shift, not a division each.
type qkSizes struct{ bs, s, hq, hkv *ir.Value }

func qkSizesOf(b *ir.Builder, c *Call) qkSizes {
	kv := c.Knob(knob.KVHeads)
	return qkSizes{b.Size("B"), b.Size("S"), b.Int(c.Knob(knob.Group) * kv), b.Int(kv)}
}

// rows is the number of head rows.
func (z qkSizes) rows(b *ir.Builder) *ir.Value {
	return z.bs.Mul(z.s).Mul(z.hq.Add(z.hkv.Mul(2)))
}

// qkTile is the tile of ROWS head rows from r0, which must be a multiple
// of ROWS: the theta angles count on it (tables).
func qkTile(b *ir.Builder, c *Call, z qkSizes, r0 *ir.Value) qkRows {
	bs, s, hq, hkv := z.bs, z.s, z.hq, z.hkv
	nr, hd := c.Knob(knob.Rows), c.Knob(knob.HeadD)
	var t qkRows
	t.hq, t.hkv, t.s = hq, hkv, s
	nh := hq.Add(hkv.Mul(2)).Named("heads")
	t.r0, t.heads = r0, nh
	t.grp = hq.Div(hkv).Named("group")
	t.r = r0.Add(b.Arange(nr)).Named("hrow")
	t.ok = t.r.Lt(bs.Mul(s).Mul(nh)).Named("row_ok")
	t.tok = t.r.Div(nh).Named("tok")
	u := t.r.Rem(nh)
	per := t.grp.Add(2)
	t.g, t.j = u.Div(per).Named("kv_group"), u.Rem(per).Named("slot")
	t.isQ = t.ok.And(t.j.Lt(t.grp)).Named("is_q")
	t.isK = t.ok.And(t.j.Eq(t.grp)).Named("is_k")
	t.isV = t.ok.And(t.j.Eq(t.grp.Add(1))).Named("is_v")
	t.posOf = func(tok *ir.Value) *ir.Value {
		if c.Opt(opt.Order) == "bshd" {
			return tok.Rem(s) // row = b·S + s
		}
		return tok.Div(bs) // row = s·B + b
	}
	t.pos = t.posOf(t.tok).Named("pos")
	t.d = b.Arange(hd).Named("d")
	t.offs = t.r.Col().Mul(hd).Add(t.d.Row()).Named("offs")
	qh := t.tok.Mul(hq).Add(t.g.Mul(t.grp).Add(t.j))
	t.qOffs = qh.Col().Mul(hd).Add(t.d.Row()).Named("q_offs")
	kh := t.tok.Mul(hkv).Add(t.g)
	t.kvOffs = kh.Col().Mul(hd).Add(t.d.Row()).Named("kv_offs")
	return t
}

// rms is rsqrt(mean(x²) + eps) of each row of x [ROWS, D], f32.
func rms(b *ir.Builder, c *Call, x *ir.Value) *ir.Value {
	ss := x.Mul(x).Reduce(1, ir.RSum).Named("sum_sq")
	return ss.Div(float64(c.Knob(knob.HeadD))).Add(qkEps(c)).Rsqrt().Named("rrms")
}

// qkParams are the parameters every QK-norm kernel reads: the weights,
// and the cos and sin tables, or (angles=theta) the inverse frequencies,
// or (the backward under theta) the tables its first kernel worked.
type qkParams struct{ qw, kw, cos, sin, invFreq, tab *ir.Value }

// ownTables says the kernel reads, under theta, the tables its op's first
// kernel worked (the backward) instead of working the angles itself.
func qkParamsOf(b *ir.Builder, c *Call, ownTables bool) qkParams {
	p := qkParams{qw: b.Param("q_weight", c.DType("q_weight")), kw: b.Param("k_weight", c.DType("k_weight"))}
	if c.Opt(opt.Angles) == "theta" && ownTables {
		p.tab = b.Param("rope_tables", ir.F32) // tables finds sin after cos
	} else if c.Opt(opt.Angles) == "theta" {
		p.invFreq = b.Param("inv_freq", ir.F32)
	} else {
		p.cos, p.sin = b.Param("cos", ir.F32), b.Param("sin", ir.F32)
	}
	return p
}

// weights is the row's norm weight: q_weight for query rows, k_weight
// for the rest, f32 [ROWS, D].
func weights(b *ir.Builder, p qkParams, t qkRows) *ir.Value {
	qw := b.Load(b.PtrAdd(p.qw, t.d), nil, nil).Cast(ir.F32).Named("qw")
	kw := b.Load(b.PtrAdd(p.kw, t.d), nil, nil).Cast(ir.F32).Named("kw")
	return b.Where(t.isQ.Col(), qw.Row(), kw.Row()).Named("w")
}

// pairIndex is the rotation pair, the inv_freq index, of elements d:
// rotate-half pairs d with d ± D/2, the interleaved (GPT-J) 2i with 2i+1.
func pairIndex(b *ir.Builder, c *Call, d *ir.Value) *ir.Value {
	if c.Opt(opt.Rope) == "gptj" {
		return d.Div(2)
	}
	return d.Rem(c.Knob(knob.HeadD) / 2)
}

// rowAngles is cos and sin [rows, D] of the angles pos · inv_freq[pair]
// at positions pos [rows] and elements d [D], every element its own.
func rowAngles(b *ir.Builder, c *Call, invFreq, pos, d *ir.Value) (cs, sn *ir.Value) {
	f := b.Load(b.PtrAdd(invFreq, pairIndex(b, c, d)), nil, nil).Named("inv_freq")
	pf := pos.Cast(ir.I32).Cast(ir.F32).Named("pos_f") // S < 2^24: exact
	sn, cs = sincos(b, pf.Col().Mul(f.Row()).Named("angle"))
	return cs, sn
}

// qkRopeTablesKernel works cos and sin for every position s < S and
// element d < D into rope_tables (cos [S, D], then sin), from the angle
// s · inv_freq[pair], with the forward's sincos, a tile of ROWS positions
// laid out as the QK tiles are: the backward under angles=theta then
// reads them as the tables. Worked in each of its tiles instead, as the
// forward does, the backward ran 14-48% longer than with the tables on
// the H200 (2026-12-03).
func qkRopeTablesKernel(b *ir.Builder, c *Call) {
	invFreq, tab := b.Param("inv_freq", ir.F32), b.Param("rope_tables", ir.F32)
	nr, hd := c.Knob(knob.Rows), c.Knob(knob.HeadD)
	s := b.Size("S")
	pos := b.ProgramID(0).Mul(nr).Add(b.Arange(nr)).Named("pos")
	d := b.Arange(hd).Named("d")
	cs, sn := rowAngles(b, c, invFreq, pos, d)
	offs := pos.Col().Mul(hd).Add(d.Row()).Named("offs")
	m := pos.Lt(s).Col()
	b.Store(b.PtrAdd(tab, offs), cs, m)
	b.Store(b.PtrAdd(tab, offs.Add(s.Mul(hd))), sn, m)
}

// tables is cos and sin at each row's position: loaded from the tables
// (the caller's, or those the backward's first kernel worked under theta),
// or (the forward under theta) computed from the angle pos · inv_freq[pair].
func tables(b *ir.Builder, c *Call, p qkParams, t qkRows) (cs, sn *ir.Value) {
	hd := c.Knob(knob.HeadD)
	if p.invFreq != nil {
		if nh, nr := c.Knob(knob.KVHeads)*(c.Knob(knob.Group)+2), c.Knob(knob.Rows); nr <= nh {
			// A tile of ROWS ≤ a token's head rows holds heads of one
			// token, or of two where ROWS does not divide them. Each
			// token's D angles are worked one element a lane, once, and
			// broadcast to the rows through LDS, not worked again in each
			// row (the polynomials cost the H200's forward 3.7× the
			// tables' time when every row worked them, 2026-12-03).
			f := b.LoadSpread(b.PtrAdd(p.invFreq, pairIndex(b, c, b.Arange(hd))), nil, nil).Named("inv_freq")
			first := t.r0.Div(t.heads).Named("tok0")
			angles := func(tok *ir.Value) (cs, sn *ir.Value) {
				pos := t.posOf(tok).Cast(ir.I32).Cast(ir.F32).Named("pos_f")
				sn, cs = sincos(b, pos.Mul(f).Named("angle"))
				return cs.Row().BroadcastTo(nr, hd), sn.Row().BroadcastTo(nr, hd)
			}
			cs, sn = angles(first)
			if nh%nr != 0 {
				// The next token's too (past the last token at the end:
				// angles no row takes).
				cs1, sn1 := angles(first.Add(1))
				next := t.tok.Ne(first).Col()
				cs, sn = b.Where(next, cs1, cs), b.Where(next, sn1, sn)
			}
			return cs, sn
		}
		return rowAngles(b, c, p.invFreq, t.pos, t.d)
	}
	if p.tab != nil {
		p.cos, p.sin = p.tab, b.PtrAdd(p.tab, t.s.Mul(hd))
	}
	offs := t.pos.Col().Mul(hd).Add(t.d.Row()).Named("pos_offs")
	// Every row's, v rows' too: masking those off cost nvcc 6 registers
	// and the H200 40% at HKV = 8 (2026-12-02).
	m := t.ok.Col()
	cs = b.Load(b.PtrAdd(p.cos, offs), m, nil).Named("cos")
	sn = b.Load(b.PtrAdd(p.sin, offs), m, nil).Named("sin")
	return cs, sn
}

// The parts of π/4 for the reduction: the first three short enough (7
// significant bits) that j·part is exact for octants j < 2^17 (angles
// below 10^5), the fourth what is left (2.7·10^-15 short of π/4).
const (
	quarterPi1 = 0.78125
	quarterPi2 = 0x1.0cp-8
	quarterPi3 = 0x1.ecp-15
	quarterPi4 = 0x1.5110b4p-23
)

// sincos is sin x and cos x for 0 ≤ x < 10^5 in plain f32 operations, so
// that every back end computes the same bits (no library sinf, whose bits
// differ between vendors): the even octant j nearest above ⌊x·4/π⌋, the
// reduced r = x − j·π/4 in three exact-ish steps (Cody and Waite), Taylor
// polynomials on |r| ≤ π/4 (truncation below 2·10^-9), and the quadrant
// j/2 mod 4 picking and signing them.
func sincos(b *ir.Builder, x *ir.Value) (sin, cos *ir.Value) {
	j := x.Mul(4 / math.Pi).Cast(ir.I32)
	j = j.Add(j.And(1)).Named("octant")
	jf := j.Cast(ir.F32)
	r := x.Sub(jf.Mul(quarterPi1)).Sub(jf.Mul(quarterPi2)).Sub(jf.Mul(quarterPi3)).Sub(jf.Mul(quarterPi4)).Named("r")
	r2 := r.Mul(r)
	// sin r = r + r·r²·(−1/3! + r²·(1/5! + r²·(−1/7! + r²/9!)))
	ps := b.Add(-1.0/6, r2.Mul(b.Add(1.0/120, r2.Mul(b.Add(-1.0/5040, r2.Mul(1.0/362880))))))
	sr := r.Add(r.Mul(r2).Mul(ps)).Named("sin_r")
	// cos r = 1 − r²/2 + r⁴·(1/4! + r²·(−1/6! + r²·(1/8! − r²/10!)))
	pc := b.Add(1.0/24, r2.Mul(b.Add(-1.0/720, r2.Mul(b.Add(1.0/40320, r2.Mul(-1.0/3628800))))))
	cr := b.Sub(1.0, r2.Mul(0.5)).Add(r2.Mul(r2).Mul(pc)).Named("cos_r")
	q := j.Shr(1).And(3).Named("quadrant")
	pick := func(v0, v1, v2, v3 *ir.Value) *ir.Value {
		return b.Where(q.Eq(0), v0, b.Where(q.Eq(1), v1, b.Where(q.Eq(2), v2, v3)))
	}
	sin = pick(sr, cr, sr.Neg(), cr.Neg()).Named("sin")
	cos = pick(cr, sr.Neg(), cr.Neg(), sr).Named("cos")
	return sin, cos
}

// rotated is each element's RoPE partner, signed: rotate-half pairs d with
// d ± D/2 (−x[d+D/2] in the first half, x[d−D/2] in the second); the
// interleaved (GPT-J) pairing, 2i with 2i+1 (−x[2i+1], then x[2i]).
// transposed gives the adjoint, for the backward.
func rotated(b *ir.Builder, c *Call, x, d *ir.Value, transposed bool) *ir.Value {
	hd := c.Knob(knob.HeadD)
	if c.Opt(opt.Rope) == "neox" {
		p := b.Rotate(x, 1, hd/2) // x[(d + D/2) mod D]
		first := d.Lt(hd / 2).Row()
		if transposed {
			return b.Where(first, p, p.Neg())
		}
		return b.Where(first, p.Neg(), p)
	}
	next, prev := b.Rotate(x, 1, 1), b.Rotate(x, 1, -1) // x[d+1], x[d−1]
	even := d.Rem(2).Eq(0).Row()
	if transposed {
		return b.Where(even, next, prev.Neg())
	}
	return b.Where(even, next.Neg(), prev)
}

func qkNormFwdKernel(b *ir.Builder, c *Call) {
	qkv := b.Param("qkv", ir.BF16)
	p := qkParamsOf(b, c, false)
	q, k, v := b.Param("q", ir.BF16), b.Param("k", ir.BF16), b.Param("v", ir.BF16)
	t := qkTile(b, c, qkSizesOf(b, c), b.ProgramID(0).Mul(c.Knob(knob.Rows)))
	raw := b.Load(b.PtrAdd(qkv, t.offs), t.ok.Col(), nil).Named("raw")
	var w, cs, sn *ir.Value
	if c.Knob(knob.EarlyLoads) == 1 {
		w = weights(b, p, t)
		cs, sn = tables(b, c, p, t)
	}
	x := raw.Cast(ir.F32).Named("x")
	rr := rms(b, c, x)
	if w == nil {
		w = weights(b, p, t)
		cs, sn = tables(b, c, p, t)
	}
	n := x.Mul(rr.Col()).Mul(w).Named("normed")
	if c.Flag(opt.RoundNorm) {
		n = n.Cast(ir.BF16).Cast(ir.F32).Named("normed_bf16")
	}
	y := n.Mul(cs).Add(rotated(b, c, n, t.d, false).Mul(sn)).Cast(ir.BF16).Named("y")
	b.Store(b.PtrAdd(q, t.qOffs), y, t.isQ.Col())
	b.Store(b.PtrAdd(k, t.kvOffs), y, t.isK.Col())
	b.Store(b.PtrAdd(v, t.kvOffs), raw, t.isV.Col()) // v: a copy
}

// qkNormBwdKernel runs over its tiles (pid, pid + P, …, P programs) and
// leaves each program's weight-gradient sums in partials[pid, {q, k}, :],
// for qkNormDwKernel to fold in program order.
func qkNormBwdKernel(b *ir.Builder, c *Call) {
	qkv := b.Param("qkv", ir.BF16)
	p := qkParamsOf(b, c, true)
	dq, dk, dv := b.Param("dq", ir.BF16), b.Param("dk", ir.BF16), b.Param("dv", ir.BF16)
	dqkv := b.Param("d_qkv", c.DType("d_qkv"))
	partials := b.Param("partials", ir.F32)
	z := qkSizesOf(b, c)
	nr, hd := c.Knob(knob.Rows), c.Knob(knob.HeadD)
	tiles := z.rows(b).CDiv(nr).Named("tiles")
	pid, np := b.ProgramID(0), b.NumPrograms(0)
	// The weight-gradient terms add up in [ROWS, D] accumulators, each
	// thread its own elements in loop order: no exchange between threads
	// (and no barrier) inside the loop, one tree over the rows after it.
	zero := func() *ir.Value { return b.Full(ir.F32, 0, nr, hd) }
	acc := b.For(pid, tiles, np, []*ir.Value{zero().Named("dqw_rows"), zero().Named("dkw_rows")}, func(it *ir.Value, acc []*ir.Value) []*ir.Value {
		t := qkTile(b, c, z, it.Mul(nr))
		// v rows' gradient is dv: their qkv is not read (x = 0 there).
		x := b.Load(b.PtrAdd(qkv, t.offs), t.isQ.Or(t.isK).Col(), nil).Cast(ir.F32).Named("x")
		// The row's output gradient: dq, dk or dv, as the row is.
		dy := b.Load(b.PtrAdd(dq, t.qOffs), t.isQ.Col(), nil).Cast(ir.F32).Add(
			b.Load(b.PtrAdd(dk, t.kvOffs), t.isK.Col(), nil).Cast(ir.F32)).Named("dy")
		dvv := b.Load(b.PtrAdd(dv, t.kvOffs), t.isV.Col(), nil).Cast(ir.F32)
		var w, cs, sn *ir.Value
		if c.Knob(knob.EarlyLoads) == 1 {
			w = weights(b, p, t)
			cs, sn = tables(b, c, p, t)
		}
		rr := rms(b, c, x)
		xh := x.Mul(rr.Col()).Named("x_hat")
		if w == nil {
			w = weights(b, p, t)
			cs, sn = tables(b, c, p, t)
		}
		dn := dy.Mul(cs).Add(rotated(b, c, dy.Mul(sn), t.d, true)).Named("d_normed")
		g := dn.Mul(xh).Named("dw_terms")
		zeros := b.Full(ir.F32, 0, nr, hd)
		dqw := acc[0].Add(b.Where(t.isQ.Col(), g, zeros))
		dkw := acc[1].Add(b.Where(t.isK.Col(), g, zeros))
		dxh := dn.Mul(w).Named("d_x_hat")
		mean := dxh.Mul(xh).Reduce(1, ir.RSum).Div(float64(hd)).Named("mean_dot")
		dx := dxh.Sub(xh.Mul(mean.Col())).Mul(rr.Col()).Named("dx")
		out := b.Where(t.isV.Col(), dvv, dx)
		b.Store(b.PtrAdd(dqkv, t.offs), out.Cast(c.DType("d_qkv")), t.ok.Col())
		return []*ir.Value{dqw, dkw}
	})
	d := b.Arange(hd)
	base := pid.Mul(2 * hd)
	b.Store(b.PtrAdd(partials, base.Add(d)), acc[0].Reduce(0, ir.RSum).Named("dqw_part"), nil)
	b.Store(b.PtrAdd(partials, base.Add(hd).Add(d)), acc[1].Reduce(0, ir.RSum).Named("dkw_part"), nil)
}

// qkNormDwKernel folds the partials, a program for each of d_q_weight
// (program 0 of axis 0) and d_k_weight (1) and each qkFoldCols columns
// (axis 1): qkFoldRows rows of partials at a time into a [rows, columns]
// accumulator, each thread's loads independent of one another (not one
// serial chain), then the rows' tree. The association is fixed by the
// target's program count and the schedule, so the sums' bits do not
// depend on the order in which the backward's programs ran.
func qkNormDwKernel(b *ir.Builder, c *Call) {
	partials := b.Param("partials", ir.F32)
	dqw, dkw := b.Param("d_q_weight", ir.F32), b.Param("d_k_weight", ir.F32)
	hd, parts := c.Knob(knob.HeadD), qkParts(c)
	which := b.ProgramID(0)
	d := b.ProgramID(1).Mul(qkFoldCols).Add(b.Arange(qkFoldCols)).Named("d")
	acc := b.For(0, parts, qkFoldRows, []*ir.Value{b.Full(ir.F32, 0, qkFoldRows, qkFoldCols).Named("dw_rows")}, func(p *ir.Value, acc []*ir.Value) []*ir.Value {
		rows := p.Add(b.Arange(qkFoldRows))
		at := rows.Mul(2).Add(which).Mul(hd).Col().Add(d.Row())
		part := b.Load(b.PtrAdd(partials, at), rows.Lt(parts).Col(), nil)
		return []*ir.Value{acc[0].Add(part)}
	})
	dw := acc[0].Reduce(0, ir.RSum).Named("dw")
	b.Store(b.PtrAdd(dqw, d), dw, b.Splat(which.Eq(0), qkFoldCols))
	b.Store(b.PtrAdd(dkw, d), dw, b.Splat(which.Eq(1), qkFoldCols))
}

// The fold's tile: qkFoldRows rows of partials by qkFoldCols columns
// (64 bytes of a row, in 16-byte vectors).
const (
	qkFoldRows = 128
	qkFoldCols = 16
)
