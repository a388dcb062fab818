// Package interp executes a lowered kernel — the lanes program of package
// lower — on the CPU, lane by lane. Every value is a register file per lane
// (or one value, if uniform), and every op is the op the emitter prints:
// the interpreter knows nothing of layouts, so what it runs is exactly the
// index arithmetic, register maps, shuffles, LDS round trips and barriers
// that lowering wrote, and its results are bit-identical to the emitted
// code's.
//
// The lanes of a block run in lockstep, op by op. A barrier is then a no-op
// for ordering, but the interpreter checks that the kernel has the barriers
// it needs by recording, per LDS byte, which lane last wrote and read it
// between which barriers: a cross-lane access not separated by a barrier is
// a race. It also checks what lowering claims and the GPU relies on: global
// and LDS accesses in bounds; vectors contiguous and aligned to their
// width; one mask bit standing for a vector only where the mask is indeed
// the same over it; loop bounds and if conditions the same in every lane;
// assumed divisibility. Blocks run in parallel on the host's cores. A
// kernel that waits on other programs (ir.Func.Waits) has its grid
// clamped to MaxResident programs (num_programs reads the clamp, as on a
// GPU, which holds more), runs them all at once, each on its own
// goroutine, and reports a wait that no running program can end as a
// deadlock, where the GPU would hang.
package interp

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/fp8gen/fp8gen/ir"
)

// Launch runs f over a grid of programs. args holds, in f.Params order, a
// []byte for each pointer parameter (its host memory, little-endian) and an
// int for each size.
func Launch(f *ir.Func, grid [3]int, args []any) error { return LaunchTraced(f, grid, args, nil) }

// LaunchTraced is Launch that also calls visit, from one goroutine at a
// time, with each value the first program executes.
func LaunchTraced(f *ir.Func, grid [3]int, args []any, visit func(*ir.Value)) error {
	if f.Phase != ir.PhaseLanes {
		return fmt.Errorf("%s: the kernel is in the %v phase; lower it first", f.Name, f.Phase)
	}
	if len(args) != len(f.Params) {
		return fmt.Errorf("%s takes %d arguments, got %d", f.Name, len(f.Params), len(args))
	}
	m := &machine{f: f, grid: grid, slot: map[*ir.Value]int{}, visit: visit}
	for i, p := range f.Params {
		if p.Op == ir.OpParam { // a buffer; else a size
			b, ok := args[i].([]byte)
			if !ok {
				return fmt.Errorf("%s: argument %s: want []byte, got %T", f.Name, p.ArgName(), args[i])
			}
			m.bufs = append(m.bufs, b)
			m.names = append(m.names, p.ArgName())
			m.args = append(m.args, uint64(len(m.bufs)-1)<<48)
		} else {
			n, ok := args[i].(int)
			if !ok {
				return fmt.Errorf("%s: argument %s: want int, got %T", f.Name, p.ArgName(), args[i])
			}
			if p.Type.DType == ir.I32 && (n < math.MinInt32 || n > math.MaxInt32) {
				return fmt.Errorf("%s: argument %s = %d does not fit in i32", f.Name, p.ArgName(), n)
			}
			m.args = append(m.args, uint64(int64(n)))
		}
	}
	for i, g := range grid {
		if g < 0 {
			return fmt.Errorf("%s: grid %v: extent %d along axis %d is negative", f.Name, grid, g, i)
		}
	}
	total := grid[0] * grid[1] * grid[2]
	if total == 0 {
		return nil
	}
	waits := f.Waits()
	if waits {
		// As a device holds only so many programs at once, and a kernel
		// that waits reads num_programs: fewer programs.
		if grid[1] != 1 || grid[2] != 1 {
			return fmt.Errorf("%s waits on other programs: its grid %v must be one-dimensional", f.Name, grid)
		}
		if MaxResident < 1 {
			return fmt.Errorf("%s waits on other programs: interp.MaxResident is %d, want at least 1", f.Name, MaxResident)
		}
		grid[0] = min(grid[0], MaxResident)
		total = grid[0]
		m.grid = grid
	}
	m.sync.L = &m.atomic
	f.Walk(func(v *ir.Value) {
		m.slot[v] = len(m.sizes)
		m.sizes = append(m.sizes, max(v.Type.Regs, 1)*f.Threads)
		if v.Type.Regs == 0 {
			m.sizes[len(m.sizes)-1] = 1
		}
	})
	workers := min(runtime.GOMAXPROCS(0), total)
	if waits {
		workers = total
	}
	m.live = workers
	next := make(chan int, total)
	for i := 0; i < total; i++ {
		next <- i
	}
	close(next)
	// Programs are handed out in id order and a worker stops at its first
	// failure, so (for a kernel that does not wait) every program below the
	// lowest failing id has run: that failure is the one reported, whatever
	// the number of workers.
	type failure struct {
		id  int
		err error
	}
	fails := make([]failure, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			defer m.exit()
			b := m.newBlock()
			for id := range next {
				pid := [3]int{id % grid[0], id / grid[0] % grid[1], id / (grid[0] * grid[1])}
				if err := b.run(pid); err != nil {
					fails[w] = failure{id, fmt.Errorf("program %v: %w", pid, err)}
					return
				}
			}
		}(w)
	}
	wg.Wait()
	// before orders failures: a program's own error before the deadlock it
	// left the others in, then the lower id.
	before := func(a, b failure) bool {
		if da, db := errors.Is(a.err, errDeadlock), errors.Is(b.err, errDeadlock); da != db {
			return db
		}
		return a.id < b.id
	}
	first := failure{id: total}
	for _, f := range fails {
		if f.err != nil && (first.err == nil || before(f, first)) {
			first = f
		}
	}
	return first.err
}

