#ifndef FP8G_FREESTANDING
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
#include <stdint.h>

#define FP8G_FN static __device__ __forceinline__

// maxNum of a, never NaN, and b, neither ever −0.
FP8G_FN float fp8g_maxf_nn(float a, float b) { return b > a ? b : a; }
FP8G_FN float fp8g_absf(float x) { return __uint_as_float(__float_as_uint(x) & 0x7fffffffu); }
FP8G_FN float fp8g_bf16_to_f32(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }
// Store s bytes (1, 2, 4 or 8) of lo at p, which is s-aligned; then drop
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
// f32 → e4m3fn: round to nearest even, saturate to ±448, NaN → 0x7f.
FP8G_FN uint8_t fp8g_to_e4m3fn(float x) {
  uint32_t u = __float_as_uint(x);
  uint32_t sign = (u >> 24) & 0x80u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7f;
  uint32_t code;
  if (__uint_as_float(a) >= 448.0f) {
    code = 0x7e;
  } else if (a < 0x3c800000u) {
    // Below the smallest normal: a multiple of the subnormal step, exact in f32.
    code = (uint32_t)rintf(__uint_as_float(a) * 512.0f);
  } else {
    uint32_t r = (a + 0x7ffffu + ((a >> 20) & 1u)) >> 20;
    code = r - 0x3c0u;
    if (code > 0x7eu) code = 0x7e;
  }
  if (code == 0) return (uint8_t)sign;
  return (uint8_t)(sign | code);
}

// fp8gen rowwise_cast (op rowwise_cast) for gfx950, e4m3fn, schedule BLOCK_K=4096,LOOP=1,PER_CU=0,PREFETCH=0,ROWS=1,WARPS=8
extern "C" __global__ void __launch_bounds__(512) rowwise_cast_daced693(
    const uint16_t* __restrict__ x, uint8_t* __restrict__ q, float* __restrict__ inv_scale, int M, int K) {
  __shared__ __align__(16) unsigned char lds[32];
  const int tid = threadIdx.x;
  const int t0 = tid * 8;
  // cast_kernels.go:36
  const bool row_ok = (int)blockIdx.x < M;
  // cast_kernels.go:76
  float amax_part[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) amax_part[r] = 0.0f;
  for (int i = 0; i < K; i += 4096) {
    // cast_kernels.go:44
    const int t1 = (int)blockIdx.x * K;
    // cast_kernels.go:45
    bool mask[8];
    #pragma unroll
    for (int r = 0; r < 8; ++r) mask[r] = row_ok && i + (r + t0) < K;
    // cast_kernels.go:20
    uint16_t x1[8];
    #pragma unroll
    for (int r = 0; r < 8; ++r) if (mask[r]) x1[r] = *(x + (t1 + (i + (r + t0)))); else x1[r] = (uint16_t)0x0000;
    float xf[8];
    #pragma unroll
    for (int r = 0; r < 8; ++r) xf[r] = fp8g_bf16_to_f32(x1[r]);
    // cast_kernels.go:78
    float t2[8];
    #pragma unroll
    for (int r = 0; r < 8; ++r) t2[r] = fp8g_maxf_nn(amax_part[r], fp8g_absf(xf[r]));
    // cast_kernels.go:76
    #pragma unroll
    for (int r = 0; r < 8; ++r) amax_part[r] = t2[r];
  }
  // cast_kernels.go:80
  float t3;
  { t3 = amax_part[0]; for (int k = 1; k < 8; ++k) t3 = fp8g_maxf_nn(t3, amax_part[k]); }
  float t4;
  t4 = t3;
  #pragma unroll
  for (int off = 1; off <= 32; off <<= 1)
    t4 = fp8g_maxf_nn(t4, __shfl_xor(t4, off));
  if (tid % 64 == 0) *(float*)(lds + tid / 64 * 4) = t4;
  __syncthreads();
  float amax;
  { amax = *(const float*)lds; for (int w = 1; w < 8; ++w) amax = fp8g_maxf_nn(amax, *(const float*)(lds + w * 4)); }
  __syncthreads();
  // cast_kernels.go:11
  const float scale = 448.0f / fp8g_maxf_nn(amax, 1e-12f);
  // cast_kernels.go:81
  for (int i1 = 0; i1 < K; i1 += 4096) {
    // cast_kernels.go:44
    const int t5 = (int)blockIdx.x * K;
    // cast_kernels.go:45
    bool mask1[8];
    #pragma unroll
    for (int r = 0; r < 8; ++r) mask1[r] = row_ok && i1 + (r + t0) < K;
    // cast_kernels.go:20
    uint16_t x2[8];
    #pragma unroll
    for (int r = 0; r < 8; ++r) if (mask1[r]) x2[r] = *(x + (t5 + (i1 + (r + t0)))); else x2[r] = (uint16_t)0x0000;
    float xf1[8];
    #pragma unroll
    for (int r = 0; r < 8; ++r) xf1[r] = fp8g_bf16_to_f32(x2[r]);
    // cast_kernels.go:84
    if (mask1[0] && mask1[7]) {
      fp8g_st_any((uint8_t*)(q + (t5 + (i1 + t0))), make_uint2((uint32_t)fp8g_to_e4m3fn(xf1[0] * scale) | ((uint32_t)fp8g_to_e4m3fn(xf1[1] * scale) << 8) | ((uint32_t)fp8g_to_e4m3fn(xf1[2] * scale) << 16) | ((uint32_t)fp8g_to_e4m3fn(xf1[3] * scale) << 24), (uint32_t)fp8g_to_e4m3fn(xf1[4] * scale) | ((uint32_t)fp8g_to_e4m3fn(xf1[5] * scale) << 8) | ((uint32_t)fp8g_to_e4m3fn(xf1[6] * scale) << 16) | ((uint32_t)fp8g_to_e4m3fn(xf1[7] * scale) << 24)));
    } else {
      if (mask1[0]) *(q + (t5 + (i1 + t0))) = fp8g_to_e4m3fn(xf1[0] * scale);
      if (mask1[1]) *(q + (t5 + (i1 + (1 + t0)))) = fp8g_to_e4m3fn(xf1[1] * scale);
      if (mask1[2]) *(q + (t5 + (i1 + (2 + t0)))) = fp8g_to_e4m3fn(xf1[2] * scale);
      if (mask1[3]) *(q + (t5 + (i1 + (3 + t0)))) = fp8g_to_e4m3fn(xf1[3] * scale);
      if (mask1[4]) *(q + (t5 + (i1 + (4 + t0)))) = fp8g_to_e4m3fn(xf1[4] * scale);
      if (mask1[5]) *(q + (t5 + (i1 + (5 + t0)))) = fp8g_to_e4m3fn(xf1[5] * scale);
      if (mask1[6]) *(q + (t5 + (i1 + (6 + t0)))) = fp8g_to_e4m3fn(xf1[6] * scale);
      if (mask1[7]) *(q + (t5 + (i1 + (7 + t0)))) = fp8g_to_e4m3fn(xf1[7] * scale);
    }
  // cast_kernels.go:81
  }
  // cast_kernels.go:87
  if (row_ok && tid < 1) *(inv_scale + (int)blockIdx.x) = 1.0f / scale;
}
