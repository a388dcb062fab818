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
	kv := c.Knob("KV_HEADS")
	return qkSizes{b.Size("B"), b.Size("S"), b.Int(c.Knob("GROUP") * kv), b.Int(kv)}
}

// rows is the number of head rows.
func (z qkSizes) rows(b *ir.Builder) *ir.Value {
	return b.Mul(b.Mul(z.bs, z.s), b.Add(z.hq, b.Mul(z.hkv, 2)))
}

// qkTile is the tile of ROWS head rows from r0, which must be a multiple
// of ROWS: the theta angles count on it (tables).
func qkTile(b *ir.Builder, c *Call, z qkSizes, r0 *ir.Value) qkRows {
	bs, s, hq, hkv := z.bs, z.s, z.hq, z.hkv
	nr, hd := c.Knob("ROWS"), c.Knob("HEAD_D")
	var t qkRows
	t.hq, t.hkv, t.s = hq, hkv, s
	nh := b.Add(hq, b.Mul(hkv, 2)).Named("heads")
	t.r0, t.heads = r0, nh
	t.grp = b.Div(hq, hkv).Named("group")
	t.r = b.Add(r0, b.Arange(nr)).Named("hrow")
	t.ok = b.Lt(t.r, b.Mul(b.Mul(bs, s), nh)).Named("row_ok")
	t.tok = b.Div(t.r, nh).Named("tok")
	u := b.Rem(t.r, nh)
	per := b.Add(t.grp, 2)
	t.g, t.j = b.Div(u, per).Named("kv_group"), b.Rem(u, per).Named("slot")
	t.isQ = b.And(t.ok, b.Lt(t.j, t.grp)).Named("is_q")
	t.isK = b.And(t.ok, b.Eq(t.j, t.grp)).Named("is_k")
	t.isV = b.And(t.ok, b.Eq(t.j, b.Add(t.grp, 1))).Named("is_v")
	t.posOf = func(tok *ir.Value) *ir.Value {
		if c.Opt("order") == "bshd" {
			return b.Rem(tok, s) // row = b·S + s
		}
		return b.Div(tok, bs) // row = s·B + b
	}
	t.pos = t.posOf(t.tok).Named("pos")
	t.d = b.Arange(hd).Named("d")
	t.offs = b.Add(b.Mul(b.Col(t.r), hd), b.Row(t.d)).Named("offs")
	qh := b.Add(b.Mul(t.tok, hq), b.Add(b.Mul(t.g, t.grp), t.j))
	t.qOffs = b.Add(b.Mul(b.Col(qh), hd), b.Row(t.d)).Named("q_offs")
	kh := b.Add(b.Mul(t.tok, hkv), t.g)
	t.kvOffs = b.Add(b.Mul(b.Col(kh), hd), b.Row(t.d)).Named("kv_offs")
	return t
}

// rms is rsqrt(mean(x²) + eps) of each row of x [ROWS, D], f32.
func rms(b *ir.Builder, c *Call, x *ir.Value) *ir.Value {
	ss := b.Reduce(b.Mul(x, x), 1, ir.RSum).Named("sum_sq")
	return b.Rsqrt(b.Add(b.Div(ss, float64(c.Knob("HEAD_D"))), qkEps(c))).Named("rrms")
}

// qkParams are the parameters every QK-norm kernel reads: the weights,
// and the cos and sin tables, or (angles=theta) the inverse frequencies,
// or (the backward under theta) the tables its first kernel worked.
type qkParams struct{ qw, kw, cos, sin, invFreq, tab *ir.Value }

// ownTables says the kernel reads, under theta, the tables its op's first
// kernel worked (the backward) instead of working the angles itself.
func qkParamsOf(b *ir.Builder, c *Call, ownTables bool) qkParams {
	p := qkParams{qw: b.Param("q_weight", c.DType("q_weight")), kw: b.Param("k_weight", c.DType("k_weight"))}
	if c.Opt("angles") == "theta" && ownTables {
		p.tab = b.Param("rope_tables", ir.F32) // tables finds sin after cos
	} else if c.Opt("angles") == "theta" {
		p.invFreq = b.Param("inv_freq", ir.F32)
	} else {
		p.cos, p.sin = b.Param("cos", ir.F32), b.Param("sin", ir.F32)
	}
	return p
}

// weights is the row's norm weight: q_weight for query rows, k_weight
// for the rest, f32 [ROWS, D].
func weights(b *ir.Builder, p qkParams, t qkRows) *ir.Value {
	qw := b.Cast(b.Load(b.PtrAdd(p.qw, t.d), nil, nil), ir.F32).Named("qw")
	kw := b.Cast(b.Load(b.PtrAdd(p.kw, t.d), nil, nil), ir.F32).Named("kw")
	return b.Where(b.Col(t.isQ), b.Row(qw), b.Row(kw)).Named("w")
}

