package emit

import (
	"fmt"
	"math"
	"strings"

	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/target"
)

func f32bits(x float32) uint32 { return math.Float32bits(x) }

// raw is the unwrapped coordinate along base dim d of register r (a C
// expression: "r" in unrolled loops, or a number).
func (e *emitter) raw(t ir.Type, d int, r string) string {
	l := t.Layout
	_, spt, cover, regs, stride := l.Geometry(t.Shape)
	rc := r
	if stride[d] != 1 {
		rc = fmt.Sprintf("%s / %d", r, stride[d])
	}
	total := l.Regs(t.Shape)
	if regs[d] == 1 {
		rc = "0"
	} else if stride[d]*regs[d] != total {
		rc = fmt.Sprintf("(%s) %% %d", rc, regs[d])
	}
	var terms []string
	if rc != "0" {
		if regs[d] > spt[d] {
			if spt[d] == 1 {
				terms = append(terms, fmt.Sprintf("(%s) * %d", rc, cover[d]))
			} else {
				terms = append(terms, fmt.Sprintf("(%s) / %d * %d", rc, spt[d], cover[d]), fmt.Sprintf("(%s) %% %d", rc, spt[d]))
			}
		} else {
			terms = append(terms, "("+rc+")")
		}
	}
	if l.TPW[d]*l.WPB[d] > 1 {
		tc := fmt.Sprintf("tc%d_%d", e.tcIndex(l), d)
		if spt[d] > 1 {
			tc += fmt.Sprintf(" * %d", spt[d])
		}
		terms = append(terms, tc)
	}
	if len(terms) == 0 {
		return "0"
	}
	return strings.Join(terms, " + ")
}

// coord is the coordinate along tile axis a of register r.
func (e *emitter) coord(t ir.Type, a int, r string) string {
	d := t.Layout.BaseDim(a)
	extent, _, cover, _, _ := t.Layout.Geometry(t.Shape)
	x := e.raw(t, d, r)
	if extent[d] < cover[d] {
		return fmt.Sprintf("((%s) & %d)", x, extent[d]-1)
	}
	return x
}

// owner is a C condition: register r holds the first copy of its element
// along every base dim but skip (-1: none skipped).
func (e *emitter) owner(t ir.Type, r string, skip int) string {
	extent, _, cover, _, _ := t.Layout.Geometry(t.Shape)
	var c []string
	for d := range extent {
		if d != skip && extent[d] < cover[d] {
			c = append(c, fmt.Sprintf("%s < %d", e.raw(t, d, r), extent[d]))
		}
	}
	if len(c) == 0 {
		return "true"
	}
	return "(" + strings.Join(c, " && ") + ")"
}

// linear is the row-major index of register r's element in its tile.
func (e *emitter) linear(t ir.Type, r string) string {
	if t.Rank() == 0 {
		return "0"
	}
	s := e.coord(t, 0, r)
	if t.Rank() == 2 {
		s = fmt.Sprintf("(%s) * %d + %s", s, t.Shape[1], e.coord(t, 1, r))
	}
	return s
}

func (e *emitter) remap(v *ir.Value) {
	if v.Map == nil {
		panic("BUG: " + v.LongString() + " has no register map")
	}
	ident, same := true, true
	for r, s := range v.Map {
		ident = ident && r == s
		same = same && s == v.Map[0]
	}
	switch {
	case ident:
		e.each(v, fmt.Sprintf("%v[r] = %v[r];", v, v.Args[0]))
		return
	case same:
		e.each(v, fmt.Sprintf("%v[r] = %s;", v, ref(v.Args[0], fmt.Sprint(v.Map[0]))))
		return
	}
	for r, s := range v.Map {
		e.line("%v[%d] = %s;", v, r, ref(v.Args[0], fmt.Sprint(s)))
	}
}

// ptrType is the C type of a pointer value: const where the kernel never
// writes through its parameter.
func (e *emitter) ptrType(v *ir.Value) string {
	root := v
	for root.Op != ir.OpParam {
		root = root.Args[0]
	}
	c := "const "
	e.f.Walk(func(w *ir.Value) {
		if w.Op == ir.OpStore || w.Op == ir.OpAtomicMax || w.Op == ir.OpAtomicAdd {
			r := w.Args[0]
			for r.Op != ir.OpParam {
				r = r.Args[0]
			}
			if r == root {
				c = ""
			}
		}
	})
	return c + ctype(v.Type.DType)
}

