package emit

import (
	"fmt"
	"strings"

	"github.com/fp8gen/fp8gen/fp8"
	"github.com/fp8gen/fp8gen/target"
)

// prelude is the code the kernels need beside their bodies: the header
// (HIP on AMD; on NVIDIA nothing, as nvcc's own definitions serve and
// Debian's HIP headers do not build against CUDA 13), and those of the
// conversions and max/min — whose results must match package ir's
// semantics bit for bit — that code calls.
func prelude(t *target.Target, formats []*fp8.Format, code string) string {
	var sb strings.Builder
	sb.WriteString(header(t))
	for _, h := range helperFns(t, formats, t.HWCvt) {
		if strings.Contains(code, h.name+"(") {
			sb.WriteString(h.text)
		}
	}
	return sb.String()
}

func header(t *target.Target) string {
	h := "#include <stdint.h>\n\n#define FP8G_FN static __device__ __forceinline__\n\n"
	if t.Vendor == target.AMD {
		h = amdHeader + h
	}
	return h
}

// amdHeader is HIP's header, or with FP8G_FREESTANDING the few HIP names
// the kernels use, over clang's AMDGPU builtins: a clang that knows the
// target compiles the source with no HIP install at all (clang++ -x hip
// --offload-arch=gfx950 --cuda-device-only -nogpuinc -nogpulib
// -DFP8G_FREESTANDING), as package amdgpu's freestanding check does for
// gfx942 and gfx950. They follow HIP's for the uses the emitter makes:
// __syncthreads fences the workgroup around the barrier, gridDim rounds
// up, __clz(0) is 32; __shfl_xor omits HIP's clamp of lane masks of 64 and
// more (the emitter's are at most 32); sqrtf is correctly rounded from
// LLVM 17 on, so an older clang is refused.
const amdHeader = `#ifndef FP8G_FREESTANDING
#include <hip/hip_runtime.h>
#else
#if __clang_major__ < 17
#error "FP8G_FREESTANDING needs clang 17 or later (correctly rounded sqrtf)"
#endif
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define __launch_bounds__(n) __attribute__((amdgpu_flat_work_group_size(1, n)))
#define __align__(n) __attribute__((aligned(n)))
#define __forceinline__ inline __attribute__((always_inline))
#define FP8G_HIP static __device__ inline
typedef unsigned int uint2 __attribute__((ext_vector_type(2)));
typedef unsigned int uint4 __attribute__((ext_vector_type(4)));
struct fp8g_uint3 { unsigned x, y, z; };
#define FP8G_GROUPS(d) ((__builtin_amdgcn_grid_size_##d() + __builtin_amdgcn_workgroup_size_##d() - 1) / \
                        __builtin_amdgcn_workgroup_size_##d())
#define threadIdx \
  (fp8g_uint3{__builtin_amdgcn_workitem_id_x(), __builtin_amdgcn_workitem_id_y(), __builtin_amdgcn_workitem_id_z()})
#define blockIdx \
  (fp8g_uint3{__builtin_amdgcn_workgroup_id_x(), __builtin_amdgcn_workgroup_id_y(), __builtin_amdgcn_workgroup_id_z()})
#define gridDim (fp8g_uint3{FP8G_GROUPS(x), FP8G_GROUPS(y), FP8G_GROUPS(z)})
FP8G_HIP uint2 make_uint2(unsigned a, unsigned b) { return uint2{a, b}; }
FP8G_HIP uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return uint4{a, b, c, d}; }
FP8G_HIP float __uint_as_float(unsigned u) { return __builtin_bit_cast(float, u); }
FP8G_HIP float __int_as_float(int i) { return __builtin_bit_cast(float, i); }
FP8G_HIP unsigned __float_as_uint(float f) { return __builtin_bit_cast(unsigned, f); }
FP8G_HIP int __float_as_int(float f) { return __builtin_bit_cast(int, f); }
FP8G_HIP int max(int a, int b) { return a > b ? a : b; }
FP8G_HIP int min(int a, int b) { return a < b ? a : b; }
FP8G_HIP long long max(long long a, long long b) { return a > b ? a : b; }
FP8G_HIP long long min(long long a, long long b) { return a < b ? a : b; }
FP8G_HIP int abs(int a) { return a < 0 ? -a : a; }
FP8G_HIP long long abs(long long a) { return a < 0 ? -a : a; }
FP8G_HIP float rintf(float x) { return __builtin_rintf(x); }
FP8G_HIP float sqrtf(float x) { return __builtin_sqrtf(x); }
FP8G_HIP float fmaf(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
FP8G_HIP int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
FP8G_HIP void __syncthreads() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
FP8G_HIP int __shfl_xor(int v, int mask) {
  const int lane = __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
  return __builtin_amdgcn_ds_bpermute((lane ^ mask) << 2, v);
}
FP8G_HIP unsigned __shfl_xor(unsigned v, int mask) { return (unsigned)__shfl_xor((int)v, mask); }
FP8G_HIP float __shfl_xor(float v, int mask) { return __int_as_float(__shfl_xor(__float_as_int(v), mask)); }
FP8G_HIP long long __shfl_xor(long long v, int mask) {
  const unsigned long long u = (unsigned long long)v;
  const unsigned lo = __shfl_xor((unsigned)u, mask), hi = __shfl_xor((unsigned)(u >> 32), mask);
  return (long long)(((unsigned long long)hi << 32) | lo);
}
#endif
`

