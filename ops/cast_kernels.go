package ops

import "github.com/fp8gen/fp8gen/ir"

// The casts' kernels, in the DSL. They live apart from the descriptions
// so that a description's edit leaves the source lines the emitted HIP
// cites (and the golden files) as they were.

// scaleOf is fmt_max / max(amax, eps), optionally rounded down to a power of two.
func scaleOf(b *ir.Builder, amax *ir.Value, c *Call) *ir.Value {
	s := b.FP8Max(c.Format).Div(amax.Max(Eps))
	if c.Flag(opt.Pow2) {
		s = s.Pow2Floor()
	}
	return s.Named("scale")
}

// loadF32 loads x (bf16 or f32) where mask holds, 0 elsewhere, as f32.
func loadF32(b *ir.Builder, x, offs, mask *ir.Value) *ir.Value {
	return b.Load(b.PtrAdd(x, offs), mask, nil).Cast(ir.F32).Named("xf")
}

func rowwiseKernel(b *ir.Builder, c *Call) {
	x := b.Param("x", c.DType("x"))
	q := b.Param("q", ir.FP8(c.Format))
	inv := b.Param("inv_scale", ir.F32)
	m, k := b.Size("M"), b.Size("K")
	nr, bk := c.Knob(knob.Rows), c.Knob(knob.BlockK)

	// rowTile is the rows from r0 (and which exist), with the offsets and
	// mask of their tile at columns k0, the addresses from the rows
	// clamped into the tensor where the tile may lie past its end (ahead).
	type rowTile struct{ rows, ok, offs, mask *ir.Value }
	rowsFrom := func(r0 *ir.Value) rowTile {
		rows := r0.Add(b.Arange(nr)).Named("rows")
		return rowTile{rows: rows, ok: rows.Lt(m).Named("row_ok")}
	}
	tile := func(t rowTile, k0 *ir.Value, ahead bool) rowTile {
		at := t.rows
		if ahead {
			at = rowsWithin(b, t.rows, m)
		}
		cols := k0.Add(b.Arange(bk)).Named("cols")
		t.offs = at.Col().Mul(k).Add(cols.Row()).Named("offs")
		t.mask = t.ok.Col().And(cols.Lt(k).Row()).Named("mask")
		return t
	}
	// cast scales the whole rows of t, whose elements v (f32) hold, and
	// stores them with their inverse scales.
	cast := func(t rowTile, v *ir.Value) {
		scale := scaleOf(b, v.Abs().Reduce(1, ir.RMax).Named("amax"), c)
		b.Store(b.PtrAdd(q, t.offs), v.Mul(scale.Col()).Cast(ir.FP8(c.Format)), t.mask)
		b.Store(b.PtrAdd(inv, t.rows), b.Div(1, scale), t.ok)
	}
	r0 := b.ProgramID(0).Mul(nr)
	switch {
	case c.Knob(knob.PerCU) > 0:
		// A persistent loop over row blocks. With PREFETCH the next block's
		// load is issued before this one's reduction, barriers and stores,
		// so that a program always has a row in flight.
		load := func(r0 *ir.Value, ahead bool) *ir.Value {
			t := tile(rowsFrom(r0), b.Int(0), ahead)
			return b.Load(b.PtrAdd(x, t.offs), t.mask, nil).Named("x_tile")
		}
		tileLoop(b, r0, m, b.NumPrograms(0).Mul(nr), nr, c.Knob(knob.Prefetch) == 1, load, nil,
			func(r0, x *ir.Value, _ []*ir.Value) []*ir.Value {
				cast(tile(rowsFrom(r0), b.Int(0), false), x.Cast(ir.F32).Named("xf"))
				return nil
			})
	case c.Knob(knob.Loop) == 0:
		t := tile(rowsFrom(r0), b.Int(0), false)
		cast(t, loadF32(b, x, t.offs, t.mask))
	default:
		// Rows too long for registers: one pass for amax, one to cast.
		rows := rowsFrom(r0)
		acc := b.For(0, k, bk, []*ir.Value{b.Full(ir.F32, 0, nr, bk).Named("amax_part")}, func(k0 *ir.Value, acc []*ir.Value) []*ir.Value {
			t := tile(rows, k0, false)
			return []*ir.Value{acc[0].Max(loadF32(b, x, t.offs, t.mask).Abs())}
		})
		scale := scaleOf(b, acc[0].Reduce(1, ir.RMax).Named("amax"), c)
		b.For(0, k, bk, nil, func(k0 *ir.Value, _ []*ir.Value) []*ir.Value {
			t := tile(rows, k0, false)
			v := loadF32(b, x, t.offs, t.mask)
			b.Store(b.PtrAdd(q, t.offs), v.Mul(scale.Col()).Cast(ir.FP8(c.Format)), t.mask)
			return nil
		})
		b.Store(b.PtrAdd(inv, rows.rows), b.Div(1, scale), rows.ok)
	}
}

