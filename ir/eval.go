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

// EvalUnary computes a one-operand elementwise op; d is the operand's type
// and to the result's.
func EvalUnary(op Op, d, to DType, x uint64) uint64 {
	switch op {
	case OpCast:
		return Cast(d, to, x)
	case OpBitcast, OpAssume:
		return x
	}
	if d.K == KF32 {
		switch op {
		case OpAbs:
			return x &^ (1 << 31)
		case OpNeg:
			return x ^ (1 << 31)
		case OpRsqrt:
			return bitsF32(1 / float32(math.Sqrt(float64(f32(x)))))
		case OpPow2Floor:
			return bitsF32(Pow2Floor(f32(x)))
		}
	}
	i := sext(d, x)
	switch op {
	case OpAbs:
		if i < 0 {
			i = -i
		}
	case OpNeg:
		i = -i
	default:
		panic("BUG: unary " + op.Name() + " on " + d.String())
	}
	return Trunc(d, i)
}

// compare is a comparison op on ordered operands, as a bool's bits (false
// for any comparison with a NaN but ne).
func compare[T float32 | int64](op Op, a, c T) uint64 {
	switch op {
	case OpLt:
		return b2u(a < c)
	case OpLe:
		return b2u(a <= c)
	case OpGt:
		return b2u(a > c)
	case OpGe:
		return b2u(a >= c)
	case OpEq:
		return b2u(a == c)
	}
	return b2u(a != c)
}

// EvalBinary computes a two-operand elementwise op on operands of type d.
func EvalBinary(op Op, d DType, x, y uint64) (uint64, error) {
	switch d.K {
	case KF32:
		a, c := f32(x), f32(y)
		switch op {
		case OpAdd:
			return bitsF32(a + c), nil
		case OpSub:
			return bitsF32(a - c), nil
		case OpMul:
			return bitsF32(a * c), nil
		case OpDiv:
			return bitsF32(a / c), nil
		case OpMax:
			return bitsF32(MaxF32(a, c)), nil
		case OpMin:
			return bitsF32(MinF32(a, c)), nil
		case OpLt, OpLe, OpGt, OpGe, OpEq, OpNe:
			return compare(op, a, c), nil
		}
	case KBool:
		switch op {
		case OpAnd:
			return x & y, nil
		case OpOr:
			return x | y, nil
		case OpXor, OpNe:
			return x ^ y, nil
		case OpEq:
			return b2u(x == y), nil
		}
	case KI32, KI64:
		a, c := sext(d, x), sext(d, y)
		bits := uint(d.Bits())
		switch op {
		case OpAdd:
			return Trunc(d, a+c), nil
		case OpSub:
			return Trunc(d, a-c), nil
		case OpMul:
			return Trunc(d, a*c), nil
		case OpDiv, OpRem:
			if c == 0 {
				return 0, ErrDivZero
			}
			if c == -1 { // MinInt / -1 wraps, as the hardware does
				if op == OpDiv {
					return Trunc(d, -a), nil
				}
				return 0, nil
			}
			if op == OpDiv {
				return Trunc(d, a/c), nil
			}
			return Trunc(d, a%c), nil
		case OpMax:
			return Trunc(d, max(a, c)), nil
		case OpMin:
			return Trunc(d, min(a, c)), nil
		case OpAnd:
			return Trunc(d, a&c), nil
		case OpOr:
			return Trunc(d, a|c), nil
		case OpXor:
			return Trunc(d, a^c), nil
		case OpShl:
			return Trunc(d, a<<(uint(c)%bits)), nil
		case OpShr:
			return Trunc(d, a>>(uint(c)%bits)), nil
		case OpShrU:
			u := uint64(a)
			if d.K == KI32 {
				u = uint64(uint32(a))
			}
			return Trunc(d, int64(u>>(uint(c)%bits))), nil
		case OpLt, OpLe, OpGt, OpGe, OpEq, OpNe:
			return compare(op, a, c), nil
		}
	}
	panic(fmt.Sprintf("BUG: no %s on %v", op.Name(), d))
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
	case from.K == KI64 && to.K == KI32:
		return uint64(int64(int32(x)))
	case from.K == KBool && to.K == KI32:
		return x
	}
	panic(fmt.Sprintf("BUG: cast from %v to %v", from, to))
}
