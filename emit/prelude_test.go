package emit

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fp8gen/fp8gen/fp8"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/target"
)

// hostShim lets the NVIDIA prelude (which includes no header) compile as
// host C++: the CUDA qualifiers vanish and the intrinsics get their GPU
// meaning, __clz(0) = 32 included.
const hostShim = `#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define __device__
#define __forceinline__ inline
static inline uint32_t __float_as_uint(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
static inline int __float_as_int(float x) { int i; memcpy(&i, &x, 4); return i; }
static inline float __uint_as_float(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
static inline size_t __cvta_generic_to_shared(const void* p) { return (size_t)p; } // compiled, never run
struct uint2 { uint32_t x, y; };
struct uint4 { uint32_t x, y, z, w; };
`

// scalarFn is one function of the prelude on one f32 input pair (a, b),
// with the Go function whose bits it must reproduce.
type scalarFn struct {
	c      string // C expression of float a (and b) giving a uint32_t
	binary bool   // c reads b
	ref    func(a, b float32) uint32
	show   func(uint32) string // a result for messages
	// domain, if set, holds the inputs c is defined on; others are not
	// checked.
	domain func(a, b float32) bool
}

func bits(x float32) uint32 { return math.Float32bits(x) }

// noNegZero and noNaNFirst are the domains of the max and min forms the
// emitter prints for operands ir.NoNegZero and ir.NoNaN vouch for.
func noNegZero(a, b float32) bool  { return bits(a) != 1<<31 && bits(b) != 1<<31 }
func noNaNFirst(a, b float32) bool { return noNegZero(a, b) && a == a }

func scalarFns(formats []*fp8.Format) []scalarFn {
	var fns []scalarFn
	for _, f := range formats {
		fns = append(fns, scalarFn{
			c:    "fp8g_to_" + f.Name + "(a)",
			ref:  func(a, _ float32) uint32 { return uint32(f.EncodeSat(a)) },
			show: func(u uint32) string { return fmt.Sprintf("0x%02x = %g", u, f.Decode(uint8(u))) },
		})
	}
	showBF16 := func(u uint32) string { return fmt.Sprintf("0x%04x = %g", u, ir.BF16ToF32(uint16(u))) }
	showI32 := func(u uint32) string { return fmt.Sprint(int32(u)) }
	return append(fns,
		scalarFn{"__float_as_uint(fp8g_maxf(a, b))", true, func(a, b float32) uint32 { return bits(ir.MaxF32(a, b)) }, f32String, nil},
		scalarFn{"__float_as_uint(fp8g_minf(a, b))", true, func(a, b float32) uint32 { return bits(ir.MinF32(a, b)) }, f32String, nil},
		// The forms for operands that are never −0, and a never NaN.
		scalarFn{"__float_as_uint(fp8g_maxf_nz(a, b))", true, func(a, b float32) uint32 { return bits(ir.MaxF32(a, b)) }, f32String, noNegZero},
		scalarFn{"__float_as_uint(fp8g_minf_nz(a, b))", true, func(a, b float32) uint32 { return bits(ir.MinF32(a, b)) }, f32String, noNegZero},
		scalarFn{"__float_as_uint(fp8g_maxf_nn(a, b))", true, func(a, b float32) uint32 { return bits(ir.MaxF32(a, b)) }, f32String, noNaNFirst},
		scalarFn{"__float_as_uint(fp8g_minf_nn(a, b))", true, func(a, b float32) uint32 { return bits(ir.MinF32(a, b)) }, f32String, noNaNFirst},
		scalarFn{"fp8g_f32_to_bf16(a)", false, func(a, _ float32) uint32 { return uint32(ir.F32ToBF16(a)) }, showBF16, nil},
		scalarFn{"__float_as_uint(fp8g_pow2_floor(a))", false, func(a, _ float32) uint32 { return bits(ir.Pow2Floor(a)) }, f32String, nil},
		scalarFn{"(uint32_t)fp8g_f32_to_i32(a)", false, func(a, _ float32) uint32 { return uint32(ir.F32ToI32(a)) }, showI32, nil},
		// The interpreter's abs and neg act on the sign bit alone.
		scalarFn{"__float_as_uint(fp8g_absf(a))", false, func(a, _ float32) uint32 { return bits(a) &^ (1 << 31) }, f32String, nil},
		scalarFn{"__float_as_uint(fp8g_negf(a))", false, func(a, _ float32) uint32 { return bits(a) ^ (1 << 31) }, f32String, nil},
	)
}

