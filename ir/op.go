package ir

import "strconv"

// Op is an operation. Each constant's doc line is its printed form; the
// facts about an op sit in the ops table below, indexed by Op, and the
// verifier, printer, lowering and interpreter read them from there.
type Op uint8

const (
	OpInvalid Op = iota

	// v = param ["x"] <ptr<bf16>>: a pointer argument of the kernel.
	OpParam
	// v = size ["M"] <i32>: an integer argument of the kernel (a problem size).
	OpSize
	// v = program_id [axis] <i32>: the index of this program (block) in the grid.
	OpProgramID
	// v = num_programs [axis] <i32>: the grid's extent along axis.
	OpNumPrograms
	// v = const [c] <t>: a scalar constant.
	OpConst
	// v = arange [n] <tile<nxi32>>: the i32 tile 0, 1, …, n-1.
	OpArange
	// v = splat <t> x: a scalar copied into every element of a tile.
	OpSplat
	// v = expand_dims [axis] <t> x: a new axis of extent 1.
	OpExpandDims
	// v = broadcast <t> x: axes of extent 1 stretched to the result's shape.
	OpBroadcast

	// v = add x y
	OpAdd
	// v = sub x y
	OpSub
	// v = mul x y
	OpMul
	// v = div x y: IEEE division for floats (correctly rounded), truncating for ints.
	OpDiv
	// v = rem x y: integer remainder.
	OpRem
	// v = max x y: IEEE maxNum: a NaN operand yields the other operand.
	OpMax
	// v = min x y: IEEE minNum.
	OpMin
	// v = and x y: logical (bool) or bitwise (int) and.
	OpAnd
	// v = or x y
	OpOr
	// v = lt x y
	OpLt
	// v = le x y
	OpLe
	// v = gt x y
	OpGt
	// v = ge x y
	OpGe
	// v = eq x y
	OpEq
	// v = ne x y
	OpNe

	// v = abs x
	OpAbs
	// v = neg x
	OpNeg
	// v = rsqrt x: correctly rounded 1/sqrt(x) computed as 1/sqrt in f32.
	OpRsqrt
	// v = pow2_floor x: the largest power of two not above x (x > 0 finite); x otherwise.
	OpPow2Floor
	// v = cast x: conversion to the result's element type. To FP8 it rounds to
	// nearest even and saturates to the format's finite max (see package fp8).
	OpCast
	// v = where c x y
	OpWhere
	// v = ptr_add p offs: p advanced by offs elements.
	OpPtrAdd
	// v = load [vec=n uniform] <t> p mask other: elements at p where mask, other elsewhere.
	OpLoad
	// store [vec=n uniform] p x mask
	OpStore
	// atomic_max [order scope] p x mask: atomic maximum at p, per element.
	OpAtomicMax
	// atomic_add [order scope] p x mask
	OpAtomicAdd
	// v = reduce [axis=a kind] <t> x: the reduction of axis a of x.
	OpReduce
	// v = trans <t> x: a 2-D transpose.
	OpTrans
	// v = for lo hi step inits… (vars) {body}: a counted loop whose body carries values.
	OpFor
	// v = loop_var [i] <t>: in a loop body, the induction variable (0) or carried value i.
	OpLoopVar
	// yield xs…: the carried values for the next iteration.
	OpYield
	// v = for_result [i] <t> f: carried value i after loop f.
	OpForResult

	// v = convert <t> x: the same tile in another layout (lowered through LDS).
	OpConvert
	// lds_store [offset=o pitch=p vec=n] x: each lane writes the elements it owns to LDS.
	OpLDSStore
	// v = lds_load [offset=o pitch=p vec=n] <t>: each lane reads its elements from LDS.
	OpLDSLoad
	// barrier: every lane of the block waits here (LDS accesses before it are visible after).
	OpBarrier
	// v = reduce_lanes [axis=a kind] <t> x: a lane folds its own registers along axis a.
	OpReduceLanes
	// v = reduce_wave [axis=a kind] <t> x: butterfly shuffles across the lanes of a wave along axis a.
	OpReduceWave
	// v = reduce_waves [axis=a kind] <t> x: wave partials exchanged through LDS.
	OpReduceWaves

	numOps
)

// Phase says which stage of the pipeline an op may appear in.
type Phase uint8

const (
	PhaseTile    Phase = 1 << iota // built by the DSL
	PhaseThreads                   // introduced by lowering
	Both         = PhaseTile | PhaseThreads
)

type opInfo struct {
	name    string
	args    int   // operand count; -1 if variable
	phase   Phase // where it may appear
	effect  bool  // writes memory or synchronizes: never removed, never moved
	result  bool  // produces a value
	elemwis bool  // elementwise over equal-shaped operands
	compare bool  // result is bool
	axis    bool  // Aux is an axis
}

