package ir

import (
	"reflect"
	"strconv"
)

// Op is an operation. Each constant's doc line is its printed form; every
// fact about an op — its operands by role, its attribute's type, the phases
// it may appear in, its effects, its type rule, whether it is placed, a
// leaf or a move, its cost — is one row of the ops table below, which the
// verifier, the printer, the passes, the interpreter and the emitter read;
// what one pass does with an op is that op's entry in the pass's own
// Rules table.
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
	// v = arange [n] <tile<nxi32>>: the integer tile 0, 1, …, n-1.
	OpArange
	// v = splat <t> x: a scalar copied into every element (every register, in the lanes phase).
	OpSplat
	// v = expand_dims [axis] <t> x: a new axis of extent 1.
	OpExpandDims
	// v = broadcast <t> x: axes of extent 1 stretched to the result's shape.
	OpBroadcast
	// v = trans <t> x: a 2-D transpose.
	OpTrans
	// v = rotate [axis=a shift=s] <t> x: element i of axis a takes element (i+s) mod n.
	OpRotate

	// v = add x y
	OpAdd
	// v = sub x y
	OpSub
	// v = mul x y
	OpMul
	// v = div x y: IEEE division for floats (correctly rounded), truncating for ints.
	OpDiv
	// v = rem x y: integer remainder (the sign of x).
	OpRem
	// v = max x y: IEEE maxNum: a NaN operand yields the other operand; +0 > -0.
	OpMax
	// v = min x y: IEEE minNum.
	OpMin
	// v = and x y: logical (bool) or bitwise (int) and.
	OpAnd
	// v = or x y
	OpOr
	// v = xor x y
	OpXor
	// v = shl x y: x shifted left by y mod its bit width.
	OpShl
	// v = shr x y: arithmetic shift right by y mod the bit width.
	OpShr
	// v = shru x y: logical shift right by y mod the bit width.
	OpShrU
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
	// v = rsqrt x: 1/sqrt(x), each step correctly rounded in f32.
	OpRsqrt
	// v = pow2_floor x: the largest power of two not above x (x > 0 finite); x otherwise.
	OpPow2Floor
	// v = cast x: conversion to the result's element type. To FP8 it rounds to
	// nearest even and saturates to the format's finite max (see package fp8);
	// from i32 to e8m0 it keeps the low byte, the biased exponent.
	OpCast
	// v = bitcast x: the same bits as another type of the same width (f32 ↔ i32).
	OpBitcast
	// v = where c x y
	OpWhere
	// v = fma x y z: x·y + z rounded once (f32), as every target's fused multiply-add.
	OpFMA
	// v = ptr_add p offs: p advanced by offs elements.
	OpPtrAdd
	// v = assume [div=d contig=c] x: x, asserted to be a multiple of d in runs of c consecutive elements.
	OpAssume
	// v = load [vec=n uniform] <t> p mask other: elements at p where mask, other elsewhere.
	OpLoad
	// store [vec=n uniform] p x mask
	OpStore
	// v = atomic [kind order scope] <t> p x mask: p's old value where mask; combines x into p.
	OpAtomic
	// v = reduce [axis=a kind] <t> x: the reduction of axis a of x.
	OpReduce
	// for lo hi step inits… (vars) {body}: a counted loop whose body carries values.
	OpFor
	// v = loop_var [i] <t>: in a loop body, the induction variable (0) or carried value i.
	OpLoopVar
	// yield xs…: the carried values for the next iteration.
	OpYield
	// v = for_result [i] <t> f: carried value i after loop f.
	OpForResult
	// if c {body}: the body runs where c holds; c is the same in every lane.
	OpIf
	// signal p n: once the program's earlier memory effects are done (a
	// barrier), one lane adds n to the i32 at p, a release at agent scope.
	OpSignal
	// wait p n: the program waits until the i32 at p is at least n (one
	// lane's acquire at agent scope, then a barrier). A kernel that waits
	// needs its programs resident at once (see Func.Waits).
	OpWait

	// v = stage [vec=n] <t> p mask other: a load whose elements go to a
	// region of LDS of their own, for the kernel's whole run (other is 0),
	// asynchronously where the target can: read back with unstage only.
	OpStage
	// v = unstage [rows] <t> st r0: rows r0 … r0+rows-1 of staged 2-D tile
	// st, read from LDS (after the copies are done: a wait and a barrier).
	OpUnstage

	// v = convert <t> x: the same tile in another layout (the layout phase only).
	OpConvert

	// v = tid <regs<1xi32>>: the lane's index in the block.
	OpTid
	// v = regconst [c0 c1 …] <regs<nxi32>>: register r holds c_r, in every lane.
	OpRegConst
	// v = gather_regs [m0 m1 …] x: register r copies x's register m_r.
	OpGatherRegs
	// v = reduce_regs [kind n=N stride=S] x: each lane folds groups of N registers (see FoldAttr).
	OpReduceRegs
	// v = butterfly [kind lanes^a..b] x: x ⊕= shfl_xor(x, a), then a·2, …, b.
	OpButterfly
	// v = shfl_xor [lane^m] x: each register from lane ^ m of the same wave.
	OpShflXor
	// lds_store [vec=n] addr x mask: each register to LDS at its byte address where mask.
	OpLDSStore
	// v = lds_load [vec=n] <t> addr: each register from LDS at its byte address.
	OpLDSLoad
	// v = lds_reduce [kind count=c stride=s] <t> addr: the fold of c LDS values at addr, addr+s, ….
	OpLDSReduce
	// barrier: every lane of the block waits here (LDS accesses before it are visible after).
	OpBarrier
	// lds_copy [vec=n] addr p mask own: where own, each register's element
	// from global p to LDS at its byte address where mask, 0 elsewhere (a
	// replicated element is written by its owner alone); on NVIDIA a
	// cp.async that completes by the lane's next async_wait.
	OpLDSCopy
	// async_wait: the lane's lds_copy writes are done (a barrier then shows them to the block).
	OpAsyncWait

	numOps
)

