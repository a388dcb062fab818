package npy

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// numpyHeader is the header that np.save(f, np.zeros((3, 4), np.float32))
// writes, laid out by hand: the dict, spaces, and '\n' to end the preamble
// on a multiple of 64 bytes.
const numpyHeader = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }"

// file builds a .npy file from a version, a header (padded here as NumPy
// pads it) and data.
func file(major byte, header string, data []byte) []byte {
	lenSize := 2
	if major > 1 {
		lenSize = 4
	}
	pre := 8 + lenSize
	pad := (64 - (pre+len(header)+1)%64) % 64
	header += strings.Repeat(" ", pad) + "\n"
	b := []byte("\x93NUMPY")
	b = append(b, major, 0)
	if lenSize == 2 {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(header)))
	} else {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(header)))
	}
	b = append(b, header...)
	return append(b, data...)
}

func TestReadNumPyHeader(t *testing.T) {
	data := make([]byte, 48)
	for i := range 12 {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(i)-0.5))
	}
	for _, major := range []byte{1, 2} {
		f := file(major, numpyHeader, data)
		a, err := Read(bytes.NewReader(f))
		if err != nil {
			t.Fatalf("version %d: %v", major, err)
		}
		if a.Dtype != "<f4" || !reflect.DeepEqual(a.Shape, []int{3, 4}) || a.Len() != 12 {
			t.Fatalf("version %d: got dtype %q shape %v len %d", major, a.Dtype, a.Shape, a.Len())
		}
		v, err := a.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		if v[0] != -0.5 || v[11] != 10.5 {
			t.Fatalf("version %d: data %v", major, v)
		}
	}
}

func TestWriteMatchesNumPy(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, FromFloat32([]int{3, 4}, make([]float32, 12))); err != nil {
		t.Fatal(err)
	}
	// The 128-byte preamble as NumPy writes it: magic, version 1.0,
	// header length 118 = 'v', the 59-byte dict, 58 spaces and '\n'.
	want := []byte("\x93NUMPY\x01\x00v\x00" + numpyHeader + strings.Repeat(" ", 58) + "\n")
	want = append(want, make([]byte, 48)...)
	if !bytes.Equal(want, file(1, numpyHeader, make([]byte, 48))) {
		t.Fatal("the test's file helper does not pad as NumPy does")
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("Write wrote\n%q\nwant\n%q", buf.Bytes(), want)
	}
}

func TestHeaderShapes(t *testing.T) {
	for _, tc := range []struct {
		shape []int
		text  string
	}{
		{[]int{}, "'shape': (), }"},
		{[]int{5}, "'shape': (5,), }"},
		{[]int{2, 0, 3}, "'shape': (2, 0, 3), }"},
	} {
		a := &Array{Dtype: Uint8, Shape: tc.shape, Data: make([]byte, (&Array{Shape: tc.shape}).Len())}
		h := formatHeader(a)
		if !strings.Contains(h, tc.text) || (10+len(h))%64 != 0 || !strings.HasSuffix(h, " \n") && !strings.HasSuffix(h, "}\n") {
			t.Errorf("shape %v: header %q", tc.shape, h)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	f32 := []float32{1, -2.5, float32(math.Inf(1)), 3e-39, 0, 7}
	u16 := []uint16{0x3f80, 0xbf80, 0x7f80, 0xffff}
	u8 := []uint8{0, 1, 0x7f, 0x80, 0xff}
	i32 := []int32{-1, 0, math.MaxInt32, math.MinInt32}
	arrays := []*Array{
		FromFloat32([]int{2, 3}, f32),
		FromUint16([]int{2, 2}, u16),
		FromUint8([]int{5}, u8),
		FromInt32([]int{1, 4, 1}, i32),
		FromFloat32([]int{}, []float32{42}),
		FromUint8([]int{0, 7}, nil),
	}
	for i, a := range arrays {
		path := filepath.Join(dir, "a.npy")
		if err := WriteFile(path, a); err != nil {
			t.Fatal(err)
		}
		b, err := ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if b.Dtype != a.Dtype || !reflect.DeepEqual(b.Shape, a.Shape) || !bytes.Equal(b.Data, a.Data) {
			t.Errorf("array %d: wrote %+v, read %+v", i, a, b)
		}
	}
	a, _ := ReadFile(filepath.Join(dir, "a.npy"))
	if a.Len() != 0 || len(a.Data) != 0 {
		t.Errorf("empty array read back with %d elements", a.Len())
	}

	check := func(name string, got, want any, err error) {
		t.Helper()
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %v, %v; want %v", name, got, err, want)
		}
	}
	g1, err := arrays[0].Float32s()
	check("Float32s", g1, f32, err)
	g2, err := arrays[1].Uint16s()
	check("Uint16s", g2, u16, err)
	g3, err := arrays[2].Uint8s()
	check("Uint8s", g3, u8, err)
	g4, err := arrays[3].Int32s()
	check("Int32s", g4, i32, err)
	if _, err := arrays[1].Float32s(); err == nil || !strings.Contains(err.Error(), `"<u2"`) {
		t.Errorf("Float32s of a <u2 array: %v", err)
	}

	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("WriteFile left %d files behind, want 1", len(entries))
	}
}

