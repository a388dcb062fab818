package ops

import "github.com/fp8gen/fp8gen/ir"

// The MoE scales' kernels, in the DSL (apart from the descriptions, as
// the casts').

// expertTile is the [BLOCK_K, BLOCK_N] tile of w[e] of program (pn, pk,
// e) whose first row is k0 (nil: pk · BLOCK_K): its rows (k), columns
// (n), offsets and mask, built afresh for each access so that each takes
// the layout its access wants.
func expertTile(b *ir.Builder, c *Call, k, n, k0 *ir.Value) (rows, cols, offs, mask *ir.Value) {
	bk, bn := c.Knob(knob.BlockK), c.Knob(knob.BlockN)
	ex := b.ProgramID(2)
	if k0 == nil {
		k0 = b.ProgramID(1).Mul(bk)
	}
	rows = k0.Add(b.Arange(bk)).Named("rows")
	cols = b.ProgramID(0).Mul(bn).Add(b.Arange(bn)).Named("cols")
	offs = ex.Mul(k).Add(rows.Col()).Mul(n).Add(cols.Row()).Named("offs")
	mask = rows.Lt(k).Col().And(cols.Lt(n).Row()).Named("mask")
	return rows, cols, offs, mask
}

// expertAmaxRows is the loop of the tiles of column block cols of w[ex]
// from row start, every step rows, into a [BLOCK_K, BLOCK_N] accumulator.
func expertAmaxRows(b *ir.Builder, c *Call, w, k, n, ex, cols, start *ir.Value, step int) *ir.Value {
	return amaxDown(b, w, ex.Mul(k), k, n, cols, start, step, c.Knob(knob.BlockK), c.Knob(knob.BlockN), c.Knob(knob.Prefetch) == 1, nil)
}

// expertAmaxKernel: program (pn, ps, e) takes every SPLIT-th tile of
// column block pn of w[e] down K, from its ps-th, into a [BLOCK_K,
// BLOCK_N] register accumulator (each thread its own elements: no
// exchange in the loop), then one tree and one atomic a column. One tile
// a program spent more on the tree, its barriers and the atomics than
// on the 16 KB it read (the H200 ran it at 54% of its DRAM bandwidth,
// its SMs 87% busy).
func expertAmaxKernel(b *ir.Builder, c *Call) {
	w := b.Param("w", c.DType("w"))
	amax := b.Param("amax", ir.F32)
	k, n := b.Size("K"), b.Size("N")
	bk, bn := c.Knob(knob.BlockK), c.Knob(knob.BlockN)
	ex := b.ProgramID(2)
	cols := b.ProgramID(0).Mul(bn).Add(b.Arange(bn)).Named("cols")
	start := b.ProgramID(1).Mul(bk).Named("k_start")
	part := expertAmaxRows(b, c, w, k, n, ex, cols, start, bk*c.Knob(knob.Split)).Reduce(0, ir.RMax).Named("amax_part")
	cols = b.ProgramID(0).Mul(bn).Add(b.Arange(bn)).Named("cols")
	// Relaxed is enough: the cast kernel reads amax after this launch ends.
	b.AtomicMax(b.PtrAdd(amax, b.ProgramID(2).Mul(n).Add(cols)), part, cols.Lt(n), ir.Relaxed, ir.ScopeAgent)
}

func expertCastKernel(b *ir.Builder, c *Call) {
	w := b.Param("w", c.DType("w"))
	q := expertOutput(b, c)
	inv := b.Param("inv_scale", ir.F32)
	amaxp := b.Param("amax", ir.F32)
	k, n := b.Size("K"), b.Size("N")
	bn := c.Knob(knob.BlockN)
	ex := b.ProgramID(2)
	cols := b.ProgramID(0).Mul(bn).Add(b.Arange(bn)).Named("cols")
	scols := ex.Mul(n).Add(cols).Named("scale_offs")
	scale := scaleOf(b, b.Load(b.PtrAdd(amaxp, scols), cols.Lt(n), nil).Named("amax"), c)
	expertCastTile(b, c, w, q, k, n, ex, nil, scale)
	b.Store(b.PtrAdd(inv, scols), b.Div(1, scale), cols.Lt(n).And(b.ProgramID(1).Eq(0)))
}

