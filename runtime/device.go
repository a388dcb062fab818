package runtime

import (
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"time"
	"unsafe"

	"github.com/fp8gen/fp8gen/target"
)

// ErrNoDevice is wrapped by every error that means "no GPU here": no driver
// library, a driver that will not initialise (no device node, stub library,
// driver too old), zero devices, or an ordinal past the last device. Callers
// fall back to the CPU interpreter on errors.Is(err, ErrNoDevice).
var ErrNoDevice = errors.New("runtime: no GPU device")

// Props describes an opened device.
type Props struct {
	Name   string
	Arch   string // "sm_90" on NVIDIA (sm_<major><minor>); gcnArchName ("gfx942:sramecc+:xnack-") on AMD
	Vendor target.Vendor

	WarpSize            int // lanes per warp / wavefront
	SharedPerBlock      int // shared memory (LDS) a block may use without opt-in, bytes
	SharedPerBlockOptin int // the most a block may use after SetMaxDynamicShared, bytes
	MultiProcessors     int // SMs / CUs
	MaxThreadsPerBlock  int
	L2Bytes             int
	TotalMem            uint64

	MaxBlockDim       [3]int
	MaxGridDim        [3]int
	ComputeCapability [2]int // major, minor (AMD reports e.g. 9.4 for gfx942)
	Ordinal           int
	Library           string // the driver library loaded, e.g. libcuda.so.1
	DriverVersion     int    // cuDriverGetVersion / hipDriverGetVersion
	ArchNote          string // why Arch is empty, when it is
}

func (p Props) String() string {
	return fmt.Sprintf("%s (%s, %s, cc %d.%d): %d %s, warp %d, %d threads/block, shared %d B (opt-in %d B), L2 %d B, %.1f GiB; %s driver %d",
		p.Name, p.Arch, p.Vendor, p.ComputeCapability[0], p.ComputeCapability[1], p.MultiProcessors,
		map[target.Vendor]string{target.NVIDIA: "SMs", target.AMD: "CUs"}[p.Vendor],
		p.WarpSize, p.MaxThreadsPerBlock, p.SharedPerBlock, p.SharedPerBlockOptin, p.L2Bytes,
		float64(p.TotalMem)/(1<<30), p.Library, p.DriverVersion)
}

// Device is one opened GPU. Its methods may be called from any goroutine;
// they are serialised by a mutex, and each driver call makes the device's
// context current on the OS thread that runs it.
type Device struct {
	mu      sync.Mutex
	drv     *driver
	ordinal int
	dev     int            // CUdevice / hipDevice_t
	ctx     unsafe.Pointer // primary context (NVIDIA); nil on AMD, where hipSetDevice selects the device
	stream  unsafe.Pointer // launches and event records go here
	props   Props
	closed  bool
	pdl     bool // LaunchDependent overlaps (see there)
	// Buffers allocated and not yet freed, and their bytes: tests hold
	// every path to returning what it took.
	liveBufs  int
	liveBytes int64
}

// Open opens device ordinal, loading the driver library on first use.
func Open(ordinal int) (*Device, error) {
	drv, err := loadDriver()
	if err != nil {
		return nil, err
	}
	n, err := drv.deviceCount()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoDevice, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: %s reports no devices", ErrNoDevice, drv.lib)
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("%w: device %d requested, %s reports %d", ErrNoDevice, ordinal, drv.lib, n)
	}
	dev, err := drv.deviceGet(ordinal)
	if err != nil {
		return nil, err
	}
	d := &Device{drv: drv, ordinal: ordinal, dev: dev}
	if err := d.readProps(); err != nil {
		return nil, err
	}
	switch v := os.Getenv("FP8GEN_PDL"); v {
	case "", "on":
		d.pdl = drv.vendor == target.NVIDIA && d.props.ComputeCapability[0] >= 9 && cHasLaunchEx()
	case "off":
	default:
		return nil, fmt.Errorf("runtime: FP8GEN_PDL=%q: want on (the default: programmatic dependent launch where the device has it) or off", v)
	}
	if drv.vendor == target.NVIDIA {
		if d.ctx, err = drv.ctxRetain(dev); err != nil {
			return nil, err
		}
	}
	if d.stream, err = d.cStreamCreate(); err != nil {
		if drv.vendor == target.NVIDIA {
			drv.ctxRelease(dev)
		}
		return nil, err
	}
	return d, nil
}

