// Command fp8gen generates, inspects, runs and benchmarks fp8gen's FP8
// kernels.
//
//	fp8gen list                                  ops and targets
//	fp8gen ir OP [--after PASS]                  the IR, before lowering or after a pass
//	fp8gen emit OP --target T [-o FILE]          HIP C++ for a target
//	fp8gen run OP --shape M=…,K=…                run, check against the reference, report
//	fp8gen bench                                 time against a device copy and PyTorch
//
// Misuse (an unknown op, target or flag, a bad shape or schedule) is one line
// on stderr and exit status 2; a failed run or a mismatch is exit status 1.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/ops"
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
}

func main() { os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr)) }

// Main runs the command line and returns the exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		topUsage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			err := c.run(args[1:], stdout, stderr)
			switch {
			case err == nil:
				return 0
			case errors.Is(err, flag.ErrHelp):
				return 0
			case errors.As(err, new(usageError)):
				fmt.Fprintf(stderr, "fp8gen %s: %v\n", c.name, err)
				return 2
			}
			fmt.Fprintf(stderr, "fp8gen %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "fp8gen: unknown command %q (run fp8gen help)\n", args[0])
	return 2
}

func topUsage(w io.Writer) {
	fmt.Fprintln(w, "fp8gen generates the memory-bound kernels of FP8 training.\n\nUsage: fp8gen COMMAND [OP] [flags]\n\nCommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-6s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun fp8gen COMMAND --help for its flags.")
}

// parse reads flags with an optional leading positional OP, so that both
// "fp8gen emit OP --target T" and "fp8gen emit --target T OP" work.
func parse(fs *flag.FlagSet, args []string, wantOp bool) (string, error) {
	op := ""
	if wantOp && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		op, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return "", err
		}
		return "", usageError{err}
	}
	rest := fs.Args()
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

func newFlags(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: fp8gen %s\n\nFlags:\n", usage)
		fs.PrintDefaults()
	}
	return fs
}

// opFlags are the flags every op command shares.
type opFlags struct {
	target, shape, sched, in, family string
	pow2                             bool
}

func (o *opFlags) register(fs *flag.FlagSet, defShape string) {
	fs.StringVar(&o.target, "target", "", "target: "+strings.Join(target.Names(), ", ")+" (default: the GPU's, else sm_90)")
	fs.StringVar(&o.shape, "shape", defShape, "problem size, e.g. M=4096,K=4096")
	fs.StringVar(&o.sched, "schedule", "", "override schedule knobs, e.g. WARPS=8,ROWS=1")
	fs.StringVar(&o.in, "in-dtype", "bf16", "element type of x: bf16 or f32")
	fs.StringVar(&o.family, "fp8", "e4m3", "fp8 family: e4m3 or e5m2 (the format itself comes from the target)")
	fs.BoolVar(&o.pow2, "pow2", false, "round scales down to powers of two")
}

func (o *opFlags) options() (ops.Options, error) {
	opt := ops.Options{Family: o.family, Pow2: o.pow2}
	switch o.in {
	case "bf16":
		opt.In = ir.BF16
	case "f32":
		opt.In = ir.F32
	default:
		return opt, usagef("--in-dtype %q: want bf16 or f32", o.in)
	}
	if o.family != "e4m3" && o.family != "e5m2" {
		return opt, usagef("--fp8 %q: want e4m3 or e5m2", o.family)
	}
	return opt, nil
}

func parseShape(s string) (ops.Shape, error) {
	sh := ops.Shape{}
	if strings.TrimSpace(s) == "" {
		return sh, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, usagef("--shape %q: %q is not NAME=VALUE", s, kv)
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return nil, usagef("--shape %q: %s=%s is not an integer", s, k, v)
		}
		sh[strings.TrimSpace(k)] = n
	}
	return sh, nil
}

// plan resolves op, target, shape, options and schedule into a plan.
func (o *opFlags) plan(opName string, t *target.Target) (*ops.Plan, error) {
	op, err := ops.Lookup(opName)
	if err != nil {
		return nil, usageError{err}
	}
	sh, err := parseShape(o.shape)
	if err != nil {
		return nil, err
	}
	opt, err := o.options()
	if err != nil {
		return nil, err
	}
	s, err := schedule.Parse(o.sched)
	if err != nil {
		return nil, usageError{err}
	}
	if err := op.CheckShape(sh, opt); err != nil {
		return nil, usageError{err}
	}
	p, err := op.NewPlan(t, sh, opt, s)
	if err != nil {
		return nil, usageError{err}
	}
	return p, nil
}

// planFor plans op on the --target flag's target (sm_90 if none).
func (o *opFlags) planFor(opName string) (*ops.Plan, error) {
	t, err := lookupTarget(o.target)
	if err != nil {
		return nil, err
	}
	return o.plan(opName, t)
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
	fmt.Fprintln(stdout, "Ops:")
	for _, n := range ops.Names() {
		op, _ := ops.Lookup(n)
		var ks []string
		for _, k := range op.Kernels {
			ks = append(ks, k.Name)
		}
		fmt.Fprintf(stdout, "  %-16s %s\n  %-16s sizes %s; kernels %s\n", n, op.Doc, "", strings.Join(op.Sizes, ","), strings.Join(ks, ", "))
	}
	fmt.Fprintln(stdout, "\nTargets:")
	for _, n := range target.Names() {
		t, _ := target.Lookup(n)
		fmt.Fprintf(stdout, "  %-7s %-9s %-6s wave %d, LDS %d KiB, %d regs/lane, %d CUs, e4m3 = %s (max %g), e5m2 = %s\n",
			n, t.Product, t.Vendor, t.WaveSize, t.LDSBytes>>10, t.RegsLane, t.CUs, t.E4M3.Name, t.E4M3.Max, t.E5M2.Name)
	}
	return nil
}
