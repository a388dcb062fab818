package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fp8gen/fp8gen/backend"
	"github.com/fp8gen/fp8gen/bench"
	"github.com/fp8gen/fp8gen/internal/atomicfile"
	"github.com/fp8gen/fp8gen/internal/buildinfo"
	"github.com/fp8gen/fp8gen/ops"
	"github.com/fp8gen/fp8gen/runtime"
	"github.com/fp8gen/fp8gen/schedule"
	"github.com/fp8gen/fp8gen/target"
)

// shapeText is a shape as bench writes it: the sizes in the op's order,
// joined by x ("8192x8192" for M, K).
func shapeText(op *ops.Op, sh ops.Shape) string {
	var d []string
	for _, n := range op.Sizes {
		d = append(d, strconv.Itoa(sh[n]))
	}
	return strings.Join(d, "x")
}

// parseShapeText reads shapeText's form.
func parseShapeText(op *ops.Op, s string) (ops.Shape, error) {
	parts := strings.Split(strings.TrimSpace(s), "x")
	if len(parts) != len(op.Sizes) {
		return nil, usagef("--shapes: %q is not %s", s, strings.Join(op.Sizes, "x"))
	}
	sh := ops.Shape{}
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil {
			return nil, usagef("--shapes: %q is not %s", s, strings.Join(op.Sizes, "x"))
		}
		sh[op.Sizes[i]] = v
	}
	return sh, nil
}

