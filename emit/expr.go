package emit

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/target"
)

func f32bits(x float32) uint32 { return math.Float32bits(x) }

// Precedences of C expressions, for parentheses only where needed.
const (
	precCond   = 1 // ?:
	precOrOr   = 2
	precAndAnd = 3
	precOr     = 4
	precXor    = 5
	precAnd    = 6
	precEq     = 7
	precRel    = 8
	precShift  = 9
	precAdd    = 10
	precMul    = 11
	precUnary  = 12 // casts, unary minus, *p
	precAtom   = 13 // names, calls, subscripts
)

// val is operand a at register r, parenthesized if its precedence is below need.
func (e *emitter) val(a *ir.Value, r string, need int) string {
	if !e.inline[a] {
		if a.Type.Regs > 1 {
			return e.name(a) + "[" + r + "]"
		}
		return e.name(a)
	}
	s, p := e.exprP(a, r)
	if p < need {
		return "(" + s + ")"
	}
	return s
}

// expr is the C expression of v at register r.
func (e *emitter) expr(v *ir.Value, r string) string {
	s, _ := e.exprP(v, r)
	return s
}

// exprP is the C expression of v at register r, with its precedence: its
// op's rule in cRules.
func (e *emitter) exprP(v *ir.Value, r string) (string, int) {
	e.printed[v] = true
	if rule := cRules[v.Op]; rule.expr != nil {
		return rule.expr(cx{e, v, r})
	}
	panic("BUG: no C expression for " + v.Op.Name())
}

// cx is what a C rule reads: the emitter, the value and the register.
type cx struct {
	e *emitter
	v *ir.Value
	r string
}

// a is operand i, parenthesized below precedence need.
func (c cx) a(i, need int) string { return c.e.val(c.v.Args[i], c.r, need) }

// d is the first operand's element type.
func (c cx) d() ir.DType { return c.v.Args[0].Type.DType }

// f32 reports whether the first operand is f32.
func (c cx) f32() bool { return c.d().K == ir.KF32 }

// bin is "x op y" at precedence p, dropping an added or subtracted 0.
func (c cx) bin(op string, p int) (string, int) {
	x, y := c.a(0, p), c.a(1, p+1)
	if op == "+" && x == "0" {
		return c.e.exprOf(c.v.Args[1], c.r)
	}
	if (op == "+" || op == "-") && y == "0" {
		return c.e.exprOf(c.v.Args[0], c.r)
	}
	return x + " " + op + " " + y, p
}

func call(fn string, args ...string) (string, int) {
	return fn + "(" + strings.Join(args, ", ") + ")", precAtom
}

// cBinary is the rule of a C binary operator.
func cBinary(op string, p int) func(cx) (string, int) {
	return func(c cx) (string, int) { return c.bin(op, p) }
}

// logical is the rule of an operator whose bool form differs (&&, ||, !=).
func logical(boolOp string, boolPrec int, op string, p int) func(cx) (string, int) {
	return func(c cx) (string, int) {
		if c.d().K == ir.KBool {
			return c.bin(boolOp, boolPrec)
		}
		return c.bin(op, p)
	}
}

// f32Call is the rule of an op that is fn on f32 (a prelude helper or an
// intrinsic) and other on integers (an expression of the operand).
func f32Call(fn string, other func(x string) (string, int)) func(cx) (string, int) {
	return func(c cx) (string, int) {
		if c.f32() {
			return call(fn, c.a(0, 0))
		}
		return other(c.a(0, 0))
	}
}

// cRule is what the emitter knows of an op: how its value prints as a C
// expression and where that expression may be written. The table cRules
// holds one an op (the emitter's column of the op table); an op without
// expr is printed as a statement of its own.
type cRule struct {
	atom   bool // a name or a literal: written wherever it is used, never held in a variable
	inline int8 // +1: may be written into its single user; −1: never; 0: if elementwise and pure
	cheap  bool // integer index arithmetic recomputed at each use (cheap)
	expr   func(c cx) (string, int)
}

