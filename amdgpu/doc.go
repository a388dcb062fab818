// Package amdgpu compiles HIP C++ for one AMD GPU architecture with the
// system hipcc and reports what the compiler decided for each kernel:
// registers, LDS bytes, spills and the ISA. It needs no GPU; tests use it to
// hold emitted kernels against what schedule/ predicted.
//
// Compile (hipcc, the path a ROCm install takes) runs four tools in a
// temporary directory:
//
//	hipcc --genco --offload-arch=ARCH kernel.hip -o kernel.co   (an offload bundle)
//	clang-offload-bundler --unbundle … --output=kernel.elf      (the device ELF)
//	llvm-objdump -d --mcpu=ARCH kernel.elf                       (Report.Disasm)
//	llvm-readelf --notes kernel.elf                              (Report.Kernels)
//
// CompileFreestanding (clang of LLVM 20 or later alone, for architectures
// the local HIP does not know) compiles with -x hip --cuda-device-only
// -nogpuinc -nogpulib --no-gpu-bundle-output straight to the device ELF,
// then reads it with the same two LLVM tools of its install.
//
// The kernel list comes from the AMDGPU metadata note (code object v3 and
// later, the `amdhsa.kernels:` YAML), read by a small line parser keyed on
// indentation rather than a YAML library.
//
// Facts about CI's toolchain (Debian bookworm: HIP 5.2 on clang 15), checked
// by this package's tests or by hand on 2026-11-29:
//
//   - gfx90a and gfx940 compile; gfx941, gfx942 and gfx950 are unknown to
//     clang 15 ("invalid target ID"), so gfx942 is compile-checked as gfx940.
//   - Hardware FP8 conversion is available for gfx940:
//     __builtin_amdgcn_cvt_pk_fp8_f32, cvt_pk_bf8_f32, cvt_sr_fp8_f32,
//     cvt_sr_bf8_f32, cvt_f32_fp8, cvt_f32_bf8, cvt_pk_f32_fp8 and
//     cvt_pk_f32_bf8 compile to the v_cvt_*fp8/bf8 instructions, and the FP8
//     MFMAs (__builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8 …) to v_mfma_*_fp8_*.
//     On gfx940 these are the FNUZ formats (e4m3fnuz, e5m2fnuz) per the CDNA3
//     ISA; no GPU here checks their rounding or overflow. For gfx90a the
//     same calls fail: "needs target feature fp8-insts". The builtins take
//     no clamp argument, so an emitter that wants saturation clamps first.
//   - An agent-scope __hip_atomic_fetch_max on unsigned compiles to a bare
//     global_atomic_umax when __ATOMIC_RELAXED, and to buffer_wbl2 sc1 …
//     global_atomic_umax … buffer_inv sc1 when __ATOMIC_ACQ_REL or
//     __ATOMIC_SEQ_CST. HIP's atomicMax is the relaxed form. Workgroup scope
//     adds no cache maintenance; system scope adds sc0 sc1 and marks the
//     atomic sc1.
//   - __hip_atomic_fetch_max and _min on float are, in clang 15, an unsigned
//     max/min of the bit pattern (bitcast + atomicrmw umax): right only for
//     non-negative values, and -0.0 beats every positive number. Pass
//     fabsf(x) through an unsigned pointer, and say so in the source.
//   - hipcc adds -O3 and -std=c++11 (a later -std= overrides it; C++17
//     constructs compile with a warning), and HIP contracts a*b+c into an FMA
//     by default (fp-contract fast-honor-pragmas): a kernel that must match a
//     CPU reference bit for bit writes `#pragma clang fp contract(off)` or is
//     compiled with -ffp-contract=off.
//   - Debian's unversioned /usr/bin/llvm-objdump is LLVM 14, which aborts on
//     gfx940 code ("Disassembly not yet supported for subtarget"), so the
//     LLVM 15 tools are looked up first.
//   - Debian bookworm-security's clang-22, lld-22 and llvm-22 know gfx942
//     and gfx950 (checked 2026-12-06, LLVM 22.1.8); clang-19 rejects
//     gfx950. HIP 5.2's headers do not build under clang 22 and its device
//     libraries have no gfx950, so that path compiles without either: the
//     source's own prelude (package emit's FP8G_FREESTANDING) stands in for
//     the header and no kernel calls the device libraries. 182 golden
//     kernels compile so in about 0.35 s each; gfx950's scaled conversion
//     __builtin_amdgcn_cvt_scalef32_pk_fp8_f32 becomes
//     v_cvt_scalef32_pk_fp8_f32, and the same call for gfx942 is an error.
//   - The disassembly pads each kernel to 256 bytes with s_nop 0 after its
//     s_endpgm; KernelDisasm drops that padding.
package amdgpu
