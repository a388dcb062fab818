package ops

import (
	"regexp"
	"testing"

	"github.com/fp8gen/fp8gen/emit"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/schedule"
	"github.com/fp8gen/fp8gen/target"
)

// Every variant of a kernel has its own entry symbol, stable from run to
// run, so that variants share a module: options, schedule, specialization
// and index width each change it.
func TestVariantSymbols(t *testing.T) {
	tg, _ := target.Lookup("sm_90")
	op, _ := Lookup("rowwise_cast")
	plan := func(sh Shape, o Options, sched schedule.Params) *ir.Func {
		t.Helper()
		p, err := op.NewPlan(tg, sh, o, sched)
		if err != nil {
			t.Fatal(err)
		}
		return p.Steps[0].Func
	}
	base := Shape{"M": 64, "K": 256}
	variants := map[string]*ir.Func{
		"default":  plan(base, nil, nil),
		"options":  plan(base, Options{"fp8": "e5m2"}, nil),
		"schedule": plan(base, nil, schedule.Params{"WARPS": 2}),
		"div":      plan(Shape{"M": 64, "K": 255}, nil, nil),
		"index":    plan(Shape{"M": 65536, "K": 40000}, nil, nil),
	}
	seen := map[string]string{}
	var fs []*ir.Func
	var comments []string
	for name, f := range variants {
		if !regexp.MustCompile(`^rowwise_cast_[0-9a-f]{8}$`).MatchString(f.Symbol) {
			t.Errorf("%s: symbol %q; want rowwise_cast_ and 8 hex digits", name, f.Symbol)
		}
		if f.Name != "rowwise_cast" {
			t.Errorf("%s: name %q; want the kernel's name", name, f.Name)
		}
		if other, ok := seen[f.Symbol]; ok {
			t.Errorf("variants %s and %s share the symbol %s", name, other, f.Symbol)
		}
		seen[f.Symbol] = name
		fs = append(fs, f)
		comments = append(comments, name)
	}
	if again := plan(base, nil, nil); again.Symbol != variants["default"].Symbol {
		t.Errorf("the same variant named %s, then %s", variants["default"].Symbol, again.Symbol)
	}
	// Every variant in one translation unit; the same one twice is refused.
	u, err := emit.Unit(fs, comments)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		if !regexp.MustCompile(`__global__ void __launch_bounds__\(\d+\) ` + f.Symbol + `\(`).MatchString(u.Source) {
			t.Errorf("the unit has no entry %s", f.Symbol)
		}
	}
	if _, err := emit.Unit([]*ir.Func{fs[0], fs[0]}, []string{"a", "b"}); err == nil {
		t.Error("a unit with one kernel twice: no error")
	}
}
