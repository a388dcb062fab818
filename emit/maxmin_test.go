package emit

import (
	"strings"
	"testing"
)

// Where neither operand is ever −0 (ir.NoNegZero) NVIDIA's max.f32 is
// maxNum already; elsewhere, and on AMD, the prelude's orders the zeros.
// In "maxima of signed zeros" the max of |x| folds in registers and
// across lanes with fmaxf; the raw max and min keep the prelude's, and so
// does every fold of LDS, which holds raw partials too.
func TestHardwareMax(t *testing.T) {
	for _, e := range emittedOn(t, "maxima of signed zeros", "zeros", "sm_90", "gfx942") {
		t.Logf("%s:\n%s", e.tg.Name, e.src)
		_, body, _ := strings.Cut(e.src, "__global__") // past the prelude's own
		hw := strings.Count(body, "fmaxf(")            // fp8g_maxf( does not hold it
		if !e.tg.HWCvt {
			if hw > 0 || strings.Contains(body, "fminf(") {
				t.Errorf("%s: the hardware's max or min, which quiets a signaling NaN", e.tg.Name)
			}
			continue
		}
		if hw == 0 || strings.Contains(body, "fminf(") {
			t.Errorf("%s: %d fmaxf folds (want some: the max of |x|) and a fminf (want none)", e.tg.Name, hw)
		}
		for _, l := range strings.Split(body, "\n") {
			if strings.Contains(l, "lds") && strings.Contains(l, "fmaxf(") {
				t.Errorf("%s: a fold of LDS with the hardware's max, though LDS holds raw partials: %s", e.tg.Name, l)
			}
		}
	}
}

// AMD's max for an operand that is never NaN takes that operand first:
// the loop's accumulator, not |x| of a loaded value (which may be NaN),
// though the kernel writes |x| first.
func TestNeverNaNFirst(t *testing.T) {
	for _, e := range emittedOn(t, "an amax carried by a loop", "amax", "gfx942") {
		_, body, _ := strings.Cut(e.src, "__global__")
		if !strings.Contains(body, "fp8g_maxf_nn(") || strings.Contains(body, "fp8g_maxf_nn(fp8g_absf(") {
			t.Errorf("%s: want fp8g_maxf_nn with the accumulator first:\n%s", e.tg.Name, e.src)
		}
	}
}