// MaxResident is the most programs the interpreter runs of a kernel that
// waits on other programs; it runs them all at once. A variable so that
// a test may run such a kernel on fewer (not while another launches).
var MaxResident = 8

type machine struct {
	f      *ir.Func
	grid   [3]int
	bufs   [][]byte
	names  []string
	args   []uint64
	atomic sync.Mutex // atomics, signals and waits; sync's lock
	// A kernel that waits: live workers, those waiting since the last
	// signal, and whether they can never go on.
	sync          sync.Cond
	live, waiting int
	dead          bool
	slot          map[*ir.Value]int // the value's register file
	sizes         []int
	visit         func(*ir.Value) // LaunchTraced's, for program 0
}

// block is the state of one program: a register file per value.
type block struct {
	m    *machine
	pid  [3]int
	n    int // lanes
	regs [][]uint64
	lds  []byte
	race ldsTracker
	// pending marks the LDS bytes an lds_copy wrote that no async_wait has
	// completed yet: on the GPU they may not have landed, so reading or
	// overwriting them is an error; copies are those writes, which the
	// race tracker hears of at the wait.
	pending []bool
	copies  []ldsCopied
}

func (m *machine) newBlock() *block {
	b := &block{m: m, n: m.f.Threads, regs: make([][]uint64, len(m.sizes))}
	for i, s := range m.sizes {
		b.regs[i] = make([]uint64, s)
	}
	b.lds = make([]byte, m.f.LDSBytes)
	b.pending = make([]bool, m.f.LDSBytes)
	b.race.init(m.f.LDSBytes)
	return b
}

func (b *block) run(pid [3]int) error {
	b.pid = pid
	b.race.barrier() // programs never share LDS: a new program starts a new epoch
	b.copies = b.copies[:0]
	clear(b.pending)
	return b.exec(b.m.f.Entry)
}

func (b *block) exec(blk *ir.Block) error {
	for _, v := range blk.Values {
		if err := b.step(v); err != nil {
			return err
		}
	}
	return nil
}

func where(v *ir.Value) string {
	return fmt.Sprintf("%s:%d: %s", v.Pos.File, v.Pos.Line, v.Op.Name())
}

// file is v's register file: one word if uniform, else lanes × registers.
func (b *block) file(v *ir.Value) []uint64 { return b.regs[b.m.slot[v]] }

// operand reads an operand register by register, whatever its form: a
// uniform value or a single register stands for every register.
type operand struct {
	w      []uint64
	ls, rs int
}

func (b *block) op(v *ir.Value) operand {
	w := b.file(v)
	switch n := v.Type.Regs; n {
	case 0:
		return operand{w, 0, 0}
	case 1:
		return operand{w, 1, 0}
	default:
		return operand{w, n, 1}
	}
}

func (o operand) at(t, r int) uint64 { return o.w[t*o.ls+r*o.rs] }

// lanes is the number of lanes and registers a result of v covers.
func (b *block) shape(v *ir.Value) (lanes, regs int) {
	if v.Type.Regs == 0 {
		return 1, 1
	}
	return b.n, v.Type.Regs
}

// uniform is the one value of a scalar every lane must agree on.
func (b *block) uniform(v *ir.Value, what string) (uint64, error) {
	o := b.op(v)
	x := o.at(0, 0)
	if v.Type.Regs == 0 {
		return x, nil
	}
	for t := 1; t < b.n; t++ {
		if o.at(t, 0) != x {
			return 0, fmt.Errorf("%s: %s differs between lanes 0 and %d (%d, %d): the GPU would diverge", where(v), what, t, int64(x), int64(o.at(t, 0)))
		}
	}
	return x, nil
}

func (b *block) step(v *ir.Value) error {
	if b.m.visit != nil && b.pid == [3]int{} {
		b.m.visit(v)
		if v.Body != nil {
			for _, x := range v.Body.Vars {
				b.m.visit(x)
			}
		}
	}
	if r := stepRules.Of(v.Op); r != nil {
		return r(b, v, b.file(v))
	}
	if !v.Op.IsElementwise() || !v.Op.InPhase(ir.PhaseLanes) {
		panic("BUG: interp has no case for " + v.Op.Name())
	}
	return b.elementwise(v)
}

// A step rule runs op v for the block's lanes into out, v's registers.
type stepRule func(b *block, v *ir.Value, out []uint64) error

