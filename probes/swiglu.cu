// nvcc -O3 -std=c++17 -arch=sm_90 --fmad=false -Xptxas -v -o swiglu swiglu.cu && ./swiglu
//
// What the arithmetic of swiglu_probs costs on sm_90: fp8gen's kernels (fp8gen emit swiglu_probs
// --target sm_90 at the H200's tuned schedules of the three bench shapes, rowwise e4m3 output) with
// their silu swapped for one of four forms, timed as fp8gen bench times (a 256 MB memset flushes L2
// before each repetition, CUDA events, median of 60) beside a device copy of the same bytes.
#include <cstring>

// silu variants: 0 as fp8gen emits it (each product and sum rounded apart, degree-7 Taylor, IEEE
// division), 1 the same with fused multiply-adds (one rounding each) and k from the magic add's bits,
// 2 = 1 with an approximate division (how much the IEEE division costs), 3 the hardware's fast exp and
// division (the peers' silu: a floor on the arithmetic).
template <int V> static __device__ __forceinline__ float silu_v(float g) {
  if (V == 3) return __fdividef(g, 1.0f + __expf(-g));
  float a = fminf(fabsf(g), 104.0f);
  float kf, r, p;
  int k;
  if (V == 0) {
    kf = a * 1.442695f + 1.2582912e+07f - 1.2582912e+07f;
    r = kf * 0.69314575f - a + kf * 1.4286068e-06f;
    p = ((((((0.0001984127f * r + 0.0013888889f) * r + 0.008333334f) * r + 0.041666668f) * r + 0.16666667f) * r + 0.5f) * r + 1.0f) * r + 1.0f;
    k = (int)kf;
  } else {
    float t = fmaf(a, 1.442695f, 1.2582912e+07f);
    k = __float_as_int(t) - 0x4B400000;
    kf = t - 1.2582912e+07f;
    r = fmaf(kf, 1.4286068e-06f, fmaf(kf, 0.69314575f, -a));
    p = fmaf(fmaf(fmaf(fmaf(fmaf(fmaf(fmaf(0.0001984127f, r, 0.0013888889f), r, 0.008333334f), r, 0.041666668f), r, 0.16666667f), r, 0.5f), r, 1.0f), r, 1.0f);
  }
  int lo = k >> 1;
  float e = p * __int_as_float((127 - lo) << 23) * __int_as_float((127 - (k - lo)) << 23);
  float num = g >= 0.0f ? g : (g < -104.0f ? -104.0f : g) * e;
  if (V == 2) return __fdividef(num, e + 1.0f);
  return num / (e + 1.0f);
}
#include <stdint.h>

#define FP8G_FN static __device__ __forceinline__

FP8G_FN float fp8g_absf(float x) { return __uint_as_float(__float_as_uint(x) & 0x7fffffffu); }
FP8G_FN float fp8g_bf16_to_f32(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }
// Truncate toward zero, saturate, NaN to 0.
FP8G_FN int fp8g_f32_to_i32(float f) {
  if (f != f) return 0;
  if (f >= 2147483648.0f) return 2147483647;
  if (f <= -2147483648.0f) return (int)0x80000000;
  return (int)f;
}
// Two f32 → e4m3fn by one cvt: lo to the low byte, hi to the high one.
FP8G_FN uint16_t fp8g_to_e4m3fn_x2(float lo, float hi) {
  unsigned short r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
  return r & ~(((r & 0x7f7fu) + 0x0101u) & 0x8080u);
}

