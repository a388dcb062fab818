package emit

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"

	"github.com/fp8gen/fp8gen/interp"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/lower"
	"github.com/fp8gen/fp8gen/target"
)

// kernelShim lets an emitted NVIDIA kernel without barriers, shuffles or
// LDS compile as host C++ on top of hostShim: a launch is a loop over the
// threads of one block, in order, which is exact for a kernel whose
// threads never talk to each other.
const kernelShim = `
struct dim3 { unsigned x, y, z; };
static dim3 threadIdx, blockIdx, gridDim, blockDim;
#define __global__
#define __launch_bounds__(n)
static inline uint2 make_uint2(uint32_t x, uint32_t y) { return uint2{x, y}; }
static inline uint4 make_uint4(uint32_t x, uint32_t y, uint32_t z, uint32_t w) { return uint4{x, y, z, w}; }
static inline int max(int a, int b) { return a > b ? a : b; }
static inline int min(int a, int b) { return a < b ? a : b; }
static inline long long max(long long a, long long b) { return a > b ? a : b; }
static inline long long min(long long a, long long b) { return a < b ? a : b; }
// The GPU's fmaxf and fminf return the other operand for any NaN, a
// signalling one included, where the host's quiet a signalling NaN.
static inline float gpu_fmaxf(float a, float b) { return a != a ? b : b != b ? a : a > b ? a : b; }
static inline float gpu_fminf(float a, float b) { return a != a ? b : b != b ? a : a < b ? a : b; }
#define fmaxf gpu_fmaxf
#define fminf gpu_fminf
`

// elemCase is one kernel of the host check: out[i] = body(a[i], b[i]).
type elemCase struct {
	name string
	in   ir.DType
	out  ir.DType
	body func(b *ir.Builder, x, y *ir.Value) *ir.Value
}

