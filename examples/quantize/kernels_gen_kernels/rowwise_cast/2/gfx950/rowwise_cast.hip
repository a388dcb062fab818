#include <hip/hip_runtime.h>
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
extern "C" __global__ void __launch_bounds__(512) rowwise_cast_daced693(const uint16_t* __restrict__ x, uint8_t* __restrict__ q, float* __restrict__ inv_scale, int M, int K) {
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
