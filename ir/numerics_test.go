package ir_test

import (
	"math"
	"testing"

	"github.com/fp8gen/fp8gen/ir"
)

var (
	nan    = float32(math.NaN())
	inf    = float32(math.Inf(1))
	negZ   = float32(math.Copysign(0, -1))
	minSub = math.Float32frombits(1)
)

// same compares floats by bits, so that -0 ≠ +0 and NaN = NaN of equal bits.
func same(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }

func TestMaxMinF32(t *testing.T) {
	for _, tt := range []struct {
		a, b, max, min float32
	}{
		{1, 2, 2, 1},
		{-1, -2, -1, -2},
		{nan, 3, 3, 3},
		{3, nan, 3, 3},
		{nan, -inf, -inf, -inf},
		{inf, nan, inf, inf},
		{negZ, 0, 0, negZ},
		{0, negZ, 0, negZ},
		{negZ, negZ, negZ, negZ},
		{0, 0, 0, 0},
		{-inf, inf, inf, -inf},
		{minSub, 0, minSub, 0},
		{-minSub, negZ, negZ, -minSub},
	} {
		if got := ir.MaxF32(tt.a, tt.b); !same(got, tt.max) {
			t.Errorf("MaxF32(%v, %v) = %v (%#x); want %v", tt.a, tt.b, got, math.Float32bits(got), tt.max)
		}
		if got := ir.MinF32(tt.a, tt.b); !same(got, tt.min) {
			t.Errorf("MinF32(%v, %v) = %v (%#x); want %v", tt.a, tt.b, got, math.Float32bits(got), tt.min)
		}
	}
	if got := ir.MaxF32(nan, nan); got == got {
		t.Errorf("MaxF32(NaN, NaN) = %v; want NaN", got)
	}
	if got := ir.MinF32(nan, nan); got == got {
		t.Errorf("MinF32(NaN, NaN) = %v; want NaN", got)
	}
}

func TestF32ToBF16(t *testing.T) {
	for _, tt := range []struct {
		in   uint32
		want uint16
		why  string
	}{
		{0x3F800000, 0x3F80, "1 is exact"},
		{0x3F808000, 0x3F80, "tie rounds to the even 0x3F80"},
		{0x3F818000, 0x3F82, "tie rounds to the even 0x3F82"},
		{0x3F808001, 0x3F81, "just above the tie rounds up"},
		{0x3F807FFF, 0x3F80, "just below the tie rounds down"},
		{0xBF818000, 0xBF82, "negative tie to even"},
		{0x80000000, 0x8000, "-0 keeps its sign"},
		{0x00008000, 0x0000, "subnormal tie to even zero"},
		{0x00018000, 0x0002, "subnormal tie to even"},
		{0x7F7FFFFF, 0x7F80, "max f32 rounds to Inf"},
		{0x7F7F7FFF, 0x7F7F, "below the overflow tie stays finite"},
		{0x7F800000, 0x7F80, "+Inf"},
		{0xFF800000, 0xFF80, "-Inf"},
	} {
		if got := ir.F32ToBF16(math.Float32frombits(tt.in)); got != tt.want {
			t.Errorf("F32ToBF16(%#08x) = %#04x; want %#04x (%s)", tt.in, got, tt.want, tt.why)
		}
	}
	// NaN stays NaN, quiet, with its sign, even when its payload lies only
	// in the bits rounding drops (where rounding alone would give Inf).
	for _, in := range []uint32{0x7FC00000, 0x7F800001, 0x7FBFFFFF, 0xFF800001, 0x7FFFFFFF} {
		got := ir.F32ToBF16(math.Float32frombits(in))
		if got&0x7F80 != 0x7F80 || got&0x7F == 0 || got&0x40 == 0 || got>>15 != uint16(in>>31) {
			t.Errorf("F32ToBF16(%#08x) = %#04x; want a quiet NaN of the same sign", in, got)
		}
		if back := ir.BF16ToF32(got); back == back {
			t.Errorf("BF16ToF32(F32ToBF16(%#08x)) = %v; want NaN", in, back)
		}
	}
	// Every bf16 value round trips through f32.
	for h := 0; h < 1<<16; h++ {
		f := ir.BF16ToF32(uint16(h))
		if f != f {
			continue
		}
		if got := ir.F32ToBF16(f); got != uint16(h) {
			t.Fatalf("F32ToBF16(BF16ToF32(%#04x)) = %#04x", h, got)
		}
	}
}

func TestPow2Floor(t *testing.T) {
	for _, tt := range []struct {
		in, want float32
	}{
		{1, 1},
		{1.5, 1},
		{2, 2},
		{3.999, 2},
		{0.75, 0.5},
		{448, 256},
		{math.MaxFloat32, math.Float32frombits(0x7F000000)},
		{math.SmallestNonzeroFloat32, math.SmallestNonzeroFloat32},
		{math.Float32frombits(0x00000003), math.Float32frombits(0x00000002)},
		{math.Float32frombits(0x007FFFFF), math.Float32frombits(0x00400000)},
		{math.Float32frombits(0x00400000), math.Float32frombits(0x00400000)},
		{math.Float32frombits(0x00800001), math.Float32frombits(0x00800000)}, // smallest normal
		{0, 0},
		{negZ, negZ},
		{-3, -3},
		{-minSub, -minSub},
		{inf, inf},
		{-inf, -inf},
	} {
		if got := ir.Pow2Floor(tt.in); !same(got, tt.want) {
			t.Errorf("Pow2Floor(%v [%#08x]) = %v [%#08x]; want %v", tt.in, math.Float32bits(tt.in), got, math.Float32bits(got), tt.want)
		}
	}
	if got := ir.Pow2Floor(nan); !same(got, nan) {
		t.Errorf("Pow2Floor(NaN) = %#08x; want the same NaN %#08x", math.Float32bits(got), math.Float32bits(nan))
	}
	// For every positive finite x: a power of two p ≤ x < 2p.
	for _, bits := range []uint32{1, 2, 5, 0x1234, 0x7FFFFF, 0x800000, 0x3F800001, 0x4B000000, 0x7F7FFFFF} {
		x := math.Float32frombits(bits)
		p := ir.Pow2Floor(x)
		if m, _ := math.Frexp(float64(p)); m != 0.5 || p > x || float64(x) >= 2*float64(p) {
			t.Errorf("Pow2Floor(%g) = %g: not the largest power of two ≤ x", x, p)
		}
	}
}

func TestF32ToI32(t *testing.T) {
	for _, tt := range []struct {
		in   float32
		want int32
	}{
		{1.9, 1}, {-1.9, -1}, {nan, 0}, {inf, math.MaxInt32}, {-inf, math.MinInt32},
		{3e9, math.MaxInt32}, {-3e9, math.MinInt32}, {2147483520, 2147483520},
	} {
		if got := ir.F32ToI32(tt.in); got != tt.want {
			t.Errorf("F32ToI32(%v) = %d; want %d", tt.in, got, tt.want)
		}
	}
}