func tensorAmaxKernel(b *ir.Builder, c *Call) {
	x := b.Param("x", c.DType("x"))
	amaxp := b.Param("amax", ir.F32)
	m, k := b.Size("M"), b.Size("K")
	bs := c.Knob(knob.Block)
	n := m.Mul(k).Named("n")
	tiles := n.CDiv(bs).Named("tiles") // no overflow: the index type holds n plus a tile
	acc := b.For(b.ProgramID(0), tiles, b.NumPrograms(0), []*ir.Value{b.Full(ir.F32, 0, bs).Named("amax_part")}, func(i *ir.Value, acc []*ir.Value) []*ir.Value {
		offs := i.Mul(bs).Add(b.Arange(bs)).Named("offs")
		return []*ir.Value{acc[0].Max(loadF32(b, x, offs, offs.Lt(n)).Abs())}
	})
	// Relaxed is enough: the cast kernel reads amax after this launch ends.
	b.AtomicMax(amaxp, acc[0].Reduce(0, ir.RMax).Named("amax"), nil, ir.Relaxed, ir.ScopeAgent)
}

func tensorCastKernel(b *ir.Builder, c *Call) {
	x := b.Param("x", c.DType("x"))
	q := b.Param("q", ir.FP8(c.Format))
	inv := b.Param("inv_scale", ir.F32)
	amaxp := b.Param("amax", ir.F32)
	m, k := b.Size("M"), b.Size("K")
	bs := c.Knob(knob.Block)
	n := m.Mul(k).Named("n")
	tiles := n.CDiv(bs).Named("tiles")
	scale := scaleOf(b, b.Load(amaxp, nil, nil).Named("amax"), c)
	pid := b.ProgramID(0)
	b.For(pid, tiles, b.NumPrograms(0), nil, func(i *ir.Value, _ []*ir.Value) []*ir.Value {
		offs := i.Mul(bs).Add(b.Arange(bs)).Named("offs")
		mask := offs.Lt(n).Named("mask")
		b.Store(b.PtrAdd(q, offs), loadF32(b, x, offs, mask).Mul(scale).Cast(ir.FP8(c.Format)), mask)
		return nil
	})
	b.Store(inv, b.Div(1, scale), pid.Eq(0))
}

// colTile loads the [BLOCK_M, BLOCK_K] tile of program (pid_m, pid_k) as f32.
func colTile(b *ir.Builder, c *Call, x, m, k, pm, pk *ir.Value) *ir.Value {
	bm, bk := c.Knob(knob.BlockM), c.Knob(knob.BlockK)
	rows := pm.Mul(bm).Add(b.Arange(bm)).Named("rows")
	cols := pk.Mul(bk).Add(b.Arange(bk)).Named("cols")
	offs := rows.Col().Mul(k).Add(cols.Row()).Named("offs")
	mask := rows.Lt(m).Col().And(cols.Lt(k).Row()).Named("mask")
	return loadF32(b, x, offs, mask)
}

