package ops

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fp8gen/fp8gen/internal/captest"
	"github.com/fp8gen/fp8gen/interp"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/lower"
	"github.com/fp8gen/fp8gen/target"
)

// ulpsOff is how many f32 ulps (at want's magnitude) got is from want.
func ulpsOff(got float32, want float64) float64 {
	w := float32(want)
	ulp := math.Abs(float64(math.Nextafter32(w, float32(math.Inf(1)))) - float64(w))
	if w == 0 || math.IsInf(float64(w), 0) {
		ulp = math.Ldexp(1, -149)
	}
	return math.Abs(float64(got)-want) / ulp
}

// The activation's stated accuracy against float64: exp(−a) within 1
// ulp, silu within 3 (the backward's, a product, 3.5) where silu is a
// normal f32 (g ≥ −87) and within 2^−140 below, silu' within 2^−22
// absolute (it crosses zero near g = −1.28, where a relative bound means
// nothing) — at every bf16 gate (h is bf16) and at a million random f32
// ones.
func TestSiluAccuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var gates []float32
	for c := range 1 << 16 {
		gates = append(gates, math.Float32frombits(uint32(c)<<16))
	}
	for range 1 << 20 {
		gates = append(gates, float32(r.NormFloat64()*8))
	}
	var worstExp, worstSilu, worstSiluB, worstTiny, worstD float64
	for _, g := range gates {
		if g != g || math.IsInf(float64(g), 0) {
			continue
		}
		a := math.Abs(float64(g))
		if a <= 87 {
			worstExp = max(worstExp, ulpsOff(refExpNeg(float32(a)), math.Exp(-a)))
		}
		want := float64(g) / (1 + math.Exp(-float64(g)))
		s, _ := refSilu(g)
		sb, ds := refSiluGrad(g)
		if g >= -87 {
			worstSilu = max(worstSilu, ulpsOff(s, want))
			worstSiluB = max(worstSiluB, ulpsOff(sb, want))
		}
		for _, s := range []float32{s, sb} {
			if g < -87 {
				worstTiny = max(worstTiny, math.Abs(float64(s)-want))
			}
		}
		sig := 1 / (1 + math.Exp(-float64(g)))
		worstD = max(worstD, math.Abs(float64(ds)-sig*(1+float64(g)*(1-sig))))
	}
	t.Logf("worst: exp %.3g ulps, silu %.3g ulps (the backward's %.3g), silu below −87 %.3g, silu' %.3g", worstExp, worstSilu, worstSiluB, worstTiny, worstD)
	if worstExp > 1 || worstSilu > 3 || worstSiluB > 3.5 || worstTiny > math.Ldexp(1, -140) || worstD > math.Ldexp(1, -22) {
		t.Errorf("past the stated accuracy: exp %.3g ulps (1), silu %.3g ulps (3), the backward's %.3g (3.5), silu below −87 %.3g (2^−140), silu' %.3g (2^−22)",
			worstExp, worstSilu, worstSiluB, worstTiny, worstD)
	}
}

// The kernels' silu, exp and silu' in f32, bit for bit against the
// reference's, at every bf16 gate and at random f32 ones: the ops' outputs
// are bf16 or fp8, whose rounding hides most f32 differences.
func TestSiluBits(t *testing.T) {
	const n = 1 << 17
	tg, _ := target.Lookup("sm_90")
	b := ir.NewBuilder("silu_bits", tg)
	x := b.Param("g", ir.F32)
	ps, pe, pb, pd := b.Param("silu", ir.F32), b.Param("e", ir.F32), b.Param("silu_b", ir.F32), b.Param("ds", ir.F32)
	offs := b.Add(b.Mul(b.ProgramID(0), 1024), b.Arange(1024))
	g := b.Load(b.PtrAdd(x, offs), nil, nil)
	s, e := siluOf(b, g)
	sb, ds := siluGrad(b, g)
	for i, v := range []*ir.Value{s, e, sb, ds} {
		b.Store(b.PtrAdd([]*ir.Value{ps, pe, pb, pd}[i], offs), v, nil)
	}
	f, err := b.Func()
	if err != nil {
		t.Fatal(err)
	}
	if err := lower.Run(f, &lower.Config{Warps: 4}); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	gs := make([]float32, n)
	for i := range gs {
		if i < 1<<16 {
			gs[i] = math.Float32frombits(uint32(i) << 16)
		} else {
			gs[i] = float32(r.NormFloat64() * 30)
		}
	}
	outs := [4][]byte{make([]byte, 4*n), make([]byte, 4*n), make([]byte, 4*n), make([]byte, 4*n)}
	if err := interp.Launch(f, [3]int{n / 1024, 1, 1}, []any{captest.F32s(gs), outs[0], outs[1], outs[2], outs[3]}); err != nil {
		t.Fatal(err)
	}
	for i, g := range gs {
		ws, we := refSilu(g)
		wb, wd := refSiluGrad(g)
		for k, want := range []float32{ws, we, wb, wd} {
			got := captest.GetF32(outs[k], i)
			if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
				t.Fatalf("g = %v (%#x): kernel's %s %v (%#x), reference's %v (%#x)", g, math.Float32bits(g),
					[...]string{"silu", "e", "the backward's silu", "silu'"}[k], got, math.Float32bits(got), want, math.Float32bits(want))
			}
		}
	}
}

