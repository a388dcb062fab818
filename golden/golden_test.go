package golden

import (
	"errors"
	"flag"
	"fmt"
	"golang.org/x/tools/txtar"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fp8gen/fp8gen/backend"
	"github.com/fp8gen/fp8gen/emit"
	"github.com/fp8gen/fp8gen/lower"
	"github.com/fp8gen/fp8gen/ops"
	"github.com/fp8gen/fp8gen/schedule"
	"github.com/fp8gen/fp8gen/target"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// variant is one plan of an op on a target: options and a shape other
// than the op's defaults and example shape (the op's Goldens).
type variant struct {
	name  string // "" for the defaults
	opts  ops.Options
	shape ops.Shape       // nil: the op's example shape
	sched schedule.Params // nil: the default
}

// variants lists what each op's goldens cover: the defaults, then the
// variants its description names.
func variants(op *ops.Op) []variant {
	vs := []variant{{}}
	for _, v := range op.Goldens {
		vs = append(vs, variant{name: v.Name, opts: v.Options, shape: v.Shape, sched: v.Schedule})
	}
	return vs
}

// goldenCase is one variant of an op on one target.
type goldenCase struct {
	name    string // <op>_<target>[_<variant>]: the archive's base name
	op      *ops.Op
	target  *target.Target
	v       variant
	plan    *ops.Plan
	kernels []*emit.Kernel // one per plan step, in launch order
	archive *txtar.Archive
}

func (c *goldenCase) path() string { return filepath.Join("testdata", c.name+".txtar") }

// allCases plans and emits every case once for all the tests.
var allCases = sync.OnceValues(func() ([]*goldenCase, error) {
	var cs []*goldenCase
	for _, on := range ops.Names() {
		op, err := ops.Lookup(on)
		if err != nil {
			return nil, err
		}
		for _, tn := range target.Names() {
			tg, err := target.Lookup(tn)
			if err != nil {
				return nil, err
			}
			if op.RunsOn(tg) != nil {
				continue // refused: ops.TestOCPOnly
			}
			for _, v := range variants(op) {
				name := on + "_" + tn
				if v.name != "" {
					name += "_" + v.name
				}
				cs = append(cs, &goldenCase{name: name, op: op, target: tg, v: v})
			}
		}
	}
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() { errs[i] = c.build() })
	}
	wg.Wait()
	return cs, errors.Join(errs...)
})

