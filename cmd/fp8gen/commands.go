package main

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fp8gen/fp8gen/backend"
	"github.com/fp8gen/fp8gen/emit"
	"github.com/fp8gen/fp8gen/internal/atomicfile"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/lower"
	"github.com/fp8gen/fp8gen/npy"
	"github.com/fp8gen/fp8gen/ops"
	"github.com/fp8gen/fp8gen/target"
)

func cmdIR(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("ir", "ir OP [--after PASS] [--target T] [--shape M=…,K=…] [--schedule …]", stderr)
	var of opFlags
	of.register(fs, "M=4096,K=4096")
	after := fs.String("after", "", "print the IR after this lowering pass: "+strings.Join(lower.PassNames(), ", ")+" (default: before lowering)")
	kernel := fs.String("kernel", "", "only this kernel of the op")
	name, err := parse(fs, args, true)
	if err != nil {
		return err
	}
	if *after != "" && !slices.Contains(lower.PassNames(), *after) {
		return usagef("--after %q: passes are %s", *after, strings.Join(lower.PassNames(), ", "))
	}
	p, err := of.planFor(name)
	if err != nil {
		return err
	}
	t := p.Target
	var names []string
	for _, s := range p.Steps {
		names = append(names, s.Func.Name)
	}
	if *kernel != "" && !slices.Contains(names, *kernel) {
		return usagef("--kernel %s: %s has the kernels %s", *kernel, name, strings.Join(names, ", "))
	}
	for _, s := range p.Steps {
		if *kernel != "" && s.Func.Name != *kernel {
			continue
		}
		var out string
		cfg := &lower.Config{Verify: true, After: func(pass string, f *ir.Func) {
			if pass == *after {
				out = f.String()
			}
		}}
		if *after == "" {
			cfg = nil
		}
		b := ir.NewBuilder(s.Kernel.Name, t)
		s.Kernel.Build(b, s.Params, p.Shape, p.Options, p.Format)
		f, err := b.Func()
		if err != nil {
			return err
		}
		if cfg != nil {
			cfg.Warps = s.Params["WARPS"]
			cfg.Div = s.Div
			if err := lower.Run(f, cfg); err != nil {
				return err
			}
		} else {
			out = f.String()
		}
		fmt.Fprintf(stdout, "// %s\n%s\n", backend.Comment(p, s), out)
	}
	return nil
}

func cmdEmit(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("emit", "emit OP --target T [--shape M=…,K=…] [--schedule k=v,…] [-o FILE]", stderr)
	var of opFlags
	of.register(fs, "M=4096,K=4096")
	out := fs.String("o", "", "write to FILE (atomically) instead of stdout")
	name, err := parse(fs, args, true)
	if err != nil {
		return err
	}
	if of.target == "" {
		return usagef("--target is required (one of %s)", strings.Join(target.Names(), ", "))
	}
	p, err := of.planFor(name)
	if err != nil {
		return err
	}
	var fns []*ir.Func
	var comments []string
	for _, s := range p.Steps {
		fns = append(fns, s.Func)
		comments = append(comments, backend.Comment(p, s))
	}
	u, err := emit.Unit(fns, comments)
	if err != nil {
		return err
	}
	if *out == "" {
		_, err := io.WriteString(stdout, u.Source)
		return err
	}
	return atomicfile.WriteFile(*out, []byte(u.Source))
}

