package cost

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fp8gen/fp8gen/ops"
	"github.com/fp8gen/fp8gen/schedule"
	"github.com/fp8gen/fp8gen/target"
)

// measured is one timed candidate of a tune run.
type measured struct {
	op, shape string
	sched     schedule.Params
	us        float64
}

// h200Runs are the tune runs the model is held to, in the order they ran:
// QK and MoE (2026-12-01), the casts and the MoE scales' new schedules
// (2026-12-01), colwise, grouped and expert with ORDER and PREFETCH
// (2026-12-01) and rowwise with its persistent loop (2026-12-02).
var h200Runs = []string{"testdata/h200-tune-2026-12-01.tsv", "testdata/h200-tune-2026-12-01b.tsv", "testdata/h200-tune-2026-12-01c.tsv", "testdata/h200-tune-2026-12-02.tsv"}

func loadRuns(t *testing.T) []measured {
	var out []measured
	for _, p := range h200Runs {
		out = append(out, loadMeasured(t, p)...)
	}
	return out
}

func loadMeasured(t *testing.T, path string) []measured {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []measured
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		c := strings.Split(line, "\t")
		s, err := schedule.Parse(c[2])
		if err != nil {
			t.Fatal(err)
		}
		v, err := strconv.ParseFloat(c[3], 64)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, measured{c[0], c[1], s, v})
	}
	return out
}

func parseShape(t *testing.T, s string) ops.Shape {
	sh := ops.Shape{}
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(kv, "=")
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatal(err)
		}
		sh[k] = n
	}
	return sh
}

// The model's stated accuracy on the H200's tune runs (2026-12-01): its
// top-1 candidate within these factors of the measured best, on average
// over the tuned (op, shape) pairs of a set of runs and at worst. Fitted to
// the first run (×1.04, ×1.30 over its 12 pairs); the second run's 13
// pairs came after the fit (×1.066, ×1.303 over all 25). The third run,
// the colwise, grouped and expert spaces with ORDER and PREFETCH, is held
// apart, to what the model does there (×1.204 and ×2.625 over its 10
// pairs): the model is blind to both knobs (they change no bytes and no
// in-flight count it sees), and it takes the fused grouped kernel, 512
// programs at T=32768, E=16, to stream at the copy's bandwidth (86 µs
// predicted, 328.6 measured, against the best 125.2).
var h200Sets = []struct {
	runs        []string
	mean, worst float64
}{
	{h200Runs[:2], 1.07, 1.31},
	{h200Runs[2:3], 1.21, 2.63},
	// The rowwise tune of 2026-12-02: the model ranks the persistent
	// loop by its bytes and occupancy, blind to the prefetch that makes it
	// fast, and picks the one-pass or two-pass schedules.
	{h200Runs[3:], 1.19, 1.34},
}

// TestModelAgainstH200 ranks each tuned (op, shape) of each set of the
// H200's tune runs by the model and holds its top-1 to the measured best.
func TestModelAgainstH200(t *testing.T) {
	for _, set := range h200Sets {
		t.Run(strings.Join(set.runs, "+"), func(t *testing.T) {
			var rows []measured
			for _, p := range set.runs {
				rows = append(rows, loadMeasured(t, p)...)
			}
			modelAgainst(t, rows, set.mean, set.worst)
		})
	}
}

func modelAgainst(t *testing.T, rows []measured, top1Mean, top1Worst float64) {
	tg, _ := target.Lookup("sm_90")
	type group struct{ op, shape string }
	var order []group
	by := map[group][]measured{}
	for _, r := range rows {
		g := group{r.op, r.shape}
		if _, ok := by[g]; !ok {
			order = append(order, g)
		}
		by[g] = append(by[g], r)
	}
	sum, worst := 0.0, 0.0
	for _, g := range order {
		op, err := ops.Lookup(g.op)
		if err != nil {
			t.Fatal(err)
		}
		var plans []*ops.Plan
		at := map[*ops.Plan]float64{}
		best := math.Inf(1)
		for _, m := range by[g] {
			p, err := op.NewPlan(tg, parseShape(t, g.shape), nil, m.sched)
			if err != nil {
				t.Fatalf("%s %s %v: %v", g.op, g.shape, m.sched, err)
			}
			plans = append(plans, p)
			at[p] = m.us
			best = math.Min(best, m.us)
		}
		top := Rank(plans)[0]
		r := at[top] / best
		sum += r
		worst = math.Max(worst, r)
		t.Logf("%s %s: model's top-1 %v measured %.1f µs (predicted %.1f), best measured %.1f µs: ×%.2f",
			g.op, g.shape, top.Schedule, at[top], us(Predict(top).Time), best, r)
	}
	mean := sum / float64(len(order))
	t.Logf("top-1 over best: mean ×%.3f, worst ×%.3f over %d (op, shape)", mean, worst, len(order))
	if mean > top1Mean || worst > top1Worst {
		t.Errorf("the model's top-1 is ×%.3f of the best on average, ×%.3f at worst; stated: ×%.2f, ×%.2f", mean, worst, top1Mean, top1Worst)
	}
}

