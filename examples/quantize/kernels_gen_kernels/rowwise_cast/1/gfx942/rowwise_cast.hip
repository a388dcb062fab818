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

FP8G_FN float fp8g_maxf_nz(float a, float b) {
  if (a != a) return b;
  if (b != b) return a;
  return a > b ? a : b;
}
// maxNum of a, never NaN, and b, neither ever −0.
FP8G_FN float fp8g_maxf_nn(float a, float b) { return b > a ? b : a; }
FP8G_FN float fp8g_absf(float x) { return __uint_as_float(__float_as_uint(x) & 0x7fffffffu); }
FP8G_FN float fp8g_bf16_to_f32(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }
// f32 → e4m3fnuz: round to nearest even, saturate to ±240, NaN → 0x80.
FP8G_FN uint8_t fp8g_to_e4m3fnuz(float x) {
  uint32_t u = __float_as_uint(x);
  uint32_t sign = (u >> 24) & 0x80u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x80;
  uint32_t code;
  if (__uint_as_float(a) >= 240.0f) {
    code = 0x7f;
  } else if (a < 0x3c000000u) {
    // Below the smallest normal: a multiple of the subnormal step, exact in f32.
    code = (uint32_t)rintf(__uint_as_float(a) * 1024.0f);
  } else {
    uint32_t r = (a + 0x7ffffu + ((a >> 20) & 1u)) >> 20;
    code = r - 0x3b8u;
    if (code > 0x7fu) code = 0x7f;
  }
  if (code == 0) return 0;
  return (uint8_t)(sign | code);
}