// harness is main() for the host program: it reads n, then n pairs of f32
// bit patterns, from stdin; it writes, as little-endian uint32s, the decoders
// on all 256 codes of each format, fp8g_bf16_to_f32 on all 65536 codes, then
// for each pair one record with every scalar function's result.
func harness(formats []*fp8.Format, fns []scalarFn) string {
	var sb strings.Builder
	sb.WriteString(`
static void put(uint32_t u) { fwrite(&u, 4, 1, stdout); }

int main(void) {
  static char obuf[1 << 20];
  setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
  uint32_t n;
  if (fread(&n, 4, 1, stdin) != 1) return 2;
  uint32_t* in = (uint32_t*)malloc((size_t)n * 8 + 8);
  if (fread(in, 8, n, stdin) != n) return 2;
  for (int c = 0; c < 256; ++c) {
`)
	for _, f := range formats {
		fmt.Fprintf(&sb, "    put(__float_as_uint(fp8g_from_%s((uint8_t)c)));\n", f.Name)
	}
	sb.WriteString(`  }
  for (uint32_t h = 0; h < 65536; ++h) put(__float_as_uint(fp8g_bf16_to_f32((uint16_t)h)));
  for (uint32_t i = 0; i < n; ++i) {
    const float a = __uint_as_float(in[2 * i]), b = __uint_as_float(in[2 * i + 1]);
    const uint32_t rec[] = {
`)
	for _, fn := range fns {
		fmt.Fprintf(&sb, "      (uint32_t)(%s),\n", fn.c)
	}
	sb.WriteString(`    };
    fwrite(rec, sizeof rec, 1, stdout);
  }
  return fflush(stdout) == 0 ? 0 : 1;
}
`)
	return sb.String()
}