func cmdBench(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench", "bench [--ops a,b] [--shapes MxK,…] [--opt NAME=VALUE …] [--out DIR] [--peers auto|on|off] [--plot auto|on|off]", stderr)
	opList := fs.String("ops", strings.Join(ops.Names(), ","), "ops to time")
	shapes := fs.String("shapes", "", "shapes for every op, sizes joined by x: MxK,… (default: each op's realistic set)")
	var optFlag kvFlag
	fs.Var(&optFlag, "opt", "set an option of every op: NAME=VALUE (repeatable; layout=nk): fp8gen and the peers both run with it; an op without it is an error")
	outDir := fs.String("out", "bench/results", "folder of the results: GPU.json (this run's cases replace their earlier rows), GPU.md and GPU.png")
	peers := fs.String("peers", "auto", "time the PyTorch peers with bench/peers.py: auto (if python3 has torch), on, off")
	plotMode := fs.String("plot", "auto", "draw the PNG chart with fp8gen-plot: auto (where it is beside fp8gen or on PATH), on, off")
	python := fs.String("python", "python3", "python with torch for the peers")
	warm := fs.Int("warm", 20, "untimed launches first")
	iters := fs.Int("iters", 200, "timed launches, each after a 256 MB write that flushes L2 (as triton's do_bench times the peers); the median is reported")
	check := fs.Bool("check", true, "check fp8gen's outputs bit for bit against the reference once per case")
	sched := fs.String("schedule", "", "override schedule knobs for every op (not for the single ops an apart row times)")
	sweep := fs.Bool("sweep", false, "also time every feasible schedule of each op's space and report the fastest beside the default")
	if _, err := parse(fs, args, false); err != nil {
		return err
	}
	if *peers != "auto" && *peers != "on" && *peers != "off" {
		return usagef("--peers %q: want auto, on or off", *peers)
	}
	if *plotMode != "auto" && *plotMode != "on" && *plotMode != "off" {
		return usagef("--plot %q: want auto, on or off", *plotMode)
	}
	plotter, err := findPlotter(*plotMode)
	if err != nil {
		return err
	}
	if *warm < 0 || *iters < 1 {
		return usagef("--warm %d --iters %d: want warm ≥ 0 and iters ≥ 1", *warm, *iters)
	}
	sm, err := parseKV("--schedule", *sched)
	if err != nil {
		return err
	}
	given := ops.Options{}
	for _, kv := range optFlag.kv {
		given[kv[0]] = kv[1]
	}
	var jobs []job
	var peerJobs []job
	for _, name := range strings.Split(*opList, ",") {
		op, err := ops.Lookup(strings.TrimSpace(name))
		if err != nil {
			return usageError{err}
		}
		var list []string
		if *shapes == "" {
			for _, sh := range op.Bench {
				list = append(list, shapeText(op, sh))
			}
		} else {
			list = strings.Split(*shapes, ",")
		}
		if _, err := op.CheckOptions(given); err != nil {
			return usagef("--opt %s: %v", optFlag.String(), err)
		}
		if op.Forward != nil {
			if _, err := op.Forward.CheckOptions(optsFor(op.Forward, given)); err != nil {
				return usagef("--opt %s: %s's forward: %v", optFlag.String(), op.Name, err)
			}
		}
		if !op.Peers {
			fmt.Fprintf(stderr, "fp8gen bench: %s has no PyTorch peer in bench/peers.py yet; timing fp8gen and the copy only\n", op.Name)
		}
		for _, s := range list {
			sh, err := parseShapeText(op, s)
			if err != nil {
				return err
			}
			text := shapeText(op, sh)
			jobs = append(jobs, job{op, sh, text, given})
			if op.Peers {
				peerJobs = append(peerJobs, jobs[len(jobs)-1])
			}
		}
	}
	g, err := backend.OpenGPU()
	if err != nil {
		return fmt.Errorf("bench needs a GPU: %w", err)
	}
	defer g.Close()
	gpu := g.Dev.Props().Name
	date := time.Now().UTC().Format("2006-01-02")
	commit := buildinfo.Read().CommitText()

	var rows []bench.Row
	caseOpts := map[string]map[string]string{} // "op shape" -> the options its rows carry
	prog := bench.NewProgress(stderr, len(jobs), "bench")
	for _, j := range jobs {
		prog.Step(j.label())
		// The default schedule: --schedule, else the tuning cache's, else
		// the op's first feasible candidate. --sweep adds the space's best
		// beside it.
		defaultOf := func(op *ops.Op) schedule.Params {
			if len(sm) > 0 {
				return schedule.Params(sm)
			}
			if c, err := op.NewCall(g.T, j.shape, optsFor(op, j.opts)); err == nil {
				return tunedSchedule(c, stderr)
			}
			return nil
		}
		p, err := j.op.NewPlan(g.T, j.shape, j.opts, defaultOf(j.op))
		if err != nil {
			return usageError{err}
		}
		smp := newSample(p.Call, *check)
		t, spec, _, err := timePlan(g, p, j, smp, *warm, *iters)
		if err != nil {
			return err
		}
		sp := []string{spec}
		bytes := p.BytesFor(smp.in)
		// At the ceiling each part runs at its own: the step's ceiling is
		// its bytes over the sum of the parts' times there.
		ceilTime := float64(bytes) / p.CeilingPct()
		var pf *ops.Plan
		if j.op.Forward != nil {
			// A backward's row is the training step's: its forward, then it.
			if pf, err = j.op.Forward.NewPlan(g.T, j.shape, optsFor(j.op.Forward, j.opts), defaultOf(j.op.Forward)); err != nil {
				return usageError{err}
			}
			tf, specF, _, err := timePlan(g, pf, job{j.op.Forward, j.shape, j.text, optsFor(j.op.Forward, j.opts)}, newSample(pf.Call, *check), *warm, *iters)
			if err != nil {
				return err
			}
			t += tf
			sp = append([]string{"forward " + specF + ", then"}, sp...)
			bytes += pf.IdealBytes()
			ceilTime += float64(pf.IdealBytes()) / pf.CeilingPct()
		}
		ct, err := g.CopyTime(bytes/2, *warm, *iters)
		if err != nil {
			return err
		}
		opts := map[string]string(p.Call.Options)
		copyGBs := float64(bytes) / ct.Seconds() / 1e9
		ceil := float64(bytes) / ceilTime / 100
		row := func(impl string, t time.Duration, sched string) bench.Row {
			gbs := float64(bytes) / t.Seconds() / 1e9
			return bench.Row{Op: j.op.Name, Shape: j.text, Options: opts, Impl: impl, TimeUS: us(t), Bytes: int64(bytes), GBPerS: gbs,
				PctCopy: 100 * gbs / copyGBs, PctCeiling: 100 * gbs / copyGBs / ceil, GPU: gpu, Date: date, Commit: commit, Schedule: sched}
		}
		rows = append(rows, row(bench.ImplFP8Gen, t, strings.Join(sp, " ")),
			bench.Row{Op: j.op.Name, Shape: j.text, Options: opts, Impl: bench.ImplCopy, TimeUS: us(ct), Bytes: int64(bytes), GBPerS: copyGBs,
				PctCopy: 100, GPU: gpu, Date: date, Commit: commit})
		caseOpts[j.op.Name+" "+j.text] = opts
		prog.Log(fmt.Sprintf("  %s: fp8gen %.1f µs, %.1f%% of copy (%.1f µs)", j.label(), us(t), 100*float64(ct)/float64(t), us(ct)))
		if len(j.op.Apart) > 0 && j.op.Forward == nil {
			// The single ops that compute the same outputs, back to back.
			var at time.Duration
			var specs []string
			for _, part := range j.op.Apart {
				sh, po := part.PartShape(j.shape), optsFor(part.Op, j.opts)
				// Each part at its own tuned or default schedule: --schedule
				// names the op's knobs, not theirs.
				var ps schedule.Params
				if c, err := part.Op.NewCall(g.T, sh, po); err == nil {
					ps = tunedSchedule(c, stderr)
				}
				pp, err := part.Op.NewPlan(g.T, sh, po, ps)
				if err != nil {
					return fmt.Errorf("%s apart: %w", j.label(), err)
				}
				pt, spec, _, err := timePlan(g, pp, job{part.Op, sh, shapeText(part.Op, sh), po}, newSample(pp.Call, *check), *warm, *iters)
				if err != nil {
					return err
				}
				at += pt
				specs = append(specs, part.Op.Name+" "+spec)
			}
			rows = append(rows, row(bench.ImplApart, at, strings.Join(specs, ", then ")))
			prog.Log(fmt.Sprintf("  %s: apart %.1f µs (%.2f× fp8gen's time)", j.label(), us(at), float64(at)/float64(t)))
		}
		if *sweep && j.op.Forward == nil {
			best, bestT, err := sweepSchedules(g, j, *warm, *iters, stdout)
			if err != nil {
				return err
			}
			rows = append(rows, row(bench.ImplSweepBest, bestT, best.String()))
		}
	}
	prog.Done()

	if *peers != "off" && len(peerJobs) > 0 {
		pr, err := runPeers(*python, peerJobs, g.T, stderr)
		switch {
		case err == nil:
			for _, r := range pr {
				// The options as fp8gen's rows of the case name them (peers.py
				// spells some of them its own way), so that the rows group.
				r.Options, r.Commit = caseOpts[r.Op+" "+r.Shape], commit
				rows = append(rows, r)
			}
		case *peers == "on":
			return err
		default:
			fmt.Fprintf(stderr, "fp8gen bench: PyTorch peers not timed: %v\n", err)
		}
	}

	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		return err
	}
	base := filepath.Join(*outDir, slug(gpu))
	all := rows
	if old, err := bench.ReadJSON(base + ".json"); err == nil {
		all = bench.Merge(old, rows, ops.Names())
	} else if !os.IsNotExist(err) {
		return fmt.Errorf("the results to merge this run into: %w (move the file away to start anew)", err)
	}
	if err := bench.WriteJSON(base+".json", all); err != nil {
		return err
	}
	table := bench.Table(rows)
	md := fmt.Sprintf("# fp8gen bench, %s\n\n%s\n## Every row\n\n%s", gpu, bench.Summary(all), bench.Table(all))
	if err := atomicfile.WriteFile(base+".md", []byte(md)); err != nil {
		return err
	}
	wrote := "json,md"
	if drawn, err := drawPlot(plotter, *plotMode, base, stderr); err != nil {
		return err
	} else if drawn {
		wrote += ",png"
	}
	fmt.Fprintf(stdout, "%s\nwrote %s.{%s}\n", table, base, wrote)
	return nil
}

