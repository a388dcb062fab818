#include <stdint.h>

#define FP8G_FN static __device__ __forceinline__

FP8G_FN float fp8g_maxf(float a, float b) {
  return a == b ? __uint_as_float(__float_as_uint(a) & __float_as_uint(b)) : fmaxf(a, b);
}
FP8G_FN float fp8g_absf(float x) { return __uint_as_float(__float_as_uint(x) & 0x7fffffffu); }
FP8G_FN float fp8g_bf16_to_f32(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }
// f32 → e4m3fn by the hardware: round to nearest even, saturate to ±448, NaN → 0x7f.
FP8G_FN uint8_t fp8g_to_e4m3fn(float x) {
  unsigned short r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(0.0f), "f"(x));
  return x != x ? 0x7f : (uint8_t)r;
}
FP8G_FN float fp8g_atomic_max_f32_relaxed_agent(float* p, float v) {
  unsigned int old;
  if (v != v) { asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];" : "=r"(old) : "l"(p) : "memory"); return __uint_as_float(old); }  // max ignores NaN
  // Float max as integer max: signed max orders non-negative floats, unsigned
  // min orders negative ones.
  if (!(__float_as_uint(v) >> 31)) { asm volatile("atom.relaxed.gpu.global.max.s32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(__float_as_int(v)) : "memory"); }
  else { asm volatile("atom.relaxed.gpu.global.min.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(__float_as_uint(v)) : "memory"); }
  return __uint_as_float(old);
}

// fp8gen colwise_amax (op colwise_cast) for sm_90, e4m3fn, schedule BLOCK_K=64,BLOCK_M=64,PREFETCH=1,SPLIT=4,WARPS=4
extern "C" __global__ void __launch_bounds__(128) amax_k4(const uint16_t* __restrict__ x, float* __restrict__ amax, int M, int K) {
  asm volatile("griddepcontrol.launch_dependents;");
  __shared__ __align__(16) unsigned char lds[1024];
  const int tid = threadIdx.x;
  const int t0 = tid % 32;
  const int t1 = tid / 32;
  const int t2 = t0 % 8 * 8;
  const int t3 = t0 / 8;
  const int tc0 = t1 * 4 + t3;
  const int t4 = t1 * 64;
  // cast_kernels.go:202
  const int t5 = (int)blockIdx.y * 64;
  // cast_kernels.go:203
  const int m_start = (int)blockIdx.x * 64;
  // cast_kernels.go:151
  const int t6 = m_start;
  // cast_kernels.go:163
  const int t7 = M - 1;
  int rows_in[4];
  #pragma unroll
  for (int r = 0; r < 4; ++r) rows_in[r] = max(min(t6 + (r * 16 + tc0), t7), 0);
  // cast_kernels.go:182
  int t8[32];
  #pragma unroll
  for (int r = 0; r < 32; ++r) t8[r] = t5 + ((r % 8) + t2);
  int offs[32];
  #pragma unroll
  for (int r = 0; r < 32; ++r) offs[r] = rows_in[r / 8] * K + t8[r];
  // cast_kernels.go:183
  bool m0[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) m0[r] = t5 + (r + t2) < K;
  bool m1[32];
  #pragma unroll
  for (int r = 0; r < 32; ++r) m1[r] = m0[r % 8];
  bool mask[32];
  #pragma unroll
  for (int r = 0; r < 32; ++r) mask[r] = t6 + ((r / 8) * 16 + tc0) < M && m1[r];
  // cast_kernels.go:184
  uint16_t x_next[32];
  #pragma unroll
  for (int r = 0; r < 32; r += 8) {
    {
      uint4 w = make_uint4(0u, 0u, 0u, 0u);
      if (mask[r]) w = *(const uint4*)(x + offs[r]);
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
  uint16_t x_next1[32];
  #pragma unroll
  for (int r = 0; r < 32; ++r) x_next1[r] = x_next[r];
  float amax_rows[32];
  #pragma unroll
  for (int r = 0; r < 32; ++r) amax_rows[r] = 0.0f;
  for (int i = m_start; i < M; i += 256) {
    // cast_kernels.go:153
    const int t9 = i + 256;
    // cast_kernels.go:163
    int rows_in1[4];
    #pragma unroll
    for (int r = 0; r < 4; ++r) rows_in1[r] = max(min(t9 + (r * 16 + tc0), t7), 0);
    // cast_kernels.go:182
    int offs1[32];
    #pragma unroll
    for (int r = 0; r < 32; ++r) offs1[r] = rows_in1[r / 8] * K + t8[r];
    // cast_kernels.go:183
    bool mask1[32];
    #pragma unroll
    for (int r = 0; r < 32; ++r) mask1[r] = t9 + ((r / 8) * 16 + tc0) < M && m1[r];
    // cast_kernels.go:184
    uint16_t x_next2[32];
    #pragma unroll
    for (int r = 0; r < 32; r += 8) {
      {
        uint4 w = make_uint4(0u, 0u, 0u, 0u);
        if (mask1[r]) w = *(const uint4*)(x + offs1[r]);
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
    // cast_kernels.go:188
    float xf[32];
    #pragma unroll
    for (int r = 0; r < 32; ++r) xf[r] = fp8g_bf16_to_f32(x_next1[r]);
    float t10[32];
    #pragma unroll
    for (int r = 0; r < 32; ++r) t10[r] = fp8g_maxf(amax_rows[r], fp8g_absf(xf[r]));
    // cast_kernels.go:151
    #pragma unroll
    for (int r = 0; r < 32; ++r) x_next1[r] = x_next2[r];
    #pragma unroll
    for (int r = 0; r < 32; ++r) amax_rows[r] = t10[r];
  }
  // cast_kernels.go:204
  float t11[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) { t11[r] = amax_rows[r]; for (int k = 1; k < 4; ++k) t11[r] = fp8g_maxf(t11[r], amax_rows[r + k * 8]); }
  float t12[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) t12[r] = t11[r];
  #pragma unroll
  for (int off = 8; off <= 16; off <<= 1)
    #pragma unroll
    for (int r = 0; r < 8; ++r) t12[r] = fp8g_maxf(t12[r], __shfl_xor_sync(0xffffffffu, t12[r], off));
  #pragma unroll
  for (int r = 0; r < 8; ++r) if (t3 == 0) *(float*)(lds + (t4 + (r + t2)) * 4) = t12[r];
  __syncthreads();
  float amax_part[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) { amax_part[r] = *(const float*)(lds + (r + t2) * 4); for (int w = 1; w < 4; ++w) amax_part[r] = fp8g_maxf(amax_part[r], *(const float*)(lds + (r + t2) * 4 + w * 256)); }
  __syncthreads();
  // cast_kernels.go:206
  #pragma unroll
  for (int r = 0; r < 8; ++r) if (m0[r] && tc0 < 1) fp8g_atomic_max_f32_relaxed_agent(amax + (t5 + (r + t2)), amax_part[r]);
}

// fp8gen colwise_cast (op colwise_cast) for sm_90, e4m3fn, schedule BLOCK_K=64,BLOCK_M=64,PREFETCH=1,SPLIT=4,WARPS=4
extern "C" __global__ void __launch_bounds__(128) cast_k4(const uint16_t* __restrict__ x, uint8_t* __restrict__ qt, float* __restrict__ inv_scale, const float* __restrict__ amax, int M, int K) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  __shared__ __align__(16) unsigned char lds[4352];
  const int tid = threadIdx.x;
  const int t0 = tid % 32;
  const int t1 = tid / 32;
  const int t2 = tid * 4;
  const int tc0 = t1 * 4 + t0 / 8;
  const int t3 = tc0 * 4;
  const int t4 = t0 % 8 * 8;
  bool m0[4];
  #pragma unroll
  for (int r = 0; r < 4; ++r) m0[r] = r + t2 < 64;
  const int t5 = t0 % 4 * 16;
  const int tc01 = t1 * 8 + t0 / 4;
  // cast_kernels.go:219
  const int t6 = (int)blockIdx.y * 64;
  // cast_kernels.go:222
  bool m1[4];
  #pragma unroll
  for (int r = 0; r < 4; ++r) m1[r] = t6 + (r + t2 & 63) < K;
  float amax1[4];
  {
    uint4 w = make_uint4(0u, 0u, 0u, 0u);
    if (m1[0]) w = *(const uint4*)(amax + (t6 + (t2 & 63)));
    amax1[0] = __uint_as_float(w.x);
    amax1[1] = __uint_as_float(w.y);
    amax1[2] = __uint_as_float(w.z);
    amax1[3] = __uint_as_float(w.w);
  }
  // cast_kernels.go:11
  float scale[4];
  #pragma unroll
  for (int r = 0; r < 4; ++r) scale[r] = 448.0f / fp8g_maxf(amax1[r], 1e-12f);
  // cast_kernels.go:129
  const int t7 = (int)blockIdx.x * 64;
  // cast_kernels.go:131
  int offs[32];
  #pragma unroll
  for (int r = 0; r < 32; ++r) offs[r] = (t7 + ((r / 8) + t3)) * K + (t6 + ((r % 8) + t4));
  // cast_kernels.go:132
  bool mask[32];
  #pragma unroll
  for (int r = 0; r < 32; ++r) mask[r] = t7 + ((r / 8) + t3) < M && t6 + ((r % 8) + t4) < K;
  // cast_kernels.go:20
  uint16_t x1[32];
  #pragma unroll
  for (int r = 0; r < 32; r += 8) {
    {
      uint4 w = make_uint4(0u, 0u, 0u, 0u);
      if (mask[r]) w = *(const uint4*)(x + offs[r]);
      x1[r] = (uint16_t)w.x;
      x1[r + 1] = (uint16_t)(w.x >> 16);
      x1[r + 2] = (uint16_t)w.y;
      x1[r + 3] = (uint16_t)(w.y >> 16);
      x1[r + 4] = (uint16_t)w.z;
      x1[r + 5] = (uint16_t)(w.z >> 16);
      x1[r + 6] = (uint16_t)w.w;
      x1[r + 7] = (uint16_t)(w.w >> 16);
    }
  }
  float xf[32];
  #pragma unroll
  for (int r = 0; r < 32; ++r) xf[r] = fp8g_bf16_to_f32(x1[r]);
  // cast_kernels.go:223
  #pragma unroll
  for (int r = 0; r < 4; ++r) if (m0[r]) *(float*)(lds + (r + t2 & 63) * 4) = scale[r];
  __syncthreads();
  float scale1[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) scale1[r] = *(const float*)(lds + (r + t4) * 4);
  __syncthreads();
  uint8_t q[32];
  #pragma unroll
  for (int r = 0; r < 32; ++r) q[r] = fp8g_to_e4m3fn(xf[r] * scale1[r % 8]);
  // cast_kernels.go:225
  int offs_t[32];
  #pragma unroll
  for (int r = 0; r < 32; ++r) offs_t[r] = (t6 + ((r / 16) * 32 + tc01)) * M + (t7 + ((r % 16) + t5));
  // cast_kernels.go:226
  bool mask_t[32];
  #pragma unroll
  for (int r = 0; r < 32; ++r) mask_t[r] = t6 + ((r / 16) * 32 + tc01) < K && t7 + ((r % 16) + t5) < M;
  // cast_kernels.go:227
  #pragma unroll
  for (int r = 0; r < 8; ++r) {
    *(uint32_t*)(lds + ((r % 8 + t4) * 68 + (r / 8 + t3))) = (uint32_t)q[r] | ((uint32_t)q[r + 8] << 8) | ((uint32_t)q[r + 16] << 16) | ((uint32_t)q[r + 24] << 24);
  }
  __syncthreads();
  uint8_t shared[32];
  #pragma unroll
  for (int r = 0; r < 32; r += 4) {
    {
      const uint32_t w = *(const uint32_t*)(lds + ((r / 16 * 32 + tc01) * 68 + (r % 16 + t5)));
      shared[r] = (uint8_t)w;
      shared[r + 1] = (uint8_t)(w >> 8);
      shared[r + 2] = (uint8_t)(w >> 16);
      shared[r + 3] = (uint8_t)(w >> 24);
    }
  }
  __syncthreads();
  #pragma unroll
  for (int r = 0; r < 32; r += 16) {
    if (mask_t[r]) *(uint4*)(qt + offs_t[r]) = make_uint4((uint32_t)shared[r] | ((uint32_t)shared[r + 1] << 8) | ((uint32_t)shared[r + 2] << 16) | ((uint32_t)shared[r + 3] << 24), (uint32_t)shared[r + 4] | ((uint32_t)shared[r + 5] << 8) | ((uint32_t)shared[r + 6] << 16) | ((uint32_t)shared[r + 7] << 24), (uint32_t)shared[r + 8] | ((uint32_t)shared[r + 9] << 8) | ((uint32_t)shared[r + 10] << 16) | ((uint32_t)shared[r + 11] << 24), (uint32_t)shared[r + 12] | ((uint32_t)shared[r + 13] << 8) | ((uint32_t)shared[r + 14] << 16) | ((uint32_t)shared[r + 15] << 24));
  }
  // cast_kernels.go:228
  if (m1[0] && (int)blockIdx.x == 0 && m0[0]) *(uint4*)(inv_scale + (t6 + (t2 & 63))) = make_uint4(__float_as_uint(1.0f / scale[0]), __float_as_uint(1.0f / scale[1]), __float_as_uint(1.0f / scale[2]), __float_as_uint(1.0f / scale[3]));
}
extern "C" const void* amax_k4_fn = (const void*)amax_k4; extern "C" const void* cast_k4_fn = (const void*)cast_k4;