// The limits the doc states: silu(±Inf), silu'(±Inf), −0 and NaN.
func TestSiluLimits(t *testing.T) {
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	for _, c := range []struct{ g, silu, ds float32 }{
		{inf, inf, 1}, {-inf, float32(math.Copysign(0, -1)), float32(math.Copysign(0, -1))},
		{float32(math.Copysign(0, -1)), float32(math.Copysign(0, -1)), 0.5}, {0, 0, 0.5},
		{1e30, 1e30, 1}, {-1e30, float32(math.Copysign(0, -1)), float32(math.Copysign(0, -1))},
	} {
		s, _ := refSilu(c.g)
		sb, ds := refSiluGrad(c.g)
		if math.Float32bits(s) != math.Float32bits(c.silu) || math.Float32bits(sb) != math.Float32bits(c.silu) || math.Float32bits(ds) != math.Float32bits(c.ds) {
			t.Errorf("g = %v: silu %v (backward's %v), silu' %v; want %v, %v", c.g, s, sb, ds, c.silu, c.ds)
		}
	}
	s, _ := refSilu(nan)
	if sb, ds := refSiluGrad(nan); s == s || sb == sb || ds == ds {
		t.Errorf("g = NaN: silu %v (backward's %v), silu' %v; want NaN", s, sb, ds)
	}
}

// Every bf16 gate, in the interpreter, forward and backward (bf16 out, so
// that the f32 values show through the roundings only; the GPU tests run
// this shape too).
func TestSwigluEveryGate(t *testing.T) {
	tg, _ := target.Lookup("sm_90")
	for _, op := range []*Op{SwigluProbs, SwigluProbsBwd} {
		p, err := op.NewPlan(tg, Shape{"R": 256, "F": 256}, Options{"quant": "none"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		in := Inputs(p.Call, 5, true)
		seen := map[uint64]bool{}
		for i := range 256 * 256 {
			seen[in["h"].Bits(i/256*512+i%256)] = true
		}
		if len(seen) < 1<<16-15 { // the first 15 gates are the listed values
			t.Fatalf("the gates hold %d bf16 codes; want every one but at most 15", len(seen))
		}
		check(t, p.Call, in, runInterp(t, p, in))
	}
}

// garbageGroups fills offsets and counts of a grouped_swiglu_probs call
// with values a router kernel might leave: in range, negative, past R,
// decreasing, huge.
func garbageGroups(r *rand.Rand, in map[string]*Tensor, rows int) {
	for _, name := range []string{"offsets", "counts"} {
		t := in[name]
		for i := range t.Elems() {
			var v int32
			switch r.IntN(4) {
			case 0:
				v = int32(r.IntN(rows + 1))
			case 1:
				v = -int32(r.IntN(1 << 30))
			case 2:
				v = int32(r.Uint32())
			default:
				v = int32(r.IntN(40))
			}
			t.SetBits(i, uint64(int64(v)))
		}
	}
}

// The grouped activation's rule for which rows are used holds for any
// offsets and counts: the interpreter matches the reference, which
// follows the rule, on garbage too (the host's Validate would refuse it).
func TestGroupedSwigluAnyOffsets(t *testing.T) {
	tg, _ := target.Lookup("sm_90")
	r := rand.New(rand.NewPCG(3, 4))
	for _, o := range []Options{nil, {"quant": "tensorwise"}} {
		p, err := GroupedSwigluProbs.NewPlan(tg, Shape{"R": 70, "F": 16, "E": 5}, o, nil)
		if err != nil {
			t.Fatal(err)
		}
		for range 20 {
			in := Inputs(p.Call, r.Uint64(), true)
			garbageGroups(r, in, 70)
			if GroupedSwigluProbs.Validate(p.Call, in) == nil {
				continue // garbage that happens to be valid
			}
			check(t, p.Call, in, runInterp(t, p, in))
		}
	}
}
