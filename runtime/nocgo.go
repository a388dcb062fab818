//go:build !cgo

package runtime

// A binary built without cgo has no driver: Open fails with ErrNoDevice
// and ErrNoCgo, so that callers fall back to the interpreter or say why
// there is no GPU, and nothing below Open is ever reached. Compiling
// kernels (Compiler) needs no driver and works as in the cgo build.

import (
	"fmt"
	"unsafe"

	"github.com/fp8gen/fp8gen/target"
)

// Cgo reports whether this build speaks to GPU drivers: false here, in a
// build without cgo; true in the cgo build (driver.go).
const Cgo = false

type driver struct {
	vendor target.Vendor
	lib    string
	attrs  attrs
}

func loadDriver() (*driver, error) {
	return nil, fmt.Errorf("%w: %w", ErrNoDevice, ErrNoCgo)
}

func (d *driver) version() int                               { return 0 }
func (d *driver) deviceCount() (int, error)                  { return 0, ErrNoCgo }
func (d *driver) deviceGet(int) (int, error)                 { return 0, ErrNoCgo }
func (d *driver) deviceName(int) (string, error)             { return "", ErrNoCgo }
func (d *driver) attr(int, int) (int, error)                 { return 0, ErrNoCgo }
func (d *driver) totalMem(int) (uint64, error)               { return 0, ErrNoCgo }
func (d *driver) ctxRetain(int) (unsafe.Pointer, error)      { return nil, ErrNoCgo }
func (d *driver) ctxRelease(int) error                       { return ErrNoCgo }
func (d *driver) hipArchName(int) (string, error)            { return "", ErrNoCgo }
func cHasLaunchEx() bool                                     { return false }
func (d *Device) cMalloc(int) (uint64, error)                { return 0, ErrNoCgo }
func (d *Device) cFree(uint64) error                         { return ErrNoCgo }
func (d *Device) cHtoD(uint64, []byte) error                 { return ErrNoCgo }
func (d *Device) cDtoH([]byte, uint64) error                 { return ErrNoCgo }
func (d *Device) cDtoD(uint64, uint64, int) error            { return ErrNoCgo }
func (d *Device) cMemset(uint64, byte, int) error            { return ErrNoCgo }
func (d *Device) cModuleLoad([]byte) (unsafe.Pointer, error) { return nil, ErrNoCgo }
func (d *Device) cModuleUnload(unsafe.Pointer) error         { return ErrNoCgo }
func (d *Device) cModuleFunction(unsafe.Pointer, string) (unsafe.Pointer, error) {
	return nil, ErrNoCgo
}
func (d *Device) cFuncAttr(unsafe.Pointer, int) (int, bool)           { return 0, false }
func (d *Device) cFuncSetAttr(unsafe.Pointer, int, int, string) error { return ErrNoCgo }
func (d *Device) cParamSizes(unsafe.Pointer, int) (sizes []int, ok, counted bool) {
	return nil, false, false
}
func (d *Device) cOccupancy(*Kernel, int, int) (int, error) { return 0, ErrNoCgo }
func (d *Device) cLaunch(*Kernel, [3]int, [3]int, int, []uint64, bool, bool) error {
	return ErrNoCgo
}
func (d *Device) cStreamCreate() (unsafe.Pointer, error)                        { return nil, ErrNoCgo }
func (d *Device) cStreamDestroy() error                                         { return ErrNoCgo }
func (d *Device) cCtxSync() error                                               { return ErrNoCgo }
func (d *Device) cEventCreate() (unsafe.Pointer, error)                         { return nil, ErrNoCgo }
func (d *Device) cEventRecord(unsafe.Pointer) error                             { return ErrNoCgo }
func (d *Device) cEventSync(unsafe.Pointer) error                               { return ErrNoCgo }
func (d *Device) cEventElapsed(unsafe.Pointer, unsafe.Pointer) (float32, error) { return 0, ErrNoCgo }
func (d *Device) cEventDestroy(unsafe.Pointer) error                            { return ErrNoCgo }
