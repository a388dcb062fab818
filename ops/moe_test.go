package ops

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fp8gen/fp8gen/interp"
	"github.com/fp8gen/fp8gen/schedule"
	"github.com/fp8gen/fp8gen/target"
)

// setOffsets replaces a call's offsets input.
func setOffsets(in map[string]*Tensor, offs []int) {
	for g, v := range offs {
		in["offsets"].SetBits(g, uint64(int64(v)))
	}
}

// runAll runs every step in the interpreter, without the host's input
// checks (as when the offsets come from a kernel on the device), and
// returns the outputs and the status the kernels report.
func runAll(t *testing.T, p *Plan, in map[string]*Tensor) (map[string]*Tensor, error) {
	t.Helper()
	all, out := p.WithOutputs(in)
	for _, s := range p.Steps {
		args, err := s.Args(p.Shape, all)
		if err != nil {
			t.Fatal(err)
		}
		if err := interp.Launch(s.Func, s.Grid, args); err != nil {
			t.Fatalf("%s: %v", s.Func.Name, err) // out of bounds, an LDS race, ...
		}
	}
	return out, p.CheckStatus(out)
}

// Every adversarial offsets pattern (groups at tile edges, one group with
// every row, one-row groups) and hand-made offsets at each tile boundary
// ±1, at schedules with one and with several programs per group.
func TestGroupedOffsetsPatterns(t *testing.T) {
	tg, _ := target.Lookup("gfx942")
	sh := Shape{"T": 700, "K": 40, "E": 6}
	// The default (ORDER=1, PREFETCH=1), then each way with and without
	// those two (what a schedule leaves out is the default's).
	scheds := []schedule.Params{
		nil,
		{"BLOCK_T": 64, "BLOCK_K": 32, "WARPS": 4, "SPLIT": 1, "ORDER": 0, "PREFETCH": 0},
		{"BLOCK_T": 64, "BLOCK_K": 32, "WARPS": 4, "SPLIT": 2},
		{"BLOCK_T": 32, "BLOCK_K": 32, "WARPS": 4, "SPLIT": 4, "ORDER": 0, "PREFETCH": 0},
		{"BLOCK_T": 16, "BLOCK_K": 64, "WARPS": 2, "SPLIT": 8},
		{"BLOCK_T": 32, "BLOCK_K": 32, "WARPS": 4, "SPLIT": 1, "FUSED": 1, "ORDER": 0},
		{"BLOCK_T": 32, "BLOCK_K": 32, "WARPS": 4, "SPLIT": 1, "FUSED": 1, "ORDER": 0, "PREFETCH": 0},
		// By rows: ranges of one tile and of several, more ranges than
		// tiles, and one range for every row.
		{"BLOCK_T": 16, "BLOCK_K": 32, "WARPS": 4, "SPLIT": 64, "BY_ROWS": 1, "BLOCK_E": 8, "ORDER": 0},
		{"BLOCK_T": 32, "BLOCK_K": 32, "WARPS": 4, "SPLIT": 4, "BY_ROWS": 1, "BLOCK_E": 8, "ORDER": 0, "PREFETCH": 0},
		{"BLOCK_T": 8, "BLOCK_K": 64, "WARPS": 2, "SPLIT": 1, "BY_ROWS": 1, "BLOCK_E": 8, "ORDER": 0},
		// ORDER=1 in the fused and by-rows kernels.
		{"BLOCK_T": 32, "BLOCK_K": 32, "WARPS": 4, "SPLIT": 1, "FUSED": 1},
		{"BLOCK_T": 16, "BLOCK_K": 32, "WARPS": 4, "SPLIT": 64, "BY_ROWS": 1, "BLOCK_E": 8},
	}
	for _, s := range scheds {
		p, err := GroupedColwise.NewPlan(tg, sh, nil, s)
		if err != nil {
			t.Fatal(err)
		}
		for pattern := patternEdges; pattern <= patternRealistic; pattern++ {
			for seed := uint64(1); seed <= 3; seed++ {
				t.Run(fmt.Sprintf("%v/pattern=%d/seed=%d", p.Schedule, pattern, seed), func(t *testing.T) {
					in := Inputs(p.Call, seed, true)
					r := rand.New(rand.NewPCG(seed, 99))
					offs := 0
					for g, n := range groupSizes(pattern, 700, 6, r) {
						offs += n
						in["offsets"].SetBits(g, uint64(offs))
					}
					if err := p.CheckInputs(in); err != nil {
						t.Fatalf("generated offsets %v: %v", in["offsets"].Ints(), err)
					}
					out, err := runAll(t, p, in)
					if err != nil {
						t.Fatal(err)
					}
					compare(t, GroupedColwise.Reference(p.Call, in), out)
				})
			}
		}
		bt := p.Knob(knob.BlockT)
		for _, offs := range [][]int{
			{bt - 1, bt, bt + 1, 2*bt - 1, 3 * bt, 700},
			{0, 0, bt + 1, bt + 1, 700 - 1, 700},
			{1, 2*bt + 1, 2*bt + 1, 4*bt - 1, 4 * bt, 700},
			{700, 700, 700, 700, 700, 700},
			{0, 0, 0, 0, 0, 700},
		} {
			t.Run(fmt.Sprintf("%v/offsets=%v", p.Schedule, offs), func(t *testing.T) {
				in := Inputs(p.Call, 5, true)
				setOffsets(in, offs)
				out, err := runAll(t, p, in)
				if err != nil {
					t.Fatal(err)
				}
				compare(t, GroupedColwise.Reference(p.Call, in), out)
			})
		}
	}
}

