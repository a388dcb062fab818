package ir

import "fmt"

// Attr is an op's typed attribute: which type an op carries is fixed by its
// row of the ops table and checked by the verifier. Values read attributes
// through the accessors below, never by type switch.
type Attr interface{ attrString() string }

// AxisAttr is an axis of a tile or of the grid.
type AxisAttr struct{ Axis int }

// IntAttr is an integer: an extent, or the index of a loop variable or result.
type IntAttr struct{ N int }

// ConstAttr is a constant's value: Int for integers and bools, Float for floats.
type ConstAttr struct {
	Int   int64
	Float float64
}

// NameAttr names a kernel argument.
type NameAttr struct{ Name string }

// ReduceAttr is a reduction of an axis.
type ReduceAttr struct {
	Axis int
	Kind ReduceKind
}

// RotateAttr rotates a tile along an axis: element i takes element
// (i + Shift) mod n of the axis.
type RotateAttr struct{ Axis, Shift int }

// AssumeAttr is a fact the kernel asserts of a runtime value: every element
// is a multiple of Div, and runs of Contig elements along the last axis
// step by one (Triton's multiple_of and max_contiguous). Lowering trusts it;
// the interpreter checks it.
type AssumeAttr struct{ Div, Contig int }

// MemAttr is how a memory access moves: Vec registers of a lane as one
// vector, Stride apart (0 or 1: consecutive; an LDS access of a lane's
// elements along a tile's second axis, where its registers run along the
// first), and, with Uniform, one mask bit standing for the vector; with
// Ends, the mask holds on one interval of each vector (or nowhere), so
// that its first and last bits tell whether it holds on the whole vector.
// EvictFirst marks a global load whose data the op reads no more: its
// lines are the first the L2 lets go, so that what is read again stays
// (NVIDIA's L2::evict_first policy; a plain load elsewhere). Spread
// marks a 1-D load whose elements go over the block's lanes in order (one
// a lane where they are as many, several where more, repeated where
// fewer) instead of taking the layout of the tiles it is broadcast into,
// for a vector worked on before it is broadcast: its work is then not
// repeated in every lane of a row of the tile, and it reaches the
// broadcast through LDS. Unaligned marks a global store whose vector is
// contiguous but whose address is not known to be aligned to it (a row
// stride not a multiple of the vector, such as a transposed fp8 output
// whose T is not a multiple of 16): it moves in naturally aligned pieces
// found at run time instead of in narrower vectors or element by element.
type MemAttr struct {
	Vec        int
	Stride     int
	Uniform    bool
	Ends       bool
	EvictFirst bool
	Spread     bool
	Unaligned  bool
}

// RegStride is the register distance between a vector's elements.
func (a *MemAttr) RegStride() int { return max(a.Stride, 1) }

// VectorStart reports whether register r begins a vector.
func (a *MemAttr) VectorStart(r int) bool { return (r/a.RegStride())%max(a.Vec, 1) == 0 }

// AtomicAttr is a read-modify-write: its combining function, memory order
// and scope.
type AtomicAttr struct {
	Kind  ReduceKind
	Order MemOrder
	Scope MemScope
}

// ConstsAttr holds one constant per register, the same in every lane.
type ConstsAttr struct{ C []int64 }

// RegMapAttr gives, per result register, the operand register it copies.
type RegMapAttr struct{ Map []int }

// FoldAttr folds registers within each lane: result register j combines the
// N operand registers base(j) + k·Stride, k < N, where base(j) is j with a
// zero digit of Stride inserted: base(j) = (j / Stride)·Stride·N + j % Stride.
// The order is k = 0, 1, …, N-1 (a running fold: one accumulator per
// result, where a tree would hold N/2 partials live beside the operand).
type FoldAttr struct {
	Kind      ReduceKind
	N, Stride int
}

// ButterflyAttr folds across the lanes of a wave: for k < Steps,
// x = x ⊕ shfl_xor(x, First << k), in that order.
type ButterflyAttr struct {
	Kind         ReduceKind
	First, Steps int
}

// LaneAttr is a lane distance or mask within a wave.
type LaneAttr struct{ Mask int }

// LDSFoldAttr folds Count values read from LDS at addr, addr + Stride, …
// (bytes), in that order.
type LDSFoldAttr struct {
	Kind          ReduceKind
	Count, Stride int
}

