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
extern "C" __global__ void __launch_bounds__(256) rowwise_cast_d0df4712(const float* __restrict__ x, uint8_t* __restrict__ q, float* __restrict__ inv_scale, int M, int K) {
  __shared__ __align__(16) unsigned char lds[16];
  const int tid = threadIdx.x;
  const int t0 = tid * 4;
  const bool m0 = tid % 64 == 0;
  const int t1 = tid / 64 * 4;
  const bool m1 = tid < 1;
  // cast_kernels.go:151
  const int t2 = (int)blockIdx.x;
  // cast_kernels.go:36
  const bool row_ok = t2 < M;
  // cast_kernels.go:163
  const int t3 = M - 1;
  const int rows_in = max(min(t2, t3), 0);
  // cast_kernels.go:44
  const int t4 = rows_in * K;
  // cast_kernels.go:45
  bool m2[64];
  #pragma unroll
  for (int r = 0; r < 64; ++r) m2[r] = r % 4 + r / 4 * 1024 + t0 < K;
  bool mask[64];
  #pragma unroll
  for (int r = 0; r < 64; ++r) mask[r] = row_ok && m2[r];
  // cast_kernels.go:63
  float x_next[64];
  #pragma unroll
  for (int r = 0; r < 64; r += 4) {
    {
      uint4 w = make_uint4(0u, 0u, 0u, 0u);
      if (mask[r]) w = *(const uint4*)(x + (t4 + (r % 4 + r / 4 * 1024 + t0)));
      x_next[r] = __uint_as_float(w.x);
      x_next[r + 1] = __uint_as_float(w.y);
      x_next[r + 2] = __uint_as_float(w.z);
      x_next[r + 3] = __uint_as_float(w.w);
    }
  }
  // cast_kernels.go:151
  float xf[64];
  #pragma unroll
  for (int r = 0; r < 64; ++r) xf[r] = x_next[r];
  for (int i = (int)blockIdx.x; i < M; i += (int)gridDim.x) {
    // cast_kernels.go:152
    const int t5 = i;
    // cast_kernels.go:153
    const int t6 = t5 + (int)gridDim.x;
    // cast_kernels.go:36
    const bool row_ok1 = t6 < M;
    // cast_kernels.go:163
    const int rows_in1 = max(min(t6, t3), 0);
    // cast_kernels.go:44
    const int t7 = rows_in1 * K;
    // cast_kernels.go:45
    bool mask1[64];
    #pragma unroll
    for (int r = 0; r < 64; ++r) mask1[r] = row_ok1 && m2[r];
    // cast_kernels.go:63
    float x_next1[64];
    #pragma unroll
    for (int r = 0; r < 64; r += 4) {
      {
        uint4 w = make_uint4(0u, 0u, 0u, 0u);
        if (mask1[r]) w = *(const uint4*)(x + (t7 + (r % 4 + r / 4 * 1024 + t0)));
        x_next1[r] = __uint_as_float(w.x);
        x_next1[r + 1] = __uint_as_float(w.y);
        x_next1[r + 2] = __uint_as_float(w.z);
        x_next1[r + 3] = __uint_as_float(w.w);
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
    for (int r = 0; r < 64; r += 4) {
      if (mask2[r]) *(uint32_t*)(q + (t8 + (r % 4 + r / 4 * 1024 + t0))) = (uint32_t)fp8g_to_e4m3fnuz(xf[r] * scale) | ((uint32_t)fp8g_to_e4m3fnuz(xf[r + 1] * scale) << 8) | ((uint32_t)fp8g_to_e4m3fnuz(xf[r + 2] * scale) << 16) | ((uint32_t)fp8g_to_e4m3fnuz(xf[r + 3] * scale) << 24);
    }
    // cast_kernels.go:53
    if (row_ok2 && m1) *(inv_scale + t5) = 1.0f / scale;
    // cast_kernels.go:151
    #pragma unroll
    for (int r = 0; r < 64; ++r) xf[r] = x_next1[r];
  }
}
