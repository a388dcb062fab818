// Package captest holds small DSL kernels, one per IR capability the
// fp8gen ops rely on, with inputs and a plain-Go check of the outputs: the
// backend runs them in the interpreter and on the GPU, the golden tests
// compile them for AMD.
package captest

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/lower"
	"github.com/fp8gen/fp8gen/target"
)

// The IR capabilities the next kernels need, each exercised by a small DSL
// kernel that runs in the interpreter and, where there is one, on the GPU,
// and is checked against plain Go (bit for bit, but for the sum, whose
// association follows the schedule: interpreter and GPU are bit-exact with
// each other, and within a stated tolerance of the f64 sum).

// Case is one kernel and its check.
type Case struct {
	Name  string
	Warps int
	Div   map[string]int
	Build func(b *ir.Builder)
	// Inputs makes the arguments; Want checks them after the run.
	Inputs func(r *rand.Rand) (grid [3]int, args []any)
	Want   func(t testing.TB, args []any)
	// Lowered, if set, checks what lowering chose (a vector width, a
	// shuffle).
	Lowered func(t testing.TB, f *ir.Func)
}

// Lower builds and lowers c for tg, with the verifier on.
func (c Case) Lower(t testing.TB, tg *target.Target) *ir.Func {
	t.Helper()
	b := ir.NewBuilder("cap", tg)
	c.Build(b)
	f, err := b.Func()
	if err != nil {
		t.Fatal(err)
	}
	if err := lower.Run(f, &lower.Config{Warps: c.Warps, Div: c.Div, Verify: true}); err != nil {
		t.Fatal(err)
	}
	return f
}

// F32s is x as little-endian bytes.
func F32s(x []float32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// I32s is x as little-endian bytes.
func I32s(x []int32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
	return b
}

// I64s is x as little-endian bytes.
func I64s(x []int64) []byte {
	b := make([]byte, 8*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
	}
	return b
}

// GetF32 is element i of little-endian f32 bytes.
func GetF32(b []byte, i int) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
}

// GetI32 is element i of little-endian i32 bytes.
func GetI32(b []byte, i int) int32 { return int32(binary.LittleEndian.Uint32(b[4*i:])) }

// GetI64 is element i of little-endian i64 bytes.
func GetI64(b []byte, i int) int64 { return int64(binary.LittleEndian.Uint64(b[8*i:])) }

func countOps(f *ir.Func, op ir.Op) int {
	n := 0
	f.Walk(func(v *ir.Value) {
		if v.Op == op {
			n++
		}
	})
	return n
}

func maxVec(f *ir.Func, op ir.Op) int {
	vec := 0
	f.Walk(func(v *ir.Value) {
		if v.Op == op {
			vec = max(vec, v.Mem().Vec)
		}
	})
	return vec
}

// rope is RoPE's rotate-half on rows of d floats, rows per program:
// out = x·cos + rot(x)·sin, rot(x) = concat(−x[d/2:], x[:d/2]), the
// partner reached by Rotate: a register map, a shuffle or LDS, as the
// layout allows.
func rope(rows, d int) func(b *ir.Builder) {
	return func(b *ir.Builder) {
		x := b.Param("x", ir.F32)
		cs := b.Param("cos", ir.F32)
		sn := b.Param("sin", ir.F32)
		out := b.Param("out", ir.F32)
		r := b.Add(b.Mul(b.ProgramID(0), rows), b.Arange(rows))
		i := b.Arange(d)
		offs := b.Add(b.Mul(b.Col(r), d), b.Row(i))
		v := b.Load(b.PtrAdd(x, offs), nil, nil)
		p := b.Rotate(v, 1, d/2)
		rot := b.Where(b.Row(b.Lt(i, d/2)), b.Neg(p), p)
		c := b.Load(b.PtrAdd(cs, b.Row(i)), nil, nil)
		s := b.Load(b.PtrAdd(sn, b.Row(i)), nil, nil)
		b.Store(b.PtrAdd(out, offs), b.Add(b.Mul(v, c), b.Mul(rot, s)), nil)
	}
}

