// Package fp8 encodes and decodes the four 8-bit floating-point formats that
// fp8gen targets, bit-exactly. It is the reference the generated GPU kernels
// are checked against: the C emitted for a kernel mirrors the integer
// algorithm in [Format.EncodeSat] step by step.
//
// # Formats
//
// Every code is S.EEEE.MMM (e4m3) or S.EEEEE.MM (e5m2): a sign bit, a biased
// exponent E and a mantissa M. A code with E > 0 is normal and has the value
// (-1)^S * 2^(E-bias) * (1 + M/2^m); a code with E == 0 is subnormal and has
// the value (-1)^S * 2^(1-bias) * (M/2^m), where m is the number of mantissa
// bits.
//
//	format    exp man bias  Inf        NaN                   -0    max    min subnormal
//	e4m3fn     4   3   7    none       0x7F, 0xFF            0x80  448    2^-9
//	e4m3fnuz   4   3   8    none       0x80 only             none  240    2^-10
//	e5m2       5   2  15    0x7C,0xFC  0x7D-0x7F, 0xFD-0xFF  0x80  57344  2^-16
//	e5m2fnuz   5   2  16    none       0x80 only             none  57344  2^-17
//
// e4m3fn and e5m2 are the OCP 8-bit formats (NVIDIA sm_90, AMD gfx950).
// e4m3fn gives up Inf and all NaNs but S.1111.111 so that S.1111.000 through
// S.1111.110 are finite; e5m2 keeps IEEE 754 special values. The "fnuz"
// formats (AMD gfx942/MI300) are Finite, NaN only at 0x80 ("negative zero"),
// Unsigned Zero: they have no Inf, no -0, and the bias is one higher than the
// OCP format of the same shape.
//
// # Encoding
//
// [Format.EncodeSat] is the conversion the whole project uses: float32 to fp8
// by round to nearest, ties to even, from the exact value of the float32, with
// saturation of finite overflow and of ±Inf to ±Max and NaN to the canonical
// NaN code [Format.NaNCode]. [Format.Encode] is the rarely used non-saturating
// variant, in which overflow produces Inf (e5m2) or NaN (the other formats).
// In the fnuz formats a zero result is always 0x00: negative values that round
// to zero, and -0 itself, encode as +0.
package fp8

import (
	"fmt"
	"math"
	"strings"
)

// Format describes one 8-bit floating-point format.
type Format struct {
	Name    string  // "e4m3fn", "e4m3fnuz", "e5m2", "e5m2fnuz"
	ExpBits int     // exponent field width
	ManBits int     // mantissa field width; ExpBits+ManBits == 7
	Bias    int     // exponent bias
	FNUZ    bool    // finite, NaN only at 0x80, no negative zero
	HasInf  bool    // all-ones exponent with zero mantissa is ±Inf (e5m2 only)
	Max     float32 // largest finite value
}

// The four supported formats. They are shared; do not modify them.
var (
	E4M3FN   = &Format{Name: "e4m3fn", ExpBits: 4, ManBits: 3, Bias: 7, Max: 448}
	E4M3FNUZ = &Format{Name: "e4m3fnuz", ExpBits: 4, ManBits: 3, Bias: 8, FNUZ: true, Max: 240}
	E5M2     = &Format{Name: "e5m2", ExpBits: 5, ManBits: 2, Bias: 15, HasInf: true, Max: 57344}
	E5M2FNUZ = &Format{Name: "e5m2fnuz", ExpBits: 5, ManBits: 2, Bias: 16, FNUZ: true, Max: 57344}
)

var formats = []*Format{E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ}

// Formats returns the supported formats in a fixed order
// (e4m3fn, e4m3fnuz, e5m2, e5m2fnuz). The slice is a fresh copy.
func Formats() []*Format { return append([]*Format(nil), formats...) }

// Names returns the names of the supported formats, in the order of [Formats].
func Names() []string {
	n := make([]string, len(formats))
	for i, f := range formats {
		n[i] = f.Name
	}
	return n
}

// ByName returns the format with the given name ("e4m3fn", "e4m3fnuz",
// "e5m2", "e5m2fnuz"). The match is exact.
func ByName(name string) (*Format, error) {
	for _, f := range formats {
		if f.Name == name {
			return f, nil
		}
	}
	return nil, fmt.Errorf("unknown fp8 format %q (known: %s)", name, strings.Join(Names(), ", "))
}

