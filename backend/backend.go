// Package backend runs an ops.Plan: on the CPU through the interpreter, or on
// a GPU through package runtime (emit, JIT compile, launch). Both take host
// tensors and fill the outputs in place, so callers check either against the
// op's reference in the same way.
package backend

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/fp8gen/fp8gen/emit"
	"github.com/fp8gen/fp8gen/interp"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/ops"
	"github.com/fp8gen/fp8gen/runtime"
	"github.com/fp8gen/fp8gen/target"
)

// Backend runs plans.
type Backend interface {
	Name() string
	// Target is the hardware plans must be made for.
	Target() *target.Target
	// Run executes every step of p over tensors (inputs and outputs by name).
	Run(p *ops.Plan, tensors map[string]*ops.Tensor) (Stats, error)
}

// Stats describe one run.
type Stats struct {
	Elapsed time.Duration // wall time of the launches (CPU) or device time (GPU)
	Compile time.Duration // JIT time, GPU only
	Hits    int           // JIT cache hits
	Rebuilt []string      // JIT cache entries that were damaged and rebuilt: why, each
}

// CPU runs plans in the interpreter as if on t.
type CPU struct{ T *target.Target }

func (c CPU) Name() string           { return "cpu" }
func (c CPU) Target() *target.Target { return c.T }
func (c CPU) Run(p *ops.Plan, tensors map[string]*ops.Tensor) (Stats, error) {
	if err := p.CheckInputs(tensors); err != nil {
		return Stats{}, err
	}
	start := time.Now()
	for _, s := range p.Steps {
		args, err := s.Args(p.Shape, tensors)
		if err != nil {
			return Stats{}, err
		}
		if err := interp.Launch(s.Func, s.Grid, args); err != nil {
			return Stats{}, err
		}
	}
	st := Stats{Elapsed: time.Since(start)}
	return st, p.CheckStatus(tensors)
}

// GPU runs plans on a device.
type GPU struct {
	Dev      *runtime.Device
	T        *target.Target
	Compiler runtime.Compiler
	kernels  map[string]*runtime.Kernel
	flush    *runtime.Buffer // Time's L2 flush, allocated at its first use
}

// OpenGPU opens device 0 and maps it to its target; the error wraps
// runtime.ErrNoDevice where there is no GPU.
func OpenGPU() (*GPU, error) {
	d, err := runtime.Open(0)
	if err != nil {
		return nil, err
	}
	t, err := d.Target()
	if err != nil {
		d.Close()
		return nil, err
	}
	return &GPU{Dev: d, T: t, kernels: map[string]*runtime.Kernel{}}, nil
}

// IsNoDevice reports whether err means there is no GPU to use.
func IsNoDevice(err error) bool { return errors.Is(err, runtime.ErrNoDevice) }

func (g *GPU) Name() string           { return "gpu" }
func (g *GPU) Target() *target.Target { return g.T }
func (g *GPU) Close() error {
	if g.flush != nil {
		g.flush.Free()
		g.flush = nil
	}
	return g.Dev.Close()
}

// Comment is the one line every emitted kernel carries: op, target, schedule.
func Comment(p *ops.Plan, s *ops.Step) string {
	format := ""
	if p.Format != nil {
		format = ", " + p.Format.Name
	}
	return fmt.Sprintf("fp8gen %s (op %s) for %s%s, schedule %v", s.Func.Name, p.Op.Name, p.Target.Name, format, p.Schedule)
}

// Unit writes every kernel of a plan, each with its Comment, into one
// translation unit.
func Unit(p *ops.Plan) (*emit.Units, error) {
	var fns []*ir.Func
	var comments []string
	for _, s := range p.Steps {
		fns = append(fns, s.Func)
		comments = append(comments, Comment(p, s))
	}
	return emit.Unit(fns, comments)
}

// Kernel emits, compiles (through the JIT cache) and loads a step's kernel.
func (g *GPU) Kernel(ctx context.Context, p *ops.Plan, s *ops.Step, st *Stats) (*runtime.Kernel, *emit.Kernel, error) {
	return g.kernel(ctx, s.Func, Comment(p, s), st)
}

