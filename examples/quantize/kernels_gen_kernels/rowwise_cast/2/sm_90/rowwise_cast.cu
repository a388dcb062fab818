#include <stdint.h>

#define FP8G_FN static __device__ __forceinline__

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
// Two f32 → e4m3fn by one cvt: lo to the low byte, hi to the high one.
FP8G_FN uint16_t fp8g_to_e4m3fn_x2(float lo, float hi) {
  unsigned short r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
  return r & ~(((r & 0x7f7fu) + 0x0101u) & 0x8080u);
}

// fp8gen rowwise_cast (op rowwise_cast) for sm_90, e4m3fn, schedule BLOCK_K=4096,LOOP=1,PER_CU=0,PREFETCH=0,ROWS=1,WARPS=8
extern "C" __global__ void __launch_bounds__(256) rowwise_cast_8576bf9c(
    const uint16_t* __restrict__ x, uint8_t* __restrict__ q, float* __restrict__ inv_scale, int M, int K) {
  __shared__ __align__(16) unsigned char lds[32];
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const int tid = threadIdx.x;
  const int t0 = tid * 8;
  // cast_kernels.go:36
  const bool row_ok = (int)blockIdx.x < M;
  // cast_kernels.go:76
  float amax_part[16];
  #pragma unroll
  for (int r = 0; r < 16; ++r) amax_part[r] = 0.0f;
  for (int i = 0; i < K; i += 4096) {
    // cast_kernels.go:44
    const int t1 = (int)blockIdx.x * K;
    // cast_kernels.go:45
    bool mask[16];
    #pragma unroll
    for (int r = 0; r < 16; ++r) mask[r] = row_ok && i + (r % 8 + r / 8 * 2048 + t0) < K;
    // cast_kernels.go:20
    uint16_t x1[16];
    #pragma unroll
    for (int r = 0; r < 16; ++r) if (mask[r]) x1[r] = *(x + (t1 + (i + (r % 8 + r / 8 * 2048 + t0)))); else x1[r] = (uint16_t)0x0000;
    float xf[16];
    #pragma unroll
    for (int r = 0; r < 16; ++r) xf[r] = fp8g_bf16_to_f32(x1[r]);
    // cast_kernels.go:78
    float t2[16];
    #pragma unroll
    for (int r = 0; r < 16; ++r) t2[r] = fmaxf(amax_part[r], fp8g_absf(xf[r]));
    // cast_kernels.go:76
    #pragma unroll
    for (int r = 0; r < 16; ++r) amax_part[r] = t2[r];
  }
  // cast_kernels.go:80
  float t3;
  { t3 = amax_part[0]; for (int k = 1; k < 16; ++k) t3 = fmaxf(t3, amax_part[k]); }
  float t4;
  t4 = t3;
  #pragma unroll
  for (int off = 1; off <= 16; off <<= 1)
    t4 = fmaxf(t4, __shfl_xor_sync(0xffffffffu, t4, off));
  if (tid % 32 == 0) *(float*)(lds + tid / 32 * 4) = t4;
  __syncthreads();
  float amax;
  { amax = *(const float*)lds; for (int w = 1; w < 8; ++w) amax = fmaxf(amax, *(const float*)(lds + w * 4)); }
  __syncthreads();
  // cast_kernels.go:11
  const float scale = 448.0f / fmaxf(amax, 1e-12f);
  // cast_kernels.go:81
  for (int i1 = 0; i1 < K; i1 += 4096) {
    // cast_kernels.go:44
    const int t5 = (int)blockIdx.x * K;
    // cast_kernels.go:45
    bool mask1[16];
    #pragma unroll
    for (int r = 0; r < 16; ++r) mask1[r] = row_ok && i1 + (r % 8 + r / 8 * 2048 + t0) < K;
    // cast_kernels.go:20
    uint16_t x2[16];
    #pragma unroll
    for (int r = 0; r < 16; ++r) if (mask1[r]) x2[r] = *(x + (t5 + (i1 + (r % 8 + r / 8 * 2048 + t0)))); else x2[r] = (uint16_t)0x0000;
    float xf1[16];
    #pragma unroll
    for (int r = 0; r < 16; ++r) xf1[r] = fp8g_bf16_to_f32(x2[r]);
    // cast_kernels.go:84
    uint8_t t6[16];
    #pragma unroll
    for (int r = 0; r < 16; r += 2) {
      const uint16_t q2 = fp8g_to_e4m3fn_x2(xf1[r] * scale, xf1[r + 1] * scale);
      t6[r] = (uint8_t)q2;
      t6[r + 1] = (uint8_t)(q2 >> 8);
    }
    #pragma unroll
    for (int r = 0; r < 16; r += 8) {
      if (mask1[r] && mask1[r + 7]) {
        fp8g_st_any((uint8_t*)(q + (t5 + (i1 + (r % 8 + r / 8 * 2048 + t0)))), make_uint2((uint32_t)t6[r] | ((uint32_t)t6[r + 1] << 8) | ((uint32_t)t6[r + 2] << 16) | ((uint32_t)t6[r + 3] << 24), (uint32_t)t6[r + 4] | ((uint32_t)t6[r + 5] << 8) | ((uint32_t)t6[r + 6] << 16) | ((uint32_t)t6[r + 7] << 24)));
      } else {
        if (mask1[r]) *(q + (t5 + (i1 + (r % 8 + r / 8 * 2048 + t0)))) = t6[r];
        if (mask1[r + 1]) *(q + (t5 + (i1 + ((r + 1) % 8 + (r + 1) / 8 * 2048 + t0)))) = t6[r + 1];
        if (mask1[r + 2]) *(q + (t5 + (i1 + ((r + 2) % 8 + (r + 2) / 8 * 2048 + t0)))) = t6[r + 2];
        if (mask1[r + 3]) *(q + (t5 + (i1 + ((r + 3) % 8 + (r + 3) / 8 * 2048 + t0)))) = t6[r + 3];
        if (mask1[r + 4]) *(q + (t5 + (i1 + ((r + 4) % 8 + (r + 4) / 8 * 2048 + t0)))) = t6[r + 4];
        if (mask1[r + 5]) *(q + (t5 + (i1 + ((r + 5) % 8 + (r + 5) / 8 * 2048 + t0)))) = t6[r + 5];
        if (mask1[r + 6]) *(q + (t5 + (i1 + ((r + 6) % 8 + (r + 6) / 8 * 2048 + t0)))) = t6[r + 6];
        if (mask1[r + 7]) *(q + (t5 + (i1 + ((r + 7) % 8 + (r + 7) / 8 * 2048 + t0)))) = t6[r + 7];
      }
    }
  // cast_kernels.go:81
  }
  // cast_kernels.go:87
  if (row_ok && tid < 1) *(inv_scale + (int)blockIdx.x) = 1.0f / scale;
}
