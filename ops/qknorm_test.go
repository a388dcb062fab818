package ops

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fp8gen/fp8gen/fp8"
	"github.com/fp8gen/fp8gen/internal/captest"
	"github.com/fp8gen/fp8gen/interp"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/lower"
	"github.com/fp8gen/fp8gen/schedule"
	"github.com/fp8gen/fp8gen/target"
)

func TestQKNormRefuses(t *testing.T) {
	tg, _ := target.Lookup("gfx942")
	for _, c := range []struct {
		sh   Shape
		want string
	}{
		{Shape{"B": 1, "S": 4, "HQ": 4, "HKV": 2, "D": 96}, "D (head_dim) must be 64 or 128"},
		{Shape{"B": 1, "S": 4, "HQ": 6, "HKV": 4, "D": 64}, "HQ must be a multiple of HKV"},
		{Shape{"B": 0, "S": 4, "HQ": 4, "HKV": 2, "D": 64}, "size B=0 must be positive"},
		{Shape{"B": 1, "S": 4, "HQ": 4, "D": 64}, "size HKV missing"},
	} {
		for _, op := range []*Op{QKNormRope, QKNormRopeBwd} {
			_, err := op.NewPlan(tg, c.sh, nil, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s at %v: %v; want %q", op.Name, c.sh, err, c.want)
			}
		}
	}
}

// qkCase is a small forward/backward problem with chosen tables.
func qkCase(t *testing.T, op *Op, o Options, seed uint64) (*Call, map[string]*Tensor) {
	t.Helper()
	tg, _ := target.Lookup("sm_90")
	c, err := op.NewCall(tg, Shape{"B": 2, "S": 3, "HQ": 2, "HKV": 1, "D": 64}, o)
	if err != nil {
		t.Fatal(err)
	}
	return c, Inputs(c, seed, false)
}

// The reference follows the op's stated semantics: with cos = 1, sin = 0
// the output is the RMS-normalised head; with cos = 0, sin = 1 it is
// rotate_half of it (concat(−n[D/2:], n[:D/2])), or the interleaved pairs.
func TestQKReferenceSemantics(t *testing.T) {
	for _, rope := range []string{"neox", "gptj"} {
		c, in := qkCase(t, QKNormRope, Options{"rope": rope, "weight": "f32"}, 3)
		d := c.Size("D")
		for i := 0; i < d; i++ {
			in["q_weight"].Set(i, 1)
			in["k_weight"].Set(i, 1)
		}
		row := in["qkv"].Floats()[:d] // token 0, query head 0
		var ss float64
		for _, v := range row {
			ss += float64(v) * float64(v)
		}
		r := 1 / math.Sqrt(ss/float64(d)+1e-6)
		for _, tab := range []struct{ c, s float64 }{{1, 0}, {0, 1}} {
			for i := 0; i < in["cos"].Elems(); i++ {
				in["cos"].Set(i, tab.c)
				in["sin"].Set(i, tab.s)
			}
			q := c.Op.Reference(c, in)["q"]
			for i := 0; i < d; i++ {
				want := float64(row[i]) * r
				if tab.s == 1 {
					switch {
					case rope == "neox" && i < d/2:
						want = -float64(row[i+d/2]) * r
					case rope == "neox":
						want = float64(row[i-d/2]) * r
					case i%2 == 0:
						want = -float64(row[i+1]) * r
					default:
						want = float64(row[i-1]) * r
					}
				}
				if got := q.Float(i); math.Abs(got-want) > math.Abs(want)/128 {
					t.Fatalf("%s, cos %v sin %v: q[%d] = %v; want %v", rope, tab.c, tab.s, i, got, want)
				}
			}
		}
	}
}

