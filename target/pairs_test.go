package target

import "testing"

// Every target's FP8 format pair, pinned: a swapped format scales against
// the wrong maximum and clips silently.
func TestFormatPairs(t *testing.T) {
	want := map[string][2]string{
		"gfx942": {"e4m3fnuz", "e5m2fnuz"},
		"gfx950": {"e4m3fn", "e5m2"},
		"sm_90":  {"e4m3fn", "e5m2"},
	}
	if len(Names()) != len(want) {
		t.Fatalf("targets %v; the test pins %d", Names(), len(want))
	}
	for n, w := range want {
		tg, err := Lookup(n)
		if err != nil {
			t.Fatal(err)
		}
		if tg.E4M3.Name != w[0] || tg.E5M2.Name != w[1] {
			t.Errorf("%s: e4m3 = %s, e5m2 = %s; want %s, %s", n, tg.E4M3.Name, tg.E5M2.Name, w[0], w[1])
		}
		e5, err := tg.FP8("e5m2")
		if err != nil || e5 != tg.E5M2 {
			t.Errorf("%s: FP8(e5m2) = %v, %v", n, e5, err)
		}
	}
}
