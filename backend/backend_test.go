package backend

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/fp8gen/fp8gen/ops"
	"github.com/fp8gen/fp8gen/schedule"
	"github.com/fp8gen/fp8gen/target"
)

// openGPU skips the test, with the reason, where there is no GPU, unless
// FP8GEN_REQUIRE_GPU=1 says a GPU must be there.
func openGPU(t *testing.T) *GPU {
	t.Helper()
	g, err := OpenGPU()
	if err != nil {
		if IsNoDevice(err) && os.Getenv("FP8GEN_REQUIRE_GPU") != "1" {
			t.Skipf("no GPU: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// prepared prepares p on the GPU over in and its outputs (all: both;
// out: the outputs alone, the same tensors), freed when t ends.
func prepared(t *testing.T, g *GPU, p *ops.Plan, in map[string]*ops.Tensor) (pr *Prepared, all, out map[string]*ops.Tensor) {
	t.Helper()
	all, out = p.WithOutputs(in)
	pr, err := g.Prepare(context.Background(), p, all)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pr.Free)
	return pr, all, out
}

// runTwice runs p on the GPU from in twice — one prepared plan launched
// again, as timing does, its scratch reset and its outputs poisoned with a
// different byte each time — and fails unless both runs wrote the same
// bits: a race, an element no lane writes, or scratch left from the first
// run shows as a difference. It also fails if the runs leave device memory
// allocated. It returns the outputs.
func runTwice(t *testing.T, g *GPU, p *ops.Plan, in map[string]*ops.Tensor) map[string]*ops.Tensor {
	t.Helper()
	bufs, live := g.Dev.Live()
	all, _ := p.WithOutputs(in)
	pr, err := g.Prepare(context.Background(), p, all)
	if err != nil {
		t.Fatal(err)
	}
	var outs [2]map[string]*ops.Tensor
	for i, poison := range []byte{Poison, ^byte(Poison)} {
		all, out := p.WithOutputs(in)
		err := pr.Poison(poison)
		if err == nil {
			err = pr.Launch()
		}
		if err == nil {
			err = pr.Download(all)
		}
		if err != nil {
			pr.Free()
			t.Fatal(err)
		}
		outs[i] = out
	}
	pr.Free()
	// Rows past an output's written ones keep each run's poison.
	w0, w1 := p.Written(outs[0], in, nil), p.Written(outs[1], in, outs[0])
	for name, a := range w0 {
		if b := w1[name]; !bytes.Equal(a.Data, b.Data) {
			t.Errorf("%s: two runs of the same input wrote different bits (poison %#x vs %#x)", name, Poison, ^byte(Poison))
		}
	}
	if b2, n2 := g.Dev.Live(); b2 != bufs || n2 != live {
		t.Errorf("device memory leaked: %d buffers (%d B) live before, %d (%d B) after", bufs, live, b2, n2)
	}
	return outs[0]
}

// gpuShapes are the shapes the GPU tests run op at: its test shapes and
// its larger GPU ones; FP8GEN_GPU_SMALL=1 (under compute-sanitizer, which
// is slow) keeps those of at most 2^20 elements in every tensor.
func gpuShapes(op *ops.Op, tg *target.Target) []ops.Shape {
	all := append(slices.Clone(op.Tests.Shapes), op.Tests.GPU...)
	if os.Getenv("FP8GEN_GPU_SMALL") != "1" {
		return all
	}
	var small []ops.Shape
	for _, sh := range all {
		c, err := op.NewCall(tg, sh, nil)
		if err == nil && !slices.ContainsFunc(c.Specs(), func(s ops.Spec) bool { return s.Elems() > 1<<20 }) {
			small = append(small, sh)
		}
	}
	return small
}

func TestGPUOpsMatchReference(t *testing.T) {
	g := openGPU(t)
	t.Logf("device %s → target %s (e4m3 = %s)", g.Dev.Props().Name, g.T.Name, g.T.E4M3.Name)
	twice := 0
	defer func() { t.Logf("%d plans run twice, bits equal", twice) }()
	for _, name := range ops.Names() {
		op, _ := ops.Lookup(name)
		for _, sh := range gpuShapes(op, g.T) {
			for _, o := range op.OptionSets() {
				for _, adv := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/%v/%v/adv=%v", name, sh, o, adv), func(t *testing.T) {
						p, err := op.NewPlan(g.T, sh, o, nil)
						if err != nil {
							t.Fatal(err)
						}
						in := ops.Inputs(p.Call, 11, adv)
						if err := check(p, in, runTwice(t, g, p, in)); err != nil {
							t.Error(err)
						}
						twice++
					})
				}
			}
		}
	}
}

