package runtime

// This file is the only one that speaks C. It holds the vendor symbol table,
// the dlopen loader and one typed wrapper per driver entry point; device.go
// builds the Go API on top of the Go methods at the bottom of this file.
//
// No GPU header is included: the handful of types the driver API needs are
// declared here. CUresult and hipError_t are C enums (int-sized); CUdevice
// and hipDevice_t are int; CUdeviceptr (unsigned long long) and
// hipDeviceptr_t (void*) are both 64 bits on LP64; every other handle
// (context, module, function, stream, event) is an opaque pointer.

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int fgResult;
typedef unsigned long long fgPtr;

enum { FG_CUDA = 1, FG_HIP = 2, FG_MAX_ARGS = 256 };

// Slots of the symbol table; driver.go's symbols maps each to a name per vendor.
enum {
	S_Init, S_DriverGetVersion, S_DeviceGetCount, S_DeviceGet, S_DeviceGetName,
	S_DeviceGetAttribute, S_DeviceTotalMem, S_PrimaryCtxRetain, S_PrimaryCtxRelease,
	S_CtxSetCurrent, S_SetDevice, S_CtxSynchronize, S_MemAlloc, S_MemFree,
	S_MemcpyHtoD, S_MemcpyDtoH, S_MemcpyDtoDAsync, S_MemsetD8Async, S_ModuleLoadData,
	S_ModuleUnload, S_ModuleGetFunction, S_FuncGetAttribute, S_FuncSetAttribute,
	S_FuncGetParamInfo, S_FuncGetParamCount, S_LaunchKernel, S_StreamCreate,
	S_StreamDestroy, S_EventCreate, S_EventRecord, S_EventSynchronize,
	S_EventElapsedTime, S_EventDestroy, S_GetErrorName, S_GetErrorString,
	S_GetDeviceProperties, S_LaunchKernelEx, S_OccupancyMaxActiveBlocks, S_LaunchCooperative,
	S_COUNT
};

static int fg_vendor;
static void *fg_fn[S_COUNT];
static void *fg_stage[S_COUNT];

static void *fg_dlopen(const char *path, char *err, int n) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h && n > 0) {
		const char *e = dlerror();
		strncpy(err, e ? e : "dlopen failed", (size_t)n - 1);
		err[n - 1] = 0;
	}
	return h;
}

// fg_stage_sym resolves name into the staging table; fg_commit installs it.
static int fg_stage_sym(void *h, int slot, const char *name) {
	fg_stage[slot] = dlsym(h, name);
	return fg_stage[slot] != NULL;
}

static void fg_stage_reset(void) { memset(fg_stage, 0, sizeof fg_stage); }

static void fg_commit(int vendor) {
	fg_vendor = vendor;
	memcpy(fg_fn, fg_stage, sizeof fg_fn);
}

static void fg_reset(void) {
	fg_vendor = 0;
	memset(fg_fn, 0, sizeof fg_fn);
}

static int fg_has(int slot) { return fg_fn[slot] != NULL; }

// ---- calls that need no current context ----

static fgResult fg_init(void) { return ((fgResult (*)(unsigned))fg_fn[S_Init])(0); }
static fgResult fg_driver_version(int *v) { return ((fgResult (*)(int *))fg_fn[S_DriverGetVersion])(v); }
static fgResult fg_device_count(int *n) { return ((fgResult (*)(int *))fg_fn[S_DeviceGetCount])(n); }
static fgResult fg_device_get(int *dev, int ordinal) { return ((fgResult (*)(int *, int))fg_fn[S_DeviceGet])(dev, ordinal); }
static fgResult fg_device_name(char *buf, int n, int dev) { return ((fgResult (*)(char *, int, int))fg_fn[S_DeviceGetName])(buf, n, dev); }
static fgResult fg_device_attr(int *v, int attr, int dev) { return ((fgResult (*)(int *, int, int))fg_fn[S_DeviceGetAttribute])(v, attr, dev); }
static fgResult fg_total_mem(size_t *b, int dev) { return ((fgResult (*)(size_t *, int))fg_fn[S_DeviceTotalMem])(b, dev); }
static fgResult fg_ctx_retain(void **ctx, int dev) { return ((fgResult (*)(void **, int))fg_fn[S_PrimaryCtxRetain])(ctx, dev); }
static fgResult fg_ctx_release(int dev) { return ((fgResult (*)(int))fg_fn[S_PrimaryCtxRelease])(dev); }
static fgResult fg_device_props(void *buf, int ordinal) { return ((fgResult (*)(void *, int))fg_fn[S_GetDeviceProperties])(buf, ordinal); }

static const char *fg_error_name(fgResult rc) {
	const char *s = NULL;
	if (!fg_fn[S_GetErrorName]) return NULL;
	if (fg_vendor == FG_CUDA) {
		if (((fgResult (*)(fgResult, const char **))fg_fn[S_GetErrorName])(rc, &s) != 0) s = NULL;
	} else {
		s = ((const char *(*)(fgResult))fg_fn[S_GetErrorName])(rc);
	}
	return s;
}