func elemCases() []elemCase {
	var cs []elemCase
	bin := func(f func(b *ir.Builder, x, y any) *ir.Value) func(b *ir.Builder, x, y *ir.Value) *ir.Value {
		return func(b *ir.Builder, x, y *ir.Value) *ir.Value { return f(b, x, y) }
	}
	for _, d := range []ir.DType{ir.I32, ir.I64} {
		minInt := int(math.MinInt32)
		if d == ir.I64 {
			minInt = math.MinInt64
		}
		// safe keeps a divisor from 0 and a dividend from the most negative
		// value, whose quotient by −1 traps on the host.
		safe := func(b *ir.Builder, x, y *ir.Value) (*ir.Value, *ir.Value) {
			return b.Where(b.Eq(x, minInt), 5, x), b.Where(b.Eq(y, 0), 7, y)
		}
		ops := []struct {
			name string
			f    func(b *ir.Builder, x, y any) *ir.Value
		}{
			{"add", (*ir.Builder).Add}, {"sub", (*ir.Builder).Sub}, {"mul", (*ir.Builder).Mul},
			{"max", (*ir.Builder).Max}, {"min", (*ir.Builder).Min},
			{"and", (*ir.Builder).And}, {"or", (*ir.Builder).Or}, {"xor", (*ir.Builder).Xor},
			{"shl", (*ir.Builder).Shl}, {"shr", (*ir.Builder).Shr}, {"shru", (*ir.Builder).ShrU},
		}
		for _, o := range ops {
			cs = append(cs, elemCase{o.name, d, d, bin(o.f)})
		}
		for _, o := range []struct {
			name string
			f    func(b *ir.Builder, x, y any) *ir.Value
		}{{"lt", (*ir.Builder).Lt}, {"le", (*ir.Builder).Le}, {"gt", (*ir.Builder).Gt}, {"ge", (*ir.Builder).Ge},
			{"eq", (*ir.Builder).Eq}, {"ne", (*ir.Builder).Ne}} {
			f := o.f
			cs = append(cs, elemCase{o.name, d, ir.I32, func(b *ir.Builder, x, y *ir.Value) *ir.Value { return b.Cast(f(b, x, y), ir.I32) }})
		}
		cs = append(cs,
			elemCase{"div", d, d, func(b *ir.Builder, x, y *ir.Value) *ir.Value { x, y = safe(b, x, y); return b.Div(x, y) }},
			elemCase{"rem", d, d, func(b *ir.Builder, x, y *ir.Value) *ir.Value { x, y = safe(b, x, y); return b.Rem(x, y) }},
			// Shifts by constants, in and past the width (the emitter masks them).
			elemCase{"shl_const", d, d, func(b *ir.Builder, x, y *ir.Value) *ir.Value { return b.Add(b.Shl(x, 5), b.Shl(y, 67)) }},
			elemCase{"shr_const", d, d, func(b *ir.Builder, x, y *ir.Value) *ir.Value { return b.Xor(b.Shr(x, 3), b.ShrU(y, 33)) }},
			// Compound forms: each is wrong if the emitter drops a needed
			// parenthesis or swaps an operand.
			elemCase{"sub_sub", d, d, func(b *ir.Builder, x, y *ir.Value) *ir.Value { return b.Sub(x, b.Sub(y, x)) }},
			elemCase{"mul_sum", d, d, func(b *ir.Builder, x, y *ir.Value) *ir.Value { return b.Mul(b.Add(x, y), b.Sub(x, y)) }},
			elemCase{"shift_sum", d, d, func(b *ir.Builder, x, y *ir.Value) *ir.Value {
				return b.Sub(b.Shl(b.Add(x, y), 2), b.Shr(x, b.And(y, 7)))
			}},
			elemCase{"and_or", d, d, func(b *ir.Builder, x, y *ir.Value) *ir.Value {
				return b.Xor(b.And(x, b.Or(y, 12)), b.Or(b.And(x, y), 3))
			}},
			elemCase{"div_mul", d, d, func(b *ir.Builder, x, y *ir.Value) *ir.Value {
				x, y = safe(b, x, y)
				return b.Sub(b.Div(b.Mul(x, 3), y), b.Rem(y, b.Add(b.And(x, 15), 1)))
			}},
			elemCase{"select", d, d, func(b *ir.Builder, x, y *ir.Value) *ir.Value {
				return b.Where(b.Or(b.Lt(x, y), b.Eq(b.And(x, 3), 1)), b.Sub(y, x), b.Neg(x))
			}},
		)
	}
	f32ops := []struct {
		name string
		f    func(b *ir.Builder, x, y any) *ir.Value
	}{{"add", (*ir.Builder).Add}, {"sub", (*ir.Builder).Sub}, {"mul", (*ir.Builder).Mul}, {"div", (*ir.Builder).Div},
		{"max", (*ir.Builder).Max}, {"min", (*ir.Builder).Min}}
	for _, o := range f32ops {
		cs = append(cs, elemCase{o.name, ir.F32, ir.F32, bin(o.f)})
	}
	for _, o := range []struct {
		name string
		f    func(b *ir.Builder, x, y any) *ir.Value
	}{{"lt", (*ir.Builder).Lt}, {"le", (*ir.Builder).Le}, {"gt", (*ir.Builder).Gt}, {"ge", (*ir.Builder).Ge},
		{"eq", (*ir.Builder).Eq}, {"ne", (*ir.Builder).Ne}} {
		f := o.f
		cs = append(cs, elemCase{o.name, ir.F32, ir.I32, func(b *ir.Builder, x, y *ir.Value) *ir.Value { return b.Cast(f(b, x, y), ir.I32) }})
	}
	cs = append(cs,
		elemCase{"abs_neg", ir.F32, ir.F32, func(b *ir.Builder, x, y *ir.Value) *ir.Value { return b.Sub(b.Abs(x), b.Neg(y)) }},
		elemCase{"sub_div", ir.F32, ir.F32, func(b *ir.Builder, x, y *ir.Value) *ir.Value { return b.Div(x, b.Sub(y, b.Mul(x, 0.5))) }},
		elemCase{"fma", ir.F32, ir.F32, func(b *ir.Builder, x, y *ir.Value) *ir.Value { return b.FMA(x, y, b.Mul(y, -0.75)) }},
		// x·y's rounding error, exactly: wrong unless x·y + z is rounded once.
		elemCase{"fma_err", ir.F32, ir.F32, func(b *ir.Builder, x, y *ir.Value) *ir.Value { return b.FMA(x, y, b.Neg(b.Mul(x, y))) }},
		elemCase{"to_i32", ir.F32, ir.I32, func(b *ir.Builder, x, y *ir.Value) *ir.Value { return b.Cast(x, ir.I32) }},
		elemCase{"i32_to_f32", ir.I32, ir.F32, func(b *ir.Builder, x, y *ir.Value) *ir.Value { return b.Mul(b.Cast(x, ir.F32), b.Cast(y, ir.F32)) }},
		elemCase{"i64_to_i32", ir.I64, ir.I32, func(b *ir.Builder, x, y *ir.Value) *ir.Value { return b.Cast(b.Add(x, y), ir.I32) }},
		elemCase{"i32_to_i64", ir.I32, ir.I64, func(b *ir.Builder, x, y *ir.Value) *ir.Value {
			return b.Mul(b.Cast(x, ir.I64), b.Cast(y, ir.I64))
		}},
	)
	return cs
}

