package ops

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/fp8gen/fp8gen/ir"
)

// Bits is element i's bits (floats as their IEEE bits, integers
// sign-extended).
func (t *Tensor) Bits(i int) uint64 {
	switch t.DType.K {
	case ir.KFP8, ir.KE8M0:
		return uint64(t.Data[i])
	case ir.KBF16:
		return uint64(binary.LittleEndian.Uint16(t.Data[2*i:]))
	case ir.KF32:
		return uint64(binary.LittleEndian.Uint32(t.Data[4*i:]))
	case ir.KI32:
		return uint64(int64(int32(binary.LittleEndian.Uint32(t.Data[4*i:]))))
	case ir.KI64:
		return binary.LittleEndian.Uint64(t.Data[8*i:])
	}
	panic("BUG: tensor of " + t.DType.String())
}

// SetBits writes element i's bits.
func (t *Tensor) SetBits(i int, b uint64) {
	switch t.DType.K {
	case ir.KFP8, ir.KE8M0:
		t.Data[i] = uint8(b)
	case ir.KBF16:
		binary.LittleEndian.PutUint16(t.Data[2*i:], uint16(b))
	case ir.KF32, ir.KI32:
		binary.LittleEndian.PutUint32(t.Data[4*i:], uint32(b))
	case ir.KI64:
		binary.LittleEndian.PutUint64(t.Data[8*i:], b)
	default:
		panic("BUG: tensor of " + t.DType.String())
	}
}

// Float is element i's value.
func (t *Tensor) Float(i int) float64 {
	b := t.Bits(i)
	switch t.DType.K {
	case ir.KFP8:
		return float64(t.DType.Fmt.Decode(uint8(b)))
	case ir.KE8M0:
		return float64(ir.E8M0Value(uint8(b)))
	case ir.KBF16:
		return float64(math.Float32frombits(uint32(b) << 16))
	case ir.KF32:
		return float64(math.Float32frombits(uint32(b)))
	}
	return float64(int64(b))
}

// Set writes x to element i, rounded to the element type (to nearest even;
// integers truncate; an E8M0 element takes only the values it has).
func (t *Tensor) Set(i int, x float64) {
	switch t.DType.K {
	case ir.KFP8:
		t.SetBits(i, uint64(t.DType.Fmt.EncodeSat(float32(x))))
	case ir.KBF16:
		t.SetBits(i, uint64(ir.F32ToBF16(float32(x))))
	case ir.KF32:
		t.SetBits(i, uint64(math.Float32bits(float32(x))))
	case ir.KE8M0: // no rounding rule of its own: the MX scale rules are the ops'
		frac, exp := math.Frexp(x)
		switch {
		case math.IsNaN(x):
			t.SetBits(i, 0xFF)
		case frac == 0.5 && exp-1 >= -127 && exp-1 <= 127:
			t.SetBits(i, uint64(exp-1+127))
		default:
			panic(fmt.Sprintf("BUG: %v is no E8M0 value (a power of two from 2^-127 to 2^127, or NaN)", x))
		}
	default:
		t.SetBits(i, uint64(int64(x)))
	}
}

// Floats decodes a float tensor as f32.
func (t *Tensor) Floats() []float32 {
	out := make([]float32, t.Elems())
	bigParallel(len(out), func(lo, hi, _ int) {
		for i := lo; i < hi; i++ {
			out[i] = float32(t.Float(i))
		}
	})
	return out
}

// Ints decodes an integer tensor.
func (t *Tensor) Ints() []int64 {
	out := make([]int64, t.Elems())
	for i := range out {
		out[i] = int64(t.Bits(i))
	}
	return out
}
