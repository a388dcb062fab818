package ir

import (
	"fmt"
	"slices"
	"strings"
)

// Layout maps the elements of a tile to the lanes of a block and to the
// registers of each lane. It is a blocked layout in Triton's sense, over a
// base of one or two dimensions:
//
//	SPT   elements a lane holds contiguously along each dim (sizePerThread)
//	TPW   lanes of a wave along each dim (their product is the wave size)
//	WPB   waves of the block along each dim (their product is the wave count)
//	Order the dims from fastest to slowest: lanes, waves and registers are
//	      numbered along Order[0] first
//	Drop  base dims the tile does not have: a sliced layout, the layout of a
//	      reduction's result, whose elements every lane along a dropped dim
//	      holds alike
//
// A 2-D tile [4, 16] in SPT=[1,4] TPW=[2,4] WPB=[1,1] Order=[1,0], on a wave
// of 8 lanes, is owned so (lane numbers; each lane holds four consecutive
// elements of a row in four registers, and rows past the lanes' coverage wrap
// onto registers 4..7):
//
//	row 0: 0 0 0 0 1 1 1 1 2 2 2 2 3 3 3 3
//	row 1: 4 4 4 4 5 5 5 5 6 6 6 6 7 7 7 7
//	row 2: 0 0 0 0 1 1 1 1 2 2 2 2 3 3 3 3   (lane 0, registers 4..7)
//	row 3: 4 4 4 4 5 5 5 5 6 6 6 6 7 7 7 7
//
// Where a tile is smaller than the lanes cover, elements are replicated: the
// lanes past the tile hold copies, and only the first copy (Owner) stores.
// A layout is independent of the tile's shape; the shape decides how many
// registers a lane needs (Regs) and where replication starts.
type Layout struct {
	SPT, TPW, WPB, Order []int
	Drop                 []int
}

// Blocked is a layout with no dropped dims.
func Blocked(spt, tpw, wpb, order []int) *Layout {
	return &Layout{SPT: spt, TPW: tpw, WPB: wpb, Order: order}
}

// Base is the number of base dims.
func (l *Layout) Base() int { return len(l.SPT) }

// Rank is the rank of the tiles that carry this layout.
func (l *Layout) Rank() int { return len(l.SPT) - len(l.Drop) }

// Waves is the number of waves the layout spreads over.
func (l *Layout) Waves() int { return prod(l.WPB) }

// WaveSize is the number of lanes in a wave.
func (l *Layout) WaveSize() int { return prod(l.TPW) }

// Threads is the number of lanes of the block the layout spreads over.
func (l *Layout) Threads() int { return prod(l.TPW) * prod(l.WPB) }

func (l *Layout) dropped(d int) bool {
	for _, x := range l.Drop {
		if x == d {
			return true
		}
	}
	return false
}

// BaseDim is the base dim of tile axis a.
func (l *Layout) BaseDim(a int) int {
	for d := 0; d < l.Base(); d++ {
		if l.dropped(d) {
			continue
		}
		if a == 0 {
			return d
		}
		a--
	}
	panic(fmt.Sprintf("BUG: axis out of range for layout %v", l))
}

// Slice is the layout of the result of reducing tile axis a.
func (l *Layout) Slice(a int) *Layout {
	n := *l
	n.Drop = append(append([]int(nil), l.Drop...), l.BaseDim(a))
	return &n
}

// Expand undoes a Slice: the layout of a tile with a new axis of extent 1 at
// position a. It reports false where no dropped dim lands at a.
func (l *Layout) Expand(a int) (*Layout, bool) {
	for i, d := range l.Drop {
		kept := 0
		for e := 0; e < d; e++ {
			if !l.dropped(e) {
				kept++
			}
		}
		if kept == a {
			n := *l
			n.Drop = append(append([]int(nil), l.Drop[:i]...), l.Drop[i+1:]...)
			return &n, true
		}
	}
	return nil, false
}

