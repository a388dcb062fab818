package ir

import (
	"errors"
	"fmt"
)

// Verify checks the invariants of a function in the given phase: every
// operand defined before its use and in scope, operand counts and types as
// the ops table and the type rules say, and — in the Threads phase — a layout
// on every tile whose rank matches, equal layouts across elementwise
// operands, and register maps where lowering must have set them. Passes run
// it after each step in tests.
func Verify(f *Func, phase Phase) error {
	threads := f.Threads
	seen := map[int]bool{}
	for _, p := range f.Params {
		if p.Op != OpParam && p.Op != OpSize {
			return fmt.Errorf("%s: parameter %v is a %s", f.Name, p, p.Op.Name())
		}
	}
	var errs []error
	var visit func(b *Block)
	visit = func(b *Block) {
		for _, v := range b.Vars {
			seen[v.ID] = true
		}
		for _, v := range b.Values {
			if v.Block != b {
				errs = append(errs, fmt.Errorf("%v: not owned by its block", v))
			}
			defined := true
			for i, a := range v.Args {
				if a == nil || !seen[a.ID] {
					errs = append(errs, fmt.Errorf("%s: %v: operand %d is not defined before its use", posOf(v), v.LongString(), i))
					defined = false
				}
			}
			if !defined {
				continue
			}
			if err := checkValue(v, phase, threads); err != nil {
				errs = append(errs, fmt.Errorf("%s: %s: %v", posOf(v), v.LongString(), err))
			}
			if v.Body != nil {
				visit(v.Body)
				// Values of the body are out of scope after it.
				walk(v.Body, func(x *Value) { delete(seen, x.ID) })
			}
			seen[v.ID] = true
		}
	}
	visit(f.Entry)
	return errors.Join(errs...)
}

func posOf(v *Value) string {
	if v.Pos.File == "" {
		return "?"
	}
	return fmt.Sprintf("%s:%d", v.Pos.File, v.Pos.Line)
}

// checkValue applies the op table and the type rules to one value.
func checkValue(v *Value, phase Phase, threads int) error {
	info := v.Op.info()
	if info.phase&phase == 0 {
		return fmt.Errorf("op %s does not belong in this phase", info.name)
	}
	if info.args >= 0 && len(v.Args) != info.args {
		return fmt.Errorf("%d operands, want %d", len(v.Args), info.args)
	}
	arg := func(i int) Type { return v.Args[i].Type }
	t := v.Type
	if info.result && t.DType.K == KInvalid {
		return errors.New("no result type")
	}
	if t.Rank() > 2 {
		return fmt.Errorf("rank %d: tiles have rank 0, 1 or 2", t.Rank())
	}
	for _, s := range t.Shape {
		if s <= 0 || s&(s-1) != 0 {
			return fmt.Errorf("shape %v: every extent must be a power of two", t.Shape)
		}
	}
	if info.elemwis {
		for i := range v.Args {
			if !SameShape(arg(i), v.Args[0].Type) {
				return fmt.Errorf("operand shapes %v and %v differ", arg(0).Shape, arg(i).Shape)
			}
		}
		if info.result && !SameShape(t, arg(0)) {
			return fmt.Errorf("result shape %v, operands %v", t.Shape, arg(0).Shape)
		}
	}
	numeric := func(d DType) bool { return d.K == KF32 || d.K == KI32 || d.K == KI64 }
	switch v.Op {
	case OpProgramID, OpNumPrograms:
		if v.Aux < 0 || v.Aux > 2 {
			return fmt.Errorf("grid axis %d: want 0, 1 or 2", v.Aux)
		}
	case OpAdd, OpSub, OpMul, OpDiv, OpMax, OpMin, OpLt, OpLe, OpGt, OpGe, OpEq, OpNe:
		if arg(0).DType != arg(1).DType {
			return fmt.Errorf("operand types %v and %v differ: Cast one", arg(0).DType, arg(1).DType)
		}
		if !numeric(arg(0).DType) && !(v.Op == OpEq || v.Op == OpNe) {
			return fmt.Errorf("arithmetic on %v: Cast to f32 first", arg(0).DType)
		}
	case OpRem:
		if arg(0).DType != arg(1).DType || !arg(0).DType.IsInt() {
			return fmt.Errorf("rem of %v and %v: want two equal integer types", arg(0).DType, arg(1).DType)
		}
	case OpAnd, OpOr:
		if arg(0).DType != arg(1).DType || !(arg(0).DType.K == KBool || arg(0).DType.IsInt()) {
			return fmt.Errorf("%s of %v and %v: want two bools or two equal integer types", info.name, arg(0).DType, arg(1).DType)
		}
	case OpAbs, OpNeg:
		if !numeric(arg(0).DType) {
			return fmt.Errorf("%s of %v: Cast to f32 first", info.name, arg(0).DType)
		}
	case OpRsqrt, OpPow2Floor:
		if arg(0).DType != F32 {
			return fmt.Errorf("%s of %v: want f32", info.name, arg(0).DType)
		}
	case OpCast:
		if !castable(arg(0).DType, t.DType) {
			return fmt.Errorf("no cast from %v to %v", arg(0).DType, t.DType)
		}
	case OpWhere:
		if arg(0).DType != Bool || arg(1).DType != arg(2).DType || t.DType != arg(1).DType {
			return fmt.Errorf("where(%v, %v, %v): want a bool condition and two equal types", arg(0).DType, arg(1).DType, arg(2).DType)
		}
	case OpPtrAdd:
		if arg(0).DType.K != KPtr || arg(1).DType != I32 || t.DType != arg(0).DType {
			return fmt.Errorf("ptr_add(%v, %v): want a pointer and i32 offsets", arg(0).DType, arg(1).DType)
		}
	case OpLoad:
		if arg(0).DType.K != KPtr || arg(1).DType != Bool || arg(2).DType != arg(0).DType.Elem() || t.DType != arg(0).DType.Elem() {
			return fmt.Errorf("load(%v, mask %v, other %v): want a pointer, a bool mask and other of the pointee type", arg(0).DType, arg(1).DType, arg(2).DType)
		}
	case OpStore, OpAtomicMax, OpAtomicAdd:
		if arg(0).DType.K != KPtr || arg(1).DType != arg(0).DType.Elem() || arg(2).DType != Bool {
			return fmt.Errorf("%s(%v, %v, mask %v): want a pointer, a value of its pointee type and a bool mask", info.name, arg(0).DType, arg(1).DType, arg(2).DType)
		}
		if v.Op != OpStore && arg(1).DType != F32 && arg(1).DType != I32 {
			return fmt.Errorf("%s on %v: atomics take f32 or i32", info.name, arg(1).DType)
		}
	case OpReduce, OpReduceLanes, OpReduceWave, OpReduceWaves:
		if !numeric(arg(0).DType) {
			return fmt.Errorf("reduce of %v: Cast to f32 first", arg(0).DType)
		}
	case OpFor:
		if len(v.Args) < 3 || v.Body == nil {
			return errors.New("for without bounds or body")
		}
		for i := 0; i < 3; i++ {
			if arg(i).DType != I32 || arg(i).Rank() != 0 {
				return fmt.Errorf("loop bound %d is %v: want an i32 scalar", i, arg(i))
			}
		}
		n := len(v.Body.Values)
		if n == 0 || v.Body.Values[n-1].Op != OpYield || len(v.Body.Values[n-1].Args) != len(v.Args)-3 {
			return errors.New("loop body does not end in a yield of its carried values")
		}
	case OpSplat:
		if arg(0).Rank() != 0 {
			return fmt.Errorf("splat of a rank-%d tile", arg(0).Rank())
		}
	case OpBroadcast:
		if arg(0).Rank() != t.Rank() {
			return fmt.Errorf("broadcast from rank %d to %d", arg(0).Rank(), t.Rank())
		}
		for i, s := range arg(0).Shape {
			if s != 1 && s != t.Shape[i] {
				return fmt.Errorf("broadcast %v to %v", arg(0).Shape, t.Shape)
			}
		}
	}
	if phase == PhaseThreads {
		return checkLayouts(v, threads)
	}
	return nil
}