// Vectors are moved as 32-bit words (or one 16-bit half) and taken apart
// with shifts: unions or arrays would live in scratch memory on AMD.

// word names component k of a vector of the given bytes.
func word(bytes, k int) string {
	if bytes <= 4 {
		return "w"
	}
	return "w." + string("xyzw"[k])
}

// unpack is element j of type d from vector w.
func unpack(d ir.DType, bytes, j int) string {
	size := d.Bytes()
	w := word(bytes, j*size/4)
	shift := (j * size % 4) * 8
	x := w
	if shift > 0 {
		x = fmt.Sprintf("(%s >> %d)", w, shift)
	}
	switch d.K {
	case ir.KF32:
		return "__uint_as_float(" + w + ")"
	case ir.KI32:
		return "(int)" + w
	}
	return fmt.Sprintf("(%s)%s", ctype(d), x)
}

// pack builds the vector of x's registers r+0 … as a C expression.
func pack(x *ir.Value, bytes int) string {
	d := x.Type.DType
	size := d.Bytes()
	n := bytes / size
	words := make([][]string, max(bytes/4, 1))
	for j := 0; j < n; j++ {
		e := fmt.Sprintf("%v[r + %d]", x, j)
		switch d.K {
		case ir.KF32:
			e = "__float_as_uint(" + e + ")"
		default:
			e = "(uint32_t)" + e
		}
		if shift := (j * size % 4) * 8; shift > 0 {
			e = fmt.Sprintf("(%s << %d)", e, shift)
		}
		k := j * size / 4
		words[k] = append(words[k], e)
	}
	var parts []string
	for _, w := range words {
		parts = append(parts, strings.Join(w, " | "))
	}
	switch {
	case bytes == 2:
		return "(uint16_t)(" + parts[0] + ")"
	case bytes == 4:
		return parts[0]
	case bytes == 8:
		return "make_uint2(" + strings.Join(parts, ", ") + ")"
	}
	return "make_uint4(" + strings.Join(parts, ", ") + ")"
}

func vecType(bytes int) string {
	switch bytes {
	case 2:
		return "uint16_t"
	case 4:
		return "uint32_t"
	case 8:
		return "uint2"
	case 16:
		return "uint4"
	}
	panic(fmt.Sprintf("BUG: vector of %d bytes", bytes))
}

func (e *emitter) load(v *ir.Value) {
	p, m, o := v.Args[0], v.Args[1], v.Args[2]
	if v.Type.Rank() == 0 {
		e.line("if (%[2]v) %[1]v = *%[3]v; else %[1]v = %[4]v;", v, m, p, o)
		return
	}
	vec := max(v.Vec, 1)
	n := regsOf(v)
	if vec == 1 {
		// if/else rather than ?: — a select of pointers makes clang keep
		// the arrays in scratch memory on AMD.
		e.each(v, fmt.Sprintf("if (%[2]v[r]) %[1]v[r] = *%[3]v[r]; else %[1]v[r] = %[4]v[r];", v, m, p, o))
		return
	}
	e.line("#pragma unroll")
	e.line("for (int r = 0; r < %d; r += %d) {", n, vec)
	var all []string
	for j := 0; j < vec; j++ {
		all = append(all, fmt.Sprintf("%v[r + %d]", m, j))
	}
	if v.UniformMask { // one mask bit stands for the vector
		all = all[:1]
	}
	e.line("  if (%s) {", strings.Join(all, " && "))
	vb := vec * v.Type.DType.Bytes()
	e.line("    const %s w = *(const %s*)%v[r];", vecType(vb), vecType(vb), p)
	for j := 0; j < vec; j++ {
		e.line("    %v[r + %d] = %s;", v, j, unpack(v.Type.DType, vb, j))
	}
	e.line("  } else {")
	for j := 0; j < vec; j++ {
		if v.UniformMask {
			e.line("    %[1]v[r + %[2]d] = %[3]v[r + %[2]d];", v, j, o)
		} else {
			e.line("    if (%[3]v[r + %[2]d]) %[1]v[r + %[2]d] = *%[4]v[r + %[2]d]; else %[1]v[r + %[2]d] = %[5]v[r + %[2]d];", v, j, m, p, o)
		}
	}
	e.line("  }")
	e.line("}")
}