// cRules is filled in init: its rules print operands, which reads it.
var cRules ir.Rules[cRule]

func init() {
	progID := func(c cx) (string, int) {
		s := map[ir.Op]string{ir.OpProgramID: "blockIdx", ir.OpNumPrograms: "gridDim"}[c.v.Op] + "." + string("xyz"[c.v.Axis()])
		if c.v.Type.DType == ir.I64 {
			return "(long long)" + s, precUnary
		}
		return "(int)" + s, precUnary
	}
	name := func(c cx) (string, int) { return c.e.name(c.v), precAtom }
	operand := func(c cx) (string, int) { return c.e.exprOf(c.v.Args[0], c.r) }
	maxMin := func(c cx) (string, int) {
		if c.f32() {
			fn, swap := c.e.maxMin(c.v.Op, c.v.Args[0], c.v.Args[1])
			if swap {
				return call(fn, c.a(1, 0), c.a(0, 0))
			}
			return call(fn, c.a(0, 0), c.a(1, 0))
		}
		return call(map[ir.Op]string{ir.OpMax: "max", ir.OpMin: "min"}[c.v.Op], c.a(0, 0), c.a(1, 0))
	}
	shifts := func(op string, unsigned bool) func(c cx) (string, int) {
		return func(c cx) (string, int) {
			// Operands above the shift's precedence, as clang's
			// -Wshift-op-parentheses asks: 254 - s << 23 reads (254 - s) << 23.
			// ShrU casts its left operand: (unsigned)a / 3 would divide unsigned.
			left := precAdd + 1
			if unsigned {
				left = precUnary
			}
			return shift(op, unsigned, c.d(), c.a(0, left), c.v.Args[1], c.a(1, precAdd+1))
		}
	}
	cRules = ir.Rules[cRule]{
		ir.OpConst: {atom: true, expr: func(c cx) (string, int) {
			l := literal(c.v)
			if strings.HasPrefix(l, "-") || strings.HasPrefix(l, "(") {
				return l, precUnary
			}
			return l, precAtom
		}},
		ir.OpRegConst:    {atom: true, expr: func(c cx) (string, int) { return c.e.regExpr(c.v.Type.DType, c.v.Consts(), c.r) }},
		ir.OpTid:         {atom: true, expr: func(cx) (string, int) { return "tid", precAtom }},
		ir.OpParam:       {atom: true, expr: name},
		ir.OpSize:        {atom: true, expr: name},
		ir.OpProgramID:   {atom: true, expr: progID},
		ir.OpNumPrograms: {atom: true, expr: progID},
		ir.OpForResult: {atom: true, expr: func(c cx) (string, int) {
			_, carried := c.v.Args[0].ForVars()
			return c.e.val(carried[c.v.Index()], c.r, precAtom), precAtom
		}},
		ir.OpSplat:  {inline: 1, expr: operand},
		ir.OpAssume: {expr: operand},
		ir.OpGatherRegs: {inline: 1, expr: func(c cx) (string, int) {
			m := make([]int64, len(c.v.RegMap()))
			for i, s := range c.v.RegMap() {
				m[i] = int64(s)
			}
			idx, _ := c.e.regExpr(ir.I32, m, c.r)
			return c.e.exprOf(c.v.Args[0], idx)
		}},
		ir.OpReduceRegs: {inline: -1},
		ir.OpButterfly:  {inline: -1},
		ir.OpShflXor:    {inline: -1},
		ir.OpLoopVar:    {inline: -1},

		ir.OpAdd:  {cheap: true, expr: cBinary("+", precAdd)},
		ir.OpSub:  {cheap: true, expr: cBinary("-", precAdd)},
		ir.OpMul:  {cheap: true, expr: cBinary("*", precMul)},
		ir.OpDiv:  {cheap: true, expr: cBinary("/", precMul)},
		ir.OpRem:  {cheap: true, expr: cBinary("%", precMul)},
		ir.OpLt:   {expr: cBinary("<", precRel)},
		ir.OpLe:   {expr: cBinary("<=", precRel)},
		ir.OpGt:   {expr: cBinary(">", precRel)},
		ir.OpGe:   {expr: cBinary(">=", precRel)},
		ir.OpEq:   {expr: cBinary("==", precEq)},
		ir.OpNe:   {expr: cBinary("!=", precEq)},
		ir.OpAnd:  {cheap: true, expr: logical("&&", precAndAnd, "&", precAnd)},
		ir.OpOr:   {cheap: true, expr: logical("||", precOrOr, "|", precOr)},
		ir.OpXor:  {cheap: true, expr: logical("!=", precEq, "^", precXor)},
		ir.OpShl:  {cheap: true, expr: shifts("<<", false)},
		ir.OpShr:  {expr: shifts(">>", false)},
		ir.OpShrU: {expr: shifts(">>", true)},
		ir.OpMax:  {expr: maxMin},
		ir.OpMin:  {expr: maxMin},
		ir.OpAbs:  {expr: f32Call("fp8g_absf", func(x string) (string, int) { return call("abs", x) })},
		ir.OpNeg: {expr: func(c cx) (string, int) {
			if c.f32() {
				return call("fp8g_negf", c.a(0, 0))
			}
			return "-" + c.a(0, precUnary), precUnary // at unary precedence, not 0
		}},
		ir.OpRsqrt: {expr: func(c cx) (string, int) {
			return "1.0f / sqrtf(" + c.a(0, 0) + ")", precMul
		}},
		ir.OpPow2Floor: {expr: func(c cx) (string, int) { return call("fp8g_pow2_floor", c.a(0, 0)) }},
		ir.OpCast: {cheap: true, expr: func(c cx) (string, int) {
			return cast(c.d(), c.v.Type.DType, func(need int) string { return c.a(0, need) })
		}},
		ir.OpBitcast: {expr: f32Call("__float_as_int", func(x string) (string, int) { return call("__int_as_float", x) })},
		ir.OpWhere: {expr: func(c cx) (string, int) {
			return c.a(0, precCond+1) + " ? " + c.a(1, precCond+1) + " : " + c.a(2, precCond), precCond
		}},
		ir.OpFMA: {expr: func(c cx) (string, int) {
			return call("fmaf", c.a(0, 0), c.a(1, 0), c.a(2, 0))
		}},
		ir.OpPtrAdd: {expr: cBinary("+", precAdd)},
	}
}

