// Package emit prints a lowered kernel — the lanes program of package
// lower — as HIP C++ for one target: AMD targets include
// <hip/hip_runtime.h>, or with FP8G_FREESTANDING defined stand on clang's
// builtins alone; NVIDIA targets get a small prelude of their own and
// compile with nvcc.
//
// The emitter decides nothing about where data lives: every index, owner
// test, register map, shuffle and LDS address is already an op of the
// lanes program, which the interpreter runs too. It only chooses how the
// program reads: a uniform or one-register value is a scalar, an array of
// registers is a C array filled by an unrolled loop, per-register constants
// and register maps print as short expressions of the register index r, an
// unnamed value used once is written into its user's expression, names come
// from the DSL, and a comment gives the Go source line of each DSL
// statement. Output is deterministic: the same function always prints the
// same text.
package emit

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/fp8gen/fp8gen/fp8"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/target"
)

// Kernel is emitted source with what a launcher needs to know.
type Kernel struct {
	Name     string
	Source   string
	Threads  int
	LDSBytes int  // shared memory the launch must provide
	Dynamic  bool // LDS is dynamic (NVIDIA above 48 KiB): pass LDSBytes at launch
}

// Emit writes f, lowered, as a translation unit for its target. comment is
// the line naming the op and schedule.
func Emit(f *ir.Func, comment string) (*Kernel, error) {
	u, err := Unit([]*ir.Func{f}, []string{comment})
	if err != nil {
		return nil, err
	}
	k := u.Kernels[0]
	k.Source = u.Source
	return &k, nil
}

// Units holds several kernels of one target in one translation unit, with
// the prelude written once.
type Units struct {
	Source  string
	Kernels []Kernel // Source left empty
}

// Unit writes the kernels fs (all for one target) into one source.
func Unit(fs []*ir.Func, comments []string) (*Units, error) {
	var (
		bodies  []string
		u       = &Units{}
		helpers = map[string]string{}
		formats = map[string]*fp8.Format{}
	)
	seen := map[string]bool{}
	for i, f := range fs {
		if f.Target != fs[0].Target {
			return nil, fmt.Errorf("emit: kernels for %s and %s in one unit", fs[0].Target.Name, f.Target.Name)
		}
		if seen[f.EntryName()] {
			return nil, fmt.Errorf("emit: two kernels named %s in one unit", f.EntryName())
		}
		seen[f.EntryName()] = true
		e := newEmitter(f, helpers)
		k, body, err := e.kernel(comments[i])
		if err != nil {
			return nil, err
		}
		f.Walk(func(v *ir.Value) {
			if fm := v.Type.DType.Fmt; fm != nil {
				formats[fm.Name] = fm
			}
		})
		bodies = append(bodies, body)
		u.Kernels = append(u.Kernels, *k)
	}
	var code strings.Builder
	for _, n := range slices.Sorted(maps.Keys(helpers)) {
		code.WriteString(helpers[n])
	}
	for _, b := range bodies {
		code.WriteString(b)
	}
	u.Source = prelude(fs[0].Target, sortedFormats(formats), code.String()) + code.String()
	return u, nil
}

func sortedFormats(m map[string]*fp8.Format) []*fp8.Format {
	var out []*fp8.Format
	for _, n := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[n])
	}
	return out
}

type emitter struct {
	f       *ir.Func
	t       *target.Target
	body    strings.Builder
	ind     string
	names   map[*ir.Value]string
	taken   map[string]int  // names made from each base so far
	used    map[string]bool // every name given, so that "h" + 2 is not a parameter's "h2"
	inline  map[*ir.Value]bool
	uses    map[*ir.Value]int
	written map[*ir.Value]bool // pointer arguments some store, atomic, signal or wait writes through
	last    ir.Pos
	pending ir.Pos // a source position to print before the next line
	// tables hold per-register constants that are no short expression of
	// r, by initializer.
	tables      map[string]string
	tableDecls  []string
	evictFirst  bool // a load reads under the evict-first policy (vecRead)
	asyncCopies bool // a stage copies with cp.async (ldsCopy): its waits are printed
	// helpers are device functions the body needs (atomics), by name.
	helpers map[string]string
	// noNegZero and noNaN hold the f32 values never −0 and never NaN
	// (see maxMin).
	noNegZero, noNaN map[*ir.Value]bool
	// user is a value's last user (its only one where uses says 1).
	user map[*ir.Value]*ir.Value
	// printed records each value the source shows, as a statement or
	// inside an expression.
	printed map[*ir.Value]bool
}

