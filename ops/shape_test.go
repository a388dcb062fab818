package ops

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/fp8gen/fp8gen/fp8"
	"github.com/fp8gen/fp8gen/interp"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/schedule"
	"github.com/fp8gen/fp8gen/target"
)

func mustTarget(t *testing.T, name string) *target.Target {
	t.Helper()
	tg, err := target.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

func TestCheckShapeAccepts(t *testing.T) {
	for _, name := range Names() {
		op, _ := Lookup(name)
		for _, sh := range []Shape{{"M": 1, "K": 1}, {"M": 5, "K": 33}, {"M": 65536, "K": 32767}} {
			for _, o := range []Options{DefaultOptions(), {In: ir.F32, Family: "e5m2"}} {
				if err := op.CheckShape(sh, o); err != nil {
					t.Errorf("%s %v %v: %v", name, sh, o.In, err)
				}
			}
		}
	}
}

func TestCheckShapeErrors(t *testing.T) {
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
		{"2^31 elements", Shape{"M": 1 << 16, "K": 1 << 15}, []string{"x", "2147483648 elements", "32-bit"}},
		{"2^31-1 elements", Shape{"M": 1, "K": math.MaxInt32}, []string{"32-bit"}},
		{"70000^2 elements", Shape{"M": 70000, "K": 70000}, []string{"4900000000 elements", "32-bit"}},
	}
	for _, name := range Names() {
		op, _ := Lookup(name)
		for _, c := range cases {
			for _, o := range []Options{DefaultOptions(), {In: ir.F32, Family: "e4m3"}} {
				err := op.CheckShape(c.sh, o)
				if err == nil {
					t.Errorf("%s %s (%v) %v: no error", name, c.name, c.sh, o.In)
					continue
				}
				for _, w := range c.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s %s (%v): error %q does not mention %q", name, c.name, c.sh, err, w)
					}
				}
				if !strings.Contains(err.Error(), name) {
					t.Errorf("%s %s: error %q does not name the op", name, c.name, err)
				}
			}
		}
	}
	// The input type is checked too.
	if err := Rowwise.CheckShape(Shape{"M": 2, "K": 2}, Options{In: ir.I32, Family: "e4m3"}); err == nil || !strings.Contains(err.Error(), "bf16 or f32") {
		t.Errorf("i32 input: error %v, want one naming bf16 or f32", err)
	}
	// NewPlan refuses what CheckShape refuses.
	if _, err := Rowwise.NewPlan(mustTarget(t, "sm_90"), Shape{"M": 0, "K": 4}, DefaultOptions(), nil); err == nil || !strings.Contains(err.Error(), "M=0") {
		t.Errorf("NewPlan M=0: error %v, want one naming M=0", err)
	}
}

// A shape whose byte count overflows int must not wrap around into an
// accepted one.
func TestCheckShapeOverflow(t *testing.T) {
	for _, sh := range []Shape{{"M": 1 << 32, "K": 1 << 32}, {"M": 1 << 62, "K": 4}} {
		if err := Rowwise.CheckShape(sh, DefaultOptions()); err == nil {
			t.Errorf("%v accepted", sh)
		}
	}
}

