package main

import (
	"bytes"
	"errors"
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
	"github.com/fp8gen/fp8gen/internal/atomicfile"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/lower"
	"github.com/fp8gen/fp8gen/npy"
	"github.com/fp8gen/fp8gen/ops"
	"github.com/fp8gen/fp8gen/runtime"
	"github.com/fp8gen/fp8gen/schedule"
	"github.com/fp8gen/fp8gen/target"
)

func cmdIR(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("ir", "ir OP [--after PASS] [--target T] [--shape M=…,K=…] [--schedule …]", stderr)
	var of opFlags
	of.register(fs, "the GPU's, else sm_90", "the op's example shape")
	after := fs.String("after", "", "print the IR after this lowering pass: "+strings.Join(lower.PassNames(), ", ")+" (default: before lowering)")
	kernel := fs.String("kernel", "", "only this kernel of the op")
	name, err := parse(fs, args, true)
	if err != nil {
		return err
	}
	if *after != "" && !slices.Contains(lower.PassNames(), *after) {
		return usagef("--after %q: passes are %s", *after, strings.Join(lower.PassNames(), ", "))
	}
	p, err := of.planFor(name, true)
	if err != nil {
		return err
	}
	var names []string
	for _, s := range p.Steps {
		names = append(names, s.Func.Name)
	}
	if *kernel != "" && !slices.Contains(names, *kernel) {
		return usagef("--kernel %s: %s has the kernels %s", *kernel, name, strings.Join(names, ", "))
	}
	var sb strings.Builder
	for _, s := range p.Steps {
		if *kernel != "" && s.Func.Name != *kernel {
			continue
		}
		var out string
		if *after == "" {
			b := ir.NewBuilder(s.Kernel.Name, p.Target)
			b.SetIndex(p.Index)
			s.Kernel.Build(b, p.Call)
			f, err := b.Func()
			if err != nil {
				return err
			}
			out = f.String()
		} else {
			cfg := &lower.Config{Verify: true, After: func(pass string, f *ir.Func) {
				if pass == *after {
					out = f.String()
				}
			}}
			if _, err := p.Call.Build(s.Kernel, cfg); err != nil {
				return err
			}
		}
		fmt.Fprintf(&sb, "// %s\n%s\n", backend.Comment(p, s), out)
	}
	_, err = io.WriteString(stdout, sb.String())
	return err
}

func cmdEmit(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("emit", "emit OP [--target T] [--shape M=…,K=…] [--schedule k=v,…] [-o FILE]", stderr)
	var of opFlags
	of.register(fs, "the GPU's; without one, --target is required", "the op's example shape")
	out := fs.String("o", "", "write to FILE (atomically; through a symlink to its target) instead of stdout")
	name, err := parse(fs, args, true)
	if err != nil {
		return err
	}
	path := *out
	if path != "" {
		if path, err = outputFile("-o", path); err != nil {
			return err
		}
	}
	p, err := of.planFor(name, false)
	if err != nil {
		return err
	}
	u, err := backend.Unit(p)
	if err != nil {
		return err
	}
	if path == "" {
		_, err := io.WriteString(stdout, u.Source)
		return err
	}
	return atomicfile.WriteFile(path, []byte(u.Source))
}

// outputFile is where the flag's FILE is written: FILE, or the file a
// symlink FILE points to (followed even where that file does not exist
// yet), so that a link is written through and never replaced; a folder,
// FIFO or device, or a missing folder, is refused before any work.
func outputFile(flag, path string) (string, error) {
	real, err := throughLinks(path)
	if err != nil {
		return "", usagef("%s %s: %v", flag, path, err)
	}
	fi, err := os.Stat(real)
	switch {
	case err == nil && fi.IsDir():
		return "", usagef("%s %s is a folder, not a file", flag, path)
	case err == nil && !fi.Mode().IsRegular():
		return "", usagef("%s %s is a %v, not a regular file", flag, path, fi.Mode().Type())
	case err != nil && !os.IsNotExist(err):
		return "", usagef("%s %s: %v", flag, path, err)
	}
	if di, err := os.Stat(filepath.Dir(real)); err != nil || !di.IsDir() {
		return "", usagef("%s %s: folder %s does not exist", flag, path, filepath.Dir(real))
	}
	return real, nil
}