// fp8gen swiglu_probs (op swiglu_probs) for sm_90, e4m3fn, schedule BLOCK_F=256,PER_CU=0,PREFETCH=0,ROWS=4,TILES=3,WARPS=4
template <int V>
__global__ void __launch_bounds__(128) k768(const uint16_t* __restrict__ h1, const float* __restrict__ probs, uint8_t* __restrict__ y, float* __restrict__ inv_scale, int R, int F) {
  __shared__ __align__(16) unsigned char lds[16];
    const int tid = threadIdx.x;
  const int t0 = tid % 32;
  const int t1 = tid / 32;
  const int t2 = tid * 4;
  const int t3 = t0 * 8;
  bool m0[4];
  #pragma unroll
  for (int r = 0; r < 4; ++r) m0[r] = r + t2 < 4;
  const int t4 = t1 * 4;
  // swiglu_kernels.go:103
  const int t5 = (int)blockIdx.x * 4;
  // swiglu_kernels.go:53
  bool row_ok[4];
  #pragma unroll
  for (int r = 0; r < 4; ++r) row_ok[r] = t5 + (r + t2 & 3) < R;
  // swiglu_kernels.go:52
  const int rows = t5 + t1;
  // swiglu_kernels.go:58
  const int h_row = rows * (F * 2);
  // swiglu_kernels.go:66
  int t6[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) t6[r] = h_row;
  int offs_g[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) offs_g[r] = t6[r] + (r + t3);
  // swiglu_kernels.go:67
  int offs_u[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) offs_u[r] = offs_g[r] + F;
  // swiglu_kernels.go:70
  int t7[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) t7[r] = rows * F;
  int offs_y[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) offs_y[r] = t7[r] + (r + t3);
  // swiglu_kernels.go:53
  const bool row_ok1 = rows < R;
  // swiglu_kernels.go:71
  bool m1[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) m1[r] = row_ok1;
  bool mask[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) mask[r] = m1[r] && r + t3 < F;
  // swiglu_kernels.go:66
  int offs_g1[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) offs_g1[r] = t6[r] + (256 + (r + t3));
  // swiglu_kernels.go:67
  int offs_u1[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) offs_u1[r] = offs_g1[r] + F;
  // swiglu_kernels.go:70
  int offs_y1[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) offs_y1[r] = t7[r] + (256 + (r + t3));
  // swiglu_kernels.go:71
  bool mask1[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) mask1[r] = m1[r] && 256 + (r + t3) < F;
  // swiglu_kernels.go:66
  int offs_g2[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) offs_g2[r] = t6[r] + (512 + (r + t3));
  // swiglu_kernels.go:67
  int offs_u2[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) offs_u2[r] = offs_g2[r] + F;
  // swiglu_kernels.go:70
  int offs_y2[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) offs_y2[r] = t7[r] + (512 + (r + t3));
  // swiglu_kernels.go:71
  bool mask2[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) mask2[r] = m1[r] && 512 + (r + t3) < F;
  // swiglu_kernels.go:82
  uint16_t gate[8];
  {
    uint4 w = make_uint4(0u, 0u, 0u, 0u);
    if (mask[0]) w = *(const uint4*)(h1 + offs_g[0]);
    gate[0] = (uint16_t)w.x;
    gate[1] = (uint16_t)(w.x >> 16);
    gate[2] = (uint16_t)w.y;
    gate[3] = (uint16_t)(w.y >> 16);
    gate[4] = (uint16_t)w.z;
    gate[5] = (uint16_t)(w.z >> 16);
    gate[6] = (uint16_t)w.w;
    gate[7] = (uint16_t)(w.w >> 16);
  }
  uint16_t gate1[8];
  {
    uint4 w = make_uint4(0u, 0u, 0u, 0u);
    if (mask1[0]) w = *(const uint4*)(h1 + offs_g1[0]);
    gate1[0] = (uint16_t)w.x;
    gate1[1] = (uint16_t)(w.x >> 16);
    gate1[2] = (uint16_t)w.y;
    gate1[3] = (uint16_t)(w.y >> 16);
    gate1[4] = (uint16_t)w.z;
    gate1[5] = (uint16_t)(w.z >> 16);
    gate1[6] = (uint16_t)w.w;
    gate1[7] = (uint16_t)(w.w >> 16);
  }
  uint16_t gate2[8];
  {
    uint4 w = make_uint4(0u, 0u, 0u, 0u);
    if (mask2[0]) w = *(const uint4*)(h1 + offs_g2[0]);
    gate2[0] = (uint16_t)w.x;
    gate2[1] = (uint16_t)(w.x >> 16);
    gate2[2] = (uint16_t)w.y;
    gate2[3] = (uint16_t)(w.y >> 16);
    gate2[4] = (uint16_t)w.z;
    gate2[5] = (uint16_t)(w.z >> 16);
    gate2[6] = (uint16_t)w.w;
    gate2[7] = (uint16_t)(w.w >> 16);
  }
  // swiglu_kernels.go:85
  uint16_t up[8];
  {
    uint4 w = make_uint4(0u, 0u, 0u, 0u);
    if (mask[0]) w = *(const uint4*)(h1 + offs_u[0]);
    up[0] = (uint16_t)w.x;
    up[1] = (uint16_t)(w.x >> 16);
    up[2] = (uint16_t)w.y;
    up[3] = (uint16_t)(w.y >> 16);
    up[4] = (uint16_t)w.z;
    up[5] = (uint16_t)(w.z >> 16);
    up[6] = (uint16_t)w.w;
    up[7] = (uint16_t)(w.w >> 16);
  }
  uint16_t up1[8];
  {
    uint4 w = make_uint4(0u, 0u, 0u, 0u);
    if (mask1[0]) w = *(const uint4*)(h1 + offs_u1[0]);
    up1[0] = (uint16_t)w.x;
    up1[1] = (uint16_t)(w.x >> 16);
    up1[2] = (uint16_t)w.y;
    up1[3] = (uint16_t)(w.y >> 16);
    up1[4] = (uint16_t)w.z;
    up1[5] = (uint16_t)(w.z >> 16);
    up1[6] = (uint16_t)w.w;
    up1[7] = (uint16_t)(w.w >> 16);
  }
  uint16_t up2[8];
  {
    uint4 w = make_uint4(0u, 0u, 0u, 0u);
    if (mask2[0]) w = *(const uint4*)(h1 + offs_u2[0]);
    up2[0] = (uint16_t)w.x;
    up2[1] = (uint16_t)(w.x >> 16);
    up2[2] = (uint16_t)w.y;
    up2[3] = (uint16_t)(w.y >> 16);
    up2[4] = (uint16_t)w.z;
    up2[5] = (uint16_t)(w.z >> 16);
    up2[6] = (uint16_t)w.w;
    up2[7] = (uint16_t)(w.w >> 16);
  }
  // swiglu_kernels.go:146
  float prob[4];
  {
    uint4 w = make_uint4(0u, 0u, 0u, 0u);
    if (row_ok[0]) w = *(const uint4*)(probs + (t5 + (t2 & 3)));
    prob[0] = __uint_as_float(w.x);
    prob[1] = __uint_as_float(w.y);
    prob[2] = __uint_as_float(w.z);
    prob[3] = __uint_as_float(w.w);
  }
  #pragma unroll
  for (int r = 0; r < 4; ++r) if (m0[r]) *(float*)(lds + (r + t2 & 3) * 4) = prob[r];
  __syncthreads();
  float prob1;
  prob1 = *(const float*)(lds + t4);
  __syncthreads();
  // swiglu_kernels.go:131
  float g[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) g[r] = fp8g_bf16_to_f32(gate[r]);
  // swiglu_kernels.go:9
  float silu[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) silu[r] = silu_v<V>(g[r]);
  // swiglu_kernels.go:132
  float u[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) u[r] = fp8g_bf16_to_f32(up[r]);
  // swiglu_kernels.go:134
  float t9[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) t9[r] = prob1;
  float y1[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) y1[r] = silu[r] * u[r] * t9[r];
  // swiglu_kernels.go:131
  float g1[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) g1[r] = fp8g_bf16_to_f32(gate1[r]);
  // swiglu_kernels.go:9
  float a1[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) a1[r] = fminf(fp8g_absf(g1[r]), 104.0f);
  // swiglu_kernels.go:10
  float kf1[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) kf1[r] = a1[r] * 1.442695f + 1.2582912e+07f - 1.2582912e+07f;
  // swiglu_kernels.go:11
  float r2[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) r2[r] = kf1[r] * 0.69314575f - a1[r] + kf1[r] * 1.4286068e-06f;
  // swiglu_kernels.go:14
  float p1[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) p1[r] = ((((((0.0001984127f * r2[r] + 0.0013888889f) * r2[r] + 0.008333334f) * r2[r] + 0.041666668f) * r2[r] + 0.16666667f) * r2[r] + 0.5f) * r2[r] + 1.0f) * r2[r] + 1.0f;
  // swiglu_kernels.go:16
  int k2[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) k2[r] = fp8g_f32_to_i32(kf1[r]);
  // swiglu_kernels.go:17
  int t10[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) t10[r] = k2[r] >> 1;
  // swiglu_kernels.go:19
  float e1[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) e1[r] = p1[r] * __int_as_float((127 - t10[r]) << 23) * __int_as_float((127 - (k2[r] - t10[r])) << 23);
  // swiglu_kernels.go:26
  float silu1[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) silu1[r] = (g1[r] >= 0.0f ? g1[r] : (g1[r] < -104.0f ? -104.0f : g1[r]) * e1[r]) / (e1[r] + 1.0f);
  // swiglu_kernels.go:132
  float u1[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) u1[r] = fp8g_bf16_to_f32(up1[r]);
  // swiglu_kernels.go:134
  float y2[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) y2[r] = silu1[r] * u1[r] * t9[r];
  // swiglu_kernels.go:131
  float g2[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) g2[r] = fp8g_bf16_to_f32(gate2[r]);
  // swiglu_kernels.go:9
  float a2[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) a2[r] = fminf(fp8g_absf(g2[r]), 104.0f);
  // swiglu_kernels.go:10
  float kf2[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) kf2[r] = a2[r] * 1.442695f + 1.2582912e+07f - 1.2582912e+07f;
  // swiglu_kernels.go:11
  float r3[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) r3[r] = kf2[r] * 0.69314575f - a2[r] + kf2[r] * 1.4286068e-06f;
  // swiglu_kernels.go:14
  float p2[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) p2[r] = ((((((0.0001984127f * r3[r] + 0.0013888889f) * r3[r] + 0.008333334f) * r3[r] + 0.041666668f) * r3[r] + 0.16666667f) * r3[r] + 0.5f) * r3[r] + 1.0f) * r3[r] + 1.0f;
  // swiglu_kernels.go:16
  int k3[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) k3[r] = fp8g_f32_to_i32(kf2[r]);
  // swiglu_kernels.go:17
  int t11[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) t11[r] = k3[r] >> 1;
  // swiglu_kernels.go:19
  float e2[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) e2[r] = p2[r] * __int_as_float((127 - t11[r]) << 23) * __int_as_float((127 - (k3[r] - t11[r])) << 23);
  // swiglu_kernels.go:26
  float silu2[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) silu2[r] = (g2[r] >= 0.0f ? g2[r] : (g2[r] < -104.0f ? -104.0f : g2[r]) * e2[r]) / (e2[r] + 1.0f);
  // swiglu_kernels.go:132
  float u2[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) u2[r] = fp8g_bf16_to_f32(up2[r]);
  // swiglu_kernels.go:134
  float y3[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) y3[r] = silu2[r] * u2[r] * t9[r];
  // swiglu_kernels.go:153
  float t12;
  { t12 = fp8g_absf(y1[0]); for (int k = 1; k < 8; ++k) t12 = fmaxf(t12, fp8g_absf(y1[k])); }
  float t13;
  t13 = t12;
  #pragma unroll
  for (int off = 1; off <= 16; off <<= 1)
    t13 = fmaxf(t13, __shfl_xor_sync(0xffffffffu, t13, off));
  float t14;
  { t14 = fp8g_absf(y2[0]); for (int k = 1; k < 8; ++k) t14 = fmaxf(t14, fp8g_absf(y2[k])); }
  float t15;
  t15 = t14;
  #pragma unroll
  for (int off = 1; off <= 16; off <<= 1)
    t15 = fmaxf(t15, __shfl_xor_sync(0xffffffffu, t15, off));
  float t16;
  { t16 = fp8g_absf(y3[0]); for (int k = 1; k < 8; ++k) t16 = fmaxf(t16, fp8g_absf(y3[k])); }
  float t17;
  t17 = t16;
  #pragma unroll
  for (int off = 1; off <= 16; off <<= 1)
    t17 = fmaxf(t17, __shfl_xor_sync(0xffffffffu, t17, off));
  // swiglu_kernels.go:157
  const float amax = fmaxf(fmaxf(t13, t15), t17);
  // cast_kernels.go:11
  const float scale = 448.0f / fmaxf(amax, 1e-12f);
  // swiglu_kernels.go:199
  if (t0 < 1) *(float*)(lds + t4) = 1.0f / scale;
  __syncthreads();
  float shared[4];
  #pragma unroll
  for (int r = 0; r < 4; ++r) shared[r] = *(const float*)(lds + (r + t2 & 3) * 4);
  __syncthreads();
  if (row_ok[0] && m0[0]) *(uint4*)(inv_scale + (t5 + (t2 & 3))) = make_uint4(__float_as_uint(shared[0]), __float_as_uint(shared[1]), __float_as_uint(shared[2]), __float_as_uint(shared[3]));
  // swiglu_kernels.go:207
  float t18[8];
  #pragma unroll
  for (int r = 0; r < 8; ++r) t18[r] = scale;
  // swiglu_kernels.go:211
  uint8_t t19[8];
  #pragma unroll
  for (int r = 0; r < 8; r += 2) {
    const uint16_t q2 = fp8g_to_e4m3fn_x2(y1[r] * t18[r], y1[r + 1] * t18[r + 1]);
    t19[r] = (uint8_t)q2;
    t19[r + 1] = (uint8_t)(q2 >> 8);
  }
  if (mask[0]) *(uint2*)(y + offs_y[0]) = make_uint2((uint32_t)t19[0] | ((uint32_t)t19[1] << 8) | ((uint32_t)t19[2] << 16) | ((uint32_t)t19[3] << 24), (uint32_t)t19[4] | ((uint32_t)t19[5] << 8) | ((uint32_t)t19[6] << 16) | ((uint32_t)t19[7] << 24));
  uint8_t t20[8];
  #pragma unroll
  for (int r = 0; r < 8; r += 2) {
    const uint16_t q2 = fp8g_to_e4m3fn_x2(y2[r] * t18[r], y2[r + 1] * t18[r + 1]);
    t20[r] = (uint8_t)q2;
    t20[r + 1] = (uint8_t)(q2 >> 8);
  }
  if (mask1[0]) *(uint2*)(y + offs_y1[0]) = make_uint2((uint32_t)t20[0] | ((uint32_t)t20[1] << 8) | ((uint32_t)t20[2] << 16) | ((uint32_t)t20[3] << 24), (uint32_t)t20[4] | ((uint32_t)t20[5] << 8) | ((uint32_t)t20[6] << 16) | ((uint32_t)t20[7] << 24));
  uint8_t t21[8];
  #pragma unroll
  for (int r = 0; r < 8; r += 2) {
    const uint16_t q2 = fp8g_to_e4m3fn_x2(y3[r] * t18[r], y3[r + 1] * t18[r + 1]);
    t21[r] = (uint8_t)q2;
    t21[r + 1] = (uint8_t)(q2 >> 8);
  }
  if (mask2[0]) *(uint2*)(y + offs_y2[0]) = make_uint2((uint32_t)t21[0] | ((uint32_t)t21[1] << 8) | ((uint32_t)t21[2] << 16) | ((uint32_t)t21[3] << 24), (uint32_t)t21[4] | ((uint32_t)t21[5] << 8) | ((uint32_t)t21[6] << 16) | ((uint32_t)t21[7] << 24));
}

