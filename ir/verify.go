package ir

import (
	"errors"
	"fmt"
	"math"
	"reflect"
)

// MaxTileElems bounds a tile: lowering enumerates a tile's elements, and a
// kernel's index arithmetic steps up to one tile past the last element.
const MaxTileElems = 1 << 16

// Verify checks the invariants of a function in the given phase, from the
// ops table: every operand defined before its use and in scope, the op
// allowed in the phase, operand counts, the attribute's type, and the op's
// type rule; in the layout phase a layout on every tile, equal across
// elementwise operands; in the lanes phase register counts that agree.
// Passes run it after each step in tests.
func Verify(f *Func, phase Phase) error {
	c := &checker{phase: phase, threads: f.Threads, entry: f.Entry}
	if f.Target != nil {
		c.wave = f.Target.WaveSize
	}
	for _, p := range f.Params {
		if p.Op != OpParam && p.Op != OpSize {
			return fmt.Errorf("%s: parameter %v is a %s", f.Name, p, p.Op.Name())
		}
	}
	seen := map[*Value]bool{}
	var errs []error
	var visit func(b *Block)
	visit = func(b *Block) {
		for _, v := range b.Vars {
			seen[v] = true
		}
		for i, v := range b.Values {
			if v.Block != b {
				errs = append(errs, fmt.Errorf("%v: not owned by its block", v))
			}
			defined := true
			for j, a := range v.Args {
				if a == nil || !seen[a] {
					errs = append(errs, fmt.Errorf("%s: %v: operand %d is not defined before its use", posOf(v), v.LongString(), j))
					defined = false
				}
			}
			if !defined {
				continue
			}
			if err := c.value(v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %s: %v", posOf(v), v.LongString(), err))
			}
			if v.Op.Effect()&Ends != 0 && i != len(b.Values)-1 {
				errs = append(errs, fmt.Errorf("%s: %s does not end its block", posOf(v), v.Op.Name()))
			}
			if v.Body != nil {
				visit(v.Body)
				// Values of the body are out of scope after it.
				walk(v.Body, func(x *Value) { delete(seen, x) })
			}
			seen[v] = true
		}
	}
	visit(f.Entry)
	f.Walk(func(v *Value) {
		for i, a := range v.Args {
			if a != nil && a.Op == OpStage && (v.Op != OpUnstage || i != 0) {
				errs = append(errs, fmt.Errorf("%s: %s uses staged %v: only unstage reads a stage", posOf(v), v.Op.Name(), a))
			}
		}
	})
	return errors.Join(errs...)
}

func posOf(v *Value) string {
	if v.Pos.File == "" {
		return "?"
	}
	return fmt.Sprintf("%s:%d", v.Pos.File, v.Pos.Line)
}

type checker struct {
	phase   Phase
	threads int
	wave    int
	entry   *Block // the function's top level
}

// value applies the op table and the type rules to one value.
func (c *checker) value(v *Value) error {
	info := v.Op.info()
	if info.phase&c.phase == 0 {
		return fmt.Errorf("op %s does not belong in the %v phase", info.name, c.phase)
	}
	if !info.vararg && len(v.Args) != len(info.roles) || info.vararg && len(v.Args) < len(info.roles)-1 {
		return fmt.Errorf("%d operands, want %d", len(v.Args), len(info.roles))
	}
	if got := reflect.TypeOf(v.Attr); got != info.attr {
		return fmt.Errorf("attribute %v, want %v", got, info.attr)
	}
	t := v.Type
	if info.result && t.DType.K == KInvalid {
		return errors.New("no result type")
	}
	if c.phase == PhaseLanes {
		if err := c.lanes(v); err != nil {
			return err
		}
	} else if err := c.tile(v); err != nil {
		return err
	}
	if info.compare && t.DType != Bool {
		return fmt.Errorf("a comparison yields %v, want i1", t.DType)
	}
	if info.check != nil {
		return info.check(c, v)
	}
	return nil
}