// hostN is the elements of each host-check kernel: 4 per thread of 4 warps.
const hostN = 512

// hostInputs are hostN values of d for operand a (which = 0) or b: edge
// values of the type (and small shift amounts) first, then random bits.
func hostInputs(d ir.DType, which int) []byte {
	r := rand.New(rand.NewPCG(uint64(d.K), uint64(which)))
	out := make([]byte, hostN*d.Bytes())
	var edge []uint64
	switch d.K {
	case ir.KI32, ir.KI64:
		w := d.Bits()
		lo, hi := uint64(1)<<(w-1), uint64(1)<<(w-1)-1
		edge = []uint64{0, 1, ^uint64(0), lo, hi, lo + 1, hi - 1, 2, 3, 31, 32, 33, 63, 64, 65, ^uint64(30), ^uint64(31)}
	case ir.KF32:
		for _, x := range []float32{0, 1, -1, 0.5, 3, 1e-40, 3e38, float32(math.Inf(1)), float32(math.Inf(-1)),
			2147483520, 2147483648, -2147483904, 1e10} {
			edge = append(edge, uint64(math.Float32bits(x)), uint64(math.Float32bits(-x)))
		}
		edge = append(edge, 0x7fc00000, 0x7f800001, 0xffc00001, 0x00000001)
	}
	for i := range hostN {
		var u uint64
		switch {
		case i < len(edge):
			u = edge[(i+which*5)%len(edge)]
		case i%4 == 0 && d.IsInt():
			u = uint64(r.IntN(80)) - 8 // shift amounts, some past the width or negative
		case i%4 == 1 && d.K == ir.KF32:
			u = uint64(math.Float32bits(float32(r.NormFloat64() * 100)))
		default:
			u = r.Uint64()
		}
		switch d.Bytes() {
		case 4:
			binary.LittleEndian.PutUint32(out[4*i:], uint32(u))
		case 8:
			binary.LittleEndian.PutUint64(out[8*i:], u)
		}
	}
	return out
}