// TestFit searches the latency, instruction cost and register fit that fit
// the H200's tune runs best (FP8GEN_COST_FIT=1; a tool for setting the target's facts).
func TestFit(t *testing.T) {
	if os.Getenv("FP8GEN_COST_FIT") == "" {
		t.Skip("FP8GEN_COST_FIT not set")
	}
	base, _ := target.Lookup("sm_90")
	rows := loadRuns(t)
	for _, lat := range []int{800, 1000, 1200, 1400} {
		for _, ins := range []float64{0, 0.25, 0.5, 1} {
			for _, fit := range []float64{0.6, 0.7, 0.8, 0.9, 1} {
				tg := *base
				tg.MemLatencyNS, tg.InstrNS, tg.RegFit = lat, ins, fit
				var sq float64
				worst, sum := 0.0, 0.0
				type grp struct{ op, shape string }
				best, top, topP := map[grp]float64{}, map[grp]float64{}, map[grp]float64{}
				for _, r := range rows {
					op, _ := ops.Lookup(r.op)
					p, err := op.NewPlan(&tg, parseShape(t, r.shape), nil, r.sched)
					if err != nil {
						t.Fatal(err)
					}
					pr := us(Predict(p).Time)
					d := math.Log(pr / r.us)
					sq += d * d
					g := grp{r.op, r.shape}
					if b, ok := best[g]; !ok || r.us < b {
						best[g] = r.us
					}
					if tp, ok := topP[g]; !ok || pr < tp {
						topP[g], top[g] = pr, r.us
					}
				}
				for g, b := range best {
					worst = math.Max(worst, top[g]/b)
					sum += top[g] / b
				}
				fmt.Printf("latency %d instr %.2f regfit %.2f: rms log error %.3f, top-1/best mean %.3f worst %.3f\n", lat, ins, fit, math.Sqrt(sq/float64(len(rows))), sum/float64(len(best)), worst)
			}
		}
	}
}

func TestResident(t *testing.T) {
	tg, _ := target.Lookup("sm_90")
	for _, c := range []struct {
		threads, regs, lds, want int
		why                      string
	}{
		{128, 64, 0, 8, "registers"}, // 65536 / (64 · 128)
		{128, 60, 0, 8, "registers"}, // allocated in 8s: as 64
		{128, 32, 0, 16, "waves"},    // 64 waves of 32 lanes / 4 waves
		{32, 16, 0, 32, "block slots"},
		{128, 16, 100 << 10, 2, "LDS"}, // 228 KiB / 100 KiB
		{1024, 255, 0, 1, "registers"}, // fewer than one fits: still one
	} {
		n, why := resident(tg, c.threads, c.regs, c.lds)
		if n != c.want || why != c.why {
			t.Errorf("%d threads, %d regs, %d B LDS: %d a CU (%s); want %d (%s)", c.threads, c.regs, c.lds, n, why, c.want, c.why)
		}
	}
}

// The second read of x by colwise_cast's cast kernel comes from L2 when x
// fits in half of it, and from memory when it does not.
func TestSecondReadFromL2(t *testing.T) {
	tg, _ := target.Lookup("sm_90")
	for _, c := range []struct {
		m, k   int
		second bool // whether the cast kernel pays for x again
	}{{2048, 2048, false}, {8192, 8192, true}} {
		p, err := ops.Colwise.NewPlan(tg, ops.Shape{"M": c.m, "K": c.k}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		e := Predict(p)
		if len(e.Kernels) != 2 {
			t.Fatalf("%d kernels; want 2", len(e.Kernels))
		}
		x := int64(2 * c.m * c.k)
		out := int64(c.m*c.k + 4*c.k) // qt and inv_scale
		amax := int64(4 * c.k)        // the amax kernel's atomics; the cast reads them back from L2
		want := out
		if c.second {
			want += x
		}
		if got := e.Kernels[1].Bytes; got != want {
			t.Errorf("%d×%d: the cast kernel moves %d bytes; want %d", c.m, c.k, got, want)
		}
		// On sm_90 the default amax (KEEP=2) reads x in two loops, the
		// rows above the kept band once: x once all the same.
		if got := e.Kernels[0].Bytes; got != x+amax {
			t.Errorf("%d×%d: the amax kernel moves %d bytes; want %d", c.m, c.k, got, x+amax)
		}
	}
}

// A grid one program past whole waves takes a second wave: the model's
// time for it is about twice that of the grid of whole waves.
func TestTail(t *testing.T) {
	tg, _ := target.Lookup("sm_90")
	op := ops.Rowwise
	p, err := op.NewPlan(tg, ops.Shape{"M": 4096, "K": 4096}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	k := Predict(p).Kernels[0]
	full := k.Resident * tg.CUs // programs in one wave
	at := func(programs int) Kernel {
		q, err := op.NewPlan(tg, ops.Shape{"M": programs * max(1, 4096/k.Programs), "K": 4096}, nil, p.Schedule)
		if err != nil {
			t.Fatal(err)
		}
		return Predict(q).Kernels[0]
	}
	a, b := at(full), at(full+1)
	if a.Waves != 1 || b.Waves != 2 {
		t.Fatalf("waves %d and %d at %d and %d programs; want 1 and 2", a.Waves, b.Waves, a.Programs, b.Programs)
	}
	if r := float64(b.Time-time.Duration(tg.LaunchNS)) / float64(a.Time-time.Duration(tg.LaunchNS)); r < 1.9 || r > 2.1 {
		t.Errorf("one program past a full wave: ×%.2f the time; want about ×2", r)
	}
}