// expertOutput is the fp8 output parameter: q[E,K,N] (layout=kn) or the
// transposed qt[E,N,K].
func expertOutput(b *ir.Builder, c *Call) *ir.Value {
	if c.Opt(opt.Layout) == "kn" {
		return b.Param("q", ir.FP8(c.Format))
	}
	return b.Param("qt", ir.FP8(c.Format))
}

// expertCastTile casts the tile of w[ex] from row k0 (expertTile's) by
// the columns' scales and stores it to q, or transposed to qt (layout=nk).
func expertCastTile(b *ir.Builder, c *Call, w, q, k, n, ex, k0, scale *ir.Value) {
	_, _, offs, mask := expertTile(b, c, k, n, k0)
	expertStoreTile(b, c, q, k, n, ex, k0, loadF32(b, w, offs, mask).Mul(scale.Row()))
}

// expertStoreTile stores the scaled tile x (expertTile's from row k0) as
// fp8 to q, or transposed to qt (layout=nk).
func expertStoreTile(b *ir.Builder, c *Call, q, k, n, ex, k0, x *ir.Value) {
	v := x.Cast(ir.FP8(c.Format)).Named("q")
	if c.Opt(opt.Layout) == "kn" {
		_, _, offs, mask := expertTile(b, c, k, n, k0)
		b.Store(b.PtrAdd(q, offs), v, mask)
	} else {
		rows, cols, _, _ := expertTile(b, c, k, n, k0)
		offs := ex.Mul(n).Add(cols.Col()).Mul(k).Add(rows.Row()).Named("offs_t")
		mask := cols.Lt(n).Col().And(rows.Lt(k).Row()).Named("mask_t")
		b.Store(b.PtrAdd(q, offs), v.Trans(), mask) // [BLOCK_N, BLOCK_K], coalesced along K
	}
}

// expertFusedKernel is both kernels in one (FUSED=1): the program of
// column block pn of w[e] reads its strip down K twice, for the amax and
// then for the cast. The second read finds the strip in L2 where the
// strips of the programs running at once fit there (short K or narrow
// blocks).
func expertFusedKernel(b *ir.Builder, c *Call) {
	w := b.Param("w", c.DType("w"))
	q := expertOutput(b, c)
	inv := b.Param("inv_scale", ir.F32)
	amaxp := b.Param("amax", ir.F32)
	k, n := b.Size("K"), b.Size("N")
	bk, bn := c.Knob(knob.BlockK), c.Knob(knob.BlockN)
	ex := b.ProgramID(2)
	cols := b.ProgramID(0).Mul(bn).Add(b.Arange(bn)).Named("cols")
	amax := expertAmaxRows(b, c, w, k, n, ex, cols, b.Int(0), bk).Reduce(0, ir.RMax).Named("amax")
	scale := scaleOf(b, amax, c)
	scols := ex.Mul(n).Add(cols).Named("scale_offs")
	b.Store(b.PtrAdd(amaxp, scols), amax, cols.Lt(n)) // as the two-pass kernels leave it
	b.For(0, k, bk, nil, func(k0 *ir.Value, _ []*ir.Value) []*ir.Value {
		expertCastTile(b, c, w, q, k, n, ex, k0.MultipleOf(bk), scale)
		return nil
	})
	b.Store(b.PtrAdd(inv, scols), b.Div(1, scale), cols.Lt(n))
}

// The grid axes of the grouped kernels' programs: column block, group,
// and program of its group (range of rows by rows). ORDER=1 puts a group's
// programs fastest, then the column blocks: the two-pass programs that run
// at once then take neighbouring tiles of a group, and qt's rows (T bytes
// apart) take runs of SPLIT tiles at a time instead of one tile each.
const (
	axisCol = iota
	axisGroup
	axisSplit
)

// groupedPID is the program's index along one of the grouped grid's axes.
func groupedPID(b *ir.Builder, c *Call, axis int) *ir.Value {
	if c.Knob(knob.Order) == 1 {
		return b.ProgramID([3]int{1, 2, 0}[axis])
	}
	return b.ProgramID(axis)
}