// tile holds the shape rules of the tile and layout phases.
func (c *checker) tile(v *Value) error {
	t := v.Type
	info := v.Op.info()
	if t.Regs != 0 {
		return fmt.Errorf("a register count (%d) before the lanes phase", t.Regs)
	}
	if t.Rank() > 2 {
		return fmt.Errorf("rank %d: tiles have rank 0, 1 or 2", t.Rank())
	}
	for _, s := range t.Shape {
		if s <= 0 || s&(s-1) != 0 {
			return fmt.Errorf("shape %v: every extent must be a power of two", t.Shape)
		}
	}
	if t.Elems() > MaxTileElems {
		return fmt.Errorf("shape %v: %d elements, more than a tile may hold (%d)", t.Shape, t.Elems(), MaxTileElems)
	}
	if info.elem {
		for i, a := range v.Args {
			if !SameShape(a.Type, v.Args[0].Type) {
				return fmt.Errorf("operand shapes %v and %v differ", v.Args[0].Type.Shape, v.Args[i].Type.Shape)
			}
		}
		if info.result && len(v.Args) > 0 && !SameShape(t, v.Args[0].Type) {
			return fmt.Errorf("result shape %v, operands %v", t.Shape, v.Args[0].Type.Shape)
		}
	}
	if c.phase == PhaseLayout {
		return c.layouts(v)
	}
	if t.Layout != nil {
		return errors.New("a layout before the layout phase")
	}
	return nil
}

// layouts holds the layout phase's invariants for one value.
func (c *checker) layouts(v *Value) error {
	t := v.Type
	if t.Rank() > 0 && t.Layout == nil {
		return errors.New("tile without a layout")
	}
	if t.Rank() == 0 && t.Layout != nil {
		return fmt.Errorf("layout %v on a scalar", t.Layout)
	}
	if t.Layout != nil && t.Layout.Rank() != t.Rank() {
		return fmt.Errorf("layout %v on a rank-%d tile", t.Layout, t.Rank())
	}
	if t.Layout != nil && t.Layout.Threads() != c.threads {
		return fmt.Errorf("layout %v spans %d lanes; the block has %d", t.Layout, t.Layout.Threads(), c.threads)
	}
	info := v.Op.info()
	if info.elem {
		first := v.Args[0].Type
		for i, a := range v.Args {
			if a.Type.Rank() > 0 && !sameLayout(a.Type.Layout, first.Layout, a.Type.Shape, c.threads) {
				return fmt.Errorf("operand %d layout %v differs from %v", i, a.Type.Layout, first.Layout)
			}
		}
		if info.result && t.Rank() > 0 && !sameLayout(t.Layout, first.Layout, t.Shape, c.threads) {
			return fmt.Errorf("result layout %v differs from operands' %v", t.Layout, first.Layout)
		}
	}
	return nil
}

// lanes holds the lanes phase's register rules for one value: an
// elementwise op's operands have its register count, or are uniform (0) or
// one register, which stand for every register. A pure op has as many
// registers as its widest operand; a memory access may have more (a load
// of one address into every register).
func (c *checker) lanes(v *Value) error {
	t := v.Type
	if t.Rank() != 0 || t.Layout != nil {
		return errors.New("a tile type in the lanes phase")
	}
	if t.Regs < 0 || t.Regs > MaxTileElems {
		return fmt.Errorf("%d registers", t.Regs)
	}
	info := v.Op.info()
	if info.elem {
		n := 0
		for _, a := range v.Args {
			n = max(n, a.Type.Regs)
		}
		for i, a := range v.Args {
			if r := a.Type.Regs; r > 1 && r != n {
				return fmt.Errorf("operand %d has %d registers, another %d", i, r, n)
			}
		}
		if info.result && (t.Regs < n || info.effect == 0 && t.Regs != n) {
			return fmt.Errorf("%d result registers for operands of %d", t.Regs, n)
		}
	}
	return nil
}

// regsOrOne reports whether operand a may stand beside n registers.
func regsFit(a *Value, n int) bool { return a.Type.Regs <= 1 || a.Type.Regs == n }

// sameLayout reports whether two layouts place a tile alike.
func sameLayout(a, b *Layout, shape []int, threads int) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.String() == b.String() || Equivalent(a, b, shape, threads)
}

// The type rules, one per op (the check column of the ops table).

func numeric(d DType) bool { return d.K == KF32 || d.IsInt() }