static const char *fg_error_string(fgResult rc) {
	const char *s = NULL;
	if (!fg_fn[S_GetErrorString]) return NULL;
	if (fg_vendor == FG_CUDA) {
		if (((fgResult (*)(fgResult, const char **))fg_fn[S_GetErrorString])(rc, &s) != 0) s = NULL;
	} else {
		s = ((const char *(*)(fgResult))fg_fn[S_GetErrorString])(rc);
	}
	return s;
}

// ---- calls made with the device's context current ----
//
// A cgo call runs start to end on one OS thread, so making the context
// current inside the same C call is enough: no goroutine pinning is needed.

typedef struct { int ordinal; int dev; void *ctx; } fgDev;
typedef struct { fgResult rc; int cur; } fgRes; // cur: the failure was making the context current

static fgRes fg_res(fgResult rc, int cur) { fgRes r; r.rc = rc; r.cur = cur; return r; }

static fgResult fg_make_current(fgDev d) {
	if (fg_vendor == FG_CUDA) return ((fgResult (*)(void *))fg_fn[S_CtxSetCurrent])(d.ctx);
	return ((fgResult (*)(int))fg_fn[S_SetDevice])(d.ordinal);
}

#define FG_CURRENT(d) do { fgResult rc_ = fg_make_current(d); if (rc_ != 0) return fg_res(rc_, 1); } while (0)
#define FG_RET(call) return fg_res((call), 0)

static fgRes fg_mem_alloc(fgDev d, fgPtr *p, size_t n) { FG_CURRENT(d); FG_RET(((fgResult (*)(fgPtr *, size_t))fg_fn[S_MemAlloc])(p, n)); }
static fgRes fg_mem_free(fgDev d, fgPtr p) { FG_CURRENT(d); FG_RET(((fgResult (*)(fgPtr))fg_fn[S_MemFree])(p)); }
static fgRes fg_htod(fgDev d, fgPtr dst, const void *src, size_t n) { FG_CURRENT(d); FG_RET(((fgResult (*)(fgPtr, const void *, size_t))fg_fn[S_MemcpyHtoD])(dst, src, n)); }
static fgRes fg_dtoh(fgDev d, void *dst, fgPtr src, size_t n) { FG_CURRENT(d); FG_RET(((fgResult (*)(void *, fgPtr, size_t))fg_fn[S_MemcpyDtoH])(dst, src, n)); }
static fgRes fg_dtod(fgDev d, fgPtr dst, fgPtr src, size_t n, void *s) { FG_CURRENT(d); FG_RET(((fgResult (*)(fgPtr, fgPtr, size_t, void *))fg_fn[S_MemcpyDtoDAsync])(dst, src, n, s)); }
static fgRes fg_memset8(fgDev d, fgPtr p, unsigned char v, size_t n, void *s) { FG_CURRENT(d); FG_RET(((fgResult (*)(fgPtr, unsigned char, size_t, void *))fg_fn[S_MemsetD8Async])(p, v, n, s)); }
static fgRes fg_module_load(fgDev d, void **m, const void *image) { FG_CURRENT(d); FG_RET(((fgResult (*)(void **, const void *))fg_fn[S_ModuleLoadData])(m, image)); }
static fgRes fg_module_unload(fgDev d, void *m) { FG_CURRENT(d); FG_RET(((fgResult (*)(void *))fg_fn[S_ModuleUnload])(m)); }
static fgRes fg_module_function(fgDev d, void **f, void *m, const char *name) { FG_CURRENT(d); FG_RET(((fgResult (*)(void **, void *, const char *))fg_fn[S_ModuleGetFunction])(f, m, name)); }
static fgRes fg_occupancy(fgDev d, int *n, void *f, int block, size_t shared) { FG_CURRENT(d); FG_RET(((fgResult (*)(int *, void *, int, size_t))fg_fn[S_OccupancyMaxActiveBlocks])(n, f, block, shared)); }
static fgRes fg_func_get_attr(fgDev d, int *v, int attr, void *f) { FG_CURRENT(d); FG_RET(((fgResult (*)(int *, int, void *))fg_fn[S_FuncGetAttribute])(v, attr, f)); }
static fgRes fg_func_set_attr(fgDev d, void *f, int attr, int v) { FG_CURRENT(d); FG_RET(((fgResult (*)(void *, int, int))fg_fn[S_FuncSetAttribute])(f, attr, v)); }
static fgRes fg_func_param_count(fgDev d, void *f, size_t *n) { FG_CURRENT(d); FG_RET(((fgResult (*)(void *, size_t *))fg_fn[S_FuncGetParamCount])(f, n)); }
static fgRes fg_func_param_info(fgDev d, void *f, size_t i, size_t *off, size_t *size) { FG_CURRENT(d); FG_RET(((fgResult (*)(void *, size_t, size_t *, size_t *))fg_fn[S_FuncGetParamInfo])(f, i, off, size)); }
static fgRes fg_stream_create(fgDev d, void **s) { FG_CURRENT(d); FG_RET(((fgResult (*)(void **, unsigned))fg_fn[S_StreamCreate])(s, 0)); }
static fgRes fg_stream_destroy(fgDev d, void *s) { FG_CURRENT(d); FG_RET(((fgResult (*)(void *))fg_fn[S_StreamDestroy])(s)); }
static fgRes fg_ctx_sync(fgDev d) { FG_CURRENT(d); FG_RET(((fgResult (*)(void))fg_fn[S_CtxSynchronize])()); }
static fgRes fg_event_create(fgDev d, void **e) { FG_CURRENT(d); FG_RET(((fgResult (*)(void **, unsigned))fg_fn[S_EventCreate])(e, 0)); }
static fgRes fg_event_record(fgDev d, void *e, void *s) { FG_CURRENT(d); FG_RET(((fgResult (*)(void *, void *))fg_fn[S_EventRecord])(e, s)); }
static fgRes fg_event_sync(fgDev d, void *e) { FG_CURRENT(d); FG_RET(((fgResult (*)(void *))fg_fn[S_EventSynchronize])(e)); }
static fgRes fg_event_elapsed(fgDev d, float *ms, void *a, void *b) { FG_CURRENT(d); FG_RET(((fgResult (*)(float *, void *, void *))fg_fn[S_EventElapsedTime])(ms, a, b)); }
static fgRes fg_event_destroy(fgDev d, void *e) { FG_CURRENT(d); FG_RET(((fgResult (*)(void *))fg_fn[S_EventDestroy])(e)); }