// groupRows loads group g's bounds from offsets and clamps them into
// [0, T], lo ≤ hi, so that no offsets whatsoever make a program touch
// memory outside its tensors; bad reports whether they needed it (or the
// last group does not end at T).
func groupRows(b *ir.Builder, c *Call, offsets, t, ne *ir.Value) (lo, hi, bad *ir.Value) {
	return groupRowsOf(b, offsets, t, ne, groupedPID(b, c, axisGroup))
}

// groupRowsOf is groupRows for group g.
func groupRowsOf(b *ir.Builder, offsets, t, ne, g *ir.Value) (lo, hi, bad *ir.Value) {
	first := g.Eq(0)
	prev := b.Where(first, b.Int(0), g.Sub(1)) // no address before offsets, even masked
	loRaw := b.Index(b.Load(b.PtrAdd(offsets, prev), g.Gt(0), 0)).Named("lo_raw")
	hiRaw := b.Index(b.Load(b.PtrAdd(offsets, g), nil, nil)).Named("hi_raw")
	lo = loRaw.Max(0).Min(t).Named("lo")
	hi = hiRaw.Max(lo).Min(t).Named("hi")
	bad = loRaw.Lt(0).Or(hiRaw.Lt(loRaw)).Or(hiRaw.Gt(t).Or(g.Eq(ne.Sub(1)).And(hiRaw.Ne(t)))).Named("bad")
	return lo, hi, bad
}

// groupTileStart is the first row of the program's first tile and the
// rows between its tiles: tiles aligned to BLOCK_T (so that stores along T
// start on vector boundaries), every SPLIT-th from the program's own; with
// byRows every tile.
func groupTileStart(b *ir.Builder, c *Call, lo *ir.Value, byRows bool) (start *ir.Value, step int) {
	bt, split := c.Knob(knob.BlockT), c.Knob(knob.Split)
	start = lo.Div(bt).Mul(bt)
	if byRows {
		split = 1
	} else {
		start = start.Add(groupedPID(b, c, axisSplit).Mul(bt))
	}
	return start.Named("t_start").MultipleOf(bt), bt * split
}

// groupTilesOfX runs body over the tiles of rows [lo, hi) this program
// takes (groupTileStart's), each tile of x (the program's column block,
// rows outside [lo, hi) masked) loaded for body as f32 and, with
// PREFETCH=1, the next one loaded before body works on this one
// (tileLoop).
func groupTilesOfX(b *ir.Builder, c *Call, x, lo, hi, k *ir.Value, byRows bool, inits []*ir.Value, body func(t0, xf *ir.Value, carried []*ir.Value) []*ir.Value) []*ir.Value {
	start, step := groupTileStart(b, c, lo, byRows)
	return groupTilesFrom(b, c, x, lo, hi, k, start, step, c.Knob(knob.BlockT), inits, body)
}

// groupTilesFrom is groupTilesOfX's loop over the tiles from row start,
// every step rows, start a multiple of align.
func groupTilesFrom(b *ir.Builder, c *Call, x, lo, hi, k, start *ir.Value, step, align int, inits []*ir.Value, body func(t0, xf *ir.Value, carried []*ir.Value) []*ir.Value) []*ir.Value {
	load := func(t0 *ir.Value, ahead bool) *ir.Value {
		rows, rmask := groupedRows(b, c, t0, lo, hi)
		if ahead {
			rows = rowsWithin(b, rows, hi)
		}
		cols := groupedCols(b, c)
		offs := rows.Col().Mul(k).Add(cols.Row()).Named("offs")
		mask := rmask.Col().And(cols.Lt(k).Row()).Named("mask")
		return b.Load(b.PtrAdd(x, offs), mask, nil)
	}
	return tileLoop(b, start, hi, step, align, c.Knob(knob.Prefetch) == 1, load, inits,
		func(t0, tile *ir.Value, carried []*ir.Value) []*ir.Value {
			return body(t0, tile.Cast(ir.F32).Named("xf"), carried)
		})
}

// groupedRows are a tile's rows from its first, and the mask of those in
// [lo, hi): built afresh for each access, so that each takes the layout
// its access wants.
func groupedRows(b *ir.Builder, c *Call, t0, lo, hi *ir.Value) (rows, ok *ir.Value) {
	rows = t0.Add(b.Arange(c.Knob(knob.BlockT))).Named("rows")
	return rows, rows.Ge(lo).And(rows.Lt(hi)).Named("row_ok")
}

