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
// operation). Which attribute fields an op uses is fixed by its table entry
// and checked by the verifier.
type Value struct {
	ID    int
	Op    Op
	Type  Type
	Args  []*Value
	Block *Block // the block holding the value
	Pos   Pos

	Aux   int64   // axis, index, integer constant, extent, LDS offset
	AuxF  float64 // float constant
	Name  string  // parameter name
	Red   ReduceKind
	Order MemOrder
	Scope MemScope
	Body  *Block // OpFor's body

	// Set by lowering.
	Vec int // load/store: elements per vector access
	// UniformMask: the mask is the same for the Vec elements of each vector
	// (load/store), so one test guards the whole access.
	UniformMask bool
	Pitch       int   // LDS row pitch, in elements (padding against bank conflicts)
	Map         []int // broadcast/expand_dims/trans: source register of each result register
}

// Block is a straight-line list of values. A loop body is a block whose
// parent is the OpFor value; its loop variables are OpLoopVar values.
type Block struct {
	Values []*Value
	Parent *Value
	Vars   []*Value
}

// Func is one kernel.
type Func struct {
	Name   string
	Target *target.Target
	Params []*Value // OpParam and OpSize values, in argument order
	Entry  *Block

	// Set by lowering.
	Threads  int // lanes per block
	LDSBytes int // LDS the kernel uses

	nextID int
}

// NewFunc makes an empty kernel.
func NewFunc(name string, t *target.Target) *Func {
	return &Func{Name: name, Target: t, Entry: &Block{}}
}

// NewValue makes a value that is not yet placed in a block.
func (f *Func) NewValue(op Op, t Type, args ...*Value) *Value {
	f.nextID++
	return &Value{ID: f.nextID, Op: op, Type: t, Args: args}
}

// Walk calls fn for every value of the function, loop bodies after their loop.
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

// Uses counts the uses of each value, by ID.
func (f *Func) Uses() map[int]int {
	u := map[int]int{}
	f.Walk(func(v *Value) {
		for _, a := range v.Args {
			u[a.ID]++
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

// Param returns the parameter of the given name.
func (f *Func) Param(name string) (*Value, error) {
	for _, p := range f.Params {
		if p.Name == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("kernel %s has no parameter %q", f.Name, name)
}

// ForVars returns loop f's induction variable and carried variables.
func (v *Value) ForVars() (iv *Value, carried []*Value) {
	return v.Body.Vars[0], v.Body.Vars[1:]
}