// plotProgram is the program that draws bench's chart (cmd/fp8gen-plot).
// It is a program of its own so that fp8gen's every start does not load
// the plotting library's fonts.
const plotProgram = "fp8gen-plot"

const noPlotter = plotProgram + " is neither beside fp8gen nor on PATH (go install github.com/fp8gen/fp8gen/cmd/" + plotProgram + ")"

// executable is os.Executable; a test moves "beside fp8gen" elsewhere.
var executable = os.Executable

// findPlotter is the fp8gen-plot that bench runs for its chart: the one
// beside this program, else the one on PATH; "" where there is none or
// mode is off. Mode on without one is an error, before any timing.
func findPlotter(mode string) (string, error) {
	if mode == "off" {
		return "", nil
	}
	if self, err := executable(); err == nil {
		if p := filepath.Join(filepath.Dir(self), plotProgram); isExecutable(p) {
			return p, nil
		}
	}
	// An error (none, or one found relative to "." in PATH, which exec
	// refuses to run) leaves it out.
	if p, err := exec.LookPath(plotProgram); err == nil {
		return p, nil
	}
	if mode == "on" {
		return "", usagef("--plot on: %s", noPlotter)
	}
	return "", nil
}

// drawPlot runs prog (findPlotter's) on the rows at base.json to draw
// base.png and reports whether it drew one. Under auto a chart it cannot
// draw is one line on stderr; under on it fails the bench. A chart of the
// same name left from an earlier run is removed rather than left beside
// rows it does not show.
func drawPlot(prog, mode, base string, stderr io.Writer) (drawn bool, err error) {
	png := base + ".png"
	if prog == "" {
		os.Remove(png)
		if mode == "auto" {
			fmt.Fprintf(stderr, "fp8gen bench: no chart drawn: %s, or go run ./cmd/%s %s.json\n", noPlotter, plotProgram, base)
		}
		return false, nil
	}
	cmd := exec.Command(prog, "-o", png, base+".json")
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Run(); err != nil {
		os.Remove(png)
		err = fmt.Errorf("%s: %w", prog, err)
		if mode == "on" {
			return false, err
		}
		fmt.Fprintf(stderr, "fp8gen bench: no chart drawn: %v\n", err)
		return false, nil
	}
	return true, nil
}