func arg(v *Value, i int) DType { return v.Args[i].Type.DType }

func checkParam(_ *checker, v *Value) error {
	if v.Type.DType.K != KPtr || v.Type.Rank() != 0 || v.Type.Regs != 0 {
		return fmt.Errorf("param of type %v: want a scalar pointer", v.Type)
	}
	return nil
}

func checkSize(_ *checker, v *Value) error {
	if !v.Type.DType.IsInt() || v.Type.Rank() != 0 || v.Type.Regs != 0 {
		return fmt.Errorf("size of type %v: want a scalar i32 or i64", v.Type)
	}
	return nil
}

func checkGridAxis(_ *checker, v *Value) error {
	if a := v.Axis(); a < 0 || a > 2 {
		return fmt.Errorf("grid axis %d: want 0, 1 or 2", a)
	}
	if !v.Type.DType.IsInt() || v.Type.Rank() != 0 || v.Type.Regs != 0 {
		return fmt.Errorf("%s of type %v: want a scalar integer", v.Op.Name(), v.Type)
	}
	return nil
}

func checkConst(_ *checker, v *Value) error {
	if v.Type.Rank() != 0 || v.Type.Regs != 0 {
		return fmt.Errorf("const of type %v: want a scalar", v.Type)
	}
	return nil
}

func checkArange(_ *checker, v *Value) error {
	n := v.Index()
	if v.Type.Rank() != 1 || v.Type.Shape[0] != n || !v.Type.DType.IsInt() {
		return fmt.Errorf("arange [%d] of type %v: want tile<%dxi32> or i64", n, v.Type, n)
	}
	return nil
}

func checkSplat(c *checker, v *Value) error {
	x := v.Args[0]
	if c.phase == PhaseLanes {
		if x.Type.Regs > 1 {
			return fmt.Errorf("splat of %d registers", x.Type.Regs)
		}
	} else if x.Type.Rank() != 0 {
		return fmt.Errorf("splat of a rank-%d tile", x.Type.Rank())
	}
	return checkSameElem(c, v)
}

func checkSameElem(_ *checker, v *Value) error {
	if v.Type.DType != arg(v, 0) {
		return fmt.Errorf("element type %v of an operand of %v", v.Type.DType, arg(v, 0))
	}
	return nil
}

func checkBroadcast(c *checker, v *Value) error {
	x, t := v.Args[0].Type, v.Type
	if x.Rank() != t.Rank() {
		return fmt.Errorf("broadcast from rank %d to %d", x.Rank(), t.Rank())
	}
	for i, s := range x.Shape {
		if s != 1 && s != t.Shape[i] {
			return fmt.Errorf("broadcast %v to %v", x.Shape, t.Shape)
		}
	}
	return checkSameElem(c, v)
}

func checkRotate(c *checker, v *Value) error {
	r := v.Rotation()
	if r.Axis < 0 || r.Axis >= v.Type.Rank() || !SameShape(v.Type, v.Args[0].Type) {
		return fmt.Errorf("rotate axis %d of %v", r.Axis, v.Args[0].Type)
	}
	return checkSameElem(c, v)
}

func checkArith(_ *checker, v *Value) error {
	if arg(v, 0) != arg(v, 1) {
		return fmt.Errorf("operand types %v and %v differ: Cast one", arg(v, 0), arg(v, 1))
	}
	if !numeric(arg(v, 0)) {
		return fmt.Errorf("arithmetic on %v: Cast to f32 first", arg(v, 0))
	}
	if v.Type.DType != Bool && v.Type.DType != arg(v, 0) {
		return fmt.Errorf("result %v of %v operands", v.Type.DType, arg(v, 0))
	}
	return nil
}

func checkEq(c *checker, v *Value) error {
	if arg(v, 0) == Bool && arg(v, 1) == Bool {
		return nil
	}
	return checkArith(c, v)
}

func checkInts(_ *checker, v *Value) error {
	if arg(v, 0) != arg(v, 1) || !arg(v, 0).IsInt() || v.Type.DType != arg(v, 0) {
		return fmt.Errorf("%s of %v and %v: want two equal integer types", v.Op.Name(), arg(v, 0), arg(v, 1))
	}
	return nil
}

