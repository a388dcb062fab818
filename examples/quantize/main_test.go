package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fp8gen/fp8gen/launch"
	"github.com/fp8gen/fp8gen/npy"
	"github.com/fp8gen/fp8gen/ops"
	"github.com/fp8gen/fp8gen/target"
)

// The example quantizes .npy files of float32 and of bf16, at shapes
// with odd sizes and rows past 16384, bit for bit as the op's reference
// does (on the GPU where there is one, else in the interpreter).
func TestQuantize(t *testing.T) {
	r, err := launch.Open("gfx942")
	if err != nil {
		t.Fatal(err)
	}
	tg, _ := target.Lookup(r.Target())
	r.Close()
	op, _ := ops.Lookup("rowwise_cast")
	for _, c := range []struct {
		in string
		sh ops.Shape
	}{{"f32", ops.Shape{"M": 7, "K": 33}}, {"bf16", ops.Shape{"M": 3, "K": 20001}}, {"f32", ops.Shape{"M": 64, "K": 256}}} {
		call, err := op.NewCall(tg, c.sh, ops.Options{"in": c.in})
		if err != nil {
			t.Fatal(err)
		}
		in := ops.Inputs(call, 5, true)
		x := in["x"]
		dtype := npy.Float32
		if c.in == "bf16" {
			dtype = npy.Uint16
		}
		dir := t.TempDir()
		xf := filepath.Join(dir, "x.npy")
		if err := npy.WriteFile(xf, &npy.Array{Dtype: dtype, Shape: x.Shape, Data: x.Data}); err != nil {
			t.Fatal(err)
		}
		var stdout bytes.Buffer
		out := filepath.Join(dir, "out")
		if err := run([]string{"-in", xf, "-out", out, "-target", "gfx942"}, &stdout); err != nil {
			t.Fatal(err)
		}
		t.Log(strings.TrimSpace(stdout.String()))
		want := op.Reference(call, in)
		for _, name := range []string{"q", "inv_scale"} {
			a, err := npy.ReadFile(filepath.Join(out, name+".npy"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a.Data, want[name].Data) {
				t.Errorf("%v %s: %s differs from the reference", c.sh, c.in, name)
			}
		}
	}
}

func TestQuantizeRefuses(t *testing.T) {
	dir := t.TempDir()
	x3 := filepath.Join(dir, "x3.npy")
	npy.WriteFile(x3, &npy.Array{Dtype: npy.Float32, Shape: []int{1, 2, 2}, Data: make([]byte, 16)})
	xi := filepath.Join(dir, "xi.npy")
	npy.WriteFile(xi, &npy.Array{Dtype: npy.Int32, Shape: []int{2, 2}, Data: make([]byte, 16)})
	x2 := filepath.Join(dir, "x2.npy")
	npy.WriteFile(x2, &npy.Array{Dtype: npy.Float32, Shape: []int{2, 2}, Data: make([]byte, 16)})
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-in", x3, "-out", dir}, "want 2-D"},
		{[]string{"-in", xi, "-out", dir}, "want float32"},
		{[]string{"-in", xi}, "usage"},
		{[]string{"-in", filepath.Join(dir, "none.npy"), "-out", dir}, "none.npy"},
		{[]string{"-in", x2, "-out", file}, "is not a folder"},
		{[]string{"-bogus"}, "bogus"},
	} {
		err := run(c.args, &bytes.Buffer{})
		var u usage
		if err == nil || !strings.Contains(err.Error(), c.want) || !asUsage(err, &u) {
			t.Errorf("%v: %v; want a usage error with %q", c.args, err, c.want)
		}
	}
}

func asUsage(err error, u *usage) bool {
	x, ok := err.(usage)
	*u = x
	return ok
}