// tileLoop runs body over the tiles whose first rows are r0 = start,
// start+step, … below end, each r0 a multiple of align, with the tile
// load(r0, ahead) reads. With prefetch the loop carries the
// next tile's load, issued before body works on this one, so that its
// latency overlaps this tile's work and barriers; ahead tells load that its
// tile may start past end (it should read nothing there, and form no
// address past the tensor's rows, lest the index width have to cover it).
func tileLoop(b *ir.Builder, start, end *ir.Value, step any, align int, prefetch bool, load func(r0 *ir.Value, ahead bool) *ir.Value,
	inits []*ir.Value, body func(r0, tile *ir.Value, carried []*ir.Value) []*ir.Value) []*ir.Value {
	return tilesLoop(b, start, end, step, align, prefetch,
		func(r0 *ir.Value, ahead bool) []*ir.Value {
			if ahead {
				return []*ir.Value{load(r0, true).Named("x_next")}
			}
			return []*ir.Value{load(r0, false)}
		}, inits,
		func(r0 *ir.Value, tiles, carried []*ir.Value) []*ir.Value { return body(r0, tiles[0], carried) })
}

// tilesLoop is tileLoop over trips that load several tiles (gate, up and
// dy): load returns them, body takes them in that order.
func tilesLoop(b *ir.Builder, start, end *ir.Value, step any, align int, prefetch bool, load func(r0 *ir.Value, ahead bool) []*ir.Value,
	inits []*ir.Value, body func(r0 *ir.Value, tiles, carried []*ir.Value) []*ir.Value) []*ir.Value {
	if !prefetch {
		return b.For(start, end, step, inits, func(r0 *ir.Value, carried []*ir.Value) []*ir.Value {
			r0 = r0.MultipleOf(align)
			return body(r0, load(r0, false), carried)
		})
	}
	first := load(start.MultipleOf(align), true)
	n := len(first)
	out := b.For(start, end, step, append(first, inits...), func(r0 *ir.Value, carried []*ir.Value) []*ir.Value {
		r0 = r0.MultipleOf(align)
		next := load(r0.Add(step).MultipleOf(align), true)
		return append(next, body(r0, carried[:n], carried[n:])...)
	})
	return out[n:]
}

// rowsWithin is a tile's rows clamped into [0, end) for its addresses
// (its mask keeps the rows as they are): a tile loaded ahead forms no
// address past the rows that exist.
func rowsWithin(b *ir.Builder, rows, end *ir.Value) *ir.Value {
	return rows.Min(end.Sub(1)).Max(0).Named("rows_in")
}

// amaxDown is the loop of the [br, bc] tiles at columns cols of a
// row-major matrix of nrows × ncols whose first row is base (nil: 0), from
// row start every step rows, into a register accumulator of max |x| (each
// thread its own elements: no exchange in the loop). With prefetch the
// loop carries the next tile's load, issued before this tile's max.
//
// With cut (a multiple of br; nil: none) the rows above it are read once
// (LoadOnce: first to leave L2) and those from it on plainly, in a second
// loop, so that the L2 holds the last rows read for a kernel that reads
// them next.
func amaxDown(b *ir.Builder, x, base, nrows, ncols, cols, start *ir.Value, step, br, bc int, prefetch bool, cut *ir.Value) *ir.Value {
	loader := func(end *ir.Value, once bool) func(r0 *ir.Value, ahead bool) *ir.Value {
		return func(r0 *ir.Value, ahead bool) *ir.Value {
			rows := r0.Add(b.Arange(br)).Named("rows")
			mrows := rows
			if ahead {
				rows = rowsWithin(b, rows, nrows)
			}
			at := rows.Col()
			if base != nil {
				at = base.Add(at)
			}
			offs := at.Mul(ncols).Add(cols.Row()).Named("offs")
			mask := mrows.Lt(end).Col().And(cols.Lt(ncols).Row()).Named("mask")
			if once {
				return b.LoadOnce(b.PtrAdd(x, offs), mask, nil)
			}
			return b.Load(b.PtrAdd(x, offs), mask, nil)
		}
	}
	body := func(_, tile *ir.Value, acc []*ir.Value) []*ir.Value {
		return []*ir.Value{acc[0].Max(tile.Cast(ir.F32).Named("xf").Abs())}
	}
	acc := b.Full(ir.F32, 0, br, bc).Named("amax_rows")
	if cut != nil {
		// The tiles above cut (masked at it: a tile loaded ahead past it
		// reads nothing), then the program's first tile at or past it.
		acc = tileLoop(b, start, cut, step, br, prefetch, loader(cut, true), []*ir.Value{acc}, body)[0]
		start = start.Add(cut.Sub(start).Max(0).CDiv(step).Mul(step)).Named("kept_start")
	}
	return tileLoop(b, start, nrows, step, br, prefetch, loader(nrows, false), []*ir.Value{acc}, body)[0]
}