func checkBits(_ *checker, v *Value) error {
	d := arg(v, 0)
	if d != arg(v, 1) || !(d == Bool || d.IsInt()) || v.Type.DType != d {
		return fmt.Errorf("%s of %v and %v: want two bools or two equal integer types", v.Op.Name(), d, arg(v, 1))
	}
	return nil
}

func checkNumeric(_ *checker, v *Value) error {
	if !numeric(arg(v, 0)) || v.Type.DType != arg(v, 0) {
		return fmt.Errorf("%s of %v: Cast to f32 first", v.Op.Name(), arg(v, 0))
	}
	return nil
}

func checkF32(_ *checker, v *Value) error {
	if arg(v, 0) != F32 || v.Type.DType != F32 {
		return fmt.Errorf("%s of %v: want f32", v.Op.Name(), arg(v, 0))
	}
	return nil
}

func checkCast(_ *checker, v *Value) error {
	if !Castable(arg(v, 0), v.Type.DType) {
		return fmt.Errorf("no cast from %v to %v", arg(v, 0), v.Type.DType)
	}
	return nil
}

func checkBitcast(_ *checker, v *Value) error {
	from, to := arg(v, 0), v.Type.DType
	if !(from == F32 && to == I32 || from == I32 && to == F32) {
		return fmt.Errorf("no bitcast from %v to %v: f32 and i32 only", from, to)
	}
	return nil
}

// Castable lists the conversions the back ends implement.
func Castable(from, to DType) bool {
	switch {
	case from == to:
		return true
	case from.K == KF32:
		return to.K == KBF16 || to.K == KFP8 || to.K == KI32
	case from.K == KBF16 || from.K == KFP8:
		return to.K == KF32
	case from.K == KI32:
		return to.K == KF32 || to.K == KI64 || to.K == KE8M0
	case from.K == KI64:
		return to.K == KI32
	case from.K == KBool:
		return to.K == KI32
	}
	return false
}

func checkWhere(_ *checker, v *Value) error {
	if arg(v, 0) != Bool || arg(v, 1) != arg(v, 2) || v.Type.DType != arg(v, 1) {
		return fmt.Errorf("where(%v, %v, %v): want a bool condition and two equal types", arg(v, 0), arg(v, 1), arg(v, 2))
	}
	return nil
}

func checkFMA(_ *checker, v *Value) error {
	if arg(v, 0) != F32 || arg(v, 1) != F32 || arg(v, 2) != F32 || v.Type.DType != F32 {
		return fmt.Errorf("fma(%v, %v, %v): want three f32 operands", arg(v, 0), arg(v, 1), arg(v, 2))
	}
	return nil
}

func checkPtrAdd(_ *checker, v *Value) error {
	if arg(v, 0).K != KPtr || !arg(v, 1).IsInt() || v.Type.DType != arg(v, 0) {
		return fmt.Errorf("ptr_add(%v, %v): want a pointer and integer offsets", arg(v, 0), arg(v, 1))
	}
	return nil
}

func checkAssume(_ *checker, v *Value) error {
	a := v.Assumption()
	if !arg(v, 0).IsInt() || v.Type.DType != arg(v, 0) {
		return fmt.Errorf("assume on %v: want integers", arg(v, 0))
	}
	for _, n := range []int{a.Div, a.Contig} {
		if n < 1 || n&(n-1) != 0 {
			return fmt.Errorf("assume div=%d contig=%d: want powers of two", a.Div, a.Contig)
		}
	}
	return nil
}

func checkLoad(_ *checker, v *Value) error {
	p, m, o := arg(v, 0), arg(v, 1), arg(v, 2)
	if p.K != KPtr || m != Bool || o != p.Elem() || v.Type.DType != p.Elem() {
		return fmt.Errorf("load(%v, mask %v, other %v): want a pointer, a bool mask and other of the pointee type", p, m, o)
	}
	return checkVec(v, v.Type.DType, v.Type.Regs)
}

