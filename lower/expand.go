package lower

import (
	"fmt"
	"slices"

	"github.com/fp8gen/fp8gen/ir"
)

// expand rewrites the layout phase into the lanes phase: each tile becomes
// the registers its layout gives every lane, and everything the layout
// implies is written out as lanes ops, so that the interpreter and the
// emitter share one program and neither knows a layout rule:
//
//   - thread coordinates: index arithmetic on tid, once, at the top;
//   - an element's coordinate: a per-register constant (regconst) plus the
//     lane's thread coordinate times the elements a lane holds;
//   - replicas: an owner predicate (coordinate < extent) in every store's
//     mask and every sum's fold, so that each element counts once;
//   - broadcast, expand_dims, trans: gather_regs with the register map;
//   - reduce: reduce_regs within a lane, a butterfly across the wave's
//     lanes, and partials of each wave through LDS (lds_store by one lane a
//     wave, barrier, lds_reduce over the waves in order, barrier);
//   - convert, rotate: a round trip through LDS at explicit byte addresses,
//     fenced by barriers, or a register map and a shuffle where the data
//     is already in the lane or the wave.
func expand(f *ir.Func, _ *Config) error {
	e := &expander{
		f: f, wave: f.Target.WaveSize, threads: f.Threads,
		m: map[*ir.Value]*ir.Value{}, uses: f.Uses(), tcs: map[string]*ir.Value{}, consts: map[string]*ir.Value{},
		pro: &ir.Block{},
	}
	// Each stage's region is its tile, rows unpadded (read along them in
	// 16-byte vectors), for the whole kernel; the round trips' scratch
	// follows.
	e.stages = map[*ir.Value]int{}
	for _, v := range f.Entry.Values {
		if v.Op == ir.OpStage {
			e.stages[v] = e.base
			e.base += (v.Type.Elems()*v.Type.DType.Bytes() + 15) &^ 15
		}
	}
	body := &ir.Block{}
	if err := e.block(f.Entry, body); err != nil {
		return err
	}
	// The prologue (tid, thread coordinates, constants) goes first, after
	// the arguments.
	entry := &ir.Block{}
	var rest []*ir.Value
	for _, v := range body.Values {
		if v.Op == ir.OpParam || v.Op == ir.OpSize {
			entry.Append(v)
		} else {
			rest = append(rest, v)
		}
	}
	for _, v := range e.pro.Values {
		entry.Append(v)
	}
	for _, v := range rest {
		entry.Append(v)
	}
	f.Entry = entry
	f.LDSBytes = e.base + e.lds
	return nil
}

type expander struct {
	f             *ir.Func
	wave, threads int
	m             map[*ir.Value]*ir.Value // tile value → its lanes value
	uses          map[*ir.Value]int
	cur           *ir.Block
	pro           *ir.Block // hoisted to the top of the kernel
	pos           ir.Pos
	tid           *ir.Value
	tcs           map[string]*ir.Value
	consts        map[string]*ir.Value
	lds           int               // LDS bytes: every round trip starts at base, fenced by barriers
	stages        map[*ir.Value]int // a stage's region: its byte offset
	base          int               // the round trips' start: past the stages' regions
}

func (e *expander) block(src, dst *ir.Block) error {
	saved := e.cur
	e.cur = dst
	defer func() { e.cur = saved }()
	for _, v := range src.Values {
		e.pos = v.Pos
		if err := e.value(v); err != nil {
			return err
		}
		if nv := e.m[v]; nv != nil && nv.Name == "" {
			nv.Name = v.Name
		}
	}
	return nil
}

// emit makes a lanes value at the current point.
func (e *expander) emit(op ir.Op, t ir.Type, attr ir.Attr, args ...*ir.Value) *ir.Value {
	v := e.f.NewValue(op, t, attr, args...)
	v.Pos = e.pos
	e.cur.Append(v)
	return v
}

// hoisted runs fn with values made in the prologue, which belongs to no
// source line.
func (e *expander) hoisted(fn func() *ir.Value) *ir.Value {
	saved, pos := e.cur, e.pos
	e.cur, e.pos = e.pro, ir.Pos{}
	defer func() { e.cur, e.pos = saved, pos }()
	return fn()
}

