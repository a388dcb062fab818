package ir

import (
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/fp8gen/fp8gen/fp8"
)

// Every stored element type is found again by its name, with its row's
// size and .npy descriptor; the bare "fp8" and the kinds a tensor never
// holds are found by no name.
func TestDTypeTable(t *testing.T) {
	var stored []DType
	for _, k := range StoredKinds() {
		if k == "fp8" {
			for _, f := range fp8.Formats() {
				stored = append(stored, FP8(f))
			}
			continue
		}
		d, ok := DTypeNamed(k)
		if !ok {
			t.Fatalf("DTypeNamed(%q) finds nothing", k)
		}
		stored = append(stored, d)
	}
	want := map[string][2]any{"i32": {4, "<i4"}, "i64": {8, "<i8"}, "f32": {4, "<f4"}, "bf16": {2, "<u2"},
		"e4m3fn": {1, "|u1"}, "e4m3fnuz": {1, "|u1"}, "e5m2": {1, "|u1"}, "e5m2fnuz": {1, "|u1"}, "e8m0": {1, "|u1"}}
	if len(stored) != len(want) {
		t.Errorf("%d stored types %v; want %d", len(stored), stored, len(want))
	}
	for _, d := range stored {
		got, ok := DTypeNamed(d.String())
		if !ok || got != d {
			t.Errorf("DTypeNamed(%q) = %v, %v; want %v", d.String(), got, ok, d)
		}
		if w := want[d.String()]; d.Bytes() != w[0] || d.Npy() != w[1] || d.CType() == "" {
			t.Errorf("%v: %d bytes, npy %q, C %q; want %v", d, d.Bytes(), d.Npy(), d.CType(), w)
		}
	}
	for _, n := range []string{"fp8", "i1", "ptr", "invalid", "f16", ""} {
		if d, ok := DTypeNamed(n); ok {
			t.Errorf("DTypeNamed(%q) = %v; want none", n, d)
		}
	}
	if E8M0.IsFloat() || E8M0.IsInt() || E8M0.Words() != 1 || I64.Words() != 2 || !BF16.IsFloat() || !I32.IsInt() {
		t.Error("a kind's class or words differ from its row")
	}
}

// E8M0's values: 2^(b − 127), the smallest an f32 subnormal, 0xFF NaN.
func TestE8M0Value(t *testing.T) {
	for b, want := range map[uint8]uint32{0: 0x00400000, 1: 0x00800000, 126: 0x3f000000, 127: 0x3f800000, 254: 0x7f000000} {
		if got := math.Float32bits(E8M0Value(b)); got != want {
			t.Errorf("E8M0Value(%d) = %#08x; want %#08x", b, got, want)
		}
	}
	if v := E8M0Value(0xFF); !math.IsNaN(float64(v)) {
		t.Errorf("E8M0Value(0xFF) = %v; want NaN", v)
	}
}

// The PyTorch loader's dtype table (python/fp8gen_torch/manifest.py) is
// this one: the same names, sizes and .npy descriptors.
func TestPythonDTypeTable(t *testing.T) {
	src, err := os.ReadFile("../python/fp8gen_torch/manifest.py")
	if err != nil {
		t.Fatal(err)
	}
	body := regexp.MustCompile(`(?s)DTYPE_TABLE = \{(.*?)\n\}`).FindSubmatch(src)
	if body == nil {
		t.Fatal("manifest.py has no DTYPE_TABLE = {…}")
	}
	rows := regexp.MustCompile(`"(\w+)": \((\d+), "(\w+)", "([<|]\w+)"\)`).FindAllSubmatch(body[1], -1)
	var names []string
	for _, r := range rows {
		name, size, npy := string(r[1]), string(r[2]), string(r[4])
		names = append(names, name)
		d, ok := DTypeNamed(name)
		if !ok {
			t.Errorf("manifest.py's %s is no dtype of fp8gen's", name)
			continue
		}
		if strconv.Itoa(d.Bytes()) != size || d.Npy() != npy {
			t.Errorf("manifest.py's %s: %s bytes, %s; fp8gen's: %d, %s", name, size, npy, d.Bytes(), d.Npy())
		}
	}
	var want []string
	for _, k := range StoredKinds() {
		if k == "fp8" {
			want = append(want, fp8.Names()...)
		} else {
			want = append(want, k)
		}
	}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("manifest.py's dtypes %v; fp8gen's %v", names, want)
	}
}