// fg_params points one kernelParams entry at each 8-byte slot; the driver
// copies the values before cuLaunchKernel(Ex)/hipModuleLaunchKernel returns.
// Entries past n point at zeros, so a kernel given too few arguments (where
// the driver cannot tell Go the parameter count) reads zeros, not garbage.
static const uint64_t fg_zeros[512];

static void fg_params(void **params, uint64_t *slots, int n) {
	int i;
	for (i = 0; i < FG_MAX_ARGS; i++) params[i] = i < n ? (void *)&slots[i] : (void *)fg_zeros;
}

// fg_launch launches through cuLaunchKernel / hipModuleLaunchKernel or,
// with cooperative, cuLaunchCooperativeKernel / hipModuleLaunchCooperativeKernel
// (the same arguments without extra).
static fgRes fg_launch(fgDev d, void *f, unsigned gx, unsigned gy, unsigned gz,
		unsigned bx, unsigned by, unsigned bz, unsigned shared, void *stream,
		uint64_t *slots, int n, int cooperative) {
	void *params[FG_MAX_ARGS];
	FG_CURRENT(d);
	fg_params(params, slots, n);
	if (cooperative)
		FG_RET(((fgResult (*)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
				unsigned, void *, void **))fg_fn[S_LaunchCooperative])(f, gx, gy, gz, bx, by, bz, shared, stream, params));
	FG_RET(((fgResult (*)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			unsigned, void *, void **, void **))fg_fn[S_LaunchKernel])(
		f, gx, gy, gz, bx, by, bz, shared, stream, params, NULL));
}

// With the programmatic stream serialization attribute a kernel may be
// scheduled while the previous kernel in the stream finishes, and waits
// for it with griddepcontrol.wait. The structs are CUlaunchConfig and
// CUlaunchAttribute as cuda.h lays them out (CUDA 12.0+): the attribute's
// id, padded to 8 bytes, then its 64-byte value union.
typedef struct { unsigned id; unsigned pad; unsigned long long value[8]; } fgLaunchAttr; // 8-aligned, as the union
typedef struct {
	unsigned gx, gy, gz, bx, by, bz, shared;
	void *stream;
	fgLaunchAttr *attrs;
	unsigned nattrs;
} fgLaunchConfig;
enum { FG_ATTR_COOPERATIVE = 2, FG_ATTR_PROGRAMMATIC_STREAM_SERIALIZATION = 6 };

// fg_launch_ex launches through cuLaunchKernelEx with the programmatic
// stream serialization attribute (dependent) and/or the cooperative one,
// under which the driver refuses a grid whose blocks cannot all be
// resident at once rather than run it (a kernel whose blocks wait on each
// other would hang).
static fgRes fg_launch_ex(fgDev d, void *f, unsigned gx, unsigned gy, unsigned gz,
		unsigned bx, unsigned by, unsigned bz, unsigned shared, void *stream,
		uint64_t *slots, int n, int dependent, int cooperative) {
	void *params[FG_MAX_ARGS];
	fgLaunchAttr attrs[2];
	fgLaunchConfig cfg;
	FG_CURRENT(d);
	fg_params(params, slots, n);
	memset(attrs, 0, sizeof attrs);
	memset(&cfg, 0, sizeof cfg);
	if (dependent) {
		attrs[cfg.nattrs].id = FG_ATTR_PROGRAMMATIC_STREAM_SERIALIZATION;
		attrs[cfg.nattrs++].value[0] = 1; // programmaticStreamSerializationAllowed: the union's first 4 bytes (little-endian)
	}
	if (cooperative) {
		attrs[cfg.nattrs].id = FG_ATTR_COOPERATIVE;
		attrs[cfg.nattrs++].value[0] = 1; // cooperative: likewise
	}
	cfg.gx = gx; cfg.gy = gy; cfg.gz = gz; cfg.bx = bx; cfg.by = by; cfg.bz = bz;
	cfg.shared = shared; cfg.stream = stream; cfg.attrs = attrs;
	FG_RET(((fgResult (*)(const fgLaunchConfig *, void *, void **, void **))fg_fn[S_LaunchKernelEx])(&cfg, f, params, NULL));
}
static int fg_has_launch_ex(void) { return fg_fn[S_LaunchKernelEx] != NULL; }
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"unsafe"

	"github.com/fp8gen/fp8gen/target"
)