// fp8gen swiglu_probs (op swiglu_probs) for sm_90, e4m3fn, schedule BLOCK_F=2048,PER_CU=0,PREFETCH=0,ROWS=1,TILES=1,WARPS=4
template <int V>
__global__ void __launch_bounds__(128) k2048(const uint16_t* __restrict__ h1, const float* __restrict__ probs, uint8_t* __restrict__ y, float* __restrict__ inv_scale, int R, int F) {
  __shared__ __align__(16) unsigned char lds[16];
    const int tid = threadIdx.x;
  const int t0 = tid * 8;
  // swiglu_kernels.go:53
  const bool row_ok = (int)blockIdx.x < R;
  // swiglu_kernels.go:58
  const int h_row = (int)blockIdx.x * (F * 2);
  // swiglu_kernels.go:70
  const int t1 = (int)blockIdx.x * F;
  // swiglu_kernels.go:71
  bool mask[16];
  #pragma unroll
  for (int r = 0; r < 16; ++r) mask[r] = row_ok && r % 8 + r / 8 * 1024 + t0 < F;
  // swiglu_kernels.go:82
  uint16_t gate[16];
  #pragma unroll
  for (int r = 0; r < 16; r += 8) {
    {
      uint4 w = make_uint4(0u, 0u, 0u, 0u);
      if (mask[r]) w = *(const uint4*)(h1 + (h_row + (r % 8 + r / 8 * 1024 + t0)));
      gate[r] = (uint16_t)w.x;
      gate[r + 1] = (uint16_t)(w.x >> 16);
      gate[r + 2] = (uint16_t)w.y;
      gate[r + 3] = (uint16_t)(w.y >> 16);
      gate[r + 4] = (uint16_t)w.z;
      gate[r + 5] = (uint16_t)(w.z >> 16);
      gate[r + 6] = (uint16_t)w.w;
      gate[r + 7] = (uint16_t)(w.w >> 16);
    }
  }
  // swiglu_kernels.go:85
  uint16_t up[16];
  #pragma unroll
  for (int r = 0; r < 16; r += 8) {
    {
      uint4 w = make_uint4(0u, 0u, 0u, 0u);
      if (mask[r]) w = *(const uint4*)(h1 + (h_row + (r % 8 + r / 8 * 1024 + t0) + F));
      up[r] = (uint16_t)w.x;
      up[r + 1] = (uint16_t)(w.x >> 16);
      up[r + 2] = (uint16_t)w.y;
      up[r + 3] = (uint16_t)(w.y >> 16);
      up[r + 4] = (uint16_t)w.z;
      up[r + 5] = (uint16_t)(w.z >> 16);
      up[r + 6] = (uint16_t)w.w;
      up[r + 7] = (uint16_t)(w.w >> 16);
    }
  }
  // swiglu_kernels.go:146
  float prob;
  if (row_ok) prob = *(probs + (int)blockIdx.x); else prob = 0.0f;
  // swiglu_kernels.go:131
  float g[16];
  #pragma unroll
  for (int r = 0; r < 16; ++r) g[r] = fp8g_bf16_to_f32(gate[r]);
  // swiglu_kernels.go:9
  float silu[16];
  #pragma unroll
  for (int r = 0; r < 16; ++r) silu[r] = silu_v<V>(g[r]);
  // swiglu_kernels.go:132
  float u[16];
  #pragma unroll
  for (int r = 0; r < 16; ++r) u[r] = fp8g_bf16_to_f32(up[r]);
  // swiglu_kernels.go:134
  float y1[16];
  #pragma unroll
  for (int r = 0; r < 16; ++r) y1[r] = silu[r] * u[r] * prob;
  // swiglu_kernels.go:153
  float t3;
  { t3 = fp8g_absf(y1[0]); for (int k = 1; k < 16; ++k) t3 = fmaxf(t3, fp8g_absf(y1[k])); }
  float t4;
  t4 = t3;
  #pragma unroll
  for (int off = 1; off <= 16; off <<= 1)
    t4 = fmaxf(t4, __shfl_xor_sync(0xffffffffu, t4, off));
  if (tid % 32 == 0) *(float*)(lds + tid / 32 * 4) = t4;
  __syncthreads();
  float amax;
  { amax = *(const float*)lds; for (int w = 1; w < 4; ++w) amax = fmaxf(amax, *(const float*)(lds + w * 4)); }
  __syncthreads();
  // cast_kernels.go:11
  const float scale = 448.0f / fmaxf(amax, 1e-12f);
  // swiglu_kernels.go:199
  if (row_ok && tid < 1) *(inv_scale + (int)blockIdx.x) = 1.0f / scale;
  // swiglu_kernels.go:211
  uint8_t t5[16];
  #pragma unroll
  for (int r = 0; r < 16; r += 2) {
    const uint16_t q2 = fp8g_to_e4m3fn_x2(y1[r] * scale, y1[r + 1] * scale);
    t5[r] = (uint8_t)q2;
    t5[r + 1] = (uint8_t)(q2 >> 8);
  }
  #pragma unroll
  for (int r = 0; r < 16; r += 8) {
    if (mask[r]) *(uint2*)(y + (t1 + (r % 8 + r / 8 * 1024 + t0))) = make_uint2((uint32_t)t5[r] | ((uint32_t)t5[r + 1] << 8) | ((uint32_t)t5[r + 2] << 16) | ((uint32_t)t5[r + 3] << 24), (uint32_t)t5[r + 4] | ((uint32_t)t5[r + 5] << 8) | ((uint32_t)t5[r + 6] << 16) | ((uint32_t)t5[r + 7] << 24));
  }
}

