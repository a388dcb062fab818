package ops

import (
	"math"

	"github.com/fp8gen/fp8gen/ir"
)

// The SwiGLU kernels, in the DSL (swiglu.go states their numerics).

// expNegAbs is exp(−min(|g|, 104)), the target-independent form.
func expNegAbs(b *ir.Builder, g *ir.Value) *ir.Value {
	a := g.Abs().Min(siluClamp).Named("a")
	t := a.MulAdd(expLog2E, expRound).Named("t") // 1.5·2^23 + rne(a·log2 e)
	k := t.Bitcast(ir.I32).Sub(int64(math.Float32bits(expRound))).Named("k")
	kf := t.Sub(expRound).Named("kf")
	x := kf.MulAdd(-expLn2Lo, kf.MulAdd(-expLn2Hi, a)).Named("x") // a − k·ln 2
	p := b.Splat(b.F32(float64(expTaylor[0])), x.Type.Shape...)
	for _, c := range expTaylor[1:] {
		p = p.MulAdd(x, c)
	}
	lo := k.Shr(1)
	pow2 := func(n *ir.Value) *ir.Value { return b.Sub(127, n).Shl(23).Bitcast(ir.F32) } // 2^−n
	return p.Named("p").Mul(pow2(lo)).Mul(pow2(k.Sub(lo))).Named("e")
}

// siluOf is silu(g) and the exp(−min(|g|, 104)) it used.
func siluOf(b *ir.Builder, g *ir.Value) (silu, e *ir.Value) {
	e = expNegAbs(b, g)
	neg := b.Where(g.Lt(-siluClamp), -siluClamp, g).Mul(e)
	return b.Where(g.Ge(0), g, neg).Div(e.Add(1)).Named("silu"), e
}

// siluGrad is the backward's silu and silu' at g, both from one
// reciprocal of 1 + e: sig and 1 − sig are it or it times e, silu is
// g (clamped below at −104) times sig, and silu' is
// sig · (1 + gc · (1 − sig)).
func siluGrad(b *ir.Builder, g *ir.Value) (silu, ds *ir.Value) {
	e := expNegAbs(b, g)
	inv := b.Div(1, e.Add(1)).Named("inv")
	pos := g.Ge(0)
	ei := e.Mul(inv)
	sig := b.Where(pos, inv, ei).Named("sig")
	rest := b.Where(pos, ei, inv).Named("sig_c") // 1 − sig without the cancellation
	gn := b.Where(g.Lt(-siluClamp), -siluClamp, g)
	gc := b.Where(g.Gt(siluClamp), siluClamp, gn)
	return gn.Mul(sig).Named("silu"), sig.Mul(gc.MulAdd(rest, 1)).Named("ds")
}

// swigluRows is a block of ROWS rows from r0: which exist, and each tile's
// gate and up offsets into h and its offsets into y (and its mask). With
// ahead the rows are clamped into [0, R) for the addresses: a block loaded
// ahead forms no address past the rows.
type swigluRows struct {
	rows, ok             *ir.Value
	gate, up, out, masks []*ir.Value
	// read are the loads' masks: masks, and in the grouped op only the
	// used rows (a padding row reads nothing: zeros).
	read []*ir.Value
	used *ir.Value // the rows read
}

// swiglu is a kernel's builder, call and parameters (probs nil without
// the probs option).
type swiglu struct {
	b        *ir.Builder
	c        *Call
	h, probs *ir.Value
	dy       *ir.Value // the backward's
	rn, f    *ir.Value // the sizes R and F
	// The grouped op's: which rows are used, by grouped_swiglu_rows.
	rowUsed *ir.Value
}

