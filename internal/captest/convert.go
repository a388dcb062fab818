package captest

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fp8gen/fp8gen/fp8"
	"github.com/fp8gen/fp8gen/internal/refnum"
	"github.com/fp8gen/fp8gen/ir"
)

// Conversions is the exhaustive conversion check: every one of the 65536
// bf16 codes to each FP8 format and back to f32, held to refnum's encoder
// and decoder (written from the formats' definitions, apart from the
// kernels' conversions). The bf16 codes hold every kind of input at once:
// zeros, subnormals, each binade's ties between FP8 neighbours, values
// just past the format max, ±Inf, quiet and signaling NaNs of both signs.
func Conversions() []Case {
	var cs []Case
	for _, f := range fp8.Formats() {
		cs = append(cs, convertCase(f))
	}
	return cs
}

func convertCase(f *fp8.Format) Case {
	const block, n = 1024, 1 << 16
	return Case{
		Name: "every bf16 to " + f.Name, Warps: 4,
		Build: func(b *ir.Builder) {
			x := b.Param("x", ir.BF16)
			q := b.Param("q", ir.FP8(f))
			back := b.Param("back", ir.F32)
			offs := b.Add(b.Mul(b.ProgramID(0), block), b.Arange(block))
			v := b.Cast(b.Cast(b.Load(b.PtrAdd(x, offs), nil, nil), ir.F32), ir.FP8(f))
			b.Store(b.PtrAdd(q, offs), v, nil)
			b.Store(b.PtrAdd(back, offs), b.Cast(v, ir.F32), nil)
		},
		Inputs: func(*rand.Rand) ([3]int, []any) {
			x := make([]byte, 2*n)
			for c := range n {
				binary.LittleEndian.PutUint16(x[2*c:], uint16(c))
			}
			return [3]int{n / block, 1, 1}, []any{x, make([]byte, n), make([]byte, 4*n)}
		},
		Want: func(t testing.TB, args []any) {
			q, back := args[1].([]byte), args[2].([]byte)
			bad := 0
			for c := range n {
				x := math.Float32frombits(uint32(c) << 16) // bf16 is the top half of an f32
				want := refnum.EncodeFP8(f, x)
				wantBack := refnum.DecodeFP8(f, want)
				gotBack := GetF32(back, c)
				okBack := math.Float32bits(gotBack) == math.Float32bits(wantBack) ||
					math.IsNaN(float64(gotBack)) && math.IsNaN(float64(wantBack))
				if q[c] != want || !okBack {
					if bad++; bad <= 8 {
						t.Errorf("%s: bf16 %#04x (%g) → %#02x, back %g; want %#02x, back %g", f.Name, c, x, q[c], gotBack, want, wantBack)
					}
				}
			}
			if bad > 8 {
				t.Errorf("%s: %d of %d bf16 codes wrong", f.Name, bad, n)
			}
		},
	}
}

// All is Cases and Conversions.
func All() []Case { return append(append([]Case(nil), Cases...), Conversions()...) }

// Named is the case of All called name; the test fails without one.
func Named(t testing.TB, name string) Case {
	t.Helper()
	for _, c := range All() {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no capability case %q", name)
	return Case{}
}
