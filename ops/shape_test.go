package ops

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/fp8gen/fp8gen/fp8"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/schedule"
	"github.com/fp8gen/fp8gen/target"
)

// castNames are the ops of sizes M and K these tests use.
var castNames = []string{Rowwise.Name, Tensorwise.Name, Colwise.Name}

func mustTarget(t *testing.T, name string) *target.Target {
	t.Helper()
	tg, err := target.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

func TestShapesAccepted(t *testing.T) {
	sm := mustTarget(t, "sm_90")
	for _, name := range castNames {
		op, _ := Lookup(name)
		for _, sh := range []Shape{{"M": 1, "K": 1}, {"M": 5, "K": 33}, {"M": 65536, "K": 32767}, {"M": 70000, "K": 70000}} {
			for _, o := range optionSets {
				if _, err := op.NewCall(sm, sh, o); err != nil {
					t.Errorf("%s %v %v: %v", name, sh, o, err)
				}
			}
		}
	}
}

func TestShapeErrors(t *testing.T) {
	sm := mustTarget(t, "sm_90")
	cases := []struct {
		name string
		sh   Shape
		want []string // every string must appear in the error
	}{
		{"zero M", Shape{"M": 0, "K": 4}, []string{"M=0", "positive"}},
		{"zero K", Shape{"M": 4, "K": 0}, []string{"K=0", "positive"}},
		{"negative M", Shape{"M": -3, "K": 4}, []string{"M=-3", "positive"}},
		{"negative K", Shape{"M": 4, "K": -1}, []string{"K=-1", "positive"}},
		{"missing K", Shape{"M": 4}, []string{"K", "missing"}},
		{"missing M", Shape{"K": 4}, []string{"M", "missing"}},
		{"empty", Shape{}, []string{"missing"}},
		{"unknown N", Shape{"M": 4, "K": 4, "N": 2}, []string{"unknown size N"}},
		{"2^64 elements", Shape{"M": 1 << 32, "K": 1 << 32}, []string{"more than 70368744177664"}},
		{"2^64 elements, the other way", Shape{"M": 1 << 62, "K": 4}, []string{"more than"}},
	}
	for _, name := range castNames {
		op, _ := Lookup(name)
		for _, c := range cases {
			_, err := op.NewCall(sm, c.sh, nil)
			if err == nil {
				t.Errorf("%s %s (%v): no error", name, c.name, c.sh)
				continue
			}
			for _, w := range append(c.want, name) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s %s (%v): error %q does not mention %q", name, c.name, c.sh, err, w)
				}
			}
		}
	}
	// NewPlan refuses what NewCall refuses.
	if _, err := Rowwise.NewPlan(sm, Shape{"M": 0, "K": 4}, nil, nil); err == nil || !strings.Contains(err.Error(), "M=0") {
		t.Errorf("NewPlan M=0: error %v, want one naming M=0", err)
	}
}