func (k *swiglu) rowsAt(r0 *ir.Value, ahead bool) swigluRows {
	b, c := k.b, k.c
	nr, bf := c.Knob(knob.Rows), c.Knob(knob.BlockF)
	rn, f := k.rn, k.f
	t := swigluRows{rows: r0.Add(b.Arange(nr)).Named("rows")}
	t.ok = t.rows.Lt(rn).Named("row_ok")
	t.used = t.ok
	if k.rowUsed != nil {
		t.used = t.ok.And(b.Load(b.PtrAdd(k.rowUsed, t.rows), t.ok, 0).Ne(0)).Named("used")
	}
	at := t.rows
	if ahead {
		at = rowsWithin(b, t.rows, rn)
	}
	base := at.Col().Mul(f.Mul(2)).Named("h_row")
	for i := range c.Knob(knob.Tiles) {
		cols := b.Add(i*bf, b.Arange(bf)).Named("cols")
		var g, u *ir.Value
		if c.Opt(opt.Layout) == "interleaved" {
			g = base.Add(cols.Mul(2).Row())
			u = g.Add(1)
		} else {
			g = base.Add(cols.Row())
			u = g.Add(f)
		}
		t.gate, t.up = append(t.gate, g.Named("offs_g")), append(t.up, u.Named("offs_u"))
		t.out = append(t.out, at.Col().Mul(f).Add(cols.Row()).Named("offs_y"))
		t.masks = append(t.masks, t.ok.Col().And(cols.Lt(f).Row()).Named("mask"))
		if k.rowUsed != nil {
			t.read = append(t.read, t.used.Col().And(cols.Lt(f).Row()).Named("read"))
		}
	}
	if k.rowUsed == nil {
		t.read = t.masks
	}
	return t
}

// loadHalves loads each tile's gate and up (bf16), gate tiles then up
// tiles, then in the backward (dy set) the dy tiles.
func (k *swiglu) loadHalves(t swigluRows) []*ir.Value {
	b, h := k.b, k.h
	var out []*ir.Value
	for i, m := range t.read {
		out = append(out, b.Load(b.PtrAdd(h, t.gate[i]), m, 0).Named("gate"))
	}
	for i, m := range t.read {
		out = append(out, b.Load(b.PtrAdd(h, t.up[i]), m, 0).Named("up"))
	}
	if k.dy != nil {
		for i, m := range t.read {
			out = append(out, b.Load(b.PtrAdd(k.dy, t.out[i]), m, 0).Named("dy"))
		}
	}
	return out
}

// swigluRowLoop runs body over the program's blocks of rows with their
// halves loaded (loadHalves' order): one block, or with PER_CU a loop
// over every NumPrograms-th block, which with PREFETCH carries the next
// block's loads, issued before body works on this one. Carried values
// (inits) go round the loop.
func (k *swiglu) rowLoop(inits []*ir.Value, body func(t swigluRows, halves, carried []*ir.Value) []*ir.Value) []*ir.Value {
	b, c := k.b, k.c
	nr := c.Knob(knob.Rows)
	r0 := b.ProgramID(0).Mul(nr)
	if c.Knob(knob.PerCU) == 0 {
		t := k.rowsAt(r0, false)
		return body(t, k.loadHalves(t), inits)
	}
	return tilesLoop(b, r0, k.rn, b.NumPrograms(0).Mul(nr).Named("step"), nr, c.Knob(knob.Prefetch) == 1,
		func(r0 *ir.Value, ahead bool) []*ir.Value { return k.loadHalves(k.rowsAt(r0, ahead)) }, inits,
		func(r0 *ir.Value, halves, carried []*ir.Value) []*ir.Value {
			return body(k.rowsAt(r0, false), halves, carried)
		})
}

// y is each tile's y = (silu(gate) · up) · prob in f32.
func (k *swiglu) y(t swigluRows, halves []*ir.Value) []*ir.Value {
	b, p := k.b, k.prob(t)
	n := len(t.masks)
	var ys []*ir.Value
	for i := range n {
		s, _ := siluOf(b, halves[i].Cast(ir.F32).Named("g"))
		y := s.Mul(halves[n+i].Cast(ir.F32).Named("u"))
		if p != nil {
			y = y.Mul(p)
		}
		ys = append(ys, y.Named("y"))
	}
	return ys
}

// prob is the rows' probabilities as a column, or nil without probs.
func (k *swiglu) prob(t swigluRows) *ir.Value {
	if k.probs == nil {
		return nil
	}
	return k.b.Load(k.b.PtrAdd(k.probs, t.rows), t.used, 0).Named("prob").Col()
}

// rowAmax is max |y| along each row of the tiles.
func rowAmax(b *ir.Builder, ys []*ir.Value) *ir.Value {
	var amax *ir.Value
	for _, y := range ys {
		m := y.Abs().Reduce(1, ir.RMax)
		if amax == nil {
			amax = m
		} else {
			amax = amax.Max(m)
		}
	}
	return amax.Named("amax")
}

// newSwiglu declares h and, with the probs option, probs; the kernel
// declares its other pointers, then the sizes (declareSizes).
func newSwiglu(b *ir.Builder, c *Call) *swiglu {
	k := &swiglu{b: b, c: c, h: b.Param("h", ir.BF16)}
	if c.Flag(opt.Probs) {
		k.probs = b.Param("probs", ir.F32)
	}
	if c.Op.Name == groupedSwigluName {
		k.rowUsed = b.Param("row_used", ir.I32)
	}
	return k
}