// checkStage: a load of a 2-D tile whose masked-off elements are +0
// (what an asynchronous copy fills in), at the kernel's top level (its LDS
// region is written once), used by unstage alone.
func checkStage(c *checker, v *Value) error {
	if err := checkLoad(c, v); err != nil {
		return err
	}
	if r := v.Type.Rank(); r != 2 {
		return fmt.Errorf("stage of a %d-D tile: want a 2-D one", r)
	}
	o := v.Other()
	for o.Op == OpSplat || o.Op == OpBroadcast || o.Op == OpExpandDims {
		o = o.Args[0]
	}
	if o.Op != OpConst || o.Const().Int != 0 || math.Float64bits(o.Const().Float) != 0 {
		return fmt.Errorf("stage with other %s: masked-off elements are 0", v.Other())
	}
	if v.Block != c.entry {
		return fmt.Errorf("stage inside a loop or if: its LDS region is written once, at the kernel's top level")
	}
	return nil
}

// checkUnstage: rows r0 … r0+rows-1 of a staged 2-D tile, all its columns.
func checkUnstage(_ *checker, v *Value) error {
	st, r0 := v.Args[0], v.Args[1]
	if st.Op != OpStage {
		return fmt.Errorf("unstage of %s: want a stage", st.Op.Name())
	}
	if r0.Type.Rank() != 0 || !r0.Type.DType.IsInt() {
		return fmt.Errorf("unstage's first row %v: want an integer scalar", r0.Type)
	}
	rows := v.Index()
	if r0.Op == OpConst && (r0.Const().Int < 0 || int(r0.Const().Int)+rows > st.Type.Shape[0]) {
		return fmt.Errorf("unstage of rows %d … %d of a %d-row stage", r0.Const().Int, int(r0.Const().Int)+rows-1, st.Type.Shape[0])
	}
	if st.Type.Rank() != 2 || v.Type.Rank() != 2 || v.Type.DType != st.Type.DType ||
		rows < 1 || rows > st.Type.Shape[0] || v.Type.Shape[0] != rows || v.Type.Shape[1] != st.Type.Shape[1] {
		return fmt.Errorf("unstage of %d rows %v from %v", rows, v.Type, st.Type)
	}
	return nil
}

// checkLDSCopy: per register, a global element to an LDS byte address.
func checkLDSCopy(_ *checker, v *Value) error {
	p := v.Ptr()
	if p.Type.DType.K != KPtr {
		return fmt.Errorf("lds_copy from %v: want pointers", p.Type)
	}
	if err := checkLDSAddr(v.Addr(), p.Type.Regs); err != nil {
		return err
	}
	for _, m := range []*Value{v.Mask(), v.Cond()} {
		if m.Type.DType != Bool || !regsFit(m, p.Type.Regs) {
			return fmt.Errorf("mask %v for %d registers", m.Type, p.Type.Regs)
		}
	}
	return checkVec(v, p.Type.DType.Elem(), p.Type.Regs)
}

func checkVec(v *Value, d DType, regs int) error {
	m := v.Mem()
	if m == nil || m.Vec < 0 || m.Vec&(m.Vec-1) != 0 {
		return fmt.Errorf("vector width %v: want a power of two", m)
	}
	if m.Vec > 1 && m.Vec*d.Bytes() > 16 {
		return fmt.Errorf("a %d-byte vector: at most 16", m.Vec*d.Bytes())
	}
	if m.Vec > 1 && regs > 0 && regs%m.Vec != 0 {
		return fmt.Errorf("vectors of %d over %d registers", m.Vec, regs)
	}
	if m.Unaligned && (v.Op != OpStore || m.Vec < 2 || m.Stride > 1) {
		return fmt.Errorf("an unaligned %v: only a global store of consecutive registers moves in pieces", v.Op)
	}
	return nil
}

func checkStore(_ *checker, v *Value) error {
	p, x, m := arg(v, 0), arg(v, 1), arg(v, 2)
	if p.K != KPtr || x != p.Elem() || m != Bool {
		return fmt.Errorf("store(%v, %v, mask %v): want a pointer, a value of its pointee type and a bool mask", p, x, m)
	}
	n := 0
	for _, a := range v.Args {
		n = max(n, a.Type.Regs) // a uniform or one-register value stands for every register
	}
	return checkVec(v, x, n)
}

