package ir_test

import (
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fp8gen/fp8gen/fp8"
	"github.com/fp8gen/fp8gen/ir"
)

// tinyKernel loads four floats, folds them in a loop, stores them back and
// adds their sum atomically: a bit of every kind of op the printer shows.
func tinyKernel(t *testing.T) (*ir.Func, map[string]*ir.Value) {
	t.Helper()
	b := ir.NewBuilder("tiny", sm90(t))
	x := b.Param("x", ir.F32)
	n := b.Size("n")
	offs := b.Arange(4)
	p := b.PtrAdd(x, offs)
	m := b.Lt(offs, n)
	v := b.Load(p, m, nil)
	var mx *ir.Value
	acc := b.For(0, n, 2, []*ir.Value{v}, func(i *ir.Value, c []*ir.Value) []*ir.Value {
		mx = b.Max(c[0], b.Neg(v))
		return []*ir.Value{mx}
	})
	b.Store(p, acc[0], m)
	s := b.Reduce(acc[0], 0, ir.RSum)
	b.AtomicAdd(x, s, nil, ir.Relaxed, ir.ScopeAgent)
	f, err := b.Func()
	if err != nil {
		t.Fatal(err)
	}
	return f, map[string]*ir.Value{"x": x, "n": n, "offs": offs, "p": p, "load": v, "max": mx, "sum": s}
}

func TestPrintFunc(t *testing.T) {
	f, _ := tinyKernel(t)
	want := `func tiny(x v1 <ptr<f32>>, n v2 <i32>) target=sm_90 {
  v3 = arange [4] <tile<4xi32>>
  v4 = splat <tile<4xptr<f32>>> v1
  v5 = ptr_add <tile<4xptr<f32>>> v4 v3
  v6 = splat <tile<4xi32>> v2
  v7 = lt <tile<4xi1>> v3 v6
  v8 = const [0] <f32>
  v9 = splat <tile<4xf32>> v8
  v10 = load <tile<4xf32>> v5 v7 v9
  v11 = const [0] <i32>
  v12 = const [2] <i32>
  v13 = for v11 v2 v12 v10 (v14 <i32>, v15 <tile<4xf32>>) {
    v16 = neg <tile<4xf32>> v10
    v17 = max <tile<4xf32>> v15 v16
    yield v17
  }
  v19 = for_result [0] <tile<4xf32>> v13
  store v5 v19 v7
  v21 = reduce [axis=0 sum] <f32> v19
  v22 = const [1] <i1>
  v23 = atomic [sum relaxed agent] <f32> v1 v21 v22
}
`
	if diff := cmp.Diff(want, f.String()); diff != "" {
		t.Errorf("Func.String() mismatch (-want +got):\n%s", diff)
	}
	f.Threads, f.LDSBytes = 128, 2304
	if got, want := regexp.MustCompile(`^.*\n`).FindString(f.String()), "func tiny(x v1 <ptr<f32>>, n v2 <i32>) target=sm_90 threads=128 lds=2304 {\n"; got != want {
		t.Errorf("lowered header %q; want %q", got, want)
	}
}

// TestPrintDefinesEveryOperand: every vN that the whole-function print uses
// as an operand is defined somewhere in that print, so that the text can be
// read on its own.
func TestPrintDefinesEveryOperand(t *testing.T) {
	f, _ := tinyKernel(t)
	text := f.String()
	defined := map[string]bool{}
	for _, m := range regexp.MustCompile(`(v\d+) (=|<)`).FindAllStringSubmatch(text, -1) {
		defined[m[1]] = true
	}
	for _, m := range regexp.MustCompile(` (v\d+)\b`).FindAllStringSubmatch(text, -1) {
		if !defined[m[1]] {
			t.Errorf("operand %s is not defined in\n%s", m[1], text)
		}
	}
}

