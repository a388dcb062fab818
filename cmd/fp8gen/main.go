// Command fp8gen generates, inspects, runs and benchmarks fp8gen's FP8
// kernels.
//
//	fp8gen list                                  ops and targets
//	fp8gen ir OP [--after PASS]                  the IR, before lowering or after a pass
//	fp8gen emit OP [--target T] [-o FILE]        HIP C++ for a target (default: the GPU's)
//	fp8gen run OP [--shape M=…,K=…]              run, check against the reference, report
//	fp8gen bench                                 time against a device copy and PyTorch
//
// Every command works from the op's description (package ops): its sizes,
// options, tensors and schedule knobs. Misuse (an unknown op, target or
// flag, a bad shape, option or schedule) is one line on stderr and exit
// status 2; a failed run or a mismatch is exit status 1; a broken internal
// invariant is printed as BUG with its stack and exits 3.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/fp8gen/fp8gen/backend"
	"github.com/fp8gen/fp8gen/ops"
	fpruntime "github.com/fp8gen/fp8gen/runtime"
	"github.com/fp8gen/fp8gen/schedule"
	"github.com/fp8gen/fp8gen/target"
)

// usageError is a user's mistake: exit status 2.
type usageError struct{ error }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

var commands = []struct {
	name, summary string
	run           func(args []string, stdout, stderr io.Writer) error
}{
	{"list", "list the ops and targets", cmdList},
	{"ir", "print an op's IR, before lowering or after a pass", cmdIR},
	{"emit", "write an op's kernels as HIP C++ for a target", cmdEmit},
	{"run", "run an op, check it against its reference, report time and error", cmdRun},
	{"bench", "benchmark the ops on the GPU against a device copy and PyTorch", cmdBench},
	{"export", "write an op as HIP source, code object and manifest.json for other programs", cmdExport},
	{"generate", "write typed Go launchers of ops, with their exports embedded (for go:generate)", cmdGenerate},
	{"tune", "time the best candidate schedules of an op on the GPU and keep the fastest in the tuning cache", cmdTune},
	{"version", "print fp8gen's version, commit and Go release, and the GPU compilers it finds", cmdVersion},
}

func main() {
	stopCompilersOnSignal()
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}

// stopCompilersOnSignal makes SIGINT, SIGTERM and SIGHUP stop fp8gen as
// they always did, taking a running nvcc or hipcc with it: the JIT runs
// the compiler in a process group of its own (to kill its children on a
// timeout), which a signal to fp8gen's group does not reach.
func stopCompilersOnSignal() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		sig := <-c
		fpruntime.KillCompilers()
		fmt.Fprintf(os.Stderr, "fp8gen: stopped by %v\n", sig)
		os.Exit(128 + int(sig.(syscall.Signal)))
	}()
}

// Main runs the command line and returns the exit status.
func Main(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "fp8gen: BUG: %v\n%s", r, debug.Stack())
			code = 3
		}
	}()
	if len(args) == 0 {
		// No command is misuse: the usage goes with the other refusals.
		topUsage(stderr)
		return 2
	}
	if args[0] == "--version" {
		args = append([]string{"version"}, args[1:]...)
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if err := topUsage(stdout); err != nil {
			return 1
		}
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			out := &checked{w: stdout}
			err := c.run(args[1:], out, stderr)
			if err == nil {
				err = out.err
			}
			switch {
			case err == nil:
				return 0
			case errors.Is(err, flag.ErrHelp):
				return 0
			case errors.As(err, new(usageError)) || errors.Is(err, fpruntime.ErrNoCgo):
				// A binary without cgo refuses GPU work whatever the
				// machine holds: misuse of this build, not a failed run.
				fmt.Fprintf(stderr, "fp8gen %s: %v\n", c.name, oneLine(err))
				return 2
			}
			fmt.Fprintf(stderr, "fp8gen %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "fp8gen: unknown command %q (run fp8gen help)\n", args[0])
	return 2
}

// checked remembers the first failed write to stdout, so that a command
// whose output is lost does not exit 0.
type checked struct {
	w   io.Writer
	err error
}

func (c *checked) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	if err != nil {
		c.err = fmt.Errorf("writing the output: %w", err)
	}
	return n, err
}

