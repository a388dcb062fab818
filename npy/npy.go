// Package npy reads and writes NumPy .npy files, the format of np.save and
// np.load, so that fp8gen can exchange test vectors and kernel outputs with
// Python.
//
// Only what fp8gen needs is supported: little-endian data in C (row-major)
// order with one of the dtypes
//
//	"<f4"  float32
//	"<u2"  uint16 (used for raw bfloat16 bits)
//	"|u1"  uint8  (used for raw fp8 bytes)
//	"<i4"  int32
//	"<i8"  int64
//
// [Read] accepts format versions 1.0, 2.0 and 3.0; [Write] always writes
// version 1.0, which every NumPy reads. The data is kept as raw little-endian
// bytes in [Array.Data]; [Array.Float32s] and friends decode it.
//
// # File layout
//
// A .npy file is the magic "\x93NUMPY", a major and a minor version byte, the
// header length (uint16 little-endian in version 1, uint32 in versions 2 and
// 3), the header, and the data. The header is a Python dict literal such as
//
//	{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
//
// padded with spaces and ended by '\n' so that magic, version, length and
// header together are a multiple of 64 bytes long.
package npy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/fp8gen/fp8gen/internal/atomicfile"
)

// Supported dtypes, as NumPy spells them in the header's 'descr'.
const (
	Float32 = "<f4"
	Uint16  = "<u2"
	Uint8   = "|u1"
	Int32   = "<i4"
	Int64   = "<i8"
)

// itemSizes maps each supported dtype to its size in bytes.
var itemSizes = map[string]int{Float32: 4, Uint16: 2, Uint8: 1, Int32: 4, Int64: 8}

// aliases maps other spellings NumPy accepts for a supported dtype to the one
// it writes itself. "=" is the native byte order: every host fp8gen runs on
// is little-endian.
var aliases = map[string]string{"<u1": Uint8, "=u1": Uint8, "u1": Uint8,
	"=f4": Float32, "=u2": Uint16, "=i4": Int32, "=i8": Int64}

const (
	magic = "\x93NUMPY"
	// align is the multiple of bytes that NumPy pads the preamble to.
	align = 64
	// maxHeaderLen bounds the header that Read accepts, so that a corrupt
	// length cannot make it allocate gigabytes. NumPy's own limit is 10000.
	maxHeaderLen = 1 << 20
)

// Array is an n-dimensional array as stored in a .npy file.
type Array struct {
	// Dtype is one of Float32, Uint16, Uint8 and Int32.
	Dtype string
	// Shape lists the size of each dimension, outermost first. An empty
	// shape is a 0-d array holding one element.
	Shape []int
	// Data holds the elements in C order as raw little-endian bytes;
	// its length is Len() times the dtype's item size.
	Data []byte
}

// Len returns the number of elements that a.Shape describes: the product of
// its dimensions, 1 for a 0-d array.
func (a *Array) Len() int {
	n := 1
	for _, d := range a.Shape {
		n *= d
	}
	return n
}

// supported lists the dtypes for error messages.
const supported = `"<f4" (float32), "<u2" (uint16), "|u1" (uint8), "<i4" (int32), "<i8" (int64)`

// check reports whether a is well formed: a supported dtype, no negative
// dimension, and Data exactly as long as the shape and dtype require.
func (a *Array) check() error {
	size, ok := itemSizes[a.Dtype]
	if !ok {
		return fmt.Errorf("npy: unsupported dtype %q: supported are %s", a.Dtype, supported)
	}
	want, err := byteLen(a.Shape, size)
	if err != nil {
		return err
	}
	if int64(len(a.Data)) != want {
		return fmt.Errorf("npy: shape %v of %s needs %d data bytes, have %d", a.Shape, a.Dtype, want, len(a.Data))
	}
	return nil
}

// byteLen returns the number of data bytes of an array of the given shape and
// item size, or an error for a negative dimension or a size that overflows.
func byteLen(shape []int, itemSize int) (int64, error) {
	n := int64(itemSize)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("npy: negative dimension in shape %v", shape)
		}
		if d != 0 && n > math.MaxInt64/int64(d) {
			return 0, fmt.Errorf("npy: shape %v is too large", shape)
		}
		n *= int64(d)
	}
	if n > math.MaxInt {
		return 0, fmt.Errorf("npy: shape %v is too large", shape)
	}
	return n, nil
}

