package ops

import "github.com/fp8gen/fp8gen/ir"

// moeSizes are the permute's sizes, declared once a kernel.
type moeSizes struct{ t, h, e, topk, pad *ir.Value }

func declareMoE(b *ir.Builder) moeSizes {
	return moeSizes{b.Size("T"), b.Size("H"), b.Size("E"), b.Size("TOPK"), b.Size("PAD")}
}

// capacity is the permuted rows' capacity, T·TOPK + E·(PAD−1).
func (z moeSizes) capacity() *ir.Value {
	return z.t.Mul(z.topk).Add(z.e.Mul(z.pad.Sub(1))).Named("cap")
}

// routes is route k of the tokens toks (clamped into [0, T) for the
// address; ok says which exist): its expert, in the index type, and
// whether it is one of the rank's (in [0, E); any other value is −1).
func (z moeSizes) routes(b *ir.Builder, idx, toks, ok *ir.Value, k int) (expert, routed, at *ir.Value) {
	tn, ne, topk := z.t, z.e, z.topk
	in := toks.Min(tn.Sub(1))
	at = in.Mul(topk).Add(topk.Sub(1).Min(k)).Named("route")
	expert = b.Index(b.Load(b.PtrAdd(idx, at), ok.And(topk.Gt(k)), -1)).Named("expert")
	routed = expert.Ge(0).And(expert.Lt(ne)).And(ok).And(topk.Gt(k)).Named("routed")
	return expert, routed, at
}

// moeCountKernel counts, for its block of BLOCK_T tokens, each expert's
// routes into block_counts[block, :].
func moeCountKernel(b *ir.Builder, c *Call) {
	idx := b.Param("indices", ir.I32)
	bc := b.Param("block_counts", ir.I32)
	z := declareMoE(b)
	tn, ne := z.t, z.e
	bt := c.Knob(knob.BlockT)
	experts := b.Arange(c.Knob(knob.BlockE)).Named("experts")
	toks := b.ProgramID(0).Mul(bt).Add(b.Arange(bt)).Named("toks")
	var n *ir.Value
	for k := range c.Knob(knob.TopKB) {
		g, routed, _ := z.routes(b, idx, toks, toks.Lt(tn), k)
		hits := b.Where(g.Col().Eq(experts.Row()).And(routed.Col()), b.Int(1), b.Int(0)).Reduce(0, ir.RSum)
		if n == nil {
			n = hits
		} else {
			n = n.Add(hits)
		}
	}
	b.Store(b.PtrAdd(bc, b.ProgramID(0).Mul(ne).Add(experts)), n.Named("block_count").Cast(ir.I32), experts.Lt(ne))
}

// moeScanKernel, a program an expert, writes each block's routes before
// it (block_base) and the expert's total (counts), permuteScanChunk blocks
// a trip.
func moeScanKernel(b *ir.Builder, c *Call) {
	bc := b.Param("block_counts", ir.I32)
	base := b.Param("block_base", ir.I32)
	counts := b.Param("counts", ir.I32)
	z := declareMoE(b)
	tn, ne := z.t, z.e
	g := b.ProgramID(0)
	blocks := tn.CDiv(c.Knob(knob.BlockT)).Named("blocks")
	j := b.Arange(permuteScanChunk)
	before := j.Col().Gt(j.Row()) // row j sums the chunk's blocks j' < j
	total := b.For(0, blocks, permuteScanChunk, []*ir.Value{b.Int(0).Named("total")}, func(j0 *ir.Value, carried []*ir.Value) []*ir.Value {
		bs := j0.Add(j).Named("block")
		ok := bs.Lt(blocks)
		at := bs.Min(blocks.Sub(1)).Mul(ne).Add(g)
		n := b.Index(b.Load(b.PtrAdd(bc, at), ok, 0)).Named("n")
		prefix := b.Where(before, n.Row(), 0).Reduce(1, ir.RSum)
		b.Store(b.PtrAdd(base, at), carried[0].Add(prefix).Cast(ir.I32), ok)
		return []*ir.Value{carried[0].Add(n.Reduce(0, ir.RSum))}
	})
	b.Store(b.PtrAdd(counts, g), total[0].Cast(ir.I32), nil)
}

