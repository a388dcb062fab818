#include <hip/hip_runtime.h>
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

// fp8gen rowwise_cast (op rowwise_cast) for gfx942, e4m3fnuz, schedule BLOCK_K=4096,LOOP=0,PER_CU=64,PREFETCH=1,ROWS=1,WARPS=1
extern "C" __global__ void __launch_bounds__(64) rowwise_cast_762a38f0(const uint16_t* __restrict__ x, uint8_t* __restrict__ q, float* __restrict__ inv_scale, int M, int K) {
  const int tid = threadIdx.x;
  const int t0 = tid * 8;
  const bool m0 = tid < 1;
  // cast_kernels.go:151
  const int t1 = (int)blockIdx.x;
  // cast_kernels.go:36
  const bool row_ok = t1 < M;
  // cast_kernels.go:163
  const int t2 = M - 1;
  const int rows_in = max(min(t1, t2), 0);
  // cast_kernels.go:44
  const int t3 = rows_in * K;
  // cast_kernels.go:45
  bool m1[64];
  #pragma unroll
  for (int r = 0; r < 64; ++r) m1[r] = r % 8 + r / 8 * 512 + t0 < K;
  bool mask[64];
  #pragma unroll
  for (int r = 0; r < 64; ++r) mask[r] = row_ok && m1[r];
  // cast_kernels.go:63
  uint16_t x_next[64];
  #pragma unroll
  for (int r = 0; r < 64; r += 8) {
    {
      uint4 w = make_uint4(0u, 0u, 0u, 0u);
      if (mask[r]) w = *(const uint4*)(x + (t3 + (r % 8 + r / 8 * 512 + t0)));
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
  // cast_kernels.go:151
  uint16_t x_next1[64];
  #pragma unroll
  for (int r = 0; r < 64; ++r) x_next1[r] = x_next[r];
  for (int i = (int)blockIdx.x; i < M; i += (int)gridDim.x) {
    // cast_kernels.go:152
    const int t4 = i;
    // cast_kernels.go:153
    const int t5 = t4 + (int)gridDim.x;
    // cast_kernels.go:36
    const bool row_ok1 = t5 < M;
    // cast_kernels.go:163
    const int rows_in1 = max(min(t5, t2), 0);
    // cast_kernels.go:44
    const int t6 = rows_in1 * K;
    // cast_kernels.go:45
    bool mask1[64];
    #pragma unroll
    for (int r = 0; r < 64; ++r) mask1[r] = row_ok1 && m1[r];
    // cast_kernels.go:63
    uint16_t x_next2[64];
    #pragma unroll
    for (int r = 0; r < 64; r += 8) {
      {
        uint4 w = make_uint4(0u, 0u, 0u, 0u);
        if (mask1[r]) w = *(const uint4*)(x + (t6 + (r % 8 + r / 8 * 512 + t0)));
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
    const bool row_ok2 = t4 < M;
    // cast_kernels.go:44
    const int t7 = t4 * K;
    // cast_kernels.go:45
    bool mask2[64];
    #pragma unroll
    for (int r = 0; r < 64; ++r) mask2[r] = row_ok2 && m1[r];
    // cast_kernels.go:67
    float xf[64];
    #pragma unroll
    for (int r = 0; r < 64; ++r) xf[r] = fp8g_bf16_to_f32(x_next1[r]);
    // cast_kernels.go:51
    float t8;
    { t8 = fp8g_absf(xf[0]); for (int k = 1; k < 64; ++k) t8 = fp8g_maxf_nz(t8, fp8g_absf(xf[k])); }
    float amax;
    amax = t8;
    #pragma unroll
    for (int off = 1; off <= 32; off <<= 1)
      amax = fp8g_maxf_nz(amax, __shfl_xor(amax, off));
    // cast_kernels.go:11
    const float scale = 240.0f / fp8g_maxf_nn(1e-12f, amax);
    // cast_kernels.go:52
    #pragma unroll
    for (int r = 0; r < 64; r += 8) {
      if (mask2[r]) *(uint2*)(q + (t7 + (r % 8 + r / 8 * 512 + t0))) = make_uint2((uint32_t)fp8g_to_e4m3fnuz(xf[r] * scale) | ((uint32_t)fp8g_to_e4m3fnuz(xf[r + 1] * scale) << 8) | ((uint32_t)fp8g_to_e4m3fnuz(xf[r + 2] * scale) << 16) | ((uint32_t)fp8g_to_e4m3fnuz(xf[r + 3] * scale) << 24), (uint32_t)fp8g_to_e4m3fnuz(xf[r + 4] * scale) | ((uint32_t)fp8g_to_e4m3fnuz(xf[r + 5] * scale) << 8) | ((uint32_t)fp8g_to_e4m3fnuz(xf[r + 6] * scale) << 16) | ((uint32_t)fp8g_to_e4m3fnuz(xf[r + 7] * scale) << 24));
    }
    // cast_kernels.go:53
    if (row_ok2 && m0) *(inv_scale + t4) = 1.0f / scale;
    // cast_kernels.go:151
    #pragma unroll
    for (int r = 0; r < 64; ++r) x_next1[r] = x_next2[r];
  }
}