// stepRules is what the interpreter does for each lanes-phase op that is
// not elementwise arithmetic (ir's evaluation); filled in init, as the
// loop and the if run blocks, which step through it.
var stepRules ir.Rules[stepRule]

func init() {
	stepRules = ir.Rules[stepRule]{
		ir.OpParam: argument,
		ir.OpSize:  argument,
		ir.OpProgramID: func(b *block, v *ir.Value, out []uint64) error {
			out[0] = uint64(int64(b.pid[v.Axis()]))
			return nil
		},
		ir.OpNumPrograms: func(b *block, v *ir.Value, out []uint64) error {
			out[0] = uint64(int64(b.m.grid[v.Axis()]))
			return nil
		},
		ir.OpConst: func(b *block, v *ir.Value, out []uint64) error {
			out[0] = ir.ConstBits(v.Type.DType, v.Const())
			return nil
		},
		ir.OpTid: func(b *block, v *ir.Value, out []uint64) error {
			for t := range b.n {
				out[t] = uint64(t)
			}
			return nil
		},
		ir.OpRegConst: func(b *block, v *ir.Value, out []uint64) error {
			c := v.Consts()
			for t := range b.n {
				for r, x := range c {
					out[t*len(c)+r] = ir.Trunc(v.Type.DType, x)
				}
			}
			return nil
		},
		ir.OpSplat: func(b *block, v *ir.Value, out []uint64) error {
			x := b.op(v.Args[0])
			lanes, regs := b.shape(v)
			for t := range lanes {
				for r := range regs {
					out[t*regs+r] = x.at(t, 0)
				}
			}
			return nil
		},
		ir.OpGatherRegs: func(b *block, v *ir.Value, out []uint64) error {
			x := b.op(v.Args[0])
			m := v.RegMap()
			for t := range b.n {
				for r, s := range m {
					out[t*len(m)+r] = x.at(t, s)
				}
			}
			return nil
		},
		ir.OpReduceRegs: func(b *block, v *ir.Value, _ []uint64) error {
			b.reduceRegs(v)
			return nil
		},
		ir.OpButterfly: func(b *block, v *ir.Value, _ []uint64) error {
			b.butterfly(v)
			return nil
		},
		ir.OpShflXor: func(b *block, v *ir.Value, out []uint64) error {
			x := b.op(v.Args[0])
			n, mask := v.Type.Regs, v.Lane()
			for t := range b.n {
				for r := range n {
					out[t*n+r] = x.at(t^mask, r)
				}
			}
			return nil
		},
		ir.OpLoad:      memRule((*block).load),
		ir.OpStore:     memRule((*block).store),
		ir.OpAtomic:    memRule((*block).atomicOp),
		ir.OpLDSStore:  memRule((*block).ldsStore),
		ir.OpLDSLoad:   memRule((*block).ldsLoad),
		ir.OpLDSReduce: memRule((*block).ldsReduce),
		ir.OpBarrier: func(b *block, _ *ir.Value, _ []uint64) error {
			b.race.barrier()
			return nil
		},
		ir.OpLDSCopy:   memRule((*block).ldsCopy),
		ir.OpAsyncWait: memRule((*block).asyncWait),
		ir.OpSignal:    memRule((*block).signal),
		ir.OpWait:      memRule((*block).wait),
		ir.OpFor:       memRule((*block).loop),
		ir.OpIf: func(b *block, v *ir.Value, _ []uint64) error {
			c, err := b.uniform(v.Args[0], "the if condition")
			if err != nil || c == 0 {
				return err
			}
			return b.exec(v.Body)
		},
		ir.OpYield:   func(*block, *ir.Value, []uint64) error { return nil }, // set by loop
		ir.OpLoopVar: func(*block, *ir.Value, []uint64) error { return nil },
		ir.OpForResult: func(b *block, v *ir.Value, out []uint64) error {
			_, carried := v.Args[0].ForVars()
			copy(out, b.file(carried[v.Index()]))
			return nil
		},
		ir.OpWhere:  (*block).where,
		ir.OpFMA:    (*block).fma,
		ir.OpPtrAdd: (*block).ptrAdd,
		ir.OpAssume: (*block).assume,
	}
}

// memRule is a step rule of a method that needs only the value.
func memRule(f func(b *block, v *ir.Value) error) stepRule {
	return func(b *block, v *ir.Value, _ []uint64) error { return f(b, v) }
}

// argument is a parameter's or a size's value: the launch's argument.
func argument(b *block, v *ir.Value, out []uint64) error {
	for i, p := range b.m.f.Params {
		if p == v {
			out[0] = b.m.args[i]
		}
	}
	return nil
}