// The largest shape CheckShape accepts must still be run whole by the
// kernels' 32-bit index arithmetic.
func TestCheckShapeLimitMatchesKernels(t *testing.T) {
	sh := Shape{"M": 2, "K": 1073741823} // 2^31-2 elements
	if err := Tensorwise.CheckShape(sh, DefaultOptions()); err != nil {
		return // a tighter limit is also a fix
	}
	p, err := Tensorwise.NewPlan(mustTarget(t, "sm_90"), sh, DefaultOptions(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// One tile of x holding 5.0 (bf16 0x40a0): a kernel that walks x either
	// sees it or runs past this short buffer; one that skips its loop
	// leaves amax at 0 without complaint.
	s := p.Steps[0]
	x := make([]byte, 2*s.Params.Get("BLOCK"))
	for i := 0; i < len(x); i += 2 {
		binary.LittleEndian.PutUint16(x[i:], 0x40a0)
	}
	amax := make([]byte, 4)
	args, err := s.Args(sh, map[string]*Tensor{"x": {Data: x}, "amax": {Data: amax}})
	if err != nil {
		t.Fatal(err)
	}
	err = interp.Launch(s.Func, s.Grid, args)
	if got := math.Float32frombits(binary.LittleEndian.Uint32(amax)); err == nil && got == 0 {
		t.Errorf("%s at %v: the kernel read nothing (amax 0, no out-of-bounds access)", s.Func.Name, sh)
	}
}

func TestNewPlanInfeasibleOverride(t *testing.T) {
	gfx := mustTarget(t, "gfx942")
	sh := Shape{"M": 64, "K": 256}
	_, err := Rowwise.NewPlan(gfx, sh, DefaultOptions(), schedule.Params{"WARPS": 64})
	if err == nil {
		t.Fatal("WARPS=64 on gfx942: no error")
	}
	msg := err.Error()
	for _, w := range []string{"rowwise_cast", "gfx942", "no feasible schedule", "WARPS=64", "4096 threads", "1024"} {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not mention %q", msg, w)
		}
	}

	// A kernel whose every candidate is rejected lists each with its reason.
	_, err = Colwise.NewPlan(gfx, sh, DefaultOptions(), schedule.Params{"WARPS": 32})
	if err == nil {
		t.Fatal("colwise WARPS=32 on gfx942: no error")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) < 2 {
		t.Fatalf("error %q lists no candidates", err)
	}
	for _, l := range lines[1:] {
		params, reason, ok := strings.Cut(strings.TrimSpace(l), ": ")
		if !ok || !strings.Contains(params, "WARPS=32") || reason == "" || reason == "<nil>" {
			t.Errorf("candidate line %q: want PARAMS: REASON", l)
		}
	}

	// Unknown knobs are named with the kernel's knobs.
	_, err = Rowwise.NewPlan(gfx, sh, DefaultOptions(), schedule.Params{"NOPE": 1})
	if err == nil || !strings.Contains(err.Error(), "NOPE") || !strings.Contains(err.Error(), "WARPS") {
		t.Errorf("NOPE=1: error %v, want one naming NOPE and the known knobs", err)
	}

	// A feasible override is used as given for every kernel.
	p, err := Tensorwise.NewPlan(mustTarget(t, "sm_90"), sh, DefaultOptions(), schedule.Params{"WARPS": 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range p.Steps {
		if s.Params["WARPS"] != 4 || s.Resources.Threads != 4*32 {
			t.Errorf("%s: params %v threads %d, want WARPS=4 and 128 threads", s.Func.Name, s.Params, s.Resources.Threads)
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
			p, err := op.NewPlan(tg, Shape{"M": 40, "K": 72}, DefaultOptions(), nil)
			if err != nil {
				t.Fatalf("%s %s: %v", tn, name, err)
			}
			if len(p.Steps) != len(op.Kernels) {
				t.Fatalf("%s %s: %d steps for %d kernels", tn, name, len(p.Steps), len(op.Kernels))
			}
			for _, s := range p.Steps {
				last := s.Candidates[len(s.Candidates)-1]
				if last.Reject != nil || last.Params.String() != s.Params.String() {
					t.Errorf("%s %s: last candidate %v (%v), chosen %v", tn, s.Func.Name, last.Params, last.Reject, s.Params)
				}
				for _, c := range s.Candidates[:len(s.Candidates)-1] {
					if c.Reject == nil {
						t.Errorf("%s %s: feasible candidate %v before the chosen %v", tn, s.Func.Name, c.Params, s.Params)
					}
				}
				if err := schedule.Check(s.Resources, tg); err != nil {
					t.Errorf("%s %s: chosen schedule fails the check: %v", tn, s.Func.Name, err)
				}
			}
		}
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
	// The definition, for every size up to 200: the largest power of two
	// up to 16 that divides it.
	for v := 1; v <= 200; v++ {
		d := Divisors(Shape{"K": v})["K"]
		if v%d != 0 || d > 16 || d&(d-1) != 0 || (d < 16 && v%(2*d) == 0) {
			t.Errorf("Divisors(K=%d) = %d", v, d)
		}
	}
	if d := Divisors(Shape{}); len(d) != 0 {
		t.Errorf("Divisors of an empty shape: %v", d)
	}
}

func TestInputsDeterministic(t *testing.T) {
	sh := Shape{"M": 9, "K": 37}
	for _, name := range Names() {
		op, _ := Lookup(name)
		for _, o := range []Options{DefaultOptions(), {In: ir.F32, Family: "e4m3"}} {
			for _, adv := range []bool{false, true} {
				a := Inputs(op, sh, o, fp8.E4M3FN, 42, adv)
				b := Inputs(op, sh, o, fp8.E4M3FN, 42, adv)
				c := Inputs(op, sh, o, fp8.E4M3FN, 43, adv)
				x := a["x"]
				if x == nil || len(a) != 1 {
					t.Fatalf("%s: inputs %v, want x alone", name, a)
				}
				if want := sh["M"] * sh["K"] * o.In.Bytes(); len(x.Data) != want || x.DType != o.In || x.Shape[0] != 9 || x.Shape[1] != 37 {
					t.Errorf("%s: x is %v %v with %d bytes, want %v [9 37] with %d", name, x.DType, x.Shape, len(x.Data), o.In, want)
				}
				if !bytes.Equal(x.Data, b["x"].Data) {
					t.Errorf("%s %v adv=%v: same seed, different inputs", name, o.In, adv)
				}
				if bytes.Equal(x.Data, c["x"].Data) {
					t.Errorf("%s %v adv=%v: seeds 42 and 43 give the same inputs", name, o.In, adv)
				}
			}
		}
	}
	// Plain inputs are finite normals of spread about 3.
	x := Floats(Inputs(Rowwise, Shape{"M": 64, "K": 64}, Options{In: ir.F32, Family: "e4m3"}, fp8.E4M3FN, 1, false)["x"])
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
	for i := 0; i < len(x.Data)/x.DType.Bytes(); i++ {
		var bits uint32
		if x.DType.K == ir.KBF16 {
			bits = uint32(binary.LittleEndian.Uint16(x.Data[2*i:])) << 16
		} else {
			bits = binary.LittleEndian.Uint32(x.Data[4*i:])
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
		f := mustTarget(t, tn).E4M3
		for _, in := range []ir.DType{ir.F32, ir.BF16} {
			t.Run(tn+"/"+in.String(), func(t *testing.T) {
				x := Inputs(Rowwise, sh, Options{In: in, Family: "e4m3"}, f, 5, true)["x"]
				got := scanTensor(x, f)
				for what, ok := range map[string]bool{"NaN": got.nan, "+Inf": got.posInf, "-Inf": got.negInf, "subnormal": got.sub, "zero": got.zero, "value past the format max": got.pastMax} {
					if !ok {
						t.Errorf("adversarial %v inputs hold no %s", in, what)
					}
				}
				if in == ir.F32 && !got.snan {
					t.Errorf("adversarial f32 inputs hold no signaling NaN")
				}
				// Whole rows: row 1 zeros, row 2 NaN (but for columns 1-3,
				// which column fills overwrite).
				vals := Floats(x)
				for j := 4; j < sh["K"]; j++ {
					if v := vals[1*sh["K"]+j]; v != 0 {
						t.Fatalf("row 1 col %d = %v, want 0", j, v)
					}
					if v := vals[2*sh["K"]+j]; !math.IsNaN(float64(v)) {
						t.Fatalf("row 2 col %d = %v, want NaN", j, v)
					}
				}
				// Plain inputs hold none of these.
				plain := scanTensor(Inputs(Rowwise, sh, Options{In: in, Family: "e4m3"}, f, 5, false)["x"], f)
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

func TestInputsAdversarialBF16SignalingNaN(t *testing.T) {
	f := fp8.E4M3FN
	x := Inputs(Rowwise, Shape{"M": 64, "K": 256}, DefaultOptions(), f, 5, true)["x"]
	if !scanTensor(x, f).snan {
		t.Error("adversarial bf16 inputs hold no signaling NaN")
	}
}

// Small adversarial inputs — the shapes tests and `fp8gen run --adversarial`
// use — should still hold every kind of special value.
func TestInputsAdversarialSmall(t *testing.T) {
	f := fp8.E4M3FN
	for seed := uint64(1); seed <= 20; seed++ {
		for _, in := range []ir.DType{ir.F32, ir.BF16} {
			got := scanTensor(Inputs(Rowwise, Shape{"M": 5, "K": 33}, Options{In: in, Family: "e4m3"}, f, seed, true)["x"], f)
			if !got.posInf || !got.negInf || !got.sub || !got.nan || (in == ir.F32 && !got.snan) {
				t.Errorf("seed %d %v: %+v", seed, in, got)
			}
		}
	}
}
