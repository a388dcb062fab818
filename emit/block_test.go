package emit

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/fp8gen/fp8gen/interp"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/lower"
	"github.com/fp8gen/fp8gen/target"
)

// blockShim runs an emitted NVIDIA kernel's block on host threads, one per
// GPU thread: __syncthreads is a barrier of the block, __shfl_xor_sync an
// exchange through one slot per thread between two barriers of the warp,
// and __shared__ arrays are function statics, one block at a time. Built
// with AddressSanitizer, a read or write past an LDS array fails the run.
const blockShim = `
#include <barrier>
#include <thread>
#include <vector>
struct dim3 { unsigned x, y, z; };
static thread_local dim3 threadIdx;
static dim3 blockIdx, gridDim, blockDim;
#define __global__
#define __launch_bounds__(n)
#define __shared__ static
#define __align__(n) alignas(n)
static inline uint2 make_uint2(uint32_t x, uint32_t y) { return uint2{x, y}; }
static inline uint4 make_uint4(uint32_t x, uint32_t y, uint32_t z, uint32_t w) { return uint4{x, y, z, w}; }
static inline int max(int a, int b) { return a > b ? a : b; }
static inline int min(int a, int b) { return a < b ? a : b; }
static inline float gpu_fmaxf(float a, float b) { return a != a ? b : b != b ? a : a > b ? a : b; }
static inline float gpu_fminf(float a, float b) { return a != a ? b : b != b ? a : a < b ? a : b; }
#define fmaxf gpu_fmaxf
#define fminf gpu_fminf

static std::barrier<>* block_barrier;
static std::vector<std::barrier<>*> warp_barriers;
static uint64_t shfl_slot[1024];
static inline void __syncthreads() { block_barrier->arrive_and_wait(); }
template <class T> static T __shfl_xor_sync(unsigned, T v, int lane_mask) {
  const unsigned t = threadIdx.x;
  std::barrier<>* w = warp_barriers[t / 32];
  memcpy(&shfl_slot[t], &v, sizeof v);
  w->arrive_and_wait();
  T r;
  memcpy(&r, &shfl_slot[(t & ~31u) | ((t & 31u) ^ (unsigned)lane_mask)], sizeof r);
  w->arrive_and_wait();
  return r;
}
template <class F> static void run_block(unsigned threads, F kernel) {
  std::barrier<> b(threads);
  block_barrier = &b;
  std::vector<std::barrier<>*> ws;
  for (unsigned w = 0; w < threads / 32; ++w) ws.push_back(new std::barrier<>(32));
  warp_barriers = ws;
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < threads; ++t) ts.emplace_back([t, &kernel] { threadIdx.x = t; kernel(); });
  for (auto& t : ts) t.join();
  for (auto* w : ws) delete w;
}
`

// blockCase is one kernel of the block check: out = body(in), with the
// shapes and element types of both.
type blockCase struct {
	name    string
	in, out ir.DType
	inN     int
	outN    int
	body    func(b *ir.Builder, in, out *ir.Value)
}

func blockCases() []blockCase {
	tile := func(b *ir.Builder, p *ir.Value, rows, cols int) *ir.Value {
		r, c := b.Arange(rows), b.Arange(cols)
		return b.Load(b.PtrAdd(p, b.Add(b.Mul(b.Col(r), cols), b.Row(c))), nil, nil)
	}
	store1 := func(b *ir.Builder, p, x *ir.Value, n int) { b.Store(b.PtrAdd(p, b.Arange(n)), x, nil) }
	return []blockCase{
		// Across the waves: each column's partial in LDS, folded wave by wave.
		{"colmax", ir.F32, ir.F32, 64 * 32, 32, func(b *ir.Builder, in, out *ir.Value) {
			store1(b, out, b.Reduce(tile(b, in, 64, 32), 0, ir.RMax), 32)
		}},
		{"colsum", ir.I32, ir.I32, 128 * 16, 16, func(b *ir.Builder, in, out *ir.Value) {
			store1(b, out, b.Reduce(tile(b, in, 128, 16), 0, ir.RSum), 16)
		}},
		// Within a row: lanes by shuffles, then waves.
		{"rowsum", ir.I32, ir.I32, 8 * 256, 8, func(b *ir.Builder, in, out *ir.Value) {
			store1(b, out, b.Reduce(tile(b, in, 8, 256), 1, ir.RSum), 8)
		}},
		{"rowmin", ir.F32, ir.F32, 4 * 512, 4, func(b *ir.Builder, in, out *ir.Value) {
			store1(b, out, b.Reduce(tile(b, in, 4, 512), 1, ir.RMin), 4)
		}},
		// A lane's registers folded first, in pairs (reduce_regs n=2, printed
		// without a loop) or more, then lanes and waves.
		{"colmax_pairs", ir.F32, ir.F32, 256 * 4, 4, func(b *ir.Builder, in, out *ir.Value) {
			store1(b, out, b.Reduce(tile(b, in, 256, 4), 0, ir.RMax), 4)
		}},
		{"colsum_pairs", ir.I32, ir.I32, 256 * 4, 4, func(b *ir.Builder, in, out *ir.Value) {
			store1(b, out, b.Reduce(tile(b, in, 256, 4), 0, ir.RSum), 4)
		}},
		{"rowmax_quads", ir.F32, ir.F32, 2 * 1024, 2, func(b *ir.Builder, in, out *ir.Value) {
			store1(b, out, b.Reduce(tile(b, in, 2, 1024), 1, ir.RMax), 2)
		}},
		// A transpose through LDS, between barriers.
		{"transpose", ir.I32, ir.I32, 64 * 32, 64 * 32, func(b *ir.Builder, in, out *ir.Value) {
			t := b.Trans(tile(b, in, 64, 32))
			r, c := b.Arange(32), b.Arange(64)
			b.Store(b.PtrAdd(out, b.Add(b.Mul(b.Col(r), 64), b.Row(c))), t, nil)
		}},
	}
}