func cmdRun(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run", "run OP --shape M=…,K=… [--device auto|cpu|gpu] [--target T] [--in x=FILE.npy] [--out DIR]", stderr)
	var of opFlags
	of.register(fs, "")
	device := fs.String("device", "auto", "auto (GPU if one is found, else the CPU interpreter), cpu or gpu")
	var inputs multiFlag
	fs.Var(&inputs, "in", "read an input from .npy: x=FILE (float32, or uint16 holding bf16 bits); repeatable")
	outDir := fs.String("out", "", "write every output to DIR/NAME.npy (fp8 as uint8, scales as float32)")
	seed := fs.Uint64("seed", 1, "seed of the generated inputs")
	adv := fs.Bool("adversarial", false, "plant zeros, ±Inf, NaN, subnormals and values past the format max in the inputs")
	name, err := parse(fs, args, true)
	if err != nil {
		return err
	}
	op, err := ops.Lookup(name)
	if err != nil {
		return usageError{err}
	}
	files, err := readInputs(op, inputs)
	if err != nil {
		return err
	}
	// Shape and input type follow the files when they are given.
	if x, ok := files["x"]; ok {
		if len(x.Shape) != 2 {
			return usagef("--in x: shape %v: want 2 dimensions (M, K)", x.Shape)
		}
		fileShape := ops.Shape{"M": x.Shape[0], "K": x.Shape[1]}
		if of.shape == "" {
			of.shape = fileShape.String()
		} else if sh, err := parseShape(of.shape); err != nil || sh.String() != fileShape.String() {
			return usagef("--shape %s does not match x's shape %v in the file", of.shape, x.Shape)
		}
		of.in = map[string]string{"<f4": "f32", "<u2": "bf16"}[x.Dtype]
	}
	if of.shape == "" {
		return usagef("--shape is required (e.g. --shape M=4096,K=4096) unless --in x=FILE gives it")
	}
	var be backend.Backend
	note := ""
	switch *device {
	case "cpu":
	case "gpu", "auto":
		g, err := backend.OpenGPU()
		switch {
		case err == nil:
			defer g.Close()
			be = g
			if of.target != "" && of.target != g.T.Name {
				return usagef("--target %s, but the GPU is %s (%s)", of.target, g.T.Name, g.Dev.Props().Name)
			}
		case *device == "gpu" || !backend.IsNoDevice(err):
			return err
		default:
			note = " interpreter (no GPU found)"
		}
	default:
		return usagef("--device %q: want auto, cpu or gpu", *device)
	}
	if be == nil {
		t, err := lookupTarget(of.target)
		if err != nil {
			return err
		}
		be = backend.CPU{T: t}
	}
	p, err := of.plan(name, be.Target())
	if err != nil {
		return err
	}
	in := ops.Inputs(op, p.Shape, p.Options, p.Format, *seed, *adv)
	for n, a := range files {
		t, ok := in[n]
		if !ok {
			return usagef("--in %s: %s has no input %s", n, op.Name, n)
		}
		if len(a.Data) != len(t.Data) {
			return usagef("--in %s: %d bytes, want %d for %v %v", n, len(a.Data), len(t.Data), t.DType, t.Shape)
		}
		copy(t.Data, a.Data)
	}
	all, out := p.WithOutputs(in)
	st, err := be.Run(p, all)
	if err != nil {
		return err
	}
	want := op.Reference(in, p.Shape, p.Options, p.Format)
	mismatch := ops.Compare(want, out)

	// Report.
	bytes := 0
	for _, s := range op.Inputs(p.Shape, p.Options) {
		bytes += s.Bytes()
	}
	for _, s := range op.Outputs(p.Shape, p.Options, p.Format) {
		if !s.Zero {
			bytes += s.Bytes()
		}
	}
	fmt.Fprintf(stdout, "%s %v on %s%s, target %s, %s (max %g), x %v\n", op.Name, p.Shape, be.Name(), note, p.Target.Name, p.Format.Name, p.Format.Max, p.Options.In)
	for _, s := range p.Steps {
		fmt.Fprintf(stdout, "  kernel %-16s schedule %v  grid %d  threads %d  LDS %d B  ~%d regs\n", s.Func.Name, s.Params, s.Grid[0], s.Resources.Threads, s.Resources.LDSBytes, s.Resources.Regs)
	}
	gbs := float64(bytes) / st.Elapsed.Seconds() / 1e9
	fmt.Fprintf(stdout, "  time %v, %.3g GB/s over %d ideal bytes", st.Elapsed.Round(time.Microsecond), gbs, bytes)
	if st.Compile > 0 || st.Hits > 0 {
		fmt.Fprintf(stdout, " (JIT %v, %d cache hits)", st.Compile.Round(time.Millisecond), st.Hits)
	}
	fmt.Fprintln(stdout)
	abs, rel := quantError(ops.Floats(in["x"]), op.Dequantize(out, p.Shape, p.Format))
	fmt.Fprintf(stdout, "  quantization error over finite x: max |x - q·inv_scale| = %.4g, relative to |x| max %.4g\n", abs, rel)
	if mismatch == nil {
		fmt.Fprintln(stdout, "  check: bit-exact against the reference")
	} else {
		fmt.Fprintf(stdout, "  check: MISMATCH\n%v\n", mismatch)
	}
	if *outDir != "" {
		if err := writeOutputs(*outDir, out); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "  wrote %d outputs to %s\n", len(out), *outDir)
	}
	if mismatch != nil {
		return fmt.Errorf("outputs differ from the reference")
	}
	return nil
}

func quantError(x, y []float32) (abs, rel float64) {
	top := 0.0
	for i := range x {
		a := float64(x[i])
		if math.IsInf(a, 0) || math.IsNaN(a) || math.IsNaN(float64(y[i])) {
			continue
		}
		abs = math.Max(abs, math.Abs(a-float64(y[i])))
		top = math.Max(top, math.Abs(a))
	}
	if top > 0 {
		rel = abs / top
	}
	return abs, rel
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

func readInputs(op *ops.Op, flags []string) (map[string]*npy.Array, error) {
	out := map[string]*npy.Array{}
	for _, f := range flags {
		name, path, ok := strings.Cut(f, "=")
		if !ok {
			return nil, usagef("--in %q: want NAME=FILE.npy", f)
		}
		a, err := npy.ReadFile(path)
		if err != nil {
			return nil, usagef("--in %s: %v", name, err)
		}
		if a.Dtype != "<f4" && a.Dtype != "<u2" {
			return nil, usagef("--in %s: %s holds %s: want float32 (<f4) or bf16 bits as uint16 (<u2)", name, path, a.Dtype)
		}
		out[name] = a
	}
	return out, nil
}

// writeOutputs writes each output as .npy, fp8 bytes as uint8 and scales as
// float32, each file atomically.
func writeOutputs(dir string, out map[string]*ops.Tensor) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	names := slices.Sorted(maps.Keys(out))
	for _, n := range names {
		t := out[n]
		var a *npy.Array
		switch t.DType.K {
		case ir.KFP8:
			a = npy.FromUint8(t.Shape, t.Data)
		case ir.KF32:
			a = &npy.Array{Dtype: "<f4", Shape: t.Shape, Data: t.Data}
		default:
			return fmt.Errorf("BUG: output %s of type %v", n, t.DType)
		}
		var buf bytes.Buffer
		if err := npy.Write(&buf, a); err != nil {
			return err
		}
		if err := atomicfile.WriteFile(filepath.Join(dir, n+".npy"), buf.Bytes()); err != nil {
			return err
		}
	}
	return nil
}
