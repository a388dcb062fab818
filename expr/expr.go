// Package expr is the small integer expression language of op
// descriptions: tensor shapes, grids, schedule knob domains and the
// constraints between knobs and sizes are written as expressions of named
// values ("cdiv(M, ROWS)", "LOOP == 1 || BLOCK_K >= K"), so that an op is
// data that the CLI, the benchmarks, the golden tests and an exported
// manifest all read alike.
//
// Grammar (C precedence; all values are int64, comparisons and logic give 0
// or 1):
//
//	expr    = or [ "?" expr ":" expr ]
//	or      = and { "||" and }
//	and     = cmp { "&&" cmp }
//	cmp     = sum [ ( "<" | "<=" | ">" | ">=" | "==" | "!=" ) sum ]
//	sum     = product { ( "+" | "-" ) product }
//	product = unary { ( "*" | "/" | "%" ) unary }
//	unary   = ( "-" | "!" ) unary | atom
//	atom    = integer | name | name "(" expr { "," expr } ")" | "(" expr ")"
//
// Functions: cdiv(a, b) = ⌈a/b⌉, min(a, …), max(a, …), pow2ceil(a) (the
// least power of two ≥ a), log2(a) (of a power of two). / and % truncate
// toward zero, as in C. Division by zero, overflow and an unknown name are
// errors, never a silent value.
package expr

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Expr is a parsed expression; the zero Expr is invalid.
type Expr struct {
	src  string
	root *node
}

type node struct {
	op   string // "int", "name", "call", or an operator
	val  int64
	name string
	args []*node
}

// Parse reads an expression.
func Parse(src string) (Expr, error) {
	p := &parser{src: src}
	p.next()
	n, err := p.expr()
	if err == nil && p.tok != "" {
		err = p.errorf("unexpected %q", p.tok)
	}
	if err != nil {
		return Expr{}, fmt.Errorf("expression %q: %w", src, err)
	}
	return Expr{src: src, root: n}, nil
}

// MustParse is Parse for expressions written in Go source (op
// descriptions); a syntax error there is a bug.
func MustParse(src string) Expr {
	e, err := Parse(src)
	if err != nil {
		panic("BUG: " + err.Error())
	}
	return e
}

// Int is the expression of a constant.
func Int(x int64) Expr { return MustParse(strconv.FormatInt(x, 10)) }

// String is the expression's source text.
func (e Expr) String() string { return e.src }

// IsZero reports whether e is the zero Expr.
func (e Expr) IsZero() bool { return e.root == nil }

// MarshalText writes the source text (for JSON manifests).
func (e Expr) MarshalText() ([]byte, error) { return []byte(e.src), nil }

// UnmarshalText parses the source text.
func (e *Expr) UnmarshalText(b []byte) error {
	x, err := Parse(string(b))
	if err != nil {
		return err
	}
	*e = x
	return nil
}

// Names lists the names the expression reads, sorted, without duplicates.
func (e Expr) Names() []string {
	var out []string
	var walk func(n *node)
	walk = func(n *node) {
		if n == nil {
			return
		}
		if n.op == "name" && !slices.Contains(out, n.name) {
			out = append(out, n.name)
		}
		for _, a := range n.args {
			walk(a)
		}
	}
	walk(e.root)
	slices.Sort(out)
	return out
}

// Env gives names their values.
type Env map[string]int64

// Eval computes e in env.
func (e Expr) Eval(env Env) (int64, error) {
	if e.root == nil {
		return 0, errors.New("empty expression")
	}
	v, err := eval(e.root, env)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", e.src, err)
	}
	return v, nil
}

var errOverflow = errors.New("integer overflow")

