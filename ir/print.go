package ir

import (
	"fmt"
	"strconv"
	"strings"
)

// This file holds every String method of the package but the attributes'.

func (k Kind) String() string { return k.facts().name }

func (d DType) String() string {
	switch d.K {
	case KFP8:
		return d.Fmt.Name
	case KPtr:
		return "ptr<" + d.Elem().String() + ">"
	}
	return d.K.String()
}

// String is tile<4x8xf32, #blocked{…}> for a tile, regs<8xf32> for
// registers of each lane, and the element type for a scalar.
func (t Type) String() string {
	var sb strings.Builder
	switch {
	case t.Regs > 0:
		fmt.Fprintf(&sb, "regs<%dx%v>", t.Regs, t.DType)
	case t.Rank() == 0:
		sb.WriteString(t.DType.String())
	default:
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
	ints := func(x []int) string { return strings.ReplaceAll(fmt.Sprint(x), " ", ",") }
	s := fmt.Sprintf("#blocked{spt=%s tpw=%s wpb=%s order=%s}", ints(l.SPT), ints(l.TPW), ints(l.WPB), ints(l.Order))
	// A reduction's result: the parent layout with its reduced dims sliced off.
	for _, d := range l.Drop {
		s = fmt.Sprintf("#slice{dim=%d %s}", d, s)
	}
	return s
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

// attrs is the bracketed attribute of the long form.
func (v *Value) attrs() string {
	if v.Attr == nil {
		return ""
	}
	s := v.Attr.attrString()
	if v.Op == OpConst && v.Type.DType.IsFloat() {
		s = strconv.FormatFloat(v.Const().Float, 'g', -1, 64)
	}
	if s == "" {
		return ""
	}
	return " [" + s + "]"
}

// AttrString is the attribute as the long form prints it, "" if none.
func (v *Value) AttrString() string { return v.attrs() }

// LongString is the full form, v12 = max <tile<…>> v9 v11, with the
// value's name, if it has one, after a #.
func (v *Value) LongString() string {
	var sb strings.Builder
	if v.Op.HasResult() || v.Op == OpFor { // a loop is named by its for_results
		fmt.Fprintf(&sb, "%v = ", v)
	}
	sb.WriteString(v.Op.Name())
	sb.WriteString(v.attrs())
	if v.Op.HasResult() {
		fmt.Fprintf(&sb, " <%v>", v.Type)
	}
	for _, a := range v.Args {
		sb.WriteByte(' ')
		sb.WriteString(a.String())
	}
	if v.Name != "" && v.Op != OpParam && v.Op != OpSize {
		sb.WriteString(" # " + v.Name)
	}
	return sb.String()
}

// String prints the whole function, one value a line, bodies indented.
func (f *Func) String() string {
	var sb strings.Builder
	var ps []string
	for _, p := range f.Params {
		ps = append(ps, fmt.Sprintf("%s %v <%v>", p.ArgName(), p, p.Type.DType))
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
			if len(vars) > 0 {
				fmt.Fprintf(sb, " (%s)", strings.Join(vars, ", "))
			}
			sb.WriteString(" {\n")
			printBlock(sb, v.Body, indent+"  ")
			sb.WriteString(indent + "}")
		}
		sb.WriteByte('\n')
	}
}