// fp8gen swiglu_probs (op swiglu_probs) for sm_90, e4m3fn, schedule BLOCK_F=8192,PER_CU=0,PREFETCH=0,ROWS=1,TILES=1,WARPS=16
template <int V>
__global__ void __launch_bounds__(512) k8192(const uint16_t* __restrict__ h1, const float* __restrict__ probs, uint8_t* __restrict__ y, float* __restrict__ inv_scale, int R, int F) {
  __shared__ __align__(16) unsigned char lds[64];
    const int tid = threadIdx.x;
  const int t0 = tid * 8;
  // swiglu_kernels.go:53
  const bool row_ok = (int)blockIdx.x < R;
  // swiglu_kernels.go:58
  const int h_row = (int)blockIdx.x * (F * 2);
  // swiglu_kernels.go:70
  const int t1 = (int)blockIdx.x * F;
  // swiglu_kernels.go:71
  bool mask[16];
  #pragma unroll
  for (int r = 0; r < 16; ++r) mask[r] = row_ok && r % 8 + r / 8 * 4096 + t0 < F;
  // swiglu_kernels.go:82
  uint16_t gate[16];
  #pragma unroll
  for (int r = 0; r < 16; r += 8) {
    {
      uint4 w = make_uint4(0u, 0u, 0u, 0u);
      if (mask[r]) w = *(const uint4*)(h1 + (h_row + (r % 8 + r / 8 * 4096 + t0)));
      gate[r] = (uint16_t)w.x;
      gate[r + 1] = (uint16_t)(w.x >> 16);
      gate[r + 2] = (uint16_t)w.y;
      gate[r + 3] = (uint16_t)(w.y >> 16);
      gate[r + 4] = (uint16_t)w.z;
      gate[r + 5] = (uint16_t)(w.z >> 16);
      gate[r + 6] = (uint16_t)w.w;
      gate[r + 7] = (uint16_t)(w.w >> 16);
    }
  }
  // swiglu_kernels.go:85
  uint16_t up[16];
  #pragma unroll
  for (int r = 0; r < 16; r += 8) {
    {
      uint4 w = make_uint4(0u, 0u, 0u, 0u);
      if (mask[r]) w = *(const uint4*)(h1 + (h_row + (r % 8 + r / 8 * 4096 + t0) + F));
      up[r] = (uint16_t)w.x;
      up[r + 1] = (uint16_t)(w.x >> 16);
      up[r + 2] = (uint16_t)w.y;
      up[r + 3] = (uint16_t)(w.y >> 16);
      up[r + 4] = (uint16_t)w.z;
      up[r + 5] = (uint16_t)(w.z >> 16);
      up[r + 6] = (uint16_t)w.w;
      up[r + 7] = (uint16_t)(w.w >> 16);
    }
  }
  // swiglu_kernels.go:146
  float prob;
  if (row_ok) prob = *(probs + (int)blockIdx.x); else prob = 0.0f;
  // swiglu_kernels.go:131
  float g[16];
  #pragma unroll
  for (int r = 0; r < 16; ++r) g[r] = fp8g_bf16_to_f32(gate[r]);
  // swiglu_kernels.go:9
  float silu[16];
  #pragma unroll
  for (int r = 0; r < 16; ++r) silu[r] = silu_v<V>(g[r]);
  // swiglu_kernels.go:132
  float u[16];
  #pragma unroll
  for (int r = 0; r < 16; ++r) u[r] = fp8g_bf16_to_f32(up[r]);
  // swiglu_kernels.go:134
  float y1[16];
  #pragma unroll
  for (int r = 0; r < 16; ++r) y1[r] = silu[r] * u[r] * prob;
  // swiglu_kernels.go:153
  float t3;
  { t3 = fp8g_absf(y1[0]); for (int k = 1; k < 16; ++k) t3 = fmaxf(t3, fp8g_absf(y1[k])); }
  float t4;
  t4 = t3;
  #pragma unroll
  for (int off = 1; off <= 16; off <<= 1)
    t4 = fmaxf(t4, __shfl_xor_sync(0xffffffffu, t4, off));
  if (tid % 32 == 0) *(float*)(lds + tid / 32 * 4) = t4;
  __syncthreads();
  float amax;
  { amax = *(const float*)lds; for (int w = 1; w < 16; ++w) amax = fmaxf(amax, *(const float*)(lds + w * 4)); }
  __syncthreads();
  // cast_kernels.go:11
  const float scale = 448.0f / fmaxf(amax, 1e-12f);
  // swiglu_kernels.go:199
  if (row_ok && tid < 1) *(inv_scale + (int)blockIdx.x) = 1.0f / scale;
  // swiglu_kernels.go:211
  uint8_t t5[16];
  #pragma unroll
  for (int r = 0; r < 16; r += 2) {
    const uint16_t q2 = fp8g_to_e4m3fn_x2(y1[r] * scale, y1[r + 1] * scale);
    t5[r] = (uint8_t)q2;
    t5[r + 1] = (uint8_t)(q2 >> 8);
  }
  #pragma unroll
  for (int r = 0; r < 16; r += 8) {
    if (mask[r]) *(uint2*)(y + (t1 + (r % 8 + r / 8 * 4096 + t0))) = make_uint2((uint32_t)t5[r] | ((uint32_t)t5[r + 1] << 8) | ((uint32_t)t5[r + 2] << 16) | ((uint32_t)t5[r + 3] << 24), (uint32_t)t5[r + 4] | ((uint32_t)t5[r + 5] << 8) | ((uint32_t)t5[r + 6] << 16) | ((uint32_t)t5[r + 7] << 24));
  }
}
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); return 1; } } while (0)