// String returns the format's name.
func (f *Format) String() string { return f.Name }

const (
	signBit = 0x80
	magMask = 0x7F
)

// infCode is the magnitude code of +Inf in a format with Inf: all-ones
// exponent, zero mantissa (0x7C in e5m2).
func (f *Format) infCode() uint8 {
	return uint8(((1 << f.ExpBits) - 1) << f.ManBits)
}

// NaNCode returns the canonical NaN code: 0x7F for e4m3fn and e5m2, 0x80 for
// the fnuz formats. Every NaN the encoders produce is this code.
func (f *Format) NaNCode() uint8 {
	if f.FNUZ {
		return 0x80
	}
	return 0x7F
}

// MaxCode returns the code of +Max: 0x7E for e4m3fn, 0x7B for e5m2, 0x7F for
// the fnuz formats. The code of -Max is MaxCode()|0x80.
func (f *Format) MaxCode() uint8 {
	switch {
	case f.FNUZ:
		return 0x7F // all 127 positive magnitudes are finite
	case f.HasInf:
		return f.infCode() - 1 // largest exponent below Inf, all-ones mantissa
	default:
		return 0x7E // 0x7F is NaN
	}
}

// IsNaN reports whether b is a NaN code of the format.
func (f *Format) IsNaN(b uint8) bool {
	switch {
	case f.FNUZ:
		return b == 0x80
	case f.HasInf:
		return b&magMask > f.infCode()
	default:
		return b&magMask == 0x7F
	}
}

// isInf reports whether b is ±Inf (only e5m2 has Inf).
func (f *Format) isInf(b uint8) bool {
	return f.HasInf && b&magMask == f.infCode()
}

// Decode returns the exact value of code b as a float32 (every value of every
// format is exactly representable). NaN codes decode to a quiet float32 NaN,
// the e5m2 Inf codes to ±Inf, and 0x80 of the OCP formats to -0.
func (f *Format) Decode(b uint8) float32 {
	if f.IsNaN(b) {
		return math.Float32frombits(0x7FC00000)
	}
	sign := uint32(b&signBit) << 24
	if f.isInf(b) {
		return math.Float32frombits(sign | 0x7F800000)
	}
	m := uint32(f.ManBits)
	e := int32(b&magMask) >> m    // biased fp8 exponent
	man := uint32(b) & (1<<m - 1) // fp8 mantissa
	if e == 0 {
		if man == 0 {
			return math.Float32frombits(sign) // ±0
		}
		// Subnormal: 2^(1-bias) * man/2^m. Normalise so that the leading
		// one moves into the implicit bit position m, lowering e by one per
		// shift (at most m-1 shifts).
		e = 1
		for man&(1<<m) == 0 {
			man <<= 1
			e--
		}
		man &= 1<<m - 1
	}
	// Rebias for float32 and left-align the mantissa in its 23-bit field.
	exp32 := uint32(e - int32(f.Bias) + 127)
	return math.Float32frombits(sign | exp32<<23 | man<<(23-m))
}