func TestPrintValue(t *testing.T) {
	f, v := tinyKernel(t)
	mx := v["max"]
	if got := mx.String(); got != "v17" {
		t.Errorf("short form %q; want v17", got)
	}
	loop := f.Entry.Values[len(f.Entry.Values)-6]
	if loop.Op != ir.OpFor {
		t.Fatalf("value %v is not the loop", loop.LongString())
	}
	iv, carried := loop.ForVars()

	lay := ir.Blocked([]int{1}, []int{32}, []int{4}, []int{0})
	withLayout := *mx
	withLayout.Type.Layout = lay
	vec := *v["load"]
	vec.Attr = &ir.MemAttr{Vec: 4, Uniform: true}
	q := f.NewValue(ir.OpCast, ir.Tile(ir.FP8(fp8.E4M3FN), 4), nil, mx)
	pid := f.NewValue(ir.OpProgramID, ir.Scalar(ir.I32), ir.AxisAttr{Axis: 1})
	big := f.NewValue(ir.OpConst, ir.Scalar(ir.F32), ir.ConstAttr{Float: 1e-12})
	named := f.NewValue(ir.OpAbs, ir.Scalar(ir.F32), nil, big).Named("scale")
	// Lanes ops print every decision lowering made.
	tid := f.NewValue(ir.OpTid, ir.Lanes(ir.I32, 1), nil)
	rc := f.NewValue(ir.OpRegConst, ir.Lanes(ir.I32, 4), ir.ConstsAttr{C: []int64{0, 1, 8, 9}})
	regs := f.NewValue(ir.OpSplat, ir.Lanes(ir.F32, 8), nil, big)
	gather := f.NewValue(ir.OpGatherRegs, ir.Lanes(ir.F32, 4), ir.RegMapAttr{Map: []int{0, 0, 4, 4}}, regs)
	fold := f.NewValue(ir.OpReduceRegs, ir.Lanes(ir.F32, 2), ir.FoldAttr{Kind: ir.RMax, N: 4, Stride: 2}, regs)
	bf := f.NewValue(ir.OpButterfly, ir.Lanes(ir.F32, 2), ir.ButterflyAttr{Kind: ir.RSum, First: 2, Steps: 3}, fold)
	shfl := f.NewValue(ir.OpShflXor, ir.Lanes(ir.F32, 2), ir.LaneAttr{Mask: 16}, bf)
	st := f.NewValue(ir.OpLDSStore, ir.Type{}, &ir.MemAttr{Vec: 2}, rc, fold, tid)
	lr := f.NewValue(ir.OpLDSReduce, ir.Lanes(ir.F32, 4), ir.LDSFoldAttr{Kind: ir.RMax, Count: 8, Stride: 256}, rc)
	for _, tt := range []struct {
		v    *ir.Value
		want string
	}{
		{v["x"], `v1 = param ["x"] <ptr<f32>>`},
		{v["n"], `v2 = size ["n"] <i32>`},
		{v["offs"], "v3 = arange [4] <tile<4xi32>>"},
		{mx, "v17 = max <tile<4xf32>> v15 v16"},
		{&withLayout, "v17 = max <tile<4xf32, #blocked{spt=[1] tpw=[32] wpb=[4] order=[0]}>> v15 v16"},
		{&vec, "v10 = load [vec=4 uniform] <tile<4xf32>> v5 v7 v9"},
		{v["sum"], "v21 = reduce [axis=0 sum] <f32> v19"},
		{loop, "v13 = for v11 v2 v12 v10"},
		{iv, "v14 = loop_var [0] <i32>"},
		{carried[0], "v15 = loop_var [1] <tile<4xf32>>"},
		{q, "v24 = cast <tile<4xe4m3fn>> v17"},
		{pid, "v25 = program_id [1] <i32>"},
		{big, "v26 = const [1e-12] <f32>"},
		{named, "v27 = abs <f32> v26 # scale"},
		{tid, "v28 = tid <regs<1xi32>>"},
		{rc, "v29 = regconst [[0 1 8 9]] <regs<4xi32>>"},
		{gather, "v31 = gather_regs [[0 0 4 4]] <regs<4xf32>> v30"},
		{fold, "v32 = reduce_regs [max n=4 stride=2] <regs<2xf32>> v30"},
		{bf, "v33 = butterfly [sum lanes^2..8] <regs<2xf32>> v32"},
		{shfl, "v34 = shfl_xor [lane^16] <regs<2xf32>> v33"},
		{st, "lds_store [vec=2] v29 v32 v28"},
		{lr, "v36 = lds_reduce [max count=8 stride=256] <regs<4xf32>> v29"},
	} {
		if got := tt.v.LongString(); got != tt.want {
			t.Errorf("long form\n got %s\nwant %s", got, tt.want)
		}
	}
	if got, want := lay.Slice(0).String(), "#slice{dim=0 #blocked{spt=[1] tpw=[32] wpb=[4] order=[0]}}"; got != want {
		t.Errorf("sliced layout %s; want %s", got, want)
	}
}

func TestExpandDimsOfScalarIsAnError(t *testing.T) {
	b := ir.NewBuilder("k", sm90(t))
	_, _, line, _ := runtime.Caller(0)
	b.Row(b.ProgramID(0))
	_, err := b.Func()
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("print_test.go:%d: expand_dims of a scalar", line+1)) {
		t.Errorf("error %v; want the position of the Row call and what is wrong", err)
	}
}