func groupedCols(b *ir.Builder, c *Call) *ir.Value {
	bk := c.Knob(knob.BlockK)
	return groupedPID(b, c, axisCol).Mul(bk).Add(b.Arange(bk)).Named("cols")
}

// groupedAmaxRows is the loop of the program's tiles of its group's rows
// [lo, hi) and column block into a [BLOCK_T, BLOCK_K] accumulator.
func groupedAmaxRows(b *ir.Builder, c *Call, x, lo, hi, k *ir.Value, byRows bool) *ir.Value {
	acc := groupTilesOfX(b, c, x, lo, hi, k, byRows, []*ir.Value{b.Full(ir.F32, 0, c.Knob(knob.BlockT), c.Knob(knob.BlockK)).Named("amax_part")},
		func(_, xf *ir.Value, acc []*ir.Value) []*ir.Value {
			return []*ir.Value{acc[0].Max(xf.Abs())}
		})
	return acc[0]
}

func groupedAmaxKernel(b *ir.Builder, c *Call) {
	x := b.Param("x", c.DType("x"))
	offsets := b.Param("offsets", ir.I32)
	amax := b.Param("amax", ir.F32)
	status := b.Param("status", ir.I32)
	t, k, ne := b.Size("T"), b.Size("K"), b.Size("E")
	g := groupedPID(b, c, axisGroup)
	lo, hi, bad := groupRows(b, c, offsets, t, ne)
	// One program of each group reports it: the largest E - g is the
	// first bad group.
	b.AtomicMax(status, ne.Sub(g).Cast(ir.I32), bad.And(groupedPID(b, c, axisCol).Eq(0).And(groupedPID(b, c, axisSplit).Eq(0))), ir.Relaxed, ir.ScopeAgent)
	part := groupedAmaxRows(b, c, x, lo, hi, k, false).Reduce(0, ir.RMax).Named("amax_part")
	cols := groupedCols(b, c)
	// Relaxed is enough: the cast kernel reads amax after this launch ends.
	b.AtomicMax(b.PtrAdd(amax, g.Mul(k).Add(cols)), part, cols.Lt(k), ir.Relaxed, ir.ScopeAgent)
}

func groupedCastKernel(b *ir.Builder, c *Call) {
	x := b.Param("x", c.DType("x"))
	offsets := b.Param("offsets", ir.I32)
	qt := b.Param("qt", ir.FP8(c.Format))
	inv := b.Param("inv_scale", ir.F32)
	amaxp := b.Param("amax", ir.F32)
	t, k, ne := b.Size("T"), b.Size("K"), b.Size("E")
	g := groupedPID(b, c, axisGroup)
	lo, hi, _ := groupRows(b, c, offsets, t, ne)
	cols := groupedCols(b, c)
	scols := g.Mul(k).Add(cols).Named("scale_offs")
	scale := scaleOf(b, b.Load(b.PtrAdd(amaxp, scols), cols.Lt(k), nil).Named("amax"), c)
	groupedCastRows(b, c, x, qt, lo, hi, t, k, scale, false)
	b.Store(b.PtrAdd(inv, scols), b.Div(1, scale), cols.Lt(k).And(groupedPID(b, c, axisSplit).Eq(0)))
}

// groupedCastRows casts the program's tiles of its group's rows [lo, hi)
// and column block by the columns' scales and stores them transposed.
func groupedCastRows(b *ir.Builder, c *Call, x, qt, lo, hi, t, k, scale *ir.Value, byRows bool) {
	groupTilesOfX(b, c, x, lo, hi, k, byRows, nil, func(t0, xf *ir.Value, _ []*ir.Value) []*ir.Value {
		groupedStoreTile(b, c, qt, lo, hi, t, k, t0, xf, scale)
		return nil
	})
}

