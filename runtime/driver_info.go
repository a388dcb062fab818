package runtime

// This file holds what the driver's tables and messages are in plain Go,
// shared by the cgo build (driver.go) and the build without cgo
// (nocgo.go), which has no driver to load.

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNoCgo is wrapped, with ErrNoDevice, by Open in a binary built
// without cgo (CGO_ENABLED=0): such a binary loads no driver library, so
// it never has a GPU, whatever the machine holds.
var ErrNoCgo = errors.New("this fp8gen was built without cgo; GPUs need the cgo build")

// maxArgs is the most kernel arguments Launch packs.
const maxArgs = 256

// Device attribute numbers. CUDA's CUdevice_attribute values are fixed by
// the driver ABI. HIP's hipDeviceAttribute_t was renumbered in ROCm 5.0 and
// has kept these positions since (retired names keep their slots as
// hipDeviceAttributeUnusedN); checked against HIP 5.2 and ROCm 7 headers.
type attrs struct {
	maxThreadsPerBlock, maxBlockDimX, maxGridDimX, sharedPerBlock, warpSize,
	multiProcessors, l2Bytes, ccMajor, ccMinor, sharedOptin int
}

var cudaAttrs = attrs{
	maxThreadsPerBlock: 1, maxBlockDimX: 2, maxGridDimX: 5, sharedPerBlock: 8, warpSize: 10,
	multiProcessors: 16, l2Bytes: 38, ccMajor: 75, ccMinor: 76, sharedOptin: 97,
}

var hipAttrs = attrs{
	maxThreadsPerBlock: 56, maxBlockDimX: 26, maxGridDimX: 29, sharedPerBlock: 74, warpSize: 87,
	multiProcessors: 63, l2Bytes: 19, ccMajor: 23, ccMinor: 61, sharedOptin: 75,
}

// Function attributes (CUfunction_attribute; hipFunction_attribute mirrors it).
const (
	funcMaxThreads   = 0
	funcSharedStatic = 1
	funcConstBytes   = 2
	funcLocalBytes   = 3
	funcNumRegs      = 4
	funcMaxDynShared = 8
)

// Result codes the loader treats specially (same numbers in CUDA and HIP).
const (
	rcInvalidValue = 1
	rcNoDevice     = 100
)

// DriverError is a failed driver call. Code is the CUresult or hipError_t.
type DriverError struct {
	Func string // the API entry point, e.g. cuMemAlloc_v2
	Args string // what it was called with, for the message
	Code int
	Name string // e.g. CUDA_ERROR_OUT_OF_MEMORY
	Msg  string // e.g. out of memory
}

func (e *DriverError) Error() string {
	return fmt.Sprintf("%s(%s): %s: %s", e.Func, e.Args, e.Name, e.Msg)
}

// findArchName scans b for a NUL-terminated string at a field start that
// reads gfx<hex digits>[:feature±]...
func findArchName(b []byte) string {
	for i := 0; i+3 < len(b); i++ {
		if b[i] != 'g' || b[i+1] != 'f' || b[i+2] != 'x' || (i > 0 && b[i-1] != 0) {
			continue
		}
		end := i
		for end < len(b) && b[end] != 0 {
			end++
		}
		if s := string(b[i:end]); validArch(s) {
			return s
		}
	}
	return ""
}

func validArch(s string) bool {
	base, feats, _ := strings.Cut(s, ":")
	if len(base) < 5 || len(base) > 8 {
		return false
	}
	for _, c := range base[3:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	if feats == "" {
		return true
	}
	for _, f := range strings.Split(feats, ":") {
		if len(f) < 2 || (f[len(f)-1] != '+' && f[len(f)-1] != '-') {
			return false
		}
		for _, c := range f[:len(f)-1] {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
				return false
			}
		}
	}
	return true
}