func (e *emitter) store(v *ir.Value) {
	p, x, m := v.Args[0], v.Args[1], v.Args[2]
	write := func(r string) string {
		if v.Op == ir.OpStore {
			return fmt.Sprintf("*%s = %s;", ref(p, r), ref(x, r))
		}
		return fmt.Sprintf("%s(%s, %s);", e.atomicFn(v), ref(p, r), ref(x, r))
	}
	if p.Type.Rank() == 0 {
		e.line("if (tid == 0 && %v) %s", m, write("0"))
		return
	}
	t := p.Type
	vec := max(v.Vec, 1)
	if v.Op != ir.OpStore || vec == 1 {
		own := e.owner(t, "r", -1)
		cond := ref(m, "r")
		if own != "true" {
			cond += " && " + own
		}
		e.line("#pragma unroll")
		e.line("for (int r = 0; r < %d; ++r) if (%s) %s", regsOf(p), cond, write("r"))
		return
	}
	vb := vec * x.Type.DType.Bytes()
	vt := vecType(vb)
	e.line("#pragma unroll")
	e.line("for (int r = 0; r < %d; r += %d) {", regsOf(p), vec)
	var all []string
	for j := 0; j < vec; j++ {
		r := fmt.Sprintf("r + %d", j)
		c := ref(m, r)
		if own := e.owner(t, r, -1); own != "true" {
			c += " && " + own
		}
		all = append(all, c)
	}
	if v.UniformMask { // the first element's mask and owner stand for the vector
		e.line("  if (%s) *(%s*)%v[r] = %s;", all[0], vt, p, pack(x, vb))
		e.line("}")
		return
	}
	e.line("  if (%s) {", strings.Join(all, " && "))
	e.line("    *(%s*)%v[r] = %s;", vt, p, pack(x, vb))
	e.line("  } else {")
	for j := 0; j < vec; j++ {
		e.line("    if (%s) *%v[r + %d] = %v[r + %d];", all[j], p, j, x, j)
	}
	e.line("  }")
	e.line("}")
}

func (e *emitter) loop(v *ir.Value) error {
	iv, carried := v.ForVars()
	for i, c := range carried {
		e.decl(c)
		e.each(c, fmt.Sprintf("%s = %s;", ref(c, "r"), ref(v.Args[3+i], "r")))
	}
	e.line("for (int %v = %v; %v < %v; %v += %v) {", iv, v.Args[0], iv, v.Args[1], iv, v.Args[2])
	outer := e.ind
	e.ind += "  "
	if err := e.block(v.Body); err != nil {
		return err
	}
	y := v.Body.Values[len(v.Body.Values)-1]
	for i, c := range carried {
		if y.Args[i].Op == ir.OpLoopVar {
			return fmt.Errorf("emit %s: loop carries %v through unchanged; not supported", e.f.Name, c)
		}
		e.each(c, fmt.Sprintf("%s = %s;", ref(c, "r"), ref(y.Args[i], "r")))
	}
	e.ind = outer
	e.line("}")
	return nil
}

// fold is the C combining expression of a reduction.
func fold(k ir.ReduceKind, d ir.DType, a, b string) string {
	switch {
	case k == ir.RSum:
		return a + " + " + b
	case d.K == ir.KF32 && k == ir.RMax:
		return "fp8g_maxf(" + a + ", " + b + ")"
	case d.K == ir.KF32:
		return "fp8g_minf(" + a + ", " + b + ")"
	case k == ir.RMax:
		return "max(" + a + ", " + b + ")"
	}
	return "min(" + a + ", " + b + ")"
}

// reduceLanes folds each lane's registers along the reduced dim, in register order.
func (e *emitter) reduceLanes(v *ir.Value) {
	x := v.Args[0]
	xl, xs := x.Type.Layout, x.Type.Shape
	d := xl.BaseDim(int(v.Aux))
	n := xl.Regs(xs)
	groups := make([][]int, regsOf(v))
	for r := 0; r < n; r++ {
		j := xl.ReducedReg(xs, r, d)
		groups[j] = append(groups[j], r)
	}
	dst := func(j int) string { return ref(v, fmt.Sprint(j)) }
	for j, g := range groups {
		for i, r := range g {
			src := ref(x, fmt.Sprint(r))
			if v.Red == ir.RSum {
				if own := e.ownerAlong(x.Type, fmt.Sprint(r), d); own != "true" {
					src = fmt.Sprintf("(%s ? %s : 0)", own, src)
				}
			}
			if i == 0 {
				e.line("%s = %s;", dst(j), src)
			} else {
				e.line("%s = %s;", dst(j), fold(v.Red, v.Type.DType, dst(j), src))
			}
		}
	}
}