// Trans is the layout of the transpose of a 2-D tile in this layout.
func (l *Layout) Trans() *Layout {
	if l.Base() != 2 || len(l.Drop) != 0 {
		panic("BUG: Trans of " + l.String())
	}
	return &Layout{
		SPT: []int{l.SPT[1], l.SPT[0]}, TPW: []int{l.TPW[1], l.TPW[0]},
		WPB: []int{l.WPB[1], l.WPB[0]}, Order: []int{1 - l.Order[0], 1 - l.Order[1]},
	}
}

// geom is a layout applied to a shape: per base dim, the clamped elements per
// lane, the coverage of the block, and the registers a lane needs.
type geom struct {
	shape, spt, cover, regs []int
}

func (l *Layout) geom(shape []int) geom {
	if len(shape) != l.Rank() {
		panic(fmt.Sprintf("BUG: shape %v for layout %v", shape, l))
	}
	b := l.Base()
	g := geom{shape: make([]int, b), spt: make([]int, b), cover: make([]int, b), regs: make([]int, b)}
	a := 0
	for d := 0; d < b; d++ {
		s := 1
		if !l.dropped(d) {
			s = shape[a]
			a++
		}
		g.shape[d] = s
		g.spt[d] = min(l.SPT[d], s)
		g.cover[d] = g.spt[d] * l.TPW[d] * l.WPB[d]
		g.regs[d] = g.spt[d] * max(1, s/g.cover[d])
	}
	return g
}

// Regs is the number of registers (elements) each lane holds for a tile of
// the given shape.
func (l *Layout) Regs(shape []int) int { return prod(l.geom(shape).regs) }

// ThreadCoords splits a thread index of the block into its index along each
// base dim (ThreadCoord).
func (l *Layout) ThreadCoords(tid int) []int {
	c := make([]int, l.Base())
	for d := range c {
		c[d] = ThreadCoord(l, Concrete{}, LaneCoord(l, Concrete{}, tid, d), WaveCoord(l, Concrete{}, tid, d), d)
	}
	return c
}

// RegCoords splits a register index into its index along each base dim.
func (l *Layout) RegCoords(shape []int, r int) []int {
	g := l.geom(shape)
	c := make([]int, l.Base())
	for _, d := range l.Order {
		c[d] = r % g.regs[d]
		r /= g.regs[d]
	}
	return c
}

// RegIndex is the inverse of RegCoords.
func (l *Layout) RegIndex(shape []int, rc []int) int {
	g := l.geom(shape)
	r, stride := 0, 1
	for _, d := range l.Order {
		r += rc[d] * stride
		stride *= g.regs[d]
	}
	return r
}

// Elem is the tile coordinate (one per tile axis) that register r of thread
// tid holds, and whether this copy is the owner (the first of its replicas).
func (l *Layout) Elem(shape []int, tid, r int) ([]int, bool) {
	return l.elem(l.geom(shape), l.ThreadCoords(tid), l.RegCoords(shape, r), nil)
}

// elem is Elem from the tile's geometry, the thread's coordinates and the
// register's, appended to out[:0].
func (l *Layout) elem(g geom, tc, rc, out []int) ([]int, bool) {
	out = out[:0]
	owner := true
	for d := 0; d < l.Base(); d++ {
		raw := RawCoord(Concrete{}, RegOffset(rc[d], g.spt[d], g.cover[d]), tc[d], g.spt[d], l.Spread(d))
		if raw >= g.shape[d] {
			owner = false
		}
		if !l.dropped(d) {
			out = append(out, WrapCoord(Concrete{}, raw, g.shape[d], g.cover[d]))
		}
	}
	return out, owner
}