func checkAtomic(_ *checker, v *Value) error {
	p, x, m := arg(v, 0), arg(v, 1), arg(v, 2)
	if p.K != KPtr || x != p.Elem() || m != Bool || v.Type.DType != x {
		return fmt.Errorf("atomic(%v, %v, mask %v): want a pointer, a value of its pointee type and a bool mask", p, x, m)
	}
	if x != F32 && x != I32 {
		return fmt.Errorf("atomic on %v: atomics take f32 or i32", x)
	}
	return nil
}

// checkSync: signal and wait take one i32 counter and an i32 count, both
// the same in every lane.
func checkSync(c *checker, v *Value) error {
	p, n := v.Args[0], v.Args[1]
	if p.Type.DType != PtrTo(I32) || n.Type.DType != I32 || !uniformScalar(c, p) || !uniformScalar(c, n) {
		return fmt.Errorf("%s(%v, %v): want a scalar pointer to i32 and a scalar i32", v.Op.Name(), p.Type, n.Type)
	}
	return nil
}

func checkReduce(_ *checker, v *Value) error {
	r := v.Reduction()
	x := v.Args[0].Type
	if !numeric(x.DType) || v.Type.DType != x.DType {
		return fmt.Errorf("reduce of %v: Cast to f32 first", x.DType)
	}
	if r.Axis < 0 || r.Axis >= x.Rank() || v.Type.Rank() != x.Rank()-1 {
		return fmt.Errorf("reduce axis %d of a rank-%d tile to rank %d", r.Axis, x.Rank(), v.Type.Rank())
	}
	return nil
}

// uniformScalar: a rank-0 value, or in the lanes phase one that every lane
// holds once (the interpreter checks that they agree).
func uniformScalar(c *checker, v *Value) bool {
	if c.phase == PhaseLanes {
		return v.Type.Regs <= 1
	}
	return v.Type.Rank() == 0
}

func checkFor(c *checker, v *Value) error {
	if len(v.Args) < 3 || v.Body == nil {
		return errors.New("for without bounds or body")
	}
	for i := 0; i < 3; i++ {
		if a := v.Args[i]; !a.Type.DType.IsInt() || !uniformScalar(c, a) {
			return fmt.Errorf("loop bound %d is %v: want an integer scalar", i, a.Type)
		}
	}
	iv, carried := v.ForVars()
	if iv.Type.DType != arg(v, 0) || arg(v, 1) != arg(v, 0) || arg(v, 2) != arg(v, 0) {
		return fmt.Errorf("loop bounds %v %v %v and variable %v: want one integer type", arg(v, 0), arg(v, 1), arg(v, 2), iv.Type.DType)
	}
	n := len(v.Body.Values)
	if n == 0 || v.Yield().Op != OpYield || len(v.Yield().Args) != len(carried) || len(carried) != len(v.Inits()) {
		return errors.New("loop body does not end in a yield of its carried values")
	}
	for i, x := range v.Inits() {
		y, cv := v.Yield().Args[i], carried[i]
		if x.Type.String() != cv.Type.String() && !(c.phase == PhaseLayout && SameShape(x.Type, cv.Type)) {
			return fmt.Errorf("carried value %d enters as %v and is %v in the body", i, x.Type, cv.Type)
		}
		if y.Type.DType != cv.Type.DType || !SameShape(y.Type, cv.Type) || y.Type.Regs != cv.Type.Regs {
			return fmt.Errorf("carried value %d is %v and comes back as %v", i, cv.Type, y.Type)
		}
	}
	return nil
}

func checkForResult(_ *checker, v *Value) error {
	loop := v.Args[0]
	if loop.Op != OpFor {
		return fmt.Errorf("for_result of a %s", loop.Op.Name())
	}
	_, carried := loop.ForVars()
	i := v.Index()
	if i < 0 || i >= len(carried) {
		return fmt.Errorf("for_result [%d] of a loop carrying %d values", i, len(carried))
	}
	if c := carried[i].Type; c.DType != v.Type.DType || !SameShape(c, v.Type) || c.Regs != v.Type.Regs {
		return fmt.Errorf("for_result %v of a carried %v", v.Type, c)
	}
	return nil
}

func checkIf(c *checker, v *Value) error {
	if v.Body == nil {
		return errors.New("if without a body")
	}
	if x := v.Args[0]; x.Type.DType != Bool || !uniformScalar(c, x) {
		return fmt.Errorf("if condition %v: want a bool scalar", x.Type)
	}
	return nil
}