func (g *GPU) kernel(ctx context.Context, f *ir.Func, comment string, st *Stats) (*runtime.Kernel, *emit.Kernel, error) {
	ek, err := emit.Emit(f, comment)
	if err != nil {
		return nil, nil, err
	}
	if k, ok := g.kernels[ek.Source]; ok {
		return k, ek, nil
	}
	img, info, err := g.Compiler.Compile(ctx, ek.Source, g.T, ek.Name)
	if err != nil {
		return nil, nil, err
	}
	if st != nil {
		st.Compile += info.Duration
		if info.Hit {
			st.Hits++
		}
		if info.Rebuilt != "" {
			st.Rebuilt = append(st.Rebuilt, info.Rebuilt)
		}
	}
	m, err := g.Dev.LoadModule(img)
	if err != nil {
		return nil, nil, err
	}
	k, err := m.Kernel(ek.Name)
	if err != nil {
		return nil, nil, err
	}
	if ek.Dynamic {
		if err := k.SetMaxDynamicShared(ek.LDSBytes); err != nil {
			return nil, nil, err
		}
	}
	g.kernels[ek.Source] = k
	return k, ek, nil
}

// RunFunc runs one lowered kernel over grid on the GPU as interp.Launch
// runs it on the CPU: args holds, in f.Params order, a []byte for each
// pointer (uploaded, and downloaded back in place after the launch) and an
// int for each size.
func (g *GPU) RunFunc(ctx context.Context, f *ir.Func, grid [3]int, args []any) error {
	if len(args) != len(f.Params) {
		return fmt.Errorf("%s takes %d arguments, got %d", f.Name, len(f.Params), len(args))
	}
	k, ek, err := g.kernel(ctx, f, "fp8gen "+f.Name+" for "+g.T.Name, nil)
	if err != nil {
		return err
	}
	var launch []any
	var bufs []*runtime.Buffer
	defer func() {
		for _, b := range bufs {
			b.Free()
		}
	}()
	for i, p := range f.Params {
		switch a := args[i].(type) {
		case []byte:
			b, err := g.Dev.Alloc(max(len(a), 1))
			if err != nil {
				return fmt.Errorf("%s: argument %s: %w", f.Name, p.ArgName(), err)
			}
			bufs = append(bufs, b)
			if err := g.Dev.Upload(b, a); err != nil {
				return err
			}
			launch = append(launch, b)
		case int:
			launch = append(launch, sizeArg(p, a))
		default:
			return fmt.Errorf("%s: argument %s: want []byte or int, got %T", f.Name, p.ArgName(), args[i])
		}
	}
	shared := 0
	if ek.Dynamic {
		shared = ek.LDSBytes
	}
	if f.Waits() {
		_, err = g.Dev.LaunchResident(k, grid, [3]int{ek.Threads, 1, 1}, shared, launch...)
	} else {
		err = g.Dev.Launch(k, grid, [3]int{ek.Threads, 1, 1}, shared, launch...)
	}
	if err != nil {
		return err
	}
	if err := g.Dev.Synchronize(); err != nil {
		return err
	}
	j := 0
	for i := range f.Params {
		if a, ok := args[i].([]byte); ok {
			if err := g.Dev.Download(a, bufs[j]); err != nil {
				return err
			}
			j++
		}
	}
	return nil
}

// Prepared is a plan ready to launch repeatedly on device buffers.
type Prepared struct {
	g       *GPU
	p       *ops.Plan
	bufs    map[string]*runtime.Buffer
	launch  []func() error
	scratch []scratch
	Stats   Stats
	outputs []ops.Spec // outputs and scratch
	// Attrs are the compiled kernels' resources, per step.
	Attrs []runtime.KernelAttrs
	// borrowed: the buffers are another Prepared's (PrepareOn), freed with it.
	borrowed bool
}

// scratch is a buffer reset before each launch: zeroed, or refilled from
// its initial contents.
type scratch struct {
	b    *runtime.Buffer
	init []byte // nil: zero
}

// sizeArg is a size argument in the width the kernel takes.
func sizeArg(p *ir.Value, v int) any {
	if p.Type.DType == ir.I64 {
		return int64(v)
	}
	return int32(v)
}

// Prepare checks the inputs on the host, compiles every step and uploads
// the tensors.
func (g *GPU) Prepare(ctx context.Context, p *ops.Plan, tensors map[string]*ops.Tensor) (*Prepared, error) {
	if err := p.CheckInputs(tensors); err != nil {
		return nil, err
	}
	pr := &Prepared{g: g, p: p, bufs: map[string]*runtime.Buffer{}, outputs: p.SpecsOf(ops.Output, ops.Scratch)}
	names := slices.Sorted(maps.Keys(tensors))
	for _, n := range names {
		t := tensors[n]
		b, err := g.Dev.Alloc(len(t.Data))
		if err != nil {
			pr.Free()
			return nil, fmt.Errorf("tensor %s: %w", n, err)
		}
		pr.bufs[n] = b
		if err := g.Dev.Upload(b, t.Data); err != nil {
			pr.Free()
			return nil, err
		}
	}
	for _, o := range pr.outputs {
		if o.Role == ops.Scratch {
			sc := scratch{b: pr.bufs[o.Name]}
			if o.Init != 0 {
				sc.init = tensors[o.Name].Data
			}
			pr.scratch = append(pr.scratch, sc)
		}
	}
	if err := pr.bind(ctx); err != nil {
		pr.Free()
		return nil, err
	}
	return pr, nil
}

