package ir

import (
	"fmt"
	"strconv"
	"strings"
)

// This file holds every String method of the package.

func (k Kind) String() string {
	switch k {
	case KBool:
		return "i1"
	case KI32:
		return "i32"
	case KI64:
		return "i64"
	case KF32:
		return "f32"
	case KBF16:
		return "bf16"
	case KFP8:
		return "fp8"
	case KPtr:
		return "ptr"
	}
	return "invalid"
}

func (d DType) String() string {
	switch d.K {
	case KFP8:
		return d.Fmt.Name
	case KPtr:
		return "ptr<" + d.Elem().String() + ">"
	}
	return d.K.String()
}

func (t Type) String() string {
	var sb strings.Builder
	if t.Rank() == 0 {
		sb.WriteString(t.DType.String())
	} else {
		sb.WriteString("tile<")
		for _, s := range t.Shape {
			sb.WriteString(strconv.Itoa(s))
			sb.WriteByte('x')
		}
		sb.WriteString(t.DType.String())
		if t.Layout != nil {
			sb.WriteString(", ")
			sb.WriteString(t.Layout.String())
		}
		sb.WriteByte('>')
	}
	return sb.String()
}

func (l *Layout) String() string {
	ints := func(x []int) string { return strings.Trim(strings.ReplaceAll(fmt.Sprint(x), " ", ","), "") }
	s := fmt.Sprintf("#blocked{spt=%s tpw=%s wpb=%s order=%s", ints(l.SPT), ints(l.TPW), ints(l.WPB), ints(l.Order))
	if len(l.Drop) > 0 {
		s += " drop=" + ints(l.Drop)
	}
	return s + "}"
}

// String is the short form, v12.
func (v *Value) String() string {
	if v == nil {
		return "<nil>"
	}
	return "v" + strconv.Itoa(v.ID)
}

func (r ReduceKind) String() string { return [...]string{"max", "sum", "min"}[r] }
func (o MemOrder) String() string   { return [...]string{"relaxed", "acq_rel", "seq_cst"}[o] }
func (s MemScope) String() string   { return [...]string{"workgroup", "agent", "system"}[s] }

// attrs is the bracketed attribute list of the long form.
func (v *Value) attrs() string {
	var a []string
	switch v.Op {
	case OpParam, OpSize:
		a = append(a, strconv.Quote(v.Name))
	case OpConst:
		if v.Type.DType.IsFloat() {
			a = append(a, strconv.FormatFloat(v.AuxF, 'g', -1, 64))
		} else {
			a = append(a, strconv.FormatInt(v.Aux, 10))
		}
	case OpArange, OpLoopVar, OpForResult, OpProgramID, OpNumPrograms, OpExpandDims:
		a = append(a, strconv.FormatInt(v.Aux, 10))
	case OpReduce, OpReduceLanes, OpReduceWave, OpReduceWaves:
		a = append(a, "axis="+strconv.FormatInt(v.Aux, 10), v.Red.String())
	case OpAtomicMax, OpAtomicAdd:
		a = append(a, v.Order.String(), v.Scope.String())
	case OpLDSStore, OpLDSLoad:
		a = append(a, "offset="+strconv.FormatInt(v.Aux, 10), "pitch="+strconv.Itoa(v.Pitch))
	}
	if v.Vec > 1 {
		a = append(a, "vec="+strconv.Itoa(v.Vec))
	}
	if v.UniformMask {
		a = append(a, "uniform")
	}
	if len(a) == 0 {
		return ""
	}
	return " [" + strings.Join(a, " ") + "]"
}

// LongString is the full form, v12 = max <tile<…>> v9 v11.
func (v *Value) LongString() string {
	var sb strings.Builder
	if v.Op.info().result || v.Op == OpFor { // a loop is named by its for_results
		fmt.Fprintf(&sb, "%v = ", v)
	}
	sb.WriteString(v.Op.Name())
	sb.WriteString(v.attrs())
	if v.Op.info().result {
		fmt.Fprintf(&sb, " <%v>", v.Type)
	}
	for _, a := range v.Args {
		sb.WriteByte(' ')
		sb.WriteString(a.String())
	}
	return sb.String()
}

// String prints the whole function, one value a line, loop bodies indented.
func (f *Func) String() string {
	var sb strings.Builder
	var ps []string
	for _, p := range f.Params {
		ps = append(ps, fmt.Sprintf("%s %v <%v>", p.Name, p, p.Type.DType))
	}
	fmt.Fprintf(&sb, "func %s(%s)", f.Name, strings.Join(ps, ", "))
	if f.Target != nil {
		fmt.Fprintf(&sb, " target=%s", f.Target.Name)
	}
	if f.Threads > 0 {
		fmt.Fprintf(&sb, " threads=%d lds=%d", f.Threads, f.LDSBytes)
	}
	sb.WriteString(" {\n")
	printBlock(&sb, f.Entry, "  ")
	sb.WriteString("}\n")
	return sb.String()
}

func printBlock(sb *strings.Builder, b *Block, indent string) {
	for _, v := range b.Values {
		if v.Op == OpParam || v.Op == OpSize {
			continue
		}
		sb.WriteString(indent)
		sb.WriteString(v.LongString())
		if v.Body != nil {
			var vars []string
			for _, x := range v.Body.Vars {
				vars = append(vars, fmt.Sprintf("%v <%v>", x, x.Type))
			}
			fmt.Fprintf(sb, " (%s) {\n", strings.Join(vars, ", "))
			printBlock(sb, v.Body, indent+"  ")
			sb.WriteString(indent + "}")
		}
		sb.WriteByte('\n')
	}
}