func checkTid(_ *checker, v *Value) error {
	if v.Type.DType != I32 || v.Type.Regs != 1 {
		return fmt.Errorf("tid of type %v: want one i32 register", v.Type)
	}
	return nil
}

func checkRegConst(_ *checker, v *Value) error {
	if n := len(v.Consts()); n != v.Type.Regs || n == 0 {
		return fmt.Errorf("%d constants for %d registers", n, v.Type.Regs)
	}
	if d := v.Type.DType; !d.IsInt() && d != Bool {
		return fmt.Errorf("regconst of %v: want integers or bools", d)
	}
	return nil
}

func checkGather(_ *checker, v *Value) error {
	m, x := v.RegMap(), v.Args[0]
	if len(m) != v.Type.Regs || x.Type.Regs < 1 {
		return fmt.Errorf("a map of %d entries from %d to %d registers", len(m), x.Type.Regs, v.Type.Regs)
	}
	for _, s := range m {
		if s < 0 || s >= x.Type.Regs {
			return fmt.Errorf("map entry %d of %d registers", s, x.Type.Regs)
		}
	}
	return checkSameElem(nil, v)
}

func checkReduceRegs(_ *checker, v *Value) error {
	a, x := v.Fold(), v.Args[0].Type
	if a.N < 1 || a.N&(a.N-1) != 0 || a.Stride < 1 || x.Regs != v.Type.Regs*a.N || v.Type.Regs%a.Stride != 0 {
		return fmt.Errorf("folding %d registers into %d by n=%d stride=%d", x.Regs, v.Type.Regs, a.N, a.Stride)
	}
	if !numeric(x.DType) {
		return fmt.Errorf("reduce_regs of %v", x.DType)
	}
	return checkSameElem(nil, v)
}

func checkButterfly(c *checker, v *Value) error {
	a := v.Butterfly()
	if a.First < 1 || a.First&(a.First-1) != 0 || a.Steps < 1 || c.wave > 0 && a.First<<(a.Steps-1) >= c.wave {
		return fmt.Errorf("butterfly lanes %d×2^%d on a wave of %d", a.First, a.Steps, c.wave)
	}
	if v.Type.Regs != v.Args[0].Type.Regs || v.Type.Regs == 0 {
		return errors.New("a butterfly keeps its registers")
	}
	return checkSameElem(nil, v)
}

func checkShfl(c *checker, v *Value) error {
	if m := v.Lane(); m < 1 || c.wave > 0 && m >= c.wave {
		return fmt.Errorf("lane mask %d on a wave of %d", m, c.wave)
	}
	if v.Type.Regs != v.Args[0].Type.Regs || v.Type.Regs == 0 {
		return errors.New("a shuffle keeps its registers")
	}
	return checkSameElem(nil, v)
}

func checkLDSAddr(a *Value, n int) error {
	if a.Type.DType != I32 || !regsFit(a, n) {
		return fmt.Errorf("LDS address %v for %d registers: want i32", a.Type, n)
	}
	return nil
}

func checkLDSStore(_ *checker, v *Value) error {
	x := v.Data()
	if err := checkLDSAddr(v.Addr(), x.Type.Regs); err != nil {
		return err
	}
	if m := v.Mask(); m.Type.DType != Bool || !regsFit(m, x.Type.Regs) {
		return fmt.Errorf("mask %v for %d registers", m.Type, x.Type.Regs)
	}
	return checkVec(v, x.Type.DType, x.Type.Regs)
}

func checkLDSLoad(_ *checker, v *Value) error {
	if err := checkLDSAddr(v.Addr(), v.Type.Regs); err != nil {
		return err
	}
	return checkVec(v, v.Type.DType, v.Type.Regs)
}

func checkLDSReduce(_ *checker, v *Value) error {
	a := v.LDSFold()
	if a.Count < 1 || !numeric(v.Type.DType) {
		return fmt.Errorf("lds_reduce of %d %v values", a.Count, v.Type.DType)
	}
	return checkLDSAddr(v.Addr(), v.Type.Regs)
}
