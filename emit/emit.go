// Package emit writes a lowered (thread-level) kernel as HIP C++ for one
// target: AMD targets include <hip/hip_runtime.h>; NVIDIA targets get a small
// prelude of their own and compile with nvcc.
//
// Each tile value becomes a register array of the lane (T vN[R]), each
// scalar a plain variable; loops over registers are unrolled by the compiler
// so that every index is a constant. Element coordinates come from the
// layout: a lane's index along each base dim (tcK_D, computed once at the
// top) plus constants per register. Output is deterministic: the same
// function always prints the same text.
package emit

import (
	"fmt"
	"maps"
	"slices"
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
	for i, f := range fs {
		if f.Target != fs[0].Target {
			return nil, fmt.Errorf("emit: kernels for %s and %s in one unit", fs[0].Target.Name, f.Target.Name)
		}
		e := &emitter{f: f, t: f.Target, tc: map[string]int{}, helpers: helpers}
		k, body, err := e.kernel(comments[i])
		if err != nil {
			return nil, err
		}
		for _, fm := range e.formats() {
			formats[fm.Name] = fm
		}
		bodies = append(bodies, body)
		u.Kernels = append(u.Kernels, *k)
	}
	var sb strings.Builder
	sb.WriteString(prelude(fs[0].Target, sortedFormats(formats)))
	for _, n := range slices.Sorted(maps.Keys(helpers)) {
		sb.WriteString(helpers[n])
	}
	for _, b := range bodies {
		sb.WriteString(b)
	}
	u.Source = sb.String()
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
	f    *ir.Func
	t    *target.Target
	body strings.Builder
	ind  string
	tc   map[string]int // thread-coordinate sets, by key
	tcs  []*ir.Layout
	dyn  bool
	// helpers are device functions the body needs (atomics), by name.
	helpers map[string]string
}

func (e *emitter) line(format string, args ...any) {
	e.body.WriteString(e.ind)
	fmt.Fprintf(&e.body, format, args...)
	e.body.WriteByte('\n')
}

func ctype(d ir.DType) string {
	switch d.K {
	case ir.KBool:
		return "bool"
	case ir.KI32:
		return "int"
	case ir.KI64:
		return "long long"
	case ir.KF32:
		return "float"
	case ir.KBF16:
		return "uint16_t"
	case ir.KFP8:
		return "uint8_t"
	case ir.KPtr:
		return ctype(d.Elem()) + "*"
	}
	panic("BUG: no C type for " + d.String())
}

