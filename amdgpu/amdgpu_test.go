package amdgpu

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// requireTools skips the test when hipcc or the LLVM tools are missing,
// unless FP8GEN_REQUIRE_HIPCC=1 (as make test sets it in CI): then it fails.
func requireTools(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv("FP8GEN_REQUIRE_HIPCC") == "1" {
			t.Fatalf("FP8GEN_REQUIRE_HIPCC=1: %v", err)
		}
		t.Skipf("skipping the hipcc compile check: %v", err)
	}
}

func compileT(t *testing.T, src, arch string) (*Report, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return Compile(ctx, src, arch)
}

func compileFile(t *testing.T, name, arch string) *Report {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	r, err := compileT(t, string(src), arch)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var (
	kernelsOnce   sync.Once
	kernelsReport *Report
)

// kernels compiles testdata/kernels.hip for gfx940 once for all the tests
// that read it.
func kernels(t *testing.T) *Report {
	t.Helper()
	requireTools(t)
	kernelsOnce.Do(func() { kernelsReport = compileFile(t, "kernels.hip", "gfx940") })
	if kernelsReport == nil {
		t.Fatal("testdata/kernels.hip did not compile (see the first test that compiled it)")
	}
	return kernelsReport
}

func kernel(t *testing.T, r *Report, name string) KernelInfo {
	t.Helper()
	k, ok := r.Kernel(name)
	if !ok {
		t.Fatalf("no kernel %q in the report; have %v", name, r.Kernels)
	}
	return k
}

// The relaxed agent-scope max is the bare atomic; acq_rel wraps it in an L2
// write-back before and an invalidate after (sc1: agent scope on gfx940).
func TestAtomicOrderingISA(t *testing.T) {
	r := kernels(t)
	relaxed := r.KernelDisasm("amax_relaxed")
	if !strings.Contains(relaxed, "global_atomic_umax") {
		t.Errorf("amax_relaxed has no global_atomic_umax:\n%s", relaxed)
	}
	for _, op := range []string{"buffer_wbl2", "buffer_inv"} {
		if strings.Contains(relaxed, op) {
			t.Errorf("amax_relaxed has %s, want the bare atomic:\n%s", op, relaxed)
		}
	}

	acqRel := r.KernelDisasm("amax_acq_rel")
	var order []string
	for _, l := range strings.Split(acqRel, "\n") {
		for _, op := range []string{"buffer_wbl2 sc1", "global_atomic_umax", "buffer_inv sc1"} {
			if strings.HasPrefix(instruction(l), op) {
				order = append(order, op)
			}
		}
	}
	want := []string{"buffer_wbl2 sc1", "global_atomic_umax", "buffer_inv sc1"}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("amax_acq_rel: memory operations in order (-want +got):\n%s\n%s", diff, acqRel)
	}
}

// Pins a clang 15 pitfall the emitter must work around: a float
// __hip_atomic_fetch_max is an unsigned max of the bits, not a float max
// (which would need a compare-and-swap loop on gfx940).
func TestFloatAtomicMaxIsUnsignedMax(t *testing.T) {
	d := kernels(t).KernelDisasm("amax_float")
	if !strings.Contains(d, "global_atomic_umax") || strings.Contains(d, "cmpswap") {
		t.Errorf("amax_float is no longer a bare global_atomic_umax; revisit the float atomic note in doc.go:\n%s", d)
	}
}

func TestLDSBytes(t *testing.T) {
	k := kernel(t, kernels(t), "lds_4k")
	if k.LDSBytes != 4096 {
		t.Errorf("lds_4k: LDSBytes = %d, want 4096 (__shared__ float s[1024])", k.LDSBytes)
	}
}

func TestRegistersAndWavefront(t *testing.T) {
	r := kernels(t)
	for _, k := range r.Kernels {
		if k.VGPRs <= 0 || k.SGPRs <= 0 {
			t.Errorf("%s: VGPRs = %d, SGPRs = %d, want both > 0", k.Name, k.VGPRs, k.SGPRs)
		}
		if k.Wavefront != 64 {
			t.Errorf("%s: Wavefront = %d, want 64 on gfx940", k.Name, k.Wavefront)
		}
	}
}

