package ir

import (
	"errors"
	"fmt"
	"math"
)

// This file defines, bit for bit, what each elementwise op computes on one
// element. A value's bits are held in a uint64: floats as their IEEE bits
// (bf16 in the low 16, fp8 in the low 8), integers sign-extended, bools
// 0 or 1, pointers as opaque words. The interpreter and the simplifier's
// constant folding both evaluate through here; the emitter writes C that
// computes the same bits (held to it by the GPU tests and the g++ prelude
// test).

// ErrDivZero is an integer division or remainder by zero.
var ErrDivZero = errors.New("integer division by zero")

func f32(x uint64) float32     { return math.Float32frombits(uint32(x)) }
func bitsF32(f float32) uint64 { return uint64(math.Float32bits(f)) }

func sext(d DType, x uint64) int64 {
	if d.K == KI32 {
		return int64(int32(x))
	}
	return int64(x)
}

// Trunc wraps an integer result to d's width (sign-extended in the word).
func Trunc(d DType, i int64) uint64 {
	if d.K == KI32 {
		return uint64(int64(int32(i)))
	}
	return uint64(i)
}

func b2u(c bool) uint64 {
	if c {
		return 1
	}
	return 0
}

// ConstBits is a constant's bits in its type.
func ConstBits(d DType, c ConstAttr) uint64 {
	switch d.K {
	case KF32:
		return bitsF32(float32(c.Float))
	case KBF16:
		return uint64(F32ToBF16(float32(c.Float)))
	case KFP8:
		return uint64(d.Fmt.EncodeSat(float32(c.Float)))
	case KI32:
		return Trunc(d, c.Int)
	}
	return uint64(c.Int)
}

// evalRule is what one elementwise op computes, per operand class: a
// column is nil where the op does not apply (the verifier has refused such
// a value before anything evaluates it).
type evalRule struct {
	f32  func(a, b float32) float32
	i    func(a, b int64, bits uint) (int64, error) // wrapped to bits afterwards
	bool func(a, b bool) bool
	// Comparisons: false for any comparison with a NaN but ne.
	cmpF32 func(a, b float32) bool
	cmpI   func(a, b int64) bool
	// One-operand ops: f32 bits to f32 bits, and signed integers.
	f32Bits func(x uint32) uint32
	iUnary  func(x int64) int64
}

func wrapping(f func(a, b int64) int64) func(a, b int64, _ uint) (int64, error) {
	return func(a, b int64, _ uint) (int64, error) { return f(a, b), nil }
}

// shiftBy shifts by the amount modulo the width, as the back ends do.
func shiftBy(f func(a int64, n uint, bits uint) int64) func(a, b int64, bits uint) (int64, error) {
	return func(a, b int64, bits uint) (int64, error) { return f(a, uint(b)%bits, bits), nil }
}

func divRem(div bool) func(a, c int64, _ uint) (int64, error) {
	return func(a, c int64, _ uint) (int64, error) {
		switch {
		case c == 0:
			return 0, ErrDivZero
		case c == -1 && div: // MinInt / -1 wraps, as the hardware does
			return -a, nil
		case c == -1:
			return 0, nil
		case div:
			return a / c, nil
		}
		return a % c, nil
	}
}

// evalRules is the table of what each elementwise op computes.
var evalRules = [numOps]evalRule{
	OpAdd: {f32: func(a, b float32) float32 { return a + b }, i: wrapping(func(a, b int64) int64 { return a + b })},
	OpSub: {f32: func(a, b float32) float32 { return a - b }, i: wrapping(func(a, b int64) int64 { return a - b })},
	OpMul: {f32: func(a, b float32) float32 { return a * b }, i: wrapping(func(a, b int64) int64 { return a * b })},
	OpDiv: {f32: func(a, b float32) float32 { return a / b }, i: divRem(true)},
	OpRem: {i: divRem(false)},
	OpMax: {f32: MaxF32, i: wrapping(func(a, b int64) int64 { return max(a, b) })},
	OpMin: {f32: MinF32, i: wrapping(func(a, b int64) int64 { return min(a, b) })},
	OpAnd: {i: wrapping(func(a, b int64) int64 { return a & b }), bool: func(a, b bool) bool { return a && b }},
	OpOr:  {i: wrapping(func(a, b int64) int64 { return a | b }), bool: func(a, b bool) bool { return a || b }},
	OpXor: {i: wrapping(func(a, b int64) int64 { return a ^ b }), bool: func(a, b bool) bool { return a != b }},
	OpShl: {i: shiftBy(func(a int64, n, _ uint) int64 { return a << n })},
	OpShr: {i: shiftBy(func(a int64, n, _ uint) int64 { return a >> n })},
	OpShrU: {i: shiftBy(func(a int64, n, bits uint) int64 {
		return int64(uint64(a) & (^uint64(0) >> (64 - bits)) >> n)
	})},
	OpLt: {cmpF32: func(a, b float32) bool { return a < b }, cmpI: func(a, b int64) bool { return a < b }},
	OpLe: {cmpF32: func(a, b float32) bool { return a <= b }, cmpI: func(a, b int64) bool { return a <= b }},
	OpGt: {cmpF32: func(a, b float32) bool { return a > b }, cmpI: func(a, b int64) bool { return a > b }},
	OpGe: {cmpF32: func(a, b float32) bool { return a >= b }, cmpI: func(a, b int64) bool { return a >= b }},
	OpEq: {cmpF32: func(a, b float32) bool { return a == b }, cmpI: func(a, b int64) bool { return a == b },
		bool: func(a, b bool) bool { return a == b }},
	OpNe: {cmpF32: func(a, b float32) bool { return a != b }, cmpI: func(a, b int64) bool { return a != b },
		bool: func(a, b bool) bool { return a != b }},
	// The sign bit alone, as the back ends' abs and neg.
	OpAbs: {f32Bits: func(x uint32) uint32 { return x &^ (1 << 31) }, iUnary: func(x int64) int64 { return max(x, -x) }},
	OpNeg: {f32Bits: func(x uint32) uint32 { return x ^ (1 << 31) }, iUnary: func(x int64) int64 { return -x }},
	OpRsqrt: {f32Bits: func(x uint32) uint32 {
		return math.Float32bits(1 / float32(math.Sqrt(float64(math.Float32frombits(x)))))
	}},
	OpPow2Floor: {f32Bits: func(x uint32) uint32 { return math.Float32bits(Pow2Floor(math.Float32frombits(x))) }},
}