typedef void (*kern)(const uint16_t*, const float*, uint8_t*, float*, int, int);
struct Shape { int R, F, rows, threads; kern k[4]; };

int main() {
  Shape shapes[] = {
    {65536, 768, 4, 128, {k768<0>, k768<1>, k768<2>, k768<3>}},
    {32768, 2048, 1, 128, {k2048<0>, k2048<1>, k2048<2>, k2048<3>}},
    {16384, 8192, 1, 512, {k8192<0>, k8192<1>, k8192<2>, k8192<3>}},
  };
  void* flush; CK(cudaMalloc(&flush, 256 << 20));
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (auto& s : shapes) {
    size_t nh = (size_t)s.R * 2 * s.F, ny = (size_t)s.R * s.F;
    std::vector<uint16_t> h(nh); std::vector<float> pr(s.R);
    uint32_t st = 12345;
    auto rnd = [&]() { st = st * 1664525u + 1013904223u; return (st >> 8) / 16777216.0f; };
    for (auto& x : h) { float v = (rnd() * 2 - 1) * 12.0f; uint32_t u; memcpy(&u, &v, 4); x = u >> 16; }
    for (auto& x : pr) x = rnd();
    uint16_t* dh; float* dp; uint8_t* dy; float* ds; void* cp;
    CK(cudaMalloc(&dh, nh * 2)); CK(cudaMalloc(&dp, s.R * 4)); CK(cudaMalloc(&dy, ny)); CK(cudaMalloc(&ds, s.R * 4));
    size_t ideal = nh * 2 + (size_t)s.R * 4 + ny + (size_t)s.R * 4;
    CK(cudaMalloc(&cp, ideal));
    CK(cudaMemcpy(dh, h.data(), nh * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dp, pr.data(), s.R * 4, cudaMemcpyHostToDevice));
    auto timeit = [&](auto launch) {
      for (int i = 0; i < 10; ++i) launch();
      std::vector<float> ts;
      for (int i = 0; i < 60; ++i) {
        cudaMemsetAsync(flush, i, 256 << 20);
        cudaEventRecord(a); launch(); cudaEventRecord(b); cudaEventSynchronize(b);
        float ms; cudaEventElapsedTime(&ms, a, b); ts.push_back(ms * 1000);
      }
      std::sort(ts.begin(), ts.end()); return ts[ts.size() / 2];
    };
    float tc = timeit([&] { cudaMemcpyAsync((char*)cp + ideal / 2, cp, ideal / 2, cudaMemcpyDeviceToDevice); });
    std::vector<uint8_t> y0(ny), y1(ny); std::vector<float> s0(s.R), s1(s.R);
    printf("R=%d F=%d copy %.1f us (%.0f MB)\n", s.R, s.F, tc, ideal / 1e6);
    for (int v = 0; v < 4; ++v) {
      int grid = (s.R + s.rows - 1) / s.rows;
      float t = timeit([&] { s.k[v]<<<grid, s.threads>>>(dh, dp, dy, ds, s.R, s.F); });
      CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
      CK(cudaMemcpy(v ? y1.data() : y0.data(), dy, ny, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(v ? s1.data() : s0.data(), ds, s.R * 4, cudaMemcpyDeviceToHost));
      size_t dyb = 0, dsc = 0;
      if (v) { for (size_t i = 0; i < ny; ++i) dyb += y0[i] != y1[i]; for (int i = 0; i < s.R; ++i) dsc += s0[i] != s1[i]; }
      printf("  variant %d: %.1f us, %.1f%% of copy; y bytes unlike variant 0: %zu of %zu, scales %zu\n", v, t, 100 * tc / t, dyb, ny, dsc);
    }
    cudaFree(dh); cudaFree(dp); cudaFree(dy); cudaFree(ds); cudaFree(cp);
  }
  return 0;
}