func (d *Device) readProps() error {
	drv, a := d.drv, d.drv.attrs
	p := Props{Vendor: drv.vendor, Ordinal: d.ordinal, Library: drv.lib, DriverVersion: drv.version()}
	adev := d.dev // CUDA takes the CUdevice, HIP the ordinal
	if drv.vendor == target.AMD {
		adev = d.ordinal
	}
	var errs []error
	get := func(attr int) int {
		v, err := drv.attr(attr, adev)
		if err != nil {
			errs = append(errs, err)
		}
		return v
	}
	var err error
	if p.Name, err = drv.deviceName(d.dev); err != nil {
		return err
	}
	if p.TotalMem, err = drv.totalMem(d.dev); err != nil {
		return err
	}
	p.WarpSize = get(a.warpSize)
	p.MaxThreadsPerBlock = get(a.maxThreadsPerBlock)
	p.SharedPerBlock = get(a.sharedPerBlock)
	p.MultiProcessors = get(a.multiProcessors)
	p.ComputeCapability = [2]int{get(a.ccMajor), get(a.ccMinor)}
	for i := range 3 {
		p.MaxBlockDim[i] = get(a.maxBlockDimX + i)
		p.MaxGridDim[i] = get(a.maxGridDimX + i)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("runtime: reading properties of device %d: %w", d.ordinal, err)
	}
	// These two are optional on HIP (the opt-in attribute is CUDA-only in
	// older releases); on CUDA they always answer.
	if v, err := drv.attr(a.l2Bytes, adev); err == nil {
		p.L2Bytes = v
	} else if drv.vendor == target.NVIDIA {
		return err
	}
	if v, err := drv.attr(a.sharedOptin, adev); err == nil && v > 0 {
		p.SharedPerBlockOptin = v
	} else if drv.vendor == target.NVIDIA && err != nil {
		return err
	}
	if p.SharedPerBlockOptin < p.SharedPerBlock {
		p.SharedPerBlockOptin = p.SharedPerBlock
	}
	if drv.vendor == target.NVIDIA {
		p.Arch = fmt.Sprintf("sm_%d%d", p.ComputeCapability[0], p.ComputeCapability[1])
	} else if arch, err := drv.hipArchName(d.ordinal); err == nil {
		p.Arch = arch
	} else {
		p.ArchNote = fmt.Sprintf("gcnArchName unavailable (%v); compute capability %d.%d does not name the gfx stepping",
			err, p.ComputeCapability[0], p.ComputeCapability[1])
	}
	d.props = p
	return nil
}

// Props returns the device's properties, read once at Open.
func (d *Device) Props() Props { return d.props }

// Target maps the device to the fp8gen target describing it. An unknown
// device is an error naming it, never a default.
func (d *Device) Target() (*target.Target, error) {
	p := d.props
	if p.Arch == "" {
		return nil, fmt.Errorf("runtime: device %d (%s): architecture unknown: %s", p.Ordinal, p.Name, p.ArchNote)
	}
	t, err := target.FromDevice(p.Arch)
	if err != nil {
		return nil, fmt.Errorf("runtime: device %d (%s, %s): %w", p.Ordinal, p.Name, p.Arch, err)
	}
	if t.Vendor != p.Vendor {
		return nil, fmt.Errorf("runtime: device %d (%s, %s) maps to target %s of vendor %s", p.Ordinal, p.Name, p.Arch, t.Name, t.Vendor)
	}
	return t, nil
}

// usable reports why d or one of bufs cannot be used now. Call with d.mu held.
func (d *Device) usable(op string, bufs ...*Buffer) error {
	if d.closed {
		return fmt.Errorf("runtime: %s: device %d is closed", op, d.ordinal)
	}
	for _, b := range bufs {
		switch {
		case b == nil:
			return fmt.Errorf("runtime: %s: nil *Buffer", op)
		case b.d == nil:
			return fmt.Errorf("runtime: %s: buffer was not made by Alloc", op)
		case b.d != d:
			return fmt.Errorf("runtime: %s: buffer belongs to device %d, not device %d", op, b.d.ordinal, d.ordinal)
		case b.freed:
			return fmt.Errorf("runtime: %s: buffer of %d bytes was freed", op, b.size)
		}
	}
	return nil
}

