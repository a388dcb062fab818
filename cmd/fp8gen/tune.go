package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/fp8gen/fp8gen/backend"
	"github.com/fp8gen/fp8gen/cost"
	"github.com/fp8gen/fp8gen/emit"
	"github.com/fp8gen/fp8gen/ops"
	"github.com/fp8gen/fp8gen/runtime"
	"github.com/fp8gen/fp8gen/schedule"
	"github.com/fp8gen/fp8gen/target"
	"github.com/fp8gen/fp8gen/tune"
)

// maxTimed is the most candidates one tune times.
const maxTimed = 8

func cmdTune(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("tune", "tune OP [--shape … | --bench] [--opt …] [--budget N] [--explain] [--cache FILE] [--target T]", stderr)
	var of opFlags
	of.register(fs, "the GPU's, else sm_90", "the op's example shape")
	fs.Lookup("schedule").Usage = "not taken: tune chooses the schedule"
	budget := fs.Int("budget", maxTimed, fmt.Sprintf("candidates to time, at most %d", maxTimed))
	explain := fs.Bool("explain", false, "also list the points of the space that were rejected, with the limit each breaks")
	cachePath := fs.String("cache", "", "the tuning cache to update (default $FP8GEN_TUNE_CACHE, else the user cache folder's fp8gen/tune.json)")
	warm := fs.Int("warm", 10, "untimed launches of each candidate first")
	iters := fs.Int("iters", 50, "timed launches of each candidate (median)")
	benchShapes := fs.Bool("bench", false, "tune each of the op's benchmark shapes (those fp8gen bench times)")
	force := fs.Bool("force", false, "time again even where the cache holds the class")
	name, err := parse(fs, args, true)
	if err != nil {
		return err
	}
	if *budget < 1 || *budget > maxTimed {
		return usagef("--budget %d: want 1 to %d", *budget, maxTimed)
	}
	if *warm < 0 || *iters < 1 {
		return usagef("--warm %d --iters %d: want warm ≥ 0 and iters ≥ 1", *warm, *iters)
	}
	if of.sched != "" {
		return usagef("--schedule: tune chooses the schedule; it takes none")
	}
	op, err := ops.Lookup(name)
	if err != nil {
		return usageError{err}
	}
	path := *cachePath
	if path == "" {
		if path, err = tune.DefaultPath(); err != nil {
			return err
		}
	}
	shapes := []ops.Shape{op.Example}
	switch {
	case *benchShapes && of.shape != "":
		return usagef("--bench and --shape: give one")
	case *benchShapes:
		shapes = op.Bench
	case of.shape != "":
		sh, err := parseShape(of.shape)
		if err != nil {
			return err
		}
		shapes = []ops.Shape{sh}
	}
	opts, err := of.options(op)
	if err != nil {
		return err
	}
	if of.target != "" && !*force {
		tg, err := lookupTarget(of.target)
		if err != nil {
			return err
		}
		if ok, err := allCached(op, shapes, opts, tg, path, stdout, stderr); ok || err != nil {
			return err
		}
	}
	g, gerr := backend.OpenGPU()
	if gerr != nil && !backend.IsNoDevice(gerr) {
		return gerr
	}
	var tg *target.Target
	if g != nil {
		defer g.Close()
		tg = g.T
		if of.target != "" && of.target != tg.Name {
			return usagef("--target %s: the GPU is %s; tune measures on the GPU", of.target, tg.Name)
		}
	} else if tg, err = lookupTarget(of.target); err != nil {
		return err
	}
	for _, sh := range shapes {
		if err := tuneOne(op, sh, opts, tg, g, path, *budget, *explain, *force, *warm, *iters, stdout, stderr); err != nil {
			return err
		}
	}
	return nil
}