// moeAmaxKernel (quant=tensorwise): the amax of the rows of the tokens
// with a local route (the others are not read), ROWS tokens a trip of a
// persistent loop, one relaxed atomic max a program: moe_permute reads it
// after this launch ends.
func moeAmaxKernel(b *ir.Builder, c *Call) {
	x := b.Param("x", c.DType("x"))
	idx := b.Param("indices", ir.I32)
	amaxp := b.Param("amax", ir.F32)
	z := declareMoE(b)
	z.amaxLoop(b, c, amaxp, func(toks, acc *ir.Value) *ir.Value {
		var routed *ir.Value
		for k := range c.Knob(knob.TopKB) {
			_, rk, _ := z.routes(b, idx, toks, toks.Lt(z.t), k)
			routed = orOf(routed, rk)
		}
		rows, _ := z.loadRows(b, c, x, toks.Min(z.t.Sub(1)), routed.Named("routed"))
		return acc.Max(rowAmax(b, f32s(rows)))
	})
}

// amaxLoop is the tensorwise amax kernels' persistent loop: ROWS tokens a
// trip, trip folding their amax into the tokens' running one (acc), then
// one relaxed atomic max a program into amaxp.
func (z moeSizes) amaxLoop(b *ir.Builder, c *Call, amaxp *ir.Value, trip func(toks, acc *ir.Value) *ir.Value) {
	nr := c.Knob(knob.Rows)
	acc := b.For(b.ProgramID(0).Mul(nr), z.t, b.NumPrograms(0).Mul(nr), []*ir.Value{b.Full(ir.F32, 0, nr).Named("amax_rows")},
		func(t0 *ir.Value, acc []*ir.Value) []*ir.Value {
			return []*ir.Value{trip(t0.Add(b.Arange(nr)).Named("toks"), acc[0])}
		})
	b.AtomicMax(amaxp, acc[0].Reduce(0, ir.RMax).Named("amax_part"), nil, ir.Relaxed, ir.ScopeAgent)
}

// orOf is a ∨ b, b where a is nil.
func orOf(a, b *ir.Value) *ir.Value {
	if a == nil {
		return b
	}
	return a.Or(b)
}

// f32s is vs cast to f32.
func f32s(vs []*ir.Value) []*ir.Value {
	out := make([]*ir.Value, len(vs))
	for i, v := range vs {
		out[i] = v.Cast(ir.F32)
	}
	return out
}

// loadRows loads rows in of src (a [T, H] tensor) where mask holds, 0
// elsewhere: TILES tiles of BLOCK_H columns, with each tile's column mask.
func (z moeSizes) loadRows(b *ir.Builder, c *Call, src, in, mask *ir.Value) (rows, colMasks []*ir.Value) {
	bh := c.Knob(knob.BlockH)
	for i := range c.Knob(knob.Tiles) {
		cols := b.Add(i*bh, b.Arange(bh)).Named("cols")
		colMasks = append(colMasks, cols.Lt(z.h).Row())
		offs := in.Col().Mul(z.h).Add(cols.Row()).Named("offs_" + src.Name)
		rows = append(rows, b.Load(b.PtrAdd(src, offs), mask.Col().And(colMasks[i]), 0).Named(src.Name))
	}
	return rows, colMasks
}

// tensorScale is quant=tensorwise's scale from the amax a launch before
// combined; program 0 stores its inverse.
func tensorScale(b *ir.Builder, c *Call, amaxp, inv *ir.Value) *ir.Value {
	s := scaleOf(b, b.Load(amaxp, nil, nil).Named("amax"), c)
	b.Store(inv, b.Div(1, s), b.ProgramID(0).Eq(0))
	return s
}