// The backward reference is the gradient of the forward: against central
// differences of a float64 forward written apart (no rounding), for
// d_qkv and both weight gradients, with loss Σ dy·y.
func TestQKBackwardIsTheGradient(t *testing.T) {
	for _, o := range []Options{{}, {"rope": "gptj", "order": "sbhd"}} {
		o["weight"], o["dx"] = "f32", "f32"
		c, in := qkCase(t, QKNormRopeBwd, o, 9)
		l := qkLayoutOf(c)
		d := l.d
		qkv := in["qkv"].Floats()
		x := make([]float64, len(qkv))
		for i, v := range qkv {
			x[i] = float64(v)
		}
		w := [2][]float64{make([]float64, d), make([]float64, d)}
		for i := 0; i < d; i++ {
			w[0][i], w[1][i] = in["q_weight"].Float(i), in["k_weight"].Float(i)
		}
		// loss is Σ dy·y over q, k and v, in float64.
		loss := func(x []float64, w [2][]float64) float64 {
			var sum float64
			for hr := 0; hr < l.rows; hr++ {
				_, kind, pos, o := l.head(hr)
				if kind == 2 { // v = x
					for i := 0; i < d; i++ {
						sum += in["dv"].Float(o+i) * x[hr*d+i]
					}
					continue
				}
				dy := in[[...]string{"dq", "dk"}[kind]]
				head := x[hr*d : (hr+1)*d]
				var ss float64
				for _, v := range head {
					ss += v * v
				}
				r := 1 / math.Sqrt(ss/float64(d)+1e-6)
				n := make([]float64, d)
				for i := range n {
					n[i] = head[i] * r * w[kind][i]
				}
				for i := range n {
					p, sign := partner(c.Opt(opt.Rope) == "neox", i, d, false)
					y := n[i]*in["cos"].Float(pos*d+i) + sign*n[p]*in["sin"].Float(pos*d+i)
					sum += dy.Float(o+i) * y
				}
			}
			return sum
		}
		grad := func(v []float64, i int, f func() float64) float64 {
			old := v[i]
			h := 1e-4 * max(1, math.Abs(old))
			v[i] = old + h
			up := f()
			v[i] = old - h
			down := f()
			v[i] = old
			return (up - down) / (2 * h)
		}
		out := c.Op.Reference(c, in)
		r := rand.New(rand.NewPCG(1, 1))
		near := func(what string, got, want float64) {
			if math.Abs(got-want) > 1e-3*max(1, math.Abs(want)) {
				t.Errorf("%v: %s = %.6g; the numerical gradient is %.6g", o, what, got, want)
			}
		}
		for range 40 {
			i := r.IntN(len(x))
			near("d_qkv", out["d_qkv"].Float(i), grad(x, i, func() float64 { return loss(x, w) }))
		}
		for k, name := range []string{"d_q_weight", "d_k_weight"} {
			for range 8 {
				i := r.IntN(d)
				near(name, out[name].Float(i), grad(w[k], i, func() float64 { return loss(x, w) }))
			}
		}
		// v's gradient is dv, copied.
		for hr := 0; hr < l.rows; hr++ {
			if _, kind, _, o := l.head(hr); kind == 2 {
				for i := 0; i < d; i++ {
					if out["d_qkv"].Float(hr*d+i) != in["dv"].Float(o+i) {
						t.Fatalf("v row %d: d_qkv is not dv", hr)
					}
				}
			}
		}
	}
}

// sincos, the kernels' own f32 sine and cosine, is within 2 f32 ulps of
// float64's (and 2^-23 absolute near zeros) over every angle
// angles=theta allows, at random points and at multiples of π/4 ± a few
// ulps, where the reduction switches octants.
func TestSinCos(t *testing.T) {
	const n = 1 << 14
	tg, _ := target.Lookup("sm_90")
	b := ir.NewBuilder("sincos", tg)
	x, s, c := b.Param("x", ir.F32), b.Param("s", ir.F32), b.Param("c", ir.F32)
	offs := b.Add(b.Mul(b.ProgramID(0), 1024), b.Arange(1024))
	sn, cs := sincos(b, b.Load(b.PtrAdd(x, offs), nil, nil))
	b.Store(b.PtrAdd(s, offs), sn, nil)
	b.Store(b.PtrAdd(c, offs), cs, nil)
	f, err := b.Func()
	if err != nil {
		t.Fatal(err)
	}
	if err := lower.Run(f, &lower.Config{Warps: 4}); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(8, 9))
	xs := make([]float32, n)
	for i := range xs {
		switch i % 4 {
		case 0:
			xs[i] = float32(r.Float64() * 1e5)
		case 1:
			xs[i] = float32(r.Float64() * 10)
		default:
			k := float32(r.IntN(1 << 17))
			xs[i] = k * math.Pi / 4
			for range r.IntN(5) {
				xs[i] = math.Nextafter32(xs[i], float32(2*(i%2)-1)*float32(math.Inf(1)))
			}
		}
	}
	xb, sb, cb := captest.F32s(xs), make([]byte, 4*n), make([]byte, 4*n)
	if err := interp.Launch(f, [3]int{n / 1024, 1, 1}, []any{xb, sb, cb}); err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for i, v := range xs {
		for k, got := range []float32{captest.GetF32(sb, i), captest.GetF32(cb, i)} {
			want := [...]func(float64) float64{math.Sin, math.Cos}[k](float64(v))
			ulp := math.Max(math.Abs(want), 0.25) * 0x1p-23 // f32's spacing, floored near zero
			if d := math.Abs(float64(got)-want) / ulp; d > worst {
				worst = d
			}
			if d := math.Abs(float64(got) - want); d > 2*ulp {
				t.Fatalf("%s(%v) = %v; float64 gives %v (%.1f ulps)", [...]string{"sin", "cos"}[k], v, got, want, d/ulp)
			}
		}
	}
	t.Logf("worst error %.2f ulps over %d angles", worst, n)
}