// isExecutable reports whether path is a regular file someone may run.
func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

type job struct {
	op    *ops.Op
	shape ops.Shape
	text  string      // the shape as the rows name it
	opts  ops.Options // --opt (nil: the op's defaults)
}

// label names the job in progress lines: op, shape and any --opt.
func (j job) label() string {
	if len(j.opts) == 0 {
		return j.op.Name + " " + j.text
	}
	return j.op.Name + " " + j.text + " " + j.opts.String()
}

// optsFor is the part of opts that op declares: a backward's options
// given to its forward (which has no dx, say).
func optsFor(op *ops.Op, opts ops.Options) ops.Options {
	out := ops.Options{}
	for k, v := range opts {
		if slices.ContainsFunc(op.Options, func(o ops.Option) bool { return o.Name == k }) {
			out[k] = v
		}
	}
	return out
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

func slug(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, s)
}

// peerJob is one case for bench/peers.py (its --jobs file).
type peerJob struct {
	Op         string            `json:"op"`
	Shape      string            `json:"shape"`
	Sizes      map[string]int    `json:"sizes"`
	Options    map[string]string `json:"options"`
	FP8        *string           `json:"fp8"`
	IdealBytes int               `json:"ideal_bytes"`
}

// peerJobOf describes a job on target t: its options (the op's defaults
// where --opt gave none), the target's FP8 format, and the ideal bytes (a
// backward's with its forward's).
func peerJobOf(j job, t *target.Target) (peerJob, error) {
	c, err := j.op.NewCall(t, j.shape, j.opts)
	if err != nil {
		return peerJob{}, err
	}
	pj := peerJob{Op: j.op.Name, Shape: j.text, Sizes: j.shape, Options: c.Options, IdealBytes: c.BytesFor(ops.Inputs(c, 1, false))}
	if c.Format != nil {
		pj.FP8 = &c.Format.Name
	}
	if j.op.Forward != nil {
		f, err := j.op.Forward.NewCall(t, j.shape, optsFor(j.op.Forward, j.opts))
		if err != nil {
			return peerJob{}, err
		}
		pj.IdealBytes += f.IdealBytes()
	}
	return pj, nil
}

// runPeers times the PyTorch versions of the jobs — eager, torch.compile
// and torch.compile(mode="max-autotune-no-cudagraphs") — with
// bench/peers.py, in one call.
func runPeers(python string, jobs []job, t *target.Target, stderr io.Writer) ([]bench.Row, error) {
	script, err := findPeers()
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "fp8gen-peers")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	var pjs []peerJob
	for _, j := range jobs {
		pj, err := peerJobOf(j, t)
		if err != nil {
			return nil, err
		}
		pjs = append(pjs, pj)
	}
	js, err := json.MarshalIndent(pjs, "", " ")
	if err != nil {
		return nil, err
	}
	in, out := filepath.Join(tmp, "jobs.json"), filepath.Join(tmp, "peers.json")
	if err := os.WriteFile(in, js, 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(python, script, "--jobs", in, "--compile-modes", "default,max-autotune-no-cudagraphs", "--out", out)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	cmd.Env = append(os.Environ(), "PYTHONUNBUFFERED=1")
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w", python, script, err)
	}
	r, err := bench.ReadJSON(out)
	if err != nil {
		return nil, err
	}
	var rows []bench.Row
	for _, x := range r {
		if x.Impl != bench.ImplCopy { // fp8gen's own copy row is the ceiling
			rows = append(rows, x)
		}
	}
	return rows, nil
}