// groupedStoreTile casts the tile xf of rows from t0 by the columns'
// scales and stores its rows in [lo, hi) transposed.
func groupedStoreTile(b *ir.Builder, c *Call, qt, lo, hi, t, k, t0, xf, scale *ir.Value) {
	q := xf.Mul(scale.Row()).Cast(ir.FP8(c.Format)).Named("q")
	rows2, rmask2 := groupedRows(b, c, t0, lo, hi)
	cols2 := groupedCols(b, c)
	offsT := cols2.Col().Mul(t).Add(rows2.Row()).Named("offs_t")
	maskT := cols2.Lt(k).Col().And(rmask2.Row()).Named("mask_t")
	b.Store(b.PtrAdd(qt, offsT), q.Trans(), maskT) // [BLOCK_K, BLOCK_T], coalesced along T
}

// groupedFusedStart declares a fused kernel's arguments (FUSED=1 or 2)
// and finds its program's group g and rows [lo, hi), the first column
// block's program reporting bad offsets.
func groupedFusedStart(b *ir.Builder, c *Call) (x, qt, inv, amax, t, k, g, lo, hi *ir.Value) {
	x = b.Param("x", c.DType("x"))
	offsets := b.Param("offsets", ir.I32)
	qt = b.Param("qt", ir.FP8(c.Format))
	inv = b.Param("inv_scale", ir.F32)
	amax = b.Param("amax", ir.F32)
	status := b.Param("status", ir.I32)
	t, k, ne := b.Size("T"), b.Size("K"), b.Size("E")
	g = groupedPID(b, c, axisGroup)
	lo, hi, bad := groupRows(b, c, offsets, t, ne)
	b.AtomicMax(status, ne.Sub(g).Cast(ir.I32), bad.And(groupedPID(b, c, axisCol).Eq(0)), ir.Relaxed, ir.ScopeAgent)
	return x, qt, inv, amax, t, k, g, lo, hi
}

// groupedFusedKernel is both kernels in one (FUSED=1): the program of
// group g and column block pk reads its group's rows twice, for the amax
// and then for the cast. Its second read finds them in L2 where the
// strips of the programs running at once fit there (short groups): one
// launch, no atomics, about the copy's bytes from memory. Long groups are
// the two-pass kernels' (the tune decides).
func groupedFusedKernel(b *ir.Builder, c *Call) {
	x, qt, inv, amaxp, t, k, g, lo, hi := groupedFusedStart(b, c)
	amax := groupedAmaxRows(b, c, x, lo, hi, k, false).Reduce(0, ir.RMax).Named("amax")
	scale := scaleOf(b, amax, c)
	cols := groupedCols(b, c)
	scols := g.Mul(k).Add(cols).Named("scale_offs")
	b.Store(b.PtrAdd(amaxp, scols), amax, cols.Lt(k)) // as the two-pass kernels leave it
	groupedCastRows(b, c, x, qt, lo, hi, t, k, scale, false)
	b.Store(b.PtrAdd(inv, scols), b.Div(1, scale), cols.Lt(k))
}