// preludeInputs are the (a, b) pairs the scalar functions are checked on:
// special values, every fp8 value of every format with its neighbours and
// the rounding boundaries around it, pairs that test max/min's NaN and
// signed-zero rules, then random bit patterns and random values in and
// around the fp8 ranges, biased towards rounding ties.
func preludeInputs(formats []*fp8.Format) [][2]uint32 {
	var special []uint32
	add := func(us ...uint32) {
		for _, u := range us {
			special = append(special, u, u^(1<<31))
		}
	}
	addF := func(xs ...float64) {
		for _, x := range xs {
			add(bits(float32(x)))
		}
	}
	next := func(x float32, dir float64) float32 { return float32(math.Nextafter32(x, float32(dir))) }
	around := func(x float32) { add(bits(x), bits(next(x, math.Inf(1))), bits(next(x, math.Inf(-1)))) }

	add(0, 0x7f800000, // ±0, ±Inf
		0x7fc00000, 0x7f800001, 0x7fbfffff, 0x7fffffff, 0x7fc00001, 0x7fa00000, // NaNs, quiet and signalling
		0x00000001, 0x00000002, 0x00000003, 0x003fffff, 0x00400000, 0x00400001, 0x007fffff, // f32 subnormals
		0x00800000, 0x00800001, 0x7f7fffff, 0x7f7f8000, 0x7f7f7fff, 0x7f7f8001, 0x7f000000) // normal ends, bf16 overflow ties
	for e := -149; e <= 127; e++ { // powers of two and their neighbours
		around(float32(math.Ldexp(1, e)))
	}
	addF(0.5, 0.75, 0.999999, 1.5, 2.5, 1e-12, 2147483520, 2147483648, 2147483904, 4294967296, 1e30)
	around(2147483648)
	for _, f := range formats {
		var mags []float32 // the finite non-negative values, ascending
		for c := 0; c < 0x80; c++ {
			if v := f.Decode(uint8(c)); !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) {
				mags = append(mags, v)
			}
		}
		for i, v := range mags {
			around(v)
			up := float64(v) + float64(v) - float64(mags[max(i-1, 0)]) // the step above the last value
			if i+1 < len(mags) {
				up = float64(mags[i+1])
			}
			mid := float32((float64(v) + up) / 2) // exact: one bit more than the format has
			around(mid)
			around(float32((float64(v) + 3*up) / 4))
		}
		around(f.Max * 2)
		around(mags[1] / 4) // a quarter of the smallest subnormal
	}
	for i := range 4096 { // bf16 rounding: ties to even and the values beside them
		u := uint32(i)*0x9e3779b9&0x7fff0000 | 0x8000
		add(u, u|0x10000, u-1, u+1, u|0x10000-1, u|0x10000+1)
	}

	// max and min: every ordered pair of a set that holds the rules.
	rules := []uint32{0, 1 << 31, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7f800001, 0xff812345,
		0x3f800000, 0xbf800000, 0x3f800001, 0x00000001, 0x80000001, 0x7f7fffff, 0xff7fffff, 0x43700000}
	var pairs [][2]uint32
	for _, a := range rules {
		for _, b := range rules {
			pairs = append(pairs, [2]uint32{a, b})
		}
	}
	r := rand.New(rand.NewPCG(0x5eed, 8))
	for _, a := range special {
		pairs = append(pairs, [2]uint32{a, special[r.IntN(len(special))]})
	}
	// nearFP8 is a value of random sign with magnitude in [2^-20, 2^18):
	// every fp8 format's subnormals to past e5m2's max. Half of them have
	// few mantissa bits, landing on fp8 values and ties between them.
	nearFP8 := func() uint32 {
		e := uint32(127 - 20 + r.IntN(38))
		m := r.Uint32() & 0x7fffff
		if r.IntN(2) == 0 {
			keep := uint(r.IntN(7))
			m &= ^uint32(0) << (23 - keep)
			m |= uint32(r.IntN(2)) << (22 - keep) // maybe a tie at that position
		}
		return r.Uint32()&(1<<31) | e<<23 | m
	}
	partner := func(a uint32, other func() uint32) uint32 {
		switch r.IntN(16) {
		case 0:
			return a
		case 1:
			return a ^ 1<<31
		}
		return other()
	}
	for range 1 << 21 {
		a := r.Uint32()
		pairs = append(pairs, [2]uint32{a, partner(a, r.Uint32)})
	}
	for range 1 << 21 {
		a := nearFP8()
		pairs = append(pairs, [2]uint32{a, partner(a, nearFP8)})
	}
	return pairs
}

