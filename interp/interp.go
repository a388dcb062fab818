// Package interp executes a lowered (thread-level) kernel on the CPU, lane by
// lane: every value is held as one register file per lane of the block, in the
// layout lowering chose, so the interpreter runs exactly the shuffles, LDS
// round trips and per-lane folds the GPU runs, in the same order, and its
// results are bit-identical to the emitted code's.
//
// The lanes of a block run in lockstep, op by op: a barrier is then a
// no-op for ordering, but the interpreter still checks that the kernel has
// the barriers it needs, by recording, per LDS byte, which lane last wrote
// and read it between which barriers; a cross-lane access not separated by a
// barrier is reported as a race. Blocks run in parallel on the host's cores.
// Global accesses are bounds-checked against their buffers.
package interp

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/fp8gen/fp8gen/ir"
)

// Launch runs f over a grid of programs. args holds, in f.Params order, a
// []byte for each pointer parameter (its host memory, little-endian) and an
// int for each size.
func Launch(f *ir.Func, grid [3]int, args []any) error {
	if len(args) != len(f.Params) {
		return fmt.Errorf("%s takes %d arguments, got %d", f.Name, len(f.Params), len(args))
	}
	m := &machine{f: f, grid: grid}
	for i, p := range f.Params {
		switch p.Op {
		case ir.OpParam:
			b, ok := args[i].([]byte)
			if !ok {
				return fmt.Errorf("%s: argument %s: want []byte, got %T", f.Name, p.Name, args[i])
			}
			m.bufs = append(m.bufs, b)
			m.args = append(m.args, uint64(len(m.bufs)-1)<<48)
		case ir.OpSize:
			n, ok := args[i].(int)
			if !ok {
				return fmt.Errorf("%s: argument %s: want int, got %T", f.Name, p.Name, args[i])
			}
			if n < math.MinInt32 || n > math.MaxInt32 {
				return fmt.Errorf("%s: argument %s = %d does not fit in i32", f.Name, p.Name, n)
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
	workers := min(runtime.GOMAXPROCS(0), total)
	next := make(chan int, total)
	for i := 0; i < total; i++ {
		next <- i
	}
	close(next)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			b := m.newBlock()
			for id := range next {
				pid := [3]int{id % grid[0], id / grid[0] % grid[1], id / (grid[0] * grid[1])}
				if err := b.run(pid); err != nil {
					errs[w] = err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

type machine struct {
	f      *ir.Func
	grid   [3]int
	bufs   [][]byte
	args   []uint64
	atomic sync.Mutex
	// elems caches, per tile type, which element each (lane, register)
	// holds: the same for every block, and costly to recompute.
	elemMu sync.Mutex
	elems  map[string]*elemTable
}

// elemTable is a layout applied to a shape, for every lane and register.
type elemTable struct {
	regs   int
	coords [][]int // [lane*regs + r] → tile coordinate
	owner  []bool  // first copy of its element
}

func (m *machine) table(t ir.Type) *elemTable {
	key := fmt.Sprint(t.Shape, t.Layout)
	m.elemMu.Lock()
	defer m.elemMu.Unlock()
	if e, ok := m.elems[key]; ok {
		return e
	}
	n := m.f.Threads
	r := t.Layout.Regs(t.Shape)
	e := &elemTable{regs: r, coords: make([][]int, n*r), owner: make([]bool, n*r)}
	for tid := 0; tid < n; tid++ {
		for j := 0; j < r; j++ {
			e.coords[tid*r+j], e.owner[tid*r+j] = t.Layout.Elem(t.Shape, tid, j)
		}
	}
	if m.elems == nil {
		m.elems = map[string]*elemTable{}
	}
	m.elems[key] = e
	return e
}

// block is the state of one program: a register file per value.
type block struct {
	m     *machine
	pid   [3]int
	n     int               // lanes
	regs  map[*ir.Value]int // registers per lane
	slots map[*ir.Value][]uint64
	lds   []byte
	race  ldsTracker
}

func (m *machine) newBlock() *block {
	b := &block{m: m, n: m.f.Threads, regs: map[*ir.Value]int{}, slots: map[*ir.Value][]uint64{}}
	m.f.Walk(func(v *ir.Value) {
		r := 1
		if v.Type.Rank() > 0 {
			r = v.Type.Layout.Regs(v.Type.Shape)
		}
		b.regs[v] = r
		b.slots[v] = make([]uint64, r*b.n)
	})
	b.lds = make([]byte, m.f.LDSBytes)
	b.race.init(m.f.LDSBytes)
	return b
}

func (b *block) run(pid [3]int) error {
	b.pid = pid
	b.race.barrier() // programs never share LDS: a new program starts a new epoch
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

// scalar is lane 0's value of a uniform scalar.
func (b *block) scalar(v *ir.Value) uint64 { return b.slots[v][0] }

func (b *block) fill(v *ir.Value, x uint64) {
	s := b.slots[v]
	for i := range s {
		s[i] = x
	}
}

func (b *block) step(v *ir.Value) error {
	out := b.slots[v]
	R := b.regs[v]
	switch v.Op {
	case ir.OpParam, ir.OpSize:
		for i, p := range b.m.f.Params {
			if p == v {
				b.fill(v, b.m.args[i])
			}
		}
	case ir.OpProgramID:
		b.fill(v, uint64(int64(b.pid[v.Aux])))
	case ir.OpNumPrograms:
		b.fill(v, uint64(int64(b.m.grid[v.Aux])))
	case ir.OpConst:
		b.fill(v, constBits(v))
	case ir.OpArange:
		for i, c := range b.m.table(v.Type).coords {
			out[i] = uint64(int64(c[0]))
		}
	case ir.OpSplat:
		src := b.slots[v.Args[0]]
		sr := b.regs[v.Args[0]]
		for t := 0; t < b.n; t++ {
			for r := 0; r < R; r++ {
				out[t*R+r] = src[t*sr]
			}
		}
	case ir.OpBroadcast, ir.OpExpandDims, ir.OpTrans:
		src := b.slots[v.Args[0]]
		sr := b.regs[v.Args[0]]
		for t := 0; t < b.n; t++ {
			for r := 0; r < R; r++ {
				out[t*R+r] = src[t*sr+v.Map[r]]
			}
		}
	case ir.OpLoad:
		return b.load(v)
	case ir.OpStore, ir.OpAtomicMax, ir.OpAtomicAdd:
		return b.store(v)
	case ir.OpFor:
		return b.loop(v)
	case ir.OpYield:
		// Handled by loop.
	case ir.OpForResult:
		copy(out, b.slots[v.Args[0].Body.Vars[1+v.Aux]])
	case ir.OpLoopVar:
		// Set by loop.
	case ir.OpReduceLanes:
		b.reduceLanes(v)
	case ir.OpReduceWave:
		b.reduceWave(v)
	case ir.OpReduceWaves:
		return b.reduceWaves(v)
	case ir.OpLDSStore:
		return b.ldsStore(v)
	case ir.OpLDSLoad:
		return b.ldsLoad(v)
	case ir.OpBarrier:
		b.race.barrier()
	case ir.OpReduce, ir.OpConvert:
		panic("BUG: " + v.Op.Name() + " reached the interpreter unlowered")
	default:
		if !v.Op.IsElementwise() {
			panic("BUG: interp has no case for " + v.Op.Name())
		}
		return b.elementwise(v)
	}
	return nil
}

func constBits(v *ir.Value) uint64 {
	d := v.Type.DType
	switch d.K {
	case ir.KF32:
		return uint64(math.Float32bits(float32(v.AuxF)))
	case ir.KBF16:
		return uint64(ir.F32ToBF16(float32(v.AuxF)))
	case ir.KFP8:
		return uint64(d.Fmt.EncodeSat(float32(v.AuxF)))
	}
	return uint64(v.Aux)
}

func (b *block) loop(v *ir.Value) error {
	lo := int32(b.scalar(v.Args[0]))
	hi := int32(b.scalar(v.Args[1]))
	st := int32(b.scalar(v.Args[2]))
	if st <= 0 {
		return fmt.Errorf("%s: loop step %d is not positive", where(v), st)
	}
	iv, carried := v.ForVars()
	for i, c := range carried {
		copy(b.slots[c], b.slots[v.Args[3+i]])
	}
	yield := v.Body.Values[len(v.Body.Values)-1]
	tmp := make([][]uint64, len(carried))
	for i := int64(lo); i < int64(hi); i += int64(st) {
		b.fill(iv, uint64(i))
		if err := b.exec(v.Body); err != nil {
			return err
		}
		for j, y := range yield.Args {
			tmp[j] = append(tmp[j][:0], b.slots[y]...)
		}
		for j, c := range carried {
			copy(b.slots[c], tmp[j])
		}
	}
	return nil
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
		return nil, fmt.Errorf("%s: out-of-bounds access to %s at byte %d (%d bytes long)", where(v), b.m.f.Params[paramIndex(b.m.f, buf)].Name, off, len(data))
	}
	return data[off : off+int64(size)], nil
}

// paramIndex maps a buffer number back to its parameter, for messages.
func paramIndex(f *ir.Func, buf int) int {
	n := 0
	for i, p := range f.Params {
		if p.Op == ir.OpParam {
			if n == buf {
				return i
			}
			n++
		}
	}
	panic("BUG: buffer without parameter")
}

// checkAligned holds a vector access to what the GPU requires: the first
// element of each group of Vec registers aligned to the whole vector, where
// the group is accessed whole (every mask set).
func (b *block) checkAligned(v *ir.Value, ps, ms []uint64, R int) error {
	vec := v.Vec
	if vec <= 1 {
		return nil
	}
	size := int64(v.Args[0].Type.DType.Elem().Bytes()) * int64(vec)
	for g := 0; g < len(ps); g += vec {
		whole := true
		for j := 0; j < vec; j++ {
			whole = whole && ms[g+j] != 0
		}
		if _, off := ptr(ps[g]); whole && off%size != 0 {
			return fmt.Errorf("%s: %d-byte vector access at byte offset %d is misaligned", where(v), size, off)
		}
	}
	return nil
}

func (b *block) load(v *ir.Value) error {
	out := b.slots[v]
	ps, ms, os := b.slots[v.Args[0]], b.slots[v.Args[1]], b.slots[v.Args[2]]
	size := v.Type.DType.Bytes()
	if err := b.checkAligned(v, ps, ms, b.regs[v]); err != nil {
		return err
	}
	for i := range out {
		if ms[i] == 0 {
			out[i] = os[i]
			continue
		}
		mem, err := b.access(v, ps[i], size)
		if err != nil {
			return err
		}
		out[i] = readBits(mem)
	}
	return nil
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

// store writes (or atomically combines) the elements each lane owns: a
// replicated element is written once.
func (b *block) store(v *ir.Value) error {
	ps, xs, ms := b.slots[v.Args[0]], b.slots[v.Args[1]], b.slots[v.Args[2]]
	t0 := v.Args[0].Type
	R := b.regs[v.Args[0]]
	size := t0.DType.Elem().Bytes()
	var owner []bool
	if t0.Rank() > 0 {
		owner = b.m.table(t0).owner
	}
	if v.Op == ir.OpStore {
		if err := b.checkAligned(v, ps, ms, R); err != nil {
			return err
		}
	}
	for t := 0; t < b.n; t++ {
		for r := 0; r < R; r++ {
			i := t*R + r
			if ms[i] == 0 {
				continue
			}
			if t0.Rank() == 0 {
				if t != 0 {
					continue
				}
			} else if !owner[i] {
				continue
			}
			mem, err := b.access(v, ps[i], size)
			if err != nil {
				return err
			}
			switch v.Op {
			case ir.OpStore:
				writeBits(mem, xs[i])
			default:
				b.m.atomic.Lock()
				old := readBits(mem)
				writeBits(mem, combine(v.Op, v.Args[1].Type.DType, old, xs[i]))
				b.m.atomic.Unlock()
			}
		}
	}
	return nil
}

func combine(op ir.Op, d ir.DType, a, x uint64) uint64 {
	red := ir.RMax
	if op == ir.OpAtomicAdd {
		red = ir.RSum
	}
	return fold(red, d, a, x)
}

// fold applies a reduction's combining function.
func fold(k ir.ReduceKind, d ir.DType, a, x uint64) uint64 {
	if d.K == ir.KF32 {
		fa, fx := f32(a), f32(x)
		switch k {
		case ir.RMax:
			return bitsF32(ir.MaxF32(fa, fx))
		case ir.RMin:
			return bitsF32(ir.MinF32(fa, fx))
		}
		return bitsF32(fa + fx)
	}
	ia, ix := int64(a), int64(x)
	if d.K == ir.KI32 {
		ia, ix = int64(int32(a)), int64(int32(x))
	}
	var r int64
	switch k {
	case ir.RMax:
		r = max(ia, ix)
	case ir.RMin:
		r = min(ia, ix)
	default:
		r = ia + ix
	}
	if d.K == ir.KI32 {
		r = int64(int32(r))
	}
	return uint64(r)
}

func f32(x uint64) float32     { return math.Float32frombits(uint32(x)) }
func bitsF32(f float32) uint64 { return uint64(math.Float32bits(f)) }

// Cast converts one element's bits between types, as the back ends do.
func Cast(from, to ir.DType, x uint64) uint64 {
	switch {
	case from == to:
		return x
	case from.K == ir.KF32 && to.K == ir.KBF16:
		return uint64(ir.F32ToBF16(f32(x)))
	case from.K == ir.KF32 && to.K == ir.KFP8:
		return uint64(to.Fmt.EncodeSat(f32(x)))
	case from.K == ir.KF32 && to.K == ir.KI32:
		return uint64(int64(ir.F32ToI32(f32(x))))
	case from.K == ir.KBF16 && to.K == ir.KF32:
		return bitsF32(ir.BF16ToF32(uint16(x)))
	case from.K == ir.KFP8 && to.K == ir.KF32:
		return bitsF32(from.Fmt.Decode(uint8(x)))
	case from.K == ir.KI32 && to.K == ir.KF32:
		return bitsF32(float32(int32(x)))
	case from.K == ir.KI32 && to.K == ir.KI64:
		return uint64(int64(int32(x)))
	case from.K == ir.KBool && to.K == ir.KI32:
		return x
	}
	panic(fmt.Sprintf("BUG: cast from %v to %v", from, to))
}