// groupedHeldKernel is the fused kernel holding its group's first rows
// on chip (FUSED=2): the program of group g and column block pk copies
// the HOLD·BLOCK_T rows from its group's first (down to a multiple of 16)
// into LDS (stage: asynchronous on NVIDIA, so the copy runs while the
// program reads the rest), reads the rest of its group once for the amax,
// takes the held rows' amax from LDS, then casts the held rows from LDS
// and the rest by a second read. A group no longer than the held rows is
// read from memory once and never leaves the chip. On the H200 a
// hand-written probe of this design reached 87–89% of copy where every
// group fits; this kernel, bit-exact, reads x exactly once there too but
// issues about 1.8 times the probe's instructions and is slower than the
// defaults (probes/strip.cu, docs/performance.md): a schedule to choose,
// not a candidate.
func groupedHeldKernel(b *ir.Builder, c *Call) {
	x, qt, inv, amaxp, t, k, g, lo, hi := groupedFusedStart(b, c)
	bt, tiles := c.Knob(knob.BlockT), c.Knob(knob.Hold)
	held := bt * tiles
	// Rows from a multiple of 16, so that qt's stores start on vectors.
	start := lo.Div(16).Mul(16).Named("t_start").MultipleOf(16)
	rows := start.Add(b.Arange(held)).Named("held_rows")
	cols := groupedCols(b, c)
	st := b.Stage(b.PtrAdd(x, rows.Col().Mul(k).Add(cols.Row())),
		rows.Ge(lo).And(rows.Lt(hi)).Col().And(cols.Lt(k).Row())).Named("x_held")
	rest := start.Add(held).Named("rest_start").MultipleOf(16)
	acc := groupTilesFrom(b, c, x, lo, hi, k, rest, bt, 16, []*ir.Value{b.Full(ir.F32, 0, bt, c.Knob(knob.BlockK)).Named("amax_part")},
		func(_, xf *ir.Value, acc []*ir.Value) []*ir.Value {
			return []*ir.Value{acc[0].Max(xf.Abs())}
		})[0]
	// The held rows' amax from LDS (zeros where masked), after the rest's
	// loop so that their copy had its time.
	for h := 0; h < tiles; h++ {
		acc = acc.Max(b.Unstage(st, h*bt, bt).Cast(ir.F32).Abs())
	}
	amax := acc.Reduce(0, ir.RMax).Named("amax")
	scale := scaleOf(b, amax, c)
	scols := g.Mul(k).Add(cols).Named("scale_offs")
	b.Store(b.PtrAdd(amaxp, scols), amax, cols.Lt(k)) // as the two-pass kernels leave it
	for h := 0; h < tiles; h++ {
		t0 := start.Add(h * bt).MultipleOf(16)
		b.If(t0.Lt(hi), func() { // a group shorter than the held rows stores nothing past its end
			groupedStoreTile(b, c, qt, lo, hi, t, k, t0, b.Unstage(st, h*bt, bt).Cast(ir.F32).Named("xf"), scale)
		})
	}
	groupTilesFrom(b, c, x, lo, hi, k, rest, bt, 16, nil, func(t0, xf *ir.Value, _ []*ir.Value) []*ir.Value {
		groupedStoreTile(b, c, qt, lo, hi, t, k, t0, xf, scale)
		return nil
	})
	b.Store(b.PtrAdd(inv, scols), b.Div(1, scale), cols.Lt(k))
}

// The by-rows kernels (BY_ROWS=1): the program of column block pk and range
// ps (grid (pk, 0, ps), or (ps, pk, 0) with ORDER=1) takes the ps-th of
// SPLIT equal ranges of rows whatever the groups, and in it each group it
// meets in turn, so that no program's work follows its group's length.
// On the H200 (2026-12-01) that won at T=32768, E=16 (151 against 170 µs)
// and lost at T=65536, E=8 (778 against 752): the longest group's tail was
// not what bound the two-pass kernels there.

// groupedRange is the rows [r0, r1) of by-rows program ps: its share of
// x's tiles, cdiv(cdiv(T, BLOCK_T), SPLIT) of them (none past the end).
func groupedRange(b *ir.Builder, c *Call, t *ir.Value) (r0, r1 *ir.Value) {
	bt := c.Knob(knob.BlockT)
	per := t.CDiv(bt).CDiv(c.Knob(knob.Split)).Mul(bt).Named("range_rows")
	r0 = groupedPID(b, c, axisSplit).Mul(per).Min(t).Named("row0")
	r1 = r0.Add(per).Min(t).Named("row1")
	return r0, r1
}

// groupedOffsets loads offsets as a [BLOCK_E] tile: each group's end row
// (T past E, where no group is) and its start.
func groupedOffsets(b *ir.Builder, c *Call, offsets, t, ne *ir.Value) (gs, lo, hi *ir.Value) {
	gs = b.Arange(c.Knob(knob.BlockE)).Named("groups")
	in := gs.Lt(ne)
	hi = b.Where(in, b.Index(b.Load(b.PtrAdd(offsets, gs), in, 0)), t).Named("ends")
	prev := b.Where(gs.Eq(0), b.Int(0), gs.Sub(1)) // no address before offsets, even masked
	lo = b.Index(b.Load(b.PtrAdd(offsets, prev), in.And(gs.Gt(0)), 0)).Named("starts")
	return gs, lo, hi
}