func (b *block) loop(v *ir.Value) error {
	var bounds [3]int64
	for i, what := range []string{"the loop's start", "the loop's end", "the loop's step"} {
		x, err := b.uniform(v.Args[i], what)
		if err != nil {
			return err
		}
		bounds[i] = int64(x)
		if v.Args[i].Type.DType == ir.I32 {
			bounds[i] = int64(int32(x))
		}
	}
	lo, hi, st := bounds[0], bounds[1], bounds[2]
	if st <= 0 {
		return fmt.Errorf("%s: loop step %d is not positive", where(v), st)
	}
	iv, carried := v.ForVars()
	for i, c := range carried {
		copy(b.file(c), b.file(v.Args[3+i]))
	}
	yield := v.Yield()
	tmp := make([][]uint64, len(carried))
	ivf := b.file(iv)
	for i := lo; i < hi; i += st {
		for j := range ivf {
			ivf[j] = ir.Trunc(iv.Type.DType, i)
		}
		if err := b.exec(v.Body); err != nil {
			return err
		}
		for j, y := range yield.Args {
			tmp[j] = append(tmp[j][:0], b.file(y)...)
		}
		for j, c := range carried {
			copy(b.file(c), tmp[j])
		}
	}
	return nil
}

func (b *block) where(v *ir.Value, out []uint64) error {
	lanes, regs := b.shape(v)
	c, x, y := b.op(v.Args[0]), b.op(v.Args[1]), b.op(v.Args[2])
	for t := range lanes {
		for r := range regs {
			if c.at(t, r) != 0 {
				out[t*regs+r] = x.at(t, r)
			} else {
				out[t*regs+r] = y.at(t, r)
			}
		}
	}
	return nil
}

func (b *block) fma(v *ir.Value, out []uint64) error {
	lanes, regs := b.shape(v)
	x, y, z := b.op(v.Args[0]), b.op(v.Args[1]), b.op(v.Args[2])
	for t := range lanes {
		for r := range regs {
			f := ir.FMAF32(math.Float32frombits(uint32(x.at(t, r))), math.Float32frombits(uint32(y.at(t, r))), math.Float32frombits(uint32(z.at(t, r))))
			out[t*regs+r] = uint64(math.Float32bits(f))
		}
	}
	return nil
}

func (b *block) ptrAdd(v *ir.Value, out []uint64) error {
	lanes, regs := b.shape(v)
	p, o := b.op(v.Args[0]), b.op(v.Args[1])
	size := int64(v.Args[0].Type.DType.Elem().Bytes())
	od := v.Args[1].Type.DType
	for t := range lanes {
		for r := range regs {
			buf, off := ptr(p.at(t, r))
			i := int64(o.at(t, r))
			if od == ir.I32 {
				i = int64(int32(i))
			}
			out[t*regs+r] = uint64(buf)<<48 | uint64(off+i*size)&(1<<48-1)
		}
	}
	return nil
}

func (b *block) assume(v *ir.Value, out []uint64) error {
	lanes, regs := b.shape(v)
	x := b.op(v.Args[0])
	div := uint64(v.Assumption().Div)
	for t := range lanes {
		for r := range regs {
			e := x.at(t, r)
			if int64(e)%int64(div) != 0 {
				return fmt.Errorf("%s: the kernel asserts a multiple of %d, lane %d register %d holds %d", where(v), div, t, r, int64(e))
			}
			out[t*regs+r] = e
		}
	}
	return nil
}

// elementwise evaluates an arithmetic op through ir's evaluation rules.
func (b *block) elementwise(v *ir.Value) error {
	out := b.file(v)
	lanes, regs := b.shape(v)
	d := v.Args[0].Type.DType
	if len(v.Args) == 1 {
		x := b.op(v.Args[0])
		for t := range lanes {
			for r := range regs {
				out[t*regs+r] = ir.EvalUnary(v.Op, d, v.Type.DType, x.at(t, r))
			}
		}
		return nil
	}
	x, y := b.op(v.Args[0]), b.op(v.Args[1])
	f := ir.Binary(v.Op, d)
	if f == nil {
		panic(fmt.Sprintf("BUG: %s: no %s on %v past the verifier", where(v), v.Op.Name(), d))
	}
	if x.ls == regs && x.rs == 1 && y.ls == regs && y.rs == 1 {
		// Both operands laid out as the result: one flat loop.
		xs, ys := x.w[:len(out)], y.w[:len(out)]
		for i := range out {
			z, err := f(xs[i], ys[i])
			if err != nil {
				return fmt.Errorf("%s: lane %d register %d: %v", where(v), i/regs, i%regs, err)
			}
			out[i] = z
		}
		return nil
	}
	// Else one operand (or both) is the same in every register of a lane.
	for t := range lanes {
		o := out[t*regs : (t+1)*regs]
		xo, yo := t*x.ls, t*y.ls
		r, err := 0, error(nil)
		switch {
		case x.rs == 1 && y.rs == 0:
			xs, yv := x.w[xo:xo+regs], y.w[yo]
			for r = 0; r < regs && err == nil; r++ {
				o[r], err = f(xs[r], yv)
			}
		case x.rs == 0 && y.rs == 1:
			xv, ys := x.w[xo], y.w[yo:yo+regs]
			for r = 0; r < regs && err == nil; r++ {
				o[r], err = f(xv, ys[r])
			}
		default:
			for r = 0; r < regs && err == nil; r++ {
				o[r], err = f(x.w[xo+r*x.rs], y.w[yo+r*y.rs])
			}
		}
		if err != nil {
			return fmt.Errorf("%s: lane %d register %d: %v", where(v), t, r-1, err)
		}
	}
	return nil
}

