package export

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fp8gen/fp8gen/expr"
	"github.com/fp8gen/fp8gen/ops"
	"github.com/fp8gen/fp8gen/target"
)

// randExpr writes a random expression of M, K and T.
func randExpr(r *rand.Rand, depth int) string {
	if depth == 0 || r.IntN(4) == 0 {
		switch r.IntN(5) {
		case 0, 1:
			return []string{"M", "K", "T"}[r.IntN(3)]
		case 2:
			return fmt.Sprint(r.IntN(9))
		case 3:
			return fmt.Sprint(r.Int64N(1 << 40))
		default:
			return "9223372036854775807"
		}
	}
	a, b := randExpr(r, depth-1), randExpr(r, depth-1)
	switch r.IntN(8) {
	case 0:
		return "-(" + a + ")"
	case 1:
		return "!(" + a + ")"
	case 2:
		return fmt.Sprintf("(%s) ? (%s) : (%s)", a, b, randExpr(r, depth-1))
	case 3:
		f := []string{"cdiv", "min", "max"}[r.IntN(3)]
		return fmt.Sprintf("%s(%s, %s)", f, a, b)
	case 4:
		return fmt.Sprintf("%s(%s)", []string{"pow2ceil", "log2"}[r.IntN(2)], a)
	}
	op := []string{"+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!=", "&&", "||"}[r.IntN(13)]
	return "(" + a + ") " + op + " (" + b + ")"
}

// The PyTorch loader's pure-Python half — manifest parsing, the
// expression evaluator, the shape checks — runs here against fresh exports
// of every op and against Go's evaluator on random expressions. (Its GPU
// half runs on the GPU machine.)
func TestPythonLoader(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("FP8GEN_REQUIRE_PYTHON") == "1" {
			t.Fatal("python3 not found, and FP8GEN_REQUIRE_PYTHON=1")
		}
		t.Skip("no python3")
	}
	dir := t.TempDir()
	exports := filepath.Join(dir, "exports")
	for _, name := range ops.Names() {
		op, _ := ops.Lookup(name)
		for _, tn := range []string{"gfx942", "sm_90"} {
			tg, _ := target.Lookup(tn)
			if op.RunsOn(tg) != nil {
				tn = "gfx950" // the AMD target that runs OCP formats
				tg, _ = target.Lookup(tn)
			}
			for i, o := range op.OptionSets() {
				p, err := op.NewPlan(tg, op.Example, o, nil)
				if err != nil {
					t.Fatal(err)
				}
				b, err := New(p)
				if err != nil {
					t.Fatal(err)
				}
				if err := b.Write(filepath.Join(exports, fmt.Sprintf("%s-%s-%d", name, tn, i))); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	type exprCase struct {
		Expr  string           `json:"expr"`
		Env   map[string]int64 `json:"env"`
		Value *int64           `json:"value"`
		Error bool             `json:"error"`
	}
	r := rand.New(rand.NewPCG(3, 4))
	var cases []exprCase
	nerr := 0
	for len(cases) < 3000 {
		src := randExpr(r, 4)
		e, err := expr.Parse(src)
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		env := map[string]int64{"M": r.Int64N(100) - 20, "K": r.Int64N(1 << 33), "T": []int64{0, 1, -1, math.MaxInt64, math.MinInt64 + 1}[r.IntN(5)]}
		c := exprCase{Expr: src, Env: env}
		if v, err := e.Eval(expr.Env(env)); err != nil {
			c.Error = true
			nerr++
		} else {
			c.Value = &v
		}
		cases = append(cases, c)
	}
	js, _ := json.Marshal(cases)
	casesFile := filepath.Join(dir, "cases.json")
	os.WriteFile(casesFile, js, 0o644)
	cmd := exec.Command(py, "-m", "unittest", "discover", "-s", "tests", "-v")
	cmd.Dir = filepath.Join("..", "python")
	cmd.Env = append(os.Environ(), "FP8GEN_EXPORTS="+exports, "FP8GEN_EXPR_CASES="+casesFile)
	out, err := cmd.CombinedOutput()
	t.Logf("%d expression cases (%d errors); python3 -m unittest:\n%s", len(cases), nerr, out)
	if err != nil {
		t.Fatalf("the Python loader's tests failed: %v", err)
	}
	if !strings.Contains(string(out), "OK") {
		t.Fatal("no OK from unittest")
	}
}