// exprOf is operand x at register r with its precedence.
func (e *emitter) exprOf(x *ir.Value, r string) (string, int) {
	if e.inline[x] {
		return e.exprP(x, r)
	}
	return e.val(x, r, 0), precAtom
}

// shift takes the amount modulo the width, as the IR defines it (C leaves
// larger amounts undefined); a constant amount is reduced here. op is the
// C operator; a logical right shift (unsigned) shifts the value as
// unsigned.
func shift(op string, unsigned bool, d ir.DType, x string, amount *ir.Value, y string) (string, int) {
	bits := d.Bits()
	if amount.Op == ir.OpConst {
		y = strconv.FormatInt(amount.Const().Int&int64(bits-1), 10)
	} else {
		y = fmt.Sprintf("(%s & %d)", y, bits-1)
	}
	if !unsigned {
		return x + " " + op + " " + y, precShift
	}
	u := "unsigned"
	if d.K == ir.KI64 {
		u = "unsigned long long"
	}
	return fmt.Sprintf("(%s)((%s)%s %s %s)", ctype(d), u, x, op, y), precUnary
}

func literal(v *ir.Value) string {
	d := v.Type.DType
	c := v.Const()
	switch d.K {
	case ir.KF32:
		return floatLit(float32(c.Float))
	case ir.KBool:
		if c.Int != 0 {
			return "true"
		}
		return "false"
	case ir.KI64:
		if c.Int == math.MinInt64 { // -9223372036854775808LL would negate a literal past the range
			return "(long long)0x8000000000000000ULL"
		}
		return fmt.Sprintf("%dLL", c.Int)
	case ir.KBF16:
		return fmt.Sprintf("(uint16_t)0x%04x", ir.F32ToBF16(float32(c.Float)))
	case ir.KFP8:
		return fmt.Sprintf("(uint8_t)0x%02x", d.Fmt.EncodeSat(float32(c.Float)))
	case ir.KI32:
		if c.Int == math.MinInt32 {
			return "(int)0x80000000"
		}
	}
	return fmt.Sprint(c.Int)
}

