// The gfx940 hardware FP8 conversions, reached through clang builtins. They
// need the fp8-insts target feature: gfx940 has it, gfx90a does not.
#include <hip/hip_runtime.h>

// Packs two floats into the low two bytes of an int: v_cvt_pk_fp8_f32.
extern "C" __global__ void pack_fp8(const float* in, int* out) {
  int i = threadIdx.x;
  out[i] = __builtin_amdgcn_cvt_pk_fp8_f32(in[2 * i], in[2 * i + 1], 0, false);
}

// Widens byte 1 of each int back to float: v_cvt_f32_fp8 (SDWA byte select).
extern "C" __global__ void unpack_fp8(const int* in, float* out) {
  int i = threadIdx.x;
  out[i] = __builtin_amdgcn_cvt_f32_fp8(in[i], 1);
}
