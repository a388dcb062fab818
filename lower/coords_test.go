package lower

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/fp8gen/fp8gen/interp"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/target"
)

// TestCoordsMatchLayout holds the code lowering writes for a tile's
// coordinates and owner test (the layout formulas read over IR values),
// run in the interpreter at every thread, to the layout's concrete reading
// (ir.Layout.Elem), for random blocked layouts and shapes with and without
// replicas.
func TestCoordsMatchLayout(t *testing.T) {
	tg, err := target.Lookup("sm_90")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(11, 12))
	pow2 := func(maxLog int) int { return 1 << r.IntN(maxLog+1) }
	for i := range 300 {
		n := 1 + r.IntN(2)
		spt, tpw, wpb, order, shape := make([]int, n), make([]int, n), make([]int, n), make([]int, n), make([]int, n)
		lanes := tg.WaveSize
		for d := range n {
			spt[d], wpb[d], shape[d], order[d] = pow2(2), pow2(2-d), pow2(6), d
			tpw[d] = lanes
			if d < n-1 {
				tpw[d] = pow2(5)
				lanes /= tpw[d]
			}
		}
		if n == 2 && r.IntN(2) == 0 {
			order[0], order[1] = 1, 0
		}
		l := ir.Blocked(spt, tpw, wpb, order)
		t.Run(fmt.Sprintf("%d_%v_%v", i, l, shape), func(t *testing.T) { coordsMatch(t, tg, l, shape) })
	}
}

func coordsMatch(t *testing.T, tg *target.Target, l *ir.Layout, shape []int) {
	f := ir.NewFunc("coords", tg)
	f.Phase, f.Threads = ir.PhaseLanes, l.Threads()
	out := f.NewValue(ir.OpParam, ir.Lanes(ir.PtrTo(ir.I32), 1), ir.NameAttr{Name: "out"})
	f.Params = []*ir.Value{out}
	e := &expander{f: f, wave: tg.WaveSize, threads: f.Threads, m: map[*ir.Value]*ir.Value{},
		tcs: map[string]*ir.Value{}, consts: map[string]*ir.Value{}, pro: &ir.Block{}}
	body := &ir.Block{}
	e.cur = body
	ty := ir.Type{Shape: shape, DType: ir.I32, Layout: l}
	regs := l.Regs(shape)
	fields := len(shape) + 1 // each coordinate, then the owner test
	// out[(tid·regs + r)·fields + k]: field k of register r in thread tid.
	slot := make([]int64, regs)
	for r := range slot {
		slot[r] = int64(r * fields)
	}
	at := e.bin(ir.OpAdd, e.bin(ir.OpMul, e.tidValue(), e.i32(regs*fields)), e.regs(ir.I32, slot))
	store := func(k int, x *ir.Value) {
		x = e.fit(x, regs)
		p := e.emit(ir.OpPtrAdd, ir.Lanes(out.Type.DType, regs), nil, out, e.bin(ir.OpAdd, at, e.i32(k)))
		e.emit(ir.OpStore, ir.Type{}, &ir.MemAttr{Vec: 1}, p, x, e.fit(e.c(ir.Bool, 1), regs))
	}
	for a := range shape {
		store(a, e.coord(ty, a))
	}
	own := e.owner(ty)
	if own == nil {
		own = e.c(ir.Bool, 1)
	}
	store(len(shape), e.emit(ir.OpCast, ir.Lanes(ir.I32, own.Type.Regs), nil, own))
	f.Entry = &ir.Block{}
	f.Entry.Append(out)
	for _, v := range append(e.pro.Values, body.Values...) {
		f.Entry.Append(v)
	}
	buf := make([]byte, 4*f.Threads*regs*fields)
	if err := interp.Launch(f, [3]int{1, 1, 1}, []any{buf}); err != nil {
		t.Fatalf("%v\n%s", err, f)
	}
	for tid := range f.Threads {
		for r := range regs {
			c, owner := l.Elem(shape, tid, r)
			for k := range fields {
				got := int32(binary.LittleEndian.Uint32(buf[4*((tid*regs+r)*fields+k):]))
				want := int32(0)
				if k < len(c) {
					want = int32(c[k])
				} else if owner {
					want = 1
				}
				if got != want {
					t.Fatalf("thread %d register %d: field %d (coordinates, then owner) is %d in the lowered code, %d in the layout (%v, owner %v)", tid, r, k, got, want, c, owner)
				}
			}
		}
	}
}
