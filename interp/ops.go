package interp

import (
	"fmt"
	"math"

	"github.com/fp8gen/fp8gen/ir"
)

func (b *block) elementwise(v *ir.Value) error {
	out := b.slots[v]
	args := make([][]uint64, len(v.Args))
	for i, a := range v.Args {
		args[i] = b.slots[a]
	}
	d := v.Args[0].Type.DType
	switch v.Op {
	case ir.OpCast:
		x := args[0]
		for i := range out {
			out[i] = Cast(d, v.Type.DType, x[i])
		}
		return nil
	case ir.OpWhere:
		c, x, y := args[0], args[1], args[2]
		for i := range out {
			if c[i] != 0 {
				out[i] = x[i]
			} else {
				out[i] = y[i]
			}
		}
		return nil
	case ir.OpPtrAdd:
		p, o := args[0], args[1]
		size := int64(d.Elem().Bytes())
		for i := range out {
			buf, off := ptr(p[i])
			off += int64(int32(o[i])) * size
			out[i] = uint64(buf)<<48 | uint64(off)&(1<<48-1)
		}
		return nil
	}
	if len(args) == 1 {
		x := args[0]
		for i := range out {
			out[i] = unary(v.Op, d, x[i])
		}
		return nil
	}
	x, y := args[0], args[1]
	for i := range out {
		r, err := binary(v.Op, d, x[i], y[i])
		if err != nil {
			return fmt.Errorf("%s: %v", where(v), err)
		}
		out[i] = r
	}
	return nil
}

func unary(op ir.Op, d ir.DType, x uint64) uint64 {
	if d.K == ir.KF32 {
		f := f32(x)
		switch op {
		case ir.OpAbs:
			return x &^ (1 << 31)
		case ir.OpNeg:
			return x ^ (1 << 31)
		case ir.OpRsqrt:
			return bitsF32(1 / float32(math.Sqrt(float64(f))))
		case ir.OpPow2Floor:
			return bitsF32(ir.Pow2Floor(f))
		}
	}
	i := sext(d, x)
	switch op {
	case ir.OpAbs:
		if i < 0 {
			i = -i
		}
	case ir.OpNeg:
		i = -i
	default:
		panic("BUG: unary " + op.Name() + " on " + d.String())
	}
	return trunc(d, i)
}

func sext(d ir.DType, x uint64) int64 {
	if d.K == ir.KI32 {
		return int64(int32(x))
	}
	return int64(x)
}

func trunc(d ir.DType, i int64) uint64 {
	if d.K == ir.KI32 {
		return uint64(int64(int32(i)))
	}
	return uint64(i)
}

func b2u(c bool) uint64 {
	if c {
		return 1
	}
	return 0
}

func binary(op ir.Op, d ir.DType, x, y uint64) (uint64, error) {
	if d.K == ir.KF32 {
		a, c := f32(x), f32(y)
		switch op {
		case ir.OpAdd:
			return bitsF32(a + c), nil
		case ir.OpSub:
			return bitsF32(a - c), nil
		case ir.OpMul:
			return bitsF32(a * c), nil
		case ir.OpDiv:
			return bitsF32(a / c), nil
		case ir.OpMax:
			return bitsF32(ir.MaxF32(a, c)), nil
		case ir.OpMin:
			return bitsF32(ir.MinF32(a, c)), nil
		case ir.OpLt:
			return b2u(a < c), nil
		case ir.OpLe:
			return b2u(a <= c), nil
		case ir.OpGt:
			return b2u(a > c), nil
		case ir.OpGe:
			return b2u(a >= c), nil
		case ir.OpEq:
			return b2u(a == c), nil
		case ir.OpNe:
			return b2u(a != c), nil
		}
		panic("BUG: f32 " + op.Name())
	}
	if d.K == ir.KBool {
		switch op {
		case ir.OpAnd:
			return x & y, nil
		case ir.OpOr:
			return x | y, nil
		case ir.OpEq:
			return b2u(x == y), nil
		case ir.OpNe:
			return b2u(x != y), nil
		}
		panic("BUG: bool " + op.Name())
	}
	a, c := sext(d, x), sext(d, y)
	switch op {
	case ir.OpAdd:
		return trunc(d, a+c), nil
	case ir.OpSub:
		return trunc(d, a-c), nil
	case ir.OpMul:
		return trunc(d, a*c), nil
	case ir.OpDiv, ir.OpRem:
		if c == 0 {
			return 0, fmt.Errorf("integer division by zero")
		}
		if op == ir.OpDiv {
			return trunc(d, a/c), nil
		}
		return trunc(d, a%c), nil
	case ir.OpMax:
		return trunc(d, max(a, c)), nil
	case ir.OpMin:
		return trunc(d, min(a, c)), nil
	case ir.OpAnd:
		return trunc(d, a&c), nil
	case ir.OpOr:
		return trunc(d, a|c), nil
	case ir.OpLt:
		return b2u(a < c), nil
	case ir.OpLe:
		return b2u(a <= c), nil
	case ir.OpGt:
		return b2u(a > c), nil
	case ir.OpGe:
		return b2u(a >= c), nil
	case ir.OpEq:
		return b2u(a == c), nil
	case ir.OpNe:
		return b2u(a != c), nil
	}
	panic("BUG: int " + op.Name())
}