func findPeers() (string, error) {
	for _, p := range []string{"bench/peers.py", filepath.Join(filepath.Dir(os.Args[0]), "peers.py")} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("bench/peers.py not found (run from the repository root)")
}

// sample is one shape's inputs and, when checking, their reference:
// the same for every schedule of the shape, so a tune or a sweep makes
// them once (the reference of a large shape takes seconds).
type sample struct {
	in  map[string]*ops.Tensor
	exp *ops.Expected // nil: not checked
}

func newSample(c *ops.Call, check bool) sample {
	s := sample{in: ops.Inputs(c, 1, false)}
	if check {
		s.exp = c.Expect(s.in)
	}
	return s
}

// timePlan checks a plan's outputs once (where smp holds a reference) and
// times it; it also returns the kernels as their spec string and the
// compiled kernels' resources.
func timePlan(g *backend.GPU, p *ops.Plan, j job, smp sample, warm, iters int) (time.Duration, string, []runtime.KernelAttrs, error) {
	all, out := p.WithOutputs(smp.in)
	pr, err := g.Prepare(context.Background(), p, all)
	if err != nil {
		return 0, "", nil, err
	}
	defer pr.Free()
	if smp.exp != nil {
		if err := pr.RunOnce(all); err != nil {
			return 0, "", nil, err
		}
		if _, err := smp.exp.Check(out); err != nil {
			return 0, "", nil, fmt.Errorf("%s %s: %v", j.op.Name, j.text, err)
		}
	}
	var sp []string
	for i, s := range p.Steps {
		a := pr.Attrs[i]
		sp = append(sp, fmt.Sprintf("%s(%v; %d regs, %d B local, %d B LDS)", s.Func.Name, p.Schedule, a.Regs, a.LocalBytes, s.Resources.LDSBytes))
	}
	t, err := pr.Time(warm, iters)
	return t, strings.Join(sp, " "), pr.Attrs, err
}

// sweepSchedules times every feasible point of the op's space at the job's
// shape (the same knobs for each kernel of the op) and returns the fastest.
func sweepSchedules(g *backend.GPU, j job, warm, iters int, w io.Writer) (schedule.Params, time.Duration, error) {
	var best schedule.Params
	bestT := time.Duration(1<<63 - 1)
	c, err := j.op.NewCall(g.T, j.shape, j.opts)
	if err != nil {
		return nil, 0, err
	}
	space, err := c.Space()
	if err != nil {
		return nil, 0, err
	}
	in := ops.Inputs(c, 1, false) // one set for every point
	for _, s := range space {
		p, err := j.op.NewPlan(g.T, j.shape, j.opts, s)
		if err != nil {
			fmt.Fprintf(w, "  sweep %s %s %v: infeasible: %v\n", j.op.Name, j.text, s, strings.ReplaceAll(err.Error(), "\n", " "))
			continue
		}
		all, _ := p.WithOutputs(in)
		pr, err := g.Prepare(context.Background(), p, all)
		if err != nil {
			return nil, 0, err
		}
		t, err := pr.Time(warm, iters)
		var attrs []string
		for _, a := range pr.Attrs {
			attrs = append(attrs, fmt.Sprintf("%d regs %d B local", a.Regs, a.LocalBytes))
		}
		pr.Free()
		if err != nil {
			return nil, 0, err
		}
		gbs := float64(p.IdealBytes()) / t.Seconds() / 1e9
		fmt.Fprintf(w, "  sweep %-15s %-10s %-45v %8.1f us %6.0f GB/s  (%s)\n", j.op.Name, j.text, s, us(t), gbs, strings.Join(attrs, "; "))
		if t < bestT {
			best, bestT = s, t
		}
	}
	if best == nil {
		return nil, 0, fmt.Errorf("%s %s: no feasible schedule", j.op.Name, j.text)
	}
	return best, bestT, nil
}
