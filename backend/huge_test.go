package backend

import (
	"math"
	"runtime"
	"sync"
	"testing"

	"github.com/fp8gen/fp8gen/internal/refnum"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/ops"
)

// countParallel runs check(i) for every i in [0, n) on all CPUs, each
// worker with its own check (and scratch) from newCheck, and returns the
// sum of what the checks count.
func countParallel(n int, newCheck func() func(i int) int) int {
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	counts := make([]int, workers)
	for w := range workers {
		wg.Go(func() {
			check := newCheck()
			for i := w; i < n; i += workers {
				counts[w] += check(i)
			}
		})
	}
	wg.Wait()
	total := 0
	for _, c := range counts {
		total += c
	}
	return total
}

// hugeX fills bf16 x[m, k] from a hash of each index, every row with one
// larger element so that rows have their own scales; in parallel.
func hugeX(x *ops.Tensor, m, k int) {
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for w := range workers {
		wg.Go(func() {
			for r := w; r < m; r += workers {
				for j := 0; j < k; j++ {
					i := r*k + j
					h := uint32(i) * 2654435761
					bits := uint16(0x3f00 | h>>25 | h&0x8000) // ±[0.5, 1) and a little
					if j == r%k {
						bits = ir.F32ToBF16(float32(r%97+1) * 3)
					}
					x.Data[2*i], x.Data[2*i+1] = byte(bits), byte(bits>>8)
				}
			}
		})
	}
	wg.Wait()
}

// A tensor of more than 3·10^9 elements, past 32-bit indexing: rowwise_cast
// plans 64-bit index arithmetic and every byte of q and inv_scale matches
// the reference (checked row by row, in parallel).
func TestGPUHugeTensor(t *testing.T) {
	g := openGPU(t)
	sh := ops.Shape{"M": 200000, "K": 16384} // 3.28e9 elements: x is 6.6 GB
	p, err := ops.Rowwise.NewPlan(g.T, sh, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Index != ir.I64 {
		t.Fatalf("index %v; want i64", p.Index)
	}
	m, k := sh["M"], sh["K"]
	in := ops.Tensors(p.SpecsOf(ops.Input))
	hugeX(in["x"], m, k)
	all, out := p.WithOutputs(in)
	st, err := g.Run(p, all)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v elements (x %d B) in %v on %s, schedule %v", m*k, in["x"].Bytes(), st.Elapsed, g.T.Name, p.Schedule)
	n := countParallel(m, func() func(r int) int {
		row := make([]float32, k)
		return func(r int) (bad int) {
			amax := float32(0)
			for j := range row {
				i := r*k + j
				row[j] = math.Float32frombits(uint32(in["x"].Data[2*i])<<16 | uint32(in["x"].Data[2*i+1])<<24)
				amax = refnum.MaxNum(amax, refnum.Abs(row[j]))
			}
			scale := p.Format.Max / refnum.MaxNum(amax, float32(ops.Eps))
			for j, v := range row {
				if out["q"].Data[r*k+j] != refnum.EncodeFP8(p.Format, v*scale) {
					bad++
				}
			}
			if math.Float32bits(float32(out["inv_scale"].Float(r))) != math.Float32bits(1/scale) {
				bad++
			}
			return bad
		}
	})
	if n != 0 {
		t.Errorf("%d elements differ from the reference", n)
	}
}

// DeepSeek-V3's full expert weights, w[256, 7168, 2048] (3.76·10^9
// elements, 7.5 GB of bf16): expert_colwise_cast plans 64-bit indexing and
// every byte matches the reference, computed per expert in parallel.
func TestGPUHugeExpert(t *testing.T) {
	g := openGPU(t)
	sh := ops.Shape{"E": 256, "K": 7168, "N": 2048}
	p, err := ops.ExpertColwise.NewPlan(g.T, sh, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Index != ir.I64 {
		t.Fatalf("index %v; want i64", p.Index)
	}
	ne, k, n := sh["E"], sh["K"], sh["N"]
	in := ops.Tensors(p.SpecsOf(ops.Input))
	hugeX(in["w"], ne*k, n)
	all, out := p.WithOutputs(in)
	st, err := g.Run(p, all)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v elements (w %d B) in %v on %s, schedule %v", ne*k*n, in["w"].Bytes(), st.Elapsed, g.T.Name, p.Schedule)
	w := in["w"].Data
	val := func(i int) float32 { return math.Float32frombits(uint32(w[2*i])<<16 | uint32(w[2*i+1])<<24) }
	total := countParallel(ne, func() func(ex int) int {
		scale := make([]float32, n)
		return func(ex int) (bad int) {
			clear(scale)
			for i := 0; i < k; i++ { // amax, row by row
				for j := 0; j < n; j++ {
					scale[j] = refnum.MaxNum(scale[j], refnum.Abs(val((ex*k+i)*n+j)))
				}
			}
			for j := range scale {
				scale[j] = p.Format.Max / refnum.MaxNum(scale[j], float32(ops.Eps))
				if math.Float32bits(float32(out["inv_scale"].Float(ex*n+j))) != math.Float32bits(1/scale[j]) {
					bad++
				}
			}
			for i := 0; i < k; i++ {
				for j := 0; j < n; j++ {
					e := (ex*k+i)*n + j
					if out["q"].Data[e] != refnum.EncodeFP8(p.Format, val(e)*scale[j]) {
						bad++
					}
				}
			}
			return bad
		}
	})
	if total != 0 {
		t.Errorf("%d elements differ from the reference", total)
	}
}

// countParallel visits every index once and sums what the checks count.
func TestCountParallel(t *testing.T) {
	for _, n := range []int{0, 1, 7, 1000} {
		var mu sync.Mutex
		seen := map[int]int{}
		got := countParallel(n, func() func(int) int {
			return func(i int) int {
				mu.Lock()
				seen[i]++
				mu.Unlock()
				return i
			}
		})
		if got != n*(n-1)/2 || len(seen) != n {
			t.Errorf("n=%d: sum %d, %d indices seen; want %d, %d", n, got, len(seen), n*(n-1)/2, n)
		}
		for i, c := range seen {
			if c != 1 || i < 0 || i >= n {
				t.Errorf("n=%d: index %d visited %d times", n, i, c)
			}
		}
	}
}