// identity is the neutral element of a reduction, for replicas that must
// not count twice in a sum.
func identity(k ir.ReduceKind, d ir.DType) uint64 {
	if d.K == ir.KF32 {
		switch k {
		case ir.RMax:
			return bitsF32(float32(math.Inf(-1)))
		case ir.RMin:
			return bitsF32(float32(math.Inf(1)))
		}
		return bitsF32(0)
	}
	switch k {
	case ir.RMax:
		return trunc(d, math.MinInt32)
	case ir.RMin:
		return trunc(d, math.MaxInt32)
	}
	return 0
}

// reduceLanes folds, in each lane, the registers along the reduced dim, in
// register order. In a sum, replicas along that dim count as the identity.
func (b *block) reduceLanes(v *ir.Value) {
	x := v.Args[0]
	xl, xs := x.Type.Layout, x.Type.Shape
	d := xl.BaseDim(int(v.Aux))
	R, XR := b.regs[v], b.regs[x]
	out, in := b.slots[v], b.slots[x]
	dt := v.Type.DType
	n := xl.Regs(xs)
	into := make([]int, n)
	for r := range into {
		into[r] = xl.ReducedReg(xs, r, d)
	}
	for t := 0; t < b.n; t++ {
		for j := 0; j < R; j++ {
			first := true
			var acc uint64
			for r := 0; r < n; r++ {
				if into[r] != j {
					continue
				}
				e := in[t*XR+r]
				if v.Red == ir.RSum && !xl.OwnsAlong(xs, t, r, d) {
					e = identity(v.Red, dt)
				}
				if first {
					acc, first = e, false
				} else {
					acc = fold(v.Red, dt, acc, e)
				}
			}
			out[t*R+j] = acc
		}
	}
}

// reduceWave runs the butterfly: for each lane distance along the reduced
// dim, a lane combines its value with its partner's (lane ^ distance).
func (b *block) reduceWave(v *ir.Value) {
	l := v.Type.Layout
	d := l.Drop[len(l.Drop)-1]
	R := b.regs[v]
	cur := append([]uint64(nil), b.slots[v.Args[0]]...)
	next := make([]uint64, len(cur))
	s := l.LaneStride(d)
	for off := s; off < s*l.TPW[d]; off <<= 1 {
		for t := 0; t < b.n; t++ {
			p := t ^ off
			for j := 0; j < R; j++ {
				next[t*R+j] = fold(v.Red, v.Type.DType, cur[t*R+j], cur[p*R+j])
			}
		}
		cur, next = next, cur
	}
	copy(b.slots[v], cur)
}