// cachedLine is the line tune prints where the cache at path holds a
// schedule for c's class under compiler ident that still holds at c's
// shape; ok is false where it holds none.
func cachedLine(c *ops.Call, sh ops.Shape, ident, path string, holds func(*ops.Call, tune.Entry) error, stderr io.Writer) (line string, ok bool) {
	op, key := c.Op, keyOf(c, sh, ident)
	cache, warns := tune.Load(path)
	for _, w := range warns {
		fmt.Fprintln(stderr, "fp8gen tune:", w)
	}
	e, ok := cache.Lookup(key)
	if !ok || holds(c, e) != nil {
		return "", false
	}
	return fmt.Sprintf("%s at %s on %s: cached: %v for class %s (%.1f µs at %s on %s, %s; --force times again)\n",
		op.Name, tune.ShapeText(op, sh), c.Target.Name, e.Params(), key.Class, e.TimeUS, e.Shape, e.GPU, e.Date), true
}

func keyOf(c *ops.Call, sh ops.Shape, ident string) tune.Key {
	return tune.Key{Op: c.Op.Name, Options: c.Options.String(), Target: c.Target.Name, Class: tune.Class(c.Op, sh), Compiler: ident}
}

// allCached answers tune from the cache alone, with no device opened
// (a CUDA context takes about 0.4 s to make), where --target names the
// target and the cache holds every shape asked: ok is false otherwise.
func allCached(op *ops.Op, shapes []ops.Shape, opts ops.Options, tg *target.Target, path string, stdout, stderr io.Writer) (ok bool, err error) {
	var comp runtime.Compiler
	ident, err := comp.Identity(context.Background(), tg)
	if err != nil {
		return false, nil // no compiler here: the slow path says so
	}
	var lines []string
	var warns bytes.Buffer // the slow path says them where it goes on
	for _, sh := range shapes {
		c, err := op.NewCall(tg, sh, opts)
		if err != nil {
			return false, nil // the slow path reports it
		}
		// The knobs' domains and constraints only: lowering the kernels
		// to check their resources took longer (4-12 ms) than a cache hit
		// may; run and bench hold the entry to the whole plan, and say so
		// in one line where it fails, and a tune on the GPU times again.
		line, ok := cachedLine(c, sh, ident, path, inSpace, &warns)
		if !ok {
			return false, nil
		}
		lines = append(lines, line)
	}
	stderr.Write(warns.Bytes())
	_, err = io.WriteString(stdout, strings.Join(lines, ""))
	return true, err
}