// c is a uniform constant, made once.
func (e *expander) c(d ir.DType, x int64) *ir.Value {
	key := fmt.Sprint(d, x)
	if v, ok := e.consts[key]; ok {
		return v
	}
	v := e.hoisted(func() *ir.Value { return e.emit(ir.OpConst, ir.Lanes(d, 0), ir.ConstAttr{Int: x}) })
	e.consts[key] = v
	return v
}

func (e *expander) i32(x int) *ir.Value { return e.c(ir.I32, int64(x)) }

// bin is a two-operand elementwise op with the broadcast of the lanes phase.
func (e *expander) bin(op ir.Op, x, y *ir.Value) *ir.Value {
	d := x.Type.DType
	if op.IsCompare() {
		d = ir.Bool
	}
	return e.emit(op, ir.Lanes(d, max(x.Type.Regs, y.Type.Regs)), nil, x, y)
}

// and is x && y, where nil stands for true.
func (e *expander) and(x, y *ir.Value) *ir.Value {
	switch {
	case x == nil:
		return y
	case y == nil:
		return x
	}
	return e.bin(ir.OpAnd, x, y)
}

// regs is a per-register constant, or a uniform one where all agree.
func (e *expander) regs(d ir.DType, c []int64) *ir.Value {
	same := true
	for _, x := range c {
		same = same && x == c[0]
	}
	if same {
		return e.c(d, c[0])
	}
	return e.emit(ir.OpRegConst, ir.Lanes(d, len(c)), ir.ConstsAttr{C: c})
}

func (e *expander) tidValue() *ir.Value {
	if e.tid == nil {
		e.tid = e.hoisted(func() *ir.Value { return e.emit(ir.OpTid, ir.Lanes(ir.I32, 1), nil) })
		e.tid.Name = "tid"
	}
	return e.tid
}

// laneWave is the lane's coordinate along base dim d within its wave and
// its wave's coordinate along d, for layout l.
func (e *expander) laneWave(l *ir.Layout, d int) (lane, wave *ir.Value) {
	key := fmt.Sprint(l.TPW, l.WPB, l.Order, d)
	if v, ok := e.tcs["l"+key]; ok {
		return v, e.tcs["w"+key]
	}
	tid, a := e.tidValue(), exprInts{e}
	lane = e.hoisted(func() *ir.Value { return ir.LaneCoord(l, a, tid, d) })
	wave = e.hoisted(func() *ir.Value { return ir.WaveCoord(l, a, tid, d) })
	e.tcs["l"+key], e.tcs["w"+key] = lane, wave
	return lane, wave
}

// exprInts writes the layout formulas (ir.LaneCoord and kin) as i32 code.
type exprInts struct{ e *expander }

func (x exprInts) Int(c int) *ir.Value          { return x.e.i32(c) }
func (x exprInts) Add(a, b *ir.Value) *ir.Value { return x.e.bin(ir.OpAdd, a, b) }
func (x exprInts) Mul(a, b *ir.Value) *ir.Value { return x.e.bin(ir.OpMul, a, b) }
func (x exprInts) Div(a, b *ir.Value) *ir.Value { return x.e.bin(ir.OpDiv, a, b) }
func (x exprInts) Rem(a, b *ir.Value) *ir.Value { return x.e.bin(ir.OpRem, a, b) }
func (x exprInts) And(a, b *ir.Value) *ir.Value { return x.e.bin(ir.OpAnd, a, b) }

// threadCoord is the lane's index along base dim d of layout l: its wave's
// index along d times the lanes along d, plus its lane's.
func (e *expander) threadCoord(l *ir.Layout, d int) *ir.Value {
	key := "t" + fmt.Sprint(l.TPW, l.WPB, l.Order, d)
	if v, ok := e.tcs[key]; ok {
		return v
	}
	lane, wave := e.laneWave(l, d)
	v := e.hoisted(func() *ir.Value { return ir.ThreadCoord(l, exprInts{e}, lane, wave, d) })
	v.Name = fmt.Sprintf("tc%d", d)
	e.tcs[key] = v
	return v
}

// raw is the unwrapped coordinate along base dim d of each register of a
// tile of type t: register r's constant part plus the thread coordinate
// times the elements a lane holds along d.
func (e *expander) raw(t ir.Type, d int) *ir.Value {
	return e.hoisted(func() *ir.Value { return e.rawHere(t, d) })
}

