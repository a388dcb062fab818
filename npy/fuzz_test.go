package npy

import (
	"bytes"
	"testing"
)

// FuzzRead: any bytes are read or refused with an error, never a panic or
// a huge allocation; what is read writes back and reads again the same.
func FuzzRead(f *testing.F) {
	for _, a := range []*Array{FromFloat32([]int{2, 3}, make([]float32, 6)), FromUint8([]int{4}, []uint8{1, 2, 3, 4}), {Dtype: Int64, Shape: []int{1}, Data: make([]byte, 8)}} {
		var b bytes.Buffer
		if err := Write(&b, a); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes())
	}
	f.Add([]byte("\x93NUMPY\x01\x00\x10\x00{'descr': '=f4'}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := Write(&b, a); err != nil {
			t.Fatalf("read %v %v, but Write refuses it: %v", a.Dtype, a.Shape, err)
		}
		back, err := Read(&b)
		if err != nil || back.Dtype != a.Dtype || !bytes.Equal(back.Data, a.Data) || len(back.Shape) != len(a.Shape) {
			t.Fatalf("round trip: %v %v %v", back, err, a)
		}
	})
}