func (e *emitter) ownerAlong(t ir.Type, r string, d int) string {
	extent, _, cover, _, _ := t.Layout.Geometry(t.Shape)
	if extent[d] >= cover[d] {
		return "true"
	}
	return fmt.Sprintf("(%s < %d)", e.raw(t, d, r), extent[d])
}

func (e *emitter) shfl(x string) string {
	if e.t.Vendor == target.NVIDIA {
		return "__shfl_xor_sync(0xffffffffu, " + x + ", off)"
	}
	return "__shfl_xor(" + x + ", off)"
}

// reduceWave: butterfly shuffles across the lanes along the reduced dim.
func (e *emitter) reduceWave(v *ir.Value) {
	l := v.Type.Layout
	d := l.Drop[len(l.Drop)-1]
	s := l.LaneStride(d)
	e.each(v, fmt.Sprintf("%s = %s;", ref(v, "r"), ref(v.Args[0], "r")))
	e.line("#pragma unroll")
	e.line("for (int off = %d; off < %d; off <<= 1) {", s, s*l.TPW[d])
	e.ind += "  "
	e.each(v, fmt.Sprintf("%s = %s;", ref(v, "r"), fold(v.Red, v.Type.DType, ref(v, "r"), e.shfl(ref(v, "r")))))
	e.ind = e.ind[2:]
	e.line("}")
}

// reduceWaves: one partial per wave along the reduced dim through LDS, then
// every lane folds the partials in wave order.
func (e *emitter) reduceWaves(v *ir.Value) {
	l := v.Type.Layout
	d := l.Drop[len(l.Drop)-1]
	el := ctype(v.Type.DType)
	n := v.Type.Elems()
	tc := fmt.Sprintf("tc%d_%d", e.tcIndex(l), d)
	e.line("if (%s %% %d == 0) {", tc, l.TPW[d])
	e.ind += "  "
	own := e.owner(v.Type, "r", d)
	w := fmt.Sprintf("%s / %d", tc, l.TPW[d])
	body := fmt.Sprintf("((%s*)lds)[(%s) * %d + %s] = %s;", el, w, n, e.linear(v.Type, "r"), ref(v.Args[0], "r"))
	if own != "true" {
		body = fmt.Sprintf("if (%s) %s", own, body)
	}
	e.each(v, body)
	e.ind = e.ind[2:]
	e.line("}")
	e.line("__syncthreads();")
	e.each(v, fmt.Sprintf("%s = ((%s*)lds)[%s];", ref(v, "r"), el, e.linear(v.Type, "r")))
	e.line("#pragma unroll")
	e.line("for (int w = 1; w < %d; ++w) {", l.WPB[d])
	e.ind += "  "
	e.each(v, fmt.Sprintf("%s = %s;", ref(v, "r"), fold(v.Red, v.Type.DType, ref(v, "r"), fmt.Sprintf("((%s*)lds)[w * %d + %s]", el, n, e.linear(v.Type, "r")))))
	e.ind = e.ind[2:]
	e.line("}")
	e.line("__syncthreads();")
}

func (e *emitter) ldsIndex(t ir.Type, pitch int, r string) string {
	if t.Rank() == 2 {
		return fmt.Sprintf("(%s) * %d + %s", e.coord(t, 0, r), pitch, e.coord(t, 1, r))
	}
	return e.coord(t, 0, r)
}

func (e *emitter) ldsStore(v *ir.Value) {
	x := v.Args[0]
	el := ctype(x.Type.DType)
	own := e.owner(x.Type, "r", -1)
	if vec := max(v.Vec, 1); vec > 1 {
		vb := vec * x.Type.DType.Bytes()
		body := fmt.Sprintf("*(%s*)&((%s*)lds)[%s] = %s;", vecType(vb), el, e.ldsIndex(x.Type, v.Pitch, "r"), pack(x, vb))
		if own != "true" {
			body = "if (" + own + ") " + body
		}
		e.line("#pragma unroll")
		e.line("for (int r = 0; r < %d; r += %d) %s", regsOf(x), vec, body)
		return
	}
	body := fmt.Sprintf("((%s*)lds)[%s] = %v[r];", el, e.ldsIndex(x.Type, v.Pitch, "r"), x)
	if own != "true" {
		body = "if (" + own + ") " + body
	}
	e.line("#pragma unroll")
	e.line("for (int r = 0; r < %d; ++r) %s", regsOf(x), body)
}