// moePermuteKernel lays out the experts, then walks its block's tokens.
func moePermuteKernel(b *ir.Builder, c *Call) {
	x := b.Param("x", c.DType("x"))
	idx := b.Param("indices", ir.I32)
	var probs, inv, outProbs *ir.Value
	if c.Flag(opt.Probs) {
		probs = b.Param("probs", ir.F32)
	}
	out := b.Param("out", c.DType("out"))
	rowwise, tensorwise := c.Opt(opt.Quant) == "rowwise", c.Opt(opt.Quant) == "tensorwise"
	var amaxp *ir.Value
	if rowwise || tensorwise {
		inv = b.Param("inv_scale", ir.F32)
	}
	if tensorwise {
		amaxp = b.Param("amax", ir.F32)
	}
	if probs != nil {
		outProbs = b.Param("out_probs", ir.F32)
	}
	rowMap := b.Param("row_map", ir.I32)
	offsets := b.Param("offsets", ir.I32)
	counts := b.Param("counts", ir.I32)
	base := b.Param("block_base", ir.I32)
	z := declareMoE(b)
	tn, hn, ne, topk, pad := z.t, z.h, z.e, z.topk, z.pad
	bt, nr, bh := c.Knob(knob.BlockT), c.Knob(knob.Rows), c.Knob(knob.BlockH)
	pid := b.ProgramID(0)
	var scale *ir.Value // quant=tensorwise's one scale
	if tensorwise {
		scale = tensorScale(b, c, amaxp, inv)
	}

	// The experts' rows: each padded to a multiple of PAD, one after
	// another (program 0 writes their ends).
	experts := b.Arange(c.Knob(knob.BlockE)).Named("experts")
	eok := experts.Lt(ne)
	// Every row lies below the capacity; the clamps (which valid counts
	// never meet) bound the index arithmetic for the 32-bit form.
	routes := tn.Mul(topk).Named("routes")
	capRows := z.capacity()
	n := b.Index(b.Load(b.PtrAdd(counts, experts), eok, 0)).Max(0).Min(routes).Named("count")
	padded := n.CDiv(pad).Mul(pad).Named("padded")
	ends := b.Where(experts.Row().Le(experts.Col()), padded.Row(), 0).Reduce(1, ir.RSum).Named("ends")
	starts := ends.Sub(padded).Named("starts")
	b.Store(b.PtrAdd(offsets, experts), ends.Cast(ir.I32), eok.And(pid.Eq(0)))
	next := starts.Add(b.Index(b.Load(b.PtrAdd(base, pid.Mul(ne).Add(experts)), eok, 0)).Max(0).Min(routes)).Named("next")

	// The block's tokens, ROWS a trip, carrying each expert's next row.
	t0 := pid.Mul(bt)
	tEnd := t0.Add(bt).Min(tn).Named("block_end")
	r := b.Arange(nr)
	b.For(t0, tEnd, nr, []*ir.Value{next}, func(r0 *ir.Value, carried []*ir.Value) []*ir.Value {
		next := carried[0].Max(0).Min(capRows)
		toks := r0.Add(r).Named("toks")
		ok := toks.Lt(tEnd)
		in := toks.Min(tn.Sub(1))
		var gs, routed, ats, dests []*ir.Value
		for k := range c.Knob(knob.TopKB) {
			g, rk, at := z.routes(b, idx, toks, ok, k)
			gs, routed, ats = append(gs, g), append(routed, rk), append(ats, at)
		}
		// A route's row: its expert's next, plus the routes of this trip
		// before it (earlier tokens, or this token's earlier k) to it.
		taken := b.Full(next.Type.DType, 0, c.Knob(knob.BlockE))
		for k, g := range gs {
			hot := g.Col().Eq(experts.Row()).And(routed[k].Col())
			dest := b.Where(hot, next.Row(), 0).Reduce(1, ir.RMax) // one expert is hot, or none
			for k2, g2 := range gs {
				order := r.Col().Gt(r.Row()) // earlier tokens
				if k2 < k {
					order = r.Col().Ge(r.Row()) // and this one's
				}
				same := g.Col().Eq(g2.Row()).And(routed[k2].Row()).And(order)
				dest = dest.Add(b.Where(same, b.Int(1), b.Int(0)).Reduce(1, ir.RSum))
			}
			dest = dest.Max(0).Min(capRows.Sub(1)).Named("dest")
			dests = append(dests, dest)
			taken = taken.Add(b.Where(hot, b.Int(1), b.Int(0)).Reduce(0, ir.RSum))
			b.Store(b.PtrAdd(rowMap, ats[k]), b.Where(routed[k], dest, -1).Cast(ir.I32), ok.And(topk.Gt(k)))
			if probs != nil {
				p := b.Load(b.PtrAdd(probs, ats[k]), routed[k], 0).Named("prob")
				b.Store(b.PtrAdd(outProbs, dest), p, routed[k])
			}
		}
		// The routed tokens' rows, read once, quantized once, stored to
		// each route (a token routed to no local expert is not read).
		var anyRoute *ir.Value
		for _, rk := range routed {
			anyRoute = orOf(anyRoute, rk)
		}
		rows, masks := z.loadRows(b, c, x, in, anyRoute.Named("any_route"))
		if rowwise {
			fs := f32s(rows)
			s := scaleOf(b, rowAmax(b, fs), c)
			for k, d := range dests {
				b.Store(b.PtrAdd(inv, d), b.Div(1, s), routed[k])
			}
			for i, v := range fs {
				rows[i] = v.Mul(s.Col()).Cast(ir.FP8(c.Format)).Named("q")
			}
		}
		if tensorwise {
			for i, v := range rows {
				rows[i] = v.Cast(ir.F32).Mul(scale).Cast(ir.FP8(c.Format)).Named("q")
			}
		}
		for k, d := range dests {
			for i, v := range rows {
				cols := b.Add(i*bh, b.Arange(bh))
				b.Store(b.PtrAdd(out, d.Col().Mul(hn).Add(cols.Row())), v, routed[k].Col().And(masks[i]))
			}
		}
		return []*ir.Value{next.Add(taken)}
	})

	// The padding rows: zeros (and a row of zeros' inv_scale and
	// probability).
	z.zeroPadding(b, c, func(g *ir.Value) (from, end *ir.Value) {
		pick := func(v *ir.Value) *ir.Value { return b.Where(experts.Eq(g), v, 0).Reduce(0, ir.RSum) }
		return pick(starts).Add(pick(n)), pick(ends)
	}, out, rowScales(inv, rowwise), outProbs)
}

