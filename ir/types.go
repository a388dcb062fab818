package ir

import (
	"math"

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
	// KE8M0 is an 8-bit power-of-two scale (OCP MX's E8M0): byte b is
	// 2^(b − 127), 0xFF is NaN; no sign, zero or infinity. Stored and
	// moved; no IR arithmetic reads it: a kernel computes the biased
	// exponent as an i32 and casts it (the cast keeps the low byte).
	KE8M0
)

// kindFacts are a kind's facts; the table kinds holds one row a kind, so
// that a new element type is a row here (and, where the IR computes with
// it, its conversions in eval and emit).
type kindFacts struct {
	name  string // the IR's and the manifests' spelling (an FP8 type: its format's name)
	bytes int    // in memory
	words int    // 32-bit registers one element takes in a lane
	class kindClass
	c     string // the C type that holds one (emit)
	npy   string // the .npy descriptor of a tensor of it (cmd/fp8gen, the PyTorch loader)
}

type kindClass uint8

const (
	classNone  kindClass = iota
	classBool            // a predicate
	classInt             // signed integer arithmetic
	classFloat           // floating-point arithmetic (bf16 and FP8 through f32)
	classScale           // stored bits with a value but no arithmetic
	classPtr
)

var kinds = [...]kindFacts{
	KInvalid: {name: "invalid"},
	KBool:    {name: "i1", bytes: 1, words: 1, class: classBool, c: "bool"},
	KI32:     {name: "i32", bytes: 4, words: 1, class: classInt, c: "int", npy: "<i4"},
	KI64:     {name: "i64", bytes: 8, words: 2, class: classInt, c: "long long", npy: "<i8"},
	KF32:     {name: "f32", bytes: 4, words: 1, class: classFloat, c: "float", npy: "<f4"},
	KBF16:    {name: "bf16", bytes: 2, words: 1, class: classFloat, c: "uint16_t", npy: "<u2"},
	KFP8:     {name: "fp8", bytes: 1, words: 1, class: classFloat, c: "uint8_t", npy: "|u1"},
	KPtr:     {name: "ptr", bytes: 8, words: 2, class: classPtr},
	KE8M0:    {name: "e8m0", bytes: 1, words: 1, class: classScale, c: "uint8_t", npy: "|u1"},
}

func (k Kind) facts() kindFacts {
	if int(k) >= len(kinds) {
		return kinds[KInvalid]
	}
	return kinds[k]
}

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
	E8M0 = DType{K: KE8M0}
)

// FP8 is the element type of the given format.
func FP8(f *fp8.Format) DType { return DType{K: KFP8, Fmt: f} }

// DTypeNamed is the element type a tensor of manifests and .npy-facing
// code names: a kind's name ("bf16", "e8m0") or an FP8 format's
// ("e4m3fnuz"). Pointers, predicates and the bare "fp8" name none.
func DTypeNamed(name string) (DType, bool) {
	if f, err := fp8.ByName(name); err == nil {
		return FP8(f), true
	}
	for k, f := range kinds {
		if f.name == name && f.npy != "" && Kind(k) != KFP8 {
			return DType{K: Kind(k)}, true
		}
	}
	return DType{}, false
}

// StoredKinds are the names of the kinds a tensor can hold, in the
// table's order ("fp8" for every FP8 format).
func StoredKinds() []string {
	var out []string
	for _, f := range kinds {
		if f.npy != "" {
			out = append(out, f.name)
		}
	}
	return out
}

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
func (d DType) IsFloat() bool { return d.K.facts().class == classFloat }

// IsInt reports whether d is a signed integer.
func (d DType) IsInt() bool { return d.K.facts().class == classInt }

// Bits is the width of an element in memory, in bits.
func (d DType) Bits() int { return 8 * d.Bytes() }

// Bytes is the size of one element in memory.
func (d DType) Bytes() int {
	if b := d.K.facts().bytes; b > 0 {
		return b
	}
	panic("BUG: size of " + d.String())
}

// Words is the number of 32-bit registers one element occupies in a lane.
func (d DType) Words() int { return max(1, d.K.facts().words) }

// CType is the C type that holds one element ("" for a pointer, whose C
// type is its pointee's with a star).
func (d DType) CType() string { return d.K.facts().c }

// Npy is the .npy descriptor of a tensor of d ("" where none is stored).
func (d DType) Npy() string { return d.K.facts().npy }

// E8M0Value is the value of E8M0 byte b: 2^(b − 127), NaN for 0xFF
// (2^−127, b = 0, is an f32 subnormal: exact).
func E8M0Value(b uint8) float32 {
	if b == 0xFF {
		return float32(math.NaN())
	}
	return float32(math.Ldexp(1, int(b)-127))
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
