package ir

import (
	"github.com/fp8gen/fp8gen/fp8"
)

// Kind is the scalar kind of a value's elements.
type Kind uint8

const (
	KInvalid Kind = iota
	KBool
	KI32
	KI64
	KF32
	KBF16
	KFP8
	KPtr
)

// DType is an element type. A pointer records its pointee's kind (and FP8
// format); an FP8 type records its format, so two FP8 formats never mix.
type DType struct {
	K       Kind
	Pointee Kind        // KPtr only
	Fmt     *fp8.Format // KFP8, or KPtr to KFP8
}

var (
	Bool = DType{K: KBool}
	I32  = DType{K: KI32}
	I64  = DType{K: KI64}
	F32  = DType{K: KF32}
	BF16 = DType{K: KBF16}
)

// FP8 is the element type of the given format.
func FP8(f *fp8.Format) DType { return DType{K: KFP8, Fmt: f} }

// PtrTo is a pointer to elements of type d.
func PtrTo(d DType) DType {
	if d.K == KPtr || d.K == KInvalid || d.K == KBool {
		panic("BUG: pointer to " + d.String())
	}
	return DType{K: KPtr, Pointee: d.K, Fmt: d.Fmt}
}

// Elem is the pointee of a pointer type.
func (d DType) Elem() DType { return DType{K: d.Pointee, Fmt: d.Fmt} }

// IsFloat reports whether arithmetic on d is floating point.
func (d DType) IsFloat() bool { return d.K == KF32 || d.K == KBF16 || d.K == KFP8 }

// IsInt reports whether d is a signed integer.
func (d DType) IsInt() bool { return d.K == KI32 || d.K == KI64 }

// Bits is the width of an element in memory, in bits.
func (d DType) Bits() int { return 8 * d.Bytes() }

// Bytes is the size of one element in memory.
func (d DType) Bytes() int {
	switch d.K {
	case KBool, KFP8:
		return 1
	case KBF16:
		return 2
	case KI32, KF32:
		return 4
	case KI64, KPtr:
		return 8
	}
	panic("BUG: size of " + d.String())
}

// Words is the number of 32-bit registers one element occupies in a lane.
func (d DType) Words() int {
	if d.K == KI64 || d.K == KPtr {
		return 2
	}
	return 1
}

// Type is a value's type. In the tile phases it is a tile: a shape of
// compile-time extents (rank 0 is a scalar), an element type and — once the
// layout pass has run — the layout that maps elements to lanes and
// registers. In the lanes phase the shape and layout are gone: a value is
// either uniform (Regs 0: one value the whole block shares) or an array of
// Regs registers in every lane.
type Type struct {
	Shape  []int
	DType  DType
	Layout *Layout
	Regs   int // lanes phase only
}

// Scalar is the rank-0 type of d.
func Scalar(d DType) Type { return Type{DType: d} }

// Tile is the type of a tile of the given shape.
func Tile(d DType, shape ...int) Type { return Type{Shape: append([]int(nil), shape...), DType: d} }

// Lanes is the lanes-phase type of n registers of d in every lane (0: uniform).
func Lanes(d DType, n int) Type { return Type{DType: d, Regs: n} }

// Rank is the number of dimensions.
func (t Type) Rank() int { return len(t.Shape) }

// Elems is the number of elements.
func (t Type) Elems() int {
	n := 1
	for _, s := range t.Shape {
		n *= s
	}
	return n
}

// SameShape reports whether two types have equal shapes.
func SameShape(a, b Type) bool {
	if len(a.Shape) != len(b.Shape) {
		return false
	}
	for i := range a.Shape {
		if a.Shape[i] != b.Shape[i] {
			return false
		}
	}
	return true
}

// With returns t with another element type.
func (t Type) With(d DType) Type { t.DType = d; return t }