func (e *emitter) ldsLoad(v *ir.Value) {
	el := ctype(v.Type.DType)
	if vec := max(v.Vec, 1); vec > 1 {
		vb := vec * v.Type.DType.Bytes()
		e.line("#pragma unroll")
		e.line("for (int r = 0; r < %d; r += %d) {", regsOf(v), vec)
		e.line("  const %s w = *(const %s*)&((%s*)lds)[%s];", vecType(vb), vecType(vb), el, e.ldsIndex(v.Type, v.Pitch, "r"))
		for j := 0; j < vec; j++ {
			e.line("  %v[r + %d] = %s;", v, j, unpack(v.Type.DType, vb, j))
		}
		e.line("}")
		return
	}
	e.each(v, fmt.Sprintf("%v[r] = ((%s*)lds)[%s];", v, el, e.ldsIndex(v.Type, v.Pitch, "r")))
}

// atomicFn names (and defines once) the device function of an atomic.
func (e *emitter) atomicFn(v *ir.Value) string {
	d := v.Args[1].Type.DType
	op := map[ir.Op]string{ir.OpAtomicMax: "max", ir.OpAtomicAdd: "add"}[v.Op]
	name := fmt.Sprintf("fp8g_atomic_%s_%s_%s_%s", op, d, v.Order, v.Scope)
	if _, ok := e.helpers[name]; ok {
		return name
	}
	var body string
	if e.t.Vendor == target.AMD {
		order := map[ir.MemOrder]string{ir.Relaxed: "__ATOMIC_RELAXED", ir.AcqRel: "__ATOMIC_ACQ_REL", ir.SeqCst: "__ATOMIC_SEQ_CST"}[v.Order]
		scope := map[ir.MemScope]string{ir.ScopeWorkgroup: "__HIP_MEMORY_SCOPE_WORKGROUP", ir.ScopeAgent: "__HIP_MEMORY_SCOPE_AGENT", ir.ScopeSystem: "__HIP_MEMORY_SCOPE_SYSTEM"}[v.Scope]
		switch {
		case op == "max" && d.K == ir.KF32:
			body = fmt.Sprintf(`  if (v != v) return;  // max ignores NaN
  // Float max as integer max: signed max orders non-negative floats, unsigned
  // min orders negative ones.
  if (!(__float_as_uint(v) >> 31)) __hip_atomic_fetch_max((int*)p, __float_as_int(v), %[1]s, %[2]s);
  else __hip_atomic_fetch_min((unsigned int*)p, __float_as_uint(v), %[1]s, %[2]s);`, order, scope)
		default:
			body = fmt.Sprintf("  __hip_atomic_fetch_%s(p, v, %s, %s);", op, order, scope)
		}
	} else {
		sem := map[ir.MemOrder]string{ir.Relaxed: "relaxed", ir.AcqRel: "acq_rel", ir.SeqCst: "acq_rel"}[v.Order]
		scope := map[ir.MemScope]string{ir.ScopeWorkgroup: "cta", ir.ScopeAgent: "gpu", ir.ScopeSystem: "sys"}[v.Scope]
		fence := ""
		if v.Order == ir.SeqCst {
			fence = fmt.Sprintf("  asm volatile(\"fence.sc.%s;\" ::: \"memory\");\n", scope)
		}
		atom := func(opty, reg, val string) string {
			return fmt.Sprintf(`asm volatile("atom.%s.%s.global.%s %%0, [%%1], %%2;" : "=%s"(old) : "l"(p), "%s"(%s) : "memory");`, sem, scope, opty, reg, reg, val)
		}
		switch {
		case op == "max" && d.K == ir.KF32:
			body = fmt.Sprintf(`  if (v != v) return;  // max ignores NaN
%[1]s  // Float max as integer max: signed max orders non-negative floats, unsigned
  // min orders negative ones.
  unsigned int old;
  if (!(__float_as_uint(v) >> 31)) { %[2]s }
  else { %[3]s }`, fence, atom("max.s32", "r", "__float_as_int(v)"), atom("min.u32", "r", "__float_as_uint(v)"))
		case d.K == ir.KF32:
			body = fmt.Sprintf("%s  float old;\n  %s", fence, atom("add.f32", "f", "v"))
		default:
			body = fmt.Sprintf("%s  int old;\n  %s", fence, atom(op+".s32", "r", "v"))
		}
	}
	e.helpers[name] = fmt.Sprintf("FP8G_FN void %s(%s* p, %s v) {\n%s\n}\n", name, ctype(d), ctype(d), body)
	return name
}