func (e *expander) rawHere(t ir.Type, d int) *ir.Value {
	l := t.Layout
	_, spt, cover, regs, stride := l.Geometry(t.Shape)
	n := l.Regs(t.Shape)
	c := make([]int64, n)
	for r := range c {
		c[r] = int64(ir.RegOffset((r/stride[d])%regs[d], spt[d], cover[d]))
	}
	reg := e.regs(ir.I32, c)
	var tc *ir.Value
	if l.Spread(d) {
		tc = e.threadCoord(l, d)
	}
	return ir.RawCoord(exprInts{e}, reg, tc, spt[d], l.Spread(d))
}

// coord is the coordinate along tile axis a of each register of t: the raw
// coordinate, wrapped where the layout covers more than the extent.
func (e *expander) coord(t ir.Type, a int) *ir.Value {
	return e.hoisted(func() *ir.Value { return e.coordHere(t, a) })
}

func (e *expander) coordHere(t ir.Type, a int) *ir.Value {
	d := t.Layout.BaseDim(a)
	extent, _, cover, _, _ := t.Layout.Geometry(t.Shape)
	return ir.WrapCoord(exprInts{e}, e.raw(t, d), extent[d], cover[d])
}

// owner is the predicate that a register holds the first copy of its
// element along every base dim not in skip; nil where every copy is first.
func (e *expander) owner(t ir.Type, skip ...int) *ir.Value {
	return e.hoisted(func() *ir.Value { return e.ownerHere(t, skip...) })
}

func (e *expander) ownerHere(t ir.Type, skip ...int) *ir.Value {
	extent, _, cover, _, _ := t.Layout.Geometry(t.Shape)
	var own *ir.Value
	for d := range extent {
		if extent[d] < cover[d] && !slices.Contains(skip, d) {
			own = e.and(own, e.bin(ir.OpLt, e.raw(t, d), e.i32(extent[d])))
		}
	}
	return own
}

// linear is the row-major index of each register's element in its tile,
// with rows pitch elements apart (rank 2).
func (e *expander) linear(t ir.Type, pitch int) *ir.Value {
	return e.hoisted(func() *ir.Value { return e.linearHere(t, pitch) })
}

func (e *expander) linearHere(t ir.Type, pitch int) *ir.Value {
	switch t.Rank() {
	case 0:
		return e.i32(0)
	case 1:
		return e.coord(t, 0)
	}
	return e.bin(ir.OpAdd, e.bin(ir.OpMul, e.coord(t, 0), e.i32(pitch)), e.coord(t, 1))
}

// bytes is a round trip's LDS byte address: index x times the element
// size, past the stages' regions.
func (e *expander) bytes(x *ir.Value, size int) *ir.Value {
	a := e.bin(ir.OpMul, x, e.i32(size))
	if e.base > 0 {
		a = e.bin(ir.OpAdd, a, e.i32(e.base))
	}
	return a
}

// thread is an address or predicate made of thread arithmetic alone: it
// goes to the prologue, shared by every use.
func (e *expander) thread(fn func() *ir.Value) *ir.Value { return e.hoisted(fn) }

// nregs is the register count of a tile value's lanes form.
func nregs(t ir.Type) int { return t.Layout.Regs(t.Shape) }

// lanesType is the lanes type of tile value v whose operands are args.
func lanesType(v *ir.Value, args []*ir.Value) ir.Type {
	if v.Type.Rank() > 0 {
		return ir.Lanes(v.Type.DType, nregs(v.Type))
	}
	n := 0
	for _, a := range args {
		n = max(n, a.Type.Regs)
	}
	return ir.Lanes(v.Type.DType, n)
}

// fit gives x exactly n registers: a uniform or one-register value is splat.
func (e *expander) fit(x *ir.Value, n int) *ir.Value {
	if x.Type.Regs == n {
		return x
	}
	if x.Type.Regs > 1 {
		panic(fmt.Sprintf("BUG: %d registers where %d are wanted: %v", x.Type.Regs, n, x.LongString()))
	}
	return e.emit(ir.OpSplat, ir.Lanes(x.Type.DType, n), nil, x)
}

func (e *expander) args(v *ir.Value) []*ir.Value {
	out := make([]*ir.Value, len(v.Args))
	for i, a := range v.Args {
		m, ok := e.m[a]
		if !ok {
			panic("BUG: expand: operand " + a.String() + " of " + v.LongString() + " not expanded")
		}
		out[i] = m
	}
	return out
}