// reduceRegs folds each group of registers in each lane, as FoldAttr says.
func (b *block) reduceRegs(v *ir.Value) {
	a := v.Fold()
	x := b.op(v.Args[0])
	out := b.file(v)
	n := v.Type.Regs
	d := v.Type.DType
	tmp := make([]uint64, a.N)
	for t := range b.n {
		for j := range n {
			base := (j/a.Stride)*a.Stride*a.N + j%a.Stride
			for k := range a.N {
				tmp[k] = x.at(t, base+k*a.Stride)
			}
			for k := 1; k < a.N; k++ {
				tmp[0] = ir.Fold(a.Kind, d, tmp[0], tmp[k])
			}
			out[t*n+j] = tmp[0]
		}
	}
}

// butterfly combines each lane with lane ^ First, then ^ 2·First, …
func (b *block) butterfly(v *ir.Value) {
	a := v.Butterfly()
	n := v.Type.Regs
	cur := append([]uint64(nil), b.file(v.Args[0])...)
	next := make([]uint64, len(cur))
	for k := range a.Steps {
		off := a.First << k
		for t := range b.n {
			p := t ^ off
			for r := range n {
				next[t*n+r] = ir.Fold(a.Kind, v.Type.DType, cur[t*n+r], cur[p*n+r])
			}
		}
		cur, next = next, cur
	}
	copy(b.file(v), cur)
}

// ptr splits a pointer into its buffer and byte offset.
func ptr(x uint64) (int, int64) {
	off := int64(x<<16) >> 16
	return int(x >> 48), off
}

func (b *block) access(v *ir.Value, p uint64, size int) ([]byte, error) {
	buf, off := ptr(p)
	data := b.m.bufs[buf]
	if off < 0 || off+int64(size) > int64(len(data)) {
		return nil, fmt.Errorf("%s: out-of-bounds access to %s at byte %d (%d bytes long)", where(v), b.m.names[buf], off, len(data))
	}
	return data[off : off+int64(size)], nil
}

func readBits(mem []byte) uint64 {
	var x uint64
	for i := len(mem) - 1; i >= 0; i-- {
		x = x<<8 | uint64(mem[i])
	}
	return x
}

func writeBits(mem []byte, x uint64) {
	for i := range mem {
		mem[i] = byte(x >> (8 * i))
	}
}

// vector describes the group of registers r0 … r0+vec-1 of lane t of a
// memory access: whether it moves as one vector (every mask bit set, or
// the first standing for all where lowering said so), after checking what
// the GPU needs of a vector: addresses consecutive, the first aligned to
// the whole vector, a claimed-uniform mask indeed uniform, and a mask
// claimed to hold on one interval (ends: its end bits decide) indeed so.
func vectorCheck(v *ir.Value, addr func(r int) int64, mask func(r int) bool, r0, vec, size int, uniform, ends bool) (whole bool, err error) {
	return stridedCheck(v, addr, mask, r0, vec, 1, size, uniform, ends)
}

// stridedCheck is vectorCheck for a vector of registers stride apart.
func stridedCheck(v *ir.Value, addr func(r int) int64, mask func(r int) bool, r0, vec, stride, size int, uniform, ends bool) (whole bool, err error) {
	if vec <= 1 {
		return mask(r0), nil
	}
	whole = true
	for j := range vec {
		whole = whole && mask(r0+j*stride)
	}
	if ends {
		// Set, then clear, then set again is no interval.
		for j, runs, prev := 0, 0, false; j < vec; j++ {
			on := mask(r0 + j*stride)
			if on && !prev {
				runs++
			}
			if runs > 1 {
				return false, fmt.Errorf("%s: the mask of a %d-element vector is claimed to hold on one interval, but it holds on two (register %d)", where(v), vec, r0)
			}
			prev = on
		}
		whole = mask(r0) && mask(r0+(vec-1)*stride)
	}
	if uniform {
		for j := 1; j < vec; j++ {
			if mask(r0+j*stride) != mask(r0) {
				return false, fmt.Errorf("%s: the mask of a %d-element vector is claimed uniform, but element %d differs from element 0 (register %d)", where(v), vec, j, r0)
			}
		}
		whole = mask(r0)
	}
	if !whole {
		return false, nil
	}
	a0 := addr(r0)
	for j := 1; j < vec; j++ {
		if addr(r0+j*stride) != a0+int64(j*size) {
			return false, fmt.Errorf("%s: a %d-element vector is not contiguous: element %d at byte %d, element 0 at %d", where(v), vec, j, addr(r0+j*stride), a0)
		}
	}
	if a0%int64(vec*size) != 0 && !(v.Mem().Unaligned && a0%int64(size) == 0) {
		return false, fmt.Errorf("%s: %d-byte vector access at byte offset %d is misaligned", where(v), vec*size, a0)
	}
	return true, nil
}