// elemOf is Elem for every register of a tile in turn, its geometry and
// register coordinates worked out once (Equivalent asks for them all):
// the returned function takes the thread's coordinates (ThreadCoords).
func (l *Layout) elemOf(shape []int) func(tc []int, r int, out []int) ([]int, bool) {
	g := l.geom(shape)
	n, base := prod(g.regs), l.Base()
	rcs := make([]int, n*base) // RegCoords of each register, flat
	for r := 0; r < n; r++ {
		copy(rcs[r*base:], l.RegCoords(shape, r))
	}
	return func(tc []int, r int, out []int) ([]int, bool) {
		return l.elem(g, tc, rcs[r*base:(r+1)*base], out)
	}
}

// RegOf is the register holding tile coordinate c in a thread that holds it.
// It does not depend on the thread: that is what lets lowering turn layout
// bookkeeping into fixed register maps.
func (l *Layout) RegOf(shape []int, c []int) int {
	g := l.geom(shape)
	rc := make([]int, l.Base())
	a := 0
	for d := 0; d < l.Base(); d++ {
		if l.dropped(d) {
			continue
		}
		x := c[a]
		a++
		rc[d] = (x/g.cover[d])*g.spt[d] + x%g.spt[d]
	}
	return l.RegIndex(shape, rc)
}

// Equivalent reports whether a and b place every element of a tile of the
// given shape identically, for every thread of a block of the given size.
func Equivalent(a, b *Layout, shape []int, threads int) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil || a.Rank() != b.Rank() || a.Regs(shape) != b.Regs(shape) {
		return false
	}
	n := a.Regs(shape)
	ea, eb := a.elemOf(shape), b.elemOf(shape)
	var ca, cb []int
	for t := 0; t < threads; t++ {
		ta, tb := a.ThreadCoords(t), b.ThreadCoords(t)
		for r := 0; r < n; r++ {
			var oa, ob bool
			ca, oa = ea(ta, r, ca)
			cb, ob = eb(tb, r, cb)
			if oa != ob || !slices.Equal(ca, cb) {
				return false
			}
		}
	}
	return true
}

// Map draws which lane (and wave, as w.l) owns each element of a 1-D or 2-D
// tile, as in the doc comment above: the picture the layout is.
func (l *Layout) Map(shape []int, threads int) string {
	rows, cols := 1, shape[0]
	if len(shape) == 2 {
		rows, cols = shape[0], shape[1]
	}
	owner := make([]string, rows*cols)
	w := l.WaveSize()
	for t := 0; t < threads; t++ {
		for r := 0; r < l.Regs(shape); r++ {
			c, own := l.Elem(shape, t, r)
			if !own {
				continue
			}
			i := c[0]
			if len(c) == 2 {
				i = c[0]*cols + c[1]
			}
			owner[i] = fmt.Sprintf("%d.%d", t/w, t%w)
		}
	}
	var sb strings.Builder
	for i := 0; i < rows; i++ {
		sb.WriteString(strings.Join(owner[i*cols:(i+1)*cols], " "))
		sb.WriteByte('\n')
	}
	return sb.String()
}

func prod(x []int) int {
	p := 1
	for _, v := range x {
		p *= v
	}
	return p
}

// LaneStride is the distance, in lane ids, between neighbouring lanes along
// base dim d: shuffles along d exchange with lane ^ (LaneStride << k).
func (l *Layout) LaneStride(d int) int { return l.orderStride(l.TPW, d) }

// orderStride is the product of per's entries for the dims before d in
// Order: the distance between neighbours along d when ids run along Order.
func (l *Layout) orderStride(per []int, d int) int {
	s := 1
	for _, o := range l.Order {
		if o == d {
			return s
		}
		s *= per[o]
	}
	panic("BUG: dim not in order")
}

// Geometry exposes a layout applied to a shape, per base dim: the extent,
// the elements per lane after clamping, the block's coverage, the registers
// a lane holds, and the stride of that dim in register numbering.
func (l *Layout) Geometry(shape []int) (extent, spt, cover, regs, stride []int) {
	g := l.geom(shape)
	stride = make([]int, l.Base())
	s := 1
	for _, d := range l.Order {
		stride[d] = s
		s *= g.regs[d]
	}
	return g.shape, g.spt, g.cover, g.regs, stride
}