// castable lists the conversions the back ends implement.
func castable(from, to DType) bool {
	switch {
	case from == to:
		return true
	case from.K == KF32:
		return to.K == KBF16 || to.K == KFP8 || to.K == KI32
	case from.K == KBF16 || from.K == KFP8:
		return to.K == KF32
	case from.K == KI32:
		return to.K == KF32 || to.K == KI64
	case from.K == KBool:
		return to.K == KI32
	}
	return false
}

// checkLayouts holds the Threads phase invariants for one value.
func checkLayouts(v *Value, threads int) error {
	t := v.Type
	if t.Rank() > 0 && t.Layout == nil {
		return errors.New("tile without a layout")
	}
	if t.Layout != nil && t.Layout.Rank() != t.Rank() {
		return fmt.Errorf("layout %v on a rank-%d tile", t.Layout, t.Rank())
	}
	info := v.Op.info()
	if info.elemwis {
		for i, a := range v.Args {
			if a.Type.Rank() > 0 && !sameLayout(a.Type.Layout, v.Args[0].Type.Layout, a.Type.Shape, threads) {
				return fmt.Errorf("operand %d layout %v differs from %v", i, a.Type.Layout, v.Args[0].Type.Layout)
			}
		}
		if info.result && t.Rank() > 0 && !sameLayout(t.Layout, v.Args[0].Type.Layout, t.Shape, threads) {
			return fmt.Errorf("result layout %v differs from operands' %v", t.Layout, v.Args[0].Type.Layout)
		}
	}
	switch v.Op {
	case OpBroadcast, OpExpandDims, OpTrans:
		if v.Map != nil && len(v.Map) != t.Layout.Regs(t.Shape) {
			return fmt.Errorf("register map of %d entries for %d registers", len(v.Map), t.Layout.Regs(t.Shape))
		}
	}
	return nil
}

// sameLayout reports whether two layouts place a tile alike.
func sameLayout(a, b *Layout, shape []int, threads int) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.String() == b.String() || Equivalent(a, b, shape, threads)
}