// want returns an error unless a holds dtype.
func (a *Array) want(dtype string) error {
	if a.Dtype != dtype {
		return fmt.Errorf("npy: array has dtype %q, not %q", a.Dtype, dtype)
	}
	if len(a.Data)%itemSizes[dtype] != 0 {
		return fmt.Errorf("npy: %d data bytes are not a whole number of %s elements", len(a.Data), dtype)
	}
	return nil
}

// Float32s decodes the data of a "<f4" array.
func (a *Array) Float32s() ([]float32, error) {
	if err := a.want(Float32); err != nil {
		return nil, err
	}
	v := make([]float32, len(a.Data)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(a.Data[4*i:]))
	}
	return v, nil
}

// Uint16s decodes the data of a "<u2" array.
func (a *Array) Uint16s() ([]uint16, error) {
	if err := a.want(Uint16); err != nil {
		return nil, err
	}
	v := make([]uint16, len(a.Data)/2)
	for i := range v {
		v[i] = binary.LittleEndian.Uint16(a.Data[2*i:])
	}
	return v, nil
}

// Uint8s returns a copy of the data of a "|u1" array.
func (a *Array) Uint8s() ([]uint8, error) {
	if err := a.want(Uint8); err != nil {
		return nil, err
	}
	return bytes.Clone(a.Data), nil
}

// Int32s decodes the data of a "<i4" array.
func (a *Array) Int32s() ([]int32, error) {
	if err := a.want(Int32); err != nil {
		return nil, err
	}
	v := make([]int32, len(a.Data)/4)
	for i := range v {
		v[i] = int32(binary.LittleEndian.Uint32(a.Data[4*i:]))
	}
	return v, nil
}

// checkLen panics unless n values fill shape exactly; the From functions
// use it, as a mismatch there is a bug in the caller.
func checkLen(shape []int, n int) []int {
	a := Array{Shape: shape}
	for _, d := range shape {
		if d < 0 {
			panic(fmt.Sprintf("npy: negative dimension in shape %v", shape))
		}
	}
	if a.Len() != n {
		panic(fmt.Sprintf("npy: shape %v holds %d elements, got %d values", shape, a.Len(), n))
	}
	return append([]int{}, shape...)
}

// FromFloat32 returns a "<f4" array of the given shape holding v in C order.
// It panics if len(v) is not the number of elements of shape.
func FromFloat32(shape []int, v []float32) *Array {
	a := &Array{Dtype: Float32, Shape: checkLen(shape, len(v)), Data: make([]byte, 4*len(v))}
	for i, x := range v {
		binary.LittleEndian.PutUint32(a.Data[4*i:], math.Float32bits(x))
	}
	return a
}

// FromUint16 returns a "<u2" array of the given shape holding v in C order.
// It panics if len(v) is not the number of elements of shape.
func FromUint16(shape []int, v []uint16) *Array {
	a := &Array{Dtype: Uint16, Shape: checkLen(shape, len(v)), Data: make([]byte, 2*len(v))}
	for i, x := range v {
		binary.LittleEndian.PutUint16(a.Data[2*i:], x)
	}
	return a
}

// FromUint8 returns a "|u1" array of the given shape holding a copy of v.
// It panics if len(v) is not the number of elements of shape.
func FromUint8(shape []int, v []uint8) *Array {
	return &Array{Dtype: Uint8, Shape: checkLen(shape, len(v)), Data: bytes.Clone(v)}
}

// FromInt32 returns a "<i4" array of the given shape holding v in C order.
// It panics if len(v) is not the number of elements of shape.
func FromInt32(shape []int, v []int32) *Array {
	a := &Array{Dtype: Int32, Shape: checkLen(shape, len(v)), Data: make([]byte, 4*len(v))}
	for i, x := range v {
		binary.LittleEndian.PutUint32(a.Data[4*i:], uint32(x))
	}
	return a
}