// TestEmittedOpsMatchInterpreter compiles emitted kernels of every
// elementwise integer and f32 op, and compound expressions of them, as host
// C++ and checks their outputs, bit for bit, against the interpreter
// running the same lowered IR: a wrong C form, precedence or operand order
// fails here by behaviour, not only as a golden-file diff.
func TestEmittedOpsMatchInterpreter(t *testing.T) {
	tg, err := target.Lookup("sm_90")
	if err != nil {
		t.Fatal(err)
	}
	cases := elemCases()
	var fs []*ir.Func
	var comments []string
	for _, c := range cases {
		b := ir.NewBuilder(fmt.Sprintf("%s_%s", c.name, c.in), tg)
		pa, pb, po := b.Param("a", c.in), b.Param("b", c.in), b.Param("out", c.out)
		i := b.Arange(hostN)
		x, y := b.Load(b.PtrAdd(pa, i), nil, nil), b.Load(b.PtrAdd(pb, i), nil, nil)
		b.Store(b.PtrAdd(po, i), c.body(b, x, y), nil)
		f, err := b.Func()
		if err != nil {
			t.Fatalf("%s %v: %v", c.name, c.in, err)
		}
		if err := lower.Run(f, &lower.Config{Warps: 4, Verify: true}); err != nil {
			t.Fatalf("%s %v: %v", c.name, c.in, err)
		}
		fs = append(fs, f)
		comments = append(comments, "host check "+f.Name)
	}
	u, err := Unit(fs, comments)
	if err != nil {
		t.Fatal(err)
	}
	src := strings.ReplaceAll(u.Source, `asm volatile("griddepcontrol.wait;" ::: "memory");`, "")
	for _, no := range []string{"asm", "__syncthreads", "__shfl", "lds["} {
		if strings.Contains(src, no) {
			t.Fatalf("a host-check kernel uses %s, which the sequential host launch cannot run:\n%s", no, numbered(src))
		}
	}

	inputs := map[ir.DType][2][]byte{}
	dtypes := []ir.DType{ir.I32, ir.I64, ir.F32}
	var main strings.Builder
	main.WriteString("\nint main(void) {\n")
	for _, d := range dtypes {
		inputs[d] = [2][]byte{hostInputs(d, 0), hostInputs(d, 1)}
		fmt.Fprintf(&main, "  static %[1]s a_%[2]s[%[3]d], b_%[2]s[%[3]d];\n", ctype(d), d, hostN)
		fmt.Fprintf(&main, "  if (fread(a_%[1]s, sizeof a_%[1]s, 1, stdin) != 1 || fread(b_%[1]s, sizeof b_%[1]s, 1, stdin) != 1) return 2;\n", d)
	}
	for i, k := range u.Kernels {
		c := cases[i]
		fmt.Fprintf(&main, "  { static %s out[%d]; for (unsigned t = 0; t < %d; ++t) { threadIdx.x = t; %s(a_%s, b_%s, out); } fwrite(out, sizeof out, 1, stdout); }\n",
			ctype(c.out), hostN, k.Threads, k.Name, c.in, c.in)
	}
	main.WriteString("  return fflush(stdout) == 0 ? 0 : 1;\n}\n")
	exe := compileHost(t, hostShim+kernelShim+src+main.String(), "-ffp-contract=off", "-fwrapv", "-Wno-unused-variable", "-Wno-unknown-pragmas")

	var stdin bytes.Buffer
	for _, d := range dtypes {
		stdin.Write(inputs[d][0])
		stdin.Write(inputs[d][1])
	}
	cmd := exec.Command(exe)
	cmd.Stdin = &stdin
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	got, err := cmd.Output()
	if err != nil {
		t.Fatalf("host kernels: %v\n%s", err, stderr.Bytes())
	}

	off := 0
	for i, f := range fs {
		c := cases[i]
		n := hostN * c.out.Bytes()
		if off+n > len(got) {
			t.Fatalf("the host program wrote %d bytes; want more", len(got))
		}
		host := got[off : off+n]
		off += n
		in := inputs[c.in]
		want := make([]byte, n)
		if err := interp.Launch(f, [3]int{1, 1, 1}, []any{bytes.Clone(in[0]), bytes.Clone(in[1]), want}); err != nil {
			t.Fatalf("%s: interpreter: %v", f.Name, err)
		}
		w := c.out.Bytes()
		bad := 0
		for j := 0; j < hostN; j++ {
			h, g := host[j*w:(j+1)*w], want[j*w:(j+1)*w]
			if bytes.Equal(h, g) || c.out == ir.F32 && isNaN32(h) && isNaN32(g) {
				continue
			}
			if bad++; bad <= 4 {
				t.Errorf("%s element %d: a=%s b=%s: emitted C %s, interpreter %s", f.Name, j,
					show(c.in, in[0][j*c.in.Bytes():]), show(c.in, in[1][j*c.in.Bytes():]), show(c.out, h), show(c.out, g))
			}
		}
		if bad > 4 {
			t.Errorf("%s: %d of %d elements differ", f.Name, bad, hostN)
		}
	}
	if off != len(got) {
		t.Errorf("the host program wrote %d bytes; want %d", len(got), off)
	}
	t.Logf("checked %d kernels × %d elements", len(fs), hostN)
}

func isNaN32(b []byte) bool {
	return math.IsNaN(float64(math.Float32frombits(binary.LittleEndian.Uint32(b))))
}

func show(d ir.DType, b []byte) string {
	switch d.K {
	case ir.KI32:
		return fmt.Sprint(int32(binary.LittleEndian.Uint32(b)))
	case ir.KI64:
		return fmt.Sprint(int64(binary.LittleEndian.Uint64(b)))
	}
	return f32String(binary.LittleEndian.Uint32(b))
}