// Cgo reports whether this build speaks to GPU drivers: true here, in
// the cgo build; false in one built without cgo (nocgo.go).
const Cgo = true

// The C side's argument array holds maxArgs slots: both sizes are
// nonnegative only where they are equal.
var (
	_ [maxArgs - C.FG_MAX_ARGS]struct{}
	_ [C.FG_MAX_ARGS - maxArgs]struct{}
)

// symbol is one row of the vendor table: the driver API entry point and its
// HIP twin. A name list separated by spaces is tried in order (newer first);
// an empty name means the vendor does without that slot.
type symbol struct {
	slot      int
	cuda, hip string
	optional  bool
}

var symbols = []symbol{
	{slot: C.S_Init, cuda: "cuInit", hip: "hipInit"},
	{slot: C.S_DriverGetVersion, cuda: "cuDriverGetVersion", hip: "hipDriverGetVersion"},
	{slot: C.S_DeviceGetCount, cuda: "cuDeviceGetCount", hip: "hipGetDeviceCount"},
	{slot: C.S_DeviceGet, cuda: "cuDeviceGet", hip: "hipDeviceGet"},
	{slot: C.S_DeviceGetName, cuda: "cuDeviceGetName", hip: "hipDeviceGetName"},
	{slot: C.S_DeviceGetAttribute, cuda: "cuDeviceGetAttribute", hip: "hipDeviceGetAttribute"},
	{slot: C.S_DeviceTotalMem, cuda: "cuDeviceTotalMem_v2", hip: "hipDeviceTotalMem"},
	{slot: C.S_PrimaryCtxRetain, cuda: "cuDevicePrimaryCtxRetain"},
	{slot: C.S_PrimaryCtxRelease, cuda: "cuDevicePrimaryCtxRelease_v2 cuDevicePrimaryCtxRelease"},
	{slot: C.S_CtxSetCurrent, cuda: "cuCtxSetCurrent"},
	{slot: C.S_SetDevice, hip: "hipSetDevice"},
	{slot: C.S_CtxSynchronize, cuda: "cuCtxSynchronize", hip: "hipDeviceSynchronize"},
	{slot: C.S_MemAlloc, cuda: "cuMemAlloc_v2", hip: "hipMalloc"},
	{slot: C.S_MemFree, cuda: "cuMemFree_v2", hip: "hipFree"},
	{slot: C.S_MemcpyHtoD, cuda: "cuMemcpyHtoD_v2", hip: "hipMemcpyHtoD"},
	{slot: C.S_MemcpyDtoH, cuda: "cuMemcpyDtoH_v2", hip: "hipMemcpyDtoH"},
	// On the device's stream, with its launches: the synchronous forms run
	// on the legacy stream, which waits for every other stream and makes
	// them wait for it (a bubble between an op's memset and its kernels).
	{slot: C.S_MemcpyDtoDAsync, cuda: "cuMemcpyDtoDAsync_v2", hip: "hipMemcpyDtoDAsync"},
	{slot: C.S_MemsetD8Async, cuda: "cuMemsetD8Async", hip: "hipMemsetD8Async"},
	{slot: C.S_ModuleLoadData, cuda: "cuModuleLoadData", hip: "hipModuleLoadData"},
	{slot: C.S_ModuleUnload, cuda: "cuModuleUnload", hip: "hipModuleUnload"},
	{slot: C.S_ModuleGetFunction, cuda: "cuModuleGetFunction", hip: "hipModuleGetFunction"},
	{slot: C.S_FuncGetAttribute, cuda: "cuFuncGetAttribute", hip: "hipFuncGetAttribute", optional: true},
	// hipFuncSetAttribute takes a host function pointer, not a hipFunction_t,
	// so it cannot serve module kernels; AMD needs no opt-in (see SetMaxDynamicShared).
	{slot: C.S_FuncSetAttribute, cuda: "cuFuncSetAttribute"},
	// CUDA 12.4+; used to check argument count and sizes before a launch.
	{slot: C.S_FuncGetParamInfo, cuda: "cuFuncGetParamInfo", optional: true},
	// Newer drivers; without it the sizes of the arguments given are checked, not their count.
	{slot: C.S_FuncGetParamCount, cuda: "cuFuncGetParamCount", optional: true},
	{slot: C.S_LaunchKernel, cuda: "cuLaunchKernel", hip: "hipModuleLaunchKernel"},
	{slot: C.S_StreamCreate, cuda: "cuStreamCreate", hip: "hipStreamCreateWithFlags"},
	{slot: C.S_StreamDestroy, cuda: "cuStreamDestroy_v2 cuStreamDestroy", hip: "hipStreamDestroy"},
	{slot: C.S_EventCreate, cuda: "cuEventCreate", hip: "hipEventCreateWithFlags"},
	{slot: C.S_EventRecord, cuda: "cuEventRecord", hip: "hipEventRecord"},
	{slot: C.S_EventSynchronize, cuda: "cuEventSynchronize", hip: "hipEventSynchronize"},
	// CUDA 13's header maps cuEventElapsedTime to the _v2 entry point.
	{slot: C.S_EventElapsedTime, cuda: "cuEventElapsedTime_v2 cuEventElapsedTime", hip: "hipEventElapsedTime"},
	{slot: C.S_EventDestroy, cuda: "cuEventDestroy_v2 cuEventDestroy", hip: "hipEventDestroy"},
	{slot: C.S_GetErrorName, cuda: "cuGetErrorName", hip: "hipGetErrorName"},
	{slot: C.S_GetErrorString, cuda: "cuGetErrorString", hip: "hipGetErrorString"},
	// Only for gcnArchName, which no device attribute reports on ROCm 6+:
	// the struct layout differs between releases, so the name is found by
	// scanning the filled buffer (see hipArchName).
	{slot: C.S_GetDeviceProperties, hip: "hipGetDevicePropertiesR0600 hipGetDeviceProperties", optional: true},
	// CUDA 12.0+: programmatic dependent launch (LaunchDependent).
	{slot: C.S_LaunchKernelEx, cuda: "cuLaunchKernelEx", optional: true},
	// How many blocks of a kernel an SM holds at once (Device.Resident).
	{slot: C.S_OccupancyMaxActiveBlocks, cuda: "cuOccupancyMaxActiveBlocksPerMultiprocessor", hip: "hipModuleOccupancyMaxActiveBlocksPerMultiprocessor", optional: true},
	// A cooperative launch where cuLaunchKernelEx is not (LaunchResident).
	{slot: C.S_LaunchCooperative, cuda: "cuLaunchCooperativeKernel", hip: "hipModuleLaunchCooperativeKernel", optional: true},
}

