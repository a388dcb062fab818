package ops

import "github.com/fp8gen/fp8gen/ir"

// The SwiGLU kernels, in the DSL (swiglu.go states their numerics).

// expNegAbs is exp(−min(|g|, 104)), the target-independent form.
func expNegAbs(b *ir.Builder, g *ir.Value) *ir.Value {
	a := b.Min(b.Abs(g), siluClamp).Named("a")
	kf := b.Sub(b.Add(b.Mul(a, expLog2E), expRound), expRound).Named("kf") // rne(a·log2 e)
	r := b.Add(b.Sub(b.Mul(kf, expLn2Hi), a), b.Mul(kf, expLn2Lo)).Named("r")
	p := b.Splat(b.F32(float64(expTaylor[0])), r.Type.Shape...)
	for _, c := range expTaylor[1:] {
		p = b.Add(b.Mul(p, r), c)
	}
	k := b.Cast(kf, ir.I32).Named("k")
	lo := b.Shr(k, 1)
	pow2 := func(n *ir.Value) *ir.Value { return b.Bitcast(b.Shl(b.Sub(127, n), 23), ir.F32) }
	return b.Mul(b.Mul(p.Named("p"), pow2(lo)), pow2(b.Sub(k, lo))).Named("e")
}

// siluOf is silu(g) and the exp(−min(|g|, 104)) it used.
func siluOf(b *ir.Builder, g *ir.Value) (silu, e *ir.Value) {
	e = expNegAbs(b, g)
	neg := b.Mul(b.Where(b.Lt(g, -siluClamp), -siluClamp, g), e)
	return b.Div(b.Where(b.Ge(g, 0), g, neg), b.Add(e, 1)).Named("silu"), e
}

// swigluRows is a block of ROWS rows from r0: which exist, and each tile's
// gate and up offsets into h and its offsets into y (and its mask). With
// ahead the rows are clamped into [0, R) for the addresses: a block loaded
// ahead forms no address past the rows.
type swigluRows struct {
	rows, ok             *ir.Value
	gate, up, out, masks []*ir.Value
}

// swiglu is a kernel's builder, call and parameters (probs nil without
// the probs option).
type swiglu struct {
	b        *ir.Builder
	c        *Call
	h, probs *ir.Value
	dy       *ir.Value // the backward's
	rn, f    *ir.Value // the sizes R and F
}

func (k *swiglu) rowsAt(r0 *ir.Value, ahead bool) swigluRows {
	b, c := k.b, k.c
	nr, bf := c.Knob("ROWS"), c.Knob("BLOCK_F")
	rn, f := k.rn, k.f
	t := swigluRows{rows: b.Add(r0, b.Arange(nr)).Named("rows")}
	t.ok = b.Lt(t.rows, rn).Named("row_ok")
	at := t.rows
	if ahead {
		at = rowsWithin(b, t.rows, rn)
	}
	base := b.Mul(b.Col(at), b.Mul(f, 2)).Named("h_row")
	for i := range c.Knob("TILES") {
		cols := b.Add(i*bf, b.Arange(bf)).Named("cols")
		var g, u *ir.Value
		if c.Opt("layout") == "interleaved" {
			g = b.Add(base, b.Row(b.Mul(cols, 2)))
			u = b.Add(g, 1)
		} else {
			g = b.Add(base, b.Row(cols))
			u = b.Add(g, f)
		}
		t.gate, t.up = append(t.gate, g.Named("offs_g")), append(t.up, u.Named("offs_u"))
		t.out = append(t.out, b.Add(b.Mul(b.Col(at), f), b.Row(cols)).Named("offs_y"))
		t.masks = append(t.masks, b.And(b.Col(t.ok), b.Row(b.Lt(cols, f))).Named("mask"))
	}
	return t
}