// Synchronize waits for all work on the device; it reports errors of
// earlier asynchronous launches.
func (d *Device) Synchronize() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable("Synchronize"); err != nil {
		return err
	}
	return d.cCtxSync()
}

// Close destroys the device's stream and releases its context. Buffers,
// modules and events of d must not be used afterwards (their Free, Unload
// and Destroy become no-ops). Closing twice is allowed.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	var errs []error
	if err := d.cStreamDestroy(); err != nil {
		errs = append(errs, err)
	}
	if d.drv.vendor == target.NVIDIA {
		if err := d.drv.ctxRelease(d.dev); err != nil {
			errs = append(errs, err)
		}
	}
	d.closed = true
	return errors.Join(errs...)
}

// ---- memory ----

// Buffer is device memory.
type Buffer struct {
	d     *Device
	ptr   uint64
	size  int
	freed bool
}

// Size is the buffer's length in bytes.
func (b *Buffer) Size() int { return b.size }

// Ptr is the device address (0 for an empty buffer), for messages.
func (b *Buffer) Ptr() uint64 { return b.ptr }

// Alloc allocates bytes of device memory. A zero-byte buffer is valid and
// passes a null pointer to kernels.
func (d *Device) Alloc(bytes int) (*Buffer, error) {
	if bytes < 0 {
		return nil, fmt.Errorf("runtime: Alloc(%d): negative size", bytes)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable("Alloc"); err != nil {
		return nil, err
	}
	b := &Buffer{d: d, size: bytes}
	if bytes == 0 {
		return b, nil
	}
	p, err := d.cMalloc(bytes)
	if err != nil {
		return nil, err
	}
	b.ptr = p
	d.liveBufs++
	d.liveBytes += int64(bytes)
	return b, nil
}

// Live is the number of buffers allocated on d and not freed, and their
// bytes (zero-byte buffers hold no memory and are not counted).
func (d *Device) Live() (buffers int, bytes int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.liveBufs, d.liveBytes
}

// Free releases the buffer. Freeing twice, or after the device was closed
// (which released the memory with the context), does nothing.
func (b *Buffer) Free() error {
	if b == nil || b.d == nil {
		return nil
	}
	d := b.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if b.freed || d.closed {
		b.freed = true
		return nil
	}
	b.freed = true
	if b.ptr == 0 {
		return nil
	}
	d.liveBufs--
	d.liveBytes -= int64(b.size)
	return d.cFree(b.ptr)
}

// Upload copies src to the start of dst; len(src) may not exceed dst.Size().
func (d *Device) Upload(dst *Buffer, src []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable("Upload", dst); err != nil {
		return err
	}
	if len(src) > dst.size {
		return fmt.Errorf("runtime: Upload: %d bytes do not fit a %d-byte buffer", len(src), dst.size)
	}
	if len(src) == 0 {
		return nil
	}
	return d.cHtoD(dst.ptr, src)
}

// Download copies the first len(dst) bytes of src to dst; len(dst) may not
// exceed src.Size().
func (d *Device) Download(dst []byte, src *Buffer) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable("Download", src); err != nil {
		return err
	}
	if len(dst) > src.size {
		return fmt.Errorf("runtime: Download: %d bytes requested from a %d-byte buffer", len(dst), src.size)
	}
	if len(dst) == 0 {
		return nil
	}
	return d.cDtoH(dst, src.ptr)
}

// CopyDtoD copies the first n bytes of src to dst, in the device's stream:
// after the work launched so far and before what follows, the host not
// waiting (Synchronize, or a download, does).
func (d *Device) CopyDtoD(dst, src *Buffer, n int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable("CopyDtoD", dst, src); err != nil {
		return err
	}
	if n < 0 || n > dst.size || n > src.size {
		return fmt.Errorf("runtime: CopyDtoD: %d bytes from a %d-byte buffer into a %d-byte buffer", n, src.size, dst.size)
	}
	if n == 0 {
		return nil
	}
	return d.cDtoD(dst.ptr, src.ptr, n)
}

