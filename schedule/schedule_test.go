package schedule

import (
	"strings"
	"testing"

	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/lower"
	"github.com/fp8gen/fp8gen/target"
)

func TestCheckNamesTheLimit(t *testing.T) {
	gfx, _ := target.Lookup("gfx942")
	sm, _ := target.Lookup("sm_90")
	for _, c := range []struct {
		r    Resources
		t    *target.Target
		want string
	}{
		{Resources{Threads: 256, LDSBytes: 81920, Regs: 32}, gfx, "LDS 81920 B > 65536 B on gfx942"},
		{Resources{Threads: 96, Regs: 32}, gfx, "threads 96 not a multiple of the wave size 64 on gfx942"},
		{Resources{Threads: 2048, Regs: 32}, sm, "threads 2048 > 1024 on sm_90"},
		{Resources{Threads: 256, Regs: 600}, gfx, "registers ~600 per lane > 512 on gfx942"},
		{Resources{Threads: 256, Regs: 400}, sm, "registers ~256 per lane (estimate 400 × fit 0.64) > 255 on sm_90"},
		{Resources{Threads: 1024, Regs: 100}, sm, ""}, // 64 registers as ptxas is expected to allocate them
		{Resources{Threads: 1024, Regs: 110}, sm, "registers ~71 (estimate 110 × fit 0.64) × 1024 lanes > 65536 per CU on sm_90"},
	} {
		err := Check(c.r, c.t)
		if c.want == "" {
			if err != nil {
				t.Errorf("Check(%+v, %s) = %v; want it feasible", c.r, c.t.Name, err)
			}
			continue
		}
		if err == nil || err.Error() != c.want {
			t.Errorf("Check(%+v, %s) = %v; want %q", c.r, c.t.Name, err, c.want)
		}
	}
	if err := Check(Resources{Threads: 256, LDSBytes: 1024, Regs: 64}, gfx); err != nil {
		t.Errorf("a feasible point is rejected: %v", err)
	}
}

func TestParse(t *testing.T) {
	p, err := Parse("WARPS=8, BLOCK_K=4096,LOOP=0")
	if err != nil || p.String() != "BLOCK_K=4096,LOOP=0,WARPS=8" {
		t.Errorf("Parse: %v %v", p, err)
	}
	for _, bad := range []string{"WARPS", "WARPS=x", "WARPS=-1"} {
		if _, err := Parse(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("Parse(%q): error %v; want one quoting the input", bad, err)
		}
	}
}

// Measure reads the lowered kernel: its threads and LDS, and a register
// estimate that grows with the tile a lane holds.
func TestMeasure(t *testing.T) {
	sm, _ := target.Lookup("sm_90")
	build := func(n int) Resources {
		b := ir.NewBuilder("k", sm)
		x := b.Param("x", ir.F32)
		y := b.Param("y", ir.F32)
		v := b.Load(b.PtrAdd(x, b.Arange(n)), nil, nil)
		b.Store(b.PtrAdd(y, b.Arange(1)), b.Splat(b.Reduce(b.Abs(v), 0, ir.RMax), 1), nil)
		f, err := b.Func()
		if err != nil {
			t.Fatal(err)
		}
		if err := lower.Run(f, &lower.Config{Warps: 4}); err != nil {
			t.Fatal(err)
		}
		return Measure(f)
	}
	small, large := build(512), build(4096)
	if small.Threads != 128 || large.Threads != 128 {
		t.Errorf("threads %d, %d; want 128", small.Threads, large.Threads)
	}
	if small.LDSBytes != 4*4 {
		t.Errorf("LDS %d B; want 16 (one f32 per wave)", small.LDSBytes)
	}
	if !(large.Regs > small.Regs && large.Regs-small.Regs >= 28) {
		t.Errorf("registers %d for 4 elements a lane, %d for 32: the estimate must grow with the tile", small.Regs, large.Regs)
	}
	if _, ok := (Params{"A": 1})["B"]; ok {
		t.Error("map semantics")
	}
	defer func() {
		if r := recover(); r == nil || !strings.HasPrefix(r.(string), "BUG:") {
			t.Errorf("Get of a missing knob: %v; want a BUG panic", r)
		}
	}()
	Params{"A": 1}.Get("B")
}