// preludeWith writes the whole prelude. With hw (NVIDIA sm_89+) the
// conversions to fp8 are cvt.rn.satfinite and max/min use max.f32;
// otherwise both are written out in portable code.
func preludeWith(t *target.Target, formats []*fp8.Format, hw bool) string {
	var sb strings.Builder
	sb.WriteString(header(t))
	for _, h := range helperFns(t, formats, hw) {
		sb.WriteString(h.text)
	}
	return sb.String()
}

type helperFn struct{ name, text string }

func helperFns(t *target.Target, formats []*fp8.Format, hw bool) []helperFn {
	max, min := maxMin(hw)
	fns := []helperFn{
		{"fp8g_maxf", max},
		{"fp8g_minf", min},
		{"fp8g_maxf_nz", maxMinNZ(">")},
		{"fp8g_minf_nz", maxMinNZ("<")},
		{"fp8g_maxf_nn", "// maxNum of a, never NaN, and b, neither ever −0.\nFP8G_FN float fp8g_maxf_nn(float a, float b) { return b > a ? b : a; }\n"},
		{"fp8g_minf_nn", "// minNum of a, never NaN, and b, neither ever −0.\nFP8G_FN float fp8g_minf_nn(float a, float b) { return b < a ? b : a; }\n"},
		{"fp8g_absf", "FP8G_FN float fp8g_absf(float x) { return __uint_as_float(__float_as_uint(x) & 0x7fffffffu); }\n"},
		{"fp8g_negf", "FP8G_FN float fp8g_negf(float x) { return __uint_as_float(__float_as_uint(x) ^ 0x80000000u); }\n"},
		{"fp8g_bf16_to_f32", "FP8G_FN float fp8g_bf16_to_f32(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }\n"},
		{"fp8g_f32_to_bf16", bf16Encoder(hw)},
		{"fp8g_pow2_floor", `// The largest power of two not above x, for finite x > 0; x otherwise.
FP8G_FN float fp8g_pow2_floor(float x) {
  uint32_t u = __float_as_uint(x);
  if (!(x > 0.0f) || u >= 0x7f800000u) return x;
  if ((u >> 23) == 0) return __uint_as_float(1u << (31 - __clz(u)));
  return __uint_as_float(u & 0xff800000u);
}
`},
		{"fp8g_st_any", stAny},
		{"fp8g_f32_to_i32", `// Truncate toward zero, saturate, NaN to 0.
FP8G_FN int fp8g_f32_to_i32(float f) {
  if (f != f) return 0;
  if (f >= 2147483648.0f) return 2147483647;
  if (f <= -2147483648.0f) return (int)0x80000000;
  return (int)f;
}
`},
	}
	for _, f := range formats {
		if hw && !f.FNUZ {
			fns = append(fns, helperFn{"fp8g_to_" + f.Name, hwEncoder(f)},
				helperFn{"fp8g_to_" + f.Name + "_x2", hwEncoder2(f)})
		} else {
			fns = append(fns, helperFn{"fp8g_to_" + f.Name, encoder(f)})
		}
		fns = append(fns, helperFn{"fp8g_from_" + f.Name, decoder(f)})
	}
	if t.Vendor == target.NVIDIA {
		fns = append(fns, evictFirstFns()...)
		fns = append(fns, cpAsyncFns()...)
	}
	return fns
}