// Read reads one .npy file from r. It reads exactly the file's preamble,
// header and data and nothing after them.
func Read(r io.Reader) (*Array, error) {
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return nil, truncated("magic and version", err)
	}
	if string(pre[:6]) != magic {
		return nil, fmt.Errorf("npy: bad magic %q: not a .npy file", pre[:6])
	}
	var hlen int
	switch major, minor := pre[6], pre[7]; major {
	case 1:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, truncated("header length", err)
		}
		hlen = int(binary.LittleEndian.Uint16(b[:]))
	case 2, 3:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, truncated("header length", err)
		}
		n := binary.LittleEndian.Uint32(b[:])
		if n > maxHeaderLen {
			return nil, fmt.Errorf("npy: header length %d exceeds the limit of %d bytes", n, maxHeaderLen)
		}
		hlen = int(n)
	default:
		return nil, fmt.Errorf("npy: unsupported format version %d.%d: supported are 1.0, 2.0 and 3.0", major, minor)
	}
	header := make([]byte, hlen)
	if _, err := io.ReadFull(r, header); err != nil {
		return nil, truncated("header", err)
	}
	a, err := parseHeader(string(header))
	if err != nil {
		return nil, err
	}
	n, err := byteLen(a.Shape, itemSizes[a.Dtype])
	if err != nil {
		return nil, err
	}
	// Read through a LimitReader rather than into a buffer of n bytes made
	// up front, so that a corrupt shape cannot allocate more than the file
	// holds.
	a.Data, err = io.ReadAll(io.LimitReader(r, n))
	if err != nil {
		return nil, fmt.Errorf("npy: reading data: %w", err)
	}
	if int64(len(a.Data)) != n {
		return nil, fmt.Errorf("npy: truncated data: shape %v of %s needs %d bytes, file has %d", a.Shape, a.Dtype, n, len(a.Data))
	}
	return a, nil
}

// truncated wraps an error from reading part of the preamble or header.
func truncated(what string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("npy: truncated file: it ends inside the %s", what)
	}
	return fmt.Errorf("npy: reading %s: %w", what, err)
}

// ReadFile reads the .npy file at path: one array, and nothing after its
// data. Bytes past the data are refused rather than ignored: a file that
// holds more than its header says (a second array appended, a cut-off
// copy's tail over a longer one) is not the array a reader would take it
// for.
func ReadFile(path string) (*Array, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	a, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	end, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	extra, err := io.Copy(io.Discard, f)
	if err != nil {
		return nil, fmt.Errorf("%s: npy: reading past the data: %w", path, err)
	}
	if extra > 0 {
		return nil, fmt.Errorf("%s: npy: %d bytes after the data: the header and the %d data bytes of shape %v %s end at byte %d, the file holds %d",
			path, extra, len(a.Data), a.Shape, a.Dtype, end, end+extra)
	}
	return a, nil
}

// Write writes a to w as a version 1.0 .npy file.
func Write(w io.Writer, a *Array) error {
	if err := a.check(); err != nil {
		return err
	}
	header := formatHeader(a)
	if len(header) > math.MaxUint16 {
		return fmt.Errorf("npy: header of %d bytes is too long for format version 1.0", len(header))
	}
	pre := make([]byte, 0, 10+len(header))
	pre = append(pre, magic...)
	pre = append(pre, 1, 0)
	pre = binary.LittleEndian.AppendUint16(pre, uint16(len(header)))
	pre = append(pre, header...)
	if _, err := w.Write(pre); err != nil {
		return err
	}
	_, err := w.Write(a.Data)
	return err
}

// WriteFile writes a to path atomically: it writes a temporary file in the
// same directory and renames it over path, so that path never holds a
// half-written file.
func WriteFile(path string, a *Array) error {
	if err := a.check(); err != nil {
		return err
	}
	return atomicfile.Write(path, func(w io.Writer) error { return Write(w, a) })
}

// formatHeader returns the header of a as NumPy writes it, padded with
// spaces and ended by '\n' so that the 10-byte version 1.0 preamble and
// the header together are a multiple of 64 bytes long.
func formatHeader(a *Array) string {
	var b strings.Builder
	fmt.Fprintf(&b, "{'descr': '%s', 'fortran_order': False, 'shape': (", a.Dtype)
	for i, d := range a.Shape {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(d))
	}
	if len(a.Shape) == 1 {
		b.WriteByte(',') // a Python 1-tuple: (3,)
	}
	b.WriteString("), }")
	pad := align - (10+b.Len()+1)%align
	if pad == align {
		pad = 0
	}
	b.WriteString(strings.Repeat(" ", pad))
	b.WriteByte('\n')
	return b.String()
}