// Memset sets every byte of b to v, in the device's stream as CopyDtoD.
func (d *Device) Memset(b *Buffer, v byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable("Memset", b); err != nil {
		return err
	}
	if b.size == 0 {
		return nil
	}
	return d.cMemset(b.ptr, v, b.size)
}

// ---- modules and kernels ----

// Module is a loaded code object (a cubin on NVIDIA, a HIP code object on AMD).
type Module struct {
	d        *Device
	h        unsafe.Pointer
	unloaded bool
}

// LoadModule loads a compiled image, as returned by Compiler.Compile.
func (d *Device) LoadModule(image []byte) (*Module, error) {
	if len(image) == 0 {
		return nil, errors.New("runtime: LoadModule: empty image")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable("LoadModule"); err != nil {
		return nil, err
	}
	h, err := d.cModuleLoad(image)
	if err != nil {
		return nil, err
	}
	return &Module{d: d, h: h}, nil
}

// Unload unloads the module; its kernels must not be launched afterwards.
func (m *Module) Unload() error {
	d := m.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if m.unloaded || d.closed {
		m.unloaded = true
		return nil
	}
	m.unloaded = true
	return d.cModuleUnload(m.h)
}

// KernelAttrs are what the driver reports of a compiled kernel; 0 where it
// could not tell.
type KernelAttrs struct {
	Regs               int // registers per thread
	SharedStatic       int // statically declared shared memory, bytes
	LocalBytes         int // local (spill) memory per thread, bytes
	ConstBytes         int
	MaxThreadsPerBlock int // the most threads a block of this kernel may have (registers limit it)
	MaxDynamicShared   int // current dynamic shared memory limit, bytes
}

// Kernel is a function of a module.
type Kernel struct {
	m     *Module
	name  string
	fn    unsafe.Pointer
	attrs KernelAttrs

	paramsQueried bool
	paramsCounted bool // the driver told the count, not just the sizes asked
	paramsKnown   bool
	params        []int // byte size of each parameter, when known
}

// Kernel looks up an extern "C" kernel by name.
func (m *Module) Kernel(name string) (*Kernel, error) {
	d := m.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable("Kernel"); err != nil {
		return nil, err
	}
	if m.unloaded {
		return nil, fmt.Errorf("runtime: Kernel(%q): module was unloaded", name)
	}
	fn, err := d.cModuleFunction(m.h, name)
	if err != nil {
		return nil, fmt.Errorf("runtime: kernel %q not found in module: %w", name, err)
	}
	k := &Kernel{m: m, name: name, fn: fn}
	a := &k.attrs
	a.Regs, _ = d.cFuncAttr(fn, funcNumRegs)
	a.SharedStatic, _ = d.cFuncAttr(fn, funcSharedStatic)
	a.LocalBytes, _ = d.cFuncAttr(fn, funcLocalBytes)
	a.ConstBytes, _ = d.cFuncAttr(fn, funcConstBytes)
	a.MaxThreadsPerBlock, _ = d.cFuncAttr(fn, funcMaxThreads)
	if v, ok := d.cFuncAttr(fn, funcMaxDynShared); ok && d.drv.vendor == target.NVIDIA {
		a.MaxDynamicShared = v
	} else if d.drv.vendor == target.NVIDIA {
		a.MaxDynamicShared = max(0, d.props.SharedPerBlock-a.SharedStatic)
	} else {
		// AMD has no opt-in: a block may use all of the LDS.
		a.MaxDynamicShared = max(0, d.props.SharedPerBlockOptin-a.SharedStatic)
	}
	return k, nil
}

// Name is the kernel's symbol name.
func (k *Kernel) Name() string { return k.name }

// Attrs returns what the driver reports of the compiled kernel.
func (k *Kernel) Attrs() KernelAttrs {
	k.m.d.mu.Lock()
	defer k.m.d.mu.Unlock()
	return k.attrs
}

// SetMaxDynamicShared allows launches of k with up to bytes of dynamic
// shared memory. On NVIDIA, more than 48 KiB needs this opt-in
// (cuFuncSetAttribute, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES). On
// AMD there is no opt-in (hipFuncSetAttribute cannot address module
// kernels, and none is needed), so only the device limit is checked.
func (k *Kernel) SetMaxDynamicShared(bytes int) error {
	d := k.m.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable("SetMaxDynamicShared"); err != nil {
		return err
	}
	p := &d.props
	if bytes < 0 {
		return fmt.Errorf("runtime: kernel %s: SetMaxDynamicShared(%d): negative size", k.name, bytes)
	}
	if bytes+k.attrs.SharedStatic > p.SharedPerBlockOptin {
		return fmt.Errorf("runtime: kernel %s: %d B dynamic + %d B static shared memory exceeds the device's opt-in limit of %d B per block",
			k.name, bytes, k.attrs.SharedStatic, p.SharedPerBlockOptin)
	}
	if d.drv.vendor != target.NVIDIA {
		return nil
	}
	if err := d.cFuncSetAttr(k.fn, funcMaxDynShared, bytes, k.name); err != nil {
		return err
	}
	k.attrs.MaxDynamicShared = bytes
	return nil
}

// checkLaunch validates a launch configuration against the device and the
// kernel before the driver sees it.
func checkLaunch(name string, p *Props, ka *KernelAttrs, grid, block [3]int, shared int) error {
	const axes = "xyz"
	threads := 1
	for i := range 3 {
		if grid[i] < 1 || (p.MaxGridDim[i] > 0 && grid[i] > p.MaxGridDim[i]) {
			return fmt.Errorf("runtime: Launch %s: grid %v: %c is %d; the device allows 1..%d", name, grid, axes[i], grid[i], p.MaxGridDim[i])
		}
		if block[i] < 1 || (p.MaxBlockDim[i] > 0 && block[i] > p.MaxBlockDim[i]) {
			return fmt.Errorf("runtime: Launch %s: block %v: %c is %d; the device allows 1..%d", name, block, axes[i], block[i], p.MaxBlockDim[i])
		}
		threads *= block[i]
	}
	if threads > p.MaxThreadsPerBlock {
		return fmt.Errorf("runtime: Launch %s: block %dx%dx%d has %d threads; the device allows at most %d threads per block",
			name, block[0], block[1], block[2], threads, p.MaxThreadsPerBlock)
	}
	if ka.MaxThreadsPerBlock > 0 && threads > ka.MaxThreadsPerBlock {
		return fmt.Errorf("runtime: Launch %s: block of %d threads exceeds this kernel's limit of %d threads per block (it uses %d registers per thread)",
			name, threads, ka.MaxThreadsPerBlock, ka.Regs)
	}
	if shared < 0 {
		return fmt.Errorf("runtime: Launch %s: negative shared memory size %d", name, shared)
	}
	if shared+ka.SharedStatic > p.SharedPerBlockOptin {
		return fmt.Errorf("runtime: Launch %s: %d B dynamic + %d B static shared memory exceeds the device's %d B per block",
			name, shared, ka.SharedStatic, p.SharedPerBlockOptin)
	}
	if shared > ka.MaxDynamicShared {
		return fmt.Errorf("runtime: Launch %s: %d B dynamic shared memory exceeds the kernel's current limit of %d B; call SetMaxDynamicShared(%d) first",
			name, shared, ka.MaxDynamicShared, shared)
	}
	return nil
}

// packArgs turns Launch arguments into 8-byte slots (little-endian values
// at the start of each) and their sizes in bytes.
func packArgs(d *Device, name string, args []any) (slots []uint64, sizes []int, err error) {
	if len(args) > maxArgs {
		return nil, nil, fmt.Errorf("runtime: Launch %s: %d arguments; at most %d", name, len(args), maxArgs)
	}
	slots = make([]uint64, len(args))
	sizes = make([]int, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case *Buffer:
			if err := d.usable("Launch "+name, v); err != nil {
				return nil, nil, fmt.Errorf("%w (argument %d)", err, i)
			}
			slots[i], sizes[i] = v.ptr, 8
		case int32:
			slots[i], sizes[i] = uint64(uint32(v)), 4
		case uint32:
			slots[i], sizes[i] = uint64(v), 4
		case int64:
			slots[i], sizes[i] = uint64(v), 8
		case float32:
			slots[i], sizes[i] = uint64(math.Float32bits(v)), 4
		case uintptr:
			slots[i], sizes[i] = uint64(v), 8
		case int:
			return nil, nil, fmt.Errorf("runtime: Launch %s: argument %d is an int; convert it to int32 or int64, whichever the kernel takes", name, i)
		default:
			return nil, nil, fmt.Errorf("runtime: Launch %s: argument %d has type %T; Launch takes *Buffer, int32, uint32, int64, float32 or uintptr", name, i, a)
		}
	}
	return slots, sizes, nil
}