func ropeCase(name string, warps, rows, d int, strategy ir.Op) Case {
	const programs = 3
	return Case{
		Name: name, Warps: warps, Build: rope(rows, d),
		Inputs: func(r *rand.Rand) ([3]int, []any) {
			x, cs, sn := make([]float32, programs*rows*d), make([]float32, d), make([]float32, d)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			for i := range cs {
				cs[i], sn[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
			}
			return [3]int{programs, 1, 1}, []any{F32s(x), F32s(cs), F32s(sn), make([]byte, 4*len(x))}
		},
		Want: func(t testing.TB, args []any) {
			x, cs, sn, out := args[0].([]byte), args[1].([]byte), args[2].([]byte), args[3].([]byte)
			for row := 0; row < programs*rows; row++ {
				for i := 0; i < d; i++ {
					rot := GetF32(x, row*d+(i+d/2)%d)
					if i < d/2 {
						rot = -rot
					}
					// Each product rounded apart: no fused multiply-add.
					want := float32(float32(GetF32(x, row*d+i)*GetF32(cs, i)) + float32(rot*GetF32(sn, i)))
					if got := GetF32(out, row*d+i); math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("row %d element %d: %v, want %v", row, i, got, want)
					}
				}
			}
		},
		Lowered: func(t testing.TB, f *ir.Func) {
			got := map[bool]string{true: "shfl_xor", false: ""}[countOps(f, ir.OpShflXor) > 0]
			if countOps(f, ir.OpLDSLoad) > 0 {
				got = "lds_load"
			}
			if got == "" {
				got = "gather_regs"
			}
			if got != strategy.Name() {
				t.Errorf("rotate lowered through %s; want %s", got, strategy.Name())
			}
		},
	}
}

