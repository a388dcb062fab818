package runtime

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fp8gen/fp8gen/target"
)

// ---- CPU-only tests ----

func TestDriverErrorMessage(t *testing.T) {
	e := &DriverError{Func: "cuMemAlloc_v2", Args: "1099511627776 B", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY", Msg: "out of memory"}
	want := "cuMemAlloc_v2(1099511627776 B): CUDA_ERROR_OUT_OF_MEMORY: out of memory"
	if got := e.Error(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestOpenHere checks that Open either finds a device or says, through
// ErrNoDevice, why not. On a machine without a GPU this exercises the
// loader (and, where libamdhip64 is installed, the HIP symbol table).
func TestOpenHere(t *testing.T) {
	d, err := Open(0)
	if err != nil {
		if !errors.Is(err, ErrNoDevice) {
			t.Fatalf("Open(0): %v; want a device or ErrNoDevice", err)
		}
		t.Logf("no device, as reported: %v", err)
		return
	}
	defer d.Close()
	t.Logf("device: %v", d.Props())
}

func TestFindArchName(t *testing.T) {
	buf := make([]byte, 4096)
	copy(buf, "AMD Instinct MI300X")
	copy(buf[300:], "gfxhello")                // not hex digits
	copy(buf[700:], "xgfx90a")                 // not at a field start
	copy(buf[1396:], "gfx942:sramecc+:xnack-") // where a R0600 struct keeps it
	if got := findArchName(buf); got != "gfx942:sramecc+:xnack-" {
		t.Errorf("findArchName = %q", got)
	}
	if got := findArchName(make([]byte, 100)); got != "" {
		t.Errorf("findArchName(zeros) = %q", got)
	}
	for s, ok := range map[string]bool{"gfx90a": true, "gfx950": true, "gfx1100": true, "gfx942:xnack+": true, "gfx": false, "gfx9g0": false, "gfx942:bad": false} {
		if validArch(s) != ok {
			t.Errorf("validArch(%q) = %v", s, !ok)
		}
	}
}

func h200Props() *Props {
	return &Props{
		Name: "NVIDIA H200", Arch: "sm_90", Vendor: target.NVIDIA, WarpSize: 32,
		SharedPerBlock: 48 << 10, SharedPerBlockOptin: 227 << 10, MultiProcessors: 132,
		MaxThreadsPerBlock: 1024, MaxBlockDim: [3]int{1024, 1024, 64}, MaxGridDim: [3]int{1<<31 - 1, 65535, 65535},
	}
}

func TestCheckLaunch(t *testing.T) {
	p := h200Props()
	ka := &KernelAttrs{Regs: 32, MaxThreadsPerBlock: 1024, MaxDynamicShared: 48 << 10}
	ok := func(grid, block [3]int, shared int) {
		t.Helper()
		if err := checkLaunch("k", p, ka, grid, block, shared); err != nil {
			t.Errorf("grid %v block %v shared %d: %v", grid, block, shared, err)
		}
	}
	bad := func(grid, block [3]int, shared int, want ...string) {
		t.Helper()
		err := checkLaunch("k", p, ka, grid, block, shared)
		if err == nil {
			t.Errorf("grid %v block %v shared %d: no error", grid, block, shared)
			return
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q lacks %q", err, w)
			}
		}
	}
	ok([3]int{4096, 1, 1}, [3]int{256, 1, 1}, 0)
	ok([3]int{1, 1, 1}, [3]int{32, 32, 1}, 48<<10)
	bad([3]int{1, 1, 1}, [3]int{2048, 1, 1}, 0, "x is 2048", "1..1024")
	bad([3]int{1, 1, 1}, [3]int{64, 32, 1}, 0, "2048 threads", "at most 1024 threads per block")
	bad([3]int{0, 1, 1}, [3]int{32, 1, 1}, 0, "grid", "x is 0")
	bad([3]int{1, 70000, 1}, [3]int{32, 1, 1}, 0, "y is 70000")
	bad([3]int{1, 1, 1}, [3]int{32, 1, 1}, -1, "negative")
	bad([3]int{1, 1, 1}, [3]int{32, 1, 1}, 64<<10, "SetMaxDynamicShared(65536)")
	bad([3]int{1, 1, 1}, [3]int{32, 1, 1}, 228<<10, "exceeds the device's 232448 B per block")
	ka2 := &KernelAttrs{Regs: 128, MaxThreadsPerBlock: 512, MaxDynamicShared: 48 << 10}
	if err := checkLaunch("k", p, ka2, [3]int{1, 1, 1}, [3]int{1024, 1, 1}, 0); err == nil || !strings.Contains(err.Error(), "limit of 512 threads") {
		t.Errorf("register-limited kernel: %v", err)
	}
}

func TestPackArgs(t *testing.T) {
	d := &Device{ordinal: 0}
	other := &Device{ordinal: 1}
	b := &Buffer{d: d, ptr: 0x7f0000001000, size: 64}
	slots, sizes, err := packArgs(d, "k", []any{b, int32(-1), uint32(7), int64(-2), float32(1.5), uintptr(0xabc)})
	if err != nil {
		t.Fatal(err)
	}
	wantSlots := []uint64{0x7f0000001000, 0xffffffff, 7, math.MaxUint64 - 1, uint64(math.Float32bits(1.5)), 0xabc}
	wantSizes := []int{8, 4, 4, 8, 4, 8}
	for i := range wantSlots {
		if slots[i] != wantSlots[i] || sizes[i] != wantSizes[i] {
			t.Errorf("arg %d: slot %#x size %d, want %#x %d", i, slots[i], sizes[i], wantSlots[i], wantSizes[i])
		}
	}
	for _, c := range []struct {
		arg  any
		want string
	}{
		{42, "int32 or int64"},
		{"x", "type string"},
		{float64(1), "type float64"},
		{(*Buffer)(nil), "nil *Buffer"},
		{&Buffer{d: other, ptr: 1, size: 4}, "belongs to device 1"},
		{&Buffer{d: d, ptr: 1, size: 4, freed: true}, "freed"},
	} {
		_, _, err := packArgs(d, "k", []any{int32(0), c.arg})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("packArgs(%T): %v; want an error containing %q", c.arg, err, c.want)
		}
	}
	if _, _, err := packArgs(d, "k", make([]any, maxArgs+1)); err == nil {
		t.Error("too many arguments accepted")
	}
}

// ---- GPU tests (skipped with the reason where no GPU is found) ----

// openGPU opens device 0 or skips. FP8GEN_REQUIRE_GPU=1 turns the skip
// into a failure, for runs that must not pass vacuously.
func openGPU(t *testing.T) *Device {
	t.Helper()
	d, err := Open(0)
	if err != nil {
		if errors.Is(err, ErrNoDevice) && os.Getenv("FP8GEN_REQUIRE_GPU") == "" {
			t.Skipf("no GPU: %v", err)
		}
		t.Fatalf("Open(0): %v", err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return d
}

func TestGPUProps(t *testing.T) {
	d := openGPU(t)
	p := d.Props()
	t.Logf("props: %v", p)
	t.Logf("props: %+v", p)
	if p.WarpSize <= 0 || p.MaxThreadsPerBlock <= 0 || p.MultiProcessors <= 0 || p.TotalMem == 0 || p.SharedPerBlock <= 0 {
		t.Errorf("implausible props: %+v", p)
	}
	if p.SharedPerBlockOptin < p.SharedPerBlock {
		t.Errorf("opt-in shared %d < default %d", p.SharedPerBlockOptin, p.SharedPerBlock)
	}
	tgt, err := d.Target()
	if strings.Contains(p.Name, "H200") || strings.Contains(p.Name, "H100") {
		if err != nil {
			t.Fatalf("Target of %s: %v", p.Name, err)
		}
		if tgt.Name != "sm_90" || p.Arch != "sm_90" || p.WarpSize != 32 {
			t.Errorf("%s: target %s, arch %s, warp %d; want sm_90, sm_90, 32", p.Name, tgt.Name, p.Arch, p.WarpSize)
		}
		if p.SharedPerBlockOptin != tgt.LDSBytes {
			t.Errorf("opt-in shared %d B, target says %d B", p.SharedPerBlockOptin, tgt.LDSBytes)
		}
	} else if err != nil {
		t.Logf("Target: %v", err)
	}
	if tgt != nil {
		t.Logf("target %s (%s): wave %d, LDS %d B, e4m3 %v", tgt.Name, tgt.Product, tgt.WaveSize, tgt.LDSBytes, tgt.E4M3)
	}
	if _, err := Open(1 << 20); !errors.Is(err, ErrNoDevice) {
		t.Errorf("Open(1<<20): %v; want ErrNoDevice", err)
	}
}

func TestGPUMemory(t *testing.T) {
	d := openGPU(t)
	const n = 1<<20 + 13
	b, err := d.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	src := make([]byte, n)
	for i := range src {
		src[i] = byte(i*7 + i>>8)
	}
	if err := d.Upload(b, src); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, n)
	if err := d.Download(got, b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, src) {
		t.Fatal("round trip changed the data")
	}

	c, err := d.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free()
	if err := d.CopyDtoD(c, b, n); err != nil {
		t.Fatal(err)
	}
	clear(got)
	if err := d.Download(got, c); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, src) {
		t.Fatal("CopyDtoD changed the data")
	}

	if err := d.Memset(b, 0xa5); err != nil {
		t.Fatal(err)
	}
	if err := d.Download(got, b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, bytes.Repeat([]byte{0xa5}, n)) {
		t.Fatal("Memset did not set every byte")
	}

	// Partial transfers and misuse.
	if err := d.Upload(b, src[:100]); err != nil {
		t.Fatal(err)
	}
	if err := d.Download(got[:10], b); err != nil || !bytes.Equal(got[:10], src[:10]) {
		t.Fatalf("partial download: %v", err)
	}
	if err := d.Upload(b, make([]byte, n+1)); err == nil || !strings.Contains(err.Error(), "do not fit") {
		t.Errorf("oversized Upload: %v", err)
	}
	if err := d.Download(make([]byte, n+1), b); err == nil {
		t.Error("oversized Download accepted")
	}
	if err := d.CopyDtoD(c, b, n+1); err == nil {
		t.Error("oversized CopyDtoD accepted")
	}
	z, err := d.Alloc(0)
	if err != nil || z.Size() != 0 {
		t.Fatalf("Alloc(0): %v", err)
	}
	if err := z.Free(); err != nil {
		t.Fatal(err)
	}
	if bufs, live := d.Live(); bufs != 2 || live != 2*n {
		t.Errorf("Live() = %d buffers, %d B; want 2, %d B (b and c; Alloc(0) holds nothing)", bufs, live, 2*n)
	}
	f, err := d.Alloc(16)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Free(); err != nil {
		t.Fatal(err)
	}
	if err := f.Free(); err != nil {
		t.Errorf("second Free: %v", err)
	}
	if bufs, live := d.Live(); bufs != 2 || live != 2*n {
		t.Errorf("after freeing f twice, Live() = %d buffers, %d B; want 2, %d B", bufs, live, 2*n)
	}
	if err := d.Upload(f, []byte{1}); err == nil || !strings.Contains(err.Error(), "freed") {
		t.Errorf("Upload to a freed buffer: %v", err)
	}
}

func TestGPUOutOfMemory(t *testing.T) {
	d := openGPU(t)
	b, err := d.Alloc(1 << 40)
	if err == nil {
		b.Free()
		t.Fatal("Alloc(1 TiB) succeeded")
	}
	t.Logf("Alloc(1 TiB): %v", err)
	var de *DriverError
	if !errors.As(err, &de) {
		t.Fatalf("want a *DriverError, got %T", err)
	}
	msg := err.Error()
	for _, w := range []string{"1099511627776 B", "out of memory"} {
		if !strings.Contains(strings.ToLower(msg), strings.ToLower(w)) {
			t.Errorf("error %q lacks %q", msg, w)
		}
	}
	if d.Props().Vendor == target.NVIDIA && !strings.HasPrefix(msg, "cuMemAlloc_v2(1099511627776 B): CUDA_ERROR_OUT_OF_MEMORY: ") {
		t.Errorf("error %q: want cuMemAlloc_v2(1099511627776 B): CUDA_ERROR_OUT_OF_MEMORY: ...", msg)
	}
	if bufs, _ := d.Live(); bufs != 0 {
		t.Errorf("a failed Alloc left %d buffers counted live", bufs)
	}
	// The device still works afterwards.
	if b, err := d.Alloc(1 << 20); err != nil {
		t.Errorf("Alloc after OOM: %v", err)
	} else {
		b.Free()
	}
}

const add1Src = `extern "C" __global__ void add1(float* x, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) x[i] += 1.0f;
}
`

// compileGPU compiles src for d's target in a fresh cache, skipping where
// no compiler is installed.
func compileGPU(t *testing.T, d *Device, c *Compiler, src, name string) ([]byte, CompileInfo) {
	t.Helper()
	tgt, err := d.Target()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin, info, err := c.Compile(ctx, src, tgt, name)
	if errors.Is(err, ErrNoCompiler) && os.Getenv("FP8GEN_REQUIRE_GPU") == "" {
		t.Skipf("no compiler: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return bin, info
}

// gpuKernel compiles src in a fresh cache and loads its kernel name,
// unloaded when the test ends.
func gpuKernel(t *testing.T, d *Device, src, name string) *Kernel {
	t.Helper()
	bin, _ := compileGPU(t, d, &Compiler{CacheDir: t.TempDir()}, src, name)
	m, err := d.LoadModule(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Unload() })
	k, err := m.Kernel(name)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func floatsToBytes(f []float32) []byte {
	b := make([]byte, 4*len(f))
	for i, v := range f {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

func bytesToFloats(b []byte) []float32 {
	f := make([]float32, len(b)/4)
	for i := range f {
		f[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return f
}

func TestGPUKernel(t *testing.T) {
	d := openGPU(t)
	c := &Compiler{CacheDir: t.TempDir()}
	bin, info := compileGPU(t, d, c, add1Src, "add1")
	if info.Hit {
		t.Error("first compile in an empty cache was a hit")
	}
	t.Logf("compile miss: %v, %d-byte image, key %s…, %s (%s)", info.Duration, len(bin), info.Key[:12], info.Tool, info.ToolVersion)
	t.Logf("compiler log:\n%s", info.Log)
	bin2, info2 := compileGPU(t, d, c, add1Src, "add1")
	t.Logf("compile hit: %v", info2.Duration)
	if !info2.Hit || !bytes.Equal(bin, bin2) || info2.Key != info.Key {
		t.Errorf("second compile: hit %v, same image %v, same key %v", info2.Hit, bytes.Equal(bin, bin2), info2.Key == info.Key)
	}
	if info2.Duration >= 10*time.Millisecond {
		t.Errorf("cache hit took %v; want < 10ms", info2.Duration)
	}

	m, err := d.LoadModule(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Unload()
	if _, err := m.Kernel("nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("Kernel(nope): %v", err)
	} else {
		t.Logf("Kernel(nope): %v", err)
	}
	k, err := m.Kernel("add1")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("add1 attrs: %+v", k.Attrs())

	const n = 1<<24 + 3
	host := make([]float32, n)
	for i := range host {
		host[i] = float32(i%100000) * 0.5
	}
	x, err := d.Alloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Free()
	if err := d.Upload(x, floatsToBytes(host)); err != nil {
		t.Fatal(err)
	}
	grid, block := [3]int{(n + 255) / 256, 1, 1}, [3]int{256, 1, 1}
	if err := d.Launch(k, grid, block, 0, x, int32(n)); err != nil { // warm-up
		t.Fatal(err)
	}
	start, err := d.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	defer start.Destroy()
	end, err := d.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	defer end.Destroy()
	const reps = 10
	if err := start.Record(); err != nil {
		t.Fatal(err)
	}
	for range reps {
		if err := d.Launch(k, grid, block, 0, x, int32(n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := end.Record(); err != nil {
		t.Fatal(err)
	}
	if err := end.Synchronize(); err != nil {
		t.Fatal(err)
	}
	el, err := Elapsed(start, end)
	if err != nil {
		t.Fatal(err)
	}
	if el <= 0 {
		t.Errorf("Elapsed = %v", el)
	}
	per := el / reps
	t.Logf("add1 over %d floats: %v per launch, %.0f GB/s", n, per, float64(8*n)/per.Seconds()/1e9)
	if err := d.Synchronize(); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 4*n)
	if err := d.Download(out, x); err != nil {
		t.Fatal(err)
	}
	got := bytesToFloats(out)
	for i := range got {
		if want := host[i] + 1 + reps; got[i] != want {
			t.Fatalf("x[%d] = %v, want %v", i, got[i], want)
		}
	}

	// Memset and CopyDtoD take their place in the stream between launches,
	// the host not waiting: zero, three adds, a copy, zero, one add.
	y, err := d.Alloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer y.Free()
	for _, step := range []func() error{
		func() error { return d.Memset(x, 0) },
		func() error { return d.Launch(k, grid, block, 0, x, int32(n)) },
		func() error { return d.Launch(k, grid, block, 0, x, int32(n)) },
		func() error { return d.Launch(k, grid, block, 0, x, int32(n)) },
		func() error { return d.CopyDtoD(y, x, 4*n) },
		func() error { return d.Memset(x, 0) },
		func() error { return d.Launch(k, grid, block, 0, x, int32(n)) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		b    *Buffer
		want float32
	}{{x, 1}, {y, 3}} {
		if err := d.Download(out, c.b); err != nil {
			t.Fatal(err)
		}
		for i, v := range bytesToFloats(out) {
			if v != c.want {
				t.Fatalf("after memset, adds and copy in the stream: element %d = %v, want %v", i, v, c.want)
			}
		}
	}

	// Launch errors are caught before the driver sees them.
	err = d.Launch(k, [3]int{1, 1, 1}, [3]int{2048, 1, 1}, 0, x, int32(n))
	t.Logf("2048 threads: %v", err)
	if err == nil || !strings.Contains(err.Error(), "2048") || !strings.Contains(err.Error(), "1024") {
		t.Errorf("launch with 2048 threads: %v; want an error naming 2048 and the 1024 limit", err)
	}
	err = d.Launch(k, [3]int{1, 1, 1}, [3]int{32, 32, 2}, 0, x, int32(n))
	if err == nil || !strings.Contains(err.Error(), "2048 threads") {
		t.Errorf("launch with 32x32x2 threads: %v", err)
	}
	if err := d.Launch(k, grid, block, 0, x, n); err == nil || !strings.Contains(err.Error(), "int32 or int64") {
		t.Errorf("int argument: %v", err)
	}
	if err := d.Launch(k, grid, block, d.Props().SharedPerBlockOptin+1, x, int32(n)); err == nil {
		t.Error("launch with more shared memory than the device has accepted")
	}
	if k.paramsKnown {
		t.Logf("parameter sizes from the driver: %v", k.params)
		if err := d.Launch(k, grid, block, 0, x, int32(n), int32(0)); err == nil || !strings.Contains(err.Error(), "takes 2 arguments, got 3") {
			t.Errorf("three arguments to add1: %v", err)
		}
		if err := d.Launch(k, grid, block, 0, x, int64(n)); err == nil || !strings.Contains(err.Error(), "parameter is 4 bytes, got int64") {
			t.Errorf("int64 for int: %v", err)
		}
	} else {
		t.Log("the driver does not report parameter sizes; argument count/size checks not exercised")
	}
	if err := d.Synchronize(); err != nil {
		t.Fatalf("device unhealthy after rejected launches: %v", err)
	}
}

// addDepSrc is add1 written to be launched with LaunchDependent: on
// NVIDIA it waits for the kernel before it first, as fp8gen's sm_90
// kernels do.
const addDepSrc = `extern "C" __global__ void add_dep(float* x, int n) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	asm volatile("griddepcontrol.wait;" ::: "memory");
	asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) x[i] += 1.0f;
}
`

// TestGPULaunchDependent: kernels launched to overlap the one before them
// each still see every write of it: 64 adds in turn, each reading what
// the previous wrote, over more blocks than fit on the device at once.
func TestGPULaunchDependent(t *testing.T) {
	d := openGPU(t)
	p := d.Props()
	t.Logf("programmatic dependent launch: %v (%s, cc %d.%d)", d.DependentLaunch(), p.Vendor, p.ComputeCapability[0], p.ComputeCapability[1])
	if p.Vendor == target.NVIDIA && p.ComputeCapability[0] >= 9 && !d.DependentLaunch() && os.Getenv("FP8GEN_PDL") != "off" {
		t.Error("a CUDA device of compute capability 9 or more, and LaunchDependent does not overlap")
	}
	k := gpuKernel(t, d, addDepSrc, "add_dep")
	const n, adds = 1<<24 + 5, 64
	x, err := d.Alloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Free()
	if err := d.Memset(x, 0); err != nil {
		t.Fatal(err)
	}
	grid, block := [3]int{(n + 255) / 256, 1, 1}, [3]int{256, 1, 1}
	for i := range adds {
		launch := d.LaunchDependent
		if i == 0 {
			launch = d.Launch
		}
		if err := launch(k, grid, block, 0, x, int32(n)); err != nil {
			t.Fatal(err)
		}
	}
	out := make([]byte, 4*n)
	if err := d.Download(out, x); err != nil {
		t.Fatal(err)
	}
	for i, v := range bytesToFloats(out) {
		if v != adds {
			t.Fatalf("x[%d] = %v after %d dependent adds", i, v, adds)
		}
	}
	// The checks of Launch hold for LaunchDependent too.
	if err := d.LaunchDependent(k, [3]int{1, 1, 1}, [3]int{2048, 1, 1}, 0, x, int32(n)); err == nil || !strings.Contains(err.Error(), "2048") {
		t.Errorf("dependent launch with 2048 threads: %v", err)
	}
	// FP8GEN_PDL=off turns it off; another value is refused at Open.
	t.Setenv("FP8GEN_PDL", "off")
	if d2 := openGPU(t); d2.DependentLaunch() {
		t.Error("FP8GEN_PDL=off, and LaunchDependent overlaps")
	}
	t.Setenv("FP8GEN_PDL", "maybe")
	if d3, err := Open(0); err == nil || !strings.Contains(err.Error(), `FP8GEN_PDL="maybe"`) {
		if d3 != nil {
			d3.Close()
		}
		t.Errorf("Open with FP8GEN_PDL=maybe: %v", err)
	}
}

const reverseSrc = `extern "C" __global__ void reverse(float* x) {
	extern __shared__ float s[];
	int i = threadIdx.x;
	s[i] = x[blockIdx.x * blockDim.x + i];
	__syncthreads();
	x[blockIdx.x * blockDim.x + i] = s[blockDim.x - 1 - i];
}
`

func TestGPUDynamicShared(t *testing.T) {
	d := openGPU(t)
	k := gpuKernel(t, d, reverseSrc, "reverse")
	const blocks, threads = 4, 1024
	host := make([]float32, blocks*threads)
	for i := range host {
		host[i] = float32(i)
	}
	x, err := d.Alloc(4 * len(host))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Free()
	if err := d.Upload(x, floatsToBytes(host)); err != nil {
		t.Fatal(err)
	}
	p := d.Props()
	big := p.SharedPerBlockOptin - k.Attrs().SharedStatic
	if big <= p.SharedPerBlock {
		t.Skipf("device has no shared memory opt-in above %d B", p.SharedPerBlock)
	}
	grid, block := [3]int{blocks, 1, 1}, [3]int{threads, 1, 1}
	err = d.Launch(k, grid, block, big, x)
	t.Logf("before opt-in: %v", err)
	if err == nil || !strings.Contains(err.Error(), "SetMaxDynamicShared") {
		t.Fatalf("launch with %d B before SetMaxDynamicShared: %v", big, err)
	}
	if err := k.SetMaxDynamicShared(big + 1); err == nil {
		t.Error("SetMaxDynamicShared past the opt-in limit accepted")
	}
	if err := k.SetMaxDynamicShared(big); err != nil {
		t.Fatal(err)
	}
	if err := d.Launch(k, grid, block, big, x); err != nil {
		t.Fatal(err)
	}
	if err := d.Synchronize(); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 4*len(host))
	if err := d.Download(out, x); err != nil {
		t.Fatal(err)
	}
	got := bytesToFloats(out)
	for b := range blocks {
		for i := range threads {
			if want := host[b*threads+threads-1-i]; got[b*threads+i] != want {
				t.Fatalf("x[%d] = %v, want %v", b*threads+i, got[b*threads+i], want)
			}
		}
	}
	t.Logf("launched with %d B dynamic shared memory", big)
}

// TestGPUNVCCCompileError checks the error path against the real nvcc's
// message format (it needs nvcc, not a GPU).
func TestGPUNVCCCompileError(t *testing.T) {
	tgt, _ := target.Lookup("sm_90")
	src := "extern \"C\" __global__ void bad(float* x) {\n\tint i = threadIdx.x;\n\tx[i] = undefined_thing;\n}\n"
	_, _, err := (&Compiler{CacheDir: t.TempDir()}).Compile(context.Background(), src, tgt, "bad")
	if errors.Is(err, ErrNoCompiler) {
		t.Skipf("no nvcc: %v", err)
	}
	t.Logf("compile error:\n%v", err)
	var ce *CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("want a *CompileError, got %v", err)
	}
	if !strings.Contains(err.Error(), "undefined_thing") || !strings.Contains(ce.Source, "> 3 | \tx[i] = undefined_thing;") {
		t.Errorf("error does not quote line 3:\n%v", err)
	}
}