// throughLinks follows path while it is a symlink, to the path it ends at.
func throughLinks(path string) (string, error) {
	for range 40 {
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			return path, nil
		}
		to, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(to) {
			to = filepath.Join(filepath.Dir(path), to)
		}
		path = to
	}
	return "", fmt.Errorf("too many levels of symlinks")
}

func cmdRun(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run", "run OP [--shape M=…,K=…] [--device auto|cpu|gpu] [--target T] [--in NAME=FILE.npy] [--out DIR]", stderr)
	var of opFlags
	of.register(fs, "the GPU's, else sm_90 in the interpreter", "the sizes the --in files give, the rest from the op's example shape")
	of.useTuned = true // run takes what fp8gen tune kept (then the shipped tuning); export the shipped tuning; ir and emit the op's default
	device := fs.String("device", "auto", "auto (GPU if one is found, else the CPU interpreter), cpu or gpu")
	inputs := kvFlag{form: "NAME=FILE"}
	fs.Var(&inputs, "in", "read an input from .npy: NAME=FILE (float32 <f4, bf16 bits as uint16 <u2, int32 <i4, int64 <i8, fp8 bytes |u1); repeatable; the inputs not read are generated from --seed")
	outDir := fs.String("out", "", "write every output to DIR/NAME.npy, all or none, creating DIR and missing parents; a NAME.npy that is a symlink is written through")
	scratch := fs.Bool("scratch", false, "with --out, also write the op's scratch tensors (fp8gen list shows them)")
	seed := fs.Uint64("seed", 1, "seed of the inputs not read with --in: the same seed gives the same inputs")
	adv := fs.Bool("adversarial", false, "plant zeros, ±Inf, NaN, subnormals and values past the format max in the inputs")
	name, err := parse(fs, args, true)
	if err != nil {
		return err
	}
	op, err := ops.Lookup(name)
	if err != nil {
		return usageError{err}
	}
	if *scratch && *outDir == "" {
		return usagef("--scratch without --out: nothing would be written")
	}
	if *device != "auto" && *device != "cpu" && *device != "gpu" {
		return usagef("--device %q: want auto, cpu or gpu", *device)
	}
	files, err := readInputs(op, inputs.kv)
	if err != nil {
		return err
	}
	if err := of.fromFiles(op, files, inputs.kv); err != nil {
		return err
	}
	if _, err := lookupTarget(of.target); err != nil {
		return err
	}
	var be backend.Backend
	note := ""
	if *device != "cpu" {
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
		case errors.Is(err, runtime.ErrNoCgo):
			note = " interpreter (no GPU: this fp8gen was built without cgo)"
		default:
			note = " interpreter (no GPU found)"
		}
	}
	if be == nil {
		t, _ := lookupTarget(of.target)
		be = backend.CPU{T: t}
	}
	p, err := of.plan(name, be.Target())
	if err != nil {
		return err
	}
	if _, cpu := be.(backend.CPU); cpu {
		total := 0
		for _, s := range p.Specs() {
			total += s.Bytes()
		}
		if total > maxInterpBytes {
			return usagef("%s at %v moves %d bytes: more than the interpreter runs in reasonable time (%d); use a GPU or a smaller shape", op.Name, p.Shape, total, maxInterpBytes)
		}
	}
	roles := []ops.Role{ops.Output}
	if *scratch {
		roles = append(roles, ops.Scratch)
	}
	var outPaths map[string]string
	if *outDir != "" {
		var names []string
		for _, s := range p.SpecsOf(roles...) {
			names = append(names, s.Name)
		}
		var undo func()
		if outPaths, undo, err = prepareOut(*outDir, names); err != nil {
			return err
		}
		defer undo() // removes the folders it made that are still empty: the run failed
	}
	in := ops.Inputs(p.Call, *seed, *adv)
	for n, a := range files {
		t := in[n]
		if t == nil {
			return usagef("--in %s: %s takes no %s with options %v", n, op.Name, n, p.Options)
		}
		if !slices.Equal(a.Shape, t.Shape) {
			return usagef("--in %s: %s", n, shapeMismatch(p, n, path(inputs.kv, n), a.Shape, t.Shape))
		}
		copy(t.Data, a.Data)
	}
	all, out := p.WithOutputs(in)
	st, err := be.Run(p, all)
	if ie := (*ops.InputError)(nil); errors.As(err, &ie) {
		return usagef("--in: %v", err) // refused before any launch
	}
	if err != nil {
		return err
	}
	exact, mismatch := p.Call.CheckOutputs(in, out)

	var sb strings.Builder
	format := ""
	if p.Format != nil {
		format = fmt.Sprintf(", %s (max %g)", p.Format.Name, p.Format.Max)
	}
	fmt.Fprintf(&sb, "%s %v on %s%s, target %s%s, %v indexing\n", op.Name, p.Shape, be.Name(), note, p.Target.Name, format, p.Index)
	sb.WriteString(provenance(p, inputs.kv, *seed, *adv))
	for _, s := range p.Steps {
		fmt.Fprintf(&sb, "  kernel %-16s schedule %v  grid %v  threads %d  LDS %d B  %s\n", s.Func.Name, p.Schedule, s.Grid, s.Resources.Threads, s.Resources.LDSBytes, regsText(s.Resources, p.Target))
	}
	if of.tuned {
		sb.WriteString("  schedule from the tuning cache (fp8gen tune)\n")
	}
	bytes := p.BytesFor(in)
	gbs := float64(bytes) / st.Elapsed.Seconds() / 1e9
	fmt.Fprintf(&sb, "  time %v, %.3g GB/s over %d ideal bytes", st.Elapsed.Round(time.Microsecond), gbs, bytes)
	if st.Compile > 0 || st.Hits > 0 {
		fmt.Fprintf(&sb, " (JIT %v, %d cache hits)", st.Compile.Round(time.Millisecond), st.Hits)
	}
	sb.WriteByte('\n')
	for _, r := range st.Rebuilt {
		fmt.Fprintf(&sb, "  JIT cache: rebuilt a damaged entry: %s\n", r)
	}
	if op.Dequantize != nil {
		abs, rel := quantError(in[p.SpecsOf(ops.Input)[0].Name].Floats(), op.Dequantize(p.Call, in, out))
		fmt.Fprintf(&sb, "  quantization error over finite x: max |x - q·inv_scale| = %.4g, relative to |x| max %.4g\n", abs, rel)
	}
	switch {
	case mismatch == nil && exact:
		sb.WriteString("  check: bit-exact against the reference\n")
	case mismatch == nil:
		sb.WriteString("  check: within the op's allowance of the reference (float sums associate as the schedule says)\n")
	default:
		fmt.Fprintf(&sb, "  check: MISMATCH\n%v\n", mismatch)
	}
	if *outDir != "" {
		if err := writeOutputs(outPaths, out); err != nil {
			return err
		}
		fmt.Fprintf(&sb, "  wrote %d outputs to %s: %s", len(outPaths), *outDir, strings.Join(slices.Sorted(maps.Keys(outPaths)), ", "))
		if sc := p.SpecsOf(ops.Scratch); len(sc) > 0 && !*scratch {
			var ns []string
			for _, s := range sc {
				ns = append(ns, s.Name)
			}
			fmt.Fprintf(&sb, " (scratch not written: %s; add --scratch)", strings.Join(ns, ", "))
		}
		sb.WriteByte('\n')
	}
	if _, err := io.WriteString(stdout, sb.String()); err != nil {
		return err
	}
	if mismatch != nil {
		return fmt.Errorf("outputs differ from the reference")
	}
	return nil
}