// The host refuses bad offsets before any launch, naming the first bad
// element.
func TestGroupedOffsetsChecked(t *testing.T) {
	tg, _ := target.Lookup("sm_90")
	p, err := GroupedColwise.NewPlan(tg, Shape{"T": 100, "K": 8, "E": 4}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		offs []int
		want string
	}{
		{[]int{10, 5, 50, 100}, "offsets[1] = 5 is less than offsets[0] = 10"},
		{[]int{-1, 5, 50, 100}, "offsets[0] = -1 is negative"},
		{[]int{10, 20, 150, 100}, "offsets[2] = 150 is past T = 100"},
		{[]int{10, 20, 30, 99}, "offsets[3] = 99: the last offset must be T = 100"},
		{[]int{10, 20, 30, 101}, "offsets[3] = 101 is past T = 100"},
	} {
		in := Inputs(p.Call, 1, false)
		setOffsets(in, c.offs)
		err := p.CheckInputs(in)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "grouped_colwise_cast: ") {
			t.Errorf("offsets %v: %v; want %q", c.offs, err, c.want)
		}
	}
}

// On the device path no offsets whatsoever make a kernel touch memory
// outside its tensors (the interpreter checks every access), and the
// status word names the first bad group.
func TestGroupedGarbageOffsets(t *testing.T) {
	tg, _ := target.Lookup("sm_90")
	r := rand.New(rand.NewPCG(5, 6))
	type run struct {
		op *Op
		s  schedule.Params
		o  Options
	}
	var runs []run
	for _, s := range []schedule.Params{nil, {"BLOCK_T": 32, "BLOCK_K": 32, "WARPS": 4, "SPLIT": 4}, {"BLOCK_T": 32, "BLOCK_K": 32, "WARPS": 4, "SPLIT": 4, "ORDER": 0, "PREFETCH": 0},
		{"BLOCK_T": 32, "BLOCK_K": 32, "WARPS": 4, "SPLIT": 1, "FUSED": 1, "ORDER": 0},
		{"BLOCK_T": 32, "BLOCK_K": 32, "WARPS": 4, "SPLIT": 4, "FUSED": 0, "BY_ROWS": 1, "BLOCK_E": 8, "ORDER": 0},
		{"BLOCK_T": 32, "BLOCK_K": 32, "WARPS": 4, "SPLIT": 1, "FUSED": 1}, {"BLOCK_T": 32, "BLOCK_K": 32, "WARPS": 4, "SPLIT": 4, "BY_ROWS": 1, "BLOCK_E": 8}} {
		runs = append(runs, run{GroupedColwise, s, nil})
	}
	for _, s := range []schedule.Params{nil, {"BLOCK_T": 32, "BLOCK_K": 32, "WARPS": 4, "SPLIT": 4, "ORDER": 0, "PREFETCH": 0}} {
		runs = append(runs, run{GroupedRowcol, s, nil})
	}
	for _, o := range []Options{nil, {"scales": "swizzled"}} {
		runs = append(runs, run{GroupedMXCast, nil, o}, run{GroupedMXCast, schedule.Params{"WARPS": 1, "BLOCK_K": 32, "RB": 2, "BLOCK_E": 8}, o})
	}
	for _, ru := range runs {
		p, err := ru.op.NewPlan(tg, Shape{"T": 300, "K": 24, "E": 5}, ru.o, ru.s)
		if err != nil {
			t.Fatal(err)
		}
		fixed := [][]int{
			{10, 20, 30, 40, 299}, // the last short of T
			{-5, 20, 30, 40, 300},
			{10, 20, 15, 40, 300},
			{10, 400, 30, 40, 300},
			{10, 20, 30, 40, 301},
			{0, 0, 0, 0, 300}, // fine
		}
		for i := range 40 + len(fixed) {
			in := Inputs(p.Call, uint64(i), false)
			offs := make([]int, 5)
			if i < len(fixed) {
				copy(offs, fixed[i])
			}
			for g := range offs {
				if i < len(fixed) {
					break
				}
				switch r.IntN(4) {
				case 0:
					offs[g] = r.IntN(301)
				case 1:
					offs[g] = -r.IntN(1 << 30)
				case 2:
					offs[g] = 300 + r.IntN(1<<30)
				default:
					offs[g] = int(int32(r.Uint32()))
				}
			}
			setOffsets(in, offs)
			first := -1
			prev := 0
			for g, v := range offs {
				if v < prev || v > 300 || g == 4 && v != 300 {
					first = g
					break
				}
				prev = v
			}
			_, err := runAll(t, p, in)
			switch {
			case first < 0 && err != nil:
				t.Errorf("good offsets %v: %v", offs, err)
			case first >= 0 && (err == nil || !strings.Contains(err.Error(), fmt.Sprintf("group %d ", first))):
				t.Errorf("offsets %v: status %v; want group %d named", offs, err, first)
			}
			if hostErr := p.CheckInputs(in); (hostErr == nil) != (first < 0) {
				t.Errorf("offsets %v: host check %v, device check %v", offs, hostErr, err)
			}
		}
	}
}

