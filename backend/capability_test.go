package backend

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fp8gen/fp8gen/internal/captest"
	"github.com/fp8gen/fp8gen/interp"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/target"
)

// The IR capabilities the next kernels need (package captest), each run in
// the interpreter for every target and on the GPU where there is one, and
// checked against plain Go.

func TestCapabilities(t *testing.T) {
	for _, c := range captest.All() {
		for _, tn := range target.Names() {
			t.Run(c.Name+"/"+tn, func(t *testing.T) {
				tg, _ := target.Lookup(tn)
				f := c.Lower(t, tg)
				if c.Lowered != nil {
					c.Lowered(t, f)
				}
				grid, args := c.Inputs(rand.New(rand.NewPCG(1, 2)))
				if err := interp.Launch(f, grid, args); err != nil {
					t.Fatal(err)
				}
				c.Want(t, args)
			})
		}
	}
}

func TestGPUCapabilities(t *testing.T) {
	g := openGPU(t)
	for _, c := range captest.All() {
		t.Run(c.Name, func(t *testing.T) {
			f := c.Lower(t, g.T)
			grid, args := c.Inputs(rand.New(rand.NewPCG(1, 2)))
			if err := g.RunFunc(context.Background(), f, grid, args); err != nil {
				t.Fatal(err)
			}
			c.Want(t, args)
			if bufs, bytes := g.Dev.Live(); bufs != 0 {
				t.Errorf("RunFunc left %d buffers (%d B) allocated", bufs, bytes)
			}
		})
	}
}

// sumKernel is row sums of x[rows, 256] in f32: a reduction whose
// association follows the layout, which follows the waves per block.
func sumKernel(b *ir.Builder) {
	x := b.Param("x", ir.F32)
	y := b.Param("y", ir.F32)
	rows := b.Add(b.Mul(b.ProgramID(0), 4), b.Arange(4))
	offs := b.Add(b.Mul(b.Col(rows), 256), b.Row(b.Arange(256)))
	b.Store(b.PtrAdd(y, rows), b.Reduce(b.Load(b.PtrAdd(x, offs), nil, nil), 1, ir.RSum), nil)
}

// sumRun runs sumKernel at warps waves a block, on the GPU if g is set,
// else in the interpreter, and returns y's bits.
func sumRun(t *testing.T, g *GPU, tg *target.Target, warps int, x []byte, rows int) []byte {
	t.Helper()
	f := captest.Case{Build: sumKernel, Warps: warps}.Lower(t, tg)
	args := []any{slices.Clone(x), make([]byte, 4*rows)}
	var err error
	if g != nil {
		err = g.RunFunc(context.Background(), f, [3]int{rows / 4, 1, 1}, args)
	} else {
		err = interp.Launch(f, [3]int{rows / 4, 1, 1}, args)
	}
	if err != nil {
		t.Fatal(err)
	}
	return args[1].([]byte)
}

// The sum's determinism contract: for one schedule, the same bits in the
// interpreter and in every GPU run; across schedules within 2^-20 of the
// f64 sum, relative to the sum of |x|.
func sumData(rows int) []byte {
	r := rand.New(rand.NewPCG(5, 6))
	x := make([]float32, rows*256)
	for i := range x {
		x[i] = float32(r.NormFloat64() * math.Exp(r.NormFloat64()*3))
	}
	return captest.F32s(x)
}

func checkSumTolerance(t *testing.T, x, y []byte, rows int) {
	t.Helper()
	for r := 0; r < rows; r++ {
		var s, abs float64
		for i := 0; i < 256; i++ {
			v := float64(captest.GetF32(x, r*256+i))
			s += v
			abs += math.Abs(v)
		}
		if d := math.Abs(float64(captest.GetF32(y, r)) - s); d > abs*math.Pow(2, -20) {
			t.Errorf("row %d: sum %v, f64 %v: off by %g, more than 2^-20 of %g", r, captest.GetF32(y, r), s, d, abs)
		}
	}
}

func TestSumContract(t *testing.T) {
	const rows = 64
	x := sumData(rows)
	tg, _ := target.Lookup("sm_90")
	for _, warps := range []int{1, 2, 4} {
		y := sumRun(t, nil, tg, warps, x, rows)
		checkSumTolerance(t, x, y, rows)
		if again := sumRun(t, nil, tg, warps, x, rows); string(again) != string(y) {
			t.Errorf("warps %d: two interpreter runs differ", warps)
		}
	}
}

func TestGPUSumContract(t *testing.T) {
	g := openGPU(t)
	const rows = 64
	x := sumData(rows)
	for _, warps := range []int{1, 2, 4} {
		t.Run(fmt.Sprint("warps", warps), func(t *testing.T) {
			want := sumRun(t, nil, g.T, warps, x, rows)
			for run := 0; run < 3; run++ {
				if got := sumRun(t, g, g.T, warps, x, rows); string(got) != string(want) {
					t.Fatalf("GPU run %d differs from the interpreter's bits at warps %d", run, warps)
				}
			}
		})
	}
}