// cpAsyncFns are a stage's copies on NVIDIA: 4, 8 or 16 bytes from global
// memory to LDS, done by the lane's next cp.async.wait_all; where !ok the
// bytes are zeros and nothing is read (src-size 0). 16 bytes bypass L1.
func cpAsyncFns() []helperFn {
	var fns []helperFn
	for _, n := range []int{4, 8, 16} {
		cache := "ca"
		if n == 16 {
			cache = "cg"
		}
		name := fmt.Sprintf("fp8g_cp_async%d", n)
		fns = append(fns, helperFn{name, fmt.Sprintf(`FP8G_FN void %s(unsigned char* lds, const void* g, bool ok) {
  asm volatile("cp.async.%s.shared.global [%%0], [%%1], %d, %%2;" :: "r"((unsigned)__cvta_generic_to_shared(lds)), "l"(g), "r"(ok ? %d : 0) : "memory");
}
`, name, cache, n, n)})
	}
	return fns
}

// evictFirstFns are the loads of MemAttr.EvictFirst on NVIDIA: an L2
// policy that marks the lines they read first to leave, and loads of 4,
// 8 and 16 bytes under it, read-only (ld.global.nc) where the kernel
// writes nothing through the pointer ("_nc"), else ordered with the
// kernel's other accesses.
func evictFirstFns() []helperFn {
	fns := []helperFn{{"fp8g_evict_first_policy", `// An L2 policy: the lines a load under it reads are the first to leave.
FP8G_FN unsigned long long fp8g_evict_first_policy() {
  unsigned long long p;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}
`}}
	for _, nc := range []bool{true, false} {
		suffix, ld, vol, clobber := "", "ld.global.L2::cache_hint", "asm volatile", ` : "memory"`
		if nc {
			suffix, ld, vol, clobber = "_nc", "ld.global.nc.L2::cache_hint", "asm", ""
		}
		for _, w := range []struct {
			bytes       int
			typ, v, out string
		}{
			{16, "uint4", ".v4.u32 {%0, %1, %2, %3}, [%4], %5", `"=r"(w.x), "=r"(w.y), "=r"(w.z), "=r"(w.w) : "l"(a), "l"(p)`},
			{8, "uint2", ".v2.u32 {%0, %1}, [%2], %3", `"=r"(w.x), "=r"(w.y) : "l"(a), "l"(p)`},
			{4, "uint32_t", ".u32 %0, [%1], %2", `"=r"(w) : "l"(a), "l"(p)`},
		} {
			name := fmt.Sprintf("fp8g_ld_evict_first%d%s", w.bytes, suffix)
			fns = append(fns, helperFn{name, fmt.Sprintf("FP8G_FN %s %s(const void* a, unsigned long long p) {\n  %s w;\n  %s(\"%s%s;\" : %s%s);\n  return w;\n}\n",
				w.typ, name, w.typ, vol, ld, w.v, w.out, clobber)})
		}
	}
	return fns
}