// provenance says where each input of the run came from: the file --in
// named, or the generator with its seed; and, where some came from files
// and the others were generated, that too.
func provenance(p *ops.Plan, files [][2]string, seed uint64, adversarial bool) string {
	path := map[string]string{}
	for _, kv := range files {
		path[kv[0]] = kv[1]
	}
	var sb strings.Builder
	read, made := 0, 0
	for _, s := range p.SpecsOf(ops.Input) {
		fmt.Fprintf(&sb, "  input %s %v%v: ", s.Name, s.DType, s.Shape)
		if f, ok := path[s.Name]; ok {
			fmt.Fprintf(&sb, "read from %s\n", f)
			read++
			continue
		}
		made++
		what := "random integers in [-100, 100]"
		switch {
		case p.Op.FillInputs != nil && s.DType.K != ir.KF32 && s.DType.K != ir.KBF16:
			what = "the op's generator of valid " + s.Name
		case s.DType.K == ir.KFP8:
			what = "random FP8 codes"
		case s.DType.K == ir.KF32 || s.DType.K == ir.KBF16:
			what = "normal values × 3"
			if adversarial {
				what += ", with zeros, ±Inf, NaN, subnormals and values past the format max planted (--adversarial)"
			}
		}
		fmt.Fprintf(&sb, "generated, seed %d (%s)\n", seed, what)
	}
	if read > 0 && made > 0 {
		fmt.Fprintf(&sb, "  inputs: %d read from files, %d generated (seed %d)\n", read, made, seed)
	}
	return sb.String()
}