func argType(a any) string {
	if _, ok := a.(*Buffer); ok {
		return "*Buffer"
	}
	return fmt.Sprintf("%T", a)
}

// Launch runs k on the device's stream. Arguments are *Buffer (passed as
// the device pointer), int32, uint32, int64, float32 or uintptr. The launch
// is asynchronous: errors of the kernel itself surface at Synchronize.
func (d *Device) Launch(k *Kernel, grid, block [3]int, sharedBytes int, args ...any) error {
	return d.launch(k, grid, block, sharedBytes, false, false, args)
}

// LaunchDependent is Launch for a kernel that may start while the kernel
// before it in the stream finishes: on CUDA devices of compute capability
// 9.0 and up, a programmatic dependent launch, which readies the grid
// while the previous one runs instead of after it (0.7–1.5 µs an op of
// two kernels on the H200; sooner still if the previous kernel executes
// griddepcontrol.launch_dependents, which fp8gen's kernels do not: that
// measured slower for them). Such a kernel must execute
// griddepcontrol.wait before it touches memory the previous kernel
// writes, as every kernel fp8gen emits for sm_90 does first thing; it
// waits for the whole previous grid and its writes. Elsewhere, or with
// FP8GEN_PDL=off in the environment when the device was opened, it is
// Launch.
func (d *Device) LaunchDependent(k *Kernel, grid, block [3]int, sharedBytes int, args ...any) error {
	return d.launch(k, grid, block, sharedBytes, d.pdl, false, args)
}