func (e *expander) value(v *ir.Value) error {
	if v.Op.IsLeaf() {
		// Uniform scalars are the same in both phases.
		e.cur.Append(v)
		e.m[v] = v
		return nil
	}
	if r := expandRules.Of(v.Op); r != nil {
		return r(e, v)
	}
	if !v.Op.IsElementwise() {
		panic("BUG: expand has no rule for " + v.Op.Name())
	}
	return e.tile(v, func(args []*ir.Value) *ir.Value {
		attr := v.Attr
		if m, ok := attr.(*ir.MemAttr); ok {
			c := *m
			attr = &c
		}
		return e.emit(v.Op, lanesType(v, args), attr, args...)
	})
}

// expandRules is what expand makes of each op that is not a leaf nor
// elementwise over its operands' registers (filled in init: the rules
// expand blocks, which look rules up).
var expandRules ir.Rules[func(e *expander, v *ir.Value) error]

func init() {
	expandRules = ir.Rules[func(e *expander, v *ir.Value) error]{
		ir.OpFor: (*expander).loop,
		ir.OpIf: func(e *expander, v *ir.Value) error {
			nv := e.emit(ir.OpIf, ir.Type{}, nil, e.args(v)...)
			nv.Body = &ir.Block{Parent: nv}
			return e.block(v.Body, nv.Body)
		},
		ir.OpUnstage: func(e *expander, v *ir.Value) error {
			e.m[v] = e.unstage(v)
			return nil
		},
		ir.OpArange: tileRule(func(e *expander, v *ir.Value, _ []*ir.Value) *ir.Value {
			nv := e.coord(v.Type, 0)
			if v.Type.DType != ir.I32 {
				nv = e.emit(ir.OpCast, ir.Lanes(v.Type.DType, nv.Type.Regs), nil, nv)
			}
			return nv
		}),
		ir.OpSplat:      tileRule(func(e *expander, v *ir.Value, args []*ir.Value) *ir.Value { return e.fit(args[0], nregs(v.Type)) }),
		ir.OpExpandDims: unaryRule((*expander).remap),
		ir.OpBroadcast:  unaryRule((*expander).remap),
		ir.OpTrans:      unaryRule((*expander).remap),
		ir.OpRotate:     unaryRule((*expander).rotate),
		ir.OpReduce:     unaryRule((*expander).reduce),
		ir.OpStage: tileRule(func(e *expander, v *ir.Value, args []*ir.Value) *ir.Value {
			e.stage(v, args) // no registers: unstage reads the region
			return nil
		}),
		ir.OpConvert: tileRule(func(e *expander, v *ir.Value, args []*ir.Value) *ir.Value {
			return e.roundTrip(v.Args[0].Type, v.Type, args[0], func(t ir.Type) *ir.Value { return e.linear(t, pitchOf(t)) }, pitchOf(v.Type))
		}),
		ir.OpStore:  tileRule((*expander).store),
		ir.OpAtomic: tileRule((*expander).atomic),
		// Scalars: one lane performs them and the op holds the barrier.
		ir.OpSignal: tileRule(scalarRule),
		ir.OpWait:   tileRule(scalarRule),
		ir.OpForResult: tileRule(func(e *expander, v *ir.Value, args []*ir.Value) *ir.Value {
			return e.emit(ir.OpForResult, e.m[v.Args[0]].Body.Vars[1+v.Index()].Type, v.Attr, args...)
		}),
	}
}

func scalarRule(e *expander, v *ir.Value, args []*ir.Value) *ir.Value {
	return e.emit(v.Op, ir.Type{}, nil, args...)
}

// tileRule is a rule that makes v's value from its operands' values.
func tileRule(f func(e *expander, v *ir.Value, args []*ir.Value) *ir.Value) func(*expander, *ir.Value) error {
	return func(e *expander, v *ir.Value) error {
		return e.tile(v, func(args []*ir.Value) *ir.Value { return f(e, v, args) })
	}
}

// unaryRule is a tileRule of v's one operand.
func unaryRule(f func(e *expander, v, x *ir.Value) *ir.Value) func(*expander, *ir.Value) error {
	return tileRule(func(e *expander, v *ir.Value, args []*ir.Value) *ir.Value { return f(e, v, args[0]) })
}