// Every schedule of every op's space, on the GPU, at an odd shape.
func TestGPUEverySchedule(t *testing.T) {
	g := openGPU(t)
	twice := 0
	defer func() { t.Logf("%d schedules run twice, bits equal", twice) }()
	for _, name := range ops.Names() {
		op, _ := ops.Lookup(name)
		sh := op.Tests.Odd
		space, err := op.TestSchedules(g.T)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range space {
			t.Run(fmt.Sprintf("%s/%v", name, s), func(t *testing.T) {
				p, err := op.NewPlan(g.T, sh, nil, s)
				if err != nil {
					if slices.ContainsFunc(op.Tests.Schedules, func(q schedule.Params) bool { return maps.Equal(s, q) }) {
						t.Fatalf("a schedule of Tests.Schedules is infeasible: %v", err)
					}
					t.Skipf("infeasible: %v", err) // a candidate that does not hold at the odd shape
				}
				in := ops.Inputs(p.Call, 5, true)
				if err := check(p, in, runTwice(t, g, p, in)); err != nil {
					t.Error(err)
				}
				twice++
			})
		}
	}
}

// Every golden variant that names a schedule runs on the GPU with its
// options, at the op's odd shape and at its own where that is small: the
// goldens are the kernels a reviewer reads, and some (a transposing write
// in two rounds, 64-bit indexing) are reached by no other GPU test.
func TestGPUGoldenSchedules(t *testing.T) {
	g := openGPU(t)
	ran := 0
	defer func() { t.Logf("%d golden plans run twice, bits equal", ran) }()
	for _, name := range ops.Names() {
		op, _ := ops.Lookup(name)
		for _, v := range op.Goldens {
			if v.Schedule == nil {
				continue // the default schedule: the other tests run it
			}
			shapes := []ops.Shape{op.Tests.Odd}
			if v.Shape != nil {
				shapes = append(shapes, v.Shape)
			} else {
				shapes = append(shapes, op.Example)
			}
			for i, sh := range shapes {
				t.Run(fmt.Sprintf("%s/%s/%v", name, v.Name, sh), func(t *testing.T) {
					p, err := op.NewPlan(g.T, sh, v.Options, v.Schedule)
					switch {
					case err != nil && i > 0:
						t.Fatal(err) // the golden's own shape
					case err != nil:
						t.Skipf("infeasible at the odd shape: %v", err)
					}
					if slices.ContainsFunc(p.Specs(), func(s ops.Spec) bool { return s.Elems() > 1<<26 }) {
						t.Skipf("%v is past 2^26 elements a tensor: the huge-tensor tests cover that size", sh)
					}
					in := ops.Inputs(p.Call, 13, true)
					if err := check(p, in, runTwice(t, g, p, in)); err != nil {
						t.Fatal(err)
					}
					ran++
				})
			}
		}
	}
}