// Phase is a stage of the pipeline. The DSL builds the tile phase; the
// layout pass gives every tile a layout; the expand pass rewrites tiles into
// the registers of each lane, with every layout rule written out as index
// arithmetic and explicit data movement.
type Phase uint8

const (
	PhaseTile   Phase = 1 << iota // built by the DSL
	PhaseLayout                   // every tile has a layout
	PhaseLanes                    // per-lane registers: what the interpreter runs and the emitter prints

	tiles = PhaseTile | PhaseLayout
	all   = PhaseTile | PhaseLayout | PhaseLanes
)

func (p Phase) String() string {
	switch p {
	case PhaseTile:
		return "tile"
	case PhaseLayout:
		return "layout"
	case PhaseLanes:
		return "lanes"
	}
	return "phase(" + strconv.Itoa(int(p)) + ")"
}

// Role is what an operand is for; accessors find operands by role.
type Role uint8

const (
	RoleX      Role = iota + 1 // an operand of a computation
	RolePtr                    // the address of a global access
	RoleOffset                 // what a pointer is moved by
	RoleData                   // the value a store or atomic writes
	RoleMask                   // where an access happens
	RoleOther                  // what a masked-off load yields
	RoleCond                   // a condition
	RoleLo                     // loop bounds
	RoleHi
	RoleStep
	RoleInit  // a loop's initial carried values (variadic)
	RoleYield // yielded values (variadic)
	RoleLoop  // the loop a for_result reads
	RoleAddr  // an LDS byte address
)

// Effect says what an op does besides computing its result.
type Effect uint8

const (
	ReadsMem  Effect = 1 << iota // global or LDS memory: not moved across writes or barriers
	WritesMem                    // never removed
	Sync                         // a barrier
	Region                       // holds a body
	Ends                         // ends its block (yield)
)

// Cost is how the cost model counts an op's instructions a thread.
type Cost uint8

const (
	CostRegs   Cost = iota // one a register of its result
	CostFree               // folded into addresses, immediates or control flow
	CostVector             // one a 16-byte vector it moves between registers and memory
)

type opInfo struct {
	name    string
	roles   []Role // the last one repeats when variadic
	vararg  bool
	phase   Phase
	result  bool
	elem    bool         // elementwise: operands and result of one shape (registers, in the lanes phase)
	attr    reflect.Type // nil: no attribute
	effect  Effect
	comm    bool // commutative
	check   func(c *checker, v *Value) error
	compare bool // result is bool
	// placed: the value is its place (a parameter, a loop's variable or
	// result), never merged with an equal value nor moved.
	placed bool
	// leaf: a scalar read from the launch alone (arguments, sizes, the
	// grid, constants), the same in every thread and in every phase.
	leaf bool
	// move: the result is operand 0's values rearranged or copied, none
	// computed.
	move bool
	cost Cost
}