// Resident is how many blocks of k, of block threads and sharedBytes of
// dynamic LDS, the device holds at once: blocks an SM (or CU) times SMs.
func (d *Device) Resident(k *Kernel, block [3]int, sharedBytes int) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.checkKernel("Resident", k); err != nil {
		return 0, err
	}
	if err := checkLaunch(k.name, &d.props, &k.attrs, [3]int{1, 1, 1}, block, sharedBytes); err != nil {
		return 0, err
	}
	n, err := d.cOccupancy(k, block[0]*block[1]*block[2], sharedBytes)
	if err != nil {
		return 0, err
	}
	return n * d.props.MultiProcessors, nil
}

// LaunchResident is Launch for a kernel whose blocks wait on each other
// (ir.Func.Waits), which is correct on any grid of one axis: the grid is
// clamped to the blocks the device holds at once (Resident) and launched
// as a cooperative grid, which the driver schedules only when every block
// can be resident and refuses if the grid exceeds what the device can
// ever hold at once (an MPS limit on SMs, say). Where the driver has no
// cooperative launch it is an error: a plain launch could hang. It
// reports the grid launched.
func (d *Device) LaunchResident(k *Kernel, grid, block [3]int, sharedBytes int, args ...any) ([3]int, error) {
	if k == nil {
		return grid, errors.New("runtime: LaunchResident: nil kernel")
	}
	if grid[1] != 1 || grid[2] != 1 {
		return grid, fmt.Errorf("runtime: LaunchResident %s: grid %v: want one axis", k.name, grid)
	}
	n, err := d.Resident(k, block, sharedBytes)
	if err != nil {
		return grid, err
	}
	if n < 1 {
		return grid, fmt.Errorf("runtime: LaunchResident %s: the occupancy query fits no block of %v threads (%d B dynamic + %d B static LDS, %d registers a thread) on an SM",
			k.name, block, sharedBytes, k.attrs.SharedStatic, k.attrs.Regs)
	}
	grid[0] = min(grid[0], n)
	return grid, d.launch(k, grid, block, sharedBytes, false, true, args)
}

