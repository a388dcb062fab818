package ir

import (
	"fmt"

	"github.com/fp8gen/fp8gen/target"
)

// Pos is the Go source position of the DSL call that made a value.
type Pos struct {
	File string
	Line int
}

// Value is one SSA value (or, for ops with effects and no result, one
// operation). What its attribute holds is fixed by its op's table entry and
// checked by the verifier; read it through the typed accessors (Axis,
// Reduction, Mem, …), and operands by role (Ptr, Mask, Data, …).
type Value struct {
	ID    int
	Op    Op
	Type  Type
	Args  []*Value
	Attr  Attr
	Block *Block // the block holding the value
	Body  *Block // for and if: the region
	Pos   Pos
	// Name is what the kernel's author called the value (Named), or what
	// lowering derived from it; the emitter prints it. Arguments keep
	// their argument names.
	Name string
	// b is the builder that made the value, for the DSL's methods on it
	// (x.Abs().Max(0)); nil for values lowering makes.
	b *Builder
}

// Named sets the name the emitted code gives v, and returns v.
func (v *Value) Named(name string) *Value {
	if v != nil {
		v.Name = name
	}
	return v
}

// Block is a straight-line list of values. A loop or if body is a block
// whose parent is the op holding it; a loop's variables are OpLoopVar values.
type Block struct {
	Values []*Value
	Parent *Value
	Vars   []*Value
}

// Func is one kernel.
type Func struct {
	Name string
	// Symbol, if set, is the entry point's name in emitted code: a
	// variant's name, unique among the variants of one kernel (see
	// ops.Call.Build). Name stays the kernel's name in messages.
	Symbol string
	Target *target.Target
	Params []*Value // OpParam and OpSize values, in argument order
	Entry  *Block
	Phase  Phase

	// Set by lowering.
	Threads  int // lanes per block
	LDSBytes int // LDS the kernel uses

	nextID int
}

// EntryName is the kernel's symbol in emitted code.
func (f *Func) EntryName() string {
	if f.Symbol != "" {
		return f.Symbol
	}
	return f.Name
}

// NewFunc makes an empty kernel.
func NewFunc(name string, t *target.Target) *Func {
	return &Func{Name: name, Target: t, Entry: &Block{}, Phase: PhaseTile}
}

// NewValue makes a value that is not yet placed in a block.
func (f *Func) NewValue(op Op, t Type, attr Attr, args ...*Value) *Value {
	f.nextID++
	return &Value{ID: f.nextID, Op: op, Type: t, Attr: attr, Args: args}
}

// Walk calls fn for every value of the function, bodies after their op.
func (f *Func) Walk(fn func(*Value)) { walk(f.Entry, fn) }

func walk(b *Block, fn func(*Value)) {
	for _, v := range b.Vars {
		fn(v)
	}
	for _, v := range b.Values {
		fn(v)
		if v.Body != nil {
			walk(v.Body, fn)
		}
	}
}

// Waits reports whether the kernel waits on other programs (OpWait): its
// grid's programs must then be resident at once, so a launch runs at most
// as many as the device holds (the kernel reads num_programs).
func (f *Func) Waits() bool {
	found := false
	f.Walk(func(v *Value) { found = found || v.Op == OpWait })
	return found
}

// Uses counts the uses of each value.
func (f *Func) Uses() map[*Value]int {
	u := map[*Value]int{}
	f.Walk(func(v *Value) {
		for _, a := range v.Args {
			u[a]++
		}
	})
	return u
}

// Insert places v before the value at index i of block b.
func (b *Block) Insert(i int, v *Value) {
	v.Block = b
	b.Values = append(b.Values, nil)
	copy(b.Values[i+1:], b.Values[i:])
	b.Values[i] = v
}

// Append places v at the end of b.
func (b *Block) Append(v *Value) {
	v.Block = b
	b.Values = append(b.Values, v)
}

// Param returns the argument of the given name.
func (f *Func) Param(name string) (*Value, error) {
	for _, p := range f.Params {
		if p.ArgName() == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("kernel %s has no parameter %q", f.Name, name)
}

// ForVars returns loop v's induction variable and carried variables.
func (v *Value) ForVars() (iv *Value, carried []*Value) {
	return v.Body.Vars[0], v.Body.Vars[1:]
}

// Yield is the yield that ends loop v's body.
func (v *Value) Yield() *Value { return v.Body.Values[len(v.Body.Values)-1] }

// Loop is the loop a loop variable belongs to, or nil.
func (v *Value) Loop() *Value {
	if v.Op != OpLoopVar || v.Block == nil {
		return nil
	}
	return v.Block.Parent
}

// Inside reports whether v is defined in region r's body or deeper.
func (v *Value) Inside(r *Value) bool {
	for b := v.Block; b != nil && b.Parent != nil; b = b.Parent.Block {
		if b.Parent == r {
			return true
		}
	}
	return false
}