// bf16Encoder is the f32 → bf16 cast: round to nearest even, subnormals
// kept. With hw (sm_89+) one cvt.rn.bf16.f32, which writes a NaN as
// 0x7fff; otherwise written out, a NaN kept as the quiet NaN of its high
// half. NaN payloads are not part of the contract (ops.CompareUpToNaN).
func bf16Encoder(hw bool) string {
	if hw {
		return `// Round to nearest even (the hardware's cvt); NaN → 0x7fff.
FP8G_FN uint16_t fp8g_f32_to_bf16(float f) {
  uint16_t r;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f));
  return r;
}
`
	}
	return `// Round to nearest even; NaN stays a quiet NaN.
FP8G_FN uint16_t fp8g_f32_to_bf16(float f) {
  uint32_t u = __float_as_uint(f);
  if (f != f) return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
`
}

// maxCode is the code of +Max.
func maxCode(f *fp8.Format) int {
	all := 1<<(f.ExpBits+f.ManBits) - 1
	switch {
	case f.FNUZ:
		return all
	case f.HasInf: // e5m2: the top exponent is Inf/NaN
		return all - (1 << f.ManBits)
	}
	return all - 1 // e4m3fn: only S.1111.111 is NaN
}

func nanCode(f *fp8.Format) int {
	if f.FNUZ {
		return 0x80
	}
	return 0x7f
}

// encoder writes the saturating cast to f: round to nearest even, ±max for
// values at or above max (Inf included), the format's NaN for NaN, and no
// negative zero in fnuz formats.
func encoder(f *fp8.Format) string {
	shift := 23 - f.ManBits
	return fmt.Sprintf(`// f32 → %[1]s: round to nearest even, saturate to ±%[2]g, NaN → 0x%02[3]x.
FP8G_FN uint8_t fp8g_to_%[1]s(float x) {
  uint32_t u = __float_as_uint(x);
  uint32_t sign = (u >> 24) & 0x80u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x%02[3]x;
  uint32_t code;
  if (__uint_as_float(a) >= %[11]s) {
    code = 0x%02[4]x;
  } else if (a < 0x%08[5]xu) {
    // Below the smallest normal: a multiple of the subnormal step, exact in f32.
    code = (uint32_t)rintf(__uint_as_float(a) * %[6]s);
  } else {
    uint32_t r = (a + 0x%[7]xu + ((a >> %[8]d) & 1u)) >> %[8]d;
    code = r - 0x%[9]xu;
    if (code > 0x%02[4]xu) code = 0x%02[4]x;
  }
  if (code == 0) return %[10]s;
  return (uint8_t)(sign | code);
}
`, f.Name, f.Max, nanCode(f), maxCode(f),
		uint32(127+1-f.Bias)<<23,                         // smallest normal of f, as f32 bits
		floatLit(float32(pow2(f.Bias-1+f.ManBits))),      // 1 / subnormal step
		(1<<(shift-1))-1, shift, (127-f.Bias)<<f.ManBits, // rounding bias, shift, re-bias
		map[bool]string{true: "0", false: "(uint8_t)sign"}[f.FNUZ], floatLit(f.Max))
}

// cvtPairs names the pair type of cvt.rn.satfinite for each format.
var cvtPairs = map[string]string{"e4m3fn": "e4m3x2", "e5m2": "e5m2x2"}

// hwEncoder is the saturating cast by cvt.rn.satfinite: round to nearest
// even, ±Inf and overflow to ±max. Its NaN keeps the input's sign, so NaN
// is mapped to the canonical code here.
func hwEncoder(f *fp8.Format) string {
	ptx := cvtPairs[f.Name]
	return fmt.Sprintf(`// f32 → %[1]s by the hardware: round to nearest even, saturate to ±%[2]g, NaN → 0x%02[3]x.
FP8G_FN uint8_t fp8g_to_%[1]s(float x) {
  unsigned short r;
  asm("cvt.rn.satfinite.%[4]s.f32 %%0, %%1, %%2;" : "=h"(r) : "f"(0.0f), "f"(x));
  return x != x ? 0x%02[3]x : (uint8_t)r;
}
`, f.Name, f.Max, nanCode(f), ptx)
}

// e4m3PairNaN is a pair of e4m3fn codes r with each NaN (0x7f, 0xff)
// made 0x7f: a byte whose low seven bits are all set carries into its
// sign bit when 1 is added to them, and that bit is cleared.
const e4m3PairNaN = "r & ~(((r & 0x7f7fu) + 0x0101u) & 0x8080u)"