// tile maps v to the value make makes of its operands' values.
func (e *expander) tile(v *ir.Value, make func(args []*ir.Value) *ir.Value) error {
	nv := make(e.args(v))
	if nv != nil && v.Type.Rank() > 0 && nv.Type.Regs < nregs(v.Type) {
		nv = e.fit(nv, nregs(v.Type)) // a tile holds all its registers until simplify
	}
	e.m[v] = nv
	return nil
}

// remap is broadcast, expand_dims or trans: registers relabelled. A layout
// places coordinate c in the same register of every lane that holds it, so
// the map is the same in every lane; it goes through tile coordinates
// because the operand may carry another layout that places elements alike.
func (e *expander) remap(v, x *ir.Value) *ir.Value {
	t, s := v.Type, v.Args[0].Type
	n := nregs(t)
	m := make([]int, n)
	for r := range m {
		c, _ := t.Layout.Elem(t.Shape, 0, r)
		m[r] = s.Layout.RegOf(s.Shape, sourceCoord.Of(v.Op)(v, c))
	}
	return e.gather(x, m)
}

// sourceCoord is, for each op remap lowers, the operand's coordinate of
// the result's element at c (c may be reused).
var sourceCoord = ir.Rules[func(v *ir.Value, c []int) []int]{
	ir.OpBroadcast: func(v *ir.Value, c []int) []int {
		for a, ext := range v.Args[0].Type.Shape {
			if ext == 1 {
				c[a] = 0
			}
		}
		return c
	},
	ir.OpTrans: func(_ *ir.Value, c []int) []int { return []int{c[1], c[0]} },
	ir.OpExpandDims: func(v *ir.Value, c []int) []int {
		return append(append([]int(nil), c[:v.Axis()]...), c[v.Axis()+1:]...)
	},
}

// gather is gather_regs, or x itself for the identity.
func (e *expander) gather(x *ir.Value, m []int) *ir.Value {
	ident := len(m) == x.Type.Regs
	for r, s := range m {
		ident = ident && r == s
	}
	if ident {
		return x
	}
	return e.emit(ir.OpGatherRegs, ir.Lanes(x.Type.DType, len(m)), ir.RegMapAttr{Map: m}, x)
}

// store adds the owner predicate to the mask, so that a replicated element
// is written once; a scalar is written by lane 0.
func (e *expander) store(v *ir.Value, args []*ir.Value) *ir.Value {
	mi := v.ArgIndex(ir.RoleMask)
	args[mi] = e.and(args[mi], e.writer(v.Ptr().Type))
	m := *v.Mem()
	return e.emit(ir.OpStore, ir.Type{}, &m, args...)
}

// writer is who writes an element of a tile of type t: its owners, or
// lane 0 for a scalar.
func (e *expander) writer(t ir.Type) *ir.Value {
	if t.Rank() == 0 {
		return e.thread(func() *ir.Value { return e.bin(ir.OpEq, e.tidValue(), e.i32(0)) })
	}
	return e.owner(t)
}

// atomic is performed by the owners of each element; where its result is
// used and other lanes hold the element too, the owner's old value goes to
// them through LDS.
func (e *expander) atomic(v *ir.Value, args []*ir.Value) *ir.Value {
	t := v.Ptr().Type
	w := e.writer(t)
	mi := v.ArgIndex(ir.RoleMask)
	args[mi] = e.and(args[mi], w)
	old := e.emit(ir.OpAtomic, lanesType(v, args), v.Attr, args...)
	if e.uses[v] == 0 || w == nil {
		return old
	}
	size := t.DType.Elem().Bytes()
	if t.Rank() == 0 {
		addr := e.i32(e.base)
		e.ldsWrite(addr, old, w, &ir.MemAttr{Vec: 1})
		e.lds = max(e.lds, size)
		ld := e.emit(ir.OpLDSLoad, ir.Lanes(old.Type.DType, old.Type.Regs), &ir.MemAttr{Vec: 1}, addr)
		e.emit(ir.OpBarrier, ir.Type{}, nil)
		return ld
	}
	return e.roundTrip(v.Type, v.Type, old, func(t ir.Type) *ir.Value { return e.linear(t, pitchOf(t)) }, pitchOf(v.Type))
}

// pitchOf is the row pitch, in elements, of a tile in an LDS round trip:
// 2-D rows padded by 4 bytes, so that a row is an odd number of words long
// and lanes walking down a column (the transposing write) fall in
// different banks, as do lanes reading words along rows.
func pitchOf(t ir.Type) int {
	p := t.Shape[len(t.Shape)-1]
	if t.Rank() == 2 {
		p += max(4/t.DType.Bytes(), 1)
	}
	return p
}

