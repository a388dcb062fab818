package amdgpu

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// requireFreestanding skips the test when no clang of LLVM 20 or later is
// installed, unless FP8GEN_REQUIRE_HIPCC=1 (as make test sets it).
func requireFreestanding(t *testing.T) {
	t.Helper()
	if err := AvailableFreestanding(); err != nil {
		if os.Getenv("FP8GEN_REQUIRE_HIPCC") == "1" {
			t.Fatalf("FP8GEN_REQUIRE_HIPCC=1: %v", err)
		}
		t.Skipf("skipping the freestanding compile check: %v", err)
	}
}

// scaledCvt is a kernel with no header at all: clang's attributes and
// builtins only, gfx950's scaled fp8 conversion among them.
const scaledCvt = `
extern "C" __attribute__((global)) void scaled(const float* x, unsigned* q) {
  const unsigned i = __builtin_amdgcn_workitem_id_x();
  typedef short short2 __attribute__((ext_vector_type(2)));
  short2 old = {0, 0};
  short2 r = __builtin_amdgcn_cvt_scalef32_pk_fp8_f32(old, x[2 * i], x[2 * i + 1], 1.0f, false);
  q[i] = __builtin_bit_cast(unsigned, r);
}
`

func TestCompileFreestanding(t *testing.T) {
	requireFreestanding(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := CompileFreestanding(ctx, scaledCvt, "gfx950", "-O3")
	if err != nil {
		t.Fatal(err)
	}
	k, ok := r.Kernel("scaled")
	if !ok || k.Wavefront != 64 || k.VGPRs == 0 {
		t.Fatalf("gfx950: kernels %+v, want scaled with wave64 and its VGPRs", r.Kernels)
	}
	if d := r.KernelDisasm("scaled"); !strings.Contains(d, "v_cvt_scalef32_pk_fp8_f32") {
		t.Errorf("gfx950: no v_cvt_scalef32_pk_fp8_f32 in:\n%s", d)
	}
	// The same builtin is gfx950's alone: the compile names the missing
	// feature, with the source's line.
	_, err = CompileFreestanding(ctx, scaledCvt, "gfx942", "-O3")
	if err == nil || !strings.Contains(err.Error(), "needs target feature fp8-cvt-scale-insts") || !strings.Contains(err.Error(), "kernel.hip:6") {
		t.Errorf("gfx942: err = %v, want the missing fp8-cvt-scale-insts at kernel.hip:6", err)
	}
	if _, err := CompileFreestanding(ctx, scaledCvt, "gfx950; rm", "-O3"); err == nil || !strings.Contains(err.Error(), "bad architecture") {
		t.Errorf("a bad architecture: err = %v", err)
	}
}