// Sizes of zero are refused by name.
func TestMoESizesZero(t *testing.T) {
	tg, _ := target.Lookup("sm_90")
	for _, c := range []struct {
		op *Op
		sh Shape
	}{
		{GroupedColwise, Shape{"T": 0, "K": 4, "E": 2}},
		{GroupedColwise, Shape{"T": 4, "K": 0, "E": 2}},
		{GroupedColwise, Shape{"T": 4, "K": 4, "E": 0}},
		{ExpertColwise, Shape{"E": 0, "K": 4, "N": 4}},
		{ExpertColwise, Shape{"E": 2, "K": 0, "N": 4}},
	} {
		_, err := c.op.NewCall(tg, c.sh, nil)
		if err == nil || !strings.Contains(err.Error(), "=0 must be positive") {
			t.Errorf("%s %v: %v", c.op.Name, c.sh, err)
		}
	}
}

// Generated offsets are realistic: cumulative, ending at T, with an empty
// group where E ≥ 3.
func TestGroupedOffsetsGenerated(t *testing.T) {
	tg, _ := target.Lookup("sm_90")
	c, err := GroupedColwise.NewCall(tg, Shape{"T": 65536, "K": 8, "E": 8}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for seed := uint64(0); seed < 20; seed++ {
		in := Inputs(c, seed, false)
		if err := c.CheckInputs(in); err != nil {
			t.Fatal(err)
		}
		offs := in["offsets"].Ints()
		empty, prev := 0, int64(0)
		for _, v := range offs {
			if v == prev {
				empty++
			}
			prev = v
		}
		if empty == 0 {
			t.Errorf("seed %d: offsets %v have no empty group", seed, offs)
		}
	}
}

// The transposed expert layout holds the same codes as the plain one, in
// the two-pass kernels and in the fused one.
func TestExpertLayouts(t *testing.T) {
	for _, s := range []schedule.Params{nil, {"BLOCK_K": 32, "BLOCK_N": 16, "WARPS": 4, "SPLIT": 1, "FUSED": 1}} {
		t.Run(fmt.Sprint(s), func(t *testing.T) { expertLayouts(t, s) })
	}
}

func expertLayouts(t *testing.T, s schedule.Params) {
	tg, _ := target.Lookup("gfx950")
	sh := Shape{"E": 3, "K": 70, "N": 50}
	kn, err := ExpertColwise.NewPlan(tg, sh, nil, s)
	if err != nil {
		t.Fatal(err)
	}
	nk, err := ExpertColwise.NewPlan(tg, sh, Options{"layout": "nk"}, s)
	if err != nil {
		t.Fatal(err)
	}
	in := Inputs(kn.Call, 3, true)
	a, _ := runAll(t, kn, in)
	b, _ := runAll(t, nk, in)
	check(t, nk.Call, in, b)
	if _, ok := b["q"]; ok {
		t.Error("layout=nk has a q output")
	}
	for ex := 0; ex < 3; ex++ {
		for i := 0; i < 70; i++ {
			for j := 0; j < 50; j++ {
				if x, y := a["q"].Data[(ex*70+i)*50+j], b["qt"].Data[(ex*50+j)*70+i]; x != y {
					t.Fatalf("expert %d [%d, %d]: q %#x, qt %#x", ex, i, j, x, y)
				}
			}
		}
	}
}