// ldsVec is how a lane moves its elements to or from LDS: as many
// consecutive ones at once as it holds along the last axis, which is
// contiguous in the buffer, up to one word (the row pitch keeps rows
// word-aligned, not more), and their registers' distance (1 unless the
// lane's registers run along another axis first: a transposed tile).
func ldsVec(t ir.Type) *ir.MemAttr { return ldsVecUpTo(t, 4) }

// ldsVecUpTo is ldsVec with vectors of up to max bytes.
func ldsVecUpTo(t ir.Type, limit int) *ir.MemAttr {
	l := t.Layout
	last := t.Rank() - 1
	if last < 0 {
		return &ir.MemAttr{Vec: 1}
	}
	d := l.BaseDim(last)
	_, spt, _, _, stride := l.Geometry(t.Shape)
	vec := max(1, min(spt[d], limit/t.DType.Bytes(), t.Shape[last]))
	if vec == 1 {
		return &ir.MemAttr{Vec: 1}
	}
	return &ir.MemAttr{Vec: vec, Stride: stride[d]}
}

// roundTrip moves x, of tile type from, through LDS into tile type to: the
// owners write each element at index(from), a barrier, every lane reads at
// index(to), a barrier so the buffer may be written again.
func (e *expander) roundTrip(from, to ir.Type, x *ir.Value, index func(ir.Type) *ir.Value, pitch int) *ir.Value {
	size := from.DType.Bytes()
	rows := 1
	if from.Rank() == 2 {
		rows = from.Shape[0]
	}
	e.lds = max(e.lds, rows*pitch*size)
	e.ldsWrite(e.thread(func() *ir.Value { return e.bytes(index(from), size) }), x, e.owner(from), ldsVec(from))
	addr := e.thread(func() *ir.Value { return e.bytes(index(to), size) })
	ld := e.emit(ir.OpLDSLoad, ir.Lanes(to.DType, nregs(to)), ldsVec(to), addr)
	e.emit(ir.OpBarrier, ir.Type{}, nil)
	return ld
}

// stage copies a staged tile's elements to its region: one lds_copy, each
// element by its owner, at its row-major index (rows unpadded).
func (e *expander) stage(v *ir.Value, args []*ir.Value) {
	t := v.Type
	size := t.DType.Bytes()
	off := e.stages[v]
	addr := e.thread(func() *ir.Value {
		return e.bin(ir.OpAdd, e.bin(ir.OpMul, e.linear(t, t.Shape[1]), e.i32(size)), e.i32(off))
	})
	own := e.owner(t)
	if own == nil {
		own = e.c(ir.Bool, 1)
	}
	c := *v.Mem()
	e.emit(ir.OpLDSCopy, ir.Type{}, &c, addr, e.fit(args[0], nregs(t)), args[1], own)
}

// unstage waits for the lane's copies, then a barrier shows every lane's,
// then reads rows r0 … of the staged region in the result's layout, in
// vectors of up to 16 bytes along the rows.
func (e *expander) unstage(v *ir.Value) *ir.Value {
	st, t := v.Args[0], v.Type
	size, cols := t.DType.Bytes(), t.Shape[1]
	e.emit(ir.OpAsyncWait, ir.Type{}, nil)
	e.emit(ir.OpBarrier, ir.Type{}, nil)
	idx := e.thread(func() *ir.Value { return e.bin(ir.OpMul, e.linear(t, cols), e.i32(size)) })
	r0 := e.m[v.Args[1]]
	if r0.Type.DType != ir.I32 { // LDS byte addresses are 32-bit
		r0 = e.emit(ir.OpCast, ir.Lanes(ir.I32, r0.Type.Regs), nil, r0)
	}
	row := e.bin(ir.OpAdd, e.bin(ir.OpMul, r0, e.i32(cols*size)), e.i32(e.stages[st]))
	addr := e.bin(ir.OpAdd, idx, row)
	return e.emit(ir.OpLDSLoad, ir.Lanes(t.DType, nregs(t)), stagedVec(t), addr)
}

