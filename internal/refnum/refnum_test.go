package refnum

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/fp8gen/fp8gen/fp8"
	"github.com/fp8gen/fp8gen/ir"
)

// The references' arithmetic and the kernels' are written apart; here they
// must agree, on every fp8 value, every midpoint between neighbours (the
// ties), their neighbours in f32, the specials and random floats.
func TestEncodeAgreesWithPackageFP8(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, f := range fp8.Formats() {
		tab := tableOf(f)
		var xs []float32
		for i, v := range tab.vals {
			xs = append(xs, float32(v))
			if i+1 < len(tab.vals) {
				mid := float32((v + tab.vals[i+1]) / 2)
				xs = append(xs, mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, float32(math.Inf(1))))
			}
		}
		inf := float32(math.Inf(1))
		xs = append(xs, 0, inf, float32(math.NaN()), f.Max*1.0625, math.Nextafter32(f.Max, inf), 1e-30, math.Float32frombits(1))
		for range 200000 {
			xs = append(xs, math.Float32frombits(r.Uint32()))
		}
		// Every bf16 and the last f32 below each: the ends of encode's
		// ranges by top 16 bits.
		for k := uint32(0); k < 1<<16; k++ {
			xs = append(xs, math.Float32frombits(k<<16), math.Float32frombits(k<<16|0xffff))
		}
		for _, x := range xs {
			for _, s := range []float32{x, -x} {
				if got, want := EncodeFP8(f, s), f.EncodeSat(s); got != want {
					t.Fatalf("%s: EncodeFP8(%g = %#08x) = %#02x; package fp8 says %#02x", f.Name, s, math.Float32bits(s), got, want)
				}
			}
		}
	}
}

func TestMaxNumAndPow2Floor(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	specials := []float32{0, float32(math.Copysign(0, -1)), 1, -1, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.Float32frombits(1), math.Float32frombits(0x7f810000)}
	var xs []float32
	xs = append(xs, specials...)
	for range 100000 {
		xs = append(xs, math.Float32frombits(r.Uint32()))
	}
	same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b }
	for i, a := range xs {
		b := xs[(i*7919+1)%len(xs)]
		if got, want := MaxNum(a, b), ir.MaxF32(a, b); !same(got, want) {
			t.Fatalf("MaxNum(%g, %g) = %g; ir says %g", a, b, got, want)
		}
		if got, want := Pow2Floor(a), ir.Pow2Floor(a); !same(got, want) {
			t.Fatalf("Pow2Floor(%g) = %g; ir says %g", a, got, want)
		}
	}
}

func TestDecodeAgreesWithPackageFP8(t *testing.T) {
	for _, f := range fp8.Formats() {
		for c := 0; c < 256; c++ {
			got, want := DecodeFP8(f, uint8(c)), f.Decode(uint8(c))
			bothNaN := math.IsNaN(float64(got)) && math.IsNaN(float64(want))
			if !bothNaN && math.Float32bits(got) != math.Float32bits(want) {
				t.Errorf("%s: DecodeFP8(%#02x) = %v; package fp8 says %v", f.Name, c, got, want)
			}
		}
	}
}

// BF16 agrees with the kernels' conversion (ir.F32ToBF16, an integer
// rounding trick) on every float32 whose low 16 bits are at a tie or
// next to one, and on random ones.
func TestBF16(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	check := func(u uint32) {
		x := math.Float32frombits(u)
		if got, want := BF16(x), ir.F32ToBF16(x); got != want {
			t.Fatalf("BF16(%#08x) = %#04x; the kernels give %#04x", u, got, want)
		}
	}
	for hi := uint32(0); hi < 1<<16; hi++ {
		for _, lo := range []uint32{0, 1, 0x7fff, 0x8000, 0x8001, 0xffff} {
			check(hi<<16 | lo)
		}
	}
	for range 1 << 20 {
		check(r.Uint32())
	}
}

