package chart

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/fp8gen/fp8gen/bench"
)

func rows() []bench.Row {
	const gpu, date = "NVIDIA H200", "2026-01-02"
	return []bench.Row{
		{Op: "rowwise_cast", Shape: "8192x8192", Impl: bench.ImplEager, TimeUS: 400, GBPerS: 503.4, PctCopy: 12.5, GPU: gpu, Date: date},
		{Op: "rowwise_cast", Shape: "8192x8192", Impl: bench.ImplCopy, TimeUS: 50, GBPerS: 4027.2, PctCopy: 100, GPU: gpu, Date: date},
		{Op: "rowwise_cast", Shape: "8192x8192", Impl: bench.ImplFP8Gen, TimeUS: 60, GBPerS: 3356.0, GPU: gpu, Date: date},
		{Op: "colwise_cast", Shape: "16384x8192", Impl: bench.ImplCompiled, GPU: gpu, Date: date, Error: "BackendCompilerFailed: boom"},
		{Op: "colwise_cast", Shape: "16384x8192", Impl: bench.ImplFP8Gen, TimeUS: 250, GBPerS: 1600, GPU: gpu, Date: date},
	}
}

func TestWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bench.png")
	if err := Write(rows(), path); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 100 || b.Dy() < 100 {
		t.Errorf("image is only %v", b)
	}
}

func TestWriteNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bench.png")
	copyOnly := rows()[1:2]
	for _, rs := range [][]bench.Row{nil, copyOnly} {
		if err := Write(rs, path); err == nil {
			t.Errorf("Write of %d rows without an implementation to draw: no error", len(rs))
		}
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("a failed Write left %s", path)
	}
}