// stagedVec is how a lane reads its elements of a staged region: as
// ldsVec, up to 16 bytes and the alignment the unpadded rows keep.
func stagedVec(t ir.Type) *ir.MemAttr {
	pitch := t.Shape[1] * t.DType.Bytes()
	return ldsVecUpTo(t, min(16, pitch&-pitch))
}

// ldsWrite writes x to LDS at addr where mask (nil: everywhere), then a
// barrier. A vector store's mask is the same over each vector: lowering
// writes owner predicates that are (the interpreter checks it).
func (e *expander) ldsWrite(addr, x, mask *ir.Value, m *ir.MemAttr) {
	if mask == nil {
		mask = e.c(ir.Bool, 1)
	}
	e.emit(ir.OpLDSStore, ir.Type{}, m, addr, x, mask)
	e.emit(ir.OpBarrier, ir.Type{}, nil)
}

// reduce expands reduce x [axis] into
//
//	a = reduce_regs x      each lane folds its registers along the axis
//	b = butterfly a        shuffles over the lanes of the wave along it
//	c = lds_reduce …       one partial per wave through LDS, folded in wave order
//
// A sum counts replicas along the axis as zero first.
func (e *expander) reduce(v, x *ir.Value) *ir.Value {
	r := v.Reduction()
	xt := v.Args[0].Type
	l := xt.Layout
	d := l.BaseDim(r.Axis)
	extent, _, cover, regs, stride := l.Geometry(xt.Shape)
	dt := xt.DType
	if r.Kind == ir.RSum && extent[d] < cover[d] {
		own := e.bin(ir.OpLt, e.raw(xt, d), e.i32(extent[d]))
		x = e.emit(ir.OpWhere, x.Type, nil, own, x, e.c(dt, int64(ir.Identity(r.Kind, dt))))
	}
	if regs[d] > 1 {
		n := x.Type.Regs / regs[d]
		x = e.emit(ir.OpReduceRegs, ir.Lanes(dt, n), ir.FoldAttr{Kind: r.Kind, N: regs[d], Stride: stride[d]}, x)
	}
	if l.TPW[d] > 1 {
		steps := 0
		for 1<<steps < l.TPW[d] {
			steps++
		}
		x = e.emit(ir.OpButterfly, x.Type, ir.ButterflyAttr{Kind: r.Kind, First: l.LaneStride(d), Steps: steps}, x)
	}
	if l.WPB[d] == 1 {
		return x
	}
	// One partial per wave: the lane at index 0 along d of each wave
	// writes slot (wave along d, element), once per element.
	rt := v.Type
	rt.Layout = l.Slice(r.Axis)
	lane, wave := e.laneWave(l, d)
	writer := e.thread(func() *ir.Value { return e.and(e.bin(ir.OpEq, lane, e.i32(0)), e.owner(rt, d)) })
	n := rt.Elems()
	size := dt.Bytes()
	pitch := 0
	if rt.Rank() == 2 {
		pitch = rt.Shape[1]
	}
	elem := e.linear(rt, pitch)
	slot := e.thread(func() *ir.Value { return e.bytes(e.bin(ir.OpAdd, e.bin(ir.OpMul, wave, e.i32(n)), elem), size) })
	e.lds = max(e.lds, l.WPB[d]*n*size)
	e.ldsWrite(slot, x, writer, &ir.MemAttr{Vec: 1})
	read := e.thread(func() *ir.Value { return e.bytes(elem, size) })
	out := e.emit(ir.OpLDSReduce, ir.Lanes(dt, x.Type.Regs), ir.LDSFoldAttr{Kind: r.Kind, Count: l.WPB[d], Stride: n * size}, read)
	e.emit(ir.OpBarrier, ir.Type{}, nil)
	return out
}

