package ops

import (
	"math"
	"math/rand/v2"

	"github.com/fp8gen/fp8gen/fp8"
	"github.com/fp8gen/fp8gen/ir"
)

// Inputs makes a call's inputs from a seed. Float tensors hold normal
// values times 3; with adversarial set, they also hold, in some rows and
// columns (the last axis is a row), the values that break casts: zeros,
// ±Inf, NaN (quiet and signaling), float32 and bf16 subnormals, values at
// and just past the format's max (raw and after scaling), and whole rows
// and columns of zeros, NaN or subnormals. Integer tensors hold small
// random values; fp8 tensors random codes.
func Inputs(c *Call, seed uint64, adversarial bool) map[string]*Tensor {
	r := rand.New(rand.NewPCG(seed, seed^0x9E3779B97F4A7C15))
	in := Tensors(c.SpecsOf(Input))
	for ti, s := range c.SpecsOf(Input) { // in argument order: the same seed gives the same tensors
		t := in[s.Name]
		n := t.Elems()
		switch d := t.DType; {
		case d.K == ir.KF32 || d.K == ir.KBF16:
			vals := make([]float32, n)
			if n <= bigInput {
				for i := range vals {
					vals[i] = float32(r.NormFloat64() * 3)
				}
			} else {
				// A benchmark's tensor: refChunks streams of their own,
				// filled in parallel (one stream took seconds a tensor).
				refParallel(n, func(lo, hi, k int) {
					cr := rand.New(rand.NewPCG(seed, 0x5851F42D4C957F2D^uint64(ti)<<32^uint64(k)))
					for i := lo; i < hi; i++ {
						vals[i] = float32(cr.NormFloat64() * 3)
					}
				})
			}
			if adversarial && n > 0 {
				cols := t.Shape[len(t.Shape)-1]
				plant(vals, n/cols, cols, c.Format, r)
			}
			bigParallel(n, func(lo, hi, _ int) {
				for i := lo; i < hi; i++ {
					v := vals[i]
					if d.K == ir.KBF16 {
						h := ir.F32ToBF16(v)
						if v != v { // keep the NaN's kind: 0x7f810000 stands for bf16's signaling 0x7f81
							h = uint16(math.Float32bits(v) >> 16)
						}
						t.SetBits(i, uint64(h))
					} else {
						t.SetBits(i, uint64(math.Float32bits(v)))
					}
				}
			})
		case d.K == ir.KFP8:
			for i := range n {
				t.SetBits(i, uint64(r.IntN(256)))
			}
		default:
			for i := range n {
				t.SetBits(i, uint64(r.IntN(201)-100))
			}
		}
	}
	if c.Op.FillInputs != nil {
		c.Op.FillInputs(c, r, adversarial, in)
	}
	return in
}

// bigInput is the most elements of a float tensor Inputs draws from the
// seed's one stream; larger ones (benchmark shapes; the tests' shapes are
// smaller but for TestBigInputs) are drawn from refChunks streams at once,
// stream (seed, tensor, chunk).
const bigInput = 1 << 24

// Specials are the values adversarial inputs plant.
func Specials(f *fp8.Format) []float32 {
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	max := float32(448)
	if f != nil {
		max = f.Max
	}
	return []float32{
		0, float32(math.Copysign(0, -1)), inf, -inf, nan,
		math.Float32frombits(0x7f810000), math.Float32frombits(0xff800001), // signaling NaNs (bf16 0x7f81 is one)
		math.Float32frombits(1), -math.Float32frombits(0x7FFFFF), // f32 subnormals
		math.Float32frombits(0x00010000), // bf16 subnormal
		max, -max, math.Nextafter32(max, inf), max * 1.0625, 1e30, -3e38,
		1e-30, 6e-8,
	}
}

func plant(v []float32, m, k int, f *fp8.Format, r *rand.Rand) {
	sp := Specials(f)
	// Scattered specials.
	for i := 0; i < max(4, len(v)/97); i++ {
		v[r.IntN(len(v))] = sp[r.IntN(len(sp))]
	}
	// Whole rows: zeros, NaN, subnormals, all at max.
	fillRow := func(i int, g func(j int) float32) {
		if i < m {
			for j := 0; j < k; j++ {
				v[i*k+j] = g(j)
			}
		}
	}
	fmax := sp[10]
	fillRow(1, func(int) float32 { return 0 })
	fillRow(2, func(int) float32 { return float32(math.NaN()) })
	fillRow(3, func(j int) float32 { return math.Float32frombits(uint32(1 + j)) })
	fillRow(4, func(j int) float32 { return fmax * float32(1-2*(j%2)) })
	// Whole columns: zeros and a single Inf (the rows above keep their
	// pattern whole: a row of zeros must stay all zeros).
	for i := 0; i < m; i++ {
		if i >= 1 && i <= 4 {
			continue
		}
		if k > 1 {
			v[i*k+1] = 0
		}
		if k > 2 {
			v[i*k+2] = float32(r.NormFloat64() * 1e-3)
		}
	}
	if row := m / 2; k > 3 {
		if row >= 1 && row <= 4 {
			row = m - 1
		}
		if row < 1 || row > 4 {
			v[row*k+3] = float32(math.Inf(-1))
		}
	}
	// Every special at least once, in row 0 past the filled columns (then
	// wrapping into the last rows), however small the tensor.
	for j, x := range sp {
		i := 3 + j
		if i >= len(v) {
			break
		}
		if i >= k { // row 0 is full: take the last row, then the one before
			i = len(v) - 1 - (i - k)
		}
		v[i] = x
	}
}