// hwEncoder2 is hwEncoder of two values by one cvt (which takes pairs):
// lo in the low byte, hi in the high one. A NaN converts to 0x7f or 0xff
// (its sign kept); in e4m3fn no other result has its low seven bits set,
// so the bytes' carries out of them find the signs to clear, where e5m2's
// three NaN codes take a test of the input each.
func hwEncoder2(f *fp8.Format) string {
	fix := fmt.Sprintf(`  if (lo != lo) r = (r & 0xff00u) | 0x%02[1]xu;
  if (hi != hi) r = (r & 0x00ffu) | 0x%02[1]x00u;
  return r;
`, nanCode(f))
	if f.ManBits == 3 && nanCode(f) == 0x7f {
		fix = "  return " + e4m3PairNaN + ";\n"
	}
	return fmt.Sprintf(`// Two f32 → %[1]s by one cvt: lo to the low byte, hi to the high one.
FP8G_FN uint16_t fp8g_to_%[1]s_x2(float lo, float hi) {
  unsigned short r;
  asm("cvt.rn.satfinite.%[2]s.f32 %%0, %%1, %%2;" : "=h"(r) : "f"(hi), "f"(lo));
%[3]s}
`, f.Name, cvtPairs[f.Name], fix)
}

func decoder(f *fp8.Format) string {
	nan := "false"
	switch {
	case f.FNUZ:
		nan = "b == 0x80"
	case f.HasInf:
		nan = fmt.Sprintf("e == %d && m != 0", 1<<f.ExpBits-1)
	default:
		nan = fmt.Sprintf("(b & 0x7f) == 0x7f")
	}
	inf := "false"
	if f.HasInf {
		inf = fmt.Sprintf("e == %d && m == 0", 1<<f.ExpBits-1)
	}
	return fmt.Sprintf(`// %[1]s → f32, exact.
FP8G_FN float fp8g_from_%[1]s(uint8_t b) {
  uint32_t e = (b >> %[2]d) & 0x%[3]x, m = b & 0x%[4]x;
  if (%[5]s) return __uint_as_float(0x7fc00000u);
  float v = (%[6]s) ? __uint_as_float(0x7f800000u)
          : e == 0 ? (float)m * %[7]s
          : (float)(m | 0x%[8]x) * %[9]s;
  return (b & 0x80) ? -v : v;
}
`, f.Name, f.ManBits, 1<<f.ExpBits-1, 1<<f.ManBits-1, nan, inf,
		floatLit(float32(1/pow2(f.Bias-1+f.ManBits))), 1<<f.ManBits,
		fmt.Sprintf("__uint_as_float((e + %d) << 23)", 127-f.Bias-f.ManBits))
}

func pow2(n int) float64 {
	x := 1.0
	for ; n > 0; n-- {
		x *= 2
	}
	for ; n < 0; n++ {
		x /= 2
	}
	return x
}

// maxMin writes fp8g_maxf and fp8g_minf: IEEE maxNum/minNum (a NaN operand
// yields the other) with +0 above -0, as equal operands combine their sign
// bits. On NVIDIA (hw) fmaxf is max.f32, which returns the other operand for
// any NaN, signaling ones too (the backend tests hold it to the Go reference
// on the H200). Elsewhere NaN is tested explicitly: AMD's IEEE mode quiets a
// signaling NaN instead, and so does the host's fmaxf.
func maxMin(hw bool) (max, min string) {
	if hw {
		return `FP8G_FN float fp8g_maxf(float a, float b) {
  return a == b ? __uint_as_float(__float_as_uint(a) & __float_as_uint(b)) : fmaxf(a, b);
}
`, `FP8G_FN float fp8g_minf(float a, float b) {
  return a == b ? __uint_as_float(__float_as_uint(a) | __float_as_uint(b)) : fminf(a, b);
}
`
	}
	return `FP8G_FN float fp8g_maxf(float a, float b) {
  if (a != a) return b;
  if (b != b) return a;
  return a == b ? __uint_as_float(__float_as_uint(a) & __float_as_uint(b)) : (a > b ? a : b);
}
`, `FP8G_FN float fp8g_minf(float a, float b) {
  if (a != a) return b;
  if (b != b) return a;
  return a == b ? __uint_as_float(__float_as_uint(a) | __float_as_uint(b)) : (a < b ? a : b);
}
`
}