func TestSpills(t *testing.T) {
	r := kernels(t)
	k := kernel(t, r, "spill")
	if k.VGPRSpills == 0 || k.PrivateBytes == 0 {
		t.Errorf("spill: VGPRSpills = %d, PrivateBytes = %d, want both > 0", k.VGPRSpills, k.PrivateBytes)
	}
	if !strings.Contains(r.KernelDisasm("spill"), "scratch_store_dword") {
		t.Error("spill: no scratch_store_dword in its disassembly")
	}
	if k := kernel(t, r, "lds_4k"); k.VGPRSpills != 0 || k.SGPRSpills != 0 || k.PrivateBytes != 0 {
		t.Errorf("lds_4k: spills %d/%d, private %d B, want none", k.VGPRSpills, k.SGPRSpills, k.PrivateBytes)
	}
}

// C++ kernels keep their mangled symbol in both the metadata and the
// disassembly; the emitter writes extern "C" kernels to get plain names.
func TestMangledName(t *testing.T) {
	r := kernels(t)
	kernel(t, r, "_Z7mangledPf")
	if r.KernelDisasm("_Z7mangledPf") == "" {
		t.Error("no disassembly for _Z7mangledPf")
	}
	if _, ok := r.Kernel("mangled"); ok {
		t.Error(`Kernel("mangled") found a kernel; names are symbols, matched exactly`)
	}
}

func TestKernelDisasmIsOneFunction(t *testing.T) {
	r := kernels(t)
	d := r.KernelDisasm("amax_relaxed")
	if !strings.Contains(d, "<amax_relaxed>:") || strings.Contains(d, "<amax_acq_rel>:") {
		t.Errorf("KernelDisasm(amax_relaxed) is not that one function:\n%s", d)
	}
	lines := strings.Split(strings.TrimSpace(d), "\n")
	if last := instruction(lines[len(lines)-1]); last != "s_endpgm" {
		t.Errorf("KernelDisasm(amax_relaxed) ends with %q, want s_endpgm without the s_nop padding", last)
	}
	if !strings.Contains(r.Disasm, "s_nop 0") {
		t.Error("Report.Disasm lost the s_nop padding; it is llvm-objdump's output as is")
	}
	if got := r.KernelDisasm("no_such_kernel"); got != "" {
		t.Errorf("KernelDisasm(no_such_kernel) = %q, want empty", got)
	}
}

