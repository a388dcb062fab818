package lower_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fp8gen/fp8gen/fp8"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/lower"
	"github.com/fp8gen/fp8gen/target"
)

func sm90(t testing.TB) *target.Target {
	t.Helper()
	tg, err := target.Lookup("sm_90")
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// lowered is a kernel after lowering, with the IR text after each pass.
type lowered struct {
	f      *ir.Func
	before string
	after  map[string]string
	order  []string
	// Facts of the layout phase (after vectorize), by value ID: its layout
	// and its vector width.
	layout map[*ir.Value]*ir.Layout
	vec    map[*ir.Value]*ir.MemAttr
	tiles  *ir.Func // the layout-phase values, for only
}

// build runs setup and lowers the kernel with 4 waves and the verifier on.
func build(t *testing.T, setup func(b *ir.Builder), div map[string]int) *lowered {
	t.Helper()
	b := ir.NewBuilder("k", sm90(t))
	setup(b)
	f, err := b.Func()
	if err != nil {
		t.Fatal(err)
	}
	l := &lowered{f: f, before: f.String(), after: map[string]string{}, layout: map[*ir.Value]*ir.Layout{}, vec: map[*ir.Value]*ir.MemAttr{}}
	var tiles []*ir.Value
	cfg := &lower.Config{Warps: 4, Verify: true, Div: div, After: func(pass string, f *ir.Func) {
		l.after[pass] = f.String()
		l.order = append(l.order, pass)
		if pass == "vectorize" {
			f.Walk(func(v *ir.Value) {
				tiles = append(tiles, v)
				l.layout[v] = v.Type.Layout
				if m, ok := v.Attr.(*ir.MemAttr); ok {
					c := *m
					l.vec[v] = &c
				}
			})
		}
	}}
	if err := lower.Run(f, cfg); err != nil {
		t.Fatal(err)
	}
	l.tiles = &ir.Func{Entry: &ir.Block{Values: tiles}}
	return l
}

// onlyTile returns the one layout-phase value of op op.
func onlyTile(t *testing.T, l *lowered, op ir.Op) *ir.Value {
	t.Helper()
	var found []*ir.Value
	for _, v := range l.tiles.Entry.Values {
		if v.Op == op {
			found = append(found, v)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d %s values in the layout phase, want 1:\n%s", len(found), op.Name(), l.after["vectorize"])
	}
	return found[0]
}

// opNames lists the op names of a block, loop bodies inline.
func opNames(b *ir.Block) []string {
	var n []string
	for _, v := range b.Values {
		n = append(n, v.Op.Name())
		if v.Body != nil {
			n = append(n, opNames(v.Body)...)
		}
	}
	return n
}

func count(f *ir.Func) map[string]int {
	c := map[string]int{}
	f.Walk(func(v *ir.Value) { c[v.Op.Name()]++ })
	return c
}

// only returns the one value of op op.
func only(t *testing.T, f *ir.Func, op ir.Op) *ir.Value {
	t.Helper()
	var found []*ir.Value
	f.Walk(func(v *ir.Value) {
		if v.Op == op {
			found = append(found, v)
		}
	})
	if len(found) != 1 {
		t.Fatalf("%d %s values, want 1:\n%v", len(found), op.Name(), f)
	}
	return found[0]
}

// rowwise loads a row [1,256] of bf16 x[M,K], takes the max of |x| over
// it and stores it to y[pid]: rowwise_cast's first half.
func rowwise(b *ir.Builder) {
	x := b.Param("x", ir.BF16)
	y := b.Param("y", ir.F32)
	k := b.Size("K")
	pid := b.ProgramID(0)
	cols := b.Arange(256)
	offs := b.Add(b.Mul(pid, k), b.Row(cols))
	v := b.Cast(b.Load(b.PtrAdd(x, offs), b.Row(b.Lt(cols, k)), nil), ir.F32)
	b.Store(b.PtrAdd(y, pid), b.Reduce(b.Abs(v), 1, ir.RMax), nil)
}

// reduce2D loads an f32 tile [rows, cols] of x (row pitch cols) and stores
// its sum along axis to y. With shared, the store's indices are the load's
// arange; otherwise a fresh one.
func reduce2D(rows, cols, axis int, shared bool) func(b *ir.Builder) {
	return func(b *ir.Builder) {
		x := b.Param("x", ir.F32)
		y := b.Param("y", ir.F32)
		r, c := b.Arange(rows), b.Arange(cols)
		v := b.Load(b.PtrAdd(x, b.Add(b.Mul(b.Col(r), cols), b.Row(c))), nil, nil)
		out := c
		if axis == 1 {
			out = r
		}
		if !shared {
			out = b.Arange(out.Type.Shape[0])
		}
		b.Store(b.PtrAdd(y, out), b.Reduce(v, axis, ir.RSum), nil)
	}
}

// colwise loads a [64,16] tile of bf16 x[M,K], casts it to fp8 and stores
// its transpose to qt[K,M], contiguous along M: colwise_cast's second half.
// The index tiles of the store are built apart from the load's, as
// ops.colwiseKernel does, so that only the data goes through LDS.
func colwise(b *ir.Builder) {
	x := b.Param("x", ir.BF16)
	qt := b.Param("qt", ir.FP8(fp8.E4M3FN))
	m, k := b.Size("M"), b.Size("K")
	pid := b.ProgramID(0)
	rows, cols := b.Arange(64), b.Add(b.Mul(pid, 16), b.Arange(16))
	v := b.Cast(b.Load(b.PtrAdd(x, b.Add(b.Mul(b.Col(rows), k), b.Row(cols))), nil, nil), ir.F32)
	q := b.Trans(b.Cast(v, ir.FP8(fp8.E4M3FN))) // [16, 64]
	rows2, cols2 := b.Arange(64), b.Add(b.Mul(pid, 16), b.Arange(16))
	b.Store(b.PtrAdd(qt, b.Add(b.Mul(b.Col(cols2), m), b.Row(rows2))), q, nil)
}

// scale2x loads [4,64] f32 and stores twice it at the same offsets of y.
func scale2x(b *ir.Builder) {
	x := b.Param("x", ir.F32)
	y := b.Param("y", ir.F32)
	offs := b.Add(b.Mul(b.Col(b.Arange(4)), 64), b.Row(b.Arange(64)))
	v := b.Load(b.PtrAdd(x, offs), nil, nil)
	b.Store(b.PtrAdd(y, offs), b.Mul(v, 2.0), nil)
}

// amaxLoop is tensorwise_amax: a persistent loop over tiles of 256 carrying
// the running max, then an atomic max of its reduction.
func amaxLoop(b *ir.Builder) {
	x := b.Param("x", ir.F32)
	a := b.Param("amax", ir.F32)
	n := b.Size("N")
	tiles := b.Div(b.Add(n, 255), 256)
	acc := b.For(b.ProgramID(0), tiles, b.NumPrograms(0), []*ir.Value{b.Full(ir.F32, 0, 256)}, func(i *ir.Value, c []*ir.Value) []*ir.Value {
		offs := b.Add(b.Mul(i, 256), b.Arange(256))
		return []*ir.Value{b.Max(c[0], b.Abs(b.Load(b.PtrAdd(x, offs), b.Lt(offs, n), nil)))}
	})
	b.AtomicMax(a, b.Reduce(acc[0], 0, ir.RMax), nil, ir.Relaxed, ir.ScopeAgent)
}

type passCase struct {
	name  string
	setup func(b *ir.Builder)
	div   map[string]int
	check func(t *testing.T, l *lowered)
	bug   string // set where lowering is known to get it wrong
}

// loadVec is the case: rowwise with K divisible by div loads vec elements a lane.
func loadVec(name string, div map[string]int, vec int) passCase {
	return passCase{name: name, setup: rowwise, div: div, check: func(t *testing.T, l *lowered) {
		if v := onlyTile(t, l, ir.OpLoad); l.vec[v].Vec != vec {
			t.Errorf("load vec=%d; want %d: %s", l.vec[v].Vec, vec, v.LongString())
		}
		if v := only(t, l.f, ir.OpLoad); v.Mem().Vec != vec {
			t.Errorf("lanes load vec=%d; want %d: %s", v.Mem().Vec, vec, v.LongString())
		}
	}}
}

func TestLowerPasses(t *testing.T) {
	tests := []passCase{
		loadVec("rowwise K%16==0 loads 8 bf16 a lane", map[string]int{"K": 16}, 8),
		loadVec("rowwise K%4==0 loads 4 bf16 a lane", map[string]int{"K": 4}, 4),
		loadVec("rowwise odd K loads scalars", map[string]int{"K": 1}, 1),
		loadVec("rowwise K unknown loads scalars", nil, 1),
		{
			name:  "rowwise reduce crosses lanes, the wave and the waves",
			setup: rowwise,
			div:   map[string]int{"K": 16},
			check: func(t *testing.T, l *lowered) {
				// [1,256] bf16: 8 a lane, 32 lanes and 4 waves along the row.
				load := onlyTile(t, l, ir.OpLoad)
				want := ir.Blocked([]int{1, 8}, []int{1, 32}, []int{1, 4}, []int{1, 0})
				if !reflect.DeepEqual(l.layout[load], want) {
					t.Errorf("load layout %v; want %v", l.layout[load], want)
				}
				c := count(l.f)
				if c["reduce"] != 0 || c["reduce_regs"] != 1 || c["butterfly"] != 1 || c["lds_reduce"] != 1 || c["lds_store"] != 1 || c["barrier"] != 2 {
					t.Errorf("reduce steps %v; want one each of reduce_regs, butterfly, lds_store, lds_reduce, and two barriers", c)
				}
				lr := only(t, l.f, ir.OpLDSReduce)
				if a := lr.LDSFold(); a.Count != 4 || a.Stride != 4 || a.Kind != ir.RMax {
					t.Errorf("%s: want the max of 4 partials, 4 bytes apart", lr.LongString())
				}
				fold := only(t, l.f, ir.OpReduceRegs)
				if a := fold.Fold(); a.N != 8 || a.Stride != 1 || fold.Type.Regs != 1 {
					t.Errorf("%s: want one register folding 8", fold.LongString())
				}
				bf := only(t, l.f, ir.OpButterfly)
				if a := bf.Butterfly(); a.First != 1 || a.Steps != 5 || bf.Args[0] != fold {
					t.Errorf("%s: want lanes 1..16 after the register fold", bf.LongString())
				}
				// The waves exchange one f32 partial each through LDS.
				if l.f.LDSBytes != 4*4 {
					t.Errorf("LDS %d bytes; want 16 (4 waves × 1 f32)", l.f.LDSBytes)
				}
				if c["lds_load"]+c["convert"] != 0 {
					t.Errorf("unexpected LDS round trip: %v", c)
				}
			},
		},
		{
			name:  "reduce along lanes only: no wave exchange",
			setup: reduce2D(8, 64, 1, false),
			check: func(t *testing.T, l *lowered) {
				// [8,64] f32: 4 a lane, 16 lanes along a row, the waves down the rows.
				c := count(l.f)
				if c["reduce_regs"] != 1 || c["butterfly"] != 1 || c["lds_reduce"] != 0 {
					t.Errorf("reduce steps %v; want reduce_regs and butterfly only", c)
				}
			},
		},
		{
			name:  "reduce down the rows crosses waves",
			setup: reduce2D(8, 64, 0, false),
			check: func(t *testing.T, l *lowered) {
				c := count(l.f)
				if c["butterfly"] != 1 || c["lds_reduce"] != 1 {
					t.Errorf("reduce steps %v; want a butterfly and a wave exchange", c)
				}
				// 4 waves along the rows, a partial of 64 f32 from each.
				// The sum is stored in its own layout: no convert.
				if l.f.LDSBytes != 4*64*4 || c["lds_load"] != 0 {
					t.Errorf("LDS %d bytes, ops %v; want %d and no round trip", l.f.LDSBytes, c, 4*64*4)
				}
			},
		},
		{
			name:  "reduce of an axis held in one lane: reduce_regs only",
			setup: reduce2D(1, 256, 0, false),
			check: func(t *testing.T, l *lowered) {
				c := count(l.f)
				if c["butterfly"] != 0 || c["lds_reduce"] != 0 {
					t.Errorf("reduce steps %v; want no shuffle and no LDS", c)
				}
			},
		},
		{
			name:  "colwise transpose goes through LDS once",
			setup: colwise,
			div:   map[string]int{"K": 16, "M": 16},
			check: func(t *testing.T, l *lowered) {
				if n := strings.Count(l.after["layout"], " convert "); n != 1 {
					t.Errorf("%d converts after layout; want 1:\n%s", n, l.after["layout"])
				}
				var seq []string
				for _, n := range opNames(l.f.Entry) {
					switch n {
					case "lds_store", "lds_load", "barrier", "lds_reduce", "store":
						seq = append(seq, n)
					}
				}
				if diff := cmp.Diff([]string{"lds_store", "barrier", "lds_load", "barrier", "store"}, seq); diff != "" {
					t.Errorf("LDS ops (-want +got):\n%s", diff)
				}
				st, ld := only(t, l.f, ir.OpLDSStore), only(t, l.f, ir.OpLDSLoad)
				// [16,64] fp8 rows padded by 4 bytes: an odd number of words.
				if want := 16 * (64 + 4) * 1; l.f.LDSBytes != want {
					t.Errorf("LDS %d bytes; want %d", l.f.LDSBytes, want)
				}
				if ld.Mem().Vec != 4 || st.Mem().Vec != 1 {
					t.Errorf("%s / %s: want one-word LDS reads (vec=4) and byte writes", ld.LongString(), st.LongString())
				}
				store := only(t, l.f, ir.OpStore)
				if store.Data() != ld {
					t.Errorf("store %s does not store the LDS load", store.LongString())
				}
				// 16 fp8 along M a lane; 8 bf16 along K.
				if store.Mem().Vec != 16 || store.Mem().Unaligned || only(t, l.f, ir.OpLoad).Mem().Vec != 8 {
					t.Errorf("store %s, load vec=%d; want an aligned vec=16 and 8", store.LongString(), only(t, l.f, ir.OpLoad).Mem().Vec)
				}
				ts := onlyTile(t, l, ir.OpStore)
				if got, want := l.layout[ts.Ptr()].Order[0], 1; got != want {
					t.Errorf("store layout %v is not fastest along M", l.layout[ts.Ptr()])
				}
			},
		},
		{
			// M odd: qt's rows start at any byte, so its 16-byte runs move
			// in aligned pieces; K's rows are still 16-byte aligned.
			name:  "colwise with M odd stores unaligned vectors",
			setup: colwise,
			div:   map[string]int{"K": 16, "M": 1},
			check: func(t *testing.T, l *lowered) {
				if st := only(t, l.f, ir.OpStore); st.Mem().Vec != 16 || !st.Mem().Unaligned {
					t.Errorf("store %s; want vec=16 unaligned", st.LongString())
				}
				ld := only(t, l.f, ir.OpLoad)
				if ld.Mem().Vec != 8 || ld.Mem().Unaligned {
					t.Errorf("load %s; want an aligned vec=8", ld.LongString())
				}
				// Only a store moves in pieces: the verifier refuses an
				// unaligned load.
				ld.Mem().Unaligned = true
				if err := ir.Verify(l.f, ir.PhaseLanes); err == nil || !strings.Contains(err.Error(), "only a global store") {
					t.Errorf("an unaligned load verified: %v", err)
				}
				ld.Mem().Unaligned = false
			},
		},
		{
			name:  "store in the load's layout needs no convert",
			setup: scale2x,
			check: func(t *testing.T, l *lowered) {
				c := count(l.f)
				if c["lds_store"]+c["lds_load"]+c["barrier"] != 0 || l.f.LDSBytes != 0 {
					t.Errorf("ops %v, LDS %d; want no LDS traffic", c, l.f.LDSBytes)
				}
				if strings.Contains(l.after["layout"], "convert") {
					t.Errorf("layout inserted a convert:\n%s", l.after["layout"])
				}
				ld, st := onlyTile(t, l, ir.OpLoad), onlyTile(t, l, ir.OpStore)
				if !reflect.DeepEqual(l.layout[ld], l.layout[st.Data()]) || l.vec[ld].Vec != 4 || l.vec[st].Vec != 4 {
					t.Errorf("load %s, store %s: want one layout and vec=4", ld.LongString(), st.LongString())
				}
			},
		},
		{
			name:  "store indexed by the load's arange: the load's indices stay in registers",
			setup: reduce2D(8, 64, 1, true),
			check: func(t *testing.T, l *lowered) {
				// The arange both share is recomputed in the store's
				// layout: only the sums go through LDS, once.
				c := count(l.f)
				if c["lds_load"] > 1 {
					t.Errorf("%d LDS round trips; want at most one, for the stored sums", c["lds_load"])
				}
				ld := only(t, l.f, ir.OpLoad)
				var fed func(v *ir.Value) bool // whether an LDS load feeds v
				fed = func(v *ir.Value) bool {
					if v.Op == ir.OpLDSLoad {
						return true
					}
					for _, a := range v.Args {
						if fed(a) {
							return true
						}
					}
					return false
				}
				if fed(ld) {
					t.Errorf("the load's operands come through LDS")
				}
			},
		},
		{
			name:  "loop-carried tile keeps one layout",
			setup: amaxLoop,
			check: func(t *testing.T, l *lowered) {
				loop := onlyTile(t, l, ir.OpFor)
				_, carried := loop.ForVars()
				want := l.layout[carried[0]]
				if want == nil {
					t.Fatal("carried value has no layout")
				}
				for what, v := range map[string]*ir.Value{"init": loop.Args[3], "yield": loop.Yield().Args[0]} {
					if !ir.Equivalent(l.layout[v], want, v.Type.Shape, 128) {
						t.Errorf("%s %s: layout differs from the loop variable's %v", what, v.LongString(), want)
					}
				}
				c := count(l.f)
				if c["convert"]+c["lds_load"] != 0 {
					t.Errorf("ops %v: a loop-carried tile needs no convert here", c)
				}
				lanesLoop := only(t, l.f, ir.OpFor)
				if ld := only(t, l.f, ir.OpLoad); ld.Mem().Vec != 4 || ld.Block != lanesLoop.Body {
					t.Errorf("load %s: want vec=4 inside the loop", ld.LongString())
				}
				_, lc := lanesLoop.ForVars()
				if lc[0].Type.Regs != 4 {
					t.Errorf("carried %v: want 4 registers (256 floats, 4 a lane, half the lanes replicas)", lc[0].Type)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.bug != "" {
				t.Skip("BUG: " + tt.bug)
			}
			l := build(t, tt.setup, tt.div)
			if diff := cmp.Diff(lower.PassNames(), l.order); diff != "" {
				t.Errorf("After saw passes (-want +got):\n%s", diff)
			}
			if err := ir.Verify(l.f, ir.PhaseLanes); err != nil {
				t.Fatal(err)
			}
			if c := count(l.f); c["reduce"]+c["convert"] != 0 {
				t.Errorf("tile ops left after lowering: %v", c)
			}
			if l.f.Threads != 4*32 {
				t.Errorf("threads %d; want 128", l.f.Threads)
			}
			tt.check(t, l)
			if t.Failed() {
				t.Logf("before:\n%s\nafter:\n%v", l.before, l.f)
			}
		})
	}
}

// TestDCE compares the IR before and after the dce pass: the unused product
// goes, with the constant and splat only it used, and nothing else does.
func TestDCE(t *testing.T) {
	l := build(t, func(b *ir.Builder) {
		x := b.Param("x", ir.F32)
		b.Size("unused")
		offs := b.Arange(4)
		v := b.Load(b.PtrAdd(x, offs), nil, nil)
		b.Mul(v, 2.0)
		b.Store(b.PtrAdd(x, offs), b.Neg(v), nil)
	}, nil)
	before := `func k(x v1 <ptr<f32>>, unused v2 <i32>) target=sm_90 {
  v3 = arange [4] <tile<4xi32>>
  v4 = splat <tile<4xptr<f32>>> v1
  v5 = ptr_add <tile<4xptr<f32>>> v4 v3
  v6 = const [0] <f32>
  v7 = splat <tile<4xf32>> v6
  v8 = const [1] <i1>
  v9 = splat <tile<4xi1>> v8
  v10 = load <tile<4xf32>> v5 v9 v7
  v11 = const [2] <f32>
  v12 = splat <tile<4xf32>> v11
  v13 = mul <tile<4xf32>> v10 v12
  v14 = splat <tile<4xptr<f32>>> v1
  v15 = ptr_add <tile<4xptr<f32>>> v14 v3
  v16 = neg <tile<4xf32>> v10
  v17 = const [1] <i1>
  v18 = splat <tile<4xi1>> v17
  store v15 v16 v18
}
`
	after := `func k(x v1 <ptr<f32>>, unused v2 <i32>) target=sm_90 threads=128 lds=0 {
  v3 = arange [4] <tile<4xi32>>
  v4 = splat <tile<4xptr<f32>>> v1
  v5 = ptr_add <tile<4xptr<f32>>> v4 v3
  v6 = const [0] <f32>
  v7 = splat <tile<4xf32>> v6
  v8 = const [1] <i1>
  v9 = splat <tile<4xi1>> v8
  v10 = load <tile<4xf32>> v5 v9 v7
  v14 = splat <tile<4xptr<f32>>> v1
  v15 = ptr_add <tile<4xptr<f32>>> v14 v3
  v16 = neg <tile<4xf32>> v10
  v17 = const [1] <i1>
  v18 = splat <tile<4xi1>> v17
  store v15 v16 v18
}
`
	if diff := cmp.Diff(before, l.before); diff != "" {
		t.Errorf("before dce (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(after, l.after["dce"]); diff != "" {
		t.Errorf("after dce (-want +got):\n%s", diff)
	}
	if len(l.f.Params) != 2 {
		t.Errorf("dce dropped a parameter: %v", l.f.Params)
	}
}

// TestDCELoopBody: an unused value inside a loop body goes too, and the
// loop, an effect, stays even though nothing uses its (absent) results.
func TestDCELoopBody(t *testing.T) {
	l := build(t, func(b *ir.Builder) {
		x := b.Param("x", ir.F32)
		b.For(0, 4, 1, nil, func(i *ir.Value, _ []*ir.Value) []*ir.Value {
			b.Mul(i, 3)
			b.Store(b.PtrAdd(x, i), 1.0, nil)
			return nil
		})
	}, nil)
	if strings.Contains(l.after["dce"], "mul") || strings.Contains(l.after["dce"], "const [3]") {
		t.Errorf("unused mul survived dce:\n%s", l.after["dce"])
	}
	if !strings.Contains(l.after["dce"], "for ") || !strings.Contains(l.after["dce"], "store ") {
		t.Errorf("dce removed an effect:\n%s", l.after["dce"])
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	for _, tt := range []struct {
		warps int
		want  string
	}{
		{3, "3 waves per block: want a power of two"},
		{0, "0 waves per block"},
		{64, "2048 threads per block > 1024 on sm_90"},
		{1 << 62, "4611686018427387904 waves per block"},
	} {
		b := ir.NewBuilder("k", sm90(t))
		scale2x(b)
		f, err := b.Func()
		if err != nil {
			t.Fatal(err)
		}
		err = lower.Run(f, &lower.Config{Warps: tt.warps})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Warps %d: error %v; want %q", tt.warps, err, tt.want)
		}
	}
}

func TestPassNames(t *testing.T) {
	names := lower.PassNames()
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			t.Errorf("pass %s twice", n)
		}
		seen[n] = true
	}
	// The order the passes rely on.
	want := []string{"dce", "layout", "hoist", "vectorize", "expand", "simplify"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("passes %v; want %v", names, want)
	}
}

// TestPassGolden compares the IR before and after one pass.
func TestPassGolden(t *testing.T) {
	tests := []struct {
		name          string
		setup         func(b *ir.Builder)
		pass          string
		before, after string
	}{
		{
			name:   "vectorize loads 16 bytes a lane",
			setup:  amaxTile,
			pass:   "vectorize",
			before: amaxLayout(""),
			after:  amaxLayout(" [vec=4 uniform]"),
		},
		{
			name:   "expand writes the layout out: coordinates, the fold, the butterfly and the wave exchange",
			setup:  amaxTile,
			pass:   "expand",
			before: amaxLayout(" [vec=4 uniform]"),
			after:  amaxExpanded,
		},
		{
			name:   "simplify folds what the block's bounds decide",
			setup:  amaxTile,
			pass:   "simplify",
			before: amaxExpanded,
			after:  amaxSimplified,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := build(t, tt.setup, nil)
			prev := ""
			for i, p := range l.order {
				if p == tt.pass {
					if i > 0 {
						prev = l.after[l.order[i-1]]
					}
					break
				}
			}
			if diff := cmp.Diff(tt.before, prev); diff != "" {
				t.Errorf("before %s (-want +got):\n%s", tt.pass, diff)
			}
			if diff := cmp.Diff(tt.after, l.after[tt.pass]); diff != "" {
				t.Errorf("after %s (-want +got):\n%s", tt.pass, diff)
			}
		})
	}
}

// amaxTile is the whole of a one-tile amax: |x| of 256 floats, reduced, and
// an atomic max.
func amaxTile(b *ir.Builder) {
	x := b.Param("x", ir.F32)
	a := b.Param("amax", ir.F32)
	v := b.Load(b.PtrAdd(x, b.Arange(256)), nil, nil)
	b.AtomicMax(a, b.Reduce(b.Abs(v), 0, ir.RMax), nil, ir.Relaxed, ir.ScopeAgent)
}

// amaxLayout is amaxTile in the layout phase: [256] f32 on 4 waves of 32,
// 4 floats (16 bytes) a lane.
func amaxLayout(vec string) string {
	return strings.ReplaceAll(`func k(x v1 <ptr<f32>>, amax v2 <ptr<f32>>) target=sm_90 threads=128 lds=0 {
  v3 = arange [256] <tile<256xi32, L>>
  v4 = splat <tile<256xptr<f32>, L>> v1
  v5 = ptr_add <tile<256xptr<f32>, L>> v4 v3
  v6 = const [0] <f32>
  v7 = splat <tile<256xf32, L>> v6
  v8 = const [1] <i1>
  v9 = splat <tile<256xi1, L>> v8
  v10 = load`+vec+` <tile<256xf32, L>> v5 v9 v7
  v11 = abs <tile<256xf32, L>> v10
  v12 = reduce [axis=0 max] <f32> v11
  v13 = const [1] <i1>
  v14 = atomic [max relaxed agent] <f32> v2 v12 v13
}
`, "L", "#blocked{spt=[4] tpw=[32] wpb=[4] order=[0]}")
}

// amaxExpanded: the thread coordinate of each lane from tid (lane and
// wave), its four elements' offsets (wrapped: lanes 64… hold replicas),
// the fold of four registers, the butterfly over 32 lanes, one partial per
// wave through LDS, and the atomic by lane 0.
const amaxExpanded = `func k(x v1 <ptr<f32>>, amax v2 <ptr<f32>>) target=sm_90 threads=128 lds=16 {
  v15 = regconst [[0 1 2 3]] <regs<4xi32>>
  v16 = tid <regs<1xi32>> # tid
  v17 = const [32] <i32>
  v18 = rem <regs<1xi32>> v16 v17
  v19 = const [1] <i32>
  v20 = div <regs<1xi32>> v18 v19
  v21 = rem <regs<1xi32>> v20 v17
  v22 = div <regs<1xi32>> v16 v17
  v23 = div <regs<1xi32>> v22 v19
  v24 = const [4] <i32>
  v25 = rem <regs<1xi32>> v23 v24
  v26 = mul <regs<1xi32>> v25 v17
  v27 = add <regs<1xi32>> v26 v21 # tc0
  v28 = mul <regs<1xi32>> v27 v24
  v29 = add <regs<4xi32>> v15 v28
  v30 = const [255] <i32>
  v31 = and <regs<4xi32>> v29 v30
  v40 = const [0] <i32>
  v41 = eq <regs<1xi1>> v21 v40
  v42 = mul <regs<1xi32>> v25 v19
  v43 = add <regs<1xi32>> v42 v40
  v44 = mul <regs<1xi32>> v43 v24
  v47 = mul <i32> v40 v24
  v50 = eq <regs<1xi1>> v16 v40
  v32 = splat <regs<4xptr<f32>>> v1
  v33 = ptr_add <regs<4xptr<f32>>> v32 v31
  v6 = const [0] <f32>
  v34 = splat <regs<4xf32>> v6
  v8 = const [1] <i1>
  v35 = splat <regs<4xi1>> v8
  v36 = load [vec=4 uniform] <regs<4xf32>> v33 v35 v34
  v37 = abs <regs<4xf32>> v36
  v38 = reduce_regs [max n=4 stride=1] <regs<1xf32>> v37
  v39 = butterfly [max lanes^1..16] <regs<1xf32>> v38
  lds_store v44 v39 v41
  barrier
  v48 = lds_reduce [max count=4 stride=4] <regs<1xf32>> v47
  barrier
  v13 = const [1] <i1>
  v51 = and <regs<1xi1>> v13 v50
  v52 = atomic [max relaxed agent] <regs<1xf32>> v2 v48 v51
}
`

// amaxSimplified: the block's bounds settle x/1, x%1 and (x/32)·32 + x%32,
// the splats are read as their scalars, and what is left unused goes.
const amaxSimplified = `func k(x v1 <ptr<f32>>, amax v2 <ptr<f32>>) target=sm_90 threads=128 lds=16 {
  v15 = regconst [[0 1 2 3]] <regs<4xi32>>
  v16 = tid <regs<1xi32>> # tid
  v17 = const [32] <i32>
  v18 = rem <regs<1xi32>> v16 v17
  v22 = div <regs<1xi32>> v16 v17
  v24 = const [4] <i32>
  v28 = mul <regs<1xi32>> v16 v24
  v29 = add <regs<4xi32>> v15 v28
  v30 = const [255] <i32>
  v31 = and <regs<4xi32>> v29 v30
  v40 = const [0] <i32>
  v41 = eq <regs<1xi1>> v18 v40
  v44 = mul <regs<1xi32>> v22 v24
  v53 = const [0] <i32>
  v50 = eq <regs<1xi1>> v16 v40
  v33 = ptr_add <regs<4xptr<f32>>> v1 v31
  v6 = const [0] <f32>
  v8 = const [1] <i1>
  v36 = load [vec=4 uniform] <regs<4xf32>> v33 v8 v6
  v37 = abs <regs<4xf32>> v36
  v38 = reduce_regs [max n=4 stride=1] <regs<1xf32>> v37
  v39 = butterfly [max lanes^1..16] <regs<1xf32>> v38
  lds_store v44 v39 v41
  barrier
  v48 = lds_reduce [max count=4 stride=4] <regs<1xf32>> v53
  barrier
  v52 = atomic [max relaxed agent] <regs<1xf32>> v2 v48 v50
}
`

// A tile made before a loop and needed inside it in the loop's layout is
// converted once, before the loop, not on every iteration; a division by
// a size stays where it was, as a loop that runs no iteration must not
// divide by zero.
func TestHoist(t *testing.T) {
	l := build(t, func(b *ir.Builder) {
		p := b.Param("p", ir.F32)
		q := b.Param("q", ir.F32)
		n, k := b.Size("N"), b.Size("K")
		cols := b.Arange(64)
		s := b.Load(b.PtrAdd(p, cols), nil, nil) // its own (vector) layout
		b.For(0, n, 1, nil, func(i *ir.Value, _ []*ir.Value) []*ir.Value {
			// A [64, 16] tile, contiguous along its 16: s runs down its
			// rows, in a layout other than its own.
			inner := b.Add(b.Mul(i, 16), b.Arange(16))
			offs := b.Add(b.Mul(b.Col(cols), 16), b.Row(inner))
			x := b.Load(b.PtrAdd(q, offs), nil, nil)
			y := b.Add(b.Mul(x, b.Col(s)), b.Cast(b.Div(n, k), ir.F32))
			b.Store(b.PtrAdd(q, offs), y, nil)
			return nil
		})
		b.Store(b.PtrAdd(p, cols), b.Mul(s, 2.0), nil) // s's own layout is wanted too
	}, map[string]int{"N": 1, "K": 1})
	var loop *ir.Value
	for _, v := range l.f.Entry.Values {
		if v.Op == ir.OpFor {
			loop = v
		}
	}
	if loop == nil {
		t.Fatal("no loop")
	}
	inLoop := map[string]int{}
	var walk func(b *ir.Block)
	walk = func(b *ir.Block) {
		for _, v := range b.Values {
			inLoop[v.Op.Name()]++
			if v.Body != nil {
				walk(v.Body)
			}
		}
	}
	walk(loop.Body)
	before := map[string]int{}
	for _, v := range l.f.Entry.Values {
		if v == loop {
			break
		}
		before[v.Op.Name()]++
	}
	if before["lds_store"] == 0 || before["barrier"] == 0 {
		t.Errorf("no LDS round trip before the loop (%d stores, %d barriers): the test needs a convert to hoist:\n%s", before["lds_store"], before["barrier"], l.after["hoist"])
	}
	if inLoop["barrier"] != 0 || inLoop["lds_store"] != 0 {
		t.Errorf("the loop body still holds %d barriers and %d LDS stores:\n%s", inLoop["barrier"], inLoop["lds_store"], l.after["hoist"])
	}
	if inLoop["div"] != 1 {
		t.Errorf("the loop body holds %d integer divisions by K; want it kept there:\n%s", inLoop["div"], l.after["hoist"])
	}
}