// unpermuteKernel sums each token's routes' rows (rows, row_map; probs
// where the op has them) into grads.
func unpermuteKernel(rows, grads string) func(b *ir.Builder, c *Call) {
	return func(b *ir.Builder, c *Call) {
		src := b.Param(rows, ir.BF16)
		rowMap := b.Param("row_map", ir.I32)
		var probs *ir.Value
		if _, ok := c.Options["probs"]; ok && c.Flag(opt.Probs) {
			probs = b.Param("probs", ir.F32)
		}
		dst := b.Param(grads, ir.BF16)
		z := declareMoE(b)
		tn, hn := z.t, z.h
		nr, bh := c.Knob(knob.Rows), c.Knob(knob.BlockH)
		toks := b.ProgramID(0).Mul(nr).Add(b.Arange(nr)).Named("toks")
		ok := toks.Lt(tn)
		in := toks.Min(tn.Sub(1))
		var at, has, ps []*ir.Value
		for k := range c.Knob(knob.TopKB) {
			route, r, h := z.routeRow(b, rowMap, in, ok, k)
			at, has = append(at, r.Col().Mul(hn)), append(has, h)
			if probs != nil {
				ps = append(ps, b.Load(b.PtrAdd(probs, route), h, 0).Named("prob"))
			}
		}
		b.For(0, hn, bh, nil, func(c0 *ir.Value, _ []*ir.Value) []*ir.Value {
			cols := c0.MultipleOf(bh).Add(b.Arange(bh)).Named("cols")
			cm := cols.Lt(hn).Row()
			acc := b.Full(ir.F32, 0, nr, bh)
			for k := range at {
				v := b.Load(b.PtrAdd(src, at[k].Add(cols.Row())), has[k].Col().And(cm), 0).Cast(ir.F32)
				var term *ir.Value
				if probs != nil {
					term = b.FMA(ps[k].Col(), v, acc)
				} else {
					term = acc.Add(v)
				}
				// A route without a row adds nothing, not +0 (−0 + +0 is +0).
				acc = b.Where(has[k].Col(), term, acc).Named("acc")
			}
			b.Store(b.PtrAdd(dst, in.Col().Mul(hn).Add(cols.Row())), acc.Cast(ir.BF16), ok.Col().And(cm))
			return nil
		})
	}
}