// declareSizes declares R and F.
func (k *swiglu) declareSizes() { k.rn, k.f = k.b.Size("R"), k.b.Size("F") }

// groupedSwigluRowsKernel writes row_used: for each of BLOCK_R rows a
// program, whether it lies in an expert's [start, start + count), with
// every expert's offsets and counts read at once (BLOCK_E ≥ E), clamped to
// [0, R] (swiglu.go): a rule for any offsets, so that bad ones read
// nothing past h. A pass of its own, so that the activation's loads wait
// on one load of the row's flag, not on the experts' compare.
func groupedSwigluRowsKernel(b *ir.Builder, c *Call) {
	offsets, counts := b.Param("offsets", ir.I32), b.Param("counts", ir.I32)
	used := b.Param("row_used", ir.I32)
	rn, ne := b.Size("R"), b.Size("E")
	gs := b.Arange(c.Knob(knob.BlockE)).Named("experts")
	in := gs.Lt(ne)
	prev := b.Where(gs.Eq(0), b.Int(0), gs.Sub(1)) // no address before offsets, even masked
	within := func(v *ir.Value) *ir.Value { return b.Index(v).Max(0).Min(rn) }
	starts := within(b.Load(b.PtrAdd(offsets, prev), in.And(gs.Gt(0)), 0)).Named("starts")
	ends := starts.Add(within(b.Load(b.PtrAdd(counts, gs), in, 0))).Named("used_ends")
	rows := b.ProgramID(0).Mul(c.Knob(knob.BlockR)).Add(b.Arange(c.Knob(knob.BlockR))).Named("rows")
	rc := rows.Col()
	inside := rc.Ge(starts.Row()).And(rc.Lt(ends.Row()))
	flag := b.Where(inside, b.I32(1), b.I32(0)).Reduce(1, ir.RMax).Named("row_used")
	b.Store(b.PtrAdd(used, rows), flag, rows.Lt(rn))
}

// swigluKernel writes y: as bf16, or quantized with a scale per row or
// (quant=tensorwise, after swiglu_amax) the tensor's.
func swigluKernel(b *ir.Builder, c *Call) {
	var yp, inv, amaxp, scale *ir.Value
	quant := c.Opt(opt.Quant)
	k := newSwiglu(b, c)
	yp = b.Param("y", swigluOutType(c))
	if quant != "none" {
		inv = b.Param("inv_scale", ir.F32)
	}
	if quant == "tensorwise" {
		amaxp = b.Param("amax", ir.F32)
	}
	k.declareSizes()
	if quant == "tensorwise" {
		scale = scaleOf(b, b.Load(amaxp, nil, nil).Named("amax"), c)
		b.Store(inv, b.Div(1, scale), b.ProgramID(0).Eq(0))
	}
	k.rowLoop(nil, func(t swigluRows, halves, _ []*ir.Value) []*ir.Value {
		ys := k.y(t, halves)
		s := scale
		if quant == "rowwise" {
			s = scaleOf(b, rowAmax(b, ys), c)
			b.Store(b.PtrAdd(inv, t.rows), b.Div(1, s), t.ok)
		}
		for i, y := range ys {
			if s == nil {
				b.Store(b.PtrAdd(yp, t.out[i]), y.Cast(ir.BF16), t.masks[i])
				continue
			}
			if quant == "rowwise" {
				y = y.Mul(s.Col())
			} else {
				y = y.Mul(s)
			}
			b.Store(b.PtrAdd(yp, t.out[i]), y.Cast(ir.FP8(c.Format)), t.masks[i])
		}
		return nil
	})
}

// swigluAmaxKernel: the tensor's max |y| (quant=tensorwise), each
// program's running max in registers, then one atomic.
func swigluAmaxKernel(b *ir.Builder, c *Call) {
	k := newSwiglu(b, c)
	amaxp := b.Param("amax", ir.F32)
	k.declareSizes()
	acc := b.Full(ir.F32, 0, c.Knob(knob.Rows)).Named("amax_rows")
	acc = k.rowLoop([]*ir.Value{acc}, func(t swigluRows, halves, carried []*ir.Value) []*ir.Value {
		return []*ir.Value{carried[0].Max(rowAmax(b, k.y(t, halves)))}
	})[0]
	// Relaxed is enough: the cast kernel reads amax after this launch ends.
	b.AtomicMax(amaxp, acc.Reduce(0, ir.RMax).Named("amax"), nil, ir.Relaxed, ir.ScopeAgent)
}