// EncodeSat converts x to the format with round to nearest, ties to even, and
// saturation. This is the documented conversion of the whole project:
//
//   - The exact value of x is rounded once, directly to the format (no
//     intermediate format, so no double rounding), to the nearest
//     representable value; a value exactly halfway between two neighbours
//     goes to the one with an even mantissa (code with low bit 0).
//   - Finite values whose magnitude rounds above Max, and ±Inf, give ±Max.
//     Values at or above Max in magnitude therefore all give ±Max.
//   - NaN, whatever its sign and payload, gives [Format.NaNCode].
//   - Subnormal results of the format are produced exactly; values below
//     half the smallest subnormal (and exactly half: ties to even) round to
//     zero. The zero keeps the sign of x (0x80) in e4m3fn and e5m2; in the
//     fnuz formats zero is always 0x00, never 0x80.
//   - float32 subnormal inputs are handled exactly (they all round to zero).
//
// Algorithm (integer only; the generated C mirrors it):
//
//  1. Split the float32 bits into sign, 8-bit exponent e32 and 23-bit
//     fraction. NaN and Inf (e32 == 255) are handled first.
//  2. Form the 24-bit significand sig = fraction | 1<<23 (for e32 == 0 the
//     implicit bit is 0 and the exponent is taken as 1), so that
//     |x| = sig * 2^(e32-150).
//  3. The target biased exponent is e = e32 - 127 + bias. A normal result
//     has its quantum (mantissa step) at 2^(e-bias-m), i.e. sig must be
//     shifted right by 23-m; a result with e < 1 is subnormal with the fixed
//     quantum 2^(1-bias-m), i.e. an extra shift of 1-e. So
//     shift = 23 - m + max(0, 1-e), clamped to 31.
//  4. Shift with round to nearest even:
//     r = (sig + (1<<(shift-1)) - 1 + ((sig>>shift)&1)) >> shift.
//     r counts quanta, implicit bit included for normals.
//  5. The magnitude code is (max(e,1)-1)<<m + r. Adding r (not r's mantissa)
//     makes the implicit bit increment the exponent field, so a mantissa that
//     rounds up to 2^(m+1) carries into the next exponent, and a subnormal
//     that rounds up to 2^m becomes the smallest normal, with no special case.
//  6. If the magnitude code exceeds MaxCode (this includes the NaN/Inf codes
//     and anything past 0x7F) the result overflowed: saturate to MaxCode.
//  7. Attach the sign, except that a zero magnitude in a fnuz format is
//     always 0x00.
func (f *Format) EncodeSat(x float32) uint8 {
	return f.encode(x, true)
}

// Encode converts x to the format with round to nearest, ties to even, but
// without saturation (IEEE-style overflow). It is [Format.EncodeSat] except
// that a value whose magnitude rounds above Max, and ±Inf, become ±Inf
// (0x7C/0xFC) in e5m2 and [Format.NaNCode] in the formats without Inf. The
// rounding of the overflow boundary follows from ties to even against the
// next, non-representable step above Max: in e4m3fn the midpoint 464 rounds
// down to 448, in e5m2 the midpoint 61440 rounds up to Inf, and in the fnuz
// formats the midpoint (248, 61440) rounds up to NaN. NaN gives NaNCode.
// Encode is used rarely; kernels use EncodeSat.
func (f *Format) Encode(x float32) uint8 {
	return f.encode(x, false)
}

// encode implements both conversions; see the algorithm in EncodeSat.
func (f *Format) encode(x float32, sat bool) uint8 {
	bits := math.Float32bits(x)
	sign := uint8(bits>>24) & signBit
	e32 := int32(bits>>23) & 0xFF
	frac := bits & 0x7FFFFF
	m := int32(f.ManBits)
	maxCode := int32(f.MaxCode())

	// Step 1: NaN and Inf.
	if e32 == 0xFF {
		if frac != 0 {
			return f.NaNCode()
		}
		return f.overflow(sign, sat)
	}

	// Step 2: 24-bit significand, |x| = sig * 2^(e32-150).
	sig := frac
	if e32 == 0 {
		e32 = 1 // float32 subnormal (or zero): no implicit bit
	} else {
		sig |= 1 << 23
	}

	// Step 3: target exponent and shift.
	e := e32 - 127 + int32(f.Bias)
	shift := 23 - m + max(0, 1-e)
	shift = min(shift, 31) // sig < 2^24 rounds to 0 for any shift >= 25

	// Step 4: round to nearest, ties to even.
	half := uint32(1) << (shift - 1)
	r := (sig + half - 1 + ((sig >> shift) & 1)) >> shift

	// Step 5: assemble the magnitude; the implicit bit carries into the
	// exponent field.
	mag := (max(e, 1)-1)<<m + int32(r)

	// Step 6: overflow.
	if mag > maxCode {
		return f.overflow(sign, sat)
	}

	// Step 7: sign; fnuz formats have no negative zero.
	if mag == 0 && f.FNUZ {
		return 0
	}
	return sign | uint8(mag)
}

// overflow is the result for a magnitude above Max or an infinite input.
func (f *Format) overflow(sign uint8, sat bool) uint8 {
	switch {
	case sat:
		return sign | f.MaxCode()
	case f.HasInf:
		return sign | f.infCode()
	default:
		return f.NaNCode()
	}
}