// colAmaxKernel: program (ps, pk) takes every SPLIT-th tile of column
// block pk down M, from its ps-th, into a register accumulator, then one
// tree and one atomic a column (as the expert amax: one tile a program
// spent more on the tree and the atomics than on the bytes it read).
func colAmaxKernel(b *ir.Builder, c *Call) {
	x := b.Param("x", c.DType("x"))
	amax := b.Param("amax", ir.F32)
	m, k := b.Size("M"), b.Size("K")
	bm, bk := c.Knob(knob.BlockM), c.Knob(knob.BlockK)
	cols := b.ProgramID(1).Mul(bk).Add(b.Arange(bk)).Named("cols")
	start := b.ProgramID(0).Mul(bm).Named("m_start")
	var cut *ir.Value
	if keep := c.Knob(knob.Keep); keep < 8 {
		// The rows above the bottom KEEP eighths (in whole tiles) read
		// once: the L2 keeps the last ones, which the cast reads first.
		cut = m.Sub(m.Div(8).Mul(keep)).Div(bm).Mul(bm).Named("cut") // no M·KEEP: it could pass the index width
	}
	part := amaxDown(b, x, nil, m, k, cols, start, bm*c.Knob(knob.Split), bm, bk, c.Knob(knob.Prefetch) == 1, cut).Reduce(0, ir.RMax).Named("amax_part")
	// Relaxed is enough: the cast kernel reads amax after this launch ends.
	b.AtomicMax(b.PtrAdd(amax, cols), part, cols.Lt(k), ir.Relaxed, ir.ScopeAgent)
}

func colCastKernel(b *ir.Builder, c *Call) {
	x := b.Param("x", c.DType("x"))
	qt := b.Param("qt", ir.FP8(c.Format))
	inv := b.Param("inv_scale", ir.F32)
	amax := b.Param("amax", ir.F32)
	m, k := b.Size("M"), b.Size("K")
	bm, bk := c.Knob(knob.BlockM), c.Knob(knob.BlockK)
	pm, pk := b.ProgramID(0), b.ProgramID(1)
	if c.Knob(knob.Keep) < 8 {
		// Along the rows first, from the bottom band: the rows the amax
		// read last, which the L2 kept, first.
		pk, pm = b.ProgramID(0), b.NumPrograms(1).Sub(1).Sub(b.ProgramID(1)).Named("pm")
	}
	// Index tiles are built apart for each access, so that each takes the
	// layout its access wants and only the data goes through LDS.
	colsOf := func() *ir.Value { return pk.Mul(bk).Add(b.Arange(bk)).Named("cols") }
	rowsOf := func() *ir.Value { return pm.Mul(bm).Add(b.Arange(bm)).Named("rows") }
	cols := colsOf()
	scale := scaleOf(b, b.Load(b.PtrAdd(amax, cols), cols.Lt(k), nil).Named("amax"), c)
	q := colTile(b, c, x, m, k, pm, pk).Mul(scale.Row()).Cast(ir.FP8(c.Format)).Named("q")
	rows, cols2 := rowsOf(), colsOf()
	offs := cols2.Col().Mul(m).Add(rows.Row()).Named("offs_t")
	mask := cols2.Lt(k).Col().And(rows.Lt(m).Row()).Named("mask_t")
	b.Store(b.PtrAdd(qt, offs), q.Trans(), mask) // [BLOCK_K, BLOCK_M], coalesced along M
	b.Store(b.PtrAdd(inv, cols), b.Div(1, scale), cols.Lt(k).And(pm.Eq(0)))
}
