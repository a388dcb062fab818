package emit

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/target"
)

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
	if size == 8 {
		lo, hi := word(bytes, 2*j), word(bytes, 2*j+1)
		return fmt.Sprintf("(long long)((unsigned long long)%s | (unsigned long long)%s << 32)", lo, hi)
	}
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

// pack builds the vector of element(r+0), element(r+1), … as a C expression.
// element(j, need) is element j, parenthesized if its precedence is below
// need: most elements are cast before they are packed.
func pack(d ir.DType, bytes int, element func(j, need int) string) string {
	size := d.Bytes()
	n := bytes / size
	words := make([][]string, max(bytes/4, 1))
	for j := 0; j < n; j++ {
		need := precUnary
		if d.K == ir.KF32 {
			need = 0 // an argument of __float_as_uint
		}
		x := element(j, need)
		if size == 8 {
			words[2*j] = append(words[2*j], "(uint32_t)(unsigned long long)"+x)
			words[2*j+1] = append(words[2*j+1], "(uint32_t)((unsigned long long)"+x+" >> 32)")
			continue
		}
		switch d.K {
		case ir.KF32:
			x = "__float_as_uint(" + x + ")"
		default:
			x = "(uint32_t)" + x
		}
		if shift := (j * size % 4) * 8; shift > 0 {
			x = fmt.Sprintf("(%s << %d)", x, shift)
		}
		k := j * size / 4
		words[k] = append(words[k], x)
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
	case 1:
		return "uint8_t"
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

// packOther is the vector of a load's masked-off values at register r:
// the words themselves where other is a constant.
func (e *emitter) packOther(o *ir.Value, r string, d ir.DType, vb int) string {
	if o.Op != ir.OpConst {
		return pack(d, vb, func(j, need int) string { return e.val(o, reg(r, j), need) })
	}
	e.printed[o] = true
	bits := ir.ConstBits(d, o.Const())
	size := d.Bytes()
	words := make([]uint32, max(vb/4, 1))
	for j := 0; j < vb/size; j++ {
		for k := 0; k < size; k++ {
			byteAt := j*size + k
			words[byteAt/4] |= uint32(bits>>(8*k)&0xff) << (8 * (byteAt % 4))
		}
	}
	lits := make([]string, len(words))
	for i, w := range words {
		lits[i] = fmt.Sprintf("%#xu", w)
		if w == 0 {
			lits[i] = "0u"
		}
	}
	switch vb {
	case 2:
		return fmt.Sprintf("(uint16_t)%s", lits[0])
	case 4:
		return lits[0]
	case 8:
		return "make_uint2(" + strings.Join(lits, ", ") + ")"
	}
	return "make_uint4(" + strings.Join(lits, ", ") + ")"
}

// always reports whether a mask is the constant true.
func always(m *ir.Value) bool { return m.Op == ir.OpConst && m.Const().Int != 0 }

// guard is "if (mask) " for register r, "" where the mask always holds.
func (e *emitter) guard(m *ir.Value, r string) string {
	if always(m) {
		e.printed[m] = true // shown as no guard
		return ""
	}
	return "if (" + e.top(m, r) + ") "
}

// vector writes a loop over the vectors of an n-register access: body(r)
// for each first register r.
func (e *emitter) vectors(n, vec int, body func(r string)) {
	if n <= vec {
		body("0")
		return
	}
	e.line("#pragma unroll")
	e.line("for (int r = 0; r < %d; r += %d) {", n, vec)
	e.ind += "  "
	body("r")
	e.ind = e.ind[2:]
	e.line("}")
}

func (e *emitter) load(v *ir.Value) {
	p, m, o := v.Ptr(), v.Mask(), v.Other()
	if always(m) { // no guard, and nothing takes the other value's place
		e.printed[m], e.printed[o] = true, true
	}
	n := v.Type.Regs
	vec := max(v.Mem().Vec, 1)
	if n <= 1 && always(m) {
		e.line("const %s %s = *%s;", e.typeOf(v), e.name(v), e.ref(p, "0"))
		return
	}
	if vec == 1 {
		// if/else rather than ?: — a select of pointers makes clang keep
		// the arrays in scratch memory on AMD.
		e.decl(v, "")
		e.each(n, func(r string) string {
			ld := fmt.Sprintf("%s = *%s;", e.dst(v, r), e.ref(p, r))
			if always(m) {
				return ld
			}
			return fmt.Sprintf("if (%s) %s else %s = %s;", e.top(m, r), ld, e.dst(v, r), e.top(o, r))
		})
		return
	}
	vb := vec * v.Type.DType.Bytes()
	e.decl(v, "")
	if v.Mem().Uniform || always(m) {
		// The vector starts as the masked-off values and is read where the
		// mask holds: one predicated load, no branch.
		e.vectors(n, vec, func(r string) {
			e.line("{")
			e.ind += "  "
			if always(m) {
				e.line("const %s w = %s;", vecType(vb), e.vecRead(v, vb, e.top(p, r)))
			} else {
				e.line("%s w = %s;", vecType(vb), e.packOther(o, r, v.Type.DType, vb))
				e.line("if (%s) w = %s;", e.top(m, r), e.vecRead(v, vb, e.top(p, r)))
			}
			for j := 0; j < vec; j++ {
				e.line("%s = %s;", e.dst(v, reg(r, j)), unpack(v.Type.DType, vb, j))
			}
			e.ind = e.ind[2:]
			e.line("}")
		})
		return
	}
	e.vectors(n, vec, func(r string) {
		conds := e.wholeConds(v, m, r, vec)
		if v.Mem().Uniform { // one mask bit stands for the vector
			conds = []string{e.top(m, r)}
		}
		read := func() {
			e.line("const %s w = %s;", vecType(vb), e.vecRead(v, vb, e.top(p, r)))
			for j := 0; j < vec; j++ {
				e.line("%s = %s;", e.dst(v, reg(r, j)), unpack(v.Type.DType, vb, j))
			}
		}
		if always(m) {
			e.line("{")
			e.ind += "  "
			read()
			e.ind = e.ind[2:]
			e.line("}")
			return
		}
		e.line("if (%s) {", strings.Join(conds, " && "))
		e.ind += "  "
		read()
		e.ind = e.ind[2:]
		e.line("} else {")
		e.ind += "  "
		for j := 0; j < vec; j++ {
			rj := reg(r, j)
			if v.Mem().Uniform {
				e.line("%s = %s;", e.dst(v, rj), e.top(o, rj))
			} else {
				e.line("if (%s) %s = *%s; else %s = %s;", e.top(m, rj), e.dst(v, rj), e.ref(p, rj), e.dst(v, rj), e.top(o, rj))
			}
		}
		e.ind = e.ind[2:]
		e.line("}")
	})
}

// vecRead is the read of a vector of vb bytes at ptr for load v: with
// EvictFirst on NVIDIA, through the L2 policy that lets its lines go
// first (vectors of 4 bytes or more; narrower ones read plainly).
func (e *emitter) vecRead(v *ir.Value, vb int, ptr string) string {
	if !v.Mem().EvictFirst || e.t.Vendor != target.NVIDIA || vb < 4 {
		return fmt.Sprintf("*(const %s*)(%s)", vecType(vb), ptr)
	}
	e.evictFirst = true
	nc := "_nc"
	if e.written[root(v.Ptr())] {
		nc = ""
	}
	return fmt.Sprintf("fp8g_ld_evict_first%d%s(%s, fp8g_evict_first)", vb, nc, ptr)
}

func (e *emitter) store(v *ir.Value) {
	p, x, m := v.Ptr(), v.Data(), v.Mask()
	n := 1
	for _, a := range v.Args {
		n = max(n, a.Type.Regs)
	}
	vec := max(v.Mem().Vec, 1)
	if vec == 1 {
		e.each(n, func(r string) string {
			return fmt.Sprintf("%s*%s = %s;", e.guard(m, r), e.ref(p, r), e.top(x, r))
		})
		return
	}
	d := x.Type.DType
	vb := vec * d.Bytes()
	vt := vecType(vb)
	e.vectors(n, vec, func(r string) {
		val := pack(d, vb, func(j, need int) string { return e.val(x, reg(r, j), need) })
		var put string
		if v.Mem().Unaligned { // in aligned pieces, the address's alignment known at run time
			put = fmt.Sprintf("fp8g_st_any((uint8_t*)(%s), %s);", e.top(p, r), val)
		} else {
			put = fmt.Sprintf("*(%s*)(%s) = %s;", vt, e.top(p, r), val)
		}
		if v.Mem().Uniform || always(m) { // the first element's mask stands for the vector
			e.line("%s%s", e.guard(m, r), put)
			return
		}
		conds := e.wholeConds(v, m, r, vec)
		e.line("if (%s) {", strings.Join(conds, " && "))
		e.line("  %s", put)
		e.line("} else {")
		for j := 0; j < vec; j++ {
			rj := reg(r, j)
			e.line("  if (%s) *%s = %s;", e.top(m, rj), e.ref(p, rj), e.top(x, rj))
		}
		e.line("}")
	})
}

// wholeConds are the mask bits whose conjunction says that the vector of
// registers r … r+vec-1 moves whole: every bit, or where the mask holds on
// one interval of the vector (Ends), the first and the last.
func (e *emitter) wholeConds(v, m *ir.Value, r string, vec int) []string {
	if v.Mem().Ends {
		return []string{e.val(m, r, precAndAnd+1), e.val(m, reg(r, vec-1), precAndAnd+1)}
	}
	var conds []string
	for j := 0; j < vec; j++ {
		conds = append(conds, e.val(m, reg(r, j), precAndAnd+1))
	}
	return conds
}

func (e *emitter) atomic(v *ir.Value) {
	p, x, m := v.Ptr(), v.Data(), v.Mask()
	fn := e.atomicFn(v)
	if e.uses[v] == 0 {
		e.each(v.Type.Regs, func(r string) string {
			return fmt.Sprintf("%s%s(%s, %s);", e.guard(m, r), fn, e.top(p, r), e.top(x, r))
		})
		return
	}
	e.decl(v, "")
	e.each(v.Type.Regs, func(r string) string {
		return fmt.Sprintf("if (%s) %s = %s(%s, %s); else %s = 0;", e.top(m, r), e.dst(v, r), fn, e.top(p, r), e.top(x, r), e.dst(v, r))
	})
}

// ldsCopy is a stage's copy: on NVIDIA each vector of 4 bytes or more
// as a cp.async (zeros where its mask is off), elsewhere a load and an
// LDS store; a vector the mask cuts goes element by element.
func (e *emitter) ldsCopy(v *ir.Value) {
	p, addr, m, own := v.Ptr(), v.Addr(), v.Mask(), v.Cond()
	d := p.Type.DType.Elem()
	vec := max(v.Mem().Vec, 1)
	vb := vec * d.Bytes()
	async := e.t.Vendor == target.NVIDIA && vb >= 4
	if async {
		e.asyncCopies = true
	}
	at := func(r string) string { return e.val(addr, r, precAdd+1) }
	whole := func(r, ok string) {
		if async {
			src := e.top(p, r)
			if ok != "true" { // an address that exists, where nothing is read
				src = fmt.Sprintf("%s ? (const void*)(%s) : (const void*)%s", ok, src, e.name(root(p)))
			}
			e.line("fp8g_cp_async%d(lds + %s, %s, %s);", vb, at(r), src, ok)
			return
		}
		vt := vecType(vb)
		e.line("{")
		e.line("  %s w = {};", vt)
		if ok == "true" {
			e.line("  w = *(const %s*)(%s);", vt, e.top(p, r))
		} else {
			e.line("  if (%s) w = *(const %s*)(%s);", ok, vt, e.top(p, r))
		}
		e.line("  %s = w;", lds(vt, at(r)))
		e.line("}")
	}
	e.vectors(p.Type.Regs, vec, func(r string) {
		g := e.guard(own, r)
		if g != "" {
			e.line("%s{", g)
			e.ind += "  "
			defer func() { e.ind = e.ind[2:]; e.line("}") }()
		}
		if always(m) || v.Mem().Uniform || vec == 1 {
			ok := "true"
			if !always(m) {
				ok = e.top(m, r)
			}
			whole(r, ok)
			return
		}
		e.line("if (%s) {", strings.Join(e.wholeConds(v, m, r, vec), " && "))
		e.ind += "  "
		whole(r, "true")
		e.ind = e.ind[2:]
		e.line("} else {")
		for j := 0; j < vec; j++ {
			rj := reg(r, j)
			e.line("  if (%s) %s = *%s; else %s = 0;", e.top(m, rj), lds(ctype(d), at(rj)), e.ref(p, rj), lds(ctype(d), at(rj)))
		}
		e.line("}")
	})
}

// lds is the element of type d at byte address addr of the LDS buffer.
func lds(d string, addr string) string {
	if addr == "0" {
		return fmt.Sprintf("*(%s*)lds", d)
	}
	addr = strings.TrimPrefix(addr, "0 + ")
	return fmt.Sprintf("*(%s*)(lds + %s)", d, addr)
}

func (e *emitter) ldsStore(v *ir.Value) {
	x, addr, m := v.Data(), v.Addr(), v.Mask()
	vec, stride := max(v.Mem().Vec, 1), v.Mem().RegStride()
	d := x.Type.DType
	if vec == 1 {
		e.each(x.Type.Regs, func(r string) string {
			return fmt.Sprintf("%s%s = %s;", e.guard(m, r), lds(ctype(d), e.val(addr, r, precAdd+1)), e.top(x, r))
		})
		return
	}
	vb := vec * d.Bytes()
	e.stridedVectors(x.Type.Regs, vec, stride, func(r string) {
		val := pack(d, vb, func(j, need int) string { return e.val(x, reg(r, j*stride), need) })
		e.line("%s%s = %s;", e.guard(m, r), lds(vecType(vb), e.val(addr, r, precAdd+1)), val)
	})
}

func (e *emitter) ldsLoad(v *ir.Value) {
	addr := v.Addr()
	vec, stride := max(v.Mem().Vec, 1), v.Mem().RegStride()
	d := v.Type.DType
	e.decl(v, "")
	if vec == 1 {
		e.each(v.Type.Regs, func(r string) string {
			return fmt.Sprintf("%s = %s;", e.dst(v, r), lds("const "+ctype(d), e.val(addr, r, precAdd+1)))
		})
		return
	}
	vb := vec * d.Bytes()
	e.stridedVectors(v.Type.Regs, vec, stride, func(r string) {
		e.line("{")
		e.line("  const %s w = %s;", vecType(vb), lds("const "+vecType(vb), e.val(addr, r, precAdd+1)))
		for j := 0; j < vec; j++ {
			e.line("  %s = %s;", e.dst(v, reg(r, j*stride)), unpack(d, vb, j))
		}
		e.line("}")
	})
}

// stridedVectors is vectors for vectors of registers stride apart: the
// first registers are those r with (r / stride) % vec == 0.
func (e *emitter) stridedVectors(n, vec, stride int, body func(r string)) {
	if stride <= 1 {
		e.vectors(n, vec, body)
		return
	}
	outer := n > vec*stride
	if outer {
		// rv is reserved (newEmitter): no value takes the name.
		e.line("#pragma unroll")
		e.line("for (int rv = 0; rv < %d; rv += %d) {", n, vec*stride)
		e.ind += "  "
	}
	e.line("#pragma unroll")
	if outer {
		e.line("for (int r = rv; r < rv + %d; ++r) {", stride)
	} else {
		e.line("for (int r = 0; r < %d; ++r) {", stride)
	}
	e.ind += "  "
	body("r")
	e.ind = e.ind[2:]
	e.line("}")
	if outer {
		e.ind = e.ind[2:]
		e.line("}")
	}
}

// ldsReduce folds the partials of the waves, in wave order.
func (e *emitter) ldsReduce(v *ir.Value) {
	a := v.LDSFold()
	d := ctype(v.Type.DType)
	e.decl(v, "")
	e.each(v.Type.Regs, func(r string) string {
		addr := e.val(v.Addr(), r, precAdd)
		acc := e.dst(v, r)
		if a.Count == 2 { // one fold: no loop
			next := lds("const "+d, fmt.Sprintf("%s + %d", addr, a.Stride))
			return fmt.Sprintf("%s = %s;", acc, e.fold(a.Kind, v.Type.DType, lds("const "+d, addr), next, v))
		}
		return fmt.Sprintf("{ %s = %s; for (int w = 1; w < %d; ++w) %s = %s; }", acc, lds("const "+d, addr), a.Count, acc,
			e.fold(a.Kind, v.Type.DType, acc, lds("const "+d, fmt.Sprintf("%s + w * %d", addr, a.Stride)), v))
	})
}

// reduceRegs folds each group of registers in order, as FoldAttr defines.
func (e *emitter) reduceRegs(v *ir.Value) {
	a := v.Fold()
	x := v.Args[0]
	d := v.Type.DType
	e.decl(v, "")
	// The sum's terms sit right of a +: a ternary or a comparison among
	// them needs its parentheses.
	prec := 0
	if a.Kind == ir.RSum {
		prec = precAdd + 1
	}
	src := func(j, k string) string {
		base := ""
		switch {
		case j == "0":
		case v.Type.Regs <= a.Stride:
			base = j + " + "
		case a.Stride == 1 && j != "0":
			base = fmt.Sprintf("%s * %d + ", j, a.N)
		case a.Stride > 1:
			base = fmt.Sprintf("(%[1]s / %[2]d) * %[3]d + %[1]s %% %[2]d + ", j, a.Stride, a.Stride*a.N)
		}
		n, known := strconv.Atoi(k)
		switch {
		case k == "0" && a.N == 2: // an operand of the fold
			return e.val(x, strings.TrimSuffix(base, " + ")+map[bool]string{true: "0"}[base == ""], prec)
		case k == "0":
			return e.top(x, strings.TrimSuffix(base, " + ")+map[bool]string{true: "0"}[base == ""])
		case known == nil:
			k = strconv.Itoa(n * a.Stride)
		case a.Stride > 1:
			k = fmt.Sprintf("%s * %d", k, a.Stride)
		}
		return e.val(x, base+k, prec)
	}
	e.each(v.Type.Regs, func(j string) string {
		acc := e.dst(v, j)
		if a.N == 2 { // one fold: no loop
			return fmt.Sprintf("%s = %s;", acc, e.fold(a.Kind, d, src(j, "0"), src(j, "1"), x))
		}
		return fmt.Sprintf("{ %s = %s; for (int k = 1; k < %d; ++k) %s = %s; }", acc, src(j, "0"), a.N, acc, e.fold(a.Kind, d, acc, src(j, "k"), x))
	})
}

// butterfly: shuffles across the wave's lanes, distances doubling.
func (e *emitter) butterfly(v *ir.Value) {
	a := v.Butterfly()
	x := v.Args[0]
	e.decl(v, "")
	e.each(v.Type.Regs, func(r string) string { return fmt.Sprintf("%s = %s;", e.dst(v, r), e.top(x, r)) })
	e.line("#pragma unroll")
	e.line("for (int off = %d; off <= %d; off <<= 1)", a.First, a.First<<(a.Steps-1))
	e.ind += "  "
	e.each(v.Type.Regs, func(r string) string {
		return fmt.Sprintf("%s = %s;", e.dst(v, r), e.fold(a.Kind, v.Type.DType, e.dst(v, r), e.shfl(e.dst(v, r), "off"), x))
	})
	e.ind = e.ind[2:]
}

func (e *emitter) loop(v *ir.Value) error {
	iv, carried := v.ForVars()
	for i, c := range carried {
		init := v.Args[3+i]
		e.decl(c, "")
		e.each(c.Type.Regs, func(r string) string { return fmt.Sprintf("%s = %s;", e.dst(c, r), e.top(init, r)) })
	}
	n := e.name(iv)
	e.line("for (%s %s = %s; %s < %s; %s += %s) {", ctype(iv.Type.DType), n, e.top(v.Args[0], "0"), n, e.val(v.Args[1], "0", precRel+1), n, e.top(v.Args[2], "0"))
	outer := e.ind
	e.ind += "  "
	if err := e.block(v.Body); err != nil {
		return err
	}
	ys := v.Yield().Args
	// A yield of another carried value needs the old values kept first.
	swap := false
	for i, y := range ys {
		for j, c := range carried {
			swap = swap || y == c && i != j
		}
	}
	if swap {
		return fmt.Errorf("emit %s: loop exchanges its carried values; not supported", e.f.Name)
	}
	for i, c := range carried {
		if ys[i] == c {
			continue
		}
		e.each(c.Type.Regs, func(r string) string { return fmt.Sprintf("%s = %s;", e.dst(c, r), e.top(ys[i], r)) })
	}
	e.ind = outer
	e.line("}")
	return nil
}

// syncFn names (and defines once) the device function of signal or wait,
// which one lane calls. signal is a release at agent scope: the barrier
// before it has every lane's effects done (on AMD each lane also fences
// at agent scope first, as ROCm's grid sync does, rather than rely on the
// barrier's release being re-released by lane 0). wait is an acquire loop
// that sleeps between reads, so that the programs it waits for get the
// issue slots, and traps after about 2^27 reads (over 10 s): a wait no
// program can end fails the launch instead of hanging the device.
func (e *emitter) syncFn(kind string) string {
	name := "fp8g_" + kind
	if _, ok := e.helpers[name]; ok {
		return name
	}
	var body string
	switch {
	case e.t.Vendor == target.AMD && kind == "signal":
		body = "  __hip_atomic_fetch_add(p, n, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_AGENT);"
	case e.t.Vendor == target.AMD:
		body = `  for (unsigned i = 0; __hip_atomic_load(p, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_AGENT) < n; i++) {
    if (i == 1u << 27) __builtin_trap();
    __builtin_amdgcn_s_sleep(2);
  }`
	case kind == "signal":
		body = `  asm volatile("red.release.gpu.global.add.s32 [%0], %1;" :: "l"(p), "r"(n) : "memory");`
	default:
		body = `  for (unsigned i = 0;; i++) {
    int v;
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    if (v >= n) return;
    if (i == 1u << 27) __trap();
    __nanosleep(100);
  }`
	}
	e.helpers[name] = fmt.Sprintf("FP8G_FN void %s(int* p, int n) {\n%s\n}\n", name, body)
	return name
}

// atomicFn names (and defines once) the device function of an atomic,
// which returns the value it replaced.
func (e *emitter) atomicFn(v *ir.Value) string {
	a := v.AtomicOp()
	d := v.Data().Type.DType
	op := map[ir.ReduceKind]string{ir.RMax: "max", ir.RSum: "add", ir.RMin: "min"}[a.Kind]
	name := fmt.Sprintf("fp8g_atomic_%s_%s_%s_%s", op, d, a.Order, a.Scope)
	if _, ok := e.helpers[name]; ok {
		return name
	}
	var body string
	if e.t.Vendor == target.AMD {
		order := map[ir.MemOrder]string{ir.Relaxed: "__ATOMIC_RELAXED", ir.AcqRel: "__ATOMIC_ACQ_REL", ir.SeqCst: "__ATOMIC_SEQ_CST"}[a.Order]
		loadOrder := map[ir.MemOrder]string{ir.Relaxed: "__ATOMIC_RELAXED", ir.AcqRel: "__ATOMIC_ACQUIRE", ir.SeqCst: "__ATOMIC_SEQ_CST"}[a.Order]
		scope := map[ir.MemScope]string{ir.ScopeWorkgroup: "__HIP_MEMORY_SCOPE_WORKGROUP", ir.ScopeAgent: "__HIP_MEMORY_SCOPE_AGENT", ir.ScopeSystem: "__HIP_MEMORY_SCOPE_SYSTEM"}[a.Scope]
		switch {
		case op == "max" && d.K == ir.KF32:
			body = fmt.Sprintf(`  if (v != v) return __hip_atomic_load(p, %[3]s, %[2]s);  // max ignores NaN
  // Float max as integer max: signed max orders non-negative floats, unsigned
  // min orders negative ones.
  if (!(__float_as_uint(v) >> 31))
    return __int_as_float(
        __hip_atomic_fetch_max((int*)p, __float_as_int(v), %[1]s, %[2]s));
  return __uint_as_float(
      __hip_atomic_fetch_min((unsigned int*)p, __float_as_uint(v), %[1]s, %[2]s));`, order, scope, loadOrder)
		default:
			body = fmt.Sprintf("  return __hip_atomic_fetch_%s(p, v, %s, %s);", op, order, scope)
		}
	} else {
		sem := map[ir.MemOrder]string{ir.Relaxed: "relaxed", ir.AcqRel: "acq_rel", ir.SeqCst: "acq_rel"}[a.Order]
		scope := map[ir.MemScope]string{ir.ScopeWorkgroup: "cta", ir.ScopeAgent: "gpu", ir.ScopeSystem: "sys"}[a.Scope]
		fence := ""
		if a.Order == ir.SeqCst {
			fence = fmt.Sprintf("  asm volatile(\"fence.sc.%s;\" ::: \"memory\");\n", scope)
		}
		atom := func(opty, reg, val string) string {
			return fmt.Sprintf("asm volatile(\"atom.%s.%s.global.%s %%0, [%%1], %%2;\"\n        : \"=%s\"(old) : \"l\"(p), \"%s\"(%s) : \"memory\");", sem, scope, opty, reg, reg, val)
		}
		switch {
		case op == "max" && d.K == ir.KF32:
			body = fmt.Sprintf(`  unsigned int old;
  if (v != v) {  // max ignores NaN
    asm volatile("ld.%[4]s.%[5]s.global.b32 %%0, [%%1];" : "=r"(old) : "l"(p) : "memory");
    return __uint_as_float(old);
  }
%[1]s  // Float max as integer max: signed max orders non-negative floats, unsigned
  // min orders negative ones.
  if (!(__float_as_uint(v) >> 31))
    %[2]s
  else
    %[3]s
  return __uint_as_float(old);`, fence, atom("max.s32", "r", "__float_as_int(v)"), atom("min.u32", "r", "__float_as_uint(v)"),
				map[string]string{"relaxed": "relaxed", "acq_rel": "acquire"}[sem], scope)
		case d.K == ir.KF32:
			body = fmt.Sprintf("%s  float old;\n  %s\n  return old;", fence, atom("add.f32", "f", "v"))
		default:
			body = fmt.Sprintf("%s  int old;\n  %s\n  return old;", fence, atom(op+".s32", "r", "v"))
		}
	}
	e.helpers[name] = fmt.Sprintf("FP8G_FN %s %s(%s* p, %s v) {\n%s\n}\n", ctype(d), name, ctype(d), ctype(d), body)
	return name
}