// fp8gen rowwise_cast (op rowwise_cast) for gfx942, e4m3fnuz, schedule BLOCK_K=16384,LOOP=0,PER_CU=16,PREFETCH=1,ROWS=1,WARPS=4
extern "C" __global__ void __launch_bounds__(256) rowwise_cast_81dd6f46(
    const uint16_t* __restrict__ x, uint8_t* __restrict__ q, float* __restrict__ inv_scale, int M, int K) {
  __shared__ __align__(16) unsigned char lds[16];
  const int tid = threadIdx.x;
  const int t0 = tid * 8;
  const bool m0 = tid % 64 == 0;
  const int t1 = tid / 64 * 4;
  const bool m1 = tid < 1;
  // cast_kernels.go:165
  const int t2 = (int)blockIdx.x;
  // cast_kernels.go:36
  const bool row_ok = t2 < M;
  // cast_kernels.go:179
  const int t3 = M - 1;
  const int rows_in = max(min(t2, t3), 0);
  // cast_kernels.go:44
  const int t4 = rows_in * K;
  // cast_kernels.go:45
  bool m2[64];
  #pragma unroll
  for (int r = 0; r < 64; ++r) m2[r] = r % 8 + r / 8 * 2048 + t0 < K;
  bool mask[64];
  #pragma unroll
  for (int r = 0; r < 64; ++r) mask[r] = row_ok && m2[r];
  // cast_kernels.go:63
  uint16_t x_next[64];
  #pragma unroll
  for (int r = 0; r < 64; r += 8) {
    {
      uint4 w = make_uint4(0u, 0u, 0u, 0u);
      if (mask[r]) w = *(const uint4*)(x + (t4 + (r % 8 + r / 8 * 2048 + t0)));
      x_next[r] = (uint16_t)w.x;
      x_next[r + 1] = (uint16_t)(w.x >> 16);
      x_next[r + 2] = (uint16_t)w.y;
      x_next[r + 3] = (uint16_t)(w.y >> 16);
      x_next[r + 4] = (uint16_t)w.z;
      x_next[r + 5] = (uint16_t)(w.z >> 16);
      x_next[r + 6] = (uint16_t)w.w;
      x_next[r + 7] = (uint16_t)(w.w >> 16);
    }
  }
  // cast_kernels.go:167
  uint16_t x_next1[64];
  #pragma unroll
  for (int r = 0; r < 64; ++r) x_next1[r] = x_next[r];
  for (int i = (int)blockIdx.x; i < M; i += (int)gridDim.x) {
    // cast_kernels.go:168
    const int t5 = i;
    // cast_kernels.go:169
    const int t6 = t5 + (int)gridDim.x;
    // cast_kernels.go:36
    const bool row_ok1 = t6 < M;
    // cast_kernels.go:179
    const int rows_in1 = max(min(t6, t3), 0);
    // cast_kernels.go:44
    const int t7 = rows_in1 * K;
    // cast_kernels.go:45
    bool mask1[64];
    #pragma unroll
    for (int r = 0; r < 64; ++r) mask1[r] = row_ok1 && m2[r];
    // cast_kernels.go:63
    uint16_t x_next2[64];
    #pragma unroll
    for (int r = 0; r < 64; r += 8) {
      {
        uint4 w = make_uint4(0u, 0u, 0u, 0u);
        if (mask1[r]) w = *(const uint4*)(x + (t7 + (r % 8 + r / 8 * 2048 + t0)));
        x_next2[r] = (uint16_t)w.x;
        x_next2[r + 1] = (uint16_t)(w.x >> 16);
        x_next2[r + 2] = (uint16_t)w.y;
        x_next2[r + 3] = (uint16_t)(w.y >> 16);
        x_next2[r + 4] = (uint16_t)w.z;
        x_next2[r + 5] = (uint16_t)(w.z >> 16);
        x_next2[r + 6] = (uint16_t)w.w;
        x_next2[r + 7] = (uint16_t)(w.w >> 16);
      }
    }
    // cast_kernels.go:36
    const bool row_ok2 = t5 < M;
    // cast_kernels.go:44
    const int t8 = t5 * K;
    // cast_kernels.go:45
    bool mask2[64];
    #pragma unroll
    for (int r = 0; r < 64; ++r) mask2[r] = row_ok2 && m2[r];
    // cast_kernels.go:67
    float xf[64];
    #pragma unroll
    for (int r = 0; r < 64; ++r) xf[r] = fp8g_bf16_to_f32(x_next1[r]);
    // cast_kernels.go:51
    float t9;
    { t9 = fp8g_absf(xf[0]); for (int k = 1; k < 64; ++k) t9 = fp8g_maxf_nz(t9, fp8g_absf(xf[k])); }
    float t10;
    t10 = t9;
    #pragma unroll
    for (int off = 1; off <= 32; off <<= 1)
      t10 = fp8g_maxf_nz(t10, __shfl_xor(t10, off));
    if (m0) *(float*)(lds + t1) = t10;
    __syncthreads();
    float amax;
    { amax = *(const float*)lds; for (int w = 1; w < 4; ++w) amax = fp8g_maxf_nz(amax, *(const float*)(lds + w * 4)); }
    __syncthreads();
    // cast_kernels.go:11
    const float scale = 240.0f / fp8g_maxf_nn(1e-12f, amax);
    // cast_kernels.go:52
    #pragma unroll
    for (int r = 0; r < 64; r += 8) {
      if (mask2[r]) *(uint2*)(q + (t8 + (r % 8 + r / 8 * 2048 + t0))) = make_uint2((uint32_t)fp8g_to_e4m3fnuz(xf[r] * scale) | ((uint32_t)fp8g_to_e4m3fnuz(xf[r + 1] * scale) << 8) | ((uint32_t)fp8g_to_e4m3fnuz(xf[r + 2] * scale) << 16) | ((uint32_t)fp8g_to_e4m3fnuz(xf[r + 3] * scale) << 24), (uint32_t)fp8g_to_e4m3fnuz(xf[r + 4] * scale) | ((uint32_t)fp8g_to_e4m3fnuz(xf[r + 5] * scale) << 8) | ((uint32_t)fp8g_to_e4m3fnuz(xf[r + 6] * scale) << 16) | ((uint32_t)fp8g_to_e4m3fnuz(xf[r + 7] * scale) << 24));
    }
    // cast_kernels.go:53
    if (row_ok2 && m1) *(inv_scale + t5) = 1.0f / scale;
    // cast_kernels.go:167
    #pragma unroll
    for (int r = 0; r < 64; ++r) x_next1[r] = x_next2[r];
  }
}
