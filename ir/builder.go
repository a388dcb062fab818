package ir

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/fp8gen/fp8gen/fp8"
	"github.com/fp8gen/fp8gen/target"
)

// Builder is the DSL: a kernel is a Go function that calls a Builder's
// methods, Triton style, one program (block) computing on tiles whose shapes
// are compile-time constants. Misuse does not panic: the first error, with
// the Go source position of the offending call, is kept and returned by
// Func, and later calls return placeholder values so that the kernel's Go
// code runs to its end.
//
// Binary operations take *Value or Go numbers (which take the other
// operand's element type), and broadcast: a scalar is splatted, and axes of
// extent 1 stretch ([M,1] with [1,N] gives [M,N]). Ranks must match
// otherwise: Col and Row make the intent explicit.
//
// Index arithmetic — sizes, program ids, aranges, loop variables over them —
// has the builder's index type: i32 by default, i64 where a launch's tensors
// may exceed 2^31 elements (SetIndex). A kernel written with them works in
// either width.
type Builder struct {
	f   *Func
	cur *Block
	idx DType
	err error
}

// NewBuilder starts a kernel of the given name for target t.
func NewBuilder(name string, t *target.Target) *Builder {
	f := NewFunc(name, t)
	return &Builder{f: f, cur: f.Entry, idx: I32}
}

// SetIndex sets the index type (I32 or I64) before the kernel is written.
func (b *Builder) SetIndex(d DType) {
	if d != I32 && d != I64 {
		b.fail("index type %v: want i32 or i64", d)
		return
	}
	b.idx = d
}

// IndexType is the type of the kernel's index arithmetic.
func (b *Builder) IndexType() DType { return b.idx }

// Target is the hardware the kernel is built for: formats come from here.
func (b *Builder) Target() *target.Target { return b.f.Target }

// Func finishes the kernel: the first DSL error, or the verified function.
func (b *Builder) Func() (*Func, error) {
	if b.err != nil {
		return nil, b.err
	}
	if err := Verify(b.f, PhaseTile); err != nil {
		return nil, err
	}
	return b.f, nil
}

// Err is the first error so far.
func (b *Builder) Err() error { return b.err }

