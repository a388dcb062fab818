// Command quantize casts a 2-D .npy array to FP8 with one scale per row,
// through launchers that fp8gen generates (kernels_gen.go): on the GPU
// where there is one, in fp8gen's CPU interpreter where there is none.
//
//	quantize -in x.npy -out DIR [-target sm_90]
//
// x.npy holds float32 ("<f4") or bf16 bits ("<u2"); DIR receives q.npy (the
// FP8 codes, "|u1") and inv_scale.npy (float32, one per row), both or
// neither. Regenerate the launchers with go generate.
package main

//go:generate go run github.com/fp8gen/fp8gen/cmd/fp8gen generate -o kernels_gen.go RowwiseCast=rowwise_cast@M=4096,K=4096+M=16,K=16384+M=1,K=16385 RowwiseCastF32=rowwise_cast:in=f32@M=4096,K=4096+M=16,K=16384+M=1,K=16385

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/fp8gen/fp8gen/launch"
	"github.com/fp8gen/fp8gen/npy"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quantize:", err)
		var u usage
		if errors.As(err, &u) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

type usage struct{ error }

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("quantize", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	in := fs.String("in", "", "the .npy file to quantize: 2-D, float32 or bf16 bits (uint16)")
	out := fs.String("out", "", "the folder for q.npy and inv_scale.npy")
	tgt := fs.String("target", "sm_90", "without a GPU, interpret the kernels of this target (gfx942, gfx950, sm_90)")
	if err := fs.Parse(args); err != nil {
		return usage{err}
	}
	if *in == "" || *out == "" || fs.NArg() > 0 {
		return usage{errors.New("usage: quantize -in x.npy -out DIR [-target T]")}
	}
	x, err := npy.ReadFile(*in)
	if err != nil {
		return usage{err}
	}
	if len(x.Shape) != 2 {
		return usage{fmt.Errorf("%s: shape %v; want 2-D [M, K]", *in, x.Shape)}
	}
	launcher, tensor, dtype := RowwiseCastF32, RowwiseCastF32Tensor, "f32"
	switch x.Dtype {
	case npy.Float32:
	case npy.Uint16:
		launcher, tensor, dtype = RowwiseCast, RowwiseCastTensor, "bf16"
	default:
		return usage{fmt.Errorf("%s: dtype %s; want float32 (<f4) or bf16 bits (<u2)", *in, x.Dtype)}
	}
	if fi, err := os.Stat(*out); err == nil && !fi.IsDir() {
		return usage{fmt.Errorf("-out %s is not a folder", *out)}
	}
	r, err := launch.Open(*tgt)
	if err != nil {
		return err
	}
	defer r.Close()
	m, k := x.Shape[0], x.Shape[1]
	// The outputs as the target has them: q's FP8 format is the target's.
	q, err := tensor(r, "q", m, k)
	if err != nil {
		return err
	}
	inv, err := tensor(r, "inv_scale", m, k)
	if err != nil {
		return err
	}
	xt := &launch.Tensor{DType: dtype, Shape: x.Shape, Data: x.Data}
	if err := launcher(context.Background(), r, m, k, xt, q, inv); err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	qf, invf := filepath.Join(*out, "q.npy"), filepath.Join(*out, "inv_scale.npy")
	if err := npy.WriteFile(qf, &npy.Array{Dtype: npy.Uint8, Shape: q.Shape, Data: q.Data}); err != nil {
		return err
	}
	if err := npy.WriteFile(invf, &npy.Array{Dtype: npy.Float32, Shape: inv.Shape, Data: inv.Data}); err != nil {
		os.Remove(qf) // both or neither
		return err
	}
	_, err = fmt.Fprintf(stdout, "quantized %s [%d, %d] %s to %s on %s: %s, %s\n", *in, m, k, dtype, q.DType, r, qf, invf)
	return err
}