func (a AxisAttr) attrString() string   { return fmt.Sprint(a.Axis) }
func (a IntAttr) attrString() string    { return fmt.Sprint(a.N) }
func (a NameAttr) attrString() string   { return fmt.Sprintf("%q", a.Name) }
func (a ReduceAttr) attrString() string { return fmt.Sprintf("axis=%d %v", a.Axis, a.Kind) }
func (a RotateAttr) attrString() string { return fmt.Sprintf("axis=%d shift=%d", a.Axis, a.Shift) }
func (a AtomicAttr) attrString() string { return fmt.Sprintf("%v %v %v", a.Kind, a.Order, a.Scope) }
func (a LaneAttr) attrString() string   { return fmt.Sprintf("lane^%d", a.Mask) }
func (a FoldAttr) attrString() string   { return fmt.Sprintf("%v n=%d stride=%d", a.Kind, a.N, a.Stride) }
func (a LDSFoldAttr) attrString() string {
	return fmt.Sprintf("%v count=%d stride=%d", a.Kind, a.Count, a.Stride)
}
func (a ButterflyAttr) attrString() string {
	return fmt.Sprintf("%v lanes^%d..%d", a.Kind, a.First, a.First<<(a.Steps-1))
}

func (a AssumeAttr) attrString() string {
	s := ""
	if a.Div > 1 {
		s = fmt.Sprintf("div=%d", a.Div)
	}
	if a.Contig > 1 {
		if s != "" {
			s += " "
		}
		s += fmt.Sprintf("contig=%d", a.Contig)
	}
	return s
}

func (a *MemAttr) attrString() string {
	s := ""
	if a.EvictFirst {
		s = "evict_first"
	}
	if a.Spread {
		if s != "" {
			s += " "
		}
		s += "spread"
	}
	if a.Vec <= 1 {
		return s
	}
	if s != "" {
		s += " "
	}
	s += fmt.Sprintf("vec=%d", a.Vec)
	if a.Unaligned {
		s += " unaligned"
	}
	if a.Stride > 1 {
		s += fmt.Sprintf(" stride=%d", a.Stride)
	}
	if a.Uniform {
		s += " uniform"
	}
	if a.Ends {
		s += " ends"
	}
	return s
}

func (a ConstsAttr) attrString() string { return fmt.Sprint(a.C) }
func (a RegMapAttr) attrString() string { return fmt.Sprint(a.Map) }
func (a ConstAttr) attrString() string  { return fmt.Sprint(a.Int) } // floats: see Value.attrs

// Typed accessors. Each panics with BUG where the op carries another attribute.

func attrAs[T Attr](v *Value) T {
	a, ok := v.Attr.(T)
	if !ok {
		panic(fmt.Sprintf("BUG: %s carries %T, not %T", v.Op.Name(), v.Attr, *new(T)))
	}
	return a
}

// Axis is the axis of program_id, num_programs or expand_dims.
func (v *Value) Axis() int { return attrAs[AxisAttr](v).Axis }

// Index is the extent of arange or the index of loop_var and for_result.
func (v *Value) Index() int { return attrAs[IntAttr](v).N }

// Const is a constant's value.
func (v *Value) Const() ConstAttr { return attrAs[ConstAttr](v) }

// ArgName is the name of a kernel argument.
func (v *Value) ArgName() string { return attrAs[NameAttr](v).Name }

// Reduction is a reduce's axis and kind.
func (v *Value) Reduction() ReduceAttr { return attrAs[ReduceAttr](v) }

// Rotation is a rotate's axis and shift.
func (v *Value) Rotation() RotateAttr { return attrAs[RotateAttr](v) }

// Assumption is what an assume asserts.
func (v *Value) Assumption() AssumeAttr { return attrAs[AssumeAttr](v) }

// Mem is how a load, store or LDS access moves; lowering sets it.
func (v *Value) Mem() *MemAttr { return attrAs[*MemAttr](v) }

// AtomicOp is an atomic's kind, order and scope.
func (v *Value) AtomicOp() AtomicAttr { return attrAs[AtomicAttr](v) }

// Consts are a regconst's per-register constants.
func (v *Value) Consts() []int64 { return attrAs[ConstsAttr](v).C }

// RegMap is a gather_regs map.
func (v *Value) RegMap() []int { return attrAs[RegMapAttr](v).Map }

// Fold is a reduce_regs's grouping.
func (v *Value) Fold() FoldAttr { return attrAs[FoldAttr](v) }

// Butterfly is a butterfly's steps.
func (v *Value) Butterfly() ButterflyAttr { return attrAs[ButterflyAttr](v) }

// Lane is a shfl_xor's lane mask.
func (v *Value) Lane() int { return attrAs[LaneAttr](v).Mask }

// LDSFold is an lds_reduce's walk.
func (v *Value) LDSFold() LDSFoldAttr { return attrAs[LDSFoldAttr](v) }
