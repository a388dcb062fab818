// Package launch runs exported ops (package export) from Go: on a GPU
// from the code object the export holds for the device's architecture, or
// from its source through the JIT cache; where there is no GPU, in the
// CPU interpreter, from the same op description, checked to be the same
// variant. Every call holds the sizes to the export's class of shapes and
// the tensors to their dtypes and shapes before anything runs.
//
// fp8gen generate writes typed launchers over this package; it can also be
// used by hand:
//
//	op, err := launch.Load(os.DirFS("kernels"), "rowwise_cast")
//	r, err := launch.Open("sm_90")
//	err = r.Run(ctx, op, launch.Sizes{"M": m, "K": k}, launch.Tensors{"x": x, "q": q, "inv_scale": inv})
package launch

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/fp8gen/fp8gen/backend"
	"github.com/fp8gen/fp8gen/export"
	"github.com/fp8gen/fp8gen/interp"
	"github.com/fp8gen/fp8gen/ops"
	"github.com/fp8gen/fp8gen/runtime"
	"github.com/fp8gen/fp8gen/schedule"
	"github.com/fp8gen/fp8gen/target"
)

// Sizes are an op's named sizes.
type Sizes map[string]int

// Tensors are a call's inputs and outputs by name.
type Tensors map[string]*Tensor

// Tensor is a caller's tensor: host memory (Data, little-endian,
// row-major) or, on a GPU runner, a device buffer (Buf). DType is the
// manifest's name for it (f32, bf16, i32, i64, e4m3fnuz, …).
type Tensor struct {
	DType string
	Shape []int
	Data  []byte
	Buf   *runtime.Buffer
}

// Op is one exported op, with its exports for each target: one, or
// several for different classes of shapes (a fast one-pass schedule for
// short rows, a two-pass one for the rest), tried in order.
type Op struct {
	Name    string
	bundles map[string][]*export.Bundle // by target, in order

	mu    sync.Mutex
	plans map[string]*ops.Plan // the CPU's, by the first kernel's symbol
	reach map[string]bool      // reachesPast's answers
}

