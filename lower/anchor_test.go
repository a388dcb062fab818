package lower

import (
	"fmt"
	"runtime/debug"
	"testing"
)

// Every anchor, lanes capped or not, is a layout of the block's waves
// that gives each element of the tile exactly one owner and maps
// registers both ways (Elem and RegOf agree).
func TestAnchorOwnsEveryElementOnce(t *testing.T) {
	var shapes [][]int
	for a := 1; a <= 256; a *= 4 {
		shapes = append(shapes, []int{a})
		for b := 1; b <= 256; b *= 2 {
			if a*b <= 4096 {
				shapes = append(shapes, []int{a, b})
			}
		}
	}
	// Each block shape is a subtest of its own, run in parallel: the
	// whole sweep is millions of Elem and RegOf calls, each of which
	// allocates its small slices; the heap stays small, so the collector
	// may let it grow further before it runs.
	gc := debug.SetGCPercent(800)
	t.Cleanup(func() { debug.SetGCPercent(gc) })
	for _, wave := range []int{32, 64} {
		for _, warps := range []int{1, 4, 32} {
			t.Run(fmt.Sprintf("wave%d_warps%d", wave, warps), func(t *testing.T) {
				t.Parallel()
				anchorOwnsEveryElementOnce(t, shapes, wave, warps)
			})
		}
	}
}

func anchorOwnsEveryElementOnce(t *testing.T, shapes [][]int, wave, warps int) {
	var owners []int32 // by element: row × columns + column, of the first and last axis
	for _, lanes := range []int{0, 1, 4, 16, wave} {
		for _, eb := range []int{1, 2, 4} {
			for _, sh := range shapes {
				for contig := range sh {
					for _, rows := range []int{1, 4} {
						for _, fill := range []bool{false, true} {
							l := anchor(sh, contig, eb, wave, warps, lanes, rows, fill)
							where := fmt.Sprintf("wave %d, %d waves, lanes %d, %d-byte elements, shape %v along %d, %d rows a lane, fill %v: %v", wave, warps, lanes, eb, sh, contig, rows, fill, l)
							if l.WaveSize() != wave || l.Waves() != warps {
								t.Fatalf("%s: %d lanes × %d waves", where, l.WaveSize(), l.Waves())
							}
							n := 1
							for _, x := range sh {
								n *= x
							}
							cols := sh[len(sh)-1]
							owners = append(owners[:0], make([]int32, n)...)
							regs := l.Regs(sh)
							for tid := 0; tid < wave*warps; tid++ {
								for r := 0; r < regs; r++ {
									c, own := l.Elem(sh, tid, r)
									if l.RegOf(sh, c) != r {
										t.Fatalf("%s: lane %d register %d holds %v, which RegOf puts in %d", where, tid, r, c, l.RegOf(sh, c))
									}
									if !own {
										continue
									}
									i := c[len(c)-1] // the element's index in owners
									if len(c) == 2 {
										i += c[0] * cols
									}
									if min(c[0], c[len(c)-1]) < 0 || i >= n {
										t.Fatalf("%s: lane %d register %d owns %v, outside the tile", where, tid, r, c)
									}
									owners[i]++
								}
							}
							owned := 0
							for _, k := range owners {
								if k > 0 {
									owned++
								}
							}
							if owned != n {
								t.Fatalf("%s: %d of %d elements owned", where, owned, n)
							}
							for i, k := range owners {
								if k != 1 {
									t.Fatalf("%s: element %d (row %d, column %d) owned %d times", where, i, i/cols, i%cols, k)
								}
							}
							// Where every wave's lanes fit along the other
							// axis rows deep, each lane holds rows there.
							if o := 1 - contig; len(sh) == 2 && rows > 1 && sh[o] >= rows*wave*warps && l.SPT[o] != rows {
								t.Fatalf("%s: %d elements a lane along axis %d; want %d", where, l.SPT[o], o, rows)
							}
							// With fill, a 2-D tile of at least an element a
							// lane holds no copies: its registers are its elements.
							if fill && len(sh) == 2 && lanes == 0 && rows == 1 && n >= wave*warps && regs*wave*warps != n {
								t.Fatalf("%s: %d registers × %d lanes for %d elements", where, regs, wave*warps, n)
							}
						}
					}
				}
			}
		}
	}
}
