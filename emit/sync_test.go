package emit

import (
	"regexp"
	"strings"
	"testing"

	"github.com/fp8gen/fp8gen/target"
)

// What a CPU run cannot see of signal and wait: the barrier before the
// signal and after the wait, the release and acquire at agent scope, the
// bounded spin, and the counter passed as int* (not const).
func TestSignalWaitEmitted(t *testing.T) {
	for _, e := range emittedOn(t, "programs waiting on each other", "waits", "sm_90", "gfx942") {
		tg, name, src := e.tg, e.tg.Name, e.src
		order := []string{`__syncthreads\(\);\s+if \(threadIdx\.x == 0\) fp8g_signal\(count, 1\);`, `fp8g_wait\(count, .*\);\s+__syncthreads\(\);`}
		want := []string{`int\* __restrict__ count`, `if \(i == 1u << 27\) __(builtin_)?trap\(\);`}
		if tg.Vendor == target.AMD {
			order[0] = `__builtin_amdgcn_fence\(__ATOMIC_RELEASE, "agent"\);\s+` + order[0]
			want = append(want, `__hip_atomic_fetch_add\(p, n, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_AGENT\)`,
				`__hip_atomic_load\(p, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_AGENT\) < n`)
		} else {
			want = append(want, `red\.release\.gpu\.global\.add\.s32`, `ld\.acquire\.gpu\.global\.b32`)
		}
		for _, w := range append(order, want...) {
			if !regexp.MustCompile(w).MatchString(src) {
				t.Errorf("%s: no %s in:\n%s", name, w, src)
			}
		}
		if strings.Contains(src, "const int* __restrict__ count") {
			t.Errorf("%s: the counter is const", name)
		}
	}
}