func blockInput(d ir.DType, n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 3))
	out := make([]byte, 4*n)
	for i := range n {
		var u uint32
		switch d.K {
		case ir.KI32:
			u = uint32(r.IntN(1<<20) - 1<<19)
		case ir.KF32:
			u = math.Float32bits(float32(r.NormFloat64() * 10))
			switch r.IntN(64) {
			case 0:
				u = 0x7fc00000 // NaN: max and min skip it
			case 1:
				u = 0xff800000
			case 2:
				u = 0x80000000
			}
		}
		binary.LittleEndian.PutUint32(out[4*i:], u)
	}
	return out
}

var ldsDecl = regexp.MustCompile(`(alignas\(16\) static unsigned char lds\[\d+\]);`)

// TestEmittedBlocksMatchInterpreter runs emitted kernels that reduce across
// lanes and waves and transpose through LDS on host threads, one per GPU
// thread, under AddressSanitizer, and holds their outputs bit for bit to
// the interpreter's: a shuffle or fold loop that runs a step too far, or a
// barrier too few, fails by behaviour.
func TestEmittedBlocksMatchInterpreter(t *testing.T) {
	tg, err := target.Lookup("sm_90")
	if err != nil {
		t.Fatal(err)
	}
	cases := blockCases()
	var fs []*ir.Func
	var comments []string
	for _, c := range cases {
		b := ir.NewBuilder(c.name, tg)
		in, out := b.Param("in", c.in), b.Param("out", c.out)
		c.body(b, in, out)
		f, err := b.Func()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := lower.Run(f, &lower.Config{Warps: 4, Verify: true}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		fs = append(fs, f)
		comments = append(comments, "host check "+f.Name)
	}
	u, err := Unit(fs, comments)
	if err != nil {
		t.Fatal(err)
	}
	src := strings.ReplaceAll(u.Source, `asm volatile("griddepcontrol.wait;" ::: "memory");`, "")
	if strings.Contains(src, "asm") {
		t.Fatalf("a block-check kernel uses inline PTX, which the host cannot run:\n%s", numbered(src))
	}
	// Each LDS array is zeroed once: AddressSanitizer guards initialized statics.
	src = strings.ReplaceAll(src, "__shared__ __align__(16) unsigned char lds[", "alignas(16) static unsigned char lds[")
	src = ldsDecl.ReplaceAllString(src, "$1 = {};")

	var main strings.Builder
	main.WriteString("\nint main(void) {\n")
	inputs := make([][]byte, len(cases))
	for i, k := range u.Kernels {
		c := cases[i]
		inputs[i] = blockInput(c.in, c.inN, uint64(i))
		fmt.Fprintf(&main, "  { static %s in[%d]; static %s out[%d];\n", ctype(c.in), c.inN, ctype(c.out), c.outN)
		main.WriteString("    if (fread(in, sizeof in, 1, stdin) != 1) return 2;\n")
		fmt.Fprintf(&main, "    run_block(%d, [&] { %s(in, out); });\n", k.Threads, k.Name)
		main.WriteString("    fwrite(out, sizeof out, 1, stdout); }\n")
	}
	main.WriteString("  return fflush(stdout) == 0 ? 0 : 1;\n}\n")
	exe := compileHost(t, hostShim+blockShim+src+main.String(), "-std=c++20", "-pthread", "-fsanitize=address",
		"-fno-omit-frame-pointer", "-ffp-contract=off", "-Wno-unused-variable", "-Wno-unknown-pragmas")

	cmd := exec.Command(exe)
	cmd.Stdin = bytes.NewReader(bytes.Join(inputs, nil))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	got, err := cmd.Output()
	if err != nil {
		t.Fatalf("host blocks: %v\n%s", err, stderr.Bytes())
	}
	off := 0
	for i, f := range fs {
		c := cases[i]
		n := 4 * c.outN
		if off+n > len(got) {
			t.Fatalf("the host program wrote %d bytes; want more", len(got))
		}
		host := got[off : off+n]
		off += n
		want := make([]byte, n)
		if err := interp.Launch(f, [3]int{1, 1, 1}, []any{bytes.Clone(inputs[i]), want}); err != nil {
			t.Fatalf("%s: interpreter: %v", f.Name, err)
		}
		bad := 0
		for j := 0; j < c.outN; j++ {
			h, g := host[4*j:4*j+4], want[4*j:4*j+4]
			if bytes.Equal(h, g) {
				continue
			}
			if bad++; bad <= 4 {
				t.Errorf("%s element %d: emitted C %s, interpreter %s", f.Name, j, show(c.out, h), show(c.out, g))
			}
		}
		if bad > 4 {
			t.Errorf("%s: %d of %d elements differ", f.Name, bad, c.outN)
		}
	}
	if off != len(got) {
		t.Errorf("the host program wrote %d bytes; want %d", len(got), off)
	}
}