var (
	tAxis    = reflect.TypeFor[AxisAttr]()
	tInt     = reflect.TypeFor[IntAttr]()
	tConst   = reflect.TypeFor[ConstAttr]()
	tName    = reflect.TypeFor[NameAttr]()
	tReduce  = reflect.TypeFor[ReduceAttr]()
	tRotate  = reflect.TypeFor[RotateAttr]()
	tAssume  = reflect.TypeFor[AssumeAttr]()
	tMem     = reflect.TypeFor[*MemAttr]()
	tAtomic  = reflect.TypeFor[AtomicAttr]()
	tConsts  = reflect.TypeFor[ConstsAttr]()
	tRegMap  = reflect.TypeFor[RegMapAttr]()
	tFold    = reflect.TypeFor[FoldAttr]()
	tButter  = reflect.TypeFor[ButterflyAttr]()
	tLane    = reflect.TypeFor[LaneAttr]()
	tLDSFold = reflect.TypeFor[LDSFoldAttr]()
)

var (
	rX    = []Role{RoleX}
	rXY   = []Role{RoleX, RoleX}
	rLoad = []Role{RolePtr, RoleMask, RoleOther}
	rRMW  = []Role{RolePtr, RoleData, RoleMask}
)

func arith(name string, comm bool) opInfo {
	return opInfo{name: name, roles: rXY, phase: all, result: true, elem: true, comm: comm, check: checkArith}
}

func ints(name string, check func(*checker, *Value) error) opInfo {
	return opInfo{name: name, roles: rXY, phase: all, result: true, elem: true, check: check}
}

func cmp(name string, check func(*checker, *Value) error) opInfo {
	return opInfo{name: name, roles: rXY, phase: all, result: true, elem: true, compare: true, check: check}
}

func unary(name string, check func(*checker, *Value) error) opInfo {
	return opInfo{name: name, roles: rX, phase: all, result: true, elem: true, check: check}
}

// ops is filled in init: its type rules read attributes, whose accessors
// name ops in their messages.
var ops [numOps]opInfo

func init() { ops = opTable() }