// loadHalves loads each tile's gate and up (bf16), gate tiles then up
// tiles, then in the backward (dy set) the dy tiles.
func (k *swiglu) loadHalves(t swigluRows) []*ir.Value {
	b, h := k.b, k.h
	var out []*ir.Value
	for i, m := range t.masks {
		out = append(out, b.Load(b.PtrAdd(h, t.gate[i]), m, nil).Named("gate"))
	}
	for i, m := range t.masks {
		out = append(out, b.Load(b.PtrAdd(h, t.up[i]), m, nil).Named("up"))
	}
	if k.dy != nil {
		for i, m := range t.masks {
			out = append(out, b.Load(b.PtrAdd(k.dy, t.out[i]), m, nil).Named("dy"))
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
	nr := c.Knob("ROWS")
	r0 := b.Mul(b.ProgramID(0), nr)
	if c.Knob("PER_CU") == 0 {
		t := k.rowsAt(r0, false)
		return body(t, k.loadHalves(t), inits)
	}
	rn, step := k.rn, b.Mul(b.NumPrograms(0), nr).Named("step")
	if c.Knob("PREFETCH") == 0 {
		return b.For(r0, rn, step, inits, func(r0 *ir.Value, carried []*ir.Value) []*ir.Value {
			t := k.rowsAt(b.MultipleOf(r0, nr), false)
			return body(t, k.loadHalves(t), carried)
		})
	}
	first := k.loadHalves(k.rowsAt(b.MultipleOf(r0, nr), true))
	n := len(first)
	out := b.For(r0, rn, step, append(first, inits...), func(r0 *ir.Value, carried []*ir.Value) []*ir.Value {
		r0 = b.MultipleOf(r0, nr)
		next := k.loadHalves(k.rowsAt(b.MultipleOf(b.Add(r0, step), nr), true))
		return append(next, body(k.rowsAt(r0, false), carried[:n], carried[n:])...)
	})
	return out[n:]
}

// y is each tile's y = (silu(gate) · up) · prob in f32.
func (k *swiglu) y(t swigluRows, halves []*ir.Value) []*ir.Value {
	b, p := k.b, k.prob(t)
	n := len(t.masks)
	var ys []*ir.Value
	for i := range n {
		s, _ := siluOf(b, b.Cast(halves[i], ir.F32).Named("g"))
		y := b.Mul(s, b.Cast(halves[n+i], ir.F32).Named("u"))
		if p != nil {
			y = b.Mul(y, p)
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
	return k.b.Col(k.b.Load(k.b.PtrAdd(k.probs, t.rows), t.ok, nil).Named("prob"))
}

// rowAmax is max |y| along each row of the tiles.
func rowAmax(b *ir.Builder, ys []*ir.Value) *ir.Value {
	var amax *ir.Value
	for _, y := range ys {
		m := b.Reduce(b.Abs(y), 1, ir.RMax)
		if amax == nil {
			amax = m
		} else {
			amax = b.Max(amax, m)
		}
	}
	return amax.Named("amax")
}

// newSwiglu declares h and, with the probs option, probs; the kernel
// declares its other pointers, then the sizes (declareSizes).
func newSwiglu(b *ir.Builder, c *Call) *swiglu {
	k := &swiglu{b: b, c: c, h: b.Param("h", ir.BF16)}
	if c.Flag("probs") {
		k.probs = b.Param("probs", ir.F32)
	}
	return k
}

// declareSizes declares R and F.
func (k *swiglu) declareSizes() { k.rn, k.f = k.b.Size("R"), k.b.Size("F") }

// swigluKernel writes y: as bf16, or quantized with a scale per row or
// (quant=tensorwise, after swiglu_amax) the tensor's.
func swigluKernel(b *ir.Builder, c *Call) {
	var yp, inv, amaxp, scale *ir.Value
	quant := c.Opt("quant")
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
		b.Store(inv, b.Div(1, scale), b.Eq(b.ProgramID(0), 0))
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
				b.Store(b.PtrAdd(yp, t.out[i]), b.Cast(y, ir.BF16), t.masks[i])
				continue
			}
			if quant == "rowwise" {
				y = b.Mul(y, b.Col(s))
			} else {
				y = b.Mul(y, s)
			}
			b.Store(b.PtrAdd(yp, t.out[i]), b.Cast(y, ir.FP8(c.Format)), t.masks[i])
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
	acc := b.Full(ir.F32, 0, c.Knob("ROWS")).Named("amax_rows")
	acc = k.rowLoop([]*ir.Value{acc}, func(t swigluRows, halves, carried []*ir.Value) []*ir.Value {
		return []*ir.Value{b.Max(carried[0], rowAmax(b, k.y(t, halves)))}
	})[0]
	// Relaxed is enough: the cast kernel reads amax after this launch ends.
	b.AtomicMax(amaxp, b.Reduce(acc, 0, ir.RMax).Named("amax"), nil, ir.Relaxed, ir.ScopeAgent)
}

// dsiluOf is silu's derivative at g from its e: sig · (1 + gc · (1 − sig)).
func dsiluOf(b *ir.Builder, g, e *ir.Value) *ir.Value {
	den := b.Add(e, 1).Named("den")
	pos := b.Ge(g, 0)
	sig := b.Div(b.Where(pos, 1, e), den).Named("sig")
	rest := b.Div(b.Where(pos, e, 1), den).Named("sig_c") // 1 − sig without the cancellation
	gc := b.Where(b.Gt(g, siluClamp), siluClamp, b.Where(b.Lt(g, -siluClamp), -siluClamp, g))
	return b.Mul(sig, b.Add(b.Mul(gc, rest), 1)).Named("ds")
}

// swigluBwdKernel writes dh (bf16, or rowwise fp8 over the row's 2F
// gradients) and, with probs, d_probs: the row's Σ a·u, each tile's sum
// in the tile's tree order, the tiles' sums left to right.
func swigluBwdKernel(b *ir.Builder, c *Call) {
	rowwise := c.Opt("quant") == "rowwise"
	k := newSwiglu(b, c)
	k.dy = b.Param("dy", ir.BF16)
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
	k.rowLoop(nil, func(t swigluRows, halves, _ []*ir.Value) []*ir.Value {
		n := len(t.masks)
		p := k.prob(t)
		grads := make([]*ir.Value, 2*n) // d_gate tiles, then d_up tiles
		var dp *ir.Value
		for i := range n {
			g := b.Cast(halves[i], ir.F32).Named("g")
			u := b.Cast(halves[n+i], ir.F32).Named("u")
			dy := b.Cast(halves[2*n+i], ir.F32).Named("dyf")
			s, e := siluOf(b, g)
			a := b.Mul(dy, s).Named("a")
			dg, du := b.Mul(b.Mul(dy, u), dsiluOf(b, g, e)), a
			if p != nil {
				dg, du = b.Mul(dg, p), b.Mul(a, p)
				sum := b.Reduce(b.Mul(a, u), 1, ir.RSum)
				if dp == nil {
					dp = sum
				} else {
					dp = b.Add(dp, sum)
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
				v = b.Mul(v, b.Col(scale))
			}
			b.Store(b.PtrAdd(dh, offs[i]), b.Cast(v, out), t.masks[i%n])
		}
		if dp != nil {
			b.Store(b.PtrAdd(dprobs, t.rows), dp.Named("d_prob"), t.ok)
		}
		return nil
	})
}