// floatLit prints an f32 exactly (hex float), readably where it can.
func floatLit(x float32) string {
	s := fmt.Sprintf("%g", x)
	var back float32
	if _, err := fmt.Sscan(s, &back); err == nil && back == x && !strings.ContainsAny(s, "IN") {
		if !strings.ContainsAny(s, ".e") {
			s += ".0"
		}
		return s + "f"
	}
	return fmt.Sprintf("__uint_as_float(0x%08xu)", f32bits(x))
}

// regExpr is the per-register constant c at register r: a literal where r
// is a number, else a sum of digits of r (c[r] = c0 + Σ ((r / 2^b) % 2^n)·w,
// the form every layout's coordinates take), else a lookup in a table.
func (e *emitter) regExpr(d ir.DType, c []int64, r string) (string, int) {
	lit := func(x int64) string {
		if d == ir.Bool {
			return map[bool]string{true: "true", false: "false"}[x != 0]
		}
		if d == ir.I64 {
			return fmt.Sprintf("%dLL", x)
		}
		return strconv.FormatInt(x, 10)
	}
	if n, err := strconv.Atoi(r); err == nil {
		if c[n] < 0 {
			return lit(c[n]), precUnary
		}
		return lit(c[n]), precAtom
	}
	if terms, ok := digits(c); ok && d != ir.Bool {
		rr := wrap(r)
		var parts []string
		for _, t := range terms {
			x := rr
			if t.shift > 0 {
				x = fmt.Sprintf("%s / %d", x, 1<<t.shift)
			}
			if t.shift+t.bits < log2(len(c)) {
				x = fmt.Sprintf("%s %% %d", x, 1<<t.bits) // / and % associate left to right
			}
			if t.w != 1 {
				x = fmt.Sprintf("%s * %d", x, t.w)
			}
			parts = append(parts, x)
		}
		if c[0] != 0 || len(parts) == 0 {
			parts = append(parts, lit(c[0]))
		}
		p := precAtom
		switch {
		case len(parts) > 1:
			p = precAdd
		case strings.Contains(parts[0], " "):
			p = precMul
		}
		return strings.Join(parts, " + "), p
	}
	var xs []string
	for _, x := range c {
		xs = append(xs, lit(x))
	}
	init := strings.Join(xs, ", ")
	name, ok := e.tables[init]
	if !ok {
		name = fmt.Sprintf("regs%d", len(e.tables))
		e.tables[init] = name
		e.tableDecls = append(e.tableDecls, fmt.Sprintf("const %s %s[%d] = {%s};", ctype(d), name, len(c), init))
	}
	return name + "[" + r + "]", precAtom
}

func log2(n int) int {
	b := 0
	for 1<<b < n {
		b++
	}
	return b
}

type digit struct {
	shift, bits int
	w           int64
}

// digits writes c as c[0] plus runs of bits of r with weights doubling
// along each run, if it has that form (and a power-of-two length).
func digits(c []int64) ([]digit, bool) {
	n := len(c)
	if n&(n-1) != 0 {
		return nil, false
	}
	nb := log2(n)
	w := make([]int64, nb)
	for b := range w {
		w[b] = c[1<<b] - c[0]
	}
	for r := range c {
		x := c[0]
		for b := range w {
			if r>>b&1 != 0 {
				x += w[b]
			}
		}
		if x != c[r] {
			return nil, false
		}
	}
	var out []digit
	for b := 0; b < nb; {
		if w[b] == 0 {
			b++
			continue
		}
		dg := digit{shift: b, bits: 1, w: w[b]}
		for b+dg.bits < nb && w[b+dg.bits] == w[b]<<dg.bits {
			dg.bits++
		}
		out = append(out, dg)
		b += dg.bits
	}
	return out, true
}

