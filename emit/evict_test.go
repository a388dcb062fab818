package emit

import (
	"strings"
	"testing"

	"github.com/fp8gen/fp8gen/internal/captest"
	"github.com/fp8gen/fp8gen/target"
)

// Loads of data read once go through the evict-first policy on NVIDIA,
// read-only (.nc) where nothing writes through the pointer and ordered
// where the kernel writes it in place, and are plain loads on AMD.
func TestEvictFirstLoads(t *testing.T) {
	for _, e := range emittedOn(t, "loads read once", "loads read once", "sm_90", "gfx942") {
		name, src := e.tg.Name, e.src
		if e.tg.Vendor == target.AMD {
			if strings.Contains(src, "evict") {
				t.Errorf("%s: an evict-first load on AMD:\n%s", name, src)
			}
			continue
		}
		for _, want := range []string{
			"const unsigned long long fp8g_evict_first = fp8g_evict_first_policy();",
			"fp8g_ld_evict_first16_nc(x + ",
			"fp8g_ld_evict_first16(z",
			"fp8g_ld_evict_first8_nc(h",
			"fp8g_ld_evict_first4_nc(h",
			"createpolicy.fractional.L2::evict_first.b64",
			"ld.global.nc.L2::cache_hint.v4.u32",
			"ld.global.L2::cache_hint.v4.u32",
		} {
			if !strings.Contains(src, want) {
				t.Errorf("%s: no %q in:\n%s", name, want, src)
			}
		}
	}
}

// emitted is a capability case's kernel source for one target.
type emitted struct {
	tg  *target.Target
	src string
}

// emittedOn lowers the capability case caseName for each target named
// and emits it as kernel.
func emittedOn(t *testing.T, caseName, kernel string, targets ...string) []emitted {
	t.Helper()
	c := captest.Named(t, caseName)
	var out []emitted
	for _, name := range targets {
		tg, err := target.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		k, err := Emit(c.Lower(t, tg), kernel)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, emitted{tg, k.Source})
	}
	return out
}