func cases(t *testing.T) []*goldenCase {
	t.Helper()
	cs, err := allCases()
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// caseNamed returns the default case of op on target tn.
func caseNamed(t *testing.T, op, tn string) *goldenCase {
	t.Helper()
	for _, c := range cases(t) {
		if c.op.Name == op && c.target.Name == tn && c.v.name == "" {
			return c
		}
	}
	t.Fatalf("no golden case for %s on %s", op, tn)
	return nil
}

func (c *goldenCase) build() error {
	op, tg := c.op, c.target
	sh := c.v.shape
	if sh == nil {
		sh = op.Example
	}
	p, err := op.NewPlan(tg, sh, c.v.opts, c.v.sched)
	if err != nil {
		return fmt.Errorf("%s: %w", c.name, err)
	}
	c.plan = p
	format := "no FP8"
	if p.Format != nil {
		format = p.Format.Name
	}
	c.archive = &txtar.Archive{Comment: fmt.Appendf(nil,
		"Golden HIP of op %s on %s (%s), shape %v, options %v, %v indexing.\n"+
			"Written by `go test ./golden -update`; review a diff of this file like code.\n",
		op.Name, tg.Name, format, sh, p.Options, p.Index)}
	for _, s := range p.Steps {
		k, err := emit.Emit(s.Func, backend.Comment(p, s))
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		c.kernels = append(c.kernels, k)
		c.archive.Files = append(c.archive.Files,
			txtar.File{Name: s.Func.Name + ".schedule", Data: []byte(withNewline(scheduleText(p, s)))},
			txtar.File{Name: s.Func.Name + ".hip", Data: []byte(withNewline(k.Source))})
	}
	return nil
}

// scheduleText is a step's schedule file: the knobs and the grid, then what
// schedule/ predicted for the lowered kernel.
func scheduleText(p *ops.Plan, s *ops.Step) string {
	return fmt.Sprintf("params: %v\ngrid: %d %d %d\nthreads: %d\nlds_bytes: %d\nregs_estimate: %d\n",
		p.Schedule, s.Grid[0], s.Grid[1], s.Grid[2], s.Resources.Threads, s.Resources.LDSBytes, s.Resources.Regs)
}

// emitAgain writes step i of c's plan from scratch — the DSL, lowering and
// emission at the chosen schedule — for the determinism check.
func (c *goldenCase) emitAgain(i int) (string, error) {
	p, s := c.plan, c.plan.Steps[i]
	fn, err := p.Call.Build(s.Kernel, &lower.Config{})
	if err != nil {
		return "", err
	}
	k, err := emit.Emit(fn, backend.Comment(p, s))
	if err != nil {
		return "", err
	}
	return k.Source, nil
}

func TestGolden(t *testing.T) {
	cs := cases(t)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
	}
	known := map[string]bool{}
	for _, c := range cs {
		known[c.path()] = true
	}
	stale, err := filepath.Glob(filepath.Join("testdata", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range stale {
		switch {
		case known[path]:
		case *update:
			if err := os.Remove(path); err != nil {
				t.Error(err)
			}
		default:
			t.Errorf("%s matches no op × target; go test ./golden -update removes it", path)
		}
	}

	for _, c := range cs {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for i, s := range c.plan.Steps {
				k := c.kernels[i]
				again, err := c.emitAgain(i)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(k.Source, again); diff != "" {
					t.Errorf("%s: emission is not deterministic (-first +second):\n%s", k.Name, diff)
				}
				if k.Threads != s.Resources.Threads || k.LDSBytes != s.Resources.LDSBytes {
					t.Errorf("%s: emitted for %d threads and %d B LDS, but the schedule predicted %d threads and %d B",
						k.Name, k.Threads, k.LDSBytes, s.Resources.Threads, s.Resources.LDSBytes)
				}
			}

			got := c.archive
			if *update {
				if err := os.WriteFile(c.path(), txtar.Format(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			data, err := os.ReadFile(c.path())
			if err != nil {
				t.Fatalf("%v (go test ./golden -update writes it)", err)
			}
			want := txtar.Parse(data)
			if diff := cmp.Diff(fileNames(want), fileNames(got)); diff != "" {
				t.Errorf("%s: files (-want +got):\n%s", c.path(), diff)
			}
			if diff := cmp.Diff(string(want.Comment), string(got.Comment)); diff != "" {
				t.Errorf("%s: comment (-want +got):\n%s", c.path(), diff)
			}
			for _, f := range got.Files {
				w, ok := lookup(want, f.Name)
				if !ok {
					continue // reported with the file names
				}
				// Lines, so that a diff shows whole source lines.
				if diff := cmp.Diff(strings.Split(w, "\n"), strings.Split(string(f.Data), "\n")); diff != "" {
					t.Errorf("%s: %s (-want +got):\n%s", c.path(), f.Name, diff)
				}
			}
			if t.Failed() {
				t.Log("if the change is intended, run go test ./golden -update and review the diff")
			}
		})
	}
}

func fileNames(a *txtar.Archive) []string {
	var n []string
	for _, f := range a.Files {
		n = append(n, f.Name)
	}
	return n
}

// lookup returns the data of the archive's file called name.
func lookup(a *txtar.Archive, name string) (string, bool) {
	for _, f := range a.Files {
		if f.Name == name {
			return string(f.Data), true
		}
	}
	return "", false
}

// withNewline ends a non-empty text with a newline, as txtar requires.
func withNewline(s string) string {
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s
}