// A device reported as gfx942 scales against e4m3fnuz's 240, never 448.
func TestGFX942ScalesAgainst240(t *testing.T) {
	tg, err := target.FromDevice("gfx942:sramecc+:xnack-")
	if err != nil {
		t.Fatal(err)
	}
	op, _ := ops.Lookup("rowwise_cast")
	sh := ops.Shape{"M": 4, "K": 64}
	p, err := op.NewPlan(tg, sh, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Format.Name != "e4m3fnuz" || p.Format.Max != 240 {
		t.Fatalf("gfx942 plan uses %s (max %v), want e4m3fnuz (max 240)", p.Format.Name, p.Format.Max)
	}
	in := ops.Inputs(p.Call, 1, false)
	all, out := p.WithOutputs(in)
	if _, err := (CPU{T: tg}).Run(p, all); err != nil {
		t.Fatal(err)
	}
	// Each row's largest |x| lands exactly on the format's max code, 0x7F (240).
	for i := 0; i < 4; i++ {
		top := byte(0)
		for _, b := range out["q"].Data[i*64 : (i+1)*64] {
			top = max(top, b&0x7F)
		}
		if top != 0x7F {
			t.Errorf("row %d: largest code %#x, want 0x7f (240 in e4m3fnuz)", i, top)
		}
	}
}

// On the device path (offsets written by a kernel of the caller's, never
// seen by the host), garbage offsets make grouped_colwise_cast report the
// first bad group through its status word, and write nothing outside its
// outputs (compute-sanitizer memcheck runs this test in scripts/gpu.sh).
func TestGPUGroupedGarbageOffsets(t *testing.T) {
	g := openGPU(t)
	for _, s := range []schedule.Params{nil, {"BLOCK_T": 64, "BLOCK_K": 64, "WARPS": 4, "SPLIT": 1, "FUSED": 1},
		{"BLOCK_T": 64, "BLOCK_K": 64, "WARPS": 4, "SPLIT": 8, "FUSED": 0, "BY_ROWS": 1, "BLOCK_E": 8},
		{"BLOCK_T": 64, "BLOCK_K": 64, "WARPS": 4, "SPLIT": 1, "FUSED": 2, "HOLD": 4}} {
		t.Run(fmt.Sprint(s), func(t *testing.T) { garbageOffsets(t, g, s) })
	}
}

func garbageOffsets(t *testing.T, g *GPU, s schedule.Params) {
	sh := ops.Shape{"T": 3000, "K": 200, "E": 6}
	p, err := ops.GroupedColwise.NewPlan(g.T, sh, nil, s)
	if err != nil {
		t.Fatal(err)
	}
	in := ops.Inputs(p.Call, 1, false)
	pr, all, _ := prepared(t, g, p, in)
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 50 {
		offs := make([]int32, 6)
		for j := range offs {
			switch r.IntN(3) {
			case 0:
				offs[j] = int32(r.IntN(3001))
			case 1:
				offs[j] = -int32(r.IntN(1 << 30))
			default:
				offs[j] = int32(r.Uint32())
			}
		}
		if i == 0 {
			offs = []int32{100, 50, 3000, 3000, 3000, 3000} // decreasing at group 1
		}
		first, prev := -1, int32(0)
		for j, v := range offs {
			if v < prev || v > 3000 || j == 5 && v != 3000 {
				first = j
				break
			}
			prev = v
		}
		data := make([]byte, 4*len(offs))
		for j, v := range offs {
			binary.LittleEndian.PutUint32(data[4*j:], uint32(v))
		}
		if err := pr.Upload("offsets", data); err != nil {
			t.Fatal(err)
		}
		if err := pr.Launch(); err != nil {
			t.Fatal(err)
		}
		err := pr.Download(all)
		switch {
		case first < 0 && err != nil:
			t.Errorf("offsets %v: %v", offs, err)
		case first >= 0 && (err == nil || !strings.Contains(err.Error(), fmt.Sprintf("group %d ", first))):
			t.Errorf("offsets %v: %v; want group %d named", offs, err, first)
		}
	}
}

// grouped_swiglu_probs reads only the rows its rule calls used, for any
// offsets and counts (a router kernel's, never seen by the host): on
// garbage the GPU writes the reference's bits, and nothing outside the
// outputs (memcheck runs this test in scripts/gpu.sh).
func TestGPUSwigluGarbageOffsets(t *testing.T) {
	g := openGPU(t)
	sh := ops.Shape{"R": 3000, "F": 256, "E": 6}
	for _, s := range []schedule.Params{nil, {"BLOCK_F": 64, "TILES": 4, "WARPS": 2, "ROWS": 8, "PER_CU": 0, "PREFETCH": 0, "BLOCK_E": 8}} {
		t.Run(fmt.Sprint(s), func(t *testing.T) {
			p, err := ops.GroupedSwigluProbs.NewPlan(g.T, sh, nil, s)
			if err != nil {
				t.Fatal(err)
			}
			in := ops.Inputs(p.Call, 1, true)
			pr, all, out := prepared(t, g, p, in)
			r := rand.New(rand.NewPCG(9, 10))
			for range 30 {
				for _, name := range []string{"offsets", "counts"} {
					data := in[name].Data
					for j := 0; j < len(data); j += 4 {
						v := r.Uint32()
						if r.IntN(2) == 0 {
							v = uint32(r.IntN(3001))
						}
						binary.LittleEndian.PutUint32(data[j:], v)
					}
					if err := pr.Upload(name, data); err != nil {
						t.Fatal(err)
					}
				}
				if err := pr.Launch(); err != nil {
					t.Fatal(err)
				}
				if err := pr.Download(all); err != nil {
					t.Fatal(err)
				}
				if _, err := p.CheckOutputs(in, out); err != nil {
					t.Errorf("offsets %v, counts %v: %v", in["offsets"].Ints(), in["counts"].Ints(), err)
				}
			}
		})
	}
}

// check holds a GPU run to the op's reference (bit for bit, or within its
// allowance) and, where the op is held only within an allowance and the
// plan is small enough to interpret, to the interpreter bit for bit: one
// schedule gives the same bits on every back end (NaNs aside, whose
// payloads are the hardware's: CompareUpToNaN).
func check(p *ops.Plan, in, got map[string]*ops.Tensor) error {
	if _, err := p.CheckOutputs(in, got); err != nil {
		return err
	}
	if p.Op.Allowance == nil || p.IdealBytes() > 8<<20 {
		return nil
	}
	all, out := p.WithOutputs(in)
	if _, err := (CPU{T: p.Target}).Run(p, all); err != nil {
		return fmt.Errorf("the interpreter: %w", err)
	}
	if err := ops.CompareUpToNaN(out, got); err != nil {
		return fmt.Errorf("the GPU and the interpreter differ: %w", err)
	}
	return nil
}

// A second schedule prepared on the first's buffers (as a tune times its
// candidates) runs on the inputs uploaded once and writes the reference's
// bits; a plan of another shape is refused, and freeing the second leaves
// the first's buffers to the first.
func TestGPUPrepareOn(t *testing.T) {
	g := openGPU(t)
	op, _ := ops.Lookup("grouped_colwise_cast")
	sh := op.Tests.Odd
	var plans []*ops.Plan
	for _, s := range op.Tests.Schedules[:3] {
		p, err := op.NewPlan(g.T, sh, nil, s)
		if err != nil {
			t.Fatal(err)
		}
		plans = append(plans, p)
	}
	in := ops.Inputs(plans[0].Call, 5, true)
	all, _ := plans[0].WithOutputs(in)
	first, err := g.Prepare(context.Background(), plans[0], all)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Free()
	for _, p := range plans {
		pr := first
		if p != plans[0] {
			if pr, err = g.PrepareOn(context.Background(), p, first); err != nil {
				t.Fatal(err)
			}
			pr.Free() // a no-op: the buffers are first's
		}
		_, out := p.WithOutputs(in)
		if err := pr.RunOnce(out); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Call.CheckOutputs(in, out); err != nil {
			t.Fatalf("schedule %v on the first's buffers: %v", p.Schedule, err)
		}
	}
	other, err := op.NewPlan(g.T, ops.Shape{"T": 64, "K": 32, "E": 2}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.PrepareOn(context.Background(), other, first); err == nil || !strings.Contains(err.Error(), "is not the call") {
		t.Fatalf("PrepareOn at another shape: %v; want it refused", err)
	}
}

// TestGPUTimeFlushed: Time writes its FlushBytes buffer in the stream
// before each repetition (the last one's byte is there afterwards, every
// byte of it), the timed plan's outputs are still the reference's, and
// zero repetitions are refused. The times are logged beside those after a
// 4 KB memset instead, for the record: at a size that fits in L2 the two
// do not order reliably (the flush's 60 µs let the CPU queue the op's
// launches ahead, which back to back it cannot), so no test of speed.
func TestGPUTimeFlushed(t *testing.T) {
	g := openGPU(t)
	op, _ := ops.Lookup("colwise_cast")
	p, err := op.NewPlan(g.T, ops.Shape{"M": 2048, "K": 4096}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	in := ops.Inputs(p.Call, 3, false)
	pr, _, out := prepared(t, g, p, in)
	small, err := g.Dev.Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer small.Free()
	warm, err := timeAfter(g.Dev, small, 5, 51, pr.Launch)
	if err != nil {
		t.Fatal(err)
	}
	cold, err := pr.Time(5, 51)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after a 4 KB memset %v, flushed %v", warm, cold)
	if g.flush == nil || g.flush.Size() != FlushBytes {
		t.Fatalf("flush buffer %v, want %d bytes", g.flush, FlushBytes)
	}
	got := make([]byte, FlushBytes)
	if err := g.Dev.Download(got, g.flush); err != nil {
		t.Fatal(err)
	}
	for i, b := range got {
		if b != byte(50) {
			t.Fatalf("flush buffer byte %d is %d after 51 timed repetitions, want 50 (the last one's)", i, b)
		}
	}
	if err := pr.RunOnce(out); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Call.CheckOutputs(in, out); err != nil {
		t.Fatalf("after the flushed timing: %v", err)
	}
	if ct, err := g.CopyTime(1<<22, 2, 11); err != nil || ct <= 0 {
		t.Errorf("CopyTime: %v, %v", ct, err)
	}
	if _, err := pr.Time(0, 0); err == nil || !strings.Contains(err.Error(), "at least 1") {
		t.Errorf("Time with no repetition: %v; want it refused", err)
	}
}