// driver is the loaded vendor library. Only one is loaded per process.
type driver struct {
	vendor target.Vendor
	lib    string            // the path dlopen accepted
	names  [C.S_COUNT]string // resolved symbol name per slot, "" if absent
	attrs  attrs
}

var (
	drvMu sync.Mutex
	drv   *driver
)

// Library names tried per vendor, in order.
var (
	cudaLibs = []string{"libcuda.so.1", "libcuda.so"}
	hipLibs  = []string{"libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5"}
)

// loadDriver loads and initialises the driver library on first use. The env
// variable FP8GEN_GPU=cuda|hip forces a vendor; otherwise CUDA is tried
// first, then HIP. A failure is not cached, so a later call tries again.
func loadDriver() (*driver, error) {
	drvMu.Lock()
	defer drvMu.Unlock()
	if drv != nil {
		return drv, nil
	}
	var order []target.Vendor
	switch v := strings.ToLower(os.Getenv("FP8GEN_GPU")); v {
	case "":
		order = []target.Vendor{target.NVIDIA, target.AMD}
	case "cuda", "nvidia":
		order = []target.Vendor{target.NVIDIA}
	case "hip", "rocm", "amd":
		order = []target.Vendor{target.AMD}
	default:
		return nil, fmt.Errorf("runtime: FP8GEN_GPU=%q: want cuda or hip", v)
	}
	var why []string
	for _, v := range order {
		libs := cudaLibs
		if v == target.AMD {
			libs = hipLibs
		}
		d, err := tryLoad(v, libs)
		if err == nil {
			drv = d
			return d, nil
		}
		why = append(why, err.Error())
	}
	return nil, fmt.Errorf("%w: %s", ErrNoDevice, strings.Join(why, "; "))
}

// tryLoad dlopens the first of libs that exists, resolves the vendor's
// symbols and calls cuInit/hipInit. Nothing global changes unless all of
// that succeeds.
func tryLoad(v target.Vendor, libs []string) (*driver, error) {
	var h unsafe.Pointer
	var lib string
	var errs []string
	buf := make([]byte, 512)
	for _, name := range libs {
		cname := C.CString(name)
		h = C.fg_dlopen(cname, (*C.char)(unsafe.Pointer(&buf[0])), C.int(len(buf)))
		C.free(unsafe.Pointer(cname))
		if h != nil {
			lib = name
			break
		}
		errs = append(errs, C.GoString((*C.char)(unsafe.Pointer(&buf[0]))))
	}
	if h == nil {
		return nil, fmt.Errorf("%s: %s", v, strings.Join(errs, "; "))
	}
	d := &driver{vendor: v, lib: lib, attrs: cudaAttrs}
	if v == target.AMD {
		d.attrs = hipAttrs
	}
	var missing []string
	C.fg_stage_reset() // no slot may keep a pointer from a library tried before
	for _, s := range symbols {
		names := s.cuda
		if v == target.AMD {
			names = s.hip
		}
		if names == "" {
			continue
		}
		for _, n := range strings.Fields(names) {
			cn := C.CString(n)
			ok := C.fg_stage_sym(h, C.int(s.slot), cn) != 0
			C.free(unsafe.Pointer(cn))
			if ok {
				d.names[s.slot] = n
				break
			}
		}
		if d.names[s.slot] == "" && !s.optional {
			missing = append(missing, names)
		}
	}
	if len(missing) > 0 {
		// The handle stays open: unloading a driver library is not always safe.
		return nil, fmt.Errorf("%s: %s lacks %s", v, lib, strings.Join(missing, ", "))
	}
	vendor := C.int(C.FG_CUDA)
	if v == target.AMD {
		vendor = C.FG_HIP
	}
	C.fg_commit(vendor)
	if rc := C.fg_init(); rc != 0 {
		err := d.errorf(int(rc), C.S_Init, "0")
		C.fg_reset()
		return nil, fmt.Errorf("%s: %s: %v", v, lib, err)
	}
	return d, nil
}

