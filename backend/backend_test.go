package backend

import (
	"fmt"
	"os"
	"testing"

	"github.com/fp8gen/fp8gen/ops"
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

var gpuShapes = []ops.Shape{
	{"M": 1, "K": 1}, {"M": 7, "K": 33}, {"M": 33, "K": 1000}, {"M": 130, "K": 17},
	{"M": 256, "K": 4096}, {"M": 1023, "K": 771}, {"M": 4096, "K": 14336}, {"M": 5000, "K": 64},
}

func TestGPUOpsMatchReference(t *testing.T) {
	g := openGPU(t)
	t.Logf("device %s → target %s (e4m3 = %s)", g.Dev.Props().Name, g.T.Name, g.T.E4M3.Name)
	for _, name := range ops.Names() {
		op, _ := ops.Lookup(name)
		for _, sh := range gpuShapes {
			for _, o := range []ops.Options{{}, {"in": "f32", "fp8": "e5m2", "pow2": "true"}} {
				for _, adv := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/%v/%v/adv=%v", name, sh, o, adv), func(t *testing.T) {
						p, err := op.NewPlan(g.T, sh, o, nil)
						if err != nil {
							t.Fatal(err)
						}
						in := ops.Inputs(p.Call, 11, adv)
						want := op.Reference(p.Call, in)
						all, out := p.WithOutputs(in)
						if _, err := g.Run(p, all); err != nil {
							t.Fatal(err)
						}
						if err := ops.Compare(want, out); err != nil {
							t.Error(err)
						}
					})
				}
			}
		}
	}
}

// Every schedule of every op's space, on the GPU, at an odd shape.
func TestGPUEverySchedule(t *testing.T) {
	g := openGPU(t)
	sh := ops.Shape{"M": 300, "K": 520}
	for _, name := range ops.Names() {
		op, _ := ops.Lookup(name)
		c, err := op.NewCall(g.T, ops.Shape{"M": 4096, "K": 4096}, nil)
		if err != nil {
			t.Fatal(err)
		}
		space, err := c.Space()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range space {
			t.Run(fmt.Sprintf("%s/%v", name, s), func(t *testing.T) {
				p, err := op.NewPlan(g.T, sh, nil, s)
				if err != nil {
					t.Skipf("infeasible: %v", err)
				}
				in := ops.Inputs(p.Call, 5, true)
				all, out := p.WithOutputs(in)
				if _, err := g.Run(p, all); err != nil {
					t.Fatal(err)
				}
				if err := ops.Compare(op.Reference(p.Call, in), out); err != nil {
					t.Error(err)
				}
			})
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