func TestQKThetaRefuses(t *testing.T) {
	tg, _ := target.Lookup("sm_90")
	for _, c := range []struct {
		sh   Shape
		bad  float64
		want string
	}{
		{Shape{"B": 1, "S": maxThetaPos + 1, "HQ": 1, "HKV": 1, "D": 64}, 0, "with angles=theta, positions must stay below 65536"},
		{Shape{"B": 1, "S": 4, "HQ": 1, "HKV": 1, "D": 64}, 2, "inv_freq[3] = 2: want a value in [0, 1]"},
		{Shape{"B": 1, "S": 4, "HQ": 1, "HKV": 1, "D": 64}, math.NaN(), "inv_freq[3] = NaN"},
	} {
		call, err := QKNormRope.NewCall(tg, c.sh, Options{"angles": "theta"})
		if c.bad == 0 { // a size rule: refused when the call is made
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v: %v; want %q", c.sh, err, c.want)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		in := Inputs(call, 1, false)
		if c.bad != 0 {
			in["inv_freq"].Set(3, c.bad)
		}
		if err := call.CheckInputs(in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v; want %q", c.sh, err, c.want)
		}
	}
}

// Token order, derived apart from the reference's layout code: in bshd
// the token (b, s) is qkv's row b·S+s and q's [b, s]; in sbhd both are
// row s·B+b; either way its position is s. With cos[s] = s+1 and sin = 0
// (weights 1), q[token, h] is (s+1) times the head normalised.
func TestQKPositions(t *testing.T) {
	for _, order := range []string{"bshd", "sbhd"} {
		c, in := qkCase(t, QKNormRope, Options{"order": order, "weight": "f32"}, 5)
		bs, sl, d := c.Size("B"), c.Size("S"), c.Size("D")
		hq, hkv := c.Size("HQ"), c.Size("HKV")
		width := (hq + 2*hkv) * d
		for i := 0; i < d; i++ {
			in["q_weight"].Set(i, 1)
		}
		for s := 0; s < sl; s++ {
			for i := 0; i < d; i++ {
				in["cos"].Set(s*d+i, float64(s+1))
				in["sin"].Set(s*d+i, 0)
			}
		}
		q := c.Op.Reference(c, in)["q"]
		for b := 0; b < bs; b++ {
			for s := 0; s < sl; s++ {
				row := b*sl + s
				if order == "sbhd" {
					row = s*bs + b
				}
				head := in["qkv"].Floats()[row*width : row*width+d] // query head 0
				var ss float64
				for _, v := range head {
					ss += float64(v) * float64(v)
				}
				r := 1 / math.Sqrt(ss/float64(d)+1e-6)
				for i := 0; i < d; i++ {
					want := float64(head[i]) * r * float64(s+1)
					if got := q.Float(row*hq*d + i); math.Abs(got-want) > math.Abs(want)/128 {
						t.Fatalf("%s: q[b=%d, s=%d, head 0][%d] = %v; want %v", order, b, s, i, got, want)
					}
				}
			}
		}
	}
}

// NaNs match NaNs only in float tensors, whatever their bits; an element
// whose slack is infinite may be anything; any other NaN is a failure.
func TestCheckNaNRules(t *testing.T) {
	c, in := qkCase(t, QKNormRopeBwd, nil, 5)
	x := c.Expect(in)
	got := func() map[string]*Tensor {
		m := map[string]*Tensor{}
		for n, w := range x.want {
			m[n] = &Tensor{Spec: w.Spec, Data: append([]byte(nil), w.Data...)}
		}
		return m
	}
	if _, err := x.Check(got()); err != nil {
		t.Fatalf("the reference against itself: %v", err)
	}
	g := got()
	dx := g["d_qkv"]
	dx.SetBits(3, 0x7fc1) // NaN where the reference is a finite number
	if _, err := x.Check(g); err == nil || !strings.Contains(err.Error(), "d_qkv: 1 of") {
		t.Errorf("a NaN for a finite value: %v; want d_qkv's element refused", err)
	}
	x.allow["d_qkv"].Slack[3] = math.Inf(1) // an f32 intermediate may overflow there
	if _, err := x.Check(g); err != nil {
		t.Errorf("a NaN where the slack is infinite: %v", err)
	}

	w := map[string]*Tensor{
		"b": {Spec{Name: "b", DType: ir.BF16, Shape: []int{2}}, []byte{0xc0, 0x7f, 0, 0}},
		"f": {Spec{Name: "f", DType: ir.F32, Shape: []int{1}}, []byte{0, 0, 0xc0, 0xff}},
		"q": {Spec{Name: "q", DType: ir.FP8(fp8.E4M3FN), Shape: []int{1}}, []byte{0x7f}},
	}
	h := map[string]*Tensor{
		"b": {Spec{Name: "b", DType: ir.BF16, Shape: []int{2}}, []byte{0xff, 0x7f, 0, 0}},
		"f": {Spec{Name: "f", DType: ir.F32, Shape: []int{1}}, []byte{0xff, 0xff, 0xff, 0x7f}},
		"q": {Spec{Name: "q", DType: ir.FP8(fp8.E4M3FN), Shape: []int{1}}, []byte{0xff}},
	}
	err := CompareUpToNaN(w, h)
	if err == nil || strings.Contains(err.Error(), "b:") || strings.Contains(err.Error(), "f:") || !strings.Contains(err.Error(), "q:") {
		t.Errorf("CompareUpToNaN: %v; want only the fp8 tensor's NaN bits refused", err)
	}
	if err := Compare(w, h); err == nil || !strings.Contains(err.Error(), "b:") {
		t.Errorf("Compare: %v; want NaN bits compared", err)
	}
	h["b"].Data[2] = 1
	if err := CompareUpToNaN(w, h); err == nil || !strings.Contains(err.Error(), "b: 1 of 4 bytes") {
		t.Errorf("CompareUpToNaN of a changed number: %v", err)
	}
}

// The backward in the interpreter (which gives the GPU's bits: the H200
// reproduced these elements exactly) at the GPU test shapes on adversarial
// inputs, whose huge heads overflow the kernel's f32 sums where the
// reference's float64 ones do not.
func TestQKBackwardAdversarialGPUShapes(t *testing.T) {
	if testing.Short() {
		t.Skip("17 s of interpretation")
	}
	tg, _ := target.Lookup("sm_90")
	for _, o := range QKNormRopeBwd.OptionSets() {
		for _, sh := range QKNormRopeBwd.Tests.GPU {
			p, err := QKNormRopeBwd.NewPlan(tg, sh, o, nil)
			if err != nil {
				t.Fatal(err)
			}
			in := Inputs(p.Call, 11, true)
			got := runInterp(t, p, in)
			if _, err := p.CheckOutputs(in, got); err != nil {
				t.Errorf("%v %v: %v", sh, o, err)
			}
		}
	}
}

// The backward's programs loop over their tiles, adding the weight
// gradients' terms into their accumulators trip by trip; at the odd shapes
// every program has one tile at most, so here each takes four.
func TestQKBackwardLoopTrips(t *testing.T) {
	tg, _ := target.Lookup("sm_90")
	sh := Shape{"B": 2, "S": 132, "HQ": 4, "HKV": 2, "D": 64} // 2112 head rows
	s := schedule.Params{"WARPS": 1, "LANES": 8, "ROWS": 4, "PER_CU": 1, "EARLY_LOADS": 0, "HEAD_D": 64, "KV_HEADS": 2, "GROUP": 2}
	p, err := QKNormRopeBwd.NewPlan(tg, sh, nil, s)
	if err != nil {
		t.Fatal(err)
	}
	rows := 2 * 132 * (4 + 2*2)
	if programs, tiles := p.Steps[0].Grid[0], rows/4; tiles != 4*programs {
		t.Fatalf("%d tiles over %d programs; want 4 trips each", tiles, programs)
	}
	// Random inputs, not adversarial: a NaN in one head makes the weight
	// gradients NaN, which would hide a lost trip.
	in := Inputs(p.Call, 7, false)
	check(t, p.Call, in, runInterp(t, p, in))
}

// Inputs past bigInput elements come from per-chunk streams: the same
// seed gives the same bits, another seed others, and no two chunks of a
// seed repeat one stream. Check's allowance runs in chunks past 2^20
// elements: it counts every bad element and names the first.
func TestBigInputsAndChunkedCheck(t *testing.T) {
	tg, _ := target.Lookup("sm_90")
	op := QKNormRopeBwd
	big, err := op.NewCall(tg, Shape{"B": 1, "S": 40000, "HQ": 4, "HKV": 2, "D": 64}, nil) // qkv: 20480000 elements
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := Inputs(big, 1, false)["qkv"], Inputs(big, 1, false)["qkv"], Inputs(big, 2, false)["qkv"]
	if a.Elems() <= bigInput {
		t.Fatalf("%d elements: not past bigInput", a.Elems())
	}
	if !bytes.Equal(a.Data, b.Data) {
		t.Error("one seed gave two different tensors")
	}
	if bytes.Equal(a.Data, c.Data) {
		t.Error("two seeds gave one tensor")
	}
	// Seed 1's chunk 0 against seed 2's chunk 3 (one stream if the chunk
	// were xored into the seed) and against its own chunk 1.
	chunk := a.Elems() / refChunks * 2 // bytes of a chunk
	if bytes.Equal(a.Data[:chunk], c.Data[3*chunk:4*chunk]) || bytes.Equal(a.Data[:chunk], a.Data[chunk:2*chunk]) {
		t.Error("chunks repeat a stream")
	}

	p, err := op.NewPlan(tg, Shape{"B": 1, "S": 2048, "HQ": 4, "HKV": 2, "D": 64}, nil, nil) // d_qkv: 2^20 elements
	if err != nil {
		t.Fatal(err)
	}
	in := Inputs(p.Call, 3, false)
	x := p.Call.Expect(in)
	_, got := p.WithOutputs(in)
	for n, w := range x.want {
		copy(got[n].Data, w.Data)
	}
	if _, err := x.Check(got); err != nil {
		t.Fatalf("the reference against itself: %v", err)
	}
	d := got["d_qkv"]
	if d.Elems() < 1<<20 {
		t.Fatalf("d_qkv has %d elements: Check would not chunk", d.Elems())
	}
	for _, i := range []int{d.Elems() - 5, 700001, 123457} {
		d.SetBits(i, uint64(ir.F32ToBF16(float32(d.Float(i))*4+100)))
	}
	_, err = x.Check(got)
	if err == nil || !strings.Contains(err.Error(), "3 of 1048576 elements differ") || !strings.Contains(err.Error(), "first, element 123457") {
		t.Errorf("three bad elements in three chunks: %v", err)
	}
}

// Under angles=theta the forward's tile of one token's heads, or of two
// (ROWS at most the heads a token), works each token's D angles once, one
// element a lane (a spread load of inv_freq, broadcast through LDS), and
// a tile of more rows each row's own; the backward's first kernel works
// every position's angles once into rope_tables, which its loop reads as
// the tables. All exact against the reference, both pairings and token
// orders, the backward's loop over many tiles too, wave32 and wave64.
func TestQKThetaOnceAToken(t *testing.T) {
	// angles counts the values named angle in f, checks that where
	// oneALane they are one element a lane, and says whether f has a
	// spread load.
	angles := func(t *testing.T, f *ir.Func, oneALane bool) (n int, spread bool) {
		f.Walk(func(v *ir.Value) {
			if m, ok := v.Attr.(*ir.MemAttr); ok && v.Op == ir.OpLoad && m.Spread {
				spread = true
				if v.Type.Regs != 1 { // 64 angles over 64 or 128 lanes
					t.Errorf("the spread load holds %d elements a lane; want 1", v.Type.Regs)
				}
			}
			if v.Name == "angle" {
				n++
				if oneALane && v.Type.Regs != 1 {
					t.Errorf("a token's angles %d a lane; want 1", v.Type.Regs)
				}
			}
		})
		return n, spread
	}
	for _, tname := range []string{"sm_90", "gfx942"} {
		tg, _ := target.Lookup(tname)
		for _, group := range []int{2, 3} { // 8 and 10 head rows a token
			sh := Shape{"B": 2, "S": 5, "HQ": 2 * group, "HKV": 2, "D": 64}
			heads := 2 * (group + 2)
			for _, op := range []*Op{QKNormRope, QKNormRopeBwd} {
				for _, rows := range []int{2, 4, 8, 16} {
					for _, o := range []Options{{"rope": "neox", "order": "bshd"}, {"rope": "gptj", "order": "sbhd"}} {
						s := schedule.Params{"WARPS": 2, "LANES": 4, "ROWS": rows, "EARLY_LOADS": 0, "HEAD_D": 64, "KV_HEADS": 2, "GROUP": group}
						if op == QKNormRopeBwd {
							s["PER_CU"] = 1
						}
						o["angles"] = "theta"
						p, err := op.NewPlan(tg, sh, o, s)
						if err != nil {
							t.Fatal(err)
						}
						what := fmt.Sprintf("%s %s %d heads a token, ROWS=%d", tname, op.Name, heads, rows)
						if op == QKNormRope {
							// One token: 1 angle value, two: 2, more: every
							// row's, as one value.
							n, spread := angles(t, p.Steps[0].Func, rows <= heads)
							want := map[bool]int{true: 1, false: 2}[heads%rows == 0 || rows > heads]
							if spread != (rows <= heads) || n != want {
								t.Errorf("%s: a spread load %v, %d angle values; want %v, %d", what, spread, n, rows <= heads, want)
							}
						} else {
							if len(p.Steps) != 3 || p.Steps[0].Kernel.Name != "qk_rope_tables" {
								t.Fatalf("%s: %d steps, the first %s; want the tables' kernel first of 3", what, len(p.Steps), p.Steps[0].Kernel.Name)
							}
							if n, _ := angles(t, p.Steps[0].Func, false); n != 1 {
								t.Errorf("%s: the tables' kernel has %d angle values; want 1", what, n)
							}
							if n, spread := angles(t, p.Steps[1].Func, false); n != 0 || spread {
								t.Errorf("%s: the backward works angles (%d values, a spread load %v); want it to read the tables", what, n, spread)
							}
						}
						in := Inputs(p.Call, uint64(rows), true)
						check(t, p.Call, in, runInterp(t, p, in))
					}
				}
			}
		}
	}
	// The backward's persistent loop, many tiles a program: each trip's
	// positions from its own rows.
	tg, _ := target.Lookup("sm_90")
	sh := Shape{"B": 2, "S": 120, "HQ": 4, "HKV": 2, "D": 64}
	s := schedule.Params{"WARPS": 2, "LANES": 4, "ROWS": 4, "EARLY_LOADS": 0, "HEAD_D": 64, "KV_HEADS": 2, "GROUP": 2, "PER_CU": 1}
	p, err := QKNormRopeBwd.NewPlan(tg, sh, Options{"angles": "theta", "order": "sbhd"}, s)
	if err != nil {
		t.Fatal(err)
	}
	if tiles := 2 * 120 * 8 / 4; tiles < 3*p.Steps[1].Grid[0] {
		t.Fatalf("%d tiles over %d programs; want several trips each", tiles, p.Steps[1].Grid[0])
	}
	in := Inputs(p.Call, 11, false)
	check(t, p.Call, in, runInterp(t, p, in))
}