var ops = [numOps]opInfo{
	OpParam:       {name: "param", args: 0, phase: Both, result: true},
	OpSize:        {name: "size", args: 0, phase: Both, result: true},
	OpProgramID:   {name: "program_id", args: 0, phase: Both, result: true, axis: true},
	OpNumPrograms: {name: "num_programs", args: 0, phase: Both, result: true, axis: true},
	OpConst:       {name: "const", args: 0, phase: Both, result: true},
	OpArange:      {name: "arange", args: 0, phase: Both, result: true},
	OpSplat:       {name: "splat", args: 1, phase: Both, result: true},
	OpExpandDims:  {name: "expand_dims", args: 1, phase: Both, result: true, axis: true},
	OpBroadcast:   {name: "broadcast", args: 1, phase: Both, result: true},
	OpAdd:         {name: "add", args: 2, phase: Both, result: true, elemwis: true},
	OpSub:         {name: "sub", args: 2, phase: Both, result: true, elemwis: true},
	OpMul:         {name: "mul", args: 2, phase: Both, result: true, elemwis: true},
	OpDiv:         {name: "div", args: 2, phase: Both, result: true, elemwis: true},
	OpRem:         {name: "rem", args: 2, phase: Both, result: true, elemwis: true},
	OpMax:         {name: "max", args: 2, phase: Both, result: true, elemwis: true},
	OpMin:         {name: "min", args: 2, phase: Both, result: true, elemwis: true},
	OpAnd:         {name: "and", args: 2, phase: Both, result: true, elemwis: true},
	OpOr:          {name: "or", args: 2, phase: Both, result: true, elemwis: true},
	OpLt:          {name: "lt", args: 2, phase: Both, result: true, elemwis: true, compare: true},
	OpLe:          {name: "le", args: 2, phase: Both, result: true, elemwis: true, compare: true},
	OpGt:          {name: "gt", args: 2, phase: Both, result: true, elemwis: true, compare: true},
	OpGe:          {name: "ge", args: 2, phase: Both, result: true, elemwis: true, compare: true},
	OpEq:          {name: "eq", args: 2, phase: Both, result: true, elemwis: true, compare: true},
	OpNe:          {name: "ne", args: 2, phase: Both, result: true, elemwis: true, compare: true},
	OpAbs:         {name: "abs", args: 1, phase: Both, result: true, elemwis: true},
	OpNeg:         {name: "neg", args: 1, phase: Both, result: true, elemwis: true},
	OpRsqrt:       {name: "rsqrt", args: 1, phase: Both, result: true, elemwis: true},
	OpPow2Floor:   {name: "pow2_floor", args: 1, phase: Both, result: true, elemwis: true},
	OpCast:        {name: "cast", args: 1, phase: Both, result: true, elemwis: true},
	OpWhere:       {name: "where", args: 3, phase: Both, result: true, elemwis: true},
	OpPtrAdd:      {name: "ptr_add", args: 2, phase: Both, result: true, elemwis: true},
	OpLoad:        {name: "load", args: 3, phase: Both, result: true, elemwis: true},
	OpStore:       {name: "store", args: 3, phase: Both, effect: true, elemwis: true},
	OpAtomicMax:   {name: "atomic_max", args: 3, phase: Both, effect: true, elemwis: true},
	OpAtomicAdd:   {name: "atomic_add", args: 3, phase: Both, effect: true, elemwis: true},
	OpReduce:      {name: "reduce", args: 1, phase: Both, result: true, axis: true},
	OpTrans:       {name: "trans", args: 1, phase: Both, result: true},
	OpFor:         {name: "for", args: -1, phase: Both, effect: true},
	OpLoopVar:     {name: "loop_var", args: 0, phase: Both, result: true},
	OpYield:       {name: "yield", args: -1, phase: Both, effect: true},
	OpForResult:   {name: "for_result", args: 1, phase: Both, result: true},
	OpConvert:     {name: "convert", args: 1, phase: PhaseThreads, result: true},
	OpLDSStore:    {name: "lds_store", args: 1, phase: PhaseThreads, effect: true},
	OpLDSLoad:     {name: "lds_load", args: 0, phase: PhaseThreads, result: true, effect: true},
	OpBarrier:     {name: "barrier", args: 0, phase: PhaseThreads, effect: true},
	OpReduceLanes: {name: "reduce_lanes", args: 1, phase: PhaseThreads, result: true, axis: true},
	OpReduceWave:  {name: "reduce_wave", args: 1, phase: PhaseThreads, result: true, axis: true},
	OpReduceWaves: {name: "reduce_waves", args: 1, phase: PhaseThreads, result: true, axis: true, effect: true},
}

func (o Op) info() *opInfo {
	if o == OpInvalid || o >= numOps || ops[o].name == "" {
		panic("BUG: no ops table entry for op " + strconv.Itoa(int(o)))
	}
	return &ops[o]
}

// Name is the op's printed name.
func (o Op) Name() string { return o.info().name }

// IsElementwise reports whether the op maps equal-shaped operands element by element.
func (o Op) IsElementwise() bool { return o.info().elemwis }

// IsCompare reports whether the op yields bool.
func (o Op) IsCompare() bool { return o.info().compare }

// HasEffect reports whether the op writes memory or synchronizes.
func (o Op) HasEffect() bool { return o.info().effect }

// ReduceKind is the combining function of a reduction or an atomic.
type ReduceKind uint8

const (
	RMax ReduceKind = iota
	RSum
	RMin
)

// MemOrder is the memory ordering of an atomic, as in C++ (and HIP's __ATOMIC_*).
type MemOrder uint8

const (
	Relaxed MemOrder = iota
	AcqRel
	SeqCst
)

// MemScope is the set of threads an atomic is ordered with.
type MemScope uint8

const (
	ScopeWorkgroup MemScope = iota
	ScopeAgent              // the whole device
	ScopeSystem             // device and host
)