// pairIndex is the rotation pair, the inv_freq index, of elements d:
// rotate-half pairs d with d ± D/2, the interleaved (GPT-J) 2i with 2i+1.
func pairIndex(b *ir.Builder, c *Call, d *ir.Value) *ir.Value {
	if c.Opt("rope") == "gptj" {
		return b.Div(d, 2)
	}
	return b.Rem(d, c.Knob("HEAD_D")/2)
}

// rowAngles is cos and sin [rows, D] of the angles pos · inv_freq[pair]
// at positions pos [rows] and elements d [D], every element its own.
func rowAngles(b *ir.Builder, c *Call, invFreq, pos, d *ir.Value) (cs, sn *ir.Value) {
	f := b.Load(b.PtrAdd(invFreq, pairIndex(b, c, d)), nil, nil).Named("inv_freq")
	pf := b.Cast(b.Cast(pos, ir.I32), ir.F32).Named("pos_f") // S < 2^24: exact
	sn, cs = sincos(b, b.Mul(b.Col(pf), b.Row(f)).Named("angle"))
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
	nr, hd := c.Knob("ROWS"), c.Knob("HEAD_D")
	s := b.Size("S")
	pos := b.Add(b.Mul(b.ProgramID(0), nr), b.Arange(nr)).Named("pos")
	d := b.Arange(hd).Named("d")
	cs, sn := rowAngles(b, c, invFreq, pos, d)
	offs := b.Add(b.Mul(b.Col(pos), hd), b.Row(d)).Named("offs")
	m := b.Col(b.Lt(pos, s))
	b.Store(b.PtrAdd(tab, offs), cs, m)
	b.Store(b.PtrAdd(tab, b.Add(offs, b.Mul(s, hd))), sn, m)
}

// tables is cos and sin at each row's position: loaded from the tables
// (the caller's, or those the backward's first kernel worked under theta),
// or (the forward under theta) computed from the angle pos · inv_freq[pair].
func tables(b *ir.Builder, c *Call, p qkParams, t qkRows) (cs, sn *ir.Value) {
	hd := c.Knob("HEAD_D")
	if p.invFreq != nil {
		if nh, nr := c.Knob("KV_HEADS")*(c.Knob("GROUP")+2), c.Knob("ROWS"); nr <= nh {
			// A tile of ROWS ≤ a token's head rows holds heads of one
			// token, or of two where ROWS does not divide them. Each
			// token's D angles are worked one element a lane, once, and
			// broadcast to the rows through LDS, not worked again in each
			// row (the polynomials cost the H200's forward 3.7× the
			// tables' time when every row worked them, 2026-12-03).
			f := b.LoadSpread(b.PtrAdd(p.invFreq, pairIndex(b, c, b.Arange(hd))), nil, nil).Named("inv_freq")
			first := b.Div(t.r0, t.heads).Named("tok0")
			angles := func(tok *ir.Value) (cs, sn *ir.Value) {
				pos := b.Cast(b.Cast(t.posOf(tok), ir.I32), ir.F32).Named("pos_f")
				sn, cs = sincos(b, b.Mul(pos, f).Named("angle"))
				return b.BroadcastTo(b.Row(cs), nr, hd), b.BroadcastTo(b.Row(sn), nr, hd)
			}
			cs, sn = angles(first)
			if nh%nr != 0 {
				// The next token's too (past the last token at the end:
				// angles no row takes).
				cs1, sn1 := angles(b.Add(first, 1))
				next := b.Col(b.Ne(t.tok, first))
				cs, sn = b.Where(next, cs1, cs), b.Where(next, sn1, sn)
			}
			return cs, sn
		}
		return rowAngles(b, c, p.invFreq, t.pos, t.d)
	}
	if p.tab != nil {
		p.cos, p.sin = p.tab, b.PtrAdd(p.tab, b.Mul(t.s, hd))
	}
	offs := b.Add(b.Mul(b.Col(t.pos), hd), b.Row(t.d)).Named("pos_offs")
	// Every row's, v rows' too: masking those off cost nvcc 6 registers
	// and the H200 40% at HKV = 8 (2026-12-02).
	m := b.Col(t.ok)
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
	j := b.Cast(b.Mul(x, 4/math.Pi), ir.I32)
	j = b.Add(j, b.And(j, 1)).Named("octant")
	jf := b.Cast(j, ir.F32)
	r := b.Sub(b.Sub(b.Sub(b.Sub(x, b.Mul(jf, quarterPi1)), b.Mul(jf, quarterPi2)), b.Mul(jf, quarterPi3)), b.Mul(jf, quarterPi4)).Named("r")
	r2 := b.Mul(r, r)
	// sin r = r + r·r²·(−1/3! + r²·(1/5! + r²·(−1/7! + r²/9!)))
	ps := b.Add(-1.0/6, b.Mul(r2, b.Add(1.0/120, b.Mul(r2, b.Add(-1.0/5040, b.Mul(r2, 1.0/362880))))))
	sr := b.Add(r, b.Mul(b.Mul(r, r2), ps)).Named("sin_r")
	// cos r = 1 − r²/2 + r⁴·(1/4! + r²·(−1/6! + r²·(1/8! − r²/10!)))
	pc := b.Add(1.0/24, b.Mul(r2, b.Add(-1.0/720, b.Mul(r2, b.Add(1.0/40320, b.Mul(r2, -1.0/3628800))))))
	cr := b.Add(b.Sub(1.0, b.Mul(r2, 0.5)), b.Mul(b.Mul(r2, r2), pc)).Named("cos_r")
	q := b.And(b.Shr(j, 1), 3).Named("quadrant")
	pick := func(v0, v1, v2, v3 *ir.Value) *ir.Value {
		return b.Where(b.Eq(q, 0), v0, b.Where(b.Eq(q, 1), v1, b.Where(b.Eq(q, 2), v2, v3)))
	}
	sin = pick(sr, cr, b.Neg(sr), b.Neg(cr)).Named("sin")
	cos = pick(cr, b.Neg(sr), b.Neg(cr), sr).Named("cos")
	return sin, cos
}