// oneLine joins a multi-line message (a list of rejected schedules) with
// "; " so that misuse stays one line.
func oneLine(err error) string {
	lines := strings.Split(strings.TrimSpace(err.Error()), "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return strings.Join(lines, "; ")
}

func topUsage(w io.Writer) error {
	var sb strings.Builder
	sb.WriteString("fp8gen generates the memory-bound kernels of FP8 training.\n\nUsage: fp8gen COMMAND [OP] [flags]\n\nCommands:\n")
	width := 0
	for _, c := range commands {
		width = max(width, len(c.name))
	}
	for _, c := range commands {
		fmt.Fprintf(&sb, "  %-*s %s\n", width, c.name, c.summary)
	}
	sb.WriteString("\nRun fp8gen COMMAND --help for its flags.\n")
	_, err := io.WriteString(w, sb.String())
	return err
}

// parse reads flags with an optional leading positional OP, so that both
// "fp8gen emit OP --target T" and "fp8gen emit --target T OP" work. A bad
// flag is one line; --help prints the flags.
func parse(fs *flag.FlagSet, args []string, wantOp bool) (string, error) {
	op := ""
	if wantOp && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		op, args = args[0], args[1:]
	}
	rest, err := parseFlags(fs, args)
	if err != nil {
		return "", err
	}
	if wantOp && op == "" && len(rest) > 0 {
		op, rest = rest[0], rest[1:]
	}
	if len(rest) > 0 {
		return "", usagef("unexpected arguments %q", rest)
	}
	if wantOp && op == "" {
		return "", usagef("which op? (known: %s)", strings.Join(ops.Names(), ", "))
	}
	return op, nil
}

// parseFlags reads flags and returns the arguments after them.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard) // the error comes back once, as one line
	err := fs.Parse(args)
	fs.Usage = usage
	fs.SetOutput(out)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage()
			return nil, err
		}
		return nil, usageError{err}
	}
	return fs.Args(), nil
}

func newFlags(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: fp8gen %s\n\nFlags:\n", usage)
		fs.PrintDefaults()
	}
	return fs
}

// kvFlag is a repeatable NAME=VALUE flag; a repeated NAME is refused.
type kvFlag struct {
	form string // how a value is written, for messages: NAME=VALUE if empty
	kv   [][2]string
}

func (m *kvFlag) String() string {
	var s []string
	for _, kv := range m.kv {
		s = append(s, kv[0]+"="+kv[1])
	}
	return strings.Join(s, " ")
}

func (m *kvFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		form := m.form
		if form == "" {
			form = "NAME=VALUE"
		}
		return fmt.Errorf("%q: want %s", s, form)
	}
	for _, kv := range m.kv {
		if kv[0] == k {
			return fmt.Errorf("%s given twice", k)
		}
	}
	m.kv = append(m.kv, [2]string{k, v})
	return nil
}

// opFlags are the flags every op command shares.
type opFlags struct {
	fs                               *flag.FlagSet
	target, shape, sched, in, family string
	pow2                             bool
	opts                             kvFlag
	useTuned                         bool // plan may take its schedule from the tuning cache (run)
	useShipped                       bool // plan may take its schedule from the shipped tuning only (export)
	tuned                            bool // plan took it from there
}

// register adds the shared flags; targetDefault and shapeDefault say, for
// the help, what the command takes where --target or --shape is not given.
func (o *opFlags) register(fs *flag.FlagSet, targetDefault, shapeDefault string) {
	o.fs = fs
	fs.StringVar(&o.target, "target", "", "target: "+strings.Join(target.Names(), ", ")+" (default: "+targetDefault+")")
	fs.StringVar(&o.shape, "shape", "", "problem size, e.g. M=4096,K=4096 (default: "+shapeDefault+")")
	fs.StringVar(&o.sched, "schedule", "", "override schedule knobs, e.g. WARPS=8,ROWS=1")
	fs.StringVar(&o.in, "in-dtype", "bf16", "element type of x: bf16 or f32 (the option in)")
	fs.StringVar(&o.family, "fp8", "e4m3", "fp8 family: e4m3 or e5m2; the format itself comes from the target (the option fp8)")
	fs.BoolVar(&o.pow2, "pow2", false, "round scales down to powers of two (the option pow2)")
	fs.Var(&o.opts, "opt", "set an option of the op: NAME=VALUE (repeatable; fp8gen list shows them)")
}

