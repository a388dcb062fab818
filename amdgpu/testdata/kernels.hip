// Kernels for the amdgpu package tests, compiled for gfx940. Each one pins a
// fact about CI's hipcc (HIP 5.2, clang 15) that the emitter relies on.
#include <hip/hip_runtime.h>

// A tensorwise amax with relaxed ordering: the bare global_atomic_umax.
// Non-negative floats order like their bit patterns, hence the unsigned max.
extern "C" __global__ void amax_relaxed(float* amax, float v) {
  __hip_atomic_fetch_max((unsigned*)amax, __float_as_uint(v), __ATOMIC_RELAXED,
                         __HIP_MEMORY_SCOPE_AGENT);
}

// The same with acquire-release ordering: a write-back before and an
// invalidate after the atomic.
extern "C" __global__ void amax_acq_rel(float* amax, float v) {
  __hip_atomic_fetch_max((unsigned*)amax, __float_as_uint(v), __ATOMIC_ACQ_REL,
                         __HIP_MEMORY_SCOPE_AGENT);
}

// The same on float: clang 15 makes it an unsigned max of the bit pattern
// (no compare-and-swap loop), right only for non-negative values.
extern "C" __global__ void amax_float(float* amax, float v) {
  __hip_atomic_fetch_max(amax, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}

// 1024 floats of LDS: group_segment_fixed_size is 4096.
extern "C" __global__ void lds_4k(float* out) {
  __shared__ float s[1024];
  s[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = s[1023 - threadIdx.x];
}

// 64 live floats under a VGPR cap: the register allocator spills to scratch.
extern "C" __global__ void __attribute__((amdgpu_num_vgpr(24)))
spill(const float* in, float* out) {
  float acc[64];
  int t = threadIdx.x;
#pragma unroll
  for (int j = 0; j < 64; j++) acc[j] = in[t + j * 256];
  float s = 0;
#pragma unroll
  for (int j = 0; j < 64; j++) s += acc[j] * acc[63 - j];
#pragma unroll
  for (int j = 0; j < 64; j++) out[t + j * 256] = acc[j] * s;
}

// A C++ (mangled) kernel name: metadata and disassembly both use _Z7mangledPf.
__global__ void mangled(float* out) { out[threadIdx.x] = 1.0f; }