// groupsMet are the groups [g0, g1) that rows [r0, r1) meet, from the
// groups' end rows (groupedOffsets'): the group of row r is the number of
// ends at most r (no search).
func groupsMet(b *ir.Builder, ends, ne, r0, r1 *ir.Value) (g0, g1 *ir.Value) {
	count := func(r *ir.Value) *ir.Value {
		return b.Where(ends.Le(r), b.Int(1), b.Int(0)).Reduce(0, ir.RSum)
	}
	g0 = count(r0).Min(ne).Named("g0")
	last := count(r1.Sub(1)).Add(1).Min(ne)
	g1 = b.Where(r0.Lt(r1), last, g0).Named("g1")
	return g0, g1
}

func groupedAmaxByRowsKernel(b *ir.Builder, c *Call) {
	x := b.Param("x", c.DType("x"))
	offsets := b.Param("offsets", ir.I32)
	amax := b.Param("amax", ir.F32)
	status := b.Param("status", ir.I32)
	t, k, ne := b.Size("T"), b.Size("K"), b.Size("E")
	// Program 0 reports the first bad group, E - g, as grouped_amax does.
	gs, lo, hi := groupedOffsets(b, c, offsets, t, ne)
	bad := lo.Lt(0).Or(hi.Lt(lo)).Or(hi.Gt(t).Or(gs.Eq(ne.Sub(1)).And(hi.Ne(t))))
	worst := b.Where(bad.And(gs.Lt(ne)), ne.Sub(gs), b.Int(0)).Reduce(0, ir.RMax).Named("worst")
	first := groupedPID(b, c, axisCol).Eq(0).And(groupedPID(b, c, axisSplit).Eq(0))
	b.AtomicMax(status, worst.Cast(ir.I32), first.And(worst.Gt(0)), ir.Relaxed, ir.ScopeAgent)
	r0, r1 := groupedRange(b, c, t)
	g0, g1 := groupsMet(b, hi, ne, r0, r1)
	b.For(g0, g1, 1, nil, func(g *ir.Value, _ []*ir.Value) []*ir.Value {
		glo, ghi, _ := groupRowsOf(b, offsets, t, ne, g)
		part := groupedAmaxRows(b, c, x, glo.Max(r0), ghi.Min(r1), k, true).Reduce(0, ir.RMax).Named("amax_part")
		cols := groupedCols(b, c)
		// Relaxed is enough: the cast kernel reads amax after this launch ends.
		b.AtomicMax(b.PtrAdd(amax, g.Mul(k).Add(cols)), part, cols.Lt(k), ir.Relaxed, ir.ScopeAgent)
		return nil
	})
}

func groupedCastByRowsKernel(b *ir.Builder, c *Call) {
	x := b.Param("x", c.DType("x"))
	offsets := b.Param("offsets", ir.I32)
	qt := b.Param("qt", ir.FP8(c.Format))
	inv := b.Param("inv_scale", ir.F32)
	amaxp := b.Param("amax", ir.F32)
	t, k, ne := b.Size("T"), b.Size("K"), b.Size("E")
	r0, r1 := groupedRange(b, c, t)
	_, _, ends := groupedOffsets(b, c, offsets, t, ne)
	g0, g1 := groupsMet(b, ends, ne, r0, r1)
	scaleOfGroup := func(g *ir.Value) (*ir.Value, *ir.Value) {
		cols := groupedCols(b, c)
		scols := g.Mul(k).Add(cols).Named("scale_offs")
		return scaleOf(b, b.Load(b.PtrAdd(amaxp, scols), cols.Lt(k), nil).Named("amax"), c), scols
	}
	b.For(g0, g1, 1, nil, func(g *ir.Value, _ []*ir.Value) []*ir.Value {
		glo, ghi, _ := groupRowsOf(b, offsets, t, ne, g)
		scale, _ := scaleOfGroup(g)
		groupedCastRows(b, c, x, qt, glo.Max(r0), ghi.Min(r1), t, k, scale, true)
		return nil
	})
	// Every group's inv_scale, empty ones too (which no range meets): each
	// program those of every SPLIT-th group from its own.
	b.For(groupedPID(b, c, axisSplit), ne, c.Knob(knob.Split), nil, func(g *ir.Value, _ []*ir.Value) []*ir.Value {
		scale, scols := scaleOfGroup(g)
		b.Store(b.PtrAdd(inv, scols), b.Div(1, scale), groupedCols(b, c).Lt(k))
		return nil
	})
}
