package lower_test

import (
	"fmt"
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
	l := &lowered{f: f, before: f.String(), after: map[string]string{}}
	cfg := &lower.Config{Warps: 4, Verify: true, Div: div, After: func(pass string, f *ir.Func) {
		l.after[pass] = f.String()
		l.order = append(l.order, pass)
	}}
	if err := lower.Run(f, cfg); err != nil {
		t.Fatal(err)
	}
	return l
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
		if v := only(t, l.f, ir.OpLoad); v.Vec != vec {
			t.Errorf("load vec=%d; want %d: %s", v.Vec, vec, v.LongString())
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
				load := only(t, l.f, ir.OpLoad)
				want := ir.Blocked([]int{1, 8}, []int{1, 32}, []int{1, 4}, []int{1, 0})
				if !reflect.DeepEqual(load.Type.Layout, want) {
					t.Errorf("load layout %v; want %v", load.Type.Layout, want)
				}
				c := count(l.f)
				if c["reduce"] != 0 || c["reduce_lanes"] != 1 || c["reduce_wave"] != 1 || c["reduce_waves"] != 1 {
					t.Errorf("reduce steps %v; want one each of reduce_lanes, reduce_wave, reduce_waves", c)
				}
				w := only(t, l.f, ir.OpReduceWaves)
				if w.Args[0].Op != ir.OpReduceWave || w.Args[0].Args[0].Op != ir.OpReduceLanes {
					t.Errorf("reduce steps out of order: %s ← %s", w.LongString(), w.Args[0].LongString())
				}
				for _, v := range []*ir.Value{w, w.Args[0], w.Args[0].Args[0]} {
					if v.Aux != 1 || v.Red != ir.RMax || !reflect.DeepEqual(v.Type.Layout, want.Slice(1)) {
						t.Errorf("%s: want axis 1, max, layout %v", v.LongString(), want.Slice(1))
					}
				}
				// The waves exchange one f32 partial each through LDS.
				if l.f.LDSBytes != 4*4 {
					t.Errorf("LDS %d bytes; want 16 (4 waves × 1 f32)", l.f.LDSBytes)
				}
				if c["lds_store"]+c["lds_load"]+c["barrier"]+c["convert"] != 0 {
					t.Errorf("unexpected LDS round trip: %v", c)
				}
			},
		},
		{
			name:  "reduce along lanes only: no reduce_waves",
			setup: reduce2D(8, 64, 1, false),
			check: func(t *testing.T, l *lowered) {
				// [8,64] f32: 4 a lane, 16 lanes along a row, the waves down the rows.
				c := count(l.f)
				if c["reduce_lanes"] != 1 || c["reduce_wave"] != 1 || c["reduce_waves"] != 0 {
					t.Errorf("reduce steps %v; want reduce_lanes and reduce_wave only", c)
				}
			},
		},
		{
			name:  "reduce down the rows crosses waves",
			setup: reduce2D(8, 64, 0, false),
			check: func(t *testing.T, l *lowered) {
				c := count(l.f)
				if c["reduce_lanes"] != 1 || c["reduce_wave"] != 1 || c["reduce_waves"] != 1 {
					t.Errorf("reduce steps %v; want one of each", c)
				}
				// 4 waves along the rows, a partial of 64 f32 from each.
				// The sum is stored in its own layout: no convert.
				if l.f.LDSBytes != 4*64*4 || c["lds_store"] != 0 {
					t.Errorf("LDS %d bytes; want %d", l.f.LDSBytes, 4*64*4)
				}
			},
		},
		{
			name:  "reduce of an axis held in one lane: reduce_lanes only",
			setup: reduce2D(1, 256, 0, false),
			check: func(t *testing.T, l *lowered) {
				c := count(l.f)
				if c["reduce_lanes"] != 1 || c["reduce_wave"] != 0 || c["reduce_waves"] != 0 {
					t.Errorf("reduce steps %v; want reduce_lanes only", c)
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
					case "lds_store", "lds_load", "barrier", "convert", "reduce_waves":
						seq = append(seq, n)
					}
				}
				if diff := cmp.Diff([]string{"lds_store", "barrier", "lds_load", "barrier", "store"}, tail(opNames(l.f.Entry), 5)); diff != "" {
					t.Errorf("end of the kernel (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([]string{"lds_store", "barrier", "lds_load", "barrier"}, seq); diff != "" {
					t.Errorf("LDS ops (-want +got):\n%s", diff)
				}
				st, ld := only(t, l.f, ir.OpLDSStore), only(t, l.f, ir.OpLDSLoad)
				if st.Args[0].Op != ir.OpTrans {
					t.Errorf("LDS holds %s; want the transposed tile", st.Args[0].LongString())
				}
				// [16,64] fp8 rows padded by 4 bytes: an odd number of words.
				if st.Pitch != 64+4 || ld.Pitch != st.Pitch || st.Aux != ld.Aux {
					t.Errorf("%s / %s: want pitch 68 and one offset", st.LongString(), ld.LongString())
				}
				if ld.Vec != 4 {
					t.Errorf("%s: want one-word LDS reads (vec=4)", ld.LongString())
				}
				if want := 16 * (64 + 4) * 1; l.f.LDSBytes != want {
					t.Errorf("LDS %d bytes; want %d", l.f.LDSBytes, want)
				}
				store := only(t, l.f, ir.OpStore)
				if store.Args[1] != ld {
					t.Errorf("store %s does not store the LDS load", store.LongString())
				}
				// 16 fp8 along M a lane; 8 bf16 along K.
				if store.Vec != 16 || only(t, l.f, ir.OpLoad).Vec != 8 {
					t.Errorf("store vec=%d, load vec=%d; want 16 and 8", store.Vec, only(t, l.f, ir.OpLoad).Vec)
				}
				if got, want := store.Args[0].Type.Layout.Order[0], 1; got != want {
					t.Errorf("store layout %v is not fastest along M", store.Args[0].Type.Layout)
				}
			},
		},
		{
			name:  "store in the load's layout needs no convert",
			setup: scale2x,
			check: func(t *testing.T, l *lowered) {
				c := count(l.f)
				if c["convert"]+c["lds_store"]+c["lds_load"]+c["barrier"] != 0 || l.f.LDSBytes != 0 {
					t.Errorf("ops %v, LDS %d; want no LDS traffic", c, l.f.LDSBytes)
				}
				if strings.Contains(l.after["layout"], "convert") {
					t.Errorf("layout inserted a convert:\n%s", l.after["layout"])
				}
				ld, st := only(t, l.f, ir.OpLoad), only(t, l.f, ir.OpStore)
				if !reflect.DeepEqual(ld.Type.Layout, st.Args[1].Type.Layout) || ld.Vec != 4 || st.Vec != 4 {
					t.Errorf("load %s, store %s: want one layout and vec=4", ld.LongString(), st.LongString())
				}
			},
		},
		{
			name:  "store indexed by the load's arange: the load's indices stay in registers",
			setup: reduce2D(8, 64, 1, true),
			bug: "assignLayout decides the store's pointer layout (the 1-D anchor, as the sliced layout of the " +
				"sum is not 'coalesced') before the backward sweep, and the sweep, running from the last value, " +
				"then gives that anchor to the arange the load's indices share; the load's index tile is " +
				"converted back through LDS (lds_store/barrier/lds_load/barrier before the load). rowwise_cast " +
				"with ROWS>1 (e.g. K=64: ROWS=8, WARPS=1) gets 3 LDS round trips this way (rows, row mask, " +
				"inv_scale) where at most the inv_scale value needs one",
			check: func(t *testing.T, l *lowered) {
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
				if ld := only(t, l.f, ir.OpLoad); fed(ld) {
					t.Errorf("the load's operands come through LDS")
				}
				if c := count(l.f); c["lds_store"] > 1 {
					t.Errorf("%d LDS round trips; want at most one, for the stored sums", c["lds_store"])
				}
			},
		},
		{
			name:  "loop-carried tile keeps one layout",
			setup: amaxLoop,
			check: func(t *testing.T, l *lowered) {
				loop := only(t, l.f, ir.OpFor)
				iv, carried := loop.ForVars()
				if iv.Type.Rank() != 0 || len(carried) != 1 {
					t.Fatalf("loop vars %v %v", iv, carried)
				}
				yield := loop.Body.Values[len(loop.Body.Values)-1]
				res := only(t, l.f, ir.OpForResult)
				want := carried[0].Type.Layout
				if want == nil {
					t.Fatal("carried value has no layout")
				}
				for what, v := range map[string]*ir.Value{"init": loop.Args[3], "yield": yield.Args[0], "for_result": res} {
					if !ir.Equivalent(v.Type.Layout, want, v.Type.Shape, l.f.Threads) {
						t.Errorf("%s %s: layout differs from the loop variable's %v", what, v.LongString(), want)
					}
				}
				c := count(l.f)
				if c["convert"]+c["lds_store"] != 0 {
					t.Errorf("ops %v: a loop-carried tile needs no convert here", c)
				}
				if ld := only(t, l.f, ir.OpLoad); ld.Vec != 4 || ld.Block != loop.Body {
					t.Errorf("load %s: want vec=4 inside the loop", ld.LongString())
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
			if err := ir.Verify(l.f, ir.PhaseThreads); err != nil {
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

func tail(s []string, n int) []string { return s[max(0, len(s)-n):] }

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
	want := []string{"dce", "layout", "regmaps", "reduce", "convert", "vectorize", "lds"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("passes %v; want %v", names, want)
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

// TestPassGolden compares the IR before and after one pass.
func TestPassGolden(t *testing.T) {
	// [256] f32 on 4 waves of 32: 4 floats (16 bytes) a lane.
	const lay = "#blocked{spt=[4] tpw=[32] wpb=[4] order=[0]}"
	head := func(lds int) string {
		return fmt.Sprintf("func k(x v1 <ptr<f32>>, amax v2 <ptr<f32>>) target=sm_90 threads=128 lds=%d {\n", lds)
	}
	prefix := func(vec string) string {
		return strings.ReplaceAll(`  v3 = arange [256] <tile<256xi32, L>>
  v4 = splat <tile<256xptr<f32>, L>> v1
  v5 = ptr_add <tile<256xptr<f32>, L>> v4 v3
  v6 = const [0] <f32>
  v7 = splat <tile<256xf32, L>> v6
  v8 = const [1] <i1>
  v9 = splat <tile<256xi1, L>> v8
  v10 = load`+vec+` <tile<256xf32, L>> v5 v9 v7
  v11 = abs <tile<256xf32, L>> v10
`, "L", lay)
	}
	reduce := `  v12 = reduce [axis=0 max] <f32> v11
  v13 = const [1] <i1>
  atomic_max [relaxed agent] v2 v12 v13
}
`
	steps := `  v15 = reduce_lanes [axis=0 max] <f32> v11
  v16 = reduce_wave [axis=0 max] <f32> v15
  v17 = reduce_waves [axis=0 max] <f32> v16
  v13 = const [1] <i1>
  atomic_max [relaxed agent] v2 v17 v13
}
`
	tests := []struct {
		name          string
		setup         func(b *ir.Builder)
		pass          string
		before, after string
	}{
		{
			name:   "reduce expands into lanes, wave, waves",
			setup:  amaxTile,
			pass:   "reduce",
			before: head(0) + prefix("") + reduce,
			after:  head(0) + prefix("") + steps,
		},
		{
			name:   "vectorize loads 16 bytes a lane",
			setup:  amaxTile,
			pass:   "vectorize",
			before: head(0) + prefix("") + steps,
			after:  head(0) + prefix(" [vec=4 uniform]") + steps,
		},
		{
			name:   "lds sizes the wave exchange",
			setup:  amaxTile,
			pass:   "lds",
			before: head(0) + prefix(" [vec=4 uniform]") + steps,
			after:  head(16) + prefix(" [vec=4 uniform]") + steps,
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
