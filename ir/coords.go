package ir

// A layout's placement of a tile, written once for both of its readings:
// over plain ints, the coordinates a given thread and register hold (what
// the verifier, Elem and the tests use), and over IR values, the code that
// computes them in every thread (what lowering writes). Ints is the
// arithmetic each reading supplies.
type Ints[T any] interface {
	Int(c int) T
	Add(a, b T) T
	Mul(a, b T) T
	Div(a, b T) T
	Rem(a, b T) T
	And(a, b T) T
}

// LaneCoord is lane tid's index along base dim d within its wave: a wave's
// lanes run along the dims in Order, the first fastest.
func LaneCoord[T any](l *Layout, a Ints[T], tid T, d int) T {
	return a.Rem(a.Div(a.Rem(tid, a.Int(l.WaveSize())), a.Int(l.LaneStride(d))), a.Int(l.TPW[d]))
}

// WaveCoord is the index along base dim d of thread tid's wave, the waves
// placed along the dims in Order as the lanes are.
func WaveCoord[T any](l *Layout, a Ints[T], tid T, d int) T {
	return a.Rem(a.Div(a.Div(tid, a.Int(l.WaveSize())), a.Int(l.waveStride(d))), a.Int(l.WPB[d]))
}

// ThreadCoord is a thread's index along base dim d from its lane's and its
// wave's: the wave's times the lanes along d, plus the lane's.
func ThreadCoord[T any](l *Layout, a Ints[T], lane, wave T, d int) T {
	return a.Add(a.Mul(wave, a.Int(l.TPW[d])), lane)
}

// RegOffset is the part of a raw coordinate along a base dim that a
// register holds whatever the thread, from its index rc among the lane's
// registers along the dim: its copy of the block's coverage, and its place
// among the spt elements a lane holds in each.
func RegOffset(rc, spt, cover int) int { return (rc/spt)*cover + rc%spt }

// RawCoord is the unwrapped coordinate along a base dim: the register's
// offset plus the thread's coordinate times the spt elements a lane holds
// (nothing where one thread spans the dim: spread is false).
func RawCoord[T any](a Ints[T], reg, tc T, spt int, spread bool) T {
	if !spread {
		return reg
	}
	return a.Add(reg, a.Mul(tc, a.Int(spt)))
}

// WrapCoord is a raw coordinate folded into the tile's extent where the
// block's coverage is larger (extents are powers of two); a raw coordinate
// at or past the extent is a replica, not the owner.
func WrapCoord[T any](a Ints[T], raw T, extent, cover int) T {
	if extent < cover {
		return a.And(raw, a.Int(extent-1))
	}
	return raw
}

// Spread reports whether threads are placed along base dim d (RawCoord's
// spread).
func (l *Layout) Spread(d int) bool { return l.TPW[d]*l.WPB[d] > 1 }

// waveStride is the distance, in wave ids, between neighbouring waves
// along base dim d.
func (l *Layout) waveStride(d int) int { return l.orderStride(l.WPB, d) }

// Concrete is the plain-int reading of the layout formulas.
type Concrete struct{}

func (Concrete) Int(c int) int    { return c }
func (Concrete) Add(a, b int) int { return a + b }
func (Concrete) Mul(a, b int) int { return a * b }
func (Concrete) Div(a, b int) int { return a / b }
func (Concrete) Rem(a, b int) int { return a % b }
func (Concrete) And(a, b int) int { return a & b }