func eval(n *node, env Env) (int64, error) {
	switch n.op {
	case "int":
		return n.val, nil
	case "name":
		v, ok := env[n.name]
		if !ok {
			return 0, fmt.Errorf("unknown name %s", n.name)
		}
		return v, nil
	case "?":
		c, err := eval(n.args[0], env)
		if err != nil {
			return 0, err
		}
		if c != 0 {
			return eval(n.args[1], env)
		}
		return eval(n.args[2], env)
	case "&&", "||":
		a, err := eval(n.args[0], env)
		if err != nil {
			return 0, err
		}
		if (n.op == "&&") == (a == 0) { // short circuit
			return b2i(a != 0), nil
		}
		b, err := eval(n.args[1], env)
		return b2i(b != 0), err
	}
	args := make([]int64, len(n.args))
	for i, a := range n.args {
		v, err := eval(a, env)
		if err != nil {
			return 0, err
		}
		args[i] = v
	}
	if n.op == "call" {
		return call(n.name, args)
	}
	if len(args) == 1 {
		switch n.op {
		case "-":
			if args[0] == math.MinInt64 {
				return 0, errOverflow
			}
			return -args[0], nil
		case "!":
			return b2i(args[0] == 0), nil
		}
	}
	a, b := args[0], args[1]
	switch n.op {
	case "+":
		s := a + b
		if (s > a) != (b > 0) {
			return 0, errOverflow
		}
		return s, nil
	case "-":
		s := a - b
		if (s < a) != (b > 0) {
			return 0, errOverflow
		}
		return s, nil
	case "*":
		hi, lo := bits.Mul64(uint64(abs(a)), uint64(abs(b)))
		if hi != 0 || lo > math.MaxInt64 {
			return 0, errOverflow
		}
		if (a < 0) != (b < 0) {
			return -int64(lo), nil
		}
		return int64(lo), nil
	case "/", "%":
		if b == 0 {
			return 0, errors.New("division by zero")
		}
		if a == math.MinInt64 && b == -1 {
			return 0, errOverflow
		}
		if n.op == "/" {
			return a / b, nil
		}
		return a % b, nil
	case "<":
		return b2i(a < b), nil
	case "<=":
		return b2i(a <= b), nil
	case ">":
		return b2i(a > b), nil
	case ">=":
		return b2i(a >= b), nil
	case "==":
		return b2i(a == b), nil
	case "!=":
		return b2i(a != b), nil
	}
	return 0, fmt.Errorf("BUG: operator %s", n.op)
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func b2i(c bool) int64 {
	if c {
		return 1
	}
	return 0
}

// arity is each function's operand count (-1: one or more).
var arity = map[string]int{"cdiv": 2, "min": -1, "max": -1, "pow2ceil": 1, "log2": 1}

func call(name string, a []int64) (int64, error) {
	switch name {
	case "cdiv":
		if a[1] <= 0 || a[0] < 0 {
			return 0, fmt.Errorf("cdiv(%d, %d): want a ≥ 0 and b > 0", a[0], a[1])
		}
		return a[0]/a[1] + b2i(a[0]%a[1] != 0), nil
	case "min":
		return slices.Min(a), nil
	case "max":
		return slices.Max(a), nil
	case "pow2ceil":
		if a[0] <= 1 {
			return 1, nil
		}
		if a[0] > 1<<62 {
			return 0, errOverflow
		}
		return 1 << bits.Len64(uint64(a[0]-1)), nil
	case "log2":
		if a[0] <= 0 || a[0]&(a[0]-1) != 0 {
			return 0, fmt.Errorf("log2(%d): not a power of two", a[0])
		}
		return int64(bits.TrailingZeros64(uint64(a[0]))), nil
	}
	return 0, fmt.Errorf("BUG: function %s", name)
}

type parser struct {
	src string
	pos int
	tok string
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("at offset %d: %s", p.pos, fmt.Sprintf(format, args...))
}

// next reads the next token into p.tok ("" at the end).
func (p *parser) next() {
	for p.pos < len(p.src) && p.src[p.pos] == ' ' {
		p.pos++
	}
	if p.pos >= len(p.src) {
		p.tok = ""
		return
	}
	start := p.pos
	c := rune(p.src[p.pos])
	switch {
	case unicode.IsDigit(c):
		for p.pos < len(p.src) && unicode.IsDigit(rune(p.src[p.pos])) {
			p.pos++
		}
	case unicode.IsLetter(c) || c == '_':
		for p.pos < len(p.src) && (unicode.IsLetter(rune(p.src[p.pos])) || unicode.IsDigit(rune(p.src[p.pos])) || p.src[p.pos] == '_') {
			p.pos++
		}
	default:
		for _, op := range []string{"<=", ">=", "==", "!=", "&&", "||"} {
			if strings.HasPrefix(p.src[p.pos:], op) {
				p.pos += 2
				p.tok = op
				return
			}
		}
		p.pos++
	}
	p.tok = p.src[start:p.pos]
}

func (p *parser) expect(tok string) error {
	if p.tok != tok {
		if p.tok == "" {
			return p.errorf("missing %q", tok)
		}
		return p.errorf("want %q, got %q", tok, p.tok)
	}
	p.next()
	return nil
}

func (p *parser) expr() (*node, error) {
	c, err := p.binary(0)
	if err != nil || p.tok != "?" {
		return c, err
	}
	p.next()
	a, err := p.expr()
	if err != nil {
		return nil, err
	}
	if err := p.expect(":"); err != nil {
		return nil, err
	}
	b, err := p.expr()
	if err != nil {
		return nil, err
	}
	return &node{op: "?", args: []*node{c, a, b}}, nil
}

// levels of binary operators, loosest first.
var levels = [][]string{{"||"}, {"&&"}, {"<", "<=", ">", ">=", "==", "!="}, {"+", "-"}, {"*", "/", "%"}}

func (p *parser) binary(level int) (*node, error) {
	if level == len(levels) {
		return p.unary()
	}
	x, err := p.binary(level + 1)
	if err != nil {
		return nil, err
	}
	for slices.Contains(levels[level], p.tok) {
		op := p.tok
		p.next()
		y, err := p.binary(level + 1)
		if err != nil {
			return nil, err
		}
		x = &node{op: op, args: []*node{x, y}}
		if level == 2 && slices.Contains(levels[2], p.tok) {
			return nil, p.errorf("comparisons do not chain: parenthesize")
		}
	}
	return x, nil
}

func (p *parser) unary() (*node, error) {
	if p.tok == "-" || p.tok == "!" {
		op := p.tok
		p.next()
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return &node{op: op, args: []*node{x}}, nil
	}
	return p.atom()
}

func (p *parser) atom() (*node, error) {
	tok := p.tok
	switch {
	case tok == "":
		return nil, p.errorf("unexpected end")
	case tok == "(":
		p.next()
		x, err := p.expr()
		if err != nil {
			return nil, err
		}
		return x, p.expect(")")
	case unicode.IsDigit(rune(tok[0])):
		v, err := strconv.ParseInt(tok, 10, 64)
		if err != nil {
			return nil, p.errorf("integer %s out of range", tok)
		}
		p.next()
		return &node{op: "int", val: v}, nil
	case unicode.IsLetter(rune(tok[0])) || tok[0] == '_':
		p.next()
		if p.tok != "(" {
			return &node{op: "name", name: tok}, nil
		}
		want, ok := arity[tok]
		if !ok {
			return nil, p.errorf("unknown function %s", tok)
		}
		p.next()
		var args []*node
		for {
			x, err := p.expr()
			if err != nil {
				return nil, err
			}
			args = append(args, x)
			if p.tok != "," {
				break
			}
			p.next()
		}
		if err := p.expect(")"); err != nil {
			return nil, err
		}
		if want >= 0 && len(args) != want {
			return nil, p.errorf("%s takes %d arguments, got %d", tok, want, len(args))
		}
		return &node{op: "call", name: tok, args: args}, nil
	}
	return nil, p.errorf("unexpected %q", tok)
}

// Bind substitutes the names env gives and folds what becomes constant,
// so that an expression of sizes, knobs and target facts becomes one of
// the sizes alone (the grids and constraints of an exported manifest).
// Subexpressions that fail to evaluate (a division by zero) stay as they
// are, to fail where they are evaluated. The result's text is canonical:
// single spaces around binary operators, parentheses only where needed.
func (e Expr) Bind(env Env) Expr {
	if e.root == nil {
		return e
	}
	n := bind(e.root, env)
	return Expr{src: format(n), root: n}
}

// Subst replaces the names with gives by their expressions: a template
// such as "cdiv(rows, 128) * 128" parsed once, instantiated with the
// expressions of its placeholders, each a whole operand whatever its
// operators. The result's text is canonical, as Bind's.
func (e Expr) Subst(with map[string]Expr) Expr {
	if e.root == nil {
		return e
	}
	n := subst(e.root, with)
	return Expr{src: format(n), root: n}
}

func subst(n *node, with map[string]Expr) *node {
	if n.op == "name" {
		if x, ok := with[n.name]; ok && x.root != nil {
			return x.root
		}
		return n
	}
	if len(n.args) == 0 {
		return n
	}
	args := make([]*node, len(n.args))
	for i, a := range n.args {
		args[i] = subst(a, with)
	}
	return &node{op: n.op, name: n.name, val: n.val, args: args}
}

func constant(n *node) bool { return n.op == "int" }

// boolean reports whether n's value is always 0 or 1.
func boolean(n *node) bool {
	switch n.op {
	case "<", "<=", ">", ">=", "==", "!=", "&&", "||", "!":
		return true
	case "int":
		return n.val == 0 || n.val == 1
	}
	return false
}

// truth is n as a 0/1 value.
func truth(n *node) *node {
	if boolean(n) {
		return n
	}
	return &node{op: "!=", args: []*node{n, {op: "int"}}}
}

func bind(n *node, env Env) *node {
	switch n.op {
	case "int":
		return n
	case "name":
		if v, ok := env[n.name]; ok && v != math.MinInt64 {
			return &node{op: "int", val: v}
		}
		return n
	}
	args := make([]*node, len(n.args))
	for i, a := range n.args {
		args[i] = bind(a, env)
	}
	m := &node{op: n.op, name: n.name, args: args}
	// A constant condition picks its branch, or decides the logic.
	switch {
	case n.op == "?" && constant(args[0]):
		if args[0].val != 0 {
			return args[1]
		}
		return args[2]
	case (n.op == "&&" || n.op == "||") && constant(args[0]):
		if (n.op == "||") == (args[0].val != 0) {
			return &node{op: "int", val: b2i(n.op == "||")}
		}
		return truth(args[1])
	}
	for _, a := range args {
		if !constant(a) {
			return m
		}
	}
	if v, err := eval(m, nil); err == nil && v != math.MinInt64 {
		return &node{op: "int", val: v}
	}
	return m
}

// prec is an operator's binding strength: ?: 0, the binary levels 1–5,
// unary 6, atoms 7.
func prec(n *node) int {
	switch n.op {
	case "?":
		return 0
	case "int":
		if n.val < 0 {
			return 6 // printed as a unary minus
		}
		return 7
	case "name", "call":
		return 7
	}
	if len(n.args) == 1 {
		return 6
	}
	for i, l := range levels {
		if slices.Contains(l, n.op) {
			return i + 1
		}
	}
	panic("BUG: expr: operator " + n.op)
}

func format(n *node) string {
	wrap := func(a *node, min int) string {
		if prec(a) < min {
			return "(" + format(a) + ")"
		}
		return format(a)
	}
	switch n.op {
	case "int":
		return strconv.FormatInt(n.val, 10)
	case "name":
		return n.name
	case "call":
		var a []string
		for _, x := range n.args {
			a = append(a, format(x))
		}
		return n.name + "(" + strings.Join(a, ", ") + ")"
	case "?":
		return wrap(n.args[0], 1) + " ? " + format(n.args[1]) + " : " + format(n.args[2])
	}
	p := prec(n)
	if len(n.args) == 1 {
		return n.op + wrap(n.args[0], 6)
	}
	right := p + 1 // left-associative
	left := p
	if p == 3 { // comparisons do not chain
		left = 4
	}
	return wrap(n.args[0], left) + " " + n.op + " " + wrap(n.args[1], right)
}
