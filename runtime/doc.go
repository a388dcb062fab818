// Package runtime runs generated kernels on a GPU: it finds the device,
// JIT-compiles kernel source, moves memory, launches and times kernels.
//
// # Driver model
//
// The package is cgo over dlopen and links only libdl: no GPU header or
// library is needed to build it, and one binary runs on NVIDIA and AMD
// machines. On NVIDIA it loads the CUDA driver (libcuda.so.1) and uses the
// driver API (cuInit, cuModuleLoadData, cuLaunchKernel, cuMemAlloc_v2, ...);
// on AMD it loads the HIP runtime (libamdhip64.so) and uses HIP's module
// API (hipModuleLoadData, hipModuleLaunchKernel, hipMalloc, ...), which is
// the driver API under other names. So a single table maps each entry
// point to its CUDA and HIP symbol, with the few C types it needs declared
// by hand; attribute numbers differ and have a table per vendor.
//
// Nothing is loaded until Open asks for a device. FP8GEN_GPU=cuda or
// FP8GEN_GPU=hip forces a vendor; otherwise libcuda.so.1 is tried first,
// then libamdhip64.so. Only one vendor's library is loaded per process.
// Every error that means "no usable GPU here" (no library, a driver that
// will not initialise, no device) wraps ErrNoDevice, and callers fall back
// to the CPU interpreter on it. A binary built without cgo
// (CGO_ENABLED=0) loads no driver: Open fails with ErrNoDevice and
// ErrNoCgo, while Compiler and everything else that needs no device work
// as in the cgo build.
//
// A Device owns the device's primary context (NVIDIA) and one stream.
// Its methods are serialised by a mutex, and every C call first makes the
// context current (cuCtxSetCurrent, or hipSetDevice on AMD) on whatever OS
// thread runs it, so goroutines need not be pinned. Driver failures are
// *DriverError values naming the API function and the driver's error name
// and text, e.g. "cuMemAlloc_v2(1099511627776 B): CUDA_ERROR_OUT_OF_MEMORY:
// out of memory". Launch checks the grid, block and shared memory against
// the device and the kernel (and, where the CUDA driver can tell, the
// number and sizes of the arguments) before calling the driver.
//
// Memsets and device copies go into the stream with the launches
// (cuMemsetD8Async, cuMemcpyDtoDAsync_v2): the synchronous forms run on
// the legacy stream, which waits for the device's stream and makes it wait
// in turn, a bubble of about 2 µs between an op's scratch memset and its
// first kernel on the H200. LaunchDependent launches a kernel that may
// start while the one before it finishes (programmatic dependent launch,
// cuLaunchKernelEx, CUDA sm_90 and up; a plain launch elsewhere, or with
// FP8GEN_PDL=off): the kernel waits for its predecessor itself.
// LaunchResident launches a kernel whose blocks wait on each other: its
// one-axis grid clamped to the blocks the device holds at once (the
// occupancy query times the SMs), as a cooperative grid
// (cuLaunchKernelEx's attribute, cuLaunchCooperativeKernel,
// hipModuleLaunchCooperativeKernel); without one the launch is refused.
//
// Known limits on AMD (not testable without an AMD GPU): gcnArchName has no
// device attribute in ROCm 6+, so it is read by scanning the buffer that
// hipGetDeviceProperties fills for a "gfx..." string, which needs no
// struct layout; where that fails Props.Arch is empty, Props.ArchNote says
// why, and Target fails. hipFuncSetAttribute cannot address module
// kernels, so SetMaxDynamicShared only checks the LDS limit there.
//
// # JIT compilation
//
// Compiler.Compile turns CUDA/HIP C++ into a loadable image with nvcc
// (--cubin -arch=sm_90 --fmad=false) or hipcc (--genco --offload-arch=gfx942
// -ffp-contract=off), run as a subprocess. Images are cached on disk under
// os.UserCacheDir()/fp8gen/jit (or $FP8GEN_CACHE) keyed by the sha256 of the
// source, target, compiler path, compiler version and flags. An entry is
// one file, KEY.jit: a header with the sha256 and lengths of the compiler
// log and the image, then both. Entries are written to a temporary file,
// fsynced and renamed, so readers never see a partial image (a test kills
// a writer mid-write with SIGKILL) and concurrent processes race
// harmlessly; an entry whose hash does not match is rebuilt
// (CompileInfo.Rebuilt says why), and a killed writer's temporary file is
// removed once it is an hour old. Within a process, concurrent requests
// for one key compile once. The compiler runs in its own process group
// under a time limit (Compiler.Timeout, $FP8GEN_JIT_TIMEOUT, 5 minutes by
// default) and is killed with its children past it (ErrCompilerTimeout);
// whatever it leaves running when it exits is killed too. A program that
// stops on a signal calls KillCompilers first, as the group is out of
// reach of a signal to the program's own.
// A failed compile returns a *CompileError carrying the compiler's
// messages and the numbered source lines they point at.
package runtime