func TestOptionErrors(t *testing.T) {
	sm := mustTarget(t, "sm_90")
	for _, tt := range []struct {
		o    Options
		want string
	}{
		{Options{"in": "i32"}, "rowwise_cast: option in=i32: want one of bf16, f32"},
		{Options{"fp8": "e3m4"}, "option fp8=e3m4: want one of e4m3, e5m2"},
		{Options{"pow2": "yes"}, "option pow2=yes: want one of false, true"},
		{Options{"eps": "1"}, "unknown option eps (options: in, fp8, pow2)"},
	} {
		if _, err := Rowwise.NewCall(sm, Shape{"M": 2, "K": 2}, tt.o); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v; want %q", tt.o, err, tt.want)
		}
	}
	c, err := Rowwise.NewCall(mustTarget(t, "gfx942"), Shape{"M": 2, "K": 2}, Options{"fp8": "e5m2"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Format != fp8.E5M2FNUZ || c.Options["in"] != "bf16" || c.DType("x") != ir.BF16 || c.DType("q") != ir.FP8(fp8.E5M2FNUZ) {
		t.Errorf("gfx942 e5m2 call: format %v, options %v, x %v", c.Format, c.Options, c.DType("x"))
	}
}

func TestOverrides(t *testing.T) {
	gfx := mustTarget(t, "gfx942")
	sh := Shape{"M": 64, "K": 256}
	// A point every kernel's resources refuse lists each candidate with
	// its reason: here the one, merged override.
	_, err := Colwise.NewPlan(gfx, sh, nil, schedule.Params{"WARPS": 16, "BLOCK_M": 4, "BLOCK_K": 4})
	if err != nil && !strings.Contains(err.Error(), "no feasible schedule") {
		t.Errorf("a merged override: %v", err)
	}
	// A feasible override is used as given for every kernel.
	p, err := Tensorwise.NewPlan(mustTarget(t, "sm_90"), sh, nil, schedule.Params{"WARPS": 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range p.Steps {
		if p.Schedule["WARPS"] != 4 || s.Resources.Threads != 4*32 {
			t.Errorf("%s: schedule %v threads %d, want WARPS=4 and 128 threads", s.Func.Name, p.Schedule, s.Resources.Threads)
		}
	}
}

// Without an override, NewPlan takes the first feasible candidate and
// records the rejected ones before it with their reasons.
func TestNewPlanRecordsCandidates(t *testing.T) {
	for _, tn := range target.Names() {
		tg := mustTarget(t, tn)
		for _, name := range Names() {
			op, _ := Lookup(name)
			if op.RunsOn(tg) != nil {
				continue // refused (TestOCPOnly)
			}
			for _, sh := range []Shape{op.Tests.Odd, op.Example} {
				p, err := op.NewPlan(tg, sh, nil, nil)
				if err != nil {
					t.Fatalf("%s %s %v: %v", tn, name, sh, err)
				}
				ks, err := p.Call.Kernels()
				if err != nil {
					t.Fatal(err)
				}
				if len(p.Steps) != len(ks) || len(ks) == 0 {
					t.Fatalf("%s %s: %d steps for %d kernels", tn, name, len(p.Steps), len(ks))
				}
				for i, s := range p.Steps {
					if s.Kernel != ks[i] {
						t.Errorf("%s %s: step %d runs %s, want %s", tn, name, i, s.Kernel.Name, ks[i].Name)
					}
				}
				last := p.Candidates[len(p.Candidates)-1]
				if last.Reject != nil || last.Params.String() != p.Schedule.String() {
					t.Errorf("%s %s: last candidate %v (%v), chosen %v", tn, name, last.Params, last.Reject, p.Schedule)
				}
				for _, c := range p.Candidates[:len(p.Candidates)-1] {
					if c.Reject == nil {
						t.Errorf("%s %s: feasible candidate %v before the chosen %v", tn, name, c.Params, p.Schedule)
					}
				}
				for _, s := range p.Steps {
					if err := schedule.Check(s.Resources, tg); err != nil {
						t.Errorf("%s %s: chosen schedule fails the check: %v", tn, s.Func.Name, err)
					}
				}
			}
		}
	}
	// Rows past 16384 take the two-pass schedule; shorter ones a one-pass one.
	p, err := Rowwise.NewPlan(mustTarget(t, "sm_90"), Shape{"M": 8, "K": 40000}, nil, nil)
	if err != nil || p.Schedule["LOOP"] != 1 {
		t.Errorf("K=40000: schedule %v, %v; want LOOP=1", p.Schedule, err)
	}
}

func TestDivisors(t *testing.T) {
	got := Divisors(Shape{"A": 1, "B": 2, "C": 12, "D": 16, "E": 4096, "F": 33, "G": 48, "H": 8, "I": 24})
	want := map[string]int{"A": 1, "B": 2, "C": 4, "D": 16, "E": 16, "F": 1, "G": 16, "H": 8, "I": 8}
	if len(got) != len(want) {
		t.Errorf("Divisors: %v, want %v", got, want)
	}
	for n, w := range want {
		if got[n] != w {
			t.Errorf("Divisors[%s]: %d, want %d", n, got[n], w)
		}
	}
	for v := 1; v <= 200; v++ {
		d := Divisors(Shape{"K": v})["K"]
		if v%d != 0 || d > 16 || d&(d-1) != 0 || (d < 16 && v%(2*d) == 0) {
			t.Errorf("Divisors(K=%d) = %d", v, d)
		}
	}
}

func call(t *testing.T, op *Op, tn string, sh Shape, o Options) *Call {
	t.Helper()
	c, err := op.NewCall(mustTarget(t, tn), sh, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestInputsDeterministic(t *testing.T) {
	sh := Shape{"M": 9, "K": 37}
	for _, name := range castNames {
		op, _ := Lookup(name)
		for _, o := range optionSets {
			c := call(t, op, "sm_90", sh, o)
			for _, adv := range []bool{false, true} {
				a, b, d := Inputs(c, 42, adv), Inputs(c, 42, adv), Inputs(c, 43, adv)
				x := a["x"]
				if x == nil || len(a) != 1 {
					t.Fatalf("%s: inputs %v, want x alone", name, a)
				}
				if want := 9 * 37 * c.DType("x").Bytes(); len(x.Data) != want || x.Shape[0] != 9 || x.Shape[1] != 37 {
					t.Errorf("%s: x is %v %v with %d bytes, want [9 37] with %d", name, x.DType, x.Shape, len(x.Data), want)
				}
				if !bytes.Equal(x.Data, b["x"].Data) {
					t.Errorf("%s %v adv=%v: same seed, different inputs", name, o, adv)
				}
				if bytes.Equal(x.Data, d["x"].Data) {
					t.Errorf("%s %v adv=%v: seeds 42 and 43 give the same inputs", name, o, adv)
				}
			}
		}
	}
	// Plain inputs are finite normals of spread about 3.
	x := Inputs(call(t, Rowwise, "sm_90", Shape{"M": 64, "K": 64}, Options{"in": "f32"}), 1, false)["x"].Floats()
	var sum, sq float64
	for _, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("plain input holds %v", v)
		}
		sum += float64(v)
		sq += float64(v) * float64(v)
	}
	n := float64(len(x))
	if sd := math.Sqrt(sq/n - (sum/n)*(sum/n)); sd < 2.5 || sd > 3.5 {
		t.Errorf("plain inputs: standard deviation %.3g, want about 3", sd)
	}
}

// scan classifies the values of an f32 or bf16 tensor.
type scan struct{ nan, snan, posInf, negInf, sub, zero, pastMax bool }

func scanTensor(x *Tensor, f *fp8.Format) scan {
	var got scan
	for i := 0; i < x.Elems(); i++ {
		bits := uint32(x.Bits(i))
		if x.DType.K == ir.KBF16 {
			bits <<= 16
		}
		v := math.Float32frombits(bits)
		exp, man := bits>>23&0xff, bits&0x7fffff
		switch {
		case exp == 0xff && man != 0:
			got.nan = true
			if man&(1<<22) == 0 {
				got.snan = true
			}
		case math.IsInf(float64(v), 1):
			got.posInf = true
		case math.IsInf(float64(v), -1):
			got.negInf = true
		case exp == 0 && man != 0:
			got.sub = true
		case bits&^(1<<31) == 0:
			got.zero = true
		case math.Abs(float64(v)) > float64(f.Max):
			got.pastMax = true
		}
	}
	return got
}

func TestInputsAdversarial(t *testing.T) {
	sh := Shape{"M": 64, "K": 256}
	for _, tn := range target.Names() {
		for _, in := range []string{"f32", "bf16"} {
			t.Run(tn+"/"+in, func(t *testing.T) {
				c := call(t, Rowwise, tn, sh, Options{"in": in})
				f := c.Format
				x := Inputs(c, 5, true)["x"]
				got := scanTensor(x, f)
				for what, ok := range map[string]bool{"NaN": got.nan, "+Inf": got.posInf, "-Inf": got.negInf, "subnormal": got.sub, "zero": got.zero, "value past the format max": got.pastMax, "signaling NaN": got.snan} {
					if !ok {
						t.Errorf("adversarial %v inputs hold no %s", in, what)
					}
				}
				// Whole rows: row 1 zeros, row 2 NaN (but for columns 1-3,
				// which column fills overwrite).
				vals := x.Floats()
				for j := 4; j < sh["K"]; j++ {
					if v := vals[1*sh["K"]+j]; v != 0 {
						t.Fatalf("row 1 col %d = %v, want 0", j, v)
					}
					if v := vals[2*sh["K"]+j]; !math.IsNaN(float64(v)) {
						t.Fatalf("row 2 col %d = %v, want NaN", j, v)
					}
				}
				// Plain inputs hold none of these.
				plain := scanTensor(Inputs(c, 5, false)["x"], f)
				if plain.nan || plain.posInf || plain.negInf || plain.sub || plain.pastMax {
					t.Errorf("plain %v inputs hold specials: %+v", in, plain)
				}
			})
		}
	}
	// The specials hold signaling NaNs (one whose top half is the bf16
	// signaling NaN 0x7f81), f32 subnormals, a bf16 subnormal, and a value
	// just past the max.
	sp := Specials(fp8.E4M3FNUZ)
	var snanBF16, subF32, subBF16, justPast bool
	for _, v := range sp {
		b := math.Float32bits(v)
		if h := b >> 16; h&0x7f80 == 0x7f80 && h&0x7f != 0 && h&0x40 == 0 {
			snanBF16 = true
		}
		if b&0x7f800000 == 0 && b&0x7fffff != 0 {
			subF32 = true
			if h := ir.F32ToBF16(v); h&0x7f80 == 0 && h&0x7f != 0 {
				subBF16 = true
			}
		}
		if v > 240 && v < 241 {
			justPast = true
		}
	}
	if !snanBF16 || !subF32 || !subBF16 || !justPast {
		t.Errorf("Specials(e4m3fnuz) %v: bf16 signaling NaN %v, f32 subnormal %v, bf16 subnormal %v, just past 240 %v", sp, snanBF16, subF32, subBF16, justPast)
	}
}

// Small adversarial inputs — the shapes tests and `fp8gen run --adversarial`
// use — should still hold every kind of special value.
func TestInputsAdversarialSmall(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		for _, in := range []string{"f32", "bf16"} {
			c := call(t, Rowwise, "sm_90", Shape{"M": 5, "K": 33}, Options{"in": in})
			got := scanTensor(Inputs(c, seed, true)["x"], c.Format)
			if !got.posInf || !got.negInf || !got.sub || !got.nan || !got.snan {
				t.Errorf("seed %d %v: %+v", seed, in, got)
			}
		}
	}
}

// A shape whose tensors fit 32-bit indexing but whose tiles' padding does
// not (the masked-off rows of the last tile times a long row) indexes in
// 64 bits: grouped_colwise_cast at T=71580, K=30000 has 2.1475·10^9
// elements, below the element bound, yet a 128-row tile past the last
// row reaches past 2^31.
func TestIndexWidthFromTiles(t *testing.T) {
	tg, _ := target.Lookup("sm_90")
	sh := Shape{"T": 71580, "K": 30000, "E": 8}
	c, err := GroupedColwise.NewCall(tg, sh, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Index != ir.I32 {
		t.Fatalf("the element count alone gives %v; the test needs i32 there", c.Index)
	}
	p, err := GroupedColwise.NewPlan(tg, sh, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Index != ir.I64 {
		t.Errorf("planned with %v indexing; the padded tiles need i64", p.Index)
	}
	// A small shape keeps 32 bits.
	if p, _ := GroupedColwise.NewPlan(tg, Shape{"T": 7168, "K": 2048, "E": 8}, nil, nil); p.Index != ir.I32 {
		t.Errorf("a small shape planned with %v", p.Index)
	}
}

// A tensor within one tile of 2^31 elements indexes in 64 bits by its
// element count alone: a loader that checks only an export's max_elements
// (2^31 minus one tile) must never run a 32-bit kernel whose last tile
// reaches past 2^31. rowwise_cast at M=134217727, K=16 has 2^31 − 16
// elements; in 32 bits its last tile's padding rows would overflow.
func TestIndexWidthWithinATileOf2to31(t *testing.T) {
	tg, _ := target.Lookup("sm_90")
	sh := Shape{"M": 134217727, "K": 16}
	if n := int64(sh["M"]) * int64(sh["K"]); n <= math.MaxInt32-ir.MaxTileElems || n > math.MaxInt32 {
		t.Fatalf("the shape has %d elements; the test needs one within a tile of 2^31", n)
	}
	c, err := Rowwise.NewCall(tg, sh, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Index != ir.I64 {
		t.Errorf("%d elements, within a tile of 2^31: index %v; want i64", sh["M"]*sh["K"], c.Index)
	}
	p, err := Rowwise.NewPlan(tg, sh, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := p.Call.With(p.Schedule)
	d.Index = ir.I32
	if wide, err := d.IndexOverflows(); err != nil || !wide {
		t.Errorf("forced to 32 bits at %v: IndexOverflows = %v, %v; the last tile should reach past 2^31", sh, wide, err)
	}
}