// fmaExact is a·b + c rounded once to f32 by big.Float: exact product and
// sum, then Float32's nearest-even rounding (subnormals included).
func fmaExact(a, b, c float32) float32 {
	if w := float64(a)*float64(b) + float64(c); math.IsNaN(w) || math.IsInf(w, 0) {
		return float32(w) // Inf and NaN operands: float64's result, exact there
	}
	x := new(big.Float).SetPrec(2000).SetFloat64(float64(a))
	x.Mul(x, new(big.Float).SetFloat64(float64(b))).Add(x, new(big.Float).SetFloat64(float64(c)))
	f, _ := x.Float32()
	if x.Sign() == 0 { // an exact zero: IEEE's signed-zero rule, float64's too
		return float32(float64(a)*float64(b) + float64(c))
	}
	return f
}

// TestFMA holds refnum.FMA and the IR's ir.FMAF32 to one rounding of the
// exact value: random operands, sums that land a hair off a midpoint of
// two f32 neighbours (where rounding twice goes wrong), cancellation to
// subnormals and zeros, overflow, infinities and NaN.
func TestFMA(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	negZ, minSub := float32(math.Copysign(0, -1)), math.Float32frombits(1)
	r := rand.New(rand.NewPCG(7, 11))
	type fmaCase struct{ a, b, c float32 }
	var cases []fmaCase
	bits := func() float32 { return math.Float32frombits(r.Uint32()) }
	for range 20000 {
		cases = append(cases, fmaCase{bits(), bits(), bits()})
		x := float32(r.NormFloat64())
		cases = append(cases, fmaCase{x, float32(r.NormFloat64()), float32(r.NormFloat64())})
		// c plus a hair under half its ulp: a·b = half·(1 + 2^−23)·(1 − 2^−23)
		// = half·(1 − 2^−46), which float64 rounds onto the midpoint.
		c := float32(1+r.Float64()) * float32(math.Ldexp(1, r.IntN(60)-30))
		half := (math.Nextafter32(c, inf) - c) / 2
		a := half * (1 + float32(math.Ldexp(1, -23)))
		b := 1 - float32(math.Ldexp(1, -23))
		cases = append(cases, fmaCase{a, b, c}, fmaCase{-a, b, -c}, fmaCase{a, -b, c})
		// a·b − c cancelling into the subnormals.
		s := float32(r.Float64()) * float32(math.Ldexp(1, -70))
		cases = append(cases, fmaCase{s, math.Nextafter32(s, inf), -s * s})
	}
	mx := float32(math.MaxFloat32)
	cases = append(cases,
		fmaCase{1, float32(math.Ldexp(1, -24)), 1 + float32(math.Ldexp(1, -23))},
		fmaCase{float32(math.Ldexp(1, -24)) * (1 + float32(math.Ldexp(1, -23))), 1 - float32(math.Ldexp(1, -24)), 1 + float32(math.Ldexp(1, -23))},
		fmaCase{mx, 1 + float32(math.Ldexp(1, -23)), 0}, fmaCase{mx, 1, mx}, fmaCase{mx, -1, mx},
		fmaCase{inf, 0, 1}, fmaCase{inf, 1, -inf}, fmaCase{nan, 1, 1}, fmaCase{1, 1, nan},
		fmaCase{negZ, 1, negZ}, fmaCase{negZ, 1, 0}, fmaCase{1, -1, 1}, fmaCase{minSub, 0.5, 0}, fmaCase{minSub, 1.5, negZ},
	)
	for _, tc := range cases {
		want := fmaExact(tc.a, tc.b, tc.c)
		for name, f := range map[string]func(a, b, c float32) float32{"refnum.FMA": FMA, "ir.FMAF32": ir.FMAF32} {
			got := f(tc.a, tc.b, tc.c)
			if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
				t.Fatalf("%s(%g, %g, %g) = %g (%#x); want %g (%#x)", name, tc.a, tc.b, tc.c, got, math.Float32bits(got), want, math.Float32bits(want))
			}
		}
	}
}