// TestPreludeMatchesGo compiles the NVIDIA prelude with every fp8 format as
// host C++ and checks each numeric helper, bit for bit, against the Go
// functions package interp uses (and the references of package ops).
func TestPreludeMatchesGo(t *testing.T) {
	tg, err := target.Lookup("sm_90")
	if err != nil {
		t.Fatal(err)
	}
	formats := fp8.Formats()
	fns := scalarFns(formats)
	exe := compileHost(t, hostShim+preludeWith(tg, formats, false)+harness(formats, fns), "-ffp-contract=off")

	pairs := preludeInputs(formats)
	in := make([]byte, 4+8*len(pairs))
	binary.LittleEndian.PutUint32(in, uint32(len(pairs)))
	for i, p := range pairs {
		binary.LittleEndian.PutUint32(in[4+8*i:], p[0])
		binary.LittleEndian.PutUint32(in[8+8*i:], p[1])
	}
	cmd := exec.Command(exe)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	res := bufio.NewReaderSize(stdout, 1<<20)
	word := make([]byte, 4*max(len(fns), 256))
	read := func(n int) []byte {
		if _, err := io.ReadFull(res, word[:4*n]); err != nil {
			t.Fatalf("reading the harness's output: %v", err)
		}
		return word[:4*n]
	}
	mm := &mismatches{t: t}

	for c := range 256 {
		w := read(len(formats))
		for i, f := range formats {
			got, want := binary.LittleEndian.Uint32(w[4*i:]), f.Decode(uint8(c))
			if math.IsNaN(float64(want)) && math.IsNaN(float64(math.Float32frombits(got))) {
				continue
			}
			mm.check("fp8g_from_"+f.Name, fmt.Sprintf("code 0x%02x", c), got, bits(want), f32String)
		}
	}
	for h := range 1 << 16 {
		got := binary.LittleEndian.Uint32(read(1))
		mm.check("fp8g_bf16_to_f32", fmt.Sprintf("code 0x%04x", h), got, bits(ir.BF16ToF32(uint16(h))), f32String)
	}
	for _, p := range pairs {
		w := read(len(fns))
		a, b := math.Float32frombits(p[0]), math.Float32frombits(p[1])
		for i, fn := range fns {
			got, want := binary.LittleEndian.Uint32(w[4*i:]), fn.ref(a, b)
			if got != want && (fn.domain == nil || fn.domain(a, b)) {
				in := "a=" + f32String(p[0])
				if fn.binary {
					in += ", b=" + f32String(p[1])
				}
				mm.check(fn.c, in, got, want, fn.show)
			}
		}
	}
	if _, err := res.ReadByte(); err != io.EOF {
		t.Errorf("the harness wrote more than expected (err %v)", err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("harness: %v\n%s", err, stderr.Bytes())
	}
	mm.report()
	t.Logf("checked %d decoder codes, %d bf16 codes and %d input pairs × %d functions", 256*len(formats), 1<<16, len(pairs), len(fns))
}

// compileHost compiles src, the prelude as host C++ with a harness, by g++
// with flags, and returns the executable; it skips the test where there is
// no g++ (fails under FP8GEN_REQUIRE_HIPCC=1).
func compileHost(t *testing.T, src string, flags ...string) string {
	t.Helper()
	gxx, err := exec.LookPath("g++")
	if err != nil {
		if os.Getenv("FP8GEN_REQUIRE_HIPCC") == "1" {
			t.Fatalf("FP8GEN_REQUIRE_HIPCC=1 and no host C++ compiler to check the prelude with: %v", err)
		}
		t.Skipf("skipping the prelude check: no g++: %v", err)
	}
	dir := t.TempDir()
	cc, exe := filepath.Join(dir, "prelude.cc"), filepath.Join(dir, "prelude")
	if err := os.WriteFile(cc, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append(append([]string{"-O2"}, flags...), "-Wall", "-x", "c++", cc, "-o", exe)
	out, err := exec.Command(gxx, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("g++: %v\n%s\nsource:\n%s", err, out, numbered(src))
	}
	if len(out) > 0 {
		t.Logf("g++ warnings on the prelude:\n%s", out)
	}
	return exe
}

// mismatches collects disagreements, a few examples per function.
type mismatches struct {
	t     *testing.T
	order []string
	count map[string]int
	shown map[string][]string
}

func (m *mismatches) check(fn, input string, c, goBits uint32, show func(uint32) string) {
	if c == goBits {
		return
	}
	if m.count == nil {
		m.count, m.shown = map[string]int{}, map[string][]string{}
	}
	if m.count[fn] == 0 {
		m.order = append(m.order, fn)
	}
	m.count[fn]++
	line := fmt.Sprintf("%s: C %s, Go %s", input, show(c), show(goBits))
	if len(m.shown[fn]) < 8 && !slices.Contains(m.shown[fn], line) {
		m.shown[fn] = append(m.shown[fn], line)
	}
}

func (m *mismatches) report() {
	for _, fn := range m.order {
		m.t.Errorf("%s: %d mismatches with Go; first ones:\n  %s", fn, m.count[fn], strings.Join(m.shown[fn], "\n  "))
	}
}

// f32String shows f32 bits as hex and value.
func f32String(u uint32) string {
	return fmt.Sprintf("0x%08x = %g", u, math.Float32frombits(u))
}

func numbered(src string) string {
	lines := strings.Split(src, "\n")
	for i := range lines {
		lines[i] = fmt.Sprintf("%4d  %s", i+1, lines[i])
	}
	return strings.Join(lines, "\n")
}