// unpermuteBwdKernel: ROWS tokens a program, the dy rows a route writes in
// registers; each route's row is p · dy (quantized rowwise or tensorwise,
// or bf16), its d_prob dy's dot with the expert's row. Its programs also
// zero the padding rows, expert e by program e mod the programs.
func unpermuteBwdKernel(b *ir.Builder, c *Call) {
	dy := b.Param("dy", ir.BF16)
	rowMap := b.Param("row_map", ir.I32)
	var probs, eo, inv, dprobs *ir.Value
	if c.Flag(opt.Probs) {
		probs, eo = b.Param("probs", ir.F32), b.Param("expert_out", ir.BF16)
	}
	offsets, counts := b.Param("offsets", ir.I32), b.Param("counts", ir.I32)
	dst := b.Param("d_expert_out", c.DType("d_expert_out"))
	rowwise, tensorwise := c.Opt(opt.Quant) == "rowwise", c.Opt(opt.Quant) == "tensorwise"
	var amaxp *ir.Value
	if rowwise || tensorwise {
		inv = b.Param("inv_scale", ir.F32)
	}
	if tensorwise {
		amaxp = b.Param("amax", ir.F32)
	}
	if probs != nil {
		dprobs = b.Param("d_probs", ir.F32)
	}
	z := declareMoE(b)
	tn, hn := z.t, z.h
	nr, bh := c.Knob(knob.Rows), c.Knob(knob.BlockH)
	capRows := z.capacity()
	var scale *ir.Value // quant=tensorwise's one scale
	if tensorwise {
		scale = tensorScale(b, c, amaxp, inv)
	}
	toks := b.ProgramID(0).Mul(nr).Add(b.Arange(nr)).Named("toks")
	ok := toks.Lt(tn)
	in := toks.Min(tn.Sub(1))
	rs := z.routeRows(b, c, rowMap, in, ok)
	ds, masks := z.loadRows(b, c, dy, in, rs.any)
	ds = f32s(ds)
	for k, route := range rs.route {
		r, has := rs.row[k], rs.has[k]
		at := r.Col().Mul(hn).Named("at")
		gs := ds
		if probs != nil {
			p := b.Load(b.PtrAdd(probs, route), has, 0).Named("prob")
			gs = nil
			var dot *ir.Value
			for i, d := range ds {
				gs = append(gs, d.Mul(p.Col()).Named("g"))
				cols := b.Add(i*bh, b.Arange(bh))
				e := b.Load(b.PtrAdd(eo, at.Add(cols.Row())), has.Col().And(masks[i]), 0).Cast(ir.F32)
				part := d.Mul(e).Reduce(1, ir.RSum)
				if dot == nil {
					dot = part
				} else {
					dot = dot.Add(part)
				}
			}
			b.Store(b.PtrAdd(dprobs, route), b.Where(has, dot, 0), ok.And(z.topk.Gt(k)))
		}
		var s *ir.Value
		if rowwise {
			s = scaleOf(b, rowAmax(b, gs), c)
			b.Store(b.PtrAdd(inv, r), b.Div(1, s), has)
		}
		for i, g := range gs {
			v := g.Cast(ir.BF16)
			switch {
			case rowwise:
				v = g.Mul(s.Col()).Cast(ir.FP8(c.Format))
			case tensorwise:
				v = g.Mul(scale).Cast(ir.FP8(c.Format))
			}
			cols := b.Add(i*bh, b.Arange(bh))
			b.Store(b.PtrAdd(dst, at.Add(cols.Row())), v, has.Col().And(masks[i]))
		}
	}

	// The padding rows: from an expert's first row plus its count to its
	// end.
	within := func(v *ir.Value) *ir.Value { return b.Index(v).Max(0).Min(capRows) }
	z.zeroPadding(b, c, func(g *ir.Value) (from, end *ir.Value) {
		start := within(b.Load(b.PtrAdd(offsets, g.Sub(1).Max(0)), g.Gt(0), 0)).Named("start")
		return start.Add(within(b.Load(b.PtrAdd(counts, g), nil, 0))), within(b.Load(b.PtrAdd(offsets, g), nil, 0))
	}, dst, rowScales(inv, rowwise), nil)
}

// unpermuteBwdAmaxKernel (quant=tensorwise): the amax of every route's
// products probs · dy (dy where the op has no probs), ROWS tokens a trip of
// a persistent loop, one relaxed atomic max a program: moe_unpermute_bwd
// reads it after this launch ends.
func unpermuteBwdAmaxKernel(b *ir.Builder, c *Call) {
	dy := b.Param("dy", ir.BF16)
	rowMap := b.Param("row_map", ir.I32)
	var probs *ir.Value
	if c.Flag(opt.Probs) {
		probs = b.Param("probs", ir.F32)
	}
	amaxp := b.Param("amax", ir.F32)
	z := declareMoE(b)
	z.amaxLoop(b, c, amaxp, func(toks, amax *ir.Value) *ir.Value {
		in := toks.Min(z.t.Sub(1))
		rs := z.routeRows(b, c, rowMap, in, toks.Lt(z.t))
		ds, _ := z.loadRows(b, c, dy, in, rs.any)
		ds = f32s(ds)
		for k, route := range rs.route {
			gs := ds
			if probs != nil {
				p := b.Load(b.PtrAdd(probs, route), rs.has[k], 0).Named("prob")
				gs = nil
				for _, d := range ds {
					gs = append(gs, d.Mul(p.Col()).Named("g"))
				}
			}
			amax = amax.Max(rowAmax(b, gs)) // a route without a row: p = 0, or dy another route's
		}
		return amax
	})
}