// swigluBwdKernel writes dh (bf16, or rowwise fp8 over the row's 2F
// gradients) and, with probs, d_probs: the row's Σ a·u, each tile's sum
// in the tile's tree order, the tiles' sums left to right.
func swigluBwdKernel(b *ir.Builder, c *Call) {
	rowwise := c.Opt(opt.Quant) == "rowwise"
	k := newSwiglu(b, c)
	dyQuant := c.Opt(opt.DY)
	var dyInv *ir.Value
	if dyQuant == "bf16" {
		k.dy = b.Param("dy", ir.BF16)
	} else {
		k.dy = b.Param("dy", ir.FP8(c.Format))
		dyInv = b.Param("dy_inv_scale", ir.F32)
	}
	out := ir.BF16
	if rowwise {
		out = ir.FP8(c.Format)
	}
	dh := b.Param("dh", out)
	var inv, dprobs *ir.Value
	if rowwise {
		inv = b.Param("inv_scale", ir.F32)
	}
	if k.probs != nil {
		dprobs = b.Param("d_probs", ir.F32)
	}
	k.declareSizes()
	var dyScale *ir.Value // dy's inverse scale: the tensor's, or (in the loop) the rows'
	if dyQuant == "tensorwise" {
		dyScale = b.Load(dyInv, nil, nil).Named("dy_inv")
	}
	k.rowLoop(nil, func(t swigluRows, halves, _ []*ir.Value) []*ir.Value {
		n := len(t.masks)
		p := k.prob(t)
		if dyQuant == "rowwise" {
			dyScale = b.Load(b.PtrAdd(dyInv, t.rows), t.ok, nil).Named("dy_inv").Col()
		}
		grads := make([]*ir.Value, 2*n) // d_gate tiles, then d_up tiles
		var dp *ir.Value
		for i := range n {
			g := halves[i].Cast(ir.F32).Named("g")
			u := halves[n+i].Cast(ir.F32).Named("u")
			dy := halves[2*n+i].Cast(ir.F32)
			if dyScale != nil {
				dy = dy.Mul(dyScale)
			}
			dy = dy.Named("dyf")
			s, ds := siluGrad(b, g)
			a := dy.Mul(s).Named("a")
			dg, du := dy.Mul(u).Mul(ds), a
			if p != nil {
				dg, du = dg.Mul(p), a.Mul(p)
				sum := a.Mul(u).Reduce(1, ir.RSum)
				if dp == nil {
					dp = sum
				} else {
					dp = dp.Add(sum)
				}
			}
			grads[i], grads[n+i] = dg.Named("d_gate"), du.Named("d_up")
		}
		offs := append(append([]*ir.Value(nil), t.gate...), t.up...)
		var scale *ir.Value
		if rowwise {
			scale = scaleOf(b, rowAmax(b, grads), c)
			b.Store(b.PtrAdd(inv, t.rows), b.Div(1, scale), t.ok)
		}
		for i, v := range grads {
			if scale != nil {
				v = v.Mul(scale.Col())
			}
			b.Store(b.PtrAdd(dh, offs[i]), v.Cast(out), t.masks[i%n])
		}
		if dp != nil {
			b.Store(b.PtrAdd(dprobs, t.rows), dp.Named("d_prob"), t.ok)
		}
		return nil
	})
}

// mxSlots are ROWS MX blocks of y from slot s0 (swigluMXKernel): each
// block's row and block column, whether it is in y, whether its scale
// byte is written, and its offsets into h and y. With ahead the slots are
// clamped into the grid's for the addresses (a block loaded ahead forms
// no address past them).
type mxSlots struct {
	slot, row, ok, stored *ir.Value
	gate, up, out         *ir.Value
}