// sym is the resolved name of a slot, for messages.
func (d *driver) sym(slot int) string {
	if n := d.names[slot]; n != "" {
		return n
	}
	return fmt.Sprintf("slot%d", slot)
}

func (d *driver) errorf(rc, slot int, args string) error {
	e := &DriverError{Func: d.sym(slot), Args: args, Code: rc}
	if s := C.fg_error_name(C.fgResult(rc)); s != nil {
		e.Name = C.GoString(s)
	} else {
		e.Name = fmt.Sprintf("error %d", rc)
	}
	if s := C.fg_error_string(C.fgResult(rc)); s != nil {
		e.Msg = C.GoString(s)
	} else {
		e.Msg = "(no description)"
	}
	return e
}

func (d *driver) check(rc C.fgResult, slot int, args string) error {
	if rc == 0 {
		return nil
	}
	return d.errorf(int(rc), slot, args)
}

// ---- device-independent queries ----

func (d *driver) version() int {
	var v C.int
	if C.fg_driver_version(&v) != 0 {
		return 0
	}
	return int(v)
}

func (d *driver) deviceCount() (int, error) {
	var n C.int
	rc := C.fg_device_count(&n)
	if int(rc) == rcNoDevice {
		return 0, nil
	}
	return int(n), d.check(rc, C.S_DeviceGetCount, "")
}

func (d *driver) deviceGet(ordinal int) (int, error) {
	var dev C.int
	rc := C.fg_device_get(&dev, C.int(ordinal))
	return int(dev), d.check(rc, C.S_DeviceGet, fmt.Sprint(ordinal))
}

func (d *driver) deviceName(dev int) (string, error) {
	buf := make([]byte, 256)
	rc := C.fg_device_name((*C.char)(unsafe.Pointer(&buf[0])), C.int(len(buf)), C.int(dev))
	if err := d.check(rc, C.S_DeviceGetName, fmt.Sprint(dev)); err != nil {
		return "", err
	}
	if i := strings.IndexByte(string(buf), 0); i >= 0 {
		buf = buf[:i]
	}
	return string(buf), nil
}

// attr reads a device attribute. HIP takes the device ordinal, CUDA the
// CUdevice; callers pass the right one.
func (d *driver) attr(attr, dev int) (int, error) {
	var v C.int
	rc := C.fg_device_attr(&v, C.int(attr), C.int(dev))
	return int(v), d.check(rc, C.S_DeviceGetAttribute, fmt.Sprintf("attr %d, device %d", attr, dev))
}

func (d *driver) totalMem(dev int) (uint64, error) {
	var b C.size_t
	rc := C.fg_total_mem(&b, C.int(dev))
	return uint64(b), d.check(rc, C.S_DeviceTotalMem, fmt.Sprint(dev))
}

func (d *driver) ctxRetain(dev int) (unsafe.Pointer, error) {
	var ctx unsafe.Pointer
	rc := C.fg_ctx_retain(&ctx, C.int(dev))
	return ctx, d.check(rc, C.S_PrimaryCtxRetain, fmt.Sprint(dev))
}

func (d *driver) ctxRelease(dev int) error {
	return d.check(C.fg_ctx_release(C.int(dev)), C.S_PrimaryCtxRelease, fmt.Sprint(dev))
}

// hipArchName returns gcnArchName ("gfx942:sramecc+:xnack-") without the
// hipDeviceProp_t layout: hipGetDeviceProperties fills a buffer far larger
// than any release's struct, and the one NUL-terminated field that starts
// with "gfx" followed by hex digits is the arch name.
func (d *driver) hipArchName(ordinal int) (string, error) {
	if C.fg_has(C.S_GetDeviceProperties) == 0 {
		return "", errors.New("hipGetDeviceProperties not exported")
	}
	const size = 64 << 10
	buf := C.calloc(1, size)
	defer C.free(buf)
	if err := d.check(C.fg_device_props(buf, C.int(ordinal)), C.S_GetDeviceProperties, fmt.Sprint(ordinal)); err != nil {
		return "", err
	}
	if name := findArchName(C.GoBytes(buf, size)); name != "" {
		return name, nil
	}
	return "", errors.New("no gcnArchName in hipGetDeviceProperties output")
}