func opTable() [numOps]opInfo {
	return [numOps]opInfo{
		OpParam:       {name: "param", placed: true, leaf: true, cost: CostFree, phase: all, result: true, attr: tName, check: checkParam},
		OpSize:        {name: "size", placed: true, leaf: true, cost: CostFree, phase: all, result: true, attr: tName, check: checkSize},
		OpProgramID:   {name: "program_id", leaf: true, cost: CostFree, phase: all, result: true, attr: tAxis, check: checkGridAxis},
		OpNumPrograms: {name: "num_programs", leaf: true, cost: CostFree, phase: all, result: true, attr: tAxis, check: checkGridAxis},
		OpConst:       {name: "const", leaf: true, cost: CostFree, phase: all, result: true, attr: tConst, check: checkConst},
		OpArange:      {name: "arange", cost: CostFree, phase: tiles, result: true, attr: tInt, check: checkArange},
		OpSplat:       {name: "splat", move: true, cost: CostFree, roles: rX, phase: all, result: true, check: checkSplat},
		OpExpandDims:  {name: "expand_dims", move: true, cost: CostFree, roles: rX, phase: tiles, result: true, attr: tAxis, check: checkSameElem},
		OpBroadcast:   {name: "broadcast", move: true, cost: CostFree, roles: rX, phase: tiles, result: true, check: checkBroadcast},
		OpTrans:       {name: "trans", move: true, roles: rX, phase: tiles, result: true, check: checkSameElem},
		OpRotate:      {name: "rotate", move: true, roles: rX, phase: tiles, result: true, attr: tRotate, check: checkRotate},

		OpAdd:  arith("add", true),
		OpSub:  arith("sub", false),
		OpMul:  arith("mul", true),
		OpDiv:  arith("div", false),
		OpMax:  arith("max", true),
		OpMin:  arith("min", true),
		OpRem:  ints("rem", checkInts),
		OpAnd:  ints("and", checkBits),
		OpOr:   ints("or", checkBits),
		OpXor:  ints("xor", checkBits),
		OpShl:  ints("shl", checkInts),
		OpShr:  ints("shr", checkInts),
		OpShrU: ints("shru", checkInts),
		OpLt:   cmp("lt", checkArith),
		OpLe:   cmp("le", checkArith),
		OpGt:   cmp("gt", checkArith),
		OpGe:   cmp("ge", checkArith),
		OpEq:   cmp("eq", checkEq),
		OpNe:   cmp("ne", checkEq),

		OpAbs:       unary("abs", checkNumeric),
		OpNeg:       unary("neg", checkNumeric),
		OpRsqrt:     unary("rsqrt", checkF32),
		OpPow2Floor: unary("pow2_floor", checkF32),
		OpCast:      unary("cast", checkCast),
		OpBitcast:   unary("bitcast", checkBitcast),
		OpWhere:     {name: "where", roles: []Role{RoleCond, RoleX, RoleX}, phase: all, result: true, elem: true, check: checkWhere},
		OpFMA:       {name: "fma", roles: []Role{RoleX, RoleX, RoleX}, phase: all, result: true, elem: true, check: checkFMA},
		OpPtrAdd:    {name: "ptr_add", cost: CostFree, roles: []Role{RolePtr, RoleOffset}, phase: all, result: true, elem: true, check: checkPtrAdd},
		OpAssume:    {name: "assume", move: true, roles: rX, phase: all, result: true, elem: true, attr: tAssume, check: checkAssume},
		OpLoad:      {name: "load", cost: CostVector, roles: rLoad, phase: all, result: true, elem: true, attr: tMem, effect: ReadsMem, check: checkLoad},
		OpStore:     {name: "store", cost: CostVector, roles: rRMW, phase: all, elem: true, attr: tMem, effect: WritesMem, check: checkStore},
		OpAtomic:    {name: "atomic", cost: CostVector, roles: rRMW, phase: all, result: true, elem: true, attr: tAtomic, effect: ReadsMem | WritesMem, check: checkAtomic},
		OpReduce:    {name: "reduce", roles: rX, phase: tiles, result: true, attr: tReduce, check: checkReduce},
		OpFor:       {name: "for", cost: CostFree, roles: []Role{RoleLo, RoleHi, RoleStep, RoleInit}, vararg: true, phase: all, effect: Region, check: checkFor},
		OpLoopVar:   {name: "loop_var", placed: true, cost: CostFree, phase: all, result: true, attr: tInt},
		OpYield:     {name: "yield", cost: CostFree, roles: []Role{RoleYield}, vararg: true, phase: all, effect: Ends},
		OpForResult: {name: "for_result", placed: true, cost: CostFree, roles: []Role{RoleLoop}, phase: all, result: true, attr: tInt, check: checkForResult},
		OpIf:        {name: "if", cost: CostFree, roles: []Role{RoleCond}, phase: all, effect: Region, check: checkIf},
		OpSignal:    {name: "signal", roles: []Role{RolePtr, RoleX}, phase: all, effect: ReadsMem | WritesMem | Sync, check: checkSync},
		OpWait:      {name: "wait", roles: []Role{RolePtr, RoleX}, phase: all, effect: ReadsMem | WritesMem | Sync, check: checkSync},

		OpStage:   {name: "stage", roles: rLoad, phase: tiles, result: true, elem: true, attr: tMem, effect: ReadsMem | WritesMem, check: checkStage},
		OpUnstage: {name: "unstage", roles: rXY, phase: tiles, result: true, attr: tInt, effect: ReadsMem, check: checkUnstage},

		OpConvert: {name: "convert", move: true, roles: rX, phase: PhaseLayout, result: true, check: checkSameElem},

		OpTid:        {name: "tid", cost: CostFree, phase: PhaseLanes, result: true, check: checkTid},
		OpRegConst:   {name: "regconst", cost: CostFree, phase: PhaseLanes, result: true, attr: tConsts, check: checkRegConst},
		OpGatherRegs: {name: "gather_regs", move: true, cost: CostFree, roles: rX, phase: PhaseLanes, result: true, attr: tRegMap, check: checkGather},
		OpReduceRegs: {name: "reduce_regs", roles: rX, phase: PhaseLanes, result: true, attr: tFold, check: checkReduceRegs},
		OpButterfly:  {name: "butterfly", roles: rX, phase: PhaseLanes, result: true, attr: tButter, check: checkButterfly},
		OpShflXor:    {name: "shfl_xor", move: true, roles: rX, phase: PhaseLanes, result: true, attr: tLane, check: checkShfl},
		OpLDSStore:   {name: "lds_store", cost: CostVector, roles: []Role{RoleAddr, RoleData, RoleMask}, phase: PhaseLanes, attr: tMem, effect: WritesMem, check: checkLDSStore},
		OpLDSLoad:    {name: "lds_load", cost: CostVector, roles: []Role{RoleAddr}, phase: PhaseLanes, result: true, attr: tMem, effect: ReadsMem, check: checkLDSLoad},
		OpLDSReduce:  {name: "lds_reduce", roles: []Role{RoleAddr}, phase: PhaseLanes, result: true, attr: tLDSFold, effect: ReadsMem, check: checkLDSReduce},
		OpBarrier:    {name: "barrier", phase: PhaseLanes, effect: Sync},
		OpLDSCopy:    {name: "lds_copy", cost: CostVector, roles: []Role{RoleAddr, RolePtr, RoleMask, RoleCond}, phase: PhaseLanes, attr: tMem, effect: ReadsMem | WritesMem, check: checkLDSCopy},
		OpAsyncWait:  {name: "async_wait", phase: PhaseLanes, effect: Sync},
	}
}