// mxAt is the blocks from slot s0, of total slots (the scale bytes the
// grid covers).
func (k *swiglu) mxAt(s0, total *ir.Value, ahead bool) mxSlots {
	b, c := k.b, k.c
	rn, f := k.rn, k.f
	nb := f.Div(mxBlock).Named("block_cols")
	t := mxSlots{slot: s0.Add(b.Arange(c.Knob(knob.Rows))).Named("block")}
	at := t.slot
	if ahead {
		at = rowsWithin(b, at, total)
	}
	var col *ir.Value
	if l, tiled := mxLayouts[c.Opt(opt.Scales)]; tiled {
		t.row, col = l.cell(at, roundUp(nb, l.tc).Named("padded_cols"))
		t.ok = t.row.Lt(rn).And(col.Lt(nb))
	} else {
		t.row, col = at.Div(nb), at.Rem(nb)
		t.ok = at.Lt(rn.Mul(nb))
	}
	t.row, t.ok = t.row.Named("block_row"), t.ok.And(t.slot.Lt(total)).Named("block_ok")
	t.stored = t.slot.Lt(total).Named("slot_ok")
	lane := b.Arange(mxBlock).Row()
	base := t.row.Mul(f.Mul(2)).Named("h_row")
	if c.Opt(opt.Layout) == "interleaved" {
		t.gate = base.Add(col.Mul(2 * mxBlock)).MultipleOf(2 * mxBlock).Col().Add(lane.Mul(2))
		t.up = t.gate.Add(1)
	} else {
		t.gate = base.Add(col.Mul(mxBlock)).MultipleOf(mxBlock).Col().Add(lane)
		t.up = t.gate.Add(f)
	}
	t.gate, t.up = t.gate.Named("offs_g"), t.up.Named("offs_u")
	t.out = t.row.Mul(f).Add(col.Mul(mxBlock)).MultipleOf(mxBlock).Col().Add(lane).Named("offs_y")
	return t
}

// mxHalves loads the blocks' gate and up (bf16).
func (k *swiglu) mxHalves(t mxSlots) []*ir.Value {
	b, m := k.b, t.ok.Col()
	return []*ir.Value{b.Load(b.PtrAdd(k.h, t.gate), m, 0).Named("gate"), b.Load(b.PtrAdd(k.h, t.up), m, 0).Named("up")}
}

// swigluMXKernel: ROWS MX blocks of y (32 columns of a row) a trip, as
// the rows of a [ROWS, 32] tile, as mx_cast_rows takes x's: the blocks
// in y's order, or under a tiled scale layout ROWS consecutive bytes of
// the laid-out scales (the scale store contiguous; a padding byte's block
// is past y, reads nothing and takes scale 0). A block's gate and up are
// 32 columns of its row's halves (64 alternating values when
// interleaved). One trip a program, or with PER_CU a loop over every
// NumPrograms-th trip, which with PREFETCH loads the next trip's blocks
// before it works on these (as rowLoop does for rows).
func swigluMXKernel(b *ir.Builder, c *Call) {
	k := newSwiglu(b, c)
	yp := b.Param("y", ir.FP8(c.Format))
	sc := b.Param("scale", ir.E8M0)
	k.declareSizes()
	rn, f := k.rn, k.f
	nb := f.Div(mxBlock)
	total := rn.Mul(nb)
	if l, tiled := mxLayouts[c.Opt(opt.Scales)]; tiled {
		total = roundUp(rn, l.tr).Mul(roundUp(nb, l.tc))
	}
	total = total.Named("slots")
	body := func(t mxSlots, halves []*ir.Value) {
		s, _ := siluOf(b, halves[0].Cast(ir.F32).Named("g"))
		y := s.Mul(halves[1].Cast(ir.F32).Named("u"))
		if k.probs != nil {
			y = y.Mul(b.Load(b.PtrAdd(k.probs, t.row), t.ok, 0).Named("prob").Col())
		}
		y = y.Named("y")
		scale, recip := mxScales(b, c, y, 1)
		b.Store(b.PtrAdd(yp, t.out), y.Mul(recip.Col()).Cast(ir.FP8(c.Format)).Named("q"), t.ok.Col())
		b.Store(b.PtrAdd(sc, t.slot), scale.Cast(ir.E8M0), t.stored)
	}
	nr := c.Knob(knob.Rows)
	s0 := b.ProgramID(0).Mul(nr)
	if c.Knob(knob.PerCU) == 0 {
		t := k.mxAt(s0, total, false)
		body(t, k.mxHalves(t))
		return
	}
	tilesLoop(b, s0, total, b.NumPrograms(0).Mul(nr).Named("step"), nr, c.Knob(knob.Prefetch) == 1,
		func(s0 *ir.Value, ahead bool) []*ir.Value { return k.mxHalves(k.mxAt(s0, total, ahead)) }, nil,
		func(s0 *ir.Value, halves, _ []*ir.Value) []*ir.Value {
			body(k.mxAt(s0, total, false), halves)
			return nil
		})
}
