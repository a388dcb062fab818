package expr

import (
	"math"
	"strings"
	"testing"
)

func TestEval(t *testing.T) {
	env := Env{"M": 1000, "K": 333, "BLOCK": 256, "LOOP": 0, "WAVE": 32, "BIG": math.MaxInt64}
	for _, tt := range []struct {
		src  string
		want int64
	}{
		{"42", 42},
		{"M", 1000},
		{"cdiv(M, BLOCK)", 4},
		{"cdiv(1024, BLOCK)", 4},
		{"cdiv(0, BLOCK)", 0},
		{"M * K + 1", 333001},
		{"M - K * 2", 334},
		{"(M - K) * 2", 1334},
		{"-M / 3", -333},
		{"-7 % 3", -1},
		{"min(M, K, 5)", 5},
		{"max(M, K)", 1000},
		{"pow2ceil(K)", 512},
		{"pow2ceil(512)", 512},
		{"pow2ceil(1)", 1},
		{"pow2ceil(0)", 1},
		{"log2(BLOCK)", 8},
		{"LOOP == 1 || BLOCK >= K", 0},
		{"LOOP == 0 && BLOCK < K", 1},
		{"!LOOP", 1},
		{"M > K ? M : K", 1000},
		{"LOOP ? 1 : WAVE == 32 ? 2 : 3", 2},
		{"1 || M / 0", 1}, // short circuit: the division never runs
		{"0 && M / 0", 0},
		{"  M+K  ", 1333},
	} {
		e, err := Parse(tt.src)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.src, err)
			continue
		}
		got, err := e.Eval(env)
		if err != nil || got != tt.want {
			t.Errorf("%q = %d, %v; want %d", tt.src, got, err, tt.want)
		}
	}
}

func TestErrors(t *testing.T) {
	env := Env{"M": 4, "BIG": math.MaxInt64}
	for _, tt := range []struct{ src, want string }{
		{"", "unexpected end"},
		{"M +", "unexpected end"},
		{"(M", `missing ")"`},
		{"M M", `unexpected "M"`},
		{"1 < 2 < 3", "comparisons do not chain"},
		{"foo(1)", "unknown function foo"},
		{"cdiv(1)", "cdiv takes 2 arguments, got 1"},
		{"99999999999999999999", "out of range"},
		{"M $ 1", `unexpected "$"`},
	} {
		_, err := Parse(tt.src)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q): %v; want %q", tt.src, err, tt.want)
		}
	}
	for _, tt := range []struct{ src, want string }{
		{"N", "unknown name N"},
		{"M / 0", "division by zero"},
		{"M % (M - 4)", "division by zero"},
		{"BIG + 1", "integer overflow"},
		{"BIG * 2", "integer overflow"},
		{"-BIG - 2", "integer overflow"},
		{"cdiv(M, 0)", "want a ≥ 0 and b > 0"},
		{"log2(12)", "not a power of two"},
	} {
		e, err := Parse(tt.src)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.src, err)
		}
		if _, err := e.Eval(env); err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.src) {
			t.Errorf("%q: %v; want %q and the expression", tt.src, err, tt.want)
		}
	}
}

func TestNamesAndText(t *testing.T) {
	e := MustParse("cdiv(M, ROWS) * K + M")
	if got := strings.Join(e.Names(), ","); got != "K,M,ROWS" {
		t.Errorf("Names = %s", got)
	}
	b, _ := e.MarshalText()
	var back Expr
	if err := back.UnmarshalText(b); err != nil || back.String() != e.String() {
		t.Errorf("round trip %q: %q, %v", e, back, err)
	}
	if err := back.UnmarshalText([]byte("1 +")); err == nil {
		t.Error("bad text accepted")
	}
}

// FuzzExpr: any text parses or is refused, and any parsed expression
// evaluates or is refused, without a panic.
func FuzzExpr(f *testing.F) {
	for _, s := range []string{"cdiv(M, BLOCK) * 2", "LOOP == 1 || BLOCK >= K", "M > 0 ? -M : !K", "max(1, min(M, 4))", "pow2ceil(M * K)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		e, err := Parse(src)
		if err != nil {
			return
		}
		for _, env := range []Env{{"M": 7, "K": 0, "BLOCK": 256, "LOOP": 1}, {"M": math.MinInt64, "K": -1, "BLOCK": math.MaxInt64, "LOOP": 0}} {
			e.Eval(env) //nolint:errcheck // only panics matter
		}
		if _, err := Parse(e.String()); err != nil {
			t.Errorf("the source of a parsed expression does not parse: %v", err)
		}
		checkBind(t, e)
	})
}