// shapeMismatch says how a file's shape differs from what tensor name is
// at the plan's sizes, naming the tensor once and its sizes by name:
// "x.npy has 4095 elements; x is [K] = [4096] at K=4096".
func shapeMismatch(p *ops.Plan, name, file string, got, want []int) string {
	dims := name
	for _, t := range p.Op.Tensors {
		if t.Name == name && t.Present(p.Options) {
			dims = "[" + dimsOf(t) + "]"
		}
	}
	have := fmt.Sprintf("has shape %v", got)
	if len(got) == 1 && len(want) == 1 {
		have = fmt.Sprintf("has %d elements", got[0])
	}
	return fmt.Sprintf("%s %s; %s is %s = %v at %v", file, have, name, dims, want, p.Shape)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// path is the file --in gave for name.
func path(kv [][2]string, name string) string {
	for _, f := range kv {
		if f[0] == name {
			return f[1]
		}
	}
	return name
}

// regsText is the estimated registers of a kernel, with a note where the
// estimate is above the target's limit but the compiler is expected to fit
// it (the estimate counts every live tile register; see schedule.Check).
func regsText(r schedule.Resources, t *target.Target) string {
	if r.Regs <= t.RegsLane {
		return fmt.Sprintf("~%d regs", r.Regs)
	}
	return fmt.Sprintf("~%d regs (an estimate above %s's %d; the compiler is expected to fit it in ~%d)", r.Regs, t.Name, t.RegsLane, schedule.CompilerRegs(r, t))
}

// maxInterpBytes bounds the tensors of a run in the interpreter, which
// moves a few tens of MB a second.
const maxInterpBytes = 1 << 30

// fromFiles takes the shape, and the options that name element types, from
// the input files where the flags leave them open, and refuses files that
// contradict the flags or the op.
func (o *opFlags) fromFiles(op *ops.Op, files map[string]*npy.Array, paths [][2]string) error {
	path := map[string]string{}
	for _, kv := range paths {
		path[kv[0]] = kv[1]
	}
	sizes := ops.Shape{}
	from := map[string]string{} // the input each size came from
	optSet := map[string]string{}
	flagOpts := o.flagOptions(op)
	for _, t := range op.Tensors {
		a, ok := files[t.Name]
		if !ok || !t.Present(flagOpts) {
			continue
		}
		if len(a.Shape) != len(t.Shape) {
			return usagef("--in %s: %s has shape %v, %s; %s is [%s], %s", t.Name, path[t.Name], a.Shape, plural(len(a.Shape), "dimension"), t.Name, dimsOf(t), plural(len(t.Shape), "dimension"))
		}
		for i, e := range t.Shape {
			if n := e.Names(); len(n) == 1 && e.String() == n[0] {
				if v, ok := sizes[n[0]]; ok && v != a.Shape[i] {
					return usagef("--in %s: %s gives %s=%d, but --in %s gave %s=%d", t.Name, path[t.Name], n[0], a.Shape[i], from[n[0]], n[0], v)
				}
				sizes[n[0]], from[n[0]] = a.Shape[i], t.Name
			}
		}
		if !strings.HasPrefix(t.DType, "{") {
			if npyOf(t.DType) != a.Dtype {
				return usagef("--in %s: %s holds %s (%s); %s is %s", t.Name, path[t.Name], a.Dtype, npyNames(a.Dtype), t.Name, t.DType)
			}
			continue
		}
		opt := strings.Trim(t.DType, "{}")
		i := slices.IndexFunc(op.Options, func(x ops.Option) bool { return x.Name == opt })
		var dt string // the option's value that the file's elements are
		if i >= 0 {
			if j := slices.IndexFunc(op.Options[i].Values, func(v string) bool { return npyOf(v) == a.Dtype }); j >= 0 {
				dt = op.Options[i].Values[j]
			}
		}
		if dt == "" {
			return usagef("--in %s: %s holds %s (%s); %s takes %s", t.Name, path[t.Name], a.Dtype, npyNames(a.Dtype), t.Name, strings.Join(op.Options[i].Values, " or "))
		}
		flagName := map[string]string{"in": "in-dtype"}[opt]
		switch {
		case flagName != "" && o.set(flagName) && o.in != dt:
			return usagef("--in %s: %s holds %s, but --%s %s", t.Name, path[t.Name], dt, flagName, o.in)
		case flagName != "":
			o.in = dt
			o.fs.Set(flagName, dt)
		default:
			optSet[opt] = dt
		}
	}
	for k, v := range optSet {
		if err := o.opts.Set(k + "=" + v); err != nil {
			return usagef("--in: option %s: %v", k, err)
		}
	}
	if len(sizes) == 0 {
		return nil
	}
	if o.shape == "" {
		// The sizes no file gives come from the example.
		for _, n := range op.Sizes {
			if _, ok := sizes[n]; !ok {
				sizes[n] = op.Example[n]
			}
		}
		o.shape = sizes.String()
		return nil
	}
	sh, err := parseShape(o.shape)
	if err != nil {
		return err
	}
	for _, t := range op.Tensors {
		if a, ok := files[t.Name]; ok && t.Present(flagOpts) {
			for i, e := range t.Shape {
				if n := e.Names(); len(n) == 1 && e.String() == n[0] && sh[n[0]] != a.Shape[i] {
					return usagef("--shape %s gives %s=%d, but --in %s: %s has %s=%d (shape %v)", o.shape, n[0], sh[n[0]], t.Name, path[t.Name], n[0], a.Shape[i], a.Shape)
				}
			}
		}
	}
	return nil
}

// flagOptions is the options --opt gives, the others at their defaults:
// which of the tensors an op lists under several options (qkv if
// order=bshd, qkv if order=sbhd) the files stand for.
func (o *opFlags) flagOptions(op *ops.Op) ops.Options {
	opts := ops.Options{}
	for _, x := range op.Options {
		opts[x.Name] = x.Default
	}
	for _, kv := range o.opts.kv {
		opts[kv[0]] = kv[1]
	}
	return opts
}

func dimsOf(t ops.Arg) string {
	var d []string
	for _, e := range t.Shape {
		d = append(d, e.String())
	}
	return strings.Join(d, ", ")
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

func readInputs(op *ops.Op, kv [][2]string) (map[string]*npy.Array, error) {
	out := map[string]*npy.Array{}
	for _, f := range kv {
		name, path := f[0], f[1]
		if !slices.ContainsFunc(op.Tensors, func(t ops.Arg) bool { return t.Name == name && t.Role == ops.Input }) {
			var ins []string // once each: an op may list a tensor under several options
			for _, t := range op.Tensors {
				if t.Role == ops.Input && !slices.Contains(ins, t.Name) {
					ins = append(ins, t.Name)
				}
			}
			return nil, usagef("--in %s: %s has no input %s (inputs: %s)", name, op.Name, name, strings.Join(ins, ", "))
		}
		a, err := npy.ReadFile(path)
		if err != nil {
			return nil, usagef("--in %s: %v", name, err)
		}
		out[name] = a
	}
	return out, nil
}

// prepareOut makes sure --out is a folder that can be written, before the
// run, creating it and its missing parents (undo removes those still
// empty), and says where each of names is written: DIR/NAME.npy, or the
// file a symlink there points to. A file on the way to DIR, or a NAME.npy
// that is a folder, is refused.
func prepareOut(dir string, names []string) (paths map[string]string, undo func(), err error) {
	var made []string // the folders made, deepest first
	remove := func() {
		for _, d := range made {
			os.Remove(d) // only if still empty
		}
	}
	defer func() {
		if err != nil {
			remove()
		}
	}()
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err == nil {
			if !fi.IsDir() {
				if d == filepath.Clean(dir) {
					return nil, nil, usagef("--out %s is not a folder", dir)
				}
				return nil, nil, usagef("--out %s: %s is a file, not a folder", dir, d)
			}
			break
		}
		if !os.IsNotExist(err) {
			return nil, nil, usagef("--out %s: %v", dir, err)
		}
		missing = append(missing, d)
		if d == filepath.Dir(d) {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], 0o755); err != nil && !os.IsExist(err) {
			return nil, nil, usagef("--out %s: %v", dir, err)
		}
		made = append([]string{missing[i]}, made...)
	}
	paths = map[string]string{}
	for _, n := range names {
		if paths[n], err = outputFile("--out", filepath.Join(dir, n+".npy")); err != nil {
			return nil, nil, err
		}
	}
	f, err := os.CreateTemp(dir, ".fp8gen-probe-*")
	if err != nil {
		return nil, nil, usagef("--out %s: cannot write there: %v", dir, err)
	}
	f.Close()
	return paths, remove, os.Remove(f.Name())
}