// Load reads an op's exports from fsys: dir is one export, or holds one
// folder per target (dir/sm_90/manifest.json, …), or one folder per class
// of shapes holding those (dir/0/sm_90/manifest.json, dir/1/sm_90/…),
// tried in the order of their names.
func Load(fsys fs.FS, dir string) (*Op, error) {
	op := &Op{bundles: map[string][]*export.Bundle{}, plans: map[string]*ops.Plan{}, reach: map[string]bool{}}
	add := func(d string) error {
		b, err := export.ReadFS(fsys, d)
		if err != nil {
			return err
		}
		m := b.Manifest
		if op.Name != "" && op.Name != m.Op {
			return fmt.Errorf("launch: %s holds exports of %s and %s", dir, op.Name, m.Op)
		}
		for _, o := range op.bundles[m.Target.Name] {
			if o.Manifest.Kernels[0].Symbol == m.Kernels[0].Symbol {
				return fmt.Errorf("launch: %s holds the export %s for %s twice", dir, m.Kernels[0].Symbol, m.Target.Name)
			}
		}
		op.Name = m.Op
		op.bundles[m.Target.Name] = append(op.bundles[m.Target.Name], b)
		return nil
	}
	isExport := func(d string) bool {
		_, err := fs.Stat(fsys, path.Join(d, export.ManifestFile))
		return err == nil
	}
	var walk func(d string, depth int) error
	walk = func(d string, depth int) error {
		if isExport(d) {
			return add(d)
		}
		if depth == 0 {
			return nil
		}
		entries, err := fs.ReadDir(fsys, d)
		if err != nil {
			return fmt.Errorf("launch: %w", err)
		}
		for _, e := range entries { // sorted by name
			if e.IsDir() {
				if err := walk(path.Join(d, e.Name()), depth-1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(dir, 2); err != nil {
		return nil, err
	}
	if len(op.bundles) == 0 {
		return nil, fmt.Errorf("launch: %s holds no export (no %s)", dir, export.ManifestFile)
	}
	return op, nil
}

// reachesPast is call.IndexOverflows, remembered per export and shape:
// a launcher called every step must not rebuild the kernels' IR each time.
func (op *Op) reachesPast(m *export.Manifest, call *ops.Call) (bool, error) {
	key := m.Kernels[0].Symbol + " " + call.Shape.String()
	op.mu.Lock()
	wide, ok := op.reach[key]
	op.mu.Unlock()
	if ok {
		return wide, nil
	}
	wide, err := call.IndexOverflows()
	if err != nil {
		return false, err
	}
	op.mu.Lock()
	op.reach[key] = wide
	op.mu.Unlock()
	return wide, nil
}

// Targets are the targets the op was exported for, sorted.
func (op *Op) Targets() []string { return slices.Sorted(maps.Keys(op.bundles)) }

// Manifests are the op's exports for a target, in the order they are tried.
func (op *Op) Manifests(t string) []*export.Manifest {
	var out []*export.Manifest
	for _, b := range op.bundles[t] {
		out = append(out, b.Manifest)
	}
	return out
}

// Pick is the export a call at sizes on target t runs: the first of the
// target's exports whose class holds the shape.
func (op *Op) Pick(t string, sizes Sizes) (*export.Manifest, error) {
	b, _, err := op.pick(t, sizes)
	if err != nil {
		return nil, err
	}
	return b.Manifest, nil
}

func (op *Op) pick(t string, sizes Sizes) (*export.Bundle, map[string]int64, error) {
	bs := op.bundles[t]
	if len(bs) == 0 {
		return nil, nil, fmt.Errorf("launch: %s was exported for %s, not for %s", op.Name, strings.Join(op.Targets(), ", "), t)
	}
	sh := export.Sizes64(sizes)
	var why []string
	for i, b := range bs {
		err := b.Manifest.Check(sh)
		if err == nil {
			return b, sh, nil
		}
		if len(bs) == 1 {
			return nil, nil, err
		}
		why = append(why, fmt.Sprintf("export %d (at %s): %v", i+1, export.SizesText(export.Sizes64(b.Manifest.Shape)), err))
	}
	return nil, nil, fmt.Errorf("%s: none of its %d exports for %s runs %s:\n  %s", op.Name, len(bs), t, export.SizesText(sh), strings.Join(why, "\n  "))
}

// Runner runs ops on one GPU, or in the CPU interpreter as a target.
type Runner struct {
	dev      *runtime.Device // nil: the interpreter
	target   *target.Target
	Compiler runtime.Compiler // the JIT, for a target an export holds no code object for

	mu      sync.Mutex
	kernels map[string]*runtime.Kernel // by symbol
	// modules counts the modules loaded from exports' code objects and
	// those compiled by the JIT (what the GPU test holds the paths to).
	modules struct{ objects, jit int }
}

// Open opens GPU 0, or, where there is none, the CPU interpreter running
// the exports for cpuTarget.
func Open(cpuTarget string) (*Runner, error) {
	g, err := backend.OpenGPU()
	if backend.IsNoDevice(err) {
		return OnCPU(cpuTarget)
	}
	if err != nil {
		return nil, err
	}
	return &Runner{dev: g.Dev, target: g.T, kernels: map[string]*runtime.Kernel{}}, nil
}

// OnCPU is a runner that interprets the exports for target t.
func OnCPU(t string) (*Runner, error) {
	tg, err := target.Lookup(t)
	if err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	return &Runner{target: tg}, nil
}

// String says where the runner runs.
func (r *Runner) String() string {
	if r.dev == nil {
		return "the CPU interpreter, as " + r.target.Name
	}
	return fmt.Sprintf("%s (%s)", r.dev.Props().Name, r.target.Name)
}

// Target is the target whose exports the runner runs.
func (r *Runner) Target() string { return r.target.Name }

// Close releases the GPU.
func (r *Runner) Close() error {
	if r.dev == nil {
		return nil
	}
	return r.dev.Close()
}

// Run checks sizes and tensors against op's export for the runner's
// target, then runs its kernels in order and, where they set status
// words, reports the bad input they found.
func (r *Runner) Run(ctx context.Context, op *Op, sizes Sizes, tensors Tensors) error {
	b, sh, err := op.pick(r.target.Name, sizes)
	if err != nil {
		return err
	}
	m := b.Manifest
	call, err := op.call(r.target, m, sizes)
	if err != nil {
		return err
	}
	if m.IndexBits == 32 {
		// The manifest bounds elements; what the tiles reach past them
		// (padding rows times a long row) is this fp8gen's to check.
		if wide, err := op.reachesPast(m, call); err != nil {
			return err
		} else if wide {
			return fmt.Errorf("%s: at %s this 32-bit export's tiles reach past 2^31 elements; export it at this shape (it then indexes in 64 bits)", m.Op, export.SizesText(export.Sizes64(sizes)))
		}
	}
	host, err := checkTensors(m, sh, tensors, r.dev != nil)
	if err != nil {
		return err
	}
	if host {
		in := map[string]*ops.Tensor{}
		for _, s := range call.SpecsOf(ops.Input) {
			in[s.Name] = &ops.Tensor{Spec: s, Data: tensors[s.Name].Data}
		}
		if err := call.CheckInputs(in); err != nil {
			return err
		}
	}
	if r.dev == nil {
		return r.runCPU(op, m, call, sh, tensors)
	}
	return r.runGPU(ctx, b, call, sh, tensors)
}

// call is the op at sizes, for its host checks and status words.
func (op *Op) call(t *target.Target, m *export.Manifest, sizes Sizes) (*ops.Call, error) {
	o, err := ops.Lookup(m.Op)
	if err != nil {
		return nil, fmt.Errorf("launch: this fp8gen has no op %s: %w", m.Op, err)
	}
	c, err := o.NewCall(t, ops.Shape(sizes), ops.Options(m.Options))
	if err != nil {
		return nil, err
	}
	// The export must describe the op as this fp8gen has it, tensor for
	// tensor, or its checks and this fp8gen's reading of the tensors part.
	specs := c.Specs()
	sh := export.Sizes64(sizes)
	skew := func(what string) error {
		return fmt.Errorf("launch: %s's export for %s does not match this fp8gen's op (%s); export it again", m.Op, t.Name, what)
	}
	if len(specs) != len(m.Tensors) {
		return nil, skew(fmt.Sprintf("%d tensors, this fp8gen's has %d", len(m.Tensors), len(specs)))
	}
	for i, s := range specs {
		mt := m.Tensors[i]
		dims, err := export.DimsAt(mt, sh)
		if err != nil {
			return nil, err
		}
		if mt.Name != s.Name || mt.Role != s.Role.String() || mt.DType != s.DType.String() || !slices.Equal(dims, int64s(s.Shape)) {
			return nil, skew(fmt.Sprintf("tensor %d is %s %s %s %v, this fp8gen's %s %s %s %v", i, mt.Role, mt.DType, mt.Name, dims, s.Role, s.DType, s.Name, s.Shape))
		}
	}
	return c.With(schedule.Params(m.Schedule)), nil
}

// checkTensors holds the caller's tensors to the manifest: every input and
// output given, nothing else, each of its dtype and shape, host memory of
// its size or (on a GPU) a buffer at least that large. It reports whether
// every tensor is in host memory.
func checkTensors(m *export.Manifest, sh map[string]int64, ts Tensors, gpu bool) (host bool, err error) {
	host = true
	want := map[string]bool{}
	for _, t := range m.Tensors {
		if t.Role == "scratch" {
			continue
		}
		want[t.Name] = true
		a, ok := ts[t.Name]
		if !ok || a == nil {
			return false, fmt.Errorf("%s: tensor %s (%s %s) missing", m.Op, t.Name, t.Role, t.DType)
		}
		dims, err := export.DimsAt(t, sh)
		if err != nil {
			return false, fmt.Errorf("%s: %w", m.Op, err)
		}
		if a.DType != t.DType {
			return false, fmt.Errorf("%s: tensor %s is %s; want %s", m.Op, t.Name, a.DType, t.DType)
		}
		if !slices.Equal(int64s(a.Shape), dims) {
			return false, fmt.Errorf("%s: tensor %s has shape %v; at %s it is %v", m.Op, t.Name, a.Shape, export.SizesText(sh), dims)
		}
		n, _ := m.Elems(t, sh)
		size, _ := export.ElemBytes(t.DType) // the manifest's check named it
		bytes := n * int64(size)
		switch {
		case (a.Data != nil) == (a.Buf != nil):
			return false, fmt.Errorf("%s: tensor %s: give host Data or a device Buf, one of them", m.Op, t.Name)
		case a.Buf != nil && !gpu:
			return false, fmt.Errorf("%s: tensor %s is a device buffer; this runner is the CPU interpreter", m.Op, t.Name)
		case a.Buf != nil && int64(a.Buf.Size()) < bytes:
			return false, fmt.Errorf("%s: tensor %s: a device buffer of %d bytes; it needs %d", m.Op, t.Name, a.Buf.Size(), bytes)
		case a.Data != nil && int64(len(a.Data)) != bytes:
			return false, fmt.Errorf("%s: tensor %s: %d bytes of host memory; %v %s is %d", m.Op, t.Name, len(a.Data), dims, t.DType, bytes)
		}
		host = host && a.Data != nil
	}
	for _, n := range slices.Sorted(maps.Keys(ts)) {
		if !want[n] {
			return false, fmt.Errorf("%s: no tensor %s (tensors: %s)", m.Op, n, strings.Join(slices.Sorted(maps.Keys(want)), ", "))
		}
	}
	return host, nil
}

func int64s(s []int) []int64 {
	out := make([]int64, len(s))
	for i, v := range s {
		out[i] = int64(v)
	}
	return out
}

// plan is the op as this fp8gen lowers it for the interpreter, made at the
// export's shape and schedule: it must be the exported variant, symbol for
// symbol, or the export came from another fp8gen.
func (op *Op) plan(t *target.Target, m *export.Manifest) (*ops.Plan, error) {
	op.mu.Lock()
	defer op.mu.Unlock()
	if p := op.plans[m.Kernels[0].Symbol]; p != nil {
		return p, nil
	}
	o, err := ops.Lookup(m.Op)
	if err != nil {
		return nil, fmt.Errorf("launch: this fp8gen has no op %s: %w", m.Op, err)
	}
	p, err := o.NewPlan(t, ops.Shape(m.Shape), ops.Options(m.Options), schedule.Params(m.Schedule))
	if err != nil {
		return nil, fmt.Errorf("launch: %s for %s: %w", m.Op, t.Name, err)
	}
	var have, want []string
	for _, s := range p.Steps {
		have = append(have, s.Func.Symbol)
	}
	for _, k := range m.Kernels {
		want = append(want, k.Symbol)
	}
	if !slices.Equal(have, want) {
		return nil, fmt.Errorf("launch: %s for %s: the export holds kernels %s, but this fp8gen builds %s; export it again", m.Op, t.Name, strings.Join(want, ", "), strings.Join(have, ", "))
	}
	// The symbols name the variant, not the code: the interpreter must run
	// the very source the export holds.
	if b, err := export.New(p); err != nil {
		return nil, err
	} else if export.Hash([]byte(b.Source)) != m.Source.SHA256 {
		return nil, fmt.Errorf("launch: %s for %s: the export's source is not what this fp8gen writes for its kernels %s; export it again", m.Op, t.Name, strings.Join(want, ", "))
	}
	op.plans[m.Kernels[0].Symbol] = p
	return p, nil
}

func (r *Runner) runCPU(op *Op, m *export.Manifest, call *ops.Call, sh map[string]int64, ts Tensors) error {
	p, err := op.plan(r.target, m)
	if err != nil {
		return err
	}
	all := ops.Tensors(call.SpecsOf(ops.Scratch))
	for _, s := range call.Specs() {
		if s.Role != ops.Scratch {
			all[s.Name] = &ops.Tensor{Spec: s, Data: ts[s.Name].Data}
		}
	}
	for i, s := range p.Steps {
		args, err := s.Args(call.Shape, all)
		if err != nil {
			return err
		}
		g, _ := m.Kernels[i].GridAt(sh) // held by Check
		if err := interp.Launch(s.Func, [3]int{int(g[0]), int(g[1]), int(g[2])}, args); err != nil {
			return err
		}
	}
	return call.CheckStatus(all)
}

// NewTensor allocates one of op's tensors in host memory, zeroed, with
// the dtype and shape it has at sizes on the runner's target (the FP8
// format is the target's: e4m3fnuz on gfx942, e4m3fn on sm_90).
func (r *Runner) NewTensor(op *Op, name string, sizes Sizes) (*Tensor, error) {
	b, sh, err := op.pick(r.target.Name, sizes)
	if err != nil {
		return nil, err
	}
	m := b.Manifest
	for _, t := range m.Tensors {
		if t.Name != name || t.Role == "scratch" {
			continue
		}
		dims, err := export.DimsAt(t, sh)
		if err != nil {
			return nil, err
		}
		n, _ := m.Elems(t, sh)
		shape := make([]int, len(dims))
		for i, d := range dims {
			shape[i] = int(d)
		}
		size, _ := export.ElemBytes(t.DType)
		return &Tensor{DType: t.DType, Shape: shape, Data: make([]byte, n*int64(size))}, nil
	}
	return nil, fmt.Errorf("%s: no tensor %s", op.Name, name)
}
