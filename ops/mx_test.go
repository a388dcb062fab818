package ops

import (
	"math"
	"strings"
	"testing"

	"github.com/fp8gen/fp8gen/target"
)

// MX formats are OCP's: gfx942's e4m3fnuz is refused with a line naming
// the targets that run it, and blocks that do not tile x are refused.
func TestOCPOnly(t *testing.T) {
	fnuz, _ := target.Lookup("gfx942")
	_, err := MXCast.NewPlan(fnuz, Shape{"M": 64, "K": 64}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "mx_cast: MX formats are OCP's") || !strings.Contains(err.Error(), "gfx950") {
		t.Errorf("mx_cast on gfx942: %v; want the OCP refusal naming gfx950", err)
	}
	for _, tname := range []string{"gfx950", "sm_90"} {
		tg, _ := target.Lookup(tname)
		for _, c := range []struct {
			sh   Shape
			o    Options
			want string
		}{
			{Shape{"M": 64, "K": 48}, nil, "K must be a multiple of 32"},
			{Shape{"M": 48, "K": 64}, Options{"dim": "1"}, "M must be a multiple of 32"},
			{Shape{"M": 48, "K": 64}, Options{"dim": "both"}, "M must be a multiple of 32"},
			{Shape{"M": 64, "K": 48}, Options{"dim": "both"}, "K must be a multiple of 32"},
			{Shape{"M": 64, "K": 64}, Options{"mx_round": "ceil"}, "mx_round"},
		} {
			_, err := MXCast.NewPlan(tg, c.sh, c.o, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s %v %v: %v; want %q", tname, c.sh, c.o, err, c.want)
			}
		}
		// dim=1 needs no K rule, dim=0 no M rule.
		for _, c := range []struct {
			sh Shape
			o  Options
		}{{Shape{"M": 64, "K": 48}, Options{"dim": "1"}}, {Shape{"M": 48, "K": 64}, nil}} {
			if _, err := MXCast.NewPlan(tg, c.sh, c.o, nil); err != nil {
				t.Errorf("%s %v %v: %v", tname, c.sh, c.o, err)
			}
		}
	}
}

// The scale bytes of the documented rules, worked by hand: OCP's floor
// (torchao FLOOR) and NVIDIA's rceil (TransformerEngine, torchao RCEIL).
func TestMXScaleRules(t *testing.T) {
	tg, _ := target.Lookup("sm_90")
	e4, _ := tg.FP8("e4m3")
	e5, _ := tg.FP8("e5m2")
	sub := math.Ldexp(1, -133) // a bf16 subnormal
	for _, c := range []struct {
		amax        float64
		e5m2, rceil bool
		want        uint8
	}{
		{0, false, false, 0}, {0, false, true, 0}, // amax 0: the smallest scale, never NaN or −Inf
		{1, false, false, 127 - 8}, // floor(log2 1) − 8
		{1, true, false, 127 - 15},
		{448, false, false, 127},               // 448 = 1.75·2^8: X = 0, nothing saturates
		{448, false, true, 127},                // fl(1/448)·448 rounds to 1: nothing saturates
		{449, false, false, 127},               // floor: 449/1 saturates to 448
		{512, false, false, 128},               // a power of two: X = 9 − 8
		{512, false, true, 128},                // 512/448 → 2
		{1.5, false, true, 127 - 8},            // 1.5/448 ≤ 2^-8
		{57344, true, true, 127},               // e5m2's max
		{57344, true, false, 127},              //
		{sub, false, false, 0},                 // log2 = −133 − 8: clamped to 2^-127
		{sub, false, true, 0},                  // descale far below 2^-127
		{math.Ldexp(1, -119), false, true, 0},  // descale 2^-127.8, an f32 subnormal: 2^-127
		{math.Ldexp(1, -118), false, true, 1},  // descale 2^-126.8: 2^-126
		{math.Ldexp(1, -119), false, false, 0}, // −119 − 8 = −127
		{math.Ldexp(1, -118), false, false, 1}, // −118 − 8 = −126
		{3.3e38, false, false, 127 + 127 - 8},  // 2^127 · 1.94
		{3.3e38, false, true, 127 + 120},       // 3.3e38/448 ≈ 2^119.15: 2^120
		{math.Inf(1), false, false, 0xFF}, {math.NaN(), false, true, 0xFF},
		// One ulp above 448·2^-127: the quotient is past 2^-127, its f32
		// (subnormal) product rounds down onto it.
		{float64(math.Nextafter32(float32(448*math.Ldexp(1, -127)), 1)), false, true, 0},
	} {
		f := e4
		if c.e5m2 {
			f = e5
		}
		block := make([]float32, 32)
		block[5] = float32(c.amax)
		block[9] = -float32(c.amax) / 3
		if got := refMXScale(block, f, c.rceil); got != c.want {
			t.Errorf("amax %g %s rceil=%v: byte %d; want %d", c.amax, f.Name, c.rceil, got, c.want)
		}
	}
}

// rceil's f32 product could only round across a power of two next to
// fmt_max·2^k: there, every f32 amax takes the exact quotient's ceiling
// (fmt_max·2^X ≥ amax > fmt_max·2^(X−1), exact in float64).
func TestMXRceilExact(t *testing.T) {
	tg, _ := target.Lookup("sm_90")
	block := make([]float32, 32)
	for _, fam := range []string{"e4m3", "e5m2"} {
		f, _ := tg.FP8(fam)
		for k := -100; k <= 100; k += 3 {
			base := f.Max * float32(math.Ldexp(1, k))
			for _, dir := range []float32{0, float32(math.Inf(1))} {
				a := base
				for range 2000 {
					block[0] = a
					s := int(refMXScale(block, f, true)) - 127
					hi, lo := float64(f.Max)*math.Ldexp(1, s), float64(f.Max)*math.Ldexp(1, s-1)
					if !(hi >= float64(a) && lo < float64(a)) {
						t.Fatalf("%s amax %g: 2^%d is not the ceiling of amax/%g", fam, a, s, f.Max)
					}
					a = math.Nextafter32(a, dir)
				}
			}
		}
	}
}