// set reports whether a flag was given on the command line.
func (o *opFlags) set(name string) bool {
	given := false
	o.fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// options collects the op's options from --opt and the shorthand flags,
// refusing a shorthand for an option the op does not have and one given
// twice.
func (o *opFlags) options(op *ops.Op) (ops.Options, error) {
	opts := ops.Options{}
	for _, kv := range o.opts.kv {
		opts[kv[0]] = kv[1]
	}
	for _, f := range []struct{ flag, opt, val string }{
		{"in-dtype", "in", o.in}, {"fp8", "fp8", o.family}, {"pow2", "pow2", strconv.FormatBool(o.pow2)},
	} {
		if !o.set(f.flag) {
			continue
		}
		if !slices.ContainsFunc(op.Options, func(x ops.Option) bool { return x.Name == f.opt }) {
			return nil, usagef("--%s: %s has no option %s", f.flag, op.Name, f.opt)
		}
		if _, dup := opts[f.opt]; dup {
			return nil, usagef("--%s and --opt %s=… both set the option %s", f.flag, f.opt, f.opt)
		}
		opts[f.opt] = f.val
	}
	if _, err := op.CheckOptions(opts); err != nil {
		return nil, usageError{err}
	}
	return opts, nil
}

// parseKV reads "NAME=INT,NAME=INT" for what (a flag), refusing a
// repeated name.
func parseKV(what, s string) (map[string]int, error) {
	out := map[string]int{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, usagef("%s %q: %q is not NAME=VALUE", what, s, kv)
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if errors.Is(err, strconv.ErrRange) {
			bound := fmt.Sprintf("at most %d", math.MaxInt64)
			if strings.HasPrefix(strings.TrimSpace(v), "-") {
				bound = fmt.Sprintf("at least %d", math.MinInt64)
			}
			return nil, usagef("%s %q: %s=%s overflows int64 (%s)", what, s, k, strings.TrimSpace(v), bound)
		}
		if err != nil {
			return nil, usagef("%s %q: %s=%s is not an integer", what, s, k, v)
		}
		if _, dup := out[k]; dup {
			return nil, usagef("%s %q: %s given twice", what, s, k)
		}
		out[k] = n
	}
	return out, nil
}

func parseShape(s string) (ops.Shape, error) {
	m, err := parseKV("--shape", s)
	return ops.Shape(m), err
}

// plan resolves op, target, shape, options and schedule into a plan.
func (o *opFlags) plan(opName string, t *target.Target) (*ops.Plan, error) {
	op, err := ops.Lookup(opName)
	if err != nil {
		return nil, usageError{err}
	}
	sh := op.Example
	if o.shape != "" {
		if sh, err = parseShape(o.shape); err != nil {
			return nil, err
		}
	}
	opts, err := o.options(op)
	if err != nil {
		return nil, err
	}
	sm, err := parseKV("--schedule", o.sched)
	if err != nil {
		return nil, err
	}
	for k, v := range sm {
		if v < 0 {
			return nil, usagef("--schedule: %s=%d is negative", k, v)
		}
	}
	override := schedule.Params(sm)
	if len(override) == 0 && o.useTuned {
		// The tuning cache's schedule for this class, where it holds one.
		if c, err := op.NewCall(t, sh, opts); err == nil {
			override = tunedSchedule(c, o.fs.Output())
			o.tuned = override != nil
		}
	}
	if len(override) == 0 && o.useShipped {
		override = shippedSchedule(op, t, sh, opts, o.fs.Output())
	}
	p, err := op.NewPlan(t, sh, opts, override)
	if err != nil {
		return nil, usageError{err}
	}
	return p, nil
}

// planFor plans op on the --target flag's target, else the GPU's; with
// neither, on sm_90 where orSM90, else it is refused.
func (o *opFlags) planFor(opName string, orSM90 bool) (*ops.Plan, error) {
	t, err := targetOrGPU(o.target, orSM90)
	if err != nil {
		return nil, err
	}
	return o.plan(opName, t)
}

// detectGPU is the target of the machine's GPU 0; the error wraps
// runtime.ErrNoDevice where there is none. Tests replace it.
var detectGPU = func() (*target.Target, error) {
	g, err := backend.OpenGPU()
	if err != nil {
		return nil, err
	}
	defer g.Close()
	return g.T, nil
}

// targetOrGPU is the target named, else the GPU's. Without a name and a
// GPU it is sm_90 where orSM90, else a usage error saying to pass --target.
func targetOrGPU(name string, orSM90 bool) (*target.Target, error) {
	if name != "" {
		return lookupTarget(name)
	}
	t, err := detectGPU()
	if err == nil {
		return t, nil
	}
	if orSM90 {
		return lookupTarget("sm_90")
	}
	why := "no GPU found"
	switch {
	case errors.Is(err, fpruntime.ErrNoCgo):
		why = "no GPU: this fp8gen was built without cgo"
	case !backend.IsNoDevice(err):
		why = "the GPU's target is unknown (" + oneLine(err) + ")"
	}
	return nil, usagef("%s to take the target from: pass --target (one of %s)", why, strings.Join(target.Names(), ", "))
}

func lookupTarget(name string) (*target.Target, error) {
	if name == "" {
		name = "sm_90"
	}
	t, err := target.Lookup(name)
	if err != nil {
		return nil, usageError{err}
	}
	return t, nil
}

func cmdList(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("list", "list", stderr)
	if _, err := parse(fs, args, false); err != nil {
		return err
	}
	var sb strings.Builder
	sb.WriteString("Ops:\n")
	w := 0
	for _, n := range ops.Names() {
		w = max(w, len(n))
	}
	for _, n := range ops.Names() {
		op, _ := ops.Lookup(n)
		var ks, ts, os []string
		for _, k := range op.Kernels {
			var conds []string
			if k.Option != "" {
				conds = append(conds, k.Option)
			}
			if !k.When.IsZero() {
				conds = append(conds, k.When.String())
			}
			if len(conds) == 0 {
				ks = append(ks, k.Name)
			} else {
				ks = append(ks, k.Name+" if "+strings.Join(conds, " and "))
			}
		}
		for _, t := range op.Tensors {
			var dims []string
			for _, e := range t.Shape {
				dims = append(dims, e.String())
			}
			desc := fmt.Sprintf("%s %s %s[%s]", t.Role, t.Name, t.DType, strings.Join(dims, ", "))
			if t.When != "" {
				desc += " if " + t.When
			}
			ts = append(ts, desc)
		}
		for _, o := range op.Options {
			os = append(os, fmt.Sprintf("%s=%s (%s)", o.Name, o.Default, strings.Join(o.Values, "|")))
		}
		var knobs []string
		for _, k := range op.Knobs {
			knobs = append(knobs, k.Name)
		}
		fmt.Fprintf(&sb, "  %-*s %s\n", w, n, op.Doc)
		fmt.Fprintf(&sb, "  %-*s sizes %s; kernels %s\n", w, "", strings.Join(op.Sizes, ","), strings.Join(ks, ", "))
		fmt.Fprintf(&sb, "  %-*s tensors %s\n", w, "", strings.Join(ts, "; "))
		fmt.Fprintf(&sb, "  %-*s options %s; schedule knobs %s\n", w, "", strings.Join(os, ", "), strings.Join(knobs, ", "))
	}
	sb.WriteString("\nTargets:\n")
	for _, n := range target.Names() {
		t, _ := target.Lookup(n)
		fmt.Fprintf(&sb, "  %-7s %-9s %-6s wave %d, LDS %d KiB, %d regs/lane, %d CUs, e4m3 = %s (max %g), e5m2 = %s\n",
			n, t.Product, t.Vendor, t.WaveSize, t.LDSBytes>>10, t.RegsLane, t.CUs, t.E4M3.Name, t.E4M3.Max, t.E5M2.Name)
	}
	_, err := io.WriteString(stdout, sb.String())
	return err
}