// loop expands a for: its carried values keep their registers across
// iterations (a scalar is carried as one register a lane).
func (e *expander) loop(v *ir.Value) error {
	args := e.args(v)
	lo, hi, step := args[0], args[1], args[2]
	_, carried := v.ForVars()
	inits := args[3:]
	for i, c := range carried {
		n := 1
		if c.Type.Rank() > 0 {
			n = nregs(c.Type)
		}
		inits[i] = e.fit(inits[i], n)
	}
	nv := e.emit(ir.OpFor, ir.Type{}, nil, append([]*ir.Value{lo, hi, step}, inits...)...)
	nv.Body = &ir.Block{Parent: nv}
	iv := e.f.NewValue(ir.OpLoopVar, ir.Lanes(lo.Type.DType, max(lo.Type.Regs, step.Type.Regs)), ir.IntAttr{N: 0})
	iv.Block, iv.Name = nv.Body, v.Body.Vars[0].Name
	nv.Body.Vars = append(nv.Body.Vars, iv)
	e.m[v.Body.Vars[0]] = iv
	for i, c := range carried {
		nc := e.f.NewValue(ir.OpLoopVar, inits[i].Type, ir.IntAttr{N: i + 1})
		nc.Block, nc.Name = nv.Body, c.Name
		nv.Body.Vars = append(nv.Body.Vars, nc)
		e.m[c] = nc
	}
	e.m[v] = nv
	if err := e.block(stripYield(v.Body), nv.Body); err != nil {
		return err
	}
	saved := e.cur
	e.cur = nv.Body
	y := v.Yield()
	ys := e.args(y)
	for i := range ys {
		ys[i] = e.fit(ys[i], inits[i].Type.Regs)
	}
	e.pos = y.Pos
	e.emit(ir.OpYield, ir.Type{}, nil, ys...)
	e.cur = saved
	return nil
}

// stripYield is a loop body without its closing yield.
func stripYield(b *ir.Block) *ir.Block {
	return &ir.Block{Values: b.Values[:len(b.Values)-1], Parent: b.Parent, Vars: b.Vars}
}

// rotate moves each element along the axis by the shift: within the lane
// where every lane holds its partners (a register map), by one shuffle
// where each partner is a fixed lane distance away in the same wave, and
// through LDS otherwise.
func (e *expander) rotate(v, x *ir.Value) *ir.Value {
	t := v.Type
	rot := v.Rotation()
	l := t.Layout
	n := nregs(t)
	src := func(tid, r int) []int {
		c, _ := l.Elem(t.Shape, tid, r)
		c[rot.Axis] = (c[rot.Axis] + rot.Shift) % t.Shape[rot.Axis]
		return c
	}
	m := make([]int, n)
	for r := range m {
		m[r] = l.RegOf(t.Shape, src(0, r))
	}
	holds := func(tid, r int, c []int) bool {
		got, _ := l.Elem(t.Shape, tid, r)
		return slices.Equal(got, c)
	}
	// everywhere reports whether, for every lane and register, lane ^ mask
	// holds the partner at the register the map gives.
	everywhere := func(mask int) bool {
		for tid := 0; tid < e.threads; tid++ {
			for r := 0; r < n; r++ {
				if !holds(tid^mask, m[r], src(tid, r)) {
					return false
				}
			}
		}
		return true
	}
	if everywhere(0) {
		return e.gather(x, m)
	}
	for mask := 1; mask < e.wave; mask++ {
		if holds(mask, m[0], src(0, 0)) && everywhere(mask) {
			return e.emit(ir.OpShflXor, ir.Lanes(t.DType, n), ir.LaneAttr{Mask: mask}, e.gather(x, m))
		}
	}
	rows := 1
	if t.Rank() == 2 {
		rows = t.Shape[0]
	}
	pitch := t.Shape[t.Rank()-1]
	index := func(shifted bool) func(ir.Type) *ir.Value {
		return func(tt ir.Type) *ir.Value {
			var cs []*ir.Value
			for a := 0; a < tt.Rank(); a++ {
				c := e.coord(tt, a)
				if shifted && a == rot.Axis {
					c = e.bin(ir.OpAnd, e.bin(ir.OpAdd, c, e.i32(rot.Shift)), e.i32(tt.Shape[a]-1))
				}
				cs = append(cs, c)
			}
			if len(cs) == 1 {
				return cs[0]
			}
			return e.bin(ir.OpAdd, e.bin(ir.OpMul, cs[0], e.i32(pitch)), cs[1])
		}
	}
	size := t.DType.Bytes()
	e.lds = max(e.lds, rows*pitch*size)
	from := e.thread(func() *ir.Value { return e.bytes(index(false)(t), size) })
	to := e.thread(func() *ir.Value { return e.bytes(index(true)(t), size) })
	e.ldsWrite(from, x, e.owner(t), &ir.MemAttr{Vec: 1})
	ld := e.emit(ir.OpLDSLoad, ir.Lanes(t.DType, n), &ir.MemAttr{Vec: 1}, to)
	e.emit(ir.OpBarrier, ir.Type{}, nil)
	return ld
}