// cast is the conversion of x (printed for a context of precedence need).
func cast(from, to ir.DType, x func(need int) string) (string, int) {
	fn := func(name string) (string, int) { return name + "(" + x(0) + ")", precAtom }
	c := func(t string) (string, int) { return "(" + t + ")" + x(precUnary), precUnary }
	switch {
	case from == to:
		return x(precAtom), precAtom
	case from.K == ir.KF32 && to.K == ir.KBF16:
		return fn("fp8g_f32_to_bf16")
	case from.K == ir.KF32 && to.K == ir.KFP8:
		return fn("fp8g_to_" + to.Fmt.Name)
	case from.K == ir.KF32 && to.K == ir.KI32:
		return fn("fp8g_f32_to_i32")
	case from.K == ir.KBF16 && to.K == ir.KF32:
		return fn("fp8g_bf16_to_f32")
	case from.K == ir.KFP8 && to.K == ir.KF32:
		return fn("fp8g_from_" + from.Fmt.Name)
	case from.K == ir.KI32 && to.K == ir.KF32:
		return c("float")
	case from.K == ir.KI32 && to.K == ir.KI64:
		return c("long long")
	case from.K == ir.KI32 && to.K == ir.KE8M0:
		return c("uint8_t")
	case from.K == ir.KI64 && to.K == ir.KI32, from.K == ir.KBool && to.K == ir.KI32:
		return c("int")
	}
	panic(fmt.Sprintf("BUG: no C cast from %v to %v", from, to))
}

func (e *emitter) shfl(x, mask string) string {
	if e.t.Vendor == target.NVIDIA {
		return "__shfl_xor_sync(0xffffffffu, " + x + ", " + mask + ")"
	}
	return "__shfl_xor(" + x + ", " + mask + ")"
}

// fold is the C combining expression of a reduction whose operands are
// x's elements (or, for an LDS fold, what x itself reads).
func (e *emitter) fold(k ir.ReduceKind, d ir.DType, a, b string, x *ir.Value) string {
	switch {
	case k == ir.RSum:
		return a + " + " + b
	case d.K == ir.KF32:
		fn, _ := e.maxMin(map[ir.ReduceKind]ir.Op{ir.RMax: ir.OpMax, ir.RMin: ir.OpMin}[k], x, x)
		return fn + "(" + a + ", " + b + ")"
	case k == ir.RMax:
		return "max(" + a + ", " + b + ")"
	}
	return "min(" + a + ", " + b + ")"
}

// maxMin names the f32 max or min of operands x and y, and whether to
// pass them swapped. Where neither is ever −0 (ir.NoNegZero) equal
// operands have equal bits: the hardware's max or min where the target's
// keeps maxNum's NaN rule; else a compare and a select, first operand one
// that is never NaN (ir.NoNaN), or the prelude's NaN tests and a compare.
// Otherwise the prelude's, which orders +0 above −0.
func (e *emitter) maxMin(op ir.Op, x, y *ir.Value) (string, bool) {
	name := func(max, min string) string { return map[ir.Op]string{ir.OpMax: max, ir.OpMin: min}[op] }
	switch {
	case !e.noNegZero[x] || !e.noNegZero[y]:
		return name("fp8g_maxf", "fp8g_minf"), false
	case e.t.HWCvt:
		return name("fmaxf", "fminf"), false
	case e.noNaN[x] || e.noNaN[y]:
		return name("fp8g_maxf_nn", "fp8g_minf_nn"), !e.noNaN[x]
	}
	return name("fp8g_maxf_nz", "fp8g_minf_nz"), false
}