// Printed lists the values of a lowered kernel that its source shows, as a
// statement or inside another's expression: the tests hold it to the
// values the interpreter executes.
func Printed(f *ir.Func) ([]*ir.Value, error) {
	e := newEmitter(f, map[string]string{})
	if _, _, err := e.kernel(""); err != nil {
		return nil, err
	}
	var out []*ir.Value
	f.Walk(func(v *ir.Value) {
		if e.printed[v] {
			out = append(out, v)
		}
	})
	return out, nil
}

func newEmitter(f *ir.Func, helpers map[string]string) *emitter {
	e := &emitter{f: f, t: f.Target, names: map[*ir.Value]string{}, taken: map[string]int{}, used: map[string]bool{}, inline: map[*ir.Value]bool{},
		uses: f.Uses(), written: map[*ir.Value]bool{}, helpers: helpers, tables: map[string]string{}, printed: map[*ir.Value]bool{},
		noNegZero: f.NoNegZero()}
	if !f.Target.HWCvt { // where max.f32 is printed, NaN needs no proof
		e.noNaN = f.NoNaN()
	}
	for _, r := range []string{"tid", "lds", "r", "rv", "w", "k", "h", "j", "off", "q2"} { // the loops' own names
		e.taken[r], e.used[r] = 1, true
	}
	return e
}

func (e *emitter) line(format string, args ...any) {
	if e.pending.File != "" {
		fmt.Fprintf(&e.body, "%s// %s:%d\n", e.ind, e.pending.File, e.pending.Line)
		e.pending = ir.Pos{}
	}
	e.body.WriteString(e.ind)
	fmt.Fprintf(&e.body, format, args...)
	e.body.WriteByte('\n')
}

// ctype is the C type of d (the dtype table's, a pointer's with a star).
func ctype(d ir.DType) string {
	if d.K == ir.KPtr {
		return ctype(d.Elem()) + "*"
	}
	if c := d.CType(); c != "" {
		return c
	}
	panic("BUG: no C type for " + d.String())
}

// root is the argument a pointer value derives from.
func root(v *ir.Value) *ir.Value {
	for v.Op != ir.OpParam {
		next := v
		for _, a := range v.Args {
			if a.Type.DType.K == ir.KPtr {
				next = a
				break
			}
		}
		if next == v {
			panic("BUG: pointer " + v.LongString() + " without an argument")
		}
		v = next
	}
	return v
}

// typeOf is the C type of v's elements: pointers into arguments no store
// writes through are const.
func (e *emitter) typeOf(v *ir.Value) string {
	if v.Type.DType.K == ir.KPtr && !e.written[root(v)] {
		return "const " + ctype(v.Type.DType)
	}
	return ctype(v.Type.DType)
}