// kernel writes f's comment, signature and body.
func (e *emitter) kernel(comment string) (*Kernel, string, error) {
	f := e.f
	if f.Threads == 0 {
		return nil, "", fmt.Errorf("emit %s: the kernel is not lowered", f.Name)
	}
	k := &Kernel{Name: f.Name, Threads: f.Threads, LDSBytes: f.LDSBytes}
	if f.LDSBytes > 48<<10 && e.t.Vendor == target.NVIDIA {
		k.Dynamic, e.dyn = true, true
	}
	stored := map[*ir.Value]bool{}
	f.Walk(func(v *ir.Value) {
		if v.Op == ir.OpStore || v.Op == ir.OpAtomicMax || v.Op == ir.OpAtomicAdd {
			for p := v.Args[0]; ; p = p.Args[0] {
				if p.Op == ir.OpParam {
					stored[p] = true
					break
				}
				if len(p.Args) == 0 {
					break
				}
			}
		}
	})
	var params []string
	for _, p := range f.Params {
		switch p.Op {
		case ir.OpParam:
			c := ""
			if !stored[p] {
				c = "const "
			}
			params = append(params, fmt.Sprintf("%s%s* __restrict__ %s", c, ctype(p.Type.DType.Elem()), p.Name))
		case ir.OpSize:
			params = append(params, "int "+p.Name)
		}
	}
	e.ind = "  "
	if err := e.block(f.Entry); err != nil {
		return nil, "", err
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n// %s\n", comment)
	fmt.Fprintf(&sb, "extern \"C\" __global__ void __launch_bounds__(%d) %s(%s) {\n", f.Threads, f.Name, strings.Join(params, ", "))
	if f.LDSBytes > 0 {
		if e.dyn {
			sb.WriteString("  extern __shared__ __align__(16) unsigned char lds[];\n")
		} else {
			fmt.Fprintf(&sb, "  __shared__ __align__(16) unsigned char lds[%d];\n", f.LDSBytes)
		}
	}
	sb.WriteString("  const int tid = threadIdx.x;\n")
	for i, l := range e.tcs {
		w := e.t.WaveSize
		lane, wave := fmt.Sprintf("(tid %% %d)", w), fmt.Sprintf("(tid / %d)", w)
		ls, ws := 1, 1
		for _, d := range l.Order {
			fmt.Fprintf(&sb, "  const int tc%d_%d = (%s / %d %% %d) * %d + %s / %d %% %d;\n",
				i, d, wave, ws, l.WPB[d], l.TPW[d], lane, ls, l.TPW[d])
			ls *= l.TPW[d]
			ws *= l.WPB[d]
		}
	}
	sb.WriteString(e.body.String())
	sb.WriteString("}\n")
	return k, sb.String(), nil
}

func (e *emitter) formats() []*fp8.Format {
	seen := map[string]*fp8.Format{}
	e.f.Walk(func(v *ir.Value) {
		if v.Type.DType.Fmt != nil {
			seen[v.Type.DType.Fmt.Name] = v.Type.DType.Fmt
		}
	})
	return sortedFormats(seen)
}

// tcIndex names the thread coordinates of a layout (they depend only on
// lanes and waves per dim and the order).
func (e *emitter) tcIndex(l *ir.Layout) int {
	key := fmt.Sprint(l.TPW, l.WPB, l.Order)
	if i, ok := e.tc[key]; ok {
		return i
	}
	e.tc[key] = len(e.tcs)
	e.tcs = append(e.tcs, l)
	return len(e.tcs) - 1
}

func (e *emitter) block(b *ir.Block) error {
	for _, v := range b.Values {
		if err := e.value(v); err != nil {
			return err
		}
	}
	return nil
}

func regsOf(v *ir.Value) int {
	if v.Type.Rank() == 0 {
		return 1
	}
	return v.Type.Layout.Regs(v.Type.Shape)
}

// decl declares v's register array (or scalar).
func (e *emitter) decl(v *ir.Value) {
	t := ctype(v.Type.DType)
	if v.Type.DType.K == ir.KPtr {
		t = e.ptrType(v)
	}
	if v.Type.Rank() == 0 {
		e.line("%s %v;", t, v)
		return
	}
	e.line("%s %v[%d];", t, v, regsOf(v))
}

// ref is operand a at register r ("r" for the loop variable).
func ref(a *ir.Value, r string) string {
	if a.Type.Rank() == 0 {
		return a.String()
	}
	return a.String() + "[" + r + "]"
}

// each emits body for every register r of v.
func (e *emitter) each(v *ir.Value, body string) {
	n := regsOf(v)
	if v.Type.Rank() == 0 {
		e.line("%s", strings.ReplaceAll(body, "[r]", ""))
		return
	}
	e.line("#pragma unroll")
	e.line("for (int r = 0; r < %d; ++r) %s", n, body)
}

func (e *emitter) value(v *ir.Value) error {
	switch v.Op {
	case ir.OpParam:
		e.line("%s %v = %s;", e.ptrType(v), v, v.Name)
	case ir.OpSize:
		e.line("const int %v = %s;", v, v.Name)
	case ir.OpProgramID:
		e.line("const int %v = blockIdx.%c;", v, "xyz"[v.Aux])
	case ir.OpNumPrograms:
		e.line("const int %v = gridDim.%c;", v, "xyz"[v.Aux])
	case ir.OpConst:
		e.line("const %s %v = %s;", ctype(v.Type.DType), v, literal(v))
	case ir.OpArange:
		e.decl(v)
		e.each(v, fmt.Sprintf("%v[r] = %s;", v, e.coord(v.Type, 0, "r")))
	case ir.OpSplat:
		e.decl(v)
		e.each(v, fmt.Sprintf("%v[r] = %s;", v, ref(v.Args[0], "0")))
	case ir.OpBroadcast, ir.OpExpandDims, ir.OpTrans:
		e.decl(v)
		e.remap(v)
	case ir.OpLoad:
		e.decl(v)
		e.load(v)
	case ir.OpStore, ir.OpAtomicMax, ir.OpAtomicAdd:
		e.store(v)
	case ir.OpFor:
		return e.loop(v)
	case ir.OpYield:
		// Written by loop.
	case ir.OpForResult:
		c := v.Args[0].Body.Vars[1+v.Aux]
		e.decl(v)
		e.each(v, fmt.Sprintf("%s = %s;", ref(v, "r"), ref(c, "r")))
	case ir.OpReduceLanes:
		e.decl(v)
		e.reduceLanes(v)
	case ir.OpReduceWave:
		e.decl(v)
		e.reduceWave(v)
	case ir.OpReduceWaves:
		e.decl(v)
		e.reduceWaves(v)
	case ir.OpLDSStore:
		e.ldsStore(v)
	case ir.OpLDSLoad:
		e.decl(v)
		e.ldsLoad(v)
	case ir.OpBarrier:
		e.line("__syncthreads();")
	case ir.OpReduce, ir.OpConvert:
		panic("BUG: " + v.Op.Name() + " reached the emitter unlowered")
	default:
		if !v.Op.IsElementwise() {
			panic("BUG: emit has no case for " + v.Op.Name())
		}
		if v.Type.Rank() == 0 {
			t := ctype(v.Type.DType)
			if v.Type.DType.K == ir.KPtr {
				t = e.ptrType(v)
			}
			e.line("%s %v = %s;", t, v, expr(v, "r"))
			return nil
		}
		e.decl(v)
		e.each(v, fmt.Sprintf("%v[r] = %s;", v, expr(v, "r")))
	}
	return nil
}

func literal(v *ir.Value) string {
	d := v.Type.DType
	switch d.K {
	case ir.KF32:
		return floatLit(float32(v.AuxF))
	case ir.KBool:
		if v.Aux != 0 {
			return "true"
		}
		return "false"
	case ir.KI64:
		return fmt.Sprintf("%dLL", v.Aux)
	case ir.KBF16:
		return fmt.Sprintf("(uint16_t)0x%04x", ir.F32ToBF16(float32(v.AuxF)))
	case ir.KFP8:
		return fmt.Sprintf("(uint8_t)0x%02x", d.Fmt.EncodeSat(float32(v.AuxF)))
	}
	return fmt.Sprint(v.Aux)
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

var fmtFn = map[ir.Op]string{ir.OpMax: "fp8g_maxf", ir.OpMin: "fp8g_minf"}
var cOp = map[ir.Op]string{
	ir.OpAdd: "+", ir.OpSub: "-", ir.OpMul: "*", ir.OpDiv: "/", ir.OpRem: "%",
	ir.OpLt: "<", ir.OpLe: "<=", ir.OpGt: ">", ir.OpGe: ">=", ir.OpEq: "==", ir.OpNe: "!=",
}

// expr is the C expression of an elementwise op at register r.
func expr(v *ir.Value, r string) string {
	a := func(i int) string { return ref(v.Args[i], r) }
	d := v.Args[0].Type.DType
	switch v.Op {
	case ir.OpAnd:
		if d.K == ir.KBool {
			return a(0) + " && " + a(1)
		}
		return a(0) + " & " + a(1)
	case ir.OpOr:
		if d.K == ir.KBool {
			return a(0) + " || " + a(1)
		}
		return a(0) + " | " + a(1)
	case ir.OpMax, ir.OpMin:
		if d.K == ir.KF32 {
			return fmt.Sprintf("%s(%s, %s)", fmtFn[v.Op], a(0), a(1))
		}
		return fmt.Sprintf("%s(%s, %s)", map[ir.Op]string{ir.OpMax: "max", ir.OpMin: "min"}[v.Op], a(0), a(1))
	case ir.OpAbs:
		if d.K == ir.KF32 {
			return "fp8g_absf(" + a(0) + ")"
		}
		return "abs(" + a(0) + ")"
	case ir.OpNeg:
		if d.K == ir.KF32 {
			return "fp8g_negf(" + a(0) + ")"
		}
		return "-" + a(0)
	case ir.OpRsqrt:
		return "1.0f / sqrtf(" + a(0) + ")"
	case ir.OpPow2Floor:
		return "fp8g_pow2_floor(" + a(0) + ")"
	case ir.OpCast:
		return cast(d, v.Type.DType, a(0))
	case ir.OpWhere:
		return fmt.Sprintf("%s ? %s : %s", a(0), a(1), a(2))
	case ir.OpPtrAdd:
		return a(0) + " + " + a(1)
	}
	if op, ok := cOp[v.Op]; ok {
		return a(0) + " " + op + " " + a(1)
	}
	panic("BUG: no C expression for " + v.Op.Name())
}

func cast(from, to ir.DType, x string) string {
	switch {
	case from == to:
		return x
	case from.K == ir.KF32 && to.K == ir.KBF16:
		return "fp8g_f32_to_bf16(" + x + ")"
	case from.K == ir.KF32 && to.K == ir.KFP8:
		return "fp8g_to_" + to.Fmt.Name + "(" + x + ")"
	case from.K == ir.KF32 && to.K == ir.KI32:
		return "fp8g_f32_to_i32(" + x + ")"
	case from.K == ir.KBF16 && to.K == ir.KF32:
		return "fp8g_bf16_to_f32(" + x + ")"
	case from.K == ir.KFP8 && to.K == ir.KF32:
		return "fp8g_from_" + from.Fmt.Name + "(" + x + ")"
	case from.K == ir.KI32 && to.K == ir.KF32:
		return "(float)" + x
	case from.K == ir.KI32 && to.K == ir.KI64:
		return "(long long)" + x
	case from.K == ir.KBool && to.K == ir.KI32:
		return "(int)" + x
	}
	panic(fmt.Sprintf("BUG: no C cast from %v to %v", from, to))
}