// ---- calls on a device (context made current inside each C call) ----

// res turns a C result into an error naming the function (or, when making
// the context current failed, the context call).
func (d *Device) res(r C.fgRes, slot int, args string) error {
	if r.rc == 0 {
		return nil
	}
	if r.cur != 0 {
		cs := C.S_CtxSetCurrent
		if d.drv.vendor == target.AMD {
			cs = C.S_SetDevice
		}
		return fmt.Errorf("before %s: %w", d.drv.sym(slot), d.drv.errorf(int(r.rc), cs, fmt.Sprint(d.ordinal)))
	}
	return d.drv.errorf(int(r.rc), slot, args)
}

func (d *Device) cdev() C.fgDev {
	return C.fgDev{ordinal: C.int(d.ordinal), dev: C.int(d.dev), ctx: d.ctx}
}

func (d *Device) cMalloc(n int) (uint64, error) {
	var p C.fgPtr
	r := C.fg_mem_alloc(d.cdev(), &p, C.size_t(n))
	return uint64(p), d.res(r, C.S_MemAlloc, fmt.Sprintf("%d B", n))
}

func (d *Device) cFree(p uint64) error {
	return d.res(C.fg_mem_free(d.cdev(), C.fgPtr(p)), C.S_MemFree, fmt.Sprintf("%#x", p))
}

func (d *Device) cHtoD(dst uint64, src []byte) error {
	r := C.fg_htod(d.cdev(), C.fgPtr(dst), unsafe.Pointer(&src[0]), C.size_t(len(src)))
	return d.res(r, C.S_MemcpyHtoD, fmt.Sprintf("%#x, %d B", dst, len(src)))
}

func (d *Device) cDtoH(dst []byte, src uint64) error {
	r := C.fg_dtoh(d.cdev(), unsafe.Pointer(&dst[0]), C.fgPtr(src), C.size_t(len(dst)))
	return d.res(r, C.S_MemcpyDtoH, fmt.Sprintf("%#x, %d B", src, len(dst)))
}

func (d *Device) cDtoD(dst, src uint64, n int) error {
	r := C.fg_dtod(d.cdev(), C.fgPtr(dst), C.fgPtr(src), C.size_t(n), d.stream)
	return d.res(r, C.S_MemcpyDtoDAsync, fmt.Sprintf("%#x, %#x, %d B", dst, src, n))
}

func (d *Device) cMemset(p uint64, v byte, n int) error {
	r := C.fg_memset8(d.cdev(), C.fgPtr(p), C.uchar(v), C.size_t(n), d.stream)
	return d.res(r, C.S_MemsetD8Async, fmt.Sprintf("%#x, %#02x, %d B", p, v, n))
}

func (d *Device) cModuleLoad(image []byte) (unsafe.Pointer, error) {
	// The image goes to C memory with a trailing NUL, so a PTX text image
	// is terminated too.
	cimg := C.malloc(C.size_t(len(image) + 1))
	defer C.free(cimg)
	copy(unsafe.Slice((*byte)(cimg), len(image)+1), image)
	*(*byte)(unsafe.Add(cimg, len(image))) = 0
	var m unsafe.Pointer
	r := C.fg_module_load(d.cdev(), &m, cimg)
	return m, d.res(r, C.S_ModuleLoadData, fmt.Sprintf("%d-byte image", len(image)))
}

func (d *Device) cModuleUnload(m unsafe.Pointer) error {
	return d.res(C.fg_module_unload(d.cdev(), m), C.S_ModuleUnload, "")
}

func (d *Device) cModuleFunction(m unsafe.Pointer, name string) (unsafe.Pointer, error) {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	var f unsafe.Pointer
	r := C.fg_module_function(d.cdev(), &f, m, cn)
	return f, d.res(r, C.S_ModuleGetFunction, fmt.Sprintf("%q", name))
}

// cFuncAttr reads a function attribute; ok is false where the driver lacks
// the call or refuses the attribute.
func (d *Device) cFuncAttr(f unsafe.Pointer, attr int) (int, bool) {
	if C.fg_has(C.S_FuncGetAttribute) == 0 {
		return 0, false
	}
	var v C.int
	r := C.fg_func_get_attr(d.cdev(), &v, C.int(attr), f)
	return int(v), r.rc == 0
}

func (d *Device) cFuncSetAttr(f unsafe.Pointer, attr, v int, name string) error {
	r := C.fg_func_set_attr(d.cdev(), f, C.int(attr), C.int(v))
	return d.res(r, C.S_FuncSetAttribute, fmt.Sprintf("%s, attr %d, %d", name, attr, v))
}