// checkBind: binding part of an environment, then evaluating with the
// rest, gives what evaluating with all of it gives, and the bound text
// parses back to the same value.
func checkBind(t *testing.T, e Expr) {
	t.Helper()
	for _, env := range []Env{{"M": 7, "K": 0, "BLOCK": 256, "LOOP": 1}, {"M": -3, "K": 5, "BLOCK": 1, "LOOP": 0}} {
		want, err := e.Eval(env)
		if err != nil {
			continue
		}
		part, rest := Env{}, Env{}
		for k, v := range env {
			if k == "BLOCK" || k == "LOOP" {
				part[k] = v
			} else {
				rest[k] = v
			}
		}
		b := e.Bind(part)
		for _, n := range b.Names() {
			if _, ok := part[n]; ok {
				t.Errorf("%q bound to %q still reads %s", e, b, n)
			}
		}
		if got, err := b.Eval(rest); err != nil || got != want {
			t.Errorf("%q bound to %q: %d, %v; want %d", e, b, got, err, want)
		}
		re, err := Parse(b.String())
		if err != nil {
			t.Errorf("%q bound to %q, which does not parse: %v", e, b, err)
			continue
		}
		if got, err := re.Eval(rest); err != nil || got != want {
			t.Errorf("%q bound to %q, reparsed: %d, %v; want %d", e, b, got, err, want)
		}
	}
}

func TestBind(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"cdiv(M, ROWS)", "cdiv(M, 4)"},
		{"cdiv(K, BLOCK_K) * cdiv(M, BLOCK_M)", "cdiv(K, 4096) * cdiv(M, 128)"},
		{"LOOP == 1 || BLOCK_K >= K", "4096 >= K"},
		{"LOOP == 0 || BLOCK_K >= K", "1"},
		{"LOOP == 0 && M", "M != 0"},
		{"ROWS * BLOCK_K <= 16384", "1"},
		{"min(CUS * 4, cdiv(M * K, BLOCK))", "min(528, cdiv(M * K, 1024))"},
		{"(M - 1) - (K - 1)", "M - 1 - (K - 1)"},
		{"-(M + ROWS)", "-(M + 4)"},
		{"ROWS - 6 - M", "-2 - M"},
		{"M * (ROWS - 6)", "M * -2"},
		{"LOOP ? M : K", "K"},
		{"(M > 0 ? M : K) + ROWS", "(M > 0 ? M : K) + 4"},
		{"M / (ROWS - 4)", "M / 0"},
		{"(M < K) == (K < M)", "(M < K) == (K < M)"},
	} {
		e := MustParse(c.src)
		got := e.Bind(Env{"ROWS": 4, "BLOCK_K": 4096, "BLOCK_M": 128, "BLOCK": 1024, "LOOP": 0, "CUS": 132})
		if got.String() != c.want {
			t.Errorf("%q bound: %q; want %q", c.src, got, c.want)
		}
		checkBind(t, e)
	}
}

// Subst places whole expressions at their placeholders: a substituted
// sum under a product keeps its parentheses, a comparison under ?: needs none.
func TestSubst(t *testing.T) {
	with := map[string]Expr{"rows": MustParse("M + 1"), "per": MustParse("16"), "tall": MustParse("M >= 4 * K")}
	for _, c := range []struct{ src, want string }{
		{"cdiv(rows, 128) * 128", "cdiv(M + 1, 128) * 128"},
		{"rows * per", "(M + 1) * 16"},
		{"tall ? 256 : 64", "M >= 4 * K ? 256 : 64"},
		{"(tall ? 2 : 4) * rows", "(M >= 4 * K ? 2 : 4) * (M + 1)"},
		{"K - rows", "K - (M + 1)"},
		{"M", "M"},
	} {
		got := MustParse(c.src).Subst(with)
		if got.String() != c.want {
			t.Errorf("%q substituted: %q; want %q", c.src, got, c.want)
		}
		if _, err := Parse(got.String()); err != nil {
			t.Errorf("%q substituted prints %q, which does not parse: %v", c.src, got, err)
		}
		env := Env{"M": 37, "K": 5}
		a, err1 := got.Eval(env)
		b, err2 := MustParse(c.src).Bind(Env{"rows": 38, "per": 16, "tall": b2i(37 >= 20)}).Eval(env)
		if err1 != nil || err2 != nil || a != b {
			t.Errorf("%q: substituted %d (%v), bound %d (%v)", c.src, a, err1, b, err2)
		}
	}
}