func (b *block) load(v *ir.Value) error {
	out := b.file(v)
	lanes, regs := b.shape(v)
	p, m, o := b.op(v.Ptr()), b.op(v.Mask()), b.op(v.Other())
	size := v.Type.DType.Bytes()
	return b.accesses(v, lanes, regs, p, m, size, func(t, r int, on bool) error {
		if !on {
			out[t*regs+r] = o.at(t, r)
			return nil
		}
		x, err := b.access(v, p.at(t, r), size)
		if err != nil {
			return err
		}
		out[t*regs+r] = readBits(x)
		return nil
	})
}

// store writes where the mask holds; lowering has put the owner predicate
// in it, so that a replicated element is written once.
func (b *block) store(v *ir.Value) error {
	p, x, m := b.op(v.Ptr()), b.op(v.Data()), b.op(v.Mask())
	lanes, regs := 1, 1
	for _, a := range v.Args {
		if a.Type.Regs > 0 {
			lanes = b.n
			regs = max(regs, a.Type.Regs)
		}
	}
	size := v.Data().Type.DType.Bytes()
	return b.accesses(v, lanes, regs, p, m, size, func(t, r int, on bool) error {
		if !on {
			return nil
		}
		dst, err := b.access(v, p.at(t, r), size)
		if err != nil {
			return err
		}
		writeBits(dst, x.at(t, r))
		return nil
	})
}