// kernel writes f's comment, signature and body.
func (e *emitter) kernel(comment string) (*Kernel, string, error) {
	f := e.f
	if f.Phase != ir.PhaseLanes {
		return nil, "", fmt.Errorf("emit %s: the kernel is not lowered", f.Name)
	}
	k := &Kernel{Name: f.EntryName(), Threads: f.Threads, LDSBytes: f.LDSBytes}
	dyn := f.LDSBytes > 48<<10 && e.t.Vendor == target.NVIDIA
	k.Dynamic = dyn
	f.Walk(func(v *ir.Value) {
		// A counter waited on too: fp8g_wait takes int* (nvcc refused a
		// const one).
		if v.Op == ir.OpStore || v.Op == ir.OpAtomic || v.Op == ir.OpSignal || v.Op == ir.OpWait {
			e.written[root(v.Ptr())] = true
		}
	})
	e.plan()
	var params []string
	for _, p := range f.Params {
		n := e.name(p)
		if p.Op == ir.OpParam {
			params = append(params, fmt.Sprintf("%s __restrict__ %s", e.typeOf(p), n))
		} else {
			params = append(params, ctype(p.Type.DType)+" "+n)
		}
	}
	e.ind = "  "
	if err := e.block(f.Entry); err != nil {
		return nil, "", err
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n// %s\n", comment) // one line: what a reader greps for
	sb.WriteString(wrapList(fmt.Sprintf("extern \"C\" __global__ void __launch_bounds__(%d) %s(", f.Threads, f.EntryName()), params, ") {"))
	if f.LDSBytes > 0 {
		if dyn {
			sb.WriteString("  extern __shared__ __align__(16) unsigned char lds[];\n")
		} else {
			fmt.Fprintf(&sb, "  __shared__ __align__(16) unsigned char lds[%d];\n", f.LDSBytes)
		}
	}
	if e.t.PDL {
		// Launched to overlap the kernel before it in the stream: wait for
		// that grid and its writes (a no-op when launched plainly). No
		// early griddepcontrol.launch_dependents: the next grid starts as
		// this one ends, which the H200 measured as fast or faster (an
		// early trigger cost grouped_colwise_cast 3% at T=65536).
		sb.WriteString("  asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");\n")
	}
	uses := false
	f.Walk(func(v *ir.Value) { uses = uses || v.Op == ir.OpTid })
	if uses {
		sb.WriteString("  const int tid = threadIdx.x;\n")
	}
	for _, t := range e.tableDecls {
		sb.WriteString("  " + t + "\n")
	}
	if e.evictFirst {
		sb.WriteString("  const unsigned long long fp8g_evict_first = fp8g_evict_first_policy();\n")
	}
	sb.WriteString(e.body.String())
	sb.WriteString("}\n")
	return k, sb.String(), nil
}

// maxLine is the longest line the emitter wraps a list to.
const maxLine = 120

// wrapList prints head, the items joined by ", " and tail on one line
// where that fits maxLine; else head alone, then the items packed into
// lines of at most maxLine indented four spaces, tail after the last.
func wrapList(head string, items []string, tail string) string {
	if one := head + strings.Join(items, ", ") + tail; len(one) <= maxLine {
		return one + "\n"
	}
	var sb strings.Builder
	sb.WriteString(head + "\n")
	line := "   "
	for i, it := range items {
		sep := ","
		if i == len(items)-1 {
			sep = tail
		}
		if len(line)+1+len(it)+len(sep) > maxLine && line != "   " {
			sb.WriteString(line + "\n")
			line = "   "
		}
		line += " " + it + sep
	}
	sb.WriteString(line + "\n")
	return sb.String()
}

// atom reports whether v prints as an expression wherever it is used.
func atom(v *ir.Value) bool { return cRules[v.Op].atom }

// inlinable reports whether v, used once, may be written into its user.
func inlinable(v *ir.Value) bool {
	if in := cRules[v.Op].inline; in != 0 {
		return in > 0
	}
	return v.Op.IsElementwise() && v.Op.Effect() == 0 && v.Op.HasResult()
}

// cheap reports whether v is index arithmetic on per-register constants
// and per-lane scalars, a few ops deep: printed again at each use rather
// than kept in an array, as a compiler recomputes it best from its parts
// (an array of them lives across the kernel and costs registers).
func cheap(v *ir.Value, depth int) bool {
	if v.Op == ir.OpRegConst || v.Type.Regs <= 1 {
		return true
	}
	if depth == 0 || !inlinable(v) || v.Op == ir.OpGatherRegs {
		return false
	}
	switch d := v.Type.DType; {
	case d.IsInt():
		if !cRules[v.Op].cheap {
			return false
		}
	case d.K == ir.KPtr:
		if v.Op != ir.OpPtrAdd {
			return false
		}
	default:
		return false
	}
	for _, a := range v.Args {
		if !cheap(a, depth-1) {
			return false
		}
	}
	return true
}

// plan decides which values print inline and names the rest.
func (e *emitter) plan() {
	user := map[*ir.Value]*ir.Value{}
	e.f.Walk(func(v *ir.Value) {
		for _, a := range v.Args {
			user[a] = v
		}
	})
	e.user = user
	e.f.Walk(func(v *ir.Value) {
		switch {
		case atom(v), v.Type.Regs > 1 && cheap(v, 3), v.Op == ir.OpSplat && e.uses[v] == 1:
			// Index arithmetic prints at each use even where the DSL named
			// it: an array of it would live in registers across the kernel.
			e.inline[v] = true
		case e.pairedCast(v):
			// Printed as a statement, two registers a conversion.
		case inlinable(v) && v.Name == "" && e.uses[v] == 1:
			u := user[v]
			// A scalar inside index arithmetic printed at each use gets a name.
			e.inline[v] = u.Block == v.Block && u.Op != ir.OpYield &&
				!(v.Type.Regs <= 1 && u.Type.Regs > 1 && cheap(u, 3))
		}
	})
}

// pairedCast reports whether v is a cast of f32 registers to fp8 that the
// target's cvt converts two at a time (cvt.rn.satfinite takes pairs): it
// is printed so, never inline, where a register count is even.
func (e *emitter) pairedCast(v *ir.Value) bool {
	to := v.Type.DType
	return e.t.HWCvt && v.Op == ir.OpCast && to.K == ir.KFP8 && !to.Fmt.FNUZ &&
		v.Args[0].Type.DType.K == ir.KF32 && v.Type.Regs >= 2 && v.Type.Regs%2 == 0
}

// pairStride is the distance of the registers a paired cast converts
// together: that at which its one user, a vector store, packs registers,
// so that each pair lands in one vector as a half of it; else 1.
func (e *emitter) pairStride(v *ir.Value) int {
	u := e.user[v]
	if e.uses[v] != 1 || u == nil || (u.Op != ir.OpStore && u.Op != ir.OpLDSStore) || u.Data() != v || u.Mem().Vec < 2 {
		return 1
	}
	if s := u.Mem().RegStride(); v.Type.Regs%(2*s) == 0 {
		return s
	}
	return 1
}

// name is v's C identifier, made once from its name or its op.
func (e *emitter) name(v *ir.Value) string {
	if n, ok := e.names[v]; ok {
		return n
	}
	base := ident(v.Name)
	if v.Op == ir.OpParam || v.Op == ir.OpSize {
		base = v.ArgName()
	}
	if base == "" {
		// op switch: an unnamed value is named for what it holds, a choice
		// of the printed text alone.
		switch v.Op {
		case ir.OpLoad, ir.OpPtrAdd:
			base = ident(root(v.Args[0]).ArgName())
			if v.Op == ir.OpPtrAdd {
				base += "_p"
			}
		case ir.OpLoopVar:
			base = "i"
			if v.Index() > 0 {
				base = "acc"
			}
		case ir.OpLDSLoad, ir.OpLDSReduce:
			base = "shared"
		case ir.OpAtomic:
			base = "old"
		default:
			if v.Type.DType == ir.Bool {
				base = "m"
			} else {
				base = "t"
			}
		}
	}
	n, c := base, e.taken[base]
	if c > 0 || base == "t" || base == "m" {
		n = fmt.Sprintf("%s%d", base, c)
	}
	for e.used[n] {
		c++
		n = fmt.Sprintf("%s%d", base, c)
	}
	e.taken[base] = c + 1
	e.used[n] = true
	e.names[v] = n
	return n
}

// ident keeps the characters of a C identifier.
func ident(s string) string {
	var sb strings.Builder
	for i, c := range s {
		switch {
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			sb.WriteRune(c)
		case c >= '0' && c <= '9':
			if i == 0 {
				sb.WriteByte('_')
			}
			sb.WriteRune(c)
		}
	}
	return sb.String()
}

func (e *emitter) block(b *ir.Block) error {
	for _, v := range b.Values {
		if v.Op == ir.OpParam || v.Op == ir.OpSize {
			e.printed[v] = true // the signature
			continue
		}
		if e.inline[v] {
			continue
		}
		if v.Op.Removable() && e.uses[v] == 0 {
			continue
		}
		if v.Pos.File != "" && v.Pos != e.last {
			e.pending, e.last = v.Pos, v.Pos
		}
		if err := e.value(v); err != nil {
			return err
		}
	}
	return nil
}

// ref is operand a at register r, safe to embed as an operand of a unary
// operator; top is the same where nothing surrounds it.
func (e *emitter) ref(a *ir.Value, r string) string { return e.val(a, r, precUnary) }
func (e *emitter) top(a *ir.Value, r string) string { return e.val(a, r, 0) }

// wrap parenthesizes s unless it is one term already.
func wrap(s string) string {
	depth := 0
	for i, c := range s {
		switch c {
		case '(', '[':
			depth++
		case ')', ']':
			depth--
		case ' ':
			if depth == 0 {
				return "(" + s + ")"
			}
		case '-':
			if i == 0 {
				return "(" + s + ")"
			}
		}
	}
	return s
}

// reg is register index r plus k, folded where r is a number.
func reg(r string, k int) string {
	if n, err := strconv.Atoi(r); err == nil {
		return strconv.Itoa(n + k)
	}
	if k == 0 {
		return r
	}
	return fmt.Sprintf("%s + %d", r, k)
}

// each writes body(r) for every register of an n-register value.
func (e *emitter) each(n int, body func(r string) string) {
	if n <= 1 {
		e.line("%s", body("0"))
		return
	}
	e.line("#pragma unroll")
	e.line("for (int r = 0; r < %d; ++r) %s", n, body("r"))
}

// decl declares v: a scalar with its value, or an array.
func (e *emitter) decl(v *ir.Value, init string) {
	t := e.typeOf(v)
	if v.Type.Regs > 1 {
		e.line("%s %s[%d];", t, e.name(v), v.Type.Regs)
		if init != "" {
			e.each(v.Type.Regs, func(r string) string { return fmt.Sprintf("%s[%s] = %s;", e.name(v), r, init) })
		}
		return
	}
	if init == "" {
		e.line("%s %s;", t, e.name(v))
		return
	}
	e.line("%s %s = %s;", t, e.name(v), init)
}

// dst is v at register r, as an assignment target.
func (e *emitter) dst(v *ir.Value, r string) string {
	if v.Type.Regs > 1 {
		return e.name(v) + "[" + r + "]"
	}
	return e.name(v)
}

// stmtRules print the ops that are statements of their own (accesses,
// control flow, cross-lane folds); every other op is an expression
// (cRules), declared where it is not inlined. Filled in init: loops and
// ifs print blocks, which read it.
var stmtRules ir.Rules[func(e *emitter, v *ir.Value) error]

func init() {
	stmtRules = ir.Rules[func(e *emitter, v *ir.Value) error]{
		ir.OpLoad:       stmt((*emitter).load),
		ir.OpStore:      stmt((*emitter).store),
		ir.OpAtomic:     stmt((*emitter).atomic),
		ir.OpReduceRegs: stmt((*emitter).reduceRegs),
		ir.OpButterfly:  stmt((*emitter).butterfly),
		ir.OpLDSStore:   stmt((*emitter).ldsStore),
		ir.OpLDSLoad:    stmt((*emitter).ldsLoad),
		ir.OpLDSReduce:  stmt((*emitter).ldsReduce),
		ir.OpLDSCopy:    stmt((*emitter).ldsCopy),
		ir.OpFor:        (*emitter).loop,
		ir.OpYield:      func(*emitter, *ir.Value) error { return nil }, // written by loop
		ir.OpBarrier:    stmt(func(e *emitter, _ *ir.Value) { e.line("__syncthreads();") }),
		ir.OpSignal: stmt(func(e *emitter, v *ir.Value) {
			if e.t.Vendor == target.AMD {
				e.line("__builtin_amdgcn_fence(__ATOMIC_RELEASE, \"agent\");")
			}
			e.line("__syncthreads();")
			e.line("if (threadIdx.x == 0) %s(%s, %s);", e.syncFn("signal"), e.top(v.Args[0], "0"), e.top(v.Args[1], "0"))
		}),
		ir.OpWait: stmt(func(e *emitter, v *ir.Value) {
			e.line("if (threadIdx.x == 0) %s(%s, %s);", e.syncFn("wait"), e.top(v.Args[0], "0"), e.top(v.Args[1], "0"))
			e.line("__syncthreads();")
		}),
		ir.OpIf: func(e *emitter, v *ir.Value) error {
			e.line("if (%s) {", e.top(v.Args[0], "0"))
			saved := e.ind
			e.ind += "  "
			if err := e.block(v.Body); err != nil {
				return err
			}
			e.ind = saved
			e.line("}")
			return nil
		},
		ir.OpShflXor: stmt(func(e *emitter, v *ir.Value) {
			e.decl(v, "")
			e.each(v.Type.Regs, func(r string) string {
				return fmt.Sprintf("%s = %s;", e.dst(v, r), e.shfl(e.top(v.Args[0], r), strconv.Itoa(v.Lane())))
			})
		}),
		ir.OpAsyncWait: stmt(func(e *emitter, _ *ir.Value) {
			if e.t.Vendor == target.NVIDIA && e.asyncCopies {
				e.line(`asm volatile("cp.async.wait_all;" ::: "memory");`)
			}
		}),
	}
}

// stmt is a statement rule that cannot fail.
func stmt(f func(e *emitter, v *ir.Value)) func(*emitter, *ir.Value) error {
	return func(e *emitter, v *ir.Value) error {
		f(e, v)
		return nil
	}
}

func (e *emitter) value(v *ir.Value) error {
	e.printed[v] = true
	if v.Body != nil {
		for _, x := range v.Body.Vars {
			e.printed[x] = true
		}
	}
	if r := stmtRules.Of(v.Op); r != nil {
		return r(e, v)
	}
	if !inlinable(v) {
		panic("BUG: emit has no case for " + v.Op.Name())
	}
	if e.pairedCast(v) {
		e.decl(v, "")
		s := e.pairStride(v)
		e.stridedVectors(v.Type.Regs, 2, s, func(r string) {
			e.line("const uint16_t q2 = fp8g_to_%s_x2(%s, %s);", v.Type.DType.Fmt.Name, e.top(v.Args[0], r), e.top(v.Args[0], reg(r, s)))
			e.line("%s = (uint8_t)q2;", e.dst(v, r))
			e.line("%s = (uint8_t)(q2 >> 8);", e.dst(v, reg(r, s)))
		})
	} else if v.Type.Regs > 1 {
		e.decl(v, "")
		e.each(v.Type.Regs, func(r string) string { return fmt.Sprintf("%s[%s] = %s;", e.name(v), r, e.expr(v, r)) })
	} else if v.Type.DType.K == ir.KPtr { // typeOf says what it points to
		e.line("%s const %s = %s;", e.typeOf(v), e.name(v), e.expr(v, "0"))
	} else {
		e.line("const %s %s = %s;", e.typeOf(v), e.name(v), e.expr(v, "0"))
	}
	return nil
}
