package ir

import "math"

// The scalar semantics of the IR's ops where C and Go differ or leave
// choices open. The interpreter calls these; the emitter writes C that
// computes the same bits. The ops' plain-Go references do not share them
// (internal/refnum has their own).

// MaxF32 is the max the IR defines and every back end implements: a NaN
// operand yields the other operand, and +0 is above -0.
func MaxF32(a, b float32) float32 {
	switch {
	case a != a:
		return b
	case b != b:
		return a
	case a == b:
		if math.Signbit(float64(a)) {
			return b
		}
		return a
	case a > b:
		return a
	}
	return b
}

// MinF32 mirrors MaxF32.
func MinF32(a, b float32) float32 {
	switch {
	case a != a:
		return b
	case b != b:
		return a
	case a == b:
		if math.Signbit(float64(a)) {
			return a
		}
		return b
	case a < b:
		return a
	}
	return b
}

// F32ToBF16 rounds to nearest even; NaN stays a quiet NaN (a NaN's
// payload is the target's: NVIDIA's conversion writes 0x7fff).
func F32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if f != f {
		return uint16(u>>16) | 0x40
	}
	u += 0x7FFF + (u>>16)&1
	return uint16(u >> 16)
}

// BF16ToF32 is exact.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// Pow2Floor is the largest power of two not above x, for finite x > 0; x
// itself otherwise.
func Pow2Floor(x float32) float32 {
	u := math.Float32bits(x)
	if x <= 0 || x != x || math.IsInf(float64(x), 0) {
		return x
	}
	if u>>23 == 0 { // subnormal: keep the highest set bit
		h := uint32(1)
		for h<<1 <= u {
			h <<= 1
		}
		return math.Float32frombits(h)
	}
	return math.Float32frombits(u &^ 0x7FFFFF)
}

// F32ToI32 truncates toward zero and saturates; NaN gives 0.
func F32ToI32(f float32) int32 {
	switch {
	case f != f:
		return 0
	case f >= 2147483648:
		return math.MaxInt32
	case f <= -2147483648:
		return math.MinInt32
	}
	return int32(f)
}

// FMAF32 is a·b + c rounded once to f32 (round to nearest even), the IR's
// fma. The product is exact in float64 and so is the error of its sum
// with c (two-sum); folding that error into the sum's last bit (round to
// odd) leaves float64's 29 extra bits free of a second tie, so the
// conversion to f32 rounds as one rounding of the exact value would.
func FMAF32(a, b, c float32) float32 {
	p, z := float64(a)*float64(b), float64(c)
	s := p + z
	if math.IsInf(s, 0) || s != s {
		return float32(s)
	}
	t := s - p
	if err := (p - (s - t)) + (z - t); err != 0 && math.Float64bits(s)&1 == 0 {
		s = math.Nextafter(s, math.Copysign(math.Inf(1), err))
	}
	return float32(s)
}