// accesses walks the elements of a global load or store vector by vector,
// each vector held first to what the GPU needs of it (vectorCheck), and
// calls fn with each element and whether it is accessed: its own mask
// bit, or for a vector under a uniform mask the vector's.
func (b *block) accesses(v *ir.Value, lanes, regs int, p, m operand, size int, fn func(t, r int, on bool) error) error {
	mem := v.Mem()
	vec := max(mem.Vec, 1)
	for t := range lanes {
		for r0 := 0; r0 < regs; r0 += vec {
			whole, err := vectorCheck(v, func(r int) int64 { _, off := ptr(p.at(t, r)); return off },
				func(r int) bool { return m.at(t, r) != 0 }, r0, vec, size, mem.Uniform, mem.Ends)
			if err != nil {
				return err
			}
			for r := r0; r < r0+vec && r < regs; r++ {
				on := whole || !(vec == 1 || mem.Uniform || m.at(t, r) == 0)
				if err := fn(t, r, on); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// atomicOp combines each masked element into memory, one at a time, and
// yields the old value (0 where the mask is off).
func (b *block) atomicOp(v *ir.Value) error {
	p, x, m := b.op(v.Ptr()), b.op(v.Data()), b.op(v.Mask())
	out := b.file(v)
	lanes, regs := b.shape(v)
	if v.Type.Regs == 0 {
		lanes = b.n // every lane performs it, as every GPU thread would
	}
	a := v.AtomicOp()
	d := v.Data().Type.DType
	size := d.Bytes()
	for t := range lanes {
		for r := range regs {
			i := min(t*regs+r, len(out)-1)
			if m.at(t, r) == 0 {
				out[i] = 0
				continue
			}
			mem, err := b.access(v, p.at(t, r), size)
			if err != nil {
				return err
			}
			b.m.atomic.Lock()
			old := readBits(mem)
			if d.K == ir.KI32 {
				old = ir.Trunc(d, int64(int32(old)))
			}
			if !(a.Kind == ir.RMax && d.K == ir.KF32 && isNaN(x.at(t, r))) { // max ignores NaN
				writeBits(mem, ir.Fold(a.Kind, d, old, x.at(t, r)))
			}
			b.m.moved() // it may be a counter a program waits on
			b.m.atomic.Unlock()
			out[i] = old
		}
	}
	return nil
}

// signal adds to the counter once for the program (one lane's atomic,
// after a barrier) and wakes the waiting programs to look again.
func (b *block) signal(v *ir.Value) error {
	b.race.barrier()
	_, n, mem, err := b.counter(v)
	if err != nil {
		return err
	}
	m := b.m
	m.atomic.Lock()
	writeBits(mem, uint64(uint32(int32(readBits(mem))+n)))
	m.moved()
	m.atomic.Unlock()
	return nil
}

// wait blocks the program until the counter reaches n. When every live
// program waits on a count not reached, none can signal: a deadlock, which
// the GPU would hang on.
func (b *block) wait(v *ir.Value) error {
	p, n, mem, err := b.counter(v)
	if err != nil {
		return err
	}
	m := b.m
	m.atomic.Lock()
	defer m.atomic.Unlock()
	for int32(readBits(mem)) < n {
		if !m.dead {
			m.waiting++
			m.dead = m.waiting >= m.live
		}
		if m.dead {
			m.sync.Broadcast()
			buf, off := ptr(p)
			return fmt.Errorf("%s: %w: every program left waits (this one for %s[%d] ≥ %d, at %d)", where(v), errDeadlock, m.names[buf], off/4, n, int32(readBits(mem)))
		}
		m.sync.Wait()
	}
	b.race.barrier()
	return nil
}

// errDeadlock is a wait that no program can end: on a GPU, a hang.
var errDeadlock = errors.New("deadlock")

// counter is a signal's or wait's counter (its address and memory) and
// count, each the same in every lane.
func (b *block) counter(v *ir.Value) (p uint64, n int32, mem []byte, err error) {
	what := "the " + v.Op.Name() + "'s "
	if p, err = b.uniform(v.Args[0], what+"counter"); err != nil {
		return 0, 0, nil, err
	}
	c, err := b.uniform(v.Args[1], what+"count")
	if err != nil {
		return 0, 0, nil, err
	}
	mem, err = b.access(v, p, 4)
	return p, int32(c), mem, err
}

// moved is a counter changed, by a signal or an atomic (m.atomic held):
// each waiting program looks again, and counts itself again if it still
// waits. Every parked waiter counted itself, so none waits when none is
// counted.
func (m *machine) moved() {
	if m.waiting > 0 {
		m.waiting = 0
		m.sync.Broadcast()
	}
}

// exit is a worker's end: the programs still waiting may now be all there is.
func (m *machine) exit() {
	m.atomic.Lock()
	m.live--
	if m.waiting > 0 && m.waiting >= m.live {
		m.dead = true
		m.sync.Broadcast()
	}
	m.atomic.Unlock()
}

func isNaN(x uint64) bool { f := math.Float32frombits(uint32(x)); return f != f }

func (b *block) ldsVector(v *ir.Value, addr operand, mask *operand, t, r0, size int) (bool, error) {
	m := func(r int) bool { return mask == nil || mask.at(t, r) != 0 }
	a := v.Mem()
	return stridedCheck(v, func(r int) int64 { return int64(int32(addr.at(t, r))) }, m, r0, max(a.Vec, 1), a.RegStride(), size, mask != nil, false)
}

// ldsVectors calls body with each vector's first register and its
// registers, as the access's MemAttr groups them.
func ldsVectors(v *ir.Value, regs int, body func(r0 int, rs []int) error) error {
	a := v.Mem()
	vec, stride := max(a.Vec, 1), a.RegStride()
	rs := make([]int, vec)
	for r0 := 0; r0 < regs; r0++ {
		if !a.VectorStart(r0) {
			continue
		}
		for j := range rs {
			rs[j] = r0 + j*stride
		}
		if err := body(r0, rs); err != nil {
			return err
		}
	}
	return nil
}

func (b *block) ldsStore(v *ir.Value) error {
	x := v.Data()
	addr, data, mask := b.op(v.Addr()), b.op(x), b.op(v.Mask())
	regs := max(x.Type.Regs, 1)
	size := x.Type.DType.Bytes()
	for t := range b.n {
		err := ldsVectors(v, regs, func(r0 int, rs []int) error {
			whole, err := b.ldsVector(v, addr, &mask, t, r0, size)
			if err != nil || !whole {
				return err
			}
			for _, r := range rs {
				if err := b.ldsWrite(v, t, int(int32(addr.at(t, r))), size, data.at(t, r)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (b *block) ldsLoad(v *ir.Value) error {
	addr := b.op(v.Addr())
	out := b.file(v)
	regs := max(v.Type.Regs, 1)
	size := v.Type.DType.Bytes()
	for t := range b.n {
		err := ldsVectors(v, regs, func(r0 int, rs []int) error {
			if _, err := b.ldsVector(v, addr, nil, t, r0, size); err != nil {
				return err
			}
			for _, r := range rs {
				x, err := b.ldsRead(v, t, int(int32(addr.at(t, r))), size)
				if err != nil {
					return err
				}
				out[min(t*regs+r, len(out)-1)] = x
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (b *block) ldsReduce(v *ir.Value) error {
	a := v.LDSFold()
	addr := b.op(v.Addr())
	out := b.file(v)
	regs := max(v.Type.Regs, 1)
	d := v.Type.DType
	size := d.Bytes()
	for t := range b.n {
		for r := range regs {
			base := int(int32(addr.at(t, r)))
			var acc uint64
			for w := range a.Count {
				x, err := b.ldsRead(v, t, base+w*a.Stride, size)
				if err != nil {
					return err
				}
				if w == 0 {
					acc = x
				} else {
					acc = ir.Fold(a.Kind, d, acc, x)
				}
			}
			out[min(t*regs+r, len(out)-1)] = acc
		}
	}
	return nil
}

// ldsCopy is a stage's copy: each owned element read from global memory
// as a load reads it (vector claims checked, bounds), 0 where the mask is
// off, written to LDS as pending until the next async_wait.
func (b *block) ldsCopy(v *ir.Value) error {
	p, addr, m, own := b.op(v.Ptr()), b.op(v.Addr()), b.op(v.Mask()), b.op(v.Cond())
	regs := max(v.Ptr().Type.Regs, 1)
	size := v.Ptr().Type.DType.Elem().Bytes()
	vec := max(v.Mem().Vec, 1)
	return b.accesses(v, b.n, regs, p, m, size, func(t, r int, on bool) error {
		first := r - r%vec
		if own.at(t, r) != own.at(t, first) {
			return fmt.Errorf("%s: lane %d owns part of the vector at register %d", where(v), t, first)
		}
		if own.at(t, r) == 0 {
			return nil
		}
		off := int(int32(addr.at(t, r)))
		if r == first && off%(vec*size) != 0 {
			return fmt.Errorf("%s: a %d-byte copy to LDS byte %d: not aligned", where(v), vec*size, off)
		}
		if f := int(int32(addr.at(t, first))); off != f+(r-first)*size {
			return fmt.Errorf("%s: a %d-byte copy to LDS bytes %d and %d: not one run", where(v), vec*size, f, off)
		}
		var x uint64
		if on {
			mem, err := b.access(v, p.at(t, r), size)
			if err != nil {
				return err
			}
			x = readBits(mem)
		}
		mem, err := b.ldsBytes(v, off, size)
		if err != nil {
			return err
		}
		// The bytes land now, but other lanes may see them only after
		// this lane's wait and a barrier: the race tracker hears of the
		// write at the wait.
		writeBits(mem, x)
		for i := off; i < off+size; i++ {
			b.pending[i] = true
		}
		b.copies = append(b.copies, ldsCopied{t, off, size})
		return nil
	})
}

// ldsCopied is an lds_copy's write by one lane, not yet waited for.
type ldsCopied struct{ lane, off, size int }

// asyncWait completes every lane's copies (the lanes run in lockstep):
// their writes happen, for the race tracker, here.
func (b *block) asyncWait(v *ir.Value) error {
	for _, c := range b.copies {
		if err := b.race.write(c.lane, c.off, c.size); err != nil {
			return fmt.Errorf("%s: %v", where(v), err)
		}
	}
	b.copies = b.copies[:0]
	clear(b.pending)
	return nil
}

func (b *block) notPending(v *ir.Value, off, size int) error {
	if len(b.copies) == 0 { // nothing in flight (pending is set only with copies)
		return nil
	}
	for i := off; i < off+size; i++ {
		if b.pending[i] {
			return fmt.Errorf("%s: LDS byte %d is an lds_copy's that no async_wait has completed", where(v), i)
		}
	}
	return nil
}

// ldsBytes are the size bytes of LDS at off, inside the kernel's LDS and
// not an lds_copy's still in flight.
func (b *block) ldsBytes(v *ir.Value, off, size int) ([]byte, error) {
	if off < 0 || off+size > len(b.lds) {
		return nil, fmt.Errorf("%s: LDS access at byte %d outside the kernel's %d bytes", where(v), off, len(b.lds))
	}
	if err := b.notPending(v, off, size); err != nil {
		return nil, err
	}
	return b.lds[off : off+size], nil
}

func (b *block) ldsWrite(v *ir.Value, lane, off, size int, x uint64) error {
	mem, err := b.ldsBytes(v, off, size)
	if err != nil {
		return err
	}
	if err := b.race.write(lane, off, size); err != nil {
		return fmt.Errorf("%s: %v", where(v), err)
	}
	writeBits(mem, x)
	return nil
}

func (b *block) ldsRead(v *ir.Value, lane, off, size int) (uint64, error) {
	mem, err := b.ldsBytes(v, off, size)
	if err != nil {
		return 0, err
	}
	if err := b.race.read(lane, off, size); err != nil {
		return 0, fmt.Errorf("%s: %v", where(v), err)
	}
	return readBits(mem), nil
}

// ldsTracker finds LDS races: per byte, the lane that last wrote it and the
// barrier epoch of that write, and the lane (or many) that read it since.
type ldsTracker struct {
	epoch  int
	wLane  []int32
	wEpoch []int32
	rLane  []int32 // -2: several lanes
	rEpoch []int32
}

func (r *ldsTracker) init(n int) {
	r.wLane, r.wEpoch = make([]int32, n), make([]int32, n)
	r.rLane, r.rEpoch = make([]int32, n), make([]int32, n)
	for i := 0; i < n; i++ {
		r.wEpoch[i], r.rEpoch[i] = -1, -1
	}
	r.epoch = 0
}

func (r *ldsTracker) barrier() { r.epoch++ }

func (r *ldsTracker) write(lane, off, size int) error {
	e := int32(r.epoch)
	for i := off; i < off+size; i++ {
		if r.wEpoch[i] == e && r.wLane[i] != int32(lane) {
			return fmt.Errorf("LDS race: lanes %d and %d write byte %d with no barrier between", r.wLane[i], lane, i)
		}
		if r.rEpoch[i] == e && r.rLane[i] != int32(lane) {
			return fmt.Errorf("LDS race: lane %d writes byte %d that another lane read with no barrier between", lane, i)
		}
		r.wLane[i], r.wEpoch[i] = int32(lane), e
	}
	return nil
}

func (r *ldsTracker) read(lane, off, size int) error {
	e := int32(r.epoch)
	for i := off; i < off+size; i++ {
		if r.wEpoch[i] == e && r.wLane[i] != int32(lane) {
			return fmt.Errorf("LDS race: lane %d reads byte %d that lane %d wrote with no barrier between", lane, i, r.wLane[i])
		}
		if r.rEpoch[i] == e && r.rLane[i] != int32(lane) {
			r.rLane[i] = -2
		} else {
			r.rLane[i], r.rEpoch[i] = int32(lane), e
		}
	}
	return nil
}