// checkKernel: k may be used on d (op names the caller in errors).
func (d *Device) checkKernel(op string, k *Kernel) error {
	if k == nil {
		return fmt.Errorf("runtime: %s: nil kernel", op)
	}
	if err := d.usable(op + " " + k.name); err != nil {
		return err
	}
	if k.m.d != d {
		return fmt.Errorf("runtime: %s %s: kernel belongs to device %d, not device %d", op, k.name, k.m.d.ordinal, d.ordinal)
	}
	if k.m.unloaded {
		return fmt.Errorf("runtime: %s %s: its module was unloaded", op, k.name)
	}
	return nil
}

// DependentLaunch reports whether LaunchDependent overlaps kernels here.
func (d *Device) DependentLaunch() bool { return d.pdl }

func (d *Device) launch(k *Kernel, grid, block [3]int, sharedBytes int, dependent, cooperative bool, args []any) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.checkKernel("Launch", k); err != nil {
		return err
	}
	if err := checkLaunch(k.name, &d.props, &k.attrs, grid, block, sharedBytes); err != nil {
		return err
	}
	slots, sizes, err := packArgs(d, k.name, args)
	if err != nil {
		return err
	}
	if !k.paramsQueried || k.paramsKnown && !k.paramsCounted && len(k.params) < len(args) {
		// Asked again only with more arguments than the sizes known, to
		// find out whether the kernel takes them.
		k.params, k.paramsKnown, k.paramsCounted = d.cParamSizes(k.fn, len(args))
		k.paramsQueried = true
	}
	if k.paramsKnown {
		if len(k.params) != len(args) {
			return fmt.Errorf("runtime: Launch %s: the kernel takes %d arguments, got %d", k.name, len(k.params), len(args))
		}
		for i, n := range k.params {
			if n != sizes[i] {
				return fmt.Errorf("runtime: Launch %s: argument %d: the kernel's parameter is %d bytes, got %s (%d bytes)",
					k.name, i, n, argType(args[i]), sizes[i])
			}
		}
	}
	return d.cLaunch(k, grid, block, sharedBytes, slots, dependent, cooperative)
}

// ---- events ----

// Event marks a point in the device's stream, for timing.
type Event struct {
	d         *Device
	h         unsafe.Pointer
	destroyed bool
}

// NewEvent creates a timing event.
func (d *Device) NewEvent() (*Event, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable("NewEvent"); err != nil {
		return nil, err
	}
	h, err := d.cEventCreate()
	if err != nil {
		return nil, err
	}
	return &Event{d: d, h: h}, nil
}

func (e *Event) usable(op string) error {
	if err := e.d.usable(op); err != nil {
		return err
	}
	if e.destroyed {
		return fmt.Errorf("runtime: %s: event was destroyed", op)
	}
	return nil
}

// Record records the event in the device's stream, after all work launched so far.
func (e *Event) Record() error {
	e.d.mu.Lock()
	defer e.d.mu.Unlock()
	if err := e.usable("Event.Record"); err != nil {
		return err
	}
	return e.d.cEventRecord(e.h)
}

// Synchronize waits until the event has completed.
func (e *Event) Synchronize() error {
	e.d.mu.Lock()
	defer e.d.mu.Unlock()
	if err := e.usable("Event.Synchronize"); err != nil {
		return err
	}
	return e.d.cEventSync(e.h)
}

// Elapsed is the device time between two recorded, completed events
// (resolution about half a microsecond).
func Elapsed(start, end *Event) (time.Duration, error) {
	if start == nil || end == nil {
		return 0, errors.New("runtime: Elapsed: nil event")
	}
	if start.d != end.d {
		return 0, errors.New("runtime: Elapsed: events of different devices")
	}
	d := start.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := start.usable("Elapsed"); err != nil {
		return 0, err
	}
	if err := end.usable("Elapsed"); err != nil {
		return 0, err
	}
	ms, err := d.cEventElapsed(start.h, end.h)
	if err != nil {
		return 0, err
	}
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}

// Destroy releases the event; destroying twice does nothing.
func (e *Event) Destroy() {
	e.d.mu.Lock()
	defer e.d.mu.Unlock()
	if e.destroyed || e.d.closed {
		e.destroyed = true
		return
	}
	e.destroyed = true
	e.d.cEventDestroy(e.h)
}