// maxMinNZ writes fp8g_maxf_nz (cmp ">") or fp8g_minf_nz ("<"): maxNum
// or minNum of operands that are never −0 (ir.NoNegZero), where equal
// operands have equal bits and no sign needs combining. NaN is tested as
// in the portable fp8g_maxf (AMD's max quiets a signaling NaN); NVIDIA
// prints max.f32 instead.
func maxMinNZ(cmp string) string {
	name := map[string]string{">": "fp8g_maxf_nz", "<": "fp8g_minf_nz"}[cmp]
	return fmt.Sprintf(`FP8G_FN float %s(float a, float b) {
  if (a != a) return b;
  if (b != b) return a;
  return a %s b ? a : b;
}
`, name, cmp)
}

// stAny is the store of an Unaligned vector (ir.MemAttr): the n bytes of a
// vector at any address p, in naturally aligned pieces of 1, 2, 4 and 8
// bytes up to the next n-byte boundary and then the rest, low bytes first
// (popcount(n - p%n) + popcount(p%n) stores; one where p is aligned).
// Overloads take the vectors pack builds.
const stAny = `// Store s bytes (1, 2, 4 or 8) of lo at p, which is s-aligned; then drop
// them from (hi:lo).
FP8G_FN void fp8g_st_piece(uint8_t* p, uint64_t& lo, uint64_t& hi, unsigned s) {
  if (s == 1) *p = (uint8_t)lo;
  else if (s == 2) *(uint16_t*)p = (uint16_t)lo;
  else if (s == 4) *(uint32_t*)p = (uint32_t)lo;
  else *(uint64_t*)p = lo;
  lo = s == 8 ? hi : (lo >> (8 * s)) | (hi << (64 - 8 * s));
  hi = s == 8 ? 0 : hi >> (8 * s);
}
// Store the n bytes of (hi:lo), low bytes first, at p, which must not be
// n-aligned (it would store nothing): aligned pieces up to the next n-byte
// boundary, then the rest.
FP8G_FN void fp8g_st_pieces(uint8_t* p, uint64_t lo, uint64_t hi, unsigned n) {
  const unsigned m = (unsigned)(unsigned long long)p & (n - 1u);
  unsigned o = 0;
  #pragma unroll
  for (unsigned s = 1; s < n; s <<= 1)
    if ((m + o) & s) { fp8g_st_piece(p + o, lo, hi, s); o += s; }
  #pragma unroll
  for (unsigned s = n >> 1; s >= 1; s >>= 1)
    if (m & s) { fp8g_st_piece(p + o, lo, hi, s); o += s; }
}
FP8G_FN void fp8g_st_any(uint8_t* p, uint4 v) {
  if (((unsigned long long)p & 15u) == 0) *(uint4*)p = v;
  else fp8g_st_pieces(p, (uint64_t)v.y << 32 | v.x, (uint64_t)v.w << 32 | v.z, 16);
}
FP8G_FN void fp8g_st_any(uint8_t* p, uint2 v) {
  if (((unsigned long long)p & 7u) == 0) *(uint2*)p = v;
  else fp8g_st_pieces(p, (uint64_t)v.y << 32 | v.x, 0, 8);
}
FP8G_FN void fp8g_st_any(uint8_t* p, uint32_t v) {
  if (((unsigned long long)p & 3u) == 0) *(uint32_t*)p = v;
  else fp8g_st_pieces(p, v, 0, 4);
}
FP8G_FN void fp8g_st_any(uint8_t* p, uint16_t v) {
  if (((unsigned long long)p & 1u) == 0) *(uint16_t*)p = v;
  else fp8g_st_pieces(p, v, 0, 2);
}
`