// rotated is each element's RoPE partner, signed: rotate-half pairs d with
// d ± D/2 (−x[d+D/2] in the first half, x[d−D/2] in the second); the
// interleaved (GPT-J) pairing, 2i with 2i+1 (−x[2i+1], then x[2i]).
// transposed gives the adjoint, for the backward.
func rotated(b *ir.Builder, c *Call, x, d *ir.Value, transposed bool) *ir.Value {
	hd := c.Knob("HEAD_D")
	if c.Opt("rope") == "neox" {
		p := b.Rotate(x, 1, hd/2) // x[(d + D/2) mod D]
		first := b.Row(b.Lt(d, hd/2))
		if transposed {
			return b.Where(first, p, b.Neg(p))
		}
		return b.Where(first, b.Neg(p), p)
	}
	next, prev := b.Rotate(x, 1, 1), b.Rotate(x, 1, -1) // x[d+1], x[d−1]
	even := b.Row(b.Eq(b.Rem(d, 2), 0))
	if transposed {
		return b.Where(even, next, b.Neg(prev))
	}
	return b.Where(even, b.Neg(next), prev)
}

func qkNormFwdKernel(b *ir.Builder, c *Call) {
	qkv := b.Param("qkv", ir.BF16)
	p := qkParamsOf(b, c, false)
	q, k, v := b.Param("q", ir.BF16), b.Param("k", ir.BF16), b.Param("v", ir.BF16)
	t := qkTile(b, c, qkSizesOf(b, c), b.Mul(b.ProgramID(0), c.Knob("ROWS")))
	raw := b.Load(b.PtrAdd(qkv, t.offs), b.Col(t.ok), nil).Named("raw")
	var w, cs, sn *ir.Value
	if c.Knob("EARLY_LOADS") == 1 {
		w = weights(b, p, t)
		cs, sn = tables(b, c, p, t)
	}
	x := b.Cast(raw, ir.F32).Named("x")
	rr := rms(b, c, x)
	if w == nil {
		w = weights(b, p, t)
		cs, sn = tables(b, c, p, t)
	}
	n := b.Mul(b.Mul(x, b.Col(rr)), w).Named("normed")
	if c.Flag("round_norm") {
		n = b.Cast(b.Cast(n, ir.BF16), ir.F32).Named("normed_bf16")
	}
	y := b.Cast(b.Add(b.Mul(n, cs), b.Mul(rotated(b, c, n, t.d, false), sn)), ir.BF16).Named("y")
	b.Store(b.PtrAdd(q, t.qOffs), y, b.Col(t.isQ))
	b.Store(b.PtrAdd(k, t.kvOffs), y, b.Col(t.isK))
	b.Store(b.PtrAdd(v, t.kvOffs), raw, b.Col(t.isV)) // v: a copy
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
	nr, hd := c.Knob("ROWS"), c.Knob("HEAD_D")
	tiles := b.CDiv(z.rows(b), nr).Named("tiles")
	pid, np := b.ProgramID(0), b.NumPrograms(0)
	// The weight-gradient terms add up in [ROWS, D] accumulators, each
	// thread its own elements in loop order: no exchange between threads
	// (and no barrier) inside the loop, one tree over the rows after it.
	zero := func() *ir.Value { return b.Full(ir.F32, 0, nr, hd) }
	acc := b.For(pid, tiles, np, []*ir.Value{zero().Named("dqw_rows"), zero().Named("dkw_rows")}, func(it *ir.Value, acc []*ir.Value) []*ir.Value {
		t := qkTile(b, c, z, b.Mul(it, nr))
		// v rows' gradient is dv: their qkv is not read (x = 0 there).
		x := b.Cast(b.Load(b.PtrAdd(qkv, t.offs), b.Col(b.Or(t.isQ, t.isK)), nil), ir.F32).Named("x")
		// The row's output gradient: dq, dk or dv, as the row is.
		dy := b.Add(b.Cast(b.Load(b.PtrAdd(dq, t.qOffs), b.Col(t.isQ), nil), ir.F32),
			b.Cast(b.Load(b.PtrAdd(dk, t.kvOffs), b.Col(t.isK), nil), ir.F32)).Named("dy")
		dvv := b.Cast(b.Load(b.PtrAdd(dv, t.kvOffs), b.Col(t.isV), nil), ir.F32)
		var w, cs, sn *ir.Value
		if c.Knob("EARLY_LOADS") == 1 {
			w = weights(b, p, t)
			cs, sn = tables(b, c, p, t)
		}
		rr := rms(b, c, x)
		xh := b.Mul(x, b.Col(rr)).Named("x_hat")
		if w == nil {
			w = weights(b, p, t)
			cs, sn = tables(b, c, p, t)
		}
		dn := b.Add(b.Mul(dy, cs), rotated(b, c, b.Mul(dy, sn), t.d, true)).Named("d_normed")
		g := b.Mul(dn, xh).Named("dw_terms")
		zeros := b.Full(ir.F32, 0, nr, hd)
		dqw := b.Add(acc[0], b.Where(b.Col(t.isQ), g, zeros))
		dkw := b.Add(acc[1], b.Where(b.Col(t.isK), g, zeros))
		dxh := b.Mul(dn, w).Named("d_x_hat")
		mean := b.Div(b.Reduce(b.Mul(dxh, xh), 1, ir.RSum), float64(hd)).Named("mean_dot")
		dx := b.Mul(b.Sub(dxh, b.Mul(xh, b.Col(mean))), b.Col(rr)).Named("dx")
		out := b.Where(b.Col(t.isV), dvv, dx)
		b.Store(b.PtrAdd(dqkv, t.offs), b.Cast(out, c.DType("d_qkv")), b.Col(t.ok))
		return []*ir.Value{dqw, dkw}
	})
	d := b.Arange(hd)
	base := b.Mul(pid, 2*hd)
	b.Store(b.PtrAdd(partials, b.Add(base, d)), b.Reduce(acc[0], 0, ir.RSum).Named("dqw_part"), nil)
	b.Store(b.PtrAdd(partials, b.Add(b.Add(base, hd), d)), b.Reduce(acc[1], 0, ir.RSum).Named("dkw_part"), nil)
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
	hd, parts := c.Knob("HEAD_D"), qkParts(c)
	which := b.ProgramID(0)
	d := b.Add(b.Mul(b.ProgramID(1), qkFoldCols), b.Arange(qkFoldCols)).Named("d")
	acc := b.For(0, parts, qkFoldRows, []*ir.Value{b.Full(ir.F32, 0, qkFoldRows, qkFoldCols).Named("dw_rows")}, func(p *ir.Value, acc []*ir.Value) []*ir.Value {
		rows := b.Add(p, b.Arange(qkFoldRows))
		at := b.Add(b.Col(b.Mul(b.Add(b.Mul(rows, 2), which), hd)), b.Row(d))
		part := b.Load(b.PtrAdd(partials, at), b.Col(b.Lt(rows, parts)), nil)
		return []*ir.Value{b.Add(acc[0], part)}
	})
	dw := b.Reduce(acc[0], 0, ir.RSum).Named("dw")
	b.Store(b.PtrAdd(dqw, d), dw, b.Splat(b.Eq(which, 0), qkFoldCols))
	b.Store(b.PtrAdd(dkw, d), dw, b.Splat(b.Eq(which, 1), qkFoldCols))
}

// The fold's tile: qkFoldRows rows of partials by qkFoldCols columns
// (64 bytes of a row, in 16-byte vectors).
const (
	qkFoldRows = 128
	qkFoldCols = 16
)