// tuneOne tunes op at one shape: on the GPU it times up to budget
// candidates and keeps the fastest in the cache at path; without one it
// lists them.
func tuneOne(op *ops.Op, sh ops.Shape, opts ops.Options, tg *target.Target, g *backend.GPU, path string, budget int, explain, force bool, warm, iters int, stdout, stderr io.Writer) error {
	c, err := op.NewCall(tg, sh, opts)
	if err != nil {
		return usageError{err}
	}
	// A cache hit is answered before the space is lowered (the grouped
	// op's space took seconds to build).
	var key tune.Key
	if g != nil {
		ident, err := g.Compiler.Identity(context.Background(), tg)
		if err != nil {
			return err
		}
		key = keyOf(c, sh, ident)
		if line, ok := cachedLine(c, sh, ident, path, usable, stderr); ok && !force {
			_, err := io.WriteString(stdout, line)
			return err
		}
	}
	space, err := c.Space()
	if err != nil {
		return err
	}
	// The order to try: the op's default (its first feasible point) and
	// then the rest as the cost model ranks them, so that a budget smaller
	// than the space times the model's best guesses and never drops the
	// schedule run takes without a tuned entry.
	var plans []*ops.Plan
	var rejected []string
	for _, s := range space {
		p, err := op.NewPlan(tg, sh, opts, s)
		if err != nil {
			rejected = append(rejected, fmt.Sprintf("  %v: %s", s, strings.ReplaceAll(err.Error(), "\n", " ")))
			continue
		}
		plans = append(plans, p) // distinct: Space's points are
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s at %s on %s: %d feasible candidates, %d rejected\n", op.Name, tune.ShapeText(op, sh), tg.Name, len(plans), len(rejected))
	if len(plans) == 0 {
		io.WriteString(stdout, sb.String()+strings.Join(rejected, "\n")+"\n")
		return usageError{fmt.Errorf("%s: no feasible schedule at %s", op.Name, tune.ShapeText(op, sh))}
	}
	plans = append(plans[:1:1], cost.Rank(plans[1:])...)
	if len(plans) > budget {
		plans = plans[:budget]
	}
	if g == nil {
		sb.WriteString("no GPU: nothing timed, the cache unchanged; the op's default (which run and bench take without a tuned entry), then the rest as the cost model ranks them, with its predicted times:\n")
		for i, p := range plans {
			fmt.Fprintf(&sb, "  %d. %v  predicted %.1f µs  (%s)\n", i+1, p.Schedule, us(cost.Predict(p).Time), resourcesText(p, nil))
			if explain {
				fmt.Fprintf(&sb, "     model: %v\n", cost.Predict(p))
			}
		}
		if explain && len(rejected) > 0 {
			sb.WriteString("rejected:\n" + strings.Join(rejected, "\n") + "\n")
		}
		_, err := io.WriteString(stdout, sb.String())
		return err
	}
	start := time.Now()
	// A candidate its compiler refuses is reported and left out.
	var ok []*ops.Plan
	for i, err := range compileAll(g, plans) {
		if err != nil {
			fmt.Fprintf(&sb, "  %v: does not compile, left out: %s\n", plans[i].Schedule, strings.ReplaceAll(err.Error(), "\n", " "))
			continue
		}
		ok = append(ok, plans[i])
	}
	if len(ok) == 0 {
		io.WriteString(stdout, sb.String())
		return fmt.Errorf("%s at %s: no candidate compiles", op.Name, tune.ShapeText(op, sh))
	}
	plans = ok
	compiled := time.Since(start)
	type timed struct {
		p     *ops.Plan
		t     time.Duration
		attrs []runtime.KernelAttrs
	}
	var res []timed
	best := -1
	mark := time.Now()
	in := ops.Inputs(plans[0].Call, 1, false)
	inputs := time.Since(mark)
	// The reference takes the host seconds at the bench shapes: it is
	// computed while the GPU times the candidates, and their outputs are
	// held to it afterwards.
	expect := make(chan *ops.Expected, 1)
	var reference time.Duration // written before the send, read after the receive
	mark = time.Now()
	refStart := mark
	go func() {
		e := plans[0].Call.Expect(in)
		reference = time.Since(refStart)
		expect <- e
	}()
	outs, err := timeCandidates(g, plans, in, warm, iters, func(p *ops.Plan, t time.Duration, attrs []runtime.KernelAttrs) {
		res = append(res, timed{p, t, attrs})
		// As it is measured: a tune cut short keeps what it timed.
		fmt.Fprintf(stderr, "  tune %s %s: %d/%d %v %.1f µs\n", op.Name, tune.ShapeText(op, sh), len(res), len(plans), p.Schedule, us(t))
		if best < 0 || t < res[best].t {
			best = len(res) - 1
		}
	})
	timing := time.Since(mark)
	exp := <-expect
	if err != nil {
		return err
	}
	mark = time.Now()
	for i, out := range outs {
		if out == nil {
			continue // the same bytes as the first candidate's
		}
		if _, err := exp.Check(out); err != nil {
			return fmt.Errorf("%s %s, schedule %v: %v", op.Name, tune.ShapeText(op, sh), plans[i].Schedule, err)
		}
	}
	checked := time.Since(mark)
	w := res[best]
	entry := tune.Entry{Key: key, Schedule: map[string]int(w.p.Schedule), TimeUS: us(w.t), Shape: tune.ShapeText(op, sh),
		Timed: len(res), GPU: g.Dev.Props().Name, Date: time.Now().UTC().Format("2006-01-02")}
	if _, err := tune.Update(path, func(c *tune.Cache) { c.Put(entry) }); err != nil {
		return err
	}
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	fmt.Fprintf(&sb, "compiled %d in %v (in parallel, through the JIT cache), timed %d in %v (inputs %v, runs and timing %v, reference %v beside them, checks %v); %s\n",
		len(plans), ms(compiled), len(res), ms(time.Since(start)-compiled), ms(inputs), ms(timing), ms(reference), ms(checked), key.Compiler)
	for i, r := range res {
		mark := " "
		if i == best {
			mark = "*"
		}
		gbs := float64(r.p.IdealBytes()) / r.t.Seconds() / 1e9
		fmt.Fprintf(&sb, "%s %d. %-44v %9.1f µs %6.0f GB/s  predicted %.1f µs  (%s)\n", mark, i+1, r.p.Schedule, us(r.t), gbs, us(cost.Predict(r.p).Time), resourcesText(r.p, r.attrs))
	}
	if explain && len(rejected) > 0 {
		sb.WriteString("rejected:\n" + strings.Join(rejected, "\n") + "\n")
	}
	fmt.Fprintf(&sb, "kept %v for class %s in %s\n", w.p.Schedule, key.Class, path)
	_, err = io.WriteString(stdout, sb.String())
	return err
}

// timeCandidates runs and times each plan, in order, on one set of device
// buffers (the inputs uploaded once), and calls done with each time as it
// is measured. It returns the outputs of each run for the reference check:
// the first plan's, and each later one's where they differ from the
// first's in a byte (for an op whose results are exact, the same bytes
// pass or fail together), or every one's where the op allows slack.
func timeCandidates(g *backend.GPU, plans []*ops.Plan, in map[string]*ops.Tensor, warm, iters int, done func(*ops.Plan, time.Duration, []runtime.KernelAttrs)) ([]map[string]*ops.Tensor, error) {
	ctx := context.Background()
	exact := plans[0].Op.Allowance == nil && plans[0].Op.Expected == nil
	outs := make([]map[string]*ops.Tensor, len(plans))
	var first *backend.Prepared
	defer func() {
		if first != nil {
			first.Free()
		}
	}()
	for i, p := range plans {
		all, out := p.WithOutputs(in)
		var pr *backend.Prepared
		var err error
		if first == nil {
			pr, err = g.Prepare(ctx, p, all)
			first = pr
		} else {
			pr, err = g.PrepareOn(ctx, p, first)
		}
		if err != nil {
			return outs, err
		}
		if err := pr.RunOnce(out); err != nil {
			return outs, fmt.Errorf("schedule %v: %w", p.Schedule, err)
		}
		if i == 0 || !exact || !sameBytes(out, outs[0]) {
			outs[i] = out
		}
		t, err := pr.Time(warm, iters) // L2 flushed, as the bench times
		if err != nil {
			return outs, err
		}
		done(p, t, pr.Attrs)
	}
	return outs, nil
}

// sameBytes reports whether two runs' outputs hold the same bytes.
func sameBytes(a, b map[string]*ops.Tensor) bool {
	if len(a) != len(b) {
		return false
	}
	for n, t := range a {
		u, ok := b[n]
		if !ok || !bytes.Equal(t.Data, u.Data) {
			return false
		}
	}
	return true
}

// resourcesText describes a plan's kernels: the estimated registers, and
// with attrs (the compiled kernels', on a GPU) the compiler's count and
// spills beside them, the data the estimate is held to.
func resourcesText(p *ops.Plan, attrs []runtime.KernelAttrs) string {
	var parts []string
	for i, s := range p.Steps {
		regs := regsText(s.Resources, p.Target)
		if i < len(attrs) {
			regs = fmt.Sprintf("%d regs (~%d estimated), %d B local", attrs[i].Regs, s.Resources.Regs, attrs[i].LocalBytes)
		}
		parts = append(parts, fmt.Sprintf("%s: grid %v, %d threads, %d B LDS, %s", s.Func.Name, s.Grid, s.Resources.Threads, s.Resources.LDSBytes, regs))
	}
	return strings.Join(parts, "; ")
}

// compileAll emits and compiles every kernel of the plans at once, so
// that timing them afterwards finds each in the JIT cache; it returns each
// plan's error, or nil.
func compileAll(g *backend.GPU, plans []*ops.Plan) []error {
	errs := make([]error, len(plans))
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, p := range plans {
		for _, s := range p.Steps {
			wg.Go(func() {
				ek, err := emit.Emit(s.Func, backend.Comment(p, s))
				if err == nil {
					_, _, err = g.Compiler.Compile(context.Background(), ek.Source, g.T, ek.Name)
				}
				if err != nil {
					mu.Lock()
					errs[i] = errors.Join(errs[i], err)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	return errs
}

// tunedSchedule is the schedule the tuning cache holds for a call, if
// any holds at its shape; warnings go to w.
func tunedSchedule(c *ops.Call, w io.Writer) schedule.Params {
	key := tune.Key{Op: c.Op.Name, Options: c.Options.String(), Target: c.Target.Name, Class: tune.Class(c.Op, c.Shape)}
	var e tune.Entry
	ok := false
	path, err := tune.DefaultPath()
	if err == nil {
		if cache := loadTuned(path, w); cache.Len() > 0 {
			if key.Compiler, _ = (&runtime.Compiler{}).Identity(context.Background(), c.Target); key.Compiler != "" {
				e, ok = cache.Lookup(key)
			}
		}
	}
	if !ok {
		// fp8gen's own tuning, from any compiler version.
		e, ok = shippedTuning(w).LookupAnyCompiler(key)
		path = "shipped with fp8gen (tune/shipped)"
	}
	if !ok {
		return nil
	}
	if err := usable(c, e); err != nil {
		fmt.Fprintf(w, "fp8gen: tuning cache %s: the schedule %v tuned for %s does not hold at %v (%v); using the default\n", path, e.Schedule, e.Class, c.Shape, strings.ReplaceAll(err.Error(), "\n", " "))
		return nil
	}
	return e.Params()
}

// usable holds a cached schedule to everything a plan is held to at the
// call's shape: the knobs' domains, the constraints, and the lowered
// kernels' resources on the target (a kernel change may have raised them).
func usable(c *ops.Call, e tune.Entry) error {
	_, err := c.With(e.Params()).Plan()
	return err
}

// inSpace holds a cached schedule to the knobs' domains and the op's
// constraints at the call's shape, nothing lowered.
func inSpace(c *ops.Call, e tune.Entry) error { return c.CheckSchedule(e.Params()) }

// loaded holds the tuning caches a process read, by path, size and
// modification time, so that bench's jobs read one once and warn once.
var loaded = struct {
	sync.Mutex
	m map[string]*tune.Cache
}{m: map[string]*tune.Cache{}}

func loadTuned(path string, w io.Writer) *tune.Cache {
	key := path
	if fi, err := os.Stat(path); err == nil {
		key = fmt.Sprintf("%s\x00%d\x00%d", path, fi.Size(), fi.ModTime().UnixNano())
	}
	loaded.Lock()
	defer loaded.Unlock()
	if c, ok := loaded.m[key]; ok {
		return c
	}
	c, warns := tune.Load(path)
	for _, m := range warns {
		fmt.Fprintln(w, "fp8gen:", m)
	}
	loaded.m[key] = c
	return c
}

var shipped = sync.OnceValues(tune.Shipped)

// shippedTuning is the tuning compiled into fp8gen; its warnings (a bad
// shipped file is a bug of ours, but no reason to fail) go to w once.
func shippedTuning(w io.Writer) *tune.Cache {
	c, warn := shipped()
	shippedWarned.Do(func() {
		for _, m := range warn {
			fmt.Fprintln(w, "fp8gen:", m)
		}
	})
	return c
}

var shippedWarned sync.Once