// Cases are the capabilities, each a kernel.
var Cases = []Case{
	{
		// i64 tensors in and out, i32 widened to i64; 64-bit index
		// arithmetic throughout.
		Name: "i64 tensors", Warps: 2,
		Build: func(b *ir.Builder) {
			b.SetIndex(ir.I64)
			x := b.Param("x", ir.I64)
			w := b.Param("w", ir.I32)
			y := b.Param("y", ir.I64)
			n := b.Size("n")
			offs := b.Add(b.Mul(b.ProgramID(0), 256), b.Arange(256))
			m := b.Lt(offs, n)
			v := b.Load(b.PtrAdd(x, offs), m, nil)
			u := b.Cast(b.Load(b.PtrAdd(w, offs), m, nil), ir.I64)
			b.Store(b.PtrAdd(y, offs), b.Add(b.Mul(v, 3), b.Shl(u, 33)), m)
		},
		Inputs: func(r *rand.Rand) ([3]int, []any) {
			const n = 1000
			x, w := make([]int64, n), make([]int32, n)
			for i := range x {
				x[i], w[i] = r.Int64()>>2, r.Int32()-1<<30
			}
			return [3]int{4, 1, 1}, []any{I64s(x), I32s(w), make([]byte, 8*n), n}
		},
		Want: func(t testing.TB, args []any) {
			x, w, y := args[0].([]byte), args[1].([]byte), args[2].([]byte)
			for i := 0; i < args[3].(int); i++ {
				want := GetI64(x, i)*3 + int64(GetI32(w, i))<<33
				if got := GetI64(y, i); got != want {
					t.Fatalf("y[%d] = %d, want %d", i, got, want)
				}
			}
		},
		Lowered: func(t testing.TB, f *ir.Func) {
			f.Walk(func(v *ir.Value) {
				if (v.Op == ir.OpLoad || v.Op == ir.OpStore) && v.Ptr().Type.DType.Elem() == ir.I64 && v.Mem().Vec != 2 {
					t.Errorf("%s: want vec=2 (16 bytes of i64)", v.LongString())
				}
			})
		},
	},
	{
		// A third program axis: per expert e (axis 2) and column block
		// (axis 0), the column max of |w[e, :, n]| over K rows.
		Name: "experts on grid axis 2", Warps: 4,
		Build: func(b *ir.Builder) {
			w := b.Param("w", ir.I32)
			out := b.Param("out", ir.I32)
			k, n := b.Size("K"), b.Size("N")
			e := b.ProgramID(2)
			cols := b.Add(b.Mul(b.ProgramID(0), 32), b.Arange(32))
			base := b.Mul(b.Mul(e, k), n)
			acc := b.For(0, k, 16, []*ir.Value{b.Full(ir.I32, 0, 16, 32)}, func(k0 *ir.Value, acc []*ir.Value) []*ir.Value {
				rows := b.Add(k0, b.Arange(16))
				offs := b.Add(base, b.Add(b.Mul(b.Col(rows), n), b.Row(cols)))
				m := b.And(b.Col(b.Lt(rows, k)), b.Row(b.Lt(cols, n)))
				return []*ir.Value{b.Max(acc[0], b.Abs(b.Load(b.PtrAdd(w, offs), m, nil)))}
			})
			b.Store(b.PtrAdd(out, b.Add(b.Mul(e, n), cols)), b.Reduce(acc[0], 0, ir.RMax), b.Lt(cols, n))
		},
		Inputs: func(r *rand.Rand) ([3]int, []any) {
			const e, k, n = 5, 37, 70
			w := make([]int32, e*k*n)
			for i := range w {
				w[i] = r.Int32N(2000001) - 1000000
			}
			return [3]int{(n + 31) / 32, 1, e}, []any{I32s(w), make([]byte, 4*e*n), k, n}
		},
		Want: func(t testing.TB, args []any) {
			w, out, k, n := args[0].([]byte), args[1].([]byte), args[2].(int), args[3].(int)
			for e := 0; e < len(out)/4/n; e++ {
				for j := 0; j < n; j++ {
					want := int32(0)
					for i := 0; i < k; i++ {
						v := GetI32(w, (e*k+i)*n+j)
						want = max(want, v, -v)
					}
					if got := GetI32(out, e*n+j); got != want {
						t.Fatalf("expert %d column %d: %d, want %d", e, j, got, want)
					}
				}
			}
		},
	},
	{
		// Group starts loaded from memory, asserted multiples of 4: the
		// copies of each group move 16-byte vectors.
		Name: "multiple_of hint", Warps: 1,
		Build: func(b *ir.Builder) {
			starts := b.Param("starts", ir.I32)
			x := b.Param("x", ir.F32)
			y := b.Param("y", ir.F32)
			g := b.ProgramID(0)
			s := b.MultipleOf(b.Load(b.PtrAdd(starts, g), nil, nil), 4)
			// Past 48 the mask is off (uniform over each vector): -3.5.
			v := b.Load(b.PtrAdd(x, b.Add(s, b.Arange(64))), b.Lt(b.Arange(64), 48), -3.5)
			b.Store(b.PtrAdd(y, b.Add(b.Mul(g, 64), b.Arange(64))), v, nil)
		},
		Inputs: func(r *rand.Rand) ([3]int, []any) {
			starts := []int32{0, 12, 100, 4, 36}
			x := make([]float32, 200)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			return [3]int{len(starts), 1, 1}, []any{I32s(starts), F32s(x), make([]byte, 4*64*len(starts))}
		},
		Want: func(t testing.TB, args []any) {
			starts, x, y := args[0].([]byte), args[1].([]byte), args[2].([]byte)
			for g := 0; g < len(starts)/4; g++ {
				for i := 0; i < 64; i++ {
					want := float32(-3.5)
					if i < 48 {
						want = GetF32(x, int(GetI32(starts, g))+i)
					}
					if got := GetF32(y, g*64+i); math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("group %d element %d: %v, want %v", g, i, got, want)
					}
				}
			}
		},
		Lowered: func(t testing.TB, f *ir.Func) {
			if v := maxVec(f, ir.OpLoad); v != 4 {
				t.Errorf("loads of vec=%d at a multiple_of(4) start; want 4", v)
			}
		},
	},
	{
		// Loads of data read once (MemAttr.EvictFirst: on NVIDIA under
		// an L2 evict-first policy): 16-byte vectors of f32 from a tensor
		// only read and from one written in place; bf16 at offsets known
		// to be multiples of 4 and of 2 only (8- and 4-byte vectors).
		Name: "loads read once", Warps: 2, Div: map[string]int{"s4": 4, "s2": 2},
		Build: func(b *ir.Builder) {
			x, y := b.Param("x", ir.F32), b.Param("y", ir.F32)
			z := b.Param("z", ir.F32)
			h, h4, h2 := b.Param("h", ir.BF16), b.Param("h4", ir.F32), b.Param("h2", ir.F32)
			n, s4, s2 := b.Size("n"), b.Size("s4"), b.Size("s2")
			offs := b.Add(b.Mul(b.ProgramID(0), 256), b.Arange(256))
			m := b.Lt(offs, n)
			b.Store(b.PtrAdd(y, offs), b.Add(b.LoadOnce(b.PtrAdd(x, offs), m, nil), 1), m)
			b.Store(b.PtrAdd(z, offs), b.Mul(b.LoadOnce(b.PtrAdd(z, offs), m, nil), 2), m)
			b.Store(b.PtrAdd(h4, offs), b.Cast(b.LoadOnce(b.PtrAdd(h, b.Add(offs, s4)), m, nil), ir.F32), m)
			b.Store(b.PtrAdd(h2, offs), b.Cast(b.LoadOnce(b.PtrAdd(h, b.Add(offs, s2)), m, nil), ir.F32), m)
		},
		Inputs: func(r *rand.Rand) ([3]int, []any) {
			const n = 1000
			x, z, h := make([]float32, n), make([]float32, n), make([]byte, 2*(n+4))
			for i := range x {
				x[i], z[i] = float32(r.NormFloat64()), float32(i)*0.25-7 // z from i: written in place, Want recomputes it
			}
			for i := 0; i < n+4; i++ {
				binary.LittleEndian.PutUint16(h[2*i:], uint16(math.Float32bits(float32(r.NormFloat64()))>>16))
			}
			return [3]int{4, 1, 1}, []any{F32s(x), make([]byte, 4*n), F32s(z), h, make([]byte, 4*n), make([]byte, 4*n), n, 4, 2}
		},
		Want: func(t testing.TB, args []any) {
			x, y, z, h := args[0].([]byte), args[1].([]byte), args[2].([]byte), args[3].([]byte)
			bf := func(i int) float32 { return math.Float32frombits(uint32(binary.LittleEndian.Uint16(h[2*i:])) << 16) }
			for i := 0; i < args[6].(int); i++ {
				if got, want := GetF32(y, i), GetF32(x, i)+1; got != want {
					t.Fatalf("y[%d] = %v, want %v", i, got, want)
				}
				if got, want := GetF32(z, i), (float32(i)*0.25-7)*2; got != want {
					t.Fatalf("z[%d] = %v, want %v", i, got, want)
				}
				if got, want := GetF32(args[4].([]byte), i), bf(i+4); got != want {
					t.Fatalf("h4[%d] = %v, want %v", i, got, want)
				}
				if got, want := GetF32(args[5].([]byte), i), bf(i+2); got != want {
					t.Fatalf("h2[%d] = %v, want %v", i, got, want)
				}
			}
		},
		Lowered: func(t testing.TB, f *ir.Func) {
			n := 0
			f.Walk(func(v *ir.Value) {
				if v.Op == ir.OpLoad {
					n++
					if !v.Mem().EvictFirst {
						t.Errorf("%s: the load lost EvictFirst in lowering", v.LongString())
					}
				}
			})
			if n != 4 {
				t.Errorf("%d loads; want 4", n)
			}
		},
	},
	{
		// An if region: programs past the last tile of their jagged group
		// do nothing (their output cells keep the sentinel), and a barrier
		// inside the region (the reduction's) is safe, the condition being
		// the same in every lane.
		Name: "if region", Warps: 2,
		Build: func(b *ir.Builder) {
			ends := b.Param("ends", ir.I32)
			x := b.Param("x", ir.F32)
			y := b.Param("y", ir.F32)
			g, blk := b.ProgramID(1), b.ProgramID(0)
			lo := b.Load(b.PtrAdd(ends, g), nil, nil)
			hi := b.Load(b.PtrAdd(ends, b.Add(g, 1)), nil, nil)
			start := b.Add(lo, b.Mul(blk, 128))
			b.If(b.Lt(start, hi), func() {
				offs := b.Add(start, b.Arange(128))
				m := b.Lt(offs, hi)
				s := b.Reduce(b.Load(b.PtrAdd(x, offs), m, -3.5), 0, ir.RMax) // masked off: -3.5
				b.Store(b.PtrAdd(y, b.Add(b.Mul(g, 8), blk)), s, nil)
			})
		},
		Inputs: func(r *rand.Rand) ([3]int, []any) {
			ends := []int32{0, 300, 300, 301, 1000} // an empty group, a one-row group
			x := make([]float32, 1000)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			y := make([]float32, 8*(len(ends)-1))
			for i := range y {
				y[i] = -7 // the sentinel
			}
			return [3]int{8, len(ends) - 1, 1}, []any{I32s(ends), F32s(x), F32s(y)}
		},
		Want: func(t testing.TB, args []any) {
			ends, x, y := args[0].([]byte), args[1].([]byte), args[2].([]byte)
			for g := 0; g+1 < len(ends)/4; g++ {
				lo, hi := int(GetI32(ends, g)), int(GetI32(ends, g+1))
				for blk := 0; blk < 8; blk++ {
					want := float32(-7)
					if s := lo + blk*128; s < hi {
						want = float32(math.Inf(-1))
						for i := s; i < min(s+128, hi); i++ {
							want = float32(math.Max(float64(want), float64(GetF32(x, i))))
						}
						if hi-s < 128 {
							want = float32(math.Max(float64(want), -3.5)) // masked-off lanes load other
						}
					}
					if got := GetF32(y, g*8+blk); got != want {
						t.Fatalf("group %d block %d: %v, want %v", g, blk, got, want)
					}
				}
			}
		},
	},
	ropeCase("rotate within a lane", 1, 8, 4, ir.OpGatherRegs),
	ropeCase("rotate by a shuffle", 4, 1, 128, ir.OpShflXor),
	ropeCase("rotate through LDS", 4, 1, 512, ir.OpLDSLoad),
	{
		// Bitcast, shifts and masks: the exponent of each float and the
		// power of two it makes (an E8M0 scale).
		Name: "bitcast and shifts", Warps: 1,
		Build: func(b *ir.Builder) {
			x := b.Param("x", ir.F32)
			e := b.Param("e", ir.I32)
			p := b.Param("p", ir.F32)
			u := b.Param("u", ir.I32)
			offs := b.Arange(64)
			bits := b.Bitcast(b.Load(b.PtrAdd(x, offs), nil, nil), ir.I32)
			exp := b.And(b.ShrU(bits, 23), 0xff)
			b.Store(b.PtrAdd(e, offs), b.Xor(exp, b.Shr(bits, 31)), nil) // -1 ^ exp for negatives
			b.Store(b.PtrAdd(p, offs), b.Bitcast(b.Shl(exp, 23), ir.F32), nil)
			// Unmasked: a logical shift of a negative value fills with zeros.
			b.Store(b.PtrAdd(u, offs), b.ShrU(bits, 28), nil)
		},
		Inputs: func(r *rand.Rand) ([3]int, []any) {
			x := make([]float32, 64)
			for i := range x {
				x[i] = math.Float32frombits(r.Uint32())
			}
			x[0], x[1], x[2] = float32(math.Inf(-1)), math.Float32frombits(1), -0.0
			return [3]int{1, 1, 1}, []any{F32s(x), make([]byte, 256), make([]byte, 256), make([]byte, 256)}
		},
		Want: func(t testing.TB, args []any) {
			x, e, p, u := args[0].([]byte), args[1].([]byte), args[2].([]byte), args[3].([]byte)
			for i := 0; i < 64; i++ {
				bits := math.Float32bits(GetF32(x, i))
				exp := int32(bits >> 23 & 0xff)
				want := exp
				if bits>>31 != 0 {
					want = ^exp
				}
				if got := GetI32(e, i); got != want {
					t.Fatalf("x[%d] = %#x: e = %d, want %d", i, bits, got, want)
				}
				if got := math.Float32bits(GetF32(p, i)); got != uint32(exp)<<23 {
					t.Fatalf("x[%d] = %#x: p = %#x, want %#x", i, bits, got, uint32(exp)<<23)
				}
				if got := GetI32(u, i); got != int32(bits>>28) {
					t.Fatalf("x[%d] = %#x: shr_u 28 = %d, want %d", i, bits, got, bits>>28)
				}
			}
		},
	},
	{
		// Rows staged in LDS (stage, unstage): a [64, 32] tile of bf16 x
		// (16-byte copies where K is a multiple of 8) and one of f32 w
		// (4-byte copies: K unknown), rows masked past M and columns past
		// K, read back in two halves of 32 rows at a row offset and
		// stored: y = x as f32, z = w + 1.
		Name: "rows staged in LDS", Warps: 4, Div: map[string]int{"K": 8},
		Build: func(b *ir.Builder) {
			x, w := b.Param("x", ir.BF16), b.Param("w", ir.F32)
			y, z := b.Param("y", ir.F32), b.Param("z", ir.F32)
			m, k, kw := b.Size("M"), b.Size("K"), b.Size("KW")
			tile := func(rows, cols, ld *ir.Value) *ir.Value { return b.Add(b.Mul(b.Col(rows), ld), b.Row(cols)) }
			rows, cols := b.Arange(64), b.Add(b.Mul(b.ProgramID(0), 32), b.Arange(32))
			sx := b.Stage(b.PtrAdd(x, tile(rows, cols, k)), b.And(b.Col(b.Lt(rows, m)), b.Row(b.Lt(cols, k))))
			sw := b.Stage(b.PtrAdd(w, tile(rows, cols, kw)), b.And(b.Col(b.Lt(rows, m)), b.Row(b.Lt(cols, kw))))
			for h := 0; h < 2; h++ {
				r := b.Add(b.Arange(32), 32*h)
				c := b.Add(b.Mul(b.ProgramID(0), 32), b.Arange(32))
				b.Store(b.PtrAdd(y, tile(r, c, k)), b.Cast(b.Unstage(sx, 32*h, 32), ir.F32), b.And(b.Col(b.Lt(r, m)), b.Row(b.Lt(c, k))))
				b.Store(b.PtrAdd(z, tile(r, c, kw)), b.Add(b.Unstage(sw, 32*h, 32), 1), b.And(b.Col(b.Lt(r, m)), b.Row(b.Lt(c, kw))))
			}
		},
		Inputs: func(r *rand.Rand) ([3]int, []any) {
			const m, k, kw = 50, 40, 37
			x, w := make([]byte, 2*m*k), make([]float32, m*kw)
			for i := 0; i < m*k; i++ {
				binary.LittleEndian.PutUint16(x[2*i:], uint16(math.Float32bits(float32(r.NormFloat64()))>>16))
			}
			for i := range w {
				w[i] = float32(r.NormFloat64())
			}
			return [3]int{2, 1, 1}, []any{x, F32s(w), make([]byte, 4*m*k), make([]byte, 4*m*kw), m, k, kw}
		},
		Want: func(t testing.TB, args []any) {
			x, w, y, z := args[0].([]byte), args[1].([]byte), args[2].([]byte), args[3].([]byte)
			m, k, kw := args[4].(int), args[5].(int), args[6].(int)
			for i := 0; i < m*k; i++ {
				if got, want := GetF32(y, i), math.Float32frombits(uint32(binary.LittleEndian.Uint16(x[2*i:]))<<16); got != want {
					t.Fatalf("y[%d][%d] = %v, want %v", i/k, i%k, got, want)
				}
			}
			for i := 0; i < m*kw; i++ {
				if got, want := GetF32(z, i), GetF32(w, i)+1; got != want {
					t.Fatalf("z[%d][%d] = %v, want %v", i/kw, i%kw, got, want)
				}
			}
		},
		Lowered: func(t testing.TB, f *ir.Func) {
			var vecs []int
			f.Walk(func(v *ir.Value) {
				if v.Op == ir.OpLDSCopy {
					vecs = append(vecs, v.Mem().Vec)
				}
			})
			if len(vecs) != 2 || vecs[0] != 8 || vecs[1] != 1 {
				t.Errorf("lds_copy vectors %v; want [8 1] (bf16 16 bytes, f32 one at a time)", vecs)
			}
		},
	},
	{
		// Maxima and minima of signed zeros: per column of a [64, 32] f32
		// tile, the max of |x| (never −0: the hardware's max where the
		// target's keeps maxNum, ir.NoNegZero), and the max and min of x
		// itself (+0 above −0, so the prelude's), the waves' partials of
		// all three meeting in LDS. Columns of only −0, of both zeros, of
		// negatives and −0, of NaNs and zeros.
		Name: "maxima of signed zeros", Warps: 4,
		Build: func(b *ir.Builder) {
			x, y := b.Param("x", ir.F32), b.Param("y", ir.F32)
			rows, cols := b.Arange(64), b.Arange(32)
			v := b.Load(b.PtrAdd(x, b.Add(b.Mul(b.Col(rows), 32), b.Row(cols))), nil, 0.0)
			for i, r := range []*ir.Value{b.Reduce(b.Abs(v), 0, ir.RMax), b.Reduce(v, 0, ir.RMax), b.Reduce(v, 0, ir.RMin)} {
				b.Store(b.PtrAdd(y, b.Add(cols, 32*i)), r, nil)
			}
		},
		Inputs: func(r *rand.Rand) ([3]int, []any) {
			negZero, nan := float32(math.Copysign(0, -1)), float32(math.NaN())
			x := make([]float32, 64*32)
			for i := range x {
				row, col := i/32, i%32
				switch col % 4 {
				case 0:
					x[i] = negZero
				case 1:
					x[i] = []float32{0, negZero}[r.IntN(2)]
				case 2:
					x[i] = []float32{negZero, -float32(r.ExpFloat64())}[r.IntN(2)]
				default:
					x[i] = []float32{0, negZero, nan, -nan}[r.IntN(4)]
				}
				if col >= 16 && row == 63-col%16 { // a lone +0 or −0 in one row
					x[i] = []float32{0, negZero}[col%2]
				}
			}
			return [3]int{1, 1, 1}, []any{F32s(x), make([]byte, 4*3*32)}
		},
		Want: func(t testing.TB, args []any) {
			x, y := args[0].([]byte), args[1].([]byte)
			// maxNum and minNum as IEEE 754-2008 define them, with +0 > −0.
			pick := func(a, b float32, max bool) float32 {
				switch {
				case a != a:
					return b
				case b != b:
					return a
				case a == b:
					if math.Signbit(float64(a)) == max {
						return b
					}
					return a
				case (a > b) == max:
					return a
				}
				return b
			}
			for c := 0; c < 32; c++ {
				want := [3]float32{float32(math.NaN()), float32(math.NaN()), float32(math.NaN())}
				for r := 0; r < 64; r++ {
					v := GetF32(x, r*32+c)
					want[0] = pick(want[0], float32(math.Abs(float64(v))), true)
					want[1] = pick(want[1], v, true)
					want[2] = pick(want[2], v, false)
				}
				for i, w := range want {
					if got := GetF32(y, i*32+c); math.Float32bits(got) != math.Float32bits(w) && !(got != got && w != w) {
						t.Errorf("column %d, %s: %v (%#08x), want %v (%#08x)", c, []string{"max |x|", "max", "min"}[i], got, math.Float32bits(got), w, math.Float32bits(w))
					}
				}
			}
		},
	},
	{
		// An amax carried by a loop: per column of x[M, 32], the max of
		// |x| folded into an accumulator from +0, |x| written first. The
		// accumulator is never NaN and never −0 (ir.NoNaN, ir.NoNegZero),
		// whatever x holds: NaN, ±0, ±Inf.
		Name: "an amax carried by a loop", Warps: 2,
		Build: func(b *ir.Builder) {
			x, y := b.Param("x", ir.F32), b.Param("y", ir.F32)
			m := b.Size("M")
			cols := b.Arange(32)
			acc := b.For(0, m, 16, []*ir.Value{b.Full(ir.F32, 0, 16, 32)}, func(i *ir.Value, c []*ir.Value) []*ir.Value {
				rows := b.Add(i, b.Arange(16))
				v := b.Load(b.PtrAdd(x, b.Add(b.Mul(b.Col(rows), 32), b.Row(cols))), b.Col(b.Lt(rows, m)), 0.0)
				return []*ir.Value{b.Max(b.Abs(v), c[0])}
			})
			b.Store(b.PtrAdd(y, cols), b.Reduce(acc[0], 0, ir.RMax), nil)
		},
		Inputs: func(r *rand.Rand) ([3]int, []any) {
			const m = 50
			negZero, nan, inf := float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1))
			x := make([]float32, m*32)
			for i := range x {
				switch col := i % 32; {
				case col < 4: // only zeros and NaNs
					x[i] = []float32{0, negZero, nan, -nan}[r.IntN(4)]
				case col < 8:
					x[i] = []float32{negZero, -inf, float32(r.NormFloat64()), nan}[r.IntN(4)]
				default:
					x[i] = float32(r.NormFloat64() * 100)
				}
			}
			return [3]int{1, 1, 1}, []any{F32s(x), make([]byte, 4*32), m}
		},
		Want: func(t testing.TB, args []any) {
			x, y, m := args[0].([]byte), args[1].([]byte), args[2].(int)
			for c := 0; c < 32; c++ {
				want := uint32(0) // +0, then the largest |x| that is not NaN
				for r := 0; r < m; r++ {
					if v := math.Float32bits(GetF32(x, r*32+c)) &^ (1 << 31); v <= 0x7f800000 && v > want {
						want = v
					}
				}
				if got := math.Float32bits(GetF32(y, c)); got != want {
					t.Errorf("column %d: %#08x, want %#08x", c, got, want)
				}
			}
		},
	},
	{
		// Programs waiting on each other: each adds its id + 1 to a sum,
		// signals a counter and waits until every program has; then each
		// reads the sum, which must be whole. The grid asks for more
		// programs than any device holds at once: a launch runs as many as
		// fit (the interpreter 8), and the counter says how many ran.
		Name: "programs waiting on each other", Warps: 4,
		Build: func(b *ir.Builder) {
			sum, count, seen := b.Param("sum", ir.I32), b.Param("count", ir.I32), b.Param("seen", ir.I32)
			pid := b.ProgramID(0)
			b.AtomicAdd(sum, b.Add(pid, 1), nil, ir.Relaxed, ir.ScopeAgent)
			b.Signal(count, b.Const(ir.I32, 1))
			b.Wait(count, b.NumPrograms(0))
			b.Store(b.PtrAdd(seen, pid), b.Load(sum, nil, nil), nil)
		},
		Inputs: func(r *rand.Rand) ([3]int, []any) {
			const n = 1 << 16
			return [3]int{n, 1, 1}, []any{make([]byte, 4), make([]byte, 4), make([]byte, 4*n)}
		},
		Want: func(t testing.TB, args []any) {
			sum, count, seen := args[0].([]byte), args[1].([]byte), args[2].([]byte)
			n := int(GetI32(count, 0))
			if n < 1 || n > len(seen)/4 {
				t.Fatalf("%d programs ran of a grid of %d", n, len(seen)/4)
			}
			whole := int32(n * (n + 1) / 2)
			if GetI32(sum, 0) != whole {
				t.Errorf("sum %d after %d programs, want %d", GetI32(sum, 0), n, whole)
			}
			for p := range len(seen) / 4 {
				want := whole
				if p >= n {
					want = 0 // no such program ran
				}
				if got := GetI32(seen, p); got != want {
					t.Fatalf("program %d of %d read sum %d after the wait, want %d", p, n, got, want)
				}
			}
		},
	},
	{
		// Atomics that return the old value: each program takes a ticket
		// from an i32 counter and adds its id to an f32 total; the tickets
		// are a permutation, each program's old total and its ticket agree
		// with some order.
		Name: "atomics returning old values", Warps: 2,
		Build: func(b *ir.Builder) {
			counter := b.Param("counter", ir.I32)
			total := b.Param("total", ir.F32)
			tickets := b.Param("tickets", ir.I32)
			olds := b.Param("olds", ir.F32)
			pid := b.ProgramID(0)
			tk := b.AtomicAdd(counter, 1, nil, ir.Relaxed, ir.ScopeAgent)
			old := b.AtomicAdd(total, b.Cast(pid, ir.F32), nil, ir.AcqRel, ir.ScopeAgent)
			// A tile of atomics too: lanes hold replicas, one performs each.
			cols := b.Arange(16)
			b.AtomicMax(b.PtrAdd(total, b.Add(cols, 1)), b.Cast(b.Add(pid, cols), ir.F32), nil, ir.Relaxed, ir.ScopeAgent)
			b.Store(b.PtrAdd(tickets, pid), tk, nil)
			b.Store(b.PtrAdd(olds, pid), old, nil)
		},
		Inputs: func(r *rand.Rand) ([3]int, []any) {
			const n = 37
			return [3]int{n, 1, 1}, []any{make([]byte, 4), make([]byte, 4*17), make([]byte, 4*n), make([]byte, 4*n)}
		},
		Want: func(t testing.TB, args []any) {
			counter, total, tickets, olds := args[0].([]byte), args[1].([]byte), args[2].([]byte), args[3].([]byte)
			n := len(tickets) / 4
			if GetI32(counter, 0) != int32(n) {
				t.Errorf("counter %d after %d programs", GetI32(counter, 0), n)
			}
			if want := float32(n * (n - 1) / 2); GetF32(total, 0) != want {
				t.Errorf("total %v, want %v", GetF32(total, 0), want)
			}
			var ts []int
			for i := 0; i < n; i++ {
				ts = append(ts, int(GetI32(tickets, i)))
			}
			sort.Ints(ts)
			for i, tk := range ts {
				if tk != i {
					t.Fatalf("tickets %v: not a permutation of 0..%d", ts, n-1)
				}
			}
			// The old totals are sums of distinct program ids, each below
			// the final total.
			for i := 0; i < n; i++ {
				if o := GetF32(olds, i); o < 0 || o > GetF32(total, 0)-float32(i) || o != float32(int(o)) {
					t.Fatalf("program %d saw old total %v", i, o)
				}
			}
			for j := 0; j < 16; j++ {
				if got, want := GetF32(total, j+1), float32(n-1+j); got != want {
					t.Fatalf("max cell %d = %v, want %v", j, got, want)
				}
			}
		},
	},
}