// EvalUnary computes a one-operand elementwise op; d is the operand's type
// and to the result's.
func EvalUnary(op Op, d, to DType, x uint64) uint64 {
	r := &evalRules[op]
	switch {
	case op == OpCast:
		return Cast(d, to, x)
	case op == OpBitcast || op == OpAssume:
		return x
	case d.K == KF32 && r.f32Bits != nil:
		return uint64(r.f32Bits(uint32(x)))
	case d.IsInt() && r.iUnary != nil:
		return Trunc(d, r.iUnary(sext(d, x)))
	}
	panic("BUG: unary " + op.Name() + " on " + d.String())
}

// EvalBinary computes a two-operand elementwise op on operands of type d.
func EvalBinary(op Op, d DType, x, y uint64) (uint64, error) {
	f := Binary(op, d)
	if f == nil {
		panic(fmt.Sprintf("BUG: no %s on %v", op.Name(), d))
	}
	return f(x, y)
}

// Binary is the function EvalBinary applies for op on operands of type d,
// or nil where op does not apply to d: a loop over many elements looks the
// rule up once.
func Binary(op Op, d DType) func(x, y uint64) (uint64, error) {
	r := &evalRules[op]
	switch {
	case d.K == KF32 && r.cmpF32 != nil:
		f := r.cmpF32
		return func(x, y uint64) (uint64, error) { return b2u(f(f32(x), f32(y))), nil }
	case d.K == KF32 && r.f32 != nil:
		f := r.f32
		return func(x, y uint64) (uint64, error) { return bitsF32(f(f32(x), f32(y))), nil }
	case d.K == KBool && r.bool != nil:
		f := r.bool
		return func(x, y uint64) (uint64, error) { return b2u(f(x != 0, y != 0)), nil }
	case d.IsInt() && r.cmpI != nil:
		f := r.cmpI
		return func(x, y uint64) (uint64, error) { return b2u(f(sext(d, x), sext(d, y))), nil }
	case d.IsInt() && r.i != nil:
		f, bits := r.i, uint(d.Bits())
		return func(x, y uint64) (uint64, error) {
			z, err := f(sext(d, x), sext(d, y), bits)
			return Trunc(d, z), err
		}
	}
	return nil
}

// Fold applies a reduction's (or an atomic's) combining function.
func Fold(k ReduceKind, d DType, a, x uint64) uint64 {
	if d.K == KF32 {
		fa, fx := f32(a), f32(x)
		switch k {
		case RMax:
			return bitsF32(MaxF32(fa, fx))
		case RMin:
			return bitsF32(MinF32(fa, fx))
		}
		return bitsF32(fa + fx)
	}
	ia, ix := sext(d, a), sext(d, x)
	var r int64
	switch k {
	case RMax:
		r = max(ia, ix)
	case RMin:
		r = min(ia, ix)
	default:
		r = ia + ix
	}
	return Trunc(d, r)
}

// Identity is the neutral element of a reduction.
func Identity(k ReduceKind, d DType) uint64 {
	if d.K == KF32 {
		switch k {
		case RMax:
			return bitsF32(float32(math.Inf(-1)))
		case RMin:
			return bitsF32(float32(math.Inf(1)))
		}
		return bitsF32(0)
	}
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if d.K == KI32 {
		lo, hi = math.MinInt32, math.MaxInt32
	}
	switch k {
	case RMax:
		return Trunc(d, lo)
	case RMin:
		return Trunc(d, hi)
	}
	return 0
}

// Cast converts one element's bits between types, as the back ends do.
func Cast(from, to DType, x uint64) uint64 {
	switch {
	case from == to:
		return x
	case from.K == KF32 && to.K == KBF16:
		return uint64(F32ToBF16(f32(x)))
	case from.K == KF32 && to.K == KFP8:
		return uint64(to.Fmt.EncodeSat(f32(x)))
	case from.K == KF32 && to.K == KI32:
		return uint64(int64(F32ToI32(f32(x))))
	case from.K == KBF16 && to.K == KF32:
		return bitsF32(BF16ToF32(uint16(x)))
	case from.K == KFP8 && to.K == KF32:
		return bitsF32(from.Fmt.Decode(uint8(x)))
	case from.K == KI32 && to.K == KF32:
		return bitsF32(float32(int32(x)))
	case from.K == KI32 && to.K == KI64:
		return uint64(int64(int32(x)))
	case from.K == KI32 && to.K == KE8M0: // the low byte: a biased exponent
		return uint64(uint8(x))
	case from.K == KI64 && to.K == KI32:
		return uint64(int64(int32(x)))
	case from.K == KBool && to.K == KI32:
		return x
	}
	panic(fmt.Sprintf("BUG: cast from %v to %v", from, to))
}
