package emit

import (
	"strings"
	"testing"

	"github.com/fp8gen/fp8gen/fp8"
)

// The hardware converts name their format: an e5m2 conversion emitting
// the e4m3 instruction would pass every host test (the prelude test cannot
// run PTX) and quantize wrongly on the GPU.
func TestHardwareConvertNamesItsFormat(t *testing.T) {
	for f, ptx := range map[*fp8.Format]string{fp8.E4M3FN: "cvt.rn.satfinite.e4m3x2.f32", fp8.E5M2: "cvt.rn.satfinite.e5m2x2.f32"} {
		for fn, src := range map[string]string{"fp8g_to_" + f.Name + "(": hwEncoder(f), "fp8g_to_" + f.Name + "_x2(": hwEncoder2(f)} {
			if !strings.Contains(src, ptx) || !strings.Contains(src, fn) {
				t.Errorf("%s: the hardware encoder does not use %s:\n%s", fn, ptx, src)
			}
			for other := range map[string]bool{"e4m3x2": true, "e5m2x2": true} {
				if !strings.Contains(ptx, other) && strings.Contains(src, other) {
					t.Errorf("%s: the hardware encoder names %s", fn, other)
				}
			}
		}
	}
}