// callerPos is the first frame outside this package: the kernel's own line.
func callerPos() Pos {
	pcs := make([]uintptr, 16)
	n := runtime.Callers(2, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	for {
		fr, more := frames.Next()
		if !strings.HasPrefix(fr.Function, "github.com/fp8gen/fp8gen/ir.") {
			return Pos{File: filepath.Base(fr.File), Line: fr.Line}
		}
		if !more {
			return Pos{}
		}
	}
}

func (b *Builder) fail(format string, args ...any) *Value {
	if b.err == nil {
		p := callerPos()
		b.err = fmt.Errorf("%s:%d: %s", p.File, p.Line, fmt.Sprintf(format, args...))
	}
	return b.placeholder()
}

func (b *Builder) placeholder() *Value {
	v := b.f.NewValue(OpConst, Scalar(F32), ConstAttr{})
	v.b = b
	return v
}

// add checks a new value and appends it to the current block.
func (b *Builder) add(v *Value) *Value {
	if b.err != nil {
		return b.placeholder()
	}
	v.Pos = callerPos()
	v.b = b
	for _, a := range v.Args {
		if a.Block == nil && a.Op != OpLoopVar {
			return b.fail("%s: operand %v comes from an earlier error or another kernel", v.Op.Name(), a)
		}
	}
	c := &checker{phase: PhaseTile}
	if err := c.value(v); err != nil {
		return b.fail("%s: %v", v.Op.Name(), err)
	}
	b.cur.Append(v)
	return v
}

func (b *Builder) val(op Op, t Type, attr Attr, args ...*Value) *Value {
	return b.add(b.f.NewValue(op, t, attr, args...))
}

// Param declares a pointer argument.
func (b *Builder) Param(name string, elem DType) *Value {
	if elem.K == KPtr || elem.K == KBool || elem.K == KInvalid {
		return b.fail("param %q: element type %v cannot be in memory", name, elem)
	}
	return b.param(OpParam, name, PtrTo(elem))
}

// Size declares an integer argument of the index type: a problem size
// known only at run time.
func (b *Builder) Size(name string) *Value { return b.param(OpSize, name, b.idx) }

func (b *Builder) param(op Op, name string, d DType) *Value {
	if _, err := b.f.Param(name); err == nil {
		return b.fail("parameter %q declared twice", name)
	}
	if b.cur != b.f.Entry {
		return b.fail("parameter %q declared inside a loop or if", name)
	}
	v := b.f.NewValue(op, Scalar(d), NameAttr{name})
	v.Name = name
	v = b.add(v)
	if b.err == nil {
		b.f.Params = append(b.f.Params, v)
	}
	return v
}

// ProgramID is this program's index along grid axis 0, 1 or 2.
func (b *Builder) ProgramID(axis int) *Value {
	return b.val(OpProgramID, Scalar(b.idx), AxisAttr{axis})
}

// NumPrograms is the grid's extent along axis.
func (b *Builder) NumPrograms(axis int) *Value {
	return b.val(OpNumPrograms, Scalar(b.idx), AxisAttr{axis})
}

// Const is a scalar constant of type d.
func (b *Builder) Const(d DType, x float64) *Value {
	var a ConstAttr
	if d.IsFloat() {
		a.Float = x
	} else {
		a.Int = int64(x)
		if float64(a.Int) != x {
			return b.fail("const %v is not an integer of type %v", x, d)
		}
		if d == I32 && (a.Int < -1<<31 || a.Int >= 1<<31) || d == Bool && a.Int != 0 && a.Int != 1 {
			return b.fail("const %v does not fit in %v", x, d)
		}
	}
	return b.val(OpConst, Scalar(d), a)
}

// F32 is an f32 constant.
func (b *Builder) F32(x float64) *Value { return b.Const(F32, x) }

// I32 is an i32 constant.
func (b *Builder) I32(x int) *Value { return b.Const(I32, float64(x)) }

// Int is a constant of the index type.
func (b *Builder) Int(x int) *Value { return b.Const(b.idx, float64(x)) }

// FP8Max is the largest finite value of the format, as f32.
func (b *Builder) FP8Max(f *fp8.Format) *Value { return b.F32(float64(f.Max)) }

// Full is a tile of the given shape filled with x.
func (b *Builder) Full(d DType, x float64, shape ...int) *Value {
	return b.Splat(b.Const(d, x), shape...)
}

// Arange is the tile 0, 1, …, n-1 of the index type; n must be a power of two.
func (b *Builder) Arange(n int) *Value {
	if n <= 0 || n&(n-1) != 0 {
		return b.fail("arange(%d): the extent must be a power of two", n)
	}
	return b.val(OpArange, Tile(b.idx, n), IntAttr{n})
}

// Splat copies a scalar into every element of a tile.
func (b *Builder) Splat(x *Value, shape ...int) *Value {
	return b.val(OpSplat, Tile(x.Type.DType, shape...), nil, x)
}

// ExpandDims inserts an axis of extent 1 at axis.
func (b *Builder) ExpandDims(x *Value, axis int) *Value {
	if x.Type.Rank() == 0 {
		return b.fail("expand_dims of a scalar: use Splat or Full to make a tile")
	}
	if axis < 0 || axis > x.Type.Rank() || x.Type.Rank() >= 2 {
		return b.fail("expand_dims(axis %d) of a rank-%d tile: tiles have rank 1 or 2", axis, x.Type.Rank())
	}
	s := append([]int(nil), x.Type.Shape[:axis]...)
	s = append(s, 1)
	s = append(s, x.Type.Shape[axis:]...)
	return b.val(OpExpandDims, Tile(x.Type.DType, s...), AxisAttr{axis}, x)
}

// Col makes a column [n,1] of a 1-D tile [n].
func (b *Builder) Col(x *Value) *Value { return b.ExpandDims(x, 1) }

// Row makes a row [1,n] of a 1-D tile [n].
func (b *Builder) Row(x *Value) *Value { return b.ExpandDims(x, 0) }

// BroadcastTo stretches axes of extent 1 (or a scalar) to shape.
func (b *Builder) BroadcastTo(x *Value, shape ...int) *Value {
	if x.Type.Rank() == 0 {
		return b.Splat(x, shape...)
	}
	if SameShape(x.Type, Tile(x.Type.DType, shape...)) {
		return x
	}
	return b.val(OpBroadcast, Tile(x.Type.DType, shape...), nil, x)
}

// operand turns a Go number into a constant of like's element type.
func (b *Builder) operand(x any, like DType) *Value {
	switch x := x.(type) {
	case *Value:
		return x
	case int:
		return b.Const(like, float64(x))
	case int64:
		return b.Const(like, float64(x))
	case float64:
		return b.Const(like, x)
	case float32:
		return b.Const(like, float64(x))
	}
	return b.fail("operand of type %T: want *ir.Value or a number", x)
}

// broadcastPair gives two values one shape.
func (b *Builder) broadcastPair(x, y *Value) (*Value, *Value) {
	xs, ys := x.Type.Shape, y.Type.Shape
	switch {
	case SameShape(x.Type, y.Type):
		return x, y
	case len(xs) == 0:
		return b.Splat(x, ys...), y
	case len(ys) == 0:
		return x, b.Splat(y, xs...)
	case len(xs) != len(ys):
		b.fail("shapes %v and %v have different ranks: use Col or Row to say which axis to add", xs, ys)
		return x, y
	}
	out := make([]int, len(xs))
	for i := range xs {
		switch {
		case xs[i] == ys[i] || ys[i] == 1:
			out[i] = xs[i]
		case xs[i] == 1:
			out[i] = ys[i]
		default:
			b.fail("shapes %v and %v do not broadcast: axis %d is %d and %d", xs, ys, i, xs[i], ys[i])
			return x, y
		}
	}
	return b.BroadcastTo(x, out...), b.BroadcastTo(y, out...)
}

// values turns two operands (at least one a *Value) into values.
func (b *Builder) values(what string, x, y any) (*Value, *Value, bool) {
	xv, xok := x.(*Value)
	yv, yok := y.(*Value)
	switch {
	case xok && !yok:
		yv = b.operand(y, xv.Type.DType)
	case yok && !xok:
		xv = b.operand(x, yv.Type.DType)
	case !xok && !yok:
		b.fail("%s of two Go numbers: at least one operand must be a value", what)
		return nil, nil, false
	}
	if b.err != nil {
		return nil, nil, false
	}
	return xv, yv, true
}

func (b *Builder) binary(op Op, x, y any) *Value {
	xv, yv, ok := b.values(op.Name(), x, y)
	if !ok {
		return b.placeholder()
	}
	xv, yv = b.broadcastPair(xv, yv)
	t := xv.Type
	if op.IsCompare() {
		t = t.With(Bool)
	}
	return b.val(op, Tile(t.DType, t.Shape...), nil, xv, yv)
}

func (b *Builder) Add(x, y any) *Value  { return b.binary(OpAdd, x, y) }
func (b *Builder) Sub(x, y any) *Value  { return b.binary(OpSub, x, y) }
func (b *Builder) Mul(x, y any) *Value  { return b.binary(OpMul, x, y) }
func (b *Builder) Div(x, y any) *Value  { return b.binary(OpDiv, x, y) }
func (b *Builder) Rem(x, y any) *Value  { return b.binary(OpRem, x, y) }
func (b *Builder) Max(x, y any) *Value  { return b.binary(OpMax, x, y) }
func (b *Builder) Min(x, y any) *Value  { return b.binary(OpMin, x, y) }
func (b *Builder) And(x, y any) *Value  { return b.binary(OpAnd, x, y) }
func (b *Builder) Or(x, y any) *Value   { return b.binary(OpOr, x, y) }
func (b *Builder) Xor(x, y any) *Value  { return b.binary(OpXor, x, y) }
func (b *Builder) Shl(x, y any) *Value  { return b.binary(OpShl, x, y) }
func (b *Builder) Shr(x, y any) *Value  { return b.binary(OpShr, x, y) }
func (b *Builder) ShrU(x, y any) *Value { return b.binary(OpShrU, x, y) }
func (b *Builder) Lt(x, y any) *Value   { return b.binary(OpLt, x, y) }
func (b *Builder) Le(x, y any) *Value   { return b.binary(OpLe, x, y) }
func (b *Builder) Gt(x, y any) *Value   { return b.binary(OpGt, x, y) }
func (b *Builder) Ge(x, y any) *Value   { return b.binary(OpGe, x, y) }
func (b *Builder) Eq(x, y any) *Value   { return b.binary(OpEq, x, y) }
func (b *Builder) Ne(x, y any) *Value   { return b.binary(OpNe, x, y) }

// CDiv is ⌈x / y⌉ for non-negative integers.
func (b *Builder) CDiv(x, y any) *Value {
	xv, yv, ok := b.values("cdiv", x, y)
	if !ok {
		return b.placeholder()
	}
	return b.Div(b.Add(xv, b.Sub(yv, 1)), yv)
}

func (b *Builder) unary(op Op, x *Value) *Value { return b.val(op, x.Type, nil, x) }

func (b *Builder) Abs(x *Value) *Value       { return b.unary(OpAbs, x) }
func (b *Builder) Neg(x *Value) *Value       { return b.unary(OpNeg, x) }
func (b *Builder) Rsqrt(x *Value) *Value     { return b.unary(OpRsqrt, x) }
func (b *Builder) Pow2Floor(x *Value) *Value { return b.unary(OpPow2Floor, x) }

// Cast converts to d; to FP8 it rounds to nearest even and saturates.
func (b *Builder) Cast(x *Value, d DType) *Value {
	if x.Type.DType == d {
		return x
	}
	return b.val(OpCast, Tile(d, x.Type.Shape...), nil, x)
}

// Index casts an integer value to the index type.
func (b *Builder) Index(x *Value) *Value { return b.Cast(x, b.idx) }

// Bitcast reinterprets the bits of f32 as i32 or of i32 as f32.
func (b *Builder) Bitcast(x *Value, d DType) *Value {
	return b.val(OpBitcast, Tile(d, x.Type.Shape...), nil, x)
}

// Where picks x where c holds, y elsewhere.
func (b *Builder) Where(c *Value, x, y any) *Value {
	xv, yv, ok := b.values("where", x, y)
	if !ok {
		return b.placeholder()
	}
	xv, yv = b.broadcastPair(xv, yv)
	c, xv = b.broadcastPair(c, xv)
	c, yv = b.broadcastPair(c, yv)
	return b.val(OpWhere, Tile(xv.Type.DType, xv.Type.Shape...), nil, c, xv, yv)
}

// FMA is x·y + z rounded once, as every target's fused multiply-add (f32;
// plain Mul and Add round apart, and no back end contracts them).
func (b *Builder) FMA(x, y, z any) *Value {
	xv, yv, ok := b.values("fma", x, y)
	if !ok {
		return b.placeholder()
	}
	zv := b.operand(z, xv.Type.DType)
	if b.err != nil {
		return b.placeholder()
	}
	xv, yv = b.broadcastPair(xv, yv)
	xv, zv = b.broadcastPair(xv, zv)
	xv, yv = b.broadcastPair(xv, yv)
	return b.val(OpFMA, Tile(xv.Type.DType, xv.Type.Shape...), nil, xv, yv, zv)
}

// PtrAdd advances pointer p by offs elements, broadcasting p.
func (b *Builder) PtrAdd(p *Value, offs any) *Value {
	o := b.operand(offs, b.idx)
	if b.err != nil {
		return b.placeholder()
	}
	p, o = b.broadcastPair(p, o)
	return b.val(OpPtrAdd, Tile(p.Type.DType, p.Type.Shape...), nil, p, o)
}

// MultipleOf asserts that every element of the integer x is a multiple of
// n (a power of two), as Triton's multiple_of: offsets built from it may
// then be accessed as aligned vectors. The interpreter checks the claim.
func (b *Builder) MultipleOf(x *Value, n int) *Value {
	if a, ok := x.Attr.(AssumeAttr); ok && x.Op == OpAssume && n > 0 && a.Div%n == 0 && a.Contig == 1 {
		return x // already asserted: a second hint adds nothing
	}
	return b.val(OpAssume, x.Type, AssumeAttr{Div: n, Contig: 1}, x)
}

// MaxContiguous asserts that x's last axis runs in groups of n consecutive
// values (Triton's max_contiguous). The interpreter checks it where a
// vector access relies on it.
func (b *Builder) MaxContiguous(x *Value, n int) *Value {
	if x.Type.Rank() == 0 {
		return b.fail("max_contiguous of a scalar")
	}
	return b.val(OpAssume, x.Type, AssumeAttr{Div: 1, Contig: n}, x)
}

// mask fills in a default mask (all true) shaped like like.
func (b *Builder) mask(m *Value, like *Value) *Value {
	if m == nil {
		m = b.Const(Bool, 1)
	}
	_, m = b.broadcastPair(like, m)
	return m
}

// Load reads p where mask holds (nil: everywhere) and yields other
// (nil: zero) elsewhere.
func (b *Builder) Load(p, mask *Value, other any) *Value {
	if other == nil {
		other = 0
	}
	return b.read(OpLoad, p, mask, other)
}

// read is a load or a stage (op) of p where mask holds, other elsewhere.
func (b *Builder) read(op Op, p, mask *Value, other any) *Value {
	if p.Type.DType.K != KPtr {
		return b.fail("%s from %v: want a pointer tile", op.Name(), p.Type.DType)
	}
	o := b.operand(other, p.Type.DType.Elem())
	if b.err != nil {
		return b.placeholder()
	}
	_, o = b.broadcastPair(p, o)
	return b.val(op, Tile(p.Type.DType.Elem(), p.Type.Shape...), &MemAttr{Vec: 1}, p, b.mask(mask, p), o)
}

// LoadOnce is Load for data the op reads no more after this: the target
// may let its lines leave the cache first (MemAttr.EvictFirst), so that
// data read again stays.
func (b *Builder) LoadOnce(p, mask *Value, other any) *Value {
	v := b.Load(p, mask, other)
	if m, ok := v.Attr.(*MemAttr); ok {
		m.EvictFirst = true
	}
	return v
}

// LoadSpread is Load of a 1-D tile whose elements go over the block's
// lanes in order (MemAttr.Spread), for a vector that is worked on before
// it is broadcast into a 2-D tile: the work is then not repeated in every
// lane of the tile's rows, and the broadcast goes through LDS.
func (b *Builder) LoadSpread(p, mask *Value, other any) *Value {
	if p.Type.Rank() != 1 {
		return b.fail("spread load of a %d-D tile: want a 1-D one", p.Type.Rank())
	}
	v := b.Load(p, mask, other)
	if m, ok := v.Attr.(*MemAttr); ok {
		m.Spread = true
	}
	return v
}

// Stage reads p where mask holds (nil: everywhere; 0 elsewhere) into a
// region of LDS of its own, asynchronously where the target can (cp.async
// on NVIDIA): the registers are free while the copy runs and after it.
// Unstage reads the rows back, as often as needed. A stage belongs at the
// kernel's top level; only unstage may use it.
func (b *Builder) Stage(p, mask *Value) *Value {
	if p.Type.DType.K == KPtr { // else read says so
		if r := p.Type.Rank(); r != 2 {
			return b.fail("stage of a %d-D tile: want a 2-D one", r)
		}
		if b.cur != b.f.Entry {
			return b.fail("stage inside a loop or if: a stage belongs at the kernel's top level")
		}
	}
	return b.read(OpStage, p, mask, 0)
}

// Unstage reads rows r0 … r0+rows-1 of staged tile st (all its columns)
// back from LDS, once its copies are done.
func (b *Builder) Unstage(st *Value, r0 any, rows int) *Value {
	if st.Op != OpStage {
		return b.fail("unstage of a %s: want a stage", st.Op.Name())
	}
	if rows < 1 || rows > st.Type.Shape[0] || rows&(rows-1) != 0 {
		return b.fail("unstage of %d rows of a %d-row stage: want a power of two up to it", rows, st.Type.Shape[0])
	}
	r := b.operand(r0, b.idx)
	if b.err != nil {
		return b.placeholder()
	}
	return b.val(OpUnstage, Tile(st.Type.DType, rows, st.Type.Shape[1]), IntAttr{rows}, st, r)
}

// Store writes x to p where mask holds (nil: everywhere).
func (b *Builder) Store(p *Value, x any, mask *Value) {
	if p.Type.DType.K != KPtr {
		b.fail("store to %v: want a pointer tile", p.Type.DType)
		return
	}
	xv := b.operand(x, p.Type.DType.Elem())
	if b.err != nil {
		return
	}
	p, xv = b.broadcastPair(p, xv)
	b.val(OpStore, Type{}, &MemAttr{Vec: 1}, p, xv, b.mask(mask, p))
}

// AtomicMax does an atomic maximum (IEEE maxNum for floats) at p with the
// given memory order and scope, and returns the values p held before (0
// where mask is off).
func (b *Builder) AtomicMax(p *Value, x any, mask *Value, o MemOrder, s MemScope) *Value {
	return b.atomic(RMax, p, x, mask, o, s)
}

// AtomicAdd does an atomic addition at p and returns the old values.
func (b *Builder) AtomicAdd(p *Value, x any, mask *Value, o MemOrder, s MemScope) *Value {
	return b.atomic(RSum, p, x, mask, o, s)
}

func (b *Builder) atomic(k ReduceKind, p *Value, x any, mask *Value, o MemOrder, s MemScope) *Value {
	if p.Type.DType.K != KPtr {
		return b.fail("atomic %v on %v: want a pointer tile", k, p.Type.DType)
	}
	xv := b.operand(x, p.Type.DType.Elem())
	if b.err != nil {
		return b.placeholder()
	}
	p, xv = b.broadcastPair(p, xv)
	return b.val(OpAtomic, Tile(xv.Type.DType, xv.Type.Shape...), AtomicAttr{Kind: k, Order: o, Scope: s}, p, xv, b.mask(mask, p))
}

// Reduce folds axis of x with kind; the result has that axis removed.
// A sum's association follows the schedule (see the ops' determinism
// contract): the same schedule gives the same bits on every back end.
func (b *Builder) Reduce(x *Value, axis int, kind ReduceKind) *Value {
	if axis < 0 || axis >= x.Type.Rank() {
		return b.fail("reduce over axis %d of a rank-%d tile", axis, x.Type.Rank())
	}
	s := append(append([]int(nil), x.Type.Shape[:axis]...), x.Type.Shape[axis+1:]...)
	return b.val(OpReduce, Tile(x.Type.DType, s...), ReduceAttr{Axis: axis, Kind: kind}, x)
}

// Trans transposes a 2-D tile.
func (b *Builder) Trans(x *Value) *Value {
	if x.Type.Rank() != 2 {
		return b.fail("trans of a rank-%d tile: want rank 2", x.Type.Rank())
	}
	return b.val(OpTrans, Tile(x.Type.DType, x.Type.Shape[1], x.Type.Shape[0]), nil, x)
}

// Rotate moves elements along axis: element i takes element (i + shift)
// mod n. Rotating a head of D by D/2 pairs each element with its RoPE
// partner; lowering moves the data within a lane, by shuffles or through LDS.
func (b *Builder) Rotate(x *Value, axis, shift int) *Value {
	if axis < 0 || axis >= x.Type.Rank() {
		return b.fail("rotate along axis %d of a rank-%d tile", axis, x.Type.Rank())
	}
	n := x.Type.Shape[axis]
	return b.val(OpRotate, x.Type, RotateAttr{Axis: axis, Shift: ((shift % n) + n) % n}, x)
}

// For runs body for i = lo, lo+step, … while i < hi (integer scalars, the
// same in every lane of the program). The body receives the induction
// variable and the carried values (initially inits) and returns their next
// values; For returns the carried values after the loop.
func (b *Builder) For(lo, hi, step any, inits []*Value, body func(i *Value, carried []*Value) []*Value) []*Value {
	like := b.idx
	for _, x := range []any{lo, hi, step} {
		if v, ok := x.(*Value); ok {
			like = v.Type.DType
			break
		}
	}
	args := []*Value{b.operand(lo, like), b.operand(hi, like), b.operand(step, like)}
	args = append(args, inits...)
	if b.err != nil {
		return b.placeholders(len(inits))
	}
	loop := b.f.NewValue(OpFor, Type{}, nil, args...)
	loop.Pos = callerPos()
	loop.Body = &Block{Parent: loop}
	iv := b.f.NewValue(OpLoopVar, Scalar(like), IntAttr{0})
	iv.Block, iv.b = loop.Body, b
	loop.Body.Vars = append(loop.Body.Vars, iv)
	var carried []*Value
	for i, x := range inits {
		c := b.f.NewValue(OpLoopVar, x.Type, IntAttr{i + 1})
		c.Block, c.b = loop.Body, b
		c.Name = x.Name
		loop.Body.Vars = append(loop.Body.Vars, c)
		carried = append(carried, c)
	}
	outer := b.cur
	b.cur = loop.Body
	next := body(iv, carried)
	b.cur = outer
	if b.err != nil {
		return b.placeholders(len(inits))
	}
	if len(next) != len(inits) {
		b.fail("for: the body returns %d values for %d carried", len(next), len(inits))
		return b.placeholders(len(inits))
	}
	for i := range next {
		if !SameShape(next[i].Type, inits[i].Type) || next[i].Type.DType != inits[i].Type.DType {
			b.fail("for: carried value %d enters as %v and comes back as %v", i, inits[i].Type, next[i].Type)
			return b.placeholders(len(inits))
		}
	}
	y := b.f.NewValue(OpYield, Type{}, nil, next...)
	y.Pos = loop.Pos
	loop.Body.Append(y)
	if b.add(loop); b.err != nil {
		return b.placeholders(len(inits))
	}
	var outs []*Value
	for i, x := range inits {
		r := b.val(OpForResult, x.Type, IntAttr{i}, loop)
		r.Name = x.Name
		outs = append(outs, r)
	}
	return outs
}

// If runs body only where c, a bool scalar the same in every lane of the
// program, holds: a program past the end of its work skips it. Values made
// in the body stay in it.
func (b *Builder) If(c *Value, body func()) {
	if c.Type.DType != Bool || c.Type.Rank() != 0 {
		b.fail("if on %v: want a bool scalar", c.Type)
		return
	}
	v := b.f.NewValue(OpIf, Type{}, nil, c)
	v.Pos = callerPos()
	v.Body = &Block{Parent: v}
	outer := b.cur
	b.cur = v.Body
	body()
	b.cur = outer
	b.add(v)
}

// Signal adds n (an i32 scalar) to the i32 counter at p once for the
// program, after every lane's earlier stores and atomics: a release that
// another program's Wait on p acquires.
func (b *Builder) Signal(p *Value, n any) { b.sync(OpSignal, p, n) }

// Wait holds every lane of the program until the i32 counter at p is at
// least n (an i32 scalar); loads after it see what the signals it waited
// for released. Only Signal and atomics may move a counter that programs
// wait on. Programs that wait on each other must all be resident: the
// kernel's grid has one axis, and it reads num_programs and must be
// correct for any grid, since a launch clamps it to what the device holds
// at once (the interpreter to 8): outputs that depend on num_programs
// differ between the interpreter and a GPU.
func (b *Builder) Wait(p *Value, n any) { b.sync(OpWait, p, n) }

func (b *Builder) sync(op Op, p *Value, n any) {
	if p.Type.DType != PtrTo(I32) || p.Type.Rank() != 0 {
		b.fail("%s on %v: want a scalar pointer to i32", op.Name(), p.Type)
		return
	}
	nv := b.operand(n, I32)
	if b.err != nil {
		return
	}
	if nv.Type.Rank() != 0 {
		b.fail("%s by %v: want a scalar", op.Name(), nv.Type)
		return
	}
	b.val(op, Type{}, nil, p, nv)
}

func (b *Builder) placeholders(n int) []*Value {
	out := make([]*Value, n)
	for i := range out {
		out[i] = b.placeholder()
	}
	return out
}