func TestReadRejects(t *testing.T) {
	good := file(1, numpyHeader, make([]byte, 48))
	for _, tc := range []struct {
		name string
		file []byte
		want string
	}{
		{"empty", nil, "truncated file"},
		{"bad magic", append([]byte("\x93NUMPZ"), good[6:]...), "bad magic"},
		{"version", append([]byte("\x93NUMPY\x04\x00"), good[8:]...), "unsupported format version 4.0"},
		{"short header", good[:30], "truncated file: it ends inside the header"},
		{"short data", good[:len(good)-1], "truncated data"},
		{"f8", file(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }", nil), `unsupported dtype "<f8": supported are "<f4"`},
		{"big endian", file(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", nil), `unsupported dtype ">f4"`},
		{"structured", file(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", nil), "structured dtypes"},
		{"fortran", file(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (3, 4), }", nil), "Fortran order"},
		{"missing shape", file(1, "{'descr': '<f4', 'fortran_order': False, }", nil), `missing key "shape"`},
		{"extra key", file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", nil), `unexpected key "x"`},
		{"negative dim", file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", nil), "non-negative integer"},
		{"not a dict", file(1, "[1, 2]", nil), "bad header"},
		{"trailing", file(1, numpyHeader+" x", nil), "unexpected text"},
		{"huge", file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }", nil), "too large"},
	} {
		_, err := Read(bytes.NewReader(tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

func TestReadLenient(t *testing.T) {
	// Other spellings that NumPy or older versions of it produce.
	for _, h := range []string{
		`{"descr": "<u1", "fortran_order": False, "shape": (4L,)}`,
		"{'shape': (4,), 'fortran_order': False, 'descr': '|u1'}",
	} {
		a, err := Read(bytes.NewReader(file(1, h, []byte{1, 2, 3, 4})))
		if err != nil {
			t.Errorf("%s: %v", h, err)
			continue
		}
		if a.Dtype != Uint8 || !reflect.DeepEqual(a.Shape, []int{4}) {
			t.Errorf("%s: got %+v", h, a)
		}
	}
}

func TestWriteRejects(t *testing.T) {
	var buf bytes.Buffer
	for _, tc := range []struct {
		a    *Array
		want string
	}{
		{&Array{Dtype: "<f8", Shape: []int{1}, Data: make([]byte, 8)}, `unsupported dtype "<f8"`},
		{&Array{Dtype: Float32, Shape: []int{2, 2}, Data: make([]byte, 12)}, "needs 16 data bytes, have 12"},
		{&Array{Dtype: Float32, Shape: []int{-2}}, "negative dimension"},
	} {
		err := Write(&buf, tc.a)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Write(%+v): %v, want %q", tc.a, err, tc.want)
		}
		err = WriteFile(filepath.Join(t.TempDir(), "x.npy"), tc.a)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("WriteFile(%+v): %v, want %q", tc.a, err, tc.want)
		}
	}
	if buf.Len() != 0 {
		t.Errorf("rejected writes wrote %d bytes", buf.Len())
	}
}

func TestFromPanicsOnMismatch(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "holds 6 elements, got 5") {
			t.Errorf("recovered %v", r)
		}
	}()
	FromFloat32([]int{2, 3}, make([]float32, 5))
}

// ReadFile refuses a file with bytes after the array's data, saying how
// many and where the data ends; Read, which reads a stream, leaves them.
func TestReadFileRefusesTrailingBytes(t *testing.T) {
	good := file(1, numpyHeader, make([]byte, 48)) // 128-byte preamble, 48 data bytes
	path := filepath.Join(t.TempDir(), "x.npy")
	if err := os.WriteFile(path, append(good, "tail!"...), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(path)
	want := path + ": npy: 5 bytes after the data: the header and the 48 data bytes of shape [3 4] <f4 end at byte 176, the file holds 181"
	if err == nil || err.Error() != want {
		t.Errorf("ReadFile with 5 trailing bytes: %v\nwant %s", err, want)
	}
	r := bytes.NewReader(append(good, "tail!"...))
	if _, err := Read(r); err != nil {
		t.Errorf("Read of a stream with more after the array: %v", err)
	}
	if r.Len() != 5 {
		t.Errorf("Read left %d bytes of the stream, want the 5 after the array", r.Len())
	}
	if err := os.WriteFile(path, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(path); err != nil {
		t.Errorf("ReadFile of the same file without the tail: %v", err)
	}
}