// moeRouteRows are the TOPKB routes of ROWS tokens (routeRow's), and
// whether any has a row.
type moeRouteRows struct {
	route, row, has []*ir.Value
	any             *ir.Value
}

func (z moeSizes) routeRows(b *ir.Builder, c *Call, rowMap, in, ok *ir.Value) moeRouteRows {
	var rs moeRouteRows
	for k := range c.Knob(knob.TopKB) {
		route, r, has := z.routeRow(b, rowMap, in, ok, k)
		rs.route, rs.row, rs.has = append(rs.route, route), append(rs.row, r), append(rs.has, has)
		rs.any = orOf(rs.any, has)
	}
	rs.any = rs.any.Named("any_row")
	return rs
}

// rowScales is inv where it holds a scale per row, else nil.
func rowScales(inv *ir.Value, rowwise bool) *ir.Value {
	if !rowwise {
		return nil
	}
	return inv
}

// zeroPadding zeros the padding rows of experts pid, pid + programs, …:
// rows [from, end) of expert g as bounds gives them (clamped into the
// capacity), ROWS a trip, out's TILES·BLOCK_H columns, and where given a
// row of zeros' inv_scale and a probability of 0.
func (z moeSizes) zeroPadding(b *ir.Builder, c *Call, bounds func(g *ir.Value) (from, end *ir.Value), out, inv, probs *ir.Value) {
	nr, bh := c.Knob(knob.Rows), c.Knob(knob.BlockH)
	capRows := z.capacity()
	var zeroInv *ir.Value
	if inv != nil {
		zeroInv = b.Div(1, scaleOf(b, b.F32(0), c)).Named("zero_inv")
	}
	b.For(b.ProgramID(0), z.e, b.NumPrograms(0), nil, func(g *ir.Value, _ []*ir.Value) []*ir.Value {
		from, end := bounds(g)
		from, end = from.Named("pad_from"), end.Named("end")
		b.For(from, end, nr, nil, func(r0 *ir.Value, _ []*ir.Value) []*ir.Value {
			rows := r0.Add(b.Arange(nr)).Named("pad_rows")
			ok := rows.Lt(end)
			rows = rows.Max(0).Min(capRows.Sub(1))
			for i := range c.Knob(knob.Tiles) {
				cols := b.Add(i*bh, b.Arange(bh))
				zero := b.Full(out.Type.DType.Elem(), 0, nr, bh) // a tile: its layout is the store's
				b.Store(b.PtrAdd(out, rows.Col().Mul(z.h).Add(cols.Row())), zero, ok.Col().And(cols.Lt(z.h).Row()))
			}
			if inv != nil {
				b.Store(b.PtrAdd(inv, rows), b.Splat(zeroInv, nr), ok)
			}
			if probs != nil {
				b.Store(b.PtrAdd(probs, rows), b.Full(ir.F32, 0, nr), ok)
			}
			return nil
		})
		return nil
	})
}

// routeRow is route k of the tokens in (ok says which exist): its index
// into row_map and probs, its permuted row clamped into the capacity, and
// whether it has one (a row outside [0, capacity) counts as −1).
func (z moeSizes) routeRow(b *ir.Builder, rowMap, in, ok *ir.Value, k int) (route, row, has *ir.Value) {
	capRows := z.capacity()
	route = in.Mul(z.topk).Add(z.topk.Sub(1).Min(k)).Named("route")
	r := b.Index(b.Load(b.PtrAdd(rowMap, route), ok.And(z.topk.Gt(k)), -1)).Named("row")
	has = r.Ge(0).And(r.Lt(capRows)).And(ok).And(z.topk.Gt(k)).Named("has")
	return route, r.Max(0).Min(capRows.Sub(1)), has
}