// PrepareOn is Prepare for another schedule of on's op, shape and options
// (a tune's next candidate): it launches on on's device buffers, so that
// the tensors are uploaded once. It is freed with on, not by itself.
func (g *GPU) PrepareOn(ctx context.Context, p *ops.Plan, on *Prepared) (*Prepared, error) {
	if p.Op != on.p.Op || !maps.Equal(p.Shape, on.p.Shape) || p.Options.String() != on.p.Options.String() || p.Target != on.p.Target {
		return nil, fmt.Errorf("backend: PrepareOn: %s %v %v is not the call %s %v %v was prepared for", p.Op.Name, p.Shape, p.Options, on.p.Op.Name, on.p.Shape, on.p.Options)
	}
	pr := &Prepared{g: g, p: p, bufs: on.bufs, scratch: on.scratch, outputs: on.outputs, borrowed: true}
	if err := pr.bind(ctx); err != nil {
		return nil, err
	}
	return pr, nil
}

// bind compiles the plan's steps and makes their launches on pr's buffers.
func (pr *Prepared) bind(ctx context.Context) error {
	g, p := pr.g, pr.p
	for i, s := range p.Steps {
		k, ek, err := g.Kernel(ctx, p, s, &pr.Stats)
		if err != nil {
			return err
		}
		var args []any
		for _, prm := range s.Func.Params {
			if prm.Op == ir.OpParam {
				args = append(args, pr.bufs[prm.ArgName()])
			} else {
				args = append(args, sizeArg(prm, p.Shape[prm.ArgName()]))
			}
		}
		pr.Attrs = append(pr.Attrs, k.Attrs())
		shared := 0
		if ek.Dynamic {
			shared = ek.LDSBytes
		}
		grid, block := s.Grid, [3]int{ek.Threads, 1, 1}
		launch := g.Dev.Launch
		switch {
		case s.Func.Waits(): // its programs wait on each other: as many as fit at once
			launch = func(k *runtime.Kernel, grid, block [3]int, shared int, args ...any) error {
				_, err := g.Dev.LaunchResident(k, grid, block, shared, args...)
				return err
			}
		case i > 0 && p.Target.PDL: // the kernel waits for the one before it
			launch = g.Dev.LaunchDependent
		}
		pr.launch = append(pr.launch, func() error { return launch(k, grid, block, shared, args...) })
	}
	return nil
}

// Poison is the byte Run fills outputs with before the launch.
const Poison = 0xA5

// Poison fills the outputs that kernels must write with the byte v, so a
// result nothing wrote cannot pass for a right one.
func (pr *Prepared) Poison(v byte) error {
	for _, o := range pr.outputs {
		if o.Role == ops.Output {
			if err := pr.g.Dev.Memset(pr.bufs[o.Name], v); err != nil {
				return err
			}
		}
	}
	return nil
}

// RunOnce poisons the outputs, launches the plan once and downloads its
// outputs into tensors (Download's status check included).
func (pr *Prepared) RunOnce(tensors map[string]*ops.Tensor) error {
	if err := pr.Poison(Poison); err != nil {
		return err
	}
	if err := pr.Launch(); err != nil {
		return err
	}
	return pr.Download(tensors)
}

// Launch runs the plan once (scratch zeroed first); it does not wait.
func (pr *Prepared) Launch() error {
	for _, sc := range pr.scratch {
		var err error
		if sc.init == nil {
			err = pr.g.Dev.Memset(sc.b, 0)
		} else {
			err = pr.g.Dev.Upload(sc.b, sc.init)
		}
		if err != nil {
			return err
		}
	}
	for _, l := range pr.launch {
		if err := l(); err != nil {
			return err
		}
	}
	return nil
}

// Download copies the outputs back into tensors, and returns the bad
// input the kernels' status words report, if any.
func (pr *Prepared) Download(tensors map[string]*ops.Tensor) error {
	if err := pr.g.Dev.Synchronize(); err != nil {
		return err
	}
	for _, o := range pr.outputs {
		if err := pr.g.Dev.Download(tensors[o.Name].Data, pr.bufs[o.Name]); err != nil {
			return err
		}
	}
	return pr.p.CheckStatus(tensors)
}

