package target

import (
	"strings"
	"testing"
)

func TestFormatsComeFromTheTarget(t *testing.T) {
	for _, c := range []struct {
		arch, name, e4m3 string
		max              float32
	}{
		{"gfx942:sramecc+:xnack-", "gfx942", "e4m3fnuz", 240},
		{"gfx940", "gfx942", "e4m3fnuz", 240},
		{"gfx950", "gfx950", "e4m3fn", 448},
		{"sm_90", "sm_90", "e4m3fn", 448},
	} {
		tg, err := FromDevice(c.arch)
		if err != nil {
			t.Fatalf("%s: %v", c.arch, err)
		}
		if tg.Name != c.name || tg.E4M3.Name != c.e4m3 || tg.E4M3.Max != c.max {
			t.Errorf("%s → %s with %s (max %v); want %s with %s (max %v)", c.arch, tg.Name, tg.E4M3.Name, tg.E4M3.Max, c.name, c.e4m3, c.max)
		}
		f, err := tg.FP8("e4m3")
		if err != nil || f != tg.E4M3 {
			t.Errorf("%s: FP8(e4m3) = %v, %v", c.arch, f, err)
		}
	}
}

func TestUnknownDevicesAndNamesAreErrors(t *testing.T) {
	for _, arch := range []string{"gfx1100", "sm_80", ""} {
		_, err := FromDevice(arch)
		if err == nil || !strings.Contains(err.Error(), `"`+arch+`"`) {
			t.Errorf("FromDevice(%q): error %v; want one naming the device", arch, err)
		}
	}
	_, err := Lookup("gfx9000")
	if err == nil || !strings.Contains(err.Error(), "gfx942, gfx950, sm_90") {
		t.Errorf("Lookup: error %v; want the known targets listed", err)
	}
	if _, err := (&Target{}).FP8("e3m4"); err == nil {
		t.Error("FP8(e3m4): no error")
	}
}

func TestWaveSizesAndLimits(t *testing.T) {
	for _, n := range Names() {
		tg, _ := Lookup(n)
		want := 64
		if tg.Vendor == NVIDIA {
			want = 32
		}
		if tg.WaveSize != want || tg.MaxBlock%tg.WaveSize != 0 || tg.LDSBytes <= 0 {
			t.Errorf("%s: wave %d, max block %d, LDS %d", n, tg.WaveSize, tg.MaxBlock, tg.LDSBytes)
		}
	}
}