// npyOf is the .npy descriptor of a tensor an op's description types by
// name ("fp8": any FP8 format's bytes), "" for none.
func npyOf(name string) string {
	if name == "fp8" {
		return ir.DType{K: ir.KFP8}.Npy()
	}
	d, _ := ir.DTypeNamed(name)
	return d.Npy()
}

// npyNames says which element types a .npy descriptor stores ("bf16",
// "fp8 or e8m0"), for an error's reader.
func npyNames(descr string) string {
	var names []string
	for _, n := range ir.StoredKinds() {
		if npyOf(n) == descr {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "no element type of fp8gen's"
	}
	return strings.Join(names, " or ")
}

// npyDtype is how a tensor's elements are stored in .npy.
func npyDtype(d ir.DType) string {
	if n := d.Npy(); n != "" {
		return n
	}
	panic("BUG: no .npy dtype for " + d.String())
}

// writeOutputs writes each tensor of out that paths names to its path as
// .npy, all or none.
func writeOutputs(paths map[string]string, out map[string]*ops.Tensor) error {
	var set atomicfile.Set
	for _, n := range slices.Sorted(maps.Keys(paths)) {
		t := out[n]
		var buf bytes.Buffer
		if err := npy.Write(&buf, &npy.Array{Dtype: npyDtype(t.DType), Shape: t.Shape, Data: t.Data}); err != nil {
			set.Abort()
			return err
		}
		if err := set.Stage(paths[n], buf.Bytes()); err != nil {
			return fmt.Errorf("writing %s: %w (no output written)", n, err)
		}
	}
	if err := set.Commit(); err != nil {
		return fmt.Errorf("writing the outputs: %w (none written)", err)
	}
	return nil
}