// Upload replaces a tensor's device contents, as a kernel of the caller's
// would (the offsets a router writes): unchecked by the host, so only the
// kernels' status words guard them.
func (pr *Prepared) Upload(name string, data []byte) error {
	b, ok := pr.bufs[name]
	if !ok {
		return fmt.Errorf("%s has no tensor %s", pr.p.Op.Name, name)
	}
	if len(data) != b.Size() {
		return fmt.Errorf("%s: %d bytes for tensor %s of %d", pr.p.Op.Name, len(data), name, b.Size())
	}
	return pr.g.Dev.Upload(b, data)
}

// FlushBytes is the buffer Time writes before each repetition: as
// triton's do_bench, which times the PyTorch peers (256 MB of zeros), so
// that fp8gen and its peers are timed alike, each starting with an L2 of
// another buffer's dirty lines.
const FlushBytes = 256_000_000

// Time times the plan as the bench's peers are timed: before each of
// warm + iters repetitions FlushBytes are set in the stream (nothing of
// the repetition before stays in L2), then events before and after the
// plan alone; the median of the iters.
func (pr *Prepared) Time(warm, iters int) (time.Duration, error) {
	return pr.g.timeFlushed(warm, iters, pr.Launch)
}

func (g *GPU) timeFlushed(warm, iters int, fn func() error) (time.Duration, error) {
	if g.flush == nil {
		b, err := g.Dev.Alloc(FlushBytes)
		if err != nil {
			return 0, fmt.Errorf("the L2 flush buffer: %w", err)
		}
		g.flush = b
	}
	return timeAfter(g.Dev, g.flush, warm, iters, fn)
}

// timeAfter times fn with events around it alone, each repetition after
// a memset of set.
func timeAfter(d *runtime.Device, set *runtime.Buffer, warm, iters int, fn func() error) (time.Duration, error) {
	if iters < 1 {
		return 0, fmt.Errorf("timing: %d repetitions, want at least 1", iters)
	}
	evs := make([]*runtime.Event, 2*iters)
	for i := range evs {
		e, err := d.NewEvent()
		if err != nil {
			return 0, err
		}
		defer e.Destroy()
		evs[i] = e
	}
	for i := -warm; i < iters; i++ {
		if err := d.Memset(set, byte(i)); err != nil {
			return 0, err
		}
		if i >= 0 {
			if err := evs[2*i].Record(); err != nil {
				return 0, err
			}
		}
		if err := fn(); err != nil {
			return 0, err
		}
		if i >= 0 {
			if err := evs[2*i+1].Record(); err != nil {
				return 0, err
			}
		}
	}
	if err := evs[2*iters-1].Synchronize(); err != nil {
		return 0, err
	}
	ts := make([]time.Duration, iters)
	for i := range ts {
		t, err := runtime.Elapsed(evs[2*i], evs[2*i+1])
		if err != nil {
			return 0, err
		}
		ts[i] = t
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	return ts[iters/2], nil
}

// CopyTime is the median time of a device-to-device copy of n bytes (it
// moves 2n: n read, n written), timed as Time.
func (g *GPU) CopyTime(n, warm, iters int) (time.Duration, error) {
	src, err := g.Dev.Alloc(n)
	if err != nil {
		return 0, err
	}
	defer src.Free()
	dst, err := g.Dev.Alloc(n)
	if err != nil {
		return 0, err
	}
	defer dst.Free()
	return g.timeFlushed(warm, iters, func() error { return g.Dev.CopyDtoD(dst, src, n) })
}

// Free releases the device buffers.
func (pr *Prepared) Free() {
	if pr.borrowed {
		return
	}
	for _, b := range pr.bufs {
		b.Free()
	}
}

// Run executes p once on the GPU and downloads the outputs.
func (g *GPU) Run(p *ops.Plan, tensors map[string]*ops.Tensor) (Stats, error) {
	pr, err := g.Prepare(context.Background(), p, tensors)
	if err != nil {
		return Stats{}, err
	}
	defer pr.Free()
	if err := pr.Poison(Poison); err != nil {
		return pr.Stats, err
	}
	start, err := g.Dev.NewEvent()
	if err != nil {
		return pr.Stats, err
	}
	defer start.Destroy()
	end, err := g.Dev.NewEvent()
	if err != nil {
		return pr.Stats, err
	}
	defer end.Destroy()
	if err := start.Record(); err != nil {
		return pr.Stats, err
	}
	if err := pr.Launch(); err != nil {
		return pr.Stats, err
	}
	if err := end.Record(); err != nil {
		return pr.Stats, err
	}
	if err := pr.Download(tensors); err != nil {
		return pr.Stats, err
	}
	pr.Stats.Elapsed, err = runtime.Elapsed(start, end)
	return pr.Stats, err
}