// reduceWaves exchanges wave partials through LDS: the lanes at index 0
// along the reduced dim of each wave write their values to slot (wave
// along d), then every lane folds the slots in order.
func (b *block) reduceWaves(v *ir.Value) error {
	l := v.Type.Layout
	d := l.Drop[len(l.Drop)-1]
	R := b.regs[v]
	in := b.slots[v.Args[0]]
	size := v.Type.DType.Bytes()
	n := v.Type.Elems()
	waves := l.WPB[d]
	for t := 0; t < b.n; t++ {
		if l.ThreadCoords(t)[d]%l.TPW[d] != 0 {
			continue
		}
		for j := 0; j < R; j++ {
			if !l.OwnsExcept(v.Type.Shape, t, j, d) {
				continue
			}
			c, _ := l.Elem(v.Type.Shape, t, j)
			off := (l.WaveIndexAlong(t, d)*n + linear(c, v.Type.Shape)) * size
			if err := b.ldsWrite(v, t, off, size, in[t*R+j]); err != nil {
				return err
			}
		}
	}
	b.race.barrier()
	out := b.slots[v]
	for t := 0; t < b.n; t++ {
		for j := 0; j < R; j++ {
			c, _ := l.Elem(v.Type.Shape, t, j)
			var acc uint64
			for w := 0; w < waves; w++ {
				x, err := b.ldsRead(v, t, (w*n+linear(c, v.Type.Shape))*size, size)
				if err != nil {
					return err
				}
				if w == 0 {
					acc = x
				} else {
					acc = fold(v.Red, v.Type.DType, acc, x)
				}
			}
			out[t*R+j] = acc
		}
	}
	b.race.barrier()
	return nil
}

func linear(c, shape []int) int {
	i := 0
	for a := range c {
		i = i*shape[a] + c[a]
	}
	return i
}

func ldsOffset(v *ir.Value, c []int, size int) int {
	off := 0
	if len(c) == 2 {
		off = c[0]*v.Pitch + c[1]
	} else if len(c) == 1 {
		off = c[0]
	}
	return int(v.Aux) + off*size
}

func (b *block) ldsStore(v *ir.Value) error {
	x := v.Args[0]
	t0 := x.Type
	R := b.regs[x]
	in := b.slots[x]
	size := t0.DType.Bytes()
	tab := b.m.table(t0)
	for t := 0; t < b.n; t++ {
		for r := 0; r < R; r++ {
			c, own := tab.coords[t*R+r], tab.owner[t*R+r]
			if !own {
				continue
			}
			if err := b.ldsWrite(v, t, ldsOffset(v, c, size), size, in[t*R+r]); err != nil {
				return err
			}
		}
	}
	return nil
}

func (b *block) ldsLoad(v *ir.Value) error {
	t0 := v.Type
	R := b.regs[v]
	out := b.slots[v]
	size := t0.DType.Bytes()
	tab := b.m.table(t0)
	for t := 0; t < b.n; t++ {
		for r := 0; r < R; r++ {
			c := tab.coords[t*R+r]
			x, err := b.ldsRead(v, t, ldsOffset(v, c, size), size)
			if err != nil {
				return err
			}
			out[t*R+r] = x
		}
	}
	return nil
}

func (b *block) ldsWrite(v *ir.Value, lane, off, size int, x uint64) error {
	if off < 0 || off+size > len(b.lds) {
		return fmt.Errorf("%s: LDS access at byte %d outside the kernel's %d bytes", where(v), off, len(b.lds))
	}
	if err := b.race.write(lane, off, size); err != nil {
		return fmt.Errorf("%s: %v", where(v), err)
	}
	writeBits(b.lds[off:off+size], x)
	return nil
}

func (b *block) ldsRead(v *ir.Value, lane, off, size int) (uint64, error) {
	if off < 0 || off+size > len(b.lds) {
		return 0, fmt.Errorf("%s: LDS access at byte %d outside the kernel's %d bytes", where(v), off, len(b.lds))
	}
	if err := b.race.read(lane, off, size); err != nil {
		return 0, fmt.Errorf("%s: %v", where(v), err)
	}
	return readBits(b.lds[off : off+size]), nil
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