func (o Op) info() *opInfo {
	if o == OpInvalid || o >= numOps || ops[o].name == "" {
		panic("BUG: no ops table entry for op " + strconv.Itoa(int(o)))
	}
	return &ops[o]
}

// Name is the op's printed name.
func (o Op) Name() string { return o.info().name }

// IsElementwise reports whether the op maps equal-shaped operands element by
// element (register by register, in the lanes phase).
func (o Op) IsElementwise() bool { return o.info().elem }

// IsCompare reports whether the op yields bool.
func (o Op) IsCompare() bool { return o.info().compare }

// IsCommutative reports whether the op's two operands may be swapped.
func (o Op) IsCommutative() bool { return o.info().comm }

// Effect is what the op does besides computing its result.
func (o Op) Effect() Effect { return o.info().effect }

// HasResult reports whether the op produces a value.
func (o Op) HasResult() bool { return o.info().result }

// Removable reports whether a value of this op may go when nothing uses it.
func (o Op) Removable() bool {
	return o.info().effect&(WritesMem|Sync|Region|Ends) == 0 && o != OpParam && o != OpSize
}

// IsPlaced reports whether the op's value is its place (a parameter, a
// size, a loop's variable or result): never merged with an equal value nor
// moved.
func (o Op) IsPlaced() bool { return o.info().placed }

// IsLeaf reports whether the op is a scalar read from the launch alone
// (arguments, sizes, the grid, constants): the same in every thread and
// every phase.
func (o Op) IsLeaf() bool { return o.info().leaf }

// IsMove reports whether the op's result is operand 0's values rearranged
// or copied, none computed (so any fact of each value carries over).
func (o Op) IsMove() bool { return o.info().move }

// Cost is how the cost model counts the op's instructions.
func (o Op) Cost() Cost { return o.info().cost }

// InPhase reports whether the op may appear in phase p.
func (o Op) InPhase(p Phase) bool { return o.info().phase&p != 0 }

// Arg is v's operand of role r (the first, for a repeated role), or nil.
func (v *Value) Arg(r Role) *Value {
	roles := v.Op.info().roles
	for i, x := range roles {
		if x == r && i < len(v.Args) {
			return v.Args[i]
		}
	}
	return nil
}

// ArgIndex is the position of role r among v's operands, or -1.
func (v *Value) ArgIndex(r Role) int {
	for i, x := range v.Op.info().roles {
		if x == r && i < len(v.Args) {
			return i
		}
	}
	return -1
}

// RoleOf is the role of operand i.
func (v *Value) RoleOf(i int) Role {
	info := v.Op.info()
	if i < len(info.roles) {
		return info.roles[i]
	}
	if info.vararg && len(info.roles) > 0 {
		return info.roles[len(info.roles)-1]
	}
	panic("BUG: " + info.name + " has no operand " + strconv.Itoa(i))
}

// Ptr is a global access's pointer.
func (v *Value) Ptr() *Value { return v.Arg(RolePtr) }

// Mask is an access's mask.
func (v *Value) Mask() *Value { return v.Arg(RoleMask) }

// Data is what a store, an atomic or an LDS store writes.
func (v *Value) Data() *Value { return v.Arg(RoleData) }

// Other is what a masked-off load yields.
func (v *Value) Other() *Value { return v.Arg(RoleOther) }

// Addr is an LDS access's byte address.
func (v *Value) Addr() *Value { return v.Arg(RoleAddr) }

// Cond is a where's or an if's condition.
func (v *Value) Cond() *Value { return v.Arg(RoleCond) }

// Inits are a loop's initial carried values.
func (v *Value) Inits() []*Value { return v.Args[3:] }

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
