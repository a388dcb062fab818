// Package target describes the GPUs fp8gen generates code for: wavefront size,
// LDS (shared memory) per block, register budget, and — most important for
// correctness — the FP8 formats the hardware uses. Every stage of the compiler
// reads hardware limits from here and nowhere else.
//
// The FP8 format is a property of the target, never a default: an MI300
// (gfx942) uses e4m3fnuz with a finite max of 240, while gfx950 and NVIDIA
// sm_90 use OCP e4m3fn with a max of 448. Scaling against the wrong maximum
// clips silently, so callers must get the format from a Target.
package target

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fp8gen/fp8gen/fp8"
)

// Vendor selects the dialect the emitter writes and the compiler the runtime calls.
type Vendor int

const (
	AMD Vendor = iota
	NVIDIA
)

func (v Vendor) String() string {
	if v == AMD {
		return "amd"
	}
	return "nvidia"
}

// Target is one GPU architecture.
type Target struct {
	Name      string // gfx942, gfx950, sm_90
	Vendor    Vendor
	Product   string // a device this target describes, for messages
	WaveSize  int    // lanes per wavefront (AMD) or warp (NVIDIA)
	LDSBytes  int    // LDS / shared memory a block may use
	RegsLane  int    // 32-bit registers a lane may hold (VGPR+AGPR on AMD)
	RegsCU    int    // 32-bit registers per CU/SM, shared by resident lanes
	MaxBlock  int    // threads per block
	MaxWaves  int    // resident waves per CU/SM
	CUs       int    // compute units / streaming multiprocessors
	HBMGBs    int    // peak memory bandwidth, GB/s (datasheet)
	L2Bytes   int    // last-level cache before HBM
	E4M3      *fp8.Format
	E5M2      *fp8.Format
	CheckArch string // --offload-arch accepted by CI's hipcc for a compile check, "" if none

	// The performance model's facts (package cost).
	MaxBlocksCU  int     // resident blocks per CU/SM
	RegGranule   int     // registers a lane is allocated in multiples of
	LDSCU        int     // LDS / shared memory per CU/SM, shared by resident blocks
	CopyGBs      int     // what a device-to-device copy sustains, GB/s (read + write)
	MemLatencyNS int     // a load's latency from memory under load, ns (Little's law)
	InstrNS      float64 // a wave's dependent issue of one instruction, ns
	RegFit       float64 // the compiler's registers over schedule.Measure's estimate (its median)
	LaunchNS     int     // a kernel launch's cost in a stream of launches, ns
	// HWCvt: the emitter may use the hardware's saturating f32→fp8
	// conversion (cvt.rn.satfinite on sm_89+), whose results match package
	// fp8 bit for bit, and its f32→bf16 one (cvt.rn.bf16.f32), which
	// matches but for NaN payloads (checked on the GPU by the backend
	// tests).
	HWCvt bool
	// PDL: the runtime may launch a plan's later kernels to overlap the
	// kernel before them (CUDA's programmatic dependent launch; sm_90), so
	// every kernel the emitter writes begins by waiting for its
	// predecessor (griddepcontrol.wait: a no-op when launched plainly).
	PDL bool
}

// FP8 returns the target's format of the given family ("e4m3" or "e5m2").
func (t *Target) FP8(family string) (*fp8.Format, error) {
	switch family {
	case "e4m3":
		return t.E4M3, nil
	case "e5m2":
		return t.E5M2, nil
	}
	return nil, fmt.Errorf("unknown fp8 family %q (want e4m3 or e5m2)", family)
}

func (t *Target) String() string { return t.Name }

var targets = map[string]*Target{
	"gfx942": {
		Name: "gfx942", Vendor: AMD, Product: "MI300X",
		// RegsCU: 4 SIMDs of 64 lanes, 512 registers a lane that VGPRs
		// and AGPRs share (hipcc gives a 1024-lane block 128; golden's
		// TestAMDRegisterFile).
		WaveSize: 64, LDSBytes: 64 << 10, RegsLane: 512, RegsCU: 512 * 64 * 4,
		MaxBlock: 1024, MaxWaves: 32, CUs: 304, HBMGBs: 5300, L2Bytes: 4 << 20,
		E4M3: fp8.E4M3FNUZ, E5M2: fp8.E5M2FNUZ, CheckArch: "gfx940",
		// Not measured: 80% of the datasheet's bandwidth, and latencies
		// taken to be the H200's (fp8gen has not run on an MI300X).
		MaxBlocksCU: 32, RegGranule: 8, LDSCU: 64 << 10, CopyGBs: 4240, MemLatencyNS: 1200, InstrNS: 0.25, RegFit: 1, LaunchNS: 4000,
	},
	"gfx950": {
		Name: "gfx950", Vendor: AMD, Product: "MI355X",
		WaveSize: 64, LDSBytes: 160 << 10, RegsLane: 512, RegsCU: 512 * 64 * 4,
		MaxBlock: 1024, MaxWaves: 32, CUs: 256, HBMGBs: 8000, L2Bytes: 4 << 20,
		E4M3: fp8.E4M3FN, E5M2: fp8.E5M2,
		// Not measured, as gfx942's.
		MaxBlocksCU: 32, RegGranule: 8, LDSCU: 160 << 10, CopyGBs: 6400, MemLatencyNS: 1200, InstrNS: 0.25, RegFit: 1, LaunchNS: 4000,
	},
	"sm_90": {
		Name: "sm_90", Vendor: NVIDIA, Product: "H100/H200",
		WaveSize: 32, LDSBytes: 227 << 10, RegsLane: 255, RegsCU: 64 << 10,
		MaxBlock: 1024, MaxWaves: 64, CUs: 132, HBMGBs: 4800, L2Bytes: 50 << 20,
		E4M3: fp8.E4M3FN, E5M2: fp8.E5M2, HWCvt: true, PDL: true,
		// Measured on an H200 (2026-12-01): copies of 0.3–1 GB at
		// 3.8–4.06 TB/s; nvcc 13.0's registers 0.52–1.29 of the estimate
		// over that day's tune runs, median 0.64; the latency and the
		// instruction cost those the model fits best to the same runs
		// (cost's TestFit over a grid: 80 timed candidates, rms log error
		// 0.23 of the predicted time against the measured).
		MaxBlocksCU: 32, RegGranule: 8, LDSCU: 228 << 10, CopyGBs: 4000, MemLatencyNS: 1200, InstrNS: 0.25, RegFit: 0.64, LaunchNS: 2000,
	},
}

// Lookup returns the target of the given name.
func Lookup(name string) (*Target, error) {
	if t, ok := targets[name]; ok {
		return t, nil
	}
	return nil, fmt.Errorf("unknown target %q (known: %s)", name, strings.Join(Names(), ", "))
}

// Names lists the known targets in sorted order.
func Names() []string {
	n := slices.Sorted(maps.Keys(targets))
	return n
}

// FromDevice maps what a device reports — a gcnArchName such as
// "gfx942:sramecc+:xnack-" or a compute capability written "sm_90" — to its
// target. An unknown device is an error, never a silent default.
func FromDevice(arch string) (*Target, error) {
	base, _, _ := strings.Cut(arch, ":")
	switch base {
	case "gfx940", "gfx941", "gfx942":
		return targets["gfx942"], nil
	case "gfx950":
		return targets["gfx950"], nil
	case "sm_90", "sm_90a":
		return targets["sm_90"], nil
	}
	return nil, fmt.Errorf("unsupported device architecture %q: fp8gen knows %s", arch, strings.Join(Names(), ", "))
}