// cParamSizes lists the byte size of each kernel parameter, or ok=false
// where the driver cannot tell (no cuFuncGetParamInfo, or HIP); counted
// says whether the list is known to hold them all. It asks only of the
// parameters the driver counts (cuFuncGetParamCount) or, where it cannot
// count, of the nargs the caller passes — so that a right launch makes no
// failing call (compute-sanitizer reports every one); one with too many
// arguments finds the count where the driver answers INVALID_VALUE.
func (d *Device) cParamSizes(f unsafe.Pointer, nargs int) (sizes []int, ok, counted bool) {
	if C.fg_has(C.S_FuncGetParamInfo) == 0 {
		return nil, false, false
	}
	n := nargs
	if C.fg_has(C.S_FuncGetParamCount) != 0 {
		var c C.size_t
		if r := C.fg_func_param_count(d.cdev(), f, &c); r.rc != 0 {
			return nil, false, false
		}
		n, counted = int(c), true
	}
	for i := 0; i < n && i <= maxArgs; i++ {
		var off, size C.size_t
		if r := C.fg_func_param_info(d.cdev(), f, C.size_t(i), &off, &size); r.rc != 0 {
			if r.cur == 0 && int(r.rc) == rcInvalidValue {
				return sizes, true, true // past the last parameter
			}
			return nil, false, false
		}
		sizes = append(sizes, int(size))
	}
	return sizes, true, counted
}

// cOccupancy is how many blocks of k, of block threads and shared bytes
// of dynamic LDS, one SM or CU holds at once.
func (d *Device) cOccupancy(k *Kernel, block, shared int) (int, error) {
	if C.fg_has(C.S_OccupancyMaxActiveBlocks) == 0 {
		return 0, fmt.Errorf("runtime: %s: the driver has no occupancy query", k.name)
	}
	var n C.int
	err := d.res(C.fg_occupancy(d.cdev(), &n, k.fn, C.int(block), C.size_t(shared)), C.S_OccupancyMaxActiveBlocks, k.name)
	return int(n), err
}

func (d *Device) cLaunch(k *Kernel, grid, block [3]int, shared int, slots []uint64, dependent, cooperative bool) error {
	var p *C.uint64_t
	if len(slots) > 0 {
		p = (*C.uint64_t)(unsafe.Pointer(&slots[0]))
	}
	gx, gy, gz := C.uint(grid[0]), C.uint(grid[1]), C.uint(grid[2])
	bx, by, bz := C.uint(block[0]), C.uint(block[1]), C.uint(block[2])
	var r C.fgRes
	slot := C.S_LaunchKernel
	switch {
	case dependent || cooperative && cHasLaunchEx():
		r, slot = C.fg_launch_ex(d.cdev(), k.fn, gx, gy, gz, bx, by, bz, C.uint(shared), d.stream, p, C.int(len(slots)), cBool(dependent), cBool(cooperative)), C.S_LaunchKernelEx
	case cooperative && C.fg_has(C.S_LaunchCooperative) != 0:
		r, slot = C.fg_launch(d.cdev(), k.fn, gx, gy, gz, bx, by, bz, C.uint(shared), d.stream, p, C.int(len(slots)), 1), C.S_LaunchCooperative
	case cooperative:
		return fmt.Errorf("runtime: Launch %s: the driver has no cooperative launch, and a kernel whose blocks wait on each other could hang without one", k.name)
	default:
		r = C.fg_launch(d.cdev(), k.fn, gx, gy, gz, bx, by, bz, C.uint(shared), d.stream, p, C.int(len(slots)), 0)
	}
	return d.res(r, slot, fmt.Sprintf("%s, grid %v, block %v, %d B shared, %d args",
		k.name, grid, block, shared, len(slots)))
}

func cBool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// cHasLaunchEx reports whether the driver has cuLaunchKernelEx.
func cHasLaunchEx() bool { return C.fg_has_launch_ex() != 0 }

func (d *Device) cStreamCreate() (unsafe.Pointer, error) {
	var s unsafe.Pointer
	return s, d.res(C.fg_stream_create(d.cdev(), &s), C.S_StreamCreate, "")
}

func (d *Device) cStreamDestroy() error {
	return d.res(C.fg_stream_destroy(d.cdev(), d.stream), C.S_StreamDestroy, "")
}

func (d *Device) cCtxSync() error {
	return d.res(C.fg_ctx_sync(d.cdev()), C.S_CtxSynchronize, "")
}

func (d *Device) cEventCreate() (unsafe.Pointer, error) {
	var e unsafe.Pointer
	return e, d.res(C.fg_event_create(d.cdev(), &e), C.S_EventCreate, "")
}

func (d *Device) cEventRecord(e unsafe.Pointer) error {
	return d.res(C.fg_event_record(d.cdev(), e, d.stream), C.S_EventRecord, "")
}

func (d *Device) cEventSync(e unsafe.Pointer) error {
	return d.res(C.fg_event_sync(d.cdev(), e), C.S_EventSynchronize, "")
}

func (d *Device) cEventElapsed(a, b unsafe.Pointer) (float32, error) {
	var ms C.float
	r := C.fg_event_elapsed(d.cdev(), &ms, a, b)
	return float32(ms), d.res(r, C.S_EventElapsedTime, "")
}

func (d *Device) cEventDestroy(e unsafe.Pointer) error {
	return d.res(C.fg_event_destroy(d.cdev(), e), C.S_EventDestroy, "")
}