// CI's clang 15 has the gfx940 FP8 conversion instructions: the emitter may
// use them for gfx940/gfx942. gfx90a lacks them.
func TestFP8ConversionBuiltins(t *testing.T) {
	requireTools(t)
	r := compileFile(t, "fp8cvt.hip", "gfx940")
	for name, op := range map[string]string{"pack_fp8": "v_cvt_pk_fp8_f32", "unpack_fp8": "v_cvt_f32_fp8"} {
		if d := r.KernelDisasm(name); !strings.Contains(d, op) {
			t.Errorf("%s has no %s:\n%s", name, op, d)
		}
	}

	src, err := os.ReadFile(filepath.Join("testdata", "fp8cvt.hip"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = compileT(t, string(src), "gfx90a")
	if err == nil || !strings.Contains(err.Error(), "fp8-insts") {
		t.Errorf("compiling fp8cvt.hip for gfx90a: err = %v, want a missing fp8-insts feature", err)
	}
}

func TestCompileErrorNamesLine(t *testing.T) {
	requireTools(t)
	src := "#include <hip/hip_runtime.h>\n" +
		"extern \"C\" __global__ void broken(float* out) {\n" +
		"  out[threadIdx.x] = 1.0f +;\n" +
		"}\n"
	_, err := compileT(t, src, "gfx940")
	if err == nil {
		t.Fatal("Compile of a syntax error succeeded")
	}
	msg := err.Error()
	for _, want := range []string{"kernel.hip:3:", "error:", "out[threadIdx.x] = 1.0f +;"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not mention %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, os.TempDir()) {
		t.Errorf("error leaks the temporary directory:\n%s", msg)
	}
}

func TestCompileRejectsBadArch(t *testing.T) {
	for _, arch := range []string{"", "sm_90", "gfx940 -O0", "--offload-arch=gfx940"} {
		if _, err := Compile(context.Background(), "", arch); err == nil || !strings.Contains(err.Error(), "bad architecture") {
			t.Errorf("Compile(arch %q): err = %v, want bad architecture", arch, err)
		}
	}
}

func TestCompileUnknownArch(t *testing.T) {
	requireTools(t)
	_, err := compileT(t, "extern \"C\" __global__ void k() {}\n", "gfx950")
	if err == nil || !strings.Contains(err.Error(), "gfx950") {
		t.Errorf("Compile for gfx950: err = %v, want hipcc's invalid target error", err)
	}
}

func TestCompileCanceled(t *testing.T) {
	requireTools(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Compile(ctx, "extern \"C\" __global__ void k() {}\n", "gfx940"); err == nil {
		t.Error("Compile with a canceled context succeeded")
	}
}

// testdata/kernels_gfx940.notes.txt is llvm-readelf --notes of
// testdata/kernels.hip compiled by CI's hipcc for gfx940.
func TestParseNotesCaptured(t *testing.T) {
	notes, err := os.ReadFile(filepath.Join("testdata", "kernels_gfx940.notes.txt"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseNotes(string(notes))
	if err != nil {
		t.Fatal(err)
	}
	want := []KernelInfo{
		{Name: "amax_relaxed", VGPRs: 2, SGPRs: 11, Wavefront: 64},
		{Name: "amax_acq_rel", VGPRs: 2, SGPRs: 11, Wavefront: 64},
		{Name: "amax_float", VGPRs: 2, SGPRs: 11, Wavefront: 64},
		{Name: "lds_4k", VGPRs: 3, SGPRs: 8, LDSBytes: 4096, Wavefront: 64},
		{Name: "spill", VGPRs: 48, SGPRs: 25, VGPRSpills: 57, PrivateBytes: 232, Wavefront: 64},
		{Name: "_Z7mangledPf", VGPRs: 2, SGPRs: 8, Wavefront: 64},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseNotes (-want +got):\n%s", diff)
	}
}

func TestParseNotes(t *testing.T) {
	tests := []struct {
		name  string
		notes string
		want  []KernelInfo
	}{{
		name: "args with names of their own, keys on the next line, quotes",
		notes: `    AMDGPU Metadata:
        ---
amdhsa.kernels:
  -
    .args:
      - .name:           out
        .offset:         0
        .size:           8
      - .name:           n
        .size:           4
    .group_segment_fixed_size: 512
    .name:           'k''1'
    .private_segment_fixed_size: 16
    .sgpr_count:     20
    .vgpr_count:     30
    .vgpr_spill_count: 2
    .sgpr_spill_count: 1
    .agpr_count:     4
    .wavefront_size: 32
  - .name:           "k2"
    .sgpr_count:     5
    .vgpr_count:     6
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
amdhsa.target:   amdgcn-amd-amdhsa--gfx940
amdhsa.version:
  - 1
  - 1
...
`,
		want: []KernelInfo{
			{Name: "k'1", VGPRs: 30, SGPRs: 20, AGPRs: 4, LDSBytes: 512, VGPRSpills: 2, SGPRSpills: 1, PrivateBytes: 16, Wavefront: 32},
			{Name: "k2", VGPRs: 6, SGPRs: 5},
		},
	}, {
		name: "list items at the key's own indentation",
		notes: `amdhsa.kernels:
- .name: a
  .vgpr_count: 1
  .sgpr_count: 2
  .group_segment_fixed_size: 3
  .private_segment_fixed_size: 4
amdhsa.version:
- 1
`,
		want: []KernelInfo{{Name: "a", VGPRs: 1, SGPRs: 2, LDSBytes: 3, PrivateBytes: 4}},
	}, {
		name:  "no kernels",
		notes: "amdhsa.kernels: []\namdhsa.target: amdgcn-amd-amdhsa--gfx940\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseNotes(tt.notes)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("parseNotes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseNotesErrors(t *testing.T) {
	tests := []struct{ name, notes, want string }{
		{"no metadata", "Displaying notes found in: .note\n", "no amdhsa.kernels"},
		{"missing count", "amdhsa.kernels:\n  - .name: k\n    .sgpr_count: 1\n    .group_segment_fixed_size: 0\n    .private_segment_fixed_size: 0\n", "no .vgpr_count"},
		{"missing name", "amdhsa.kernels:\n  - .vgpr_count: 1\n    .sgpr_count: 1\n    .group_segment_fixed_size: 0\n    .private_segment_fixed_size: 0\n", "no .name"},
		{"not an integer", "amdhsa.kernels:\n  - .name: k\n    .vgpr_count: many\n", "line 3: .vgpr_count: want an integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseNotes(tt.notes)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestDeviceBundle(t *testing.T) {
	list := "host-x86_64-unknown-linux\nhipv4-amdgcn-amd-amdhsa--gfx90a:xnack-\nhipv4-amdgcn-amd-amdhsa--gfx940\n"
	for arch, want := range map[string]string{
		"gfx940":        "hipv4-amdgcn-amd-amdhsa--gfx940",
		"gfx90a:xnack-": "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-",
	} {
		if got, err := deviceBundle(list, arch); err != nil || got != want {
			t.Errorf("deviceBundle(%s) = %q, %v, want %q", arch, got, err, want)
		}
	}
	if _, err := deviceBundle(list, "gfx90a"); err == nil {
		t.Error("deviceBundle(gfx90a) found an entry; only gfx90a:xnack- is there")
	}
}

// The command replayed without hipcc compiles what hipcc compiles.
func TestReplayedCommandMatchesHipcc(t *testing.T) {
	requireTools(t)
	src, err := os.ReadFile(filepath.Join("testdata", "kernels.hip"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	viaHipcc, err := compile(ctx, string(src), "gfx940", nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := hipccCommands.Load("gfx940"); !ok {
		t.Fatal("hipcc's compiler command was not kept for gfx940: every compile runs hipcc")
	}
	replayed, err := compile(ctx, string(src), "gfx940", nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(viaHipcc, replayed); d != "" {
		t.Errorf("the replayed command's report differs from hipcc's (-hipcc +replayed):\n%s", d)
	}
}

func TestHipccCommand(t *testing.T) {
	for _, c := range []struct {
		out  string
		want []string
	}{
		{"hipcc-cmd: /usr/bin/clang++-15  -isystem \"/a b/..\" --offload-arch=gfx940 -x hip kernel.hip -o \"kernel.co\"\n",
			[]string{"/usr/bin/clang++-15", "-isystem", "/a b/..", "--offload-arch=gfx940", "-x", "hip", "kernel.hip", "-o", "kernel.co"}},
		{"", nil},
		{"hipcc-cmd: clang++ kernel.hip -o kernel.co $(x)\n", nil},
		{"hipcc-cmd: clang++ \"kernel.hip -o kernel.co\n", nil},
		{"hipcc-cmd: clang++ other.hip -o kernel.co\n", nil},
		{"hipcc-cmd: a kernel.hip kernel.co\nhipcc-cmd: b kernel.hip kernel.co\n", nil},
	} {
		if d := cmp.Diff(c.want, hipccCommand(c.out)); d != "" {
			t.Errorf("hipccCommand(%q) (-want +got):\n%s", c.out, d)
		}
	}
}
