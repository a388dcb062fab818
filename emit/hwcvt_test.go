package emit

import (
	"os/exec"
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

// The e4m3fn pair conversion's NaN fix, on every pair of codes: each byte
// 0x7f or 0xff (the two NaNs cvt gives, by the input's sign) becomes 0x7f,
// every other byte keeps its value.
func TestPairNaNFix(t *testing.T) {
	exe := compileHost(t, hostShim+`
static uint16_t fix(unsigned short r) { return `+e4m3PairNaN+`; }
int main(void) {
  for (uint32_t r = 0; r < 65536; ++r) { uint16_t v = fix((unsigned short)r); fwrite(&v, 2, 1, stdout); }
  return 0;
}
`)
	out, err := exec.Command(exe).Output()
	if err != nil || len(out) != 2*65536 {
		t.Fatalf("%v: %d bytes", err, len(out))
	}
	want := func(b byte) byte {
		if b&0x7f == 0x7f {
			return 0x7f
		}
		return b
	}
	bad := 0
	for r := 0; r < 65536; r++ {
		got := uint16(out[2*r]) | uint16(out[2*r+1])<<8
		if w := uint16(want(byte(r))) | uint16(want(byte(r>>8)))<<8; got != w && bad < 5 {
			t.Errorf("fix(%#04x) = %#04x, want %#04x", r, got, w)
			bad++
		}
	}
}
