package ir_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fp8gen/fp8gen/ir"
)

func constF32(f *ir.Func, x float64) *ir.Value {
	return f.NewValue(ir.OpConst, ir.Scalar(ir.F32), ir.ConstAttr{Float: x})
}

// TestVerifyRejectsBrokenIR breaks hand-built IR one way at a time; the
// verifier must name the broken value and what is wrong, and accept the
// same IR unbroken.
func TestVerifyRejectsBrokenIR(t *testing.T) {
	lay := ir.Blocked([]int{1}, []int{32}, []int{4}, []int{0})
	tests := []struct {
		name string
		// build returns the function and whether to break it.
		build func(f *ir.Func, broken bool)
		phase ir.Phase
		want  []string // substrings of the error
		bug   string
	}{
		{
			name: "operand used before its definition",
			build: func(f *ir.Func, broken bool) {
				c := constF32(f, 1)
				s := f.NewValue(ir.OpSplat, ir.Tile(ir.F32, 4), nil, c)
				if broken {
					f.Entry.Append(s)
					f.Entry.Append(c)
				} else {
					f.Entry.Append(c)
					f.Entry.Append(s)
				}
			},
			phase: ir.PhaseTile,
			want:  []string{"v2 = splat <tile<4xf32>> v1: operand 0 is not defined before its use"},
		},
		{
			name: "operand never placed in a block",
			build: func(f *ir.Func, broken bool) {
				c := constF32(f, 1)
				s := f.NewValue(ir.OpSplat, ir.Tile(ir.F32, 4), nil, c)
				if !broken {
					f.Entry.Append(c)
				}
				f.Entry.Append(s)
			},
			phase: ir.PhaseTile,
			want:  []string{"v2 = splat <tile<4xf32>> v1: operand 0 is not defined before its use"},
		},
		{
			name: "loop body value used after the loop",
			build: func(f *ir.Func, broken bool) {
				lo := f.NewValue(ir.OpConst, ir.Scalar(ir.I32), ir.ConstAttr{})
				hi := f.NewValue(ir.OpConst, ir.Scalar(ir.I32), ir.ConstAttr{Int: 4})
				st := f.NewValue(ir.OpConst, ir.Scalar(ir.I32), ir.ConstAttr{Int: 1})
				for _, v := range []*ir.Value{lo, hi, st} {
					f.Entry.Append(v)
				}
				loop := f.NewValue(ir.OpFor, ir.Type{}, nil, lo, hi, st)
				loop.Body = &ir.Block{Parent: loop}
				iv := f.NewValue(ir.OpLoopVar, ir.Scalar(ir.I32), ir.IntAttr{})
				iv.Block = loop.Body
				loop.Body.Vars = []*ir.Value{iv}
				inner := f.NewValue(ir.OpAdd, ir.Scalar(ir.I32), nil, iv, st)
				loop.Body.Append(inner)
				loop.Body.Append(f.NewValue(ir.OpYield, ir.Type{}, nil))
				f.Entry.Append(loop)
				f.Entry.Append(f.NewValue(ir.OpAdd, ir.Scalar(ir.I32), nil, pick(broken, inner, hi), lo))
			},
			phase: ir.PhaseTile,
			want:  []string{"v8 = add <i32> v6 v1: operand 0 is not defined before its use"},
		},
		{
			name: "wrong operand count",
			build: func(f *ir.Func, broken bool) {
				c := constF32(f, 1)
				f.Entry.Append(c)
				args := []*ir.Value{c, c}
				if broken {
					args = args[:1]
				}
				f.Entry.Append(f.NewValue(ir.OpAdd, ir.Scalar(ir.F32), nil, args...))
			},
			phase: ir.PhaseTile,
			want:  []string{"v2 = add <f32> v1: 1 operands, want 2"},
		},
		{
			name: "elementwise shape mismatch",
			build: func(f *ir.Func, broken bool) {
				c := constF32(f, 1)
				x := f.NewValue(ir.OpSplat, ir.Tile(ir.F32, 4), nil, c)
				n := 4
				if broken {
					n = 8
				}
				y := f.NewValue(ir.OpSplat, ir.Tile(ir.F32, n), nil, c)
				for _, v := range []*ir.Value{c, x, y, f.NewValue(ir.OpAdd, ir.Tile(ir.F32, 4), nil, x, y)} {
					f.Entry.Append(v)
				}
			},
			phase: ir.PhaseTile,
			want:  []string{"v4 = add <tile<4xf32>> v2 v3: operand shapes [4] and [8] differ"},
		},
		{
			name: "elementwise operand types differ",
			build: func(f *ir.Func, broken bool) {
				c := constF32(f, 1)
				d := f.NewValue(ir.OpConst, ir.Scalar(ir.I32), ir.ConstAttr{})
				if !broken {
					d = constF32(f, 2)
				}
				for _, v := range []*ir.Value{c, d, f.NewValue(ir.OpMax, ir.Scalar(ir.F32), nil, c, d)} {
					f.Entry.Append(v)
				}
			},
			phase: ir.PhaseTile,
			want:  []string{"v3 = max <f32> v1 v2: operand types f32 and i32 differ"},
		},
		{
			name: "tile without a layout in the layout phase",
			build: func(f *ir.Func, broken bool) {
				f.Threads = 128
				c := constF32(f, 1)
				tt := ir.Tile(ir.F32, 4)
				if !broken {
					tt.Layout = lay
				}
				f.Entry.Append(c)
				f.Entry.Append(f.NewValue(ir.OpSplat, tt, nil, c))
			},
			phase: ir.PhaseLayout,
			want:  []string{"v2 = splat <tile<4xf32>> v1: tile without a layout"},
		},
		{
			name: "layout of the wrong rank",
			build: func(f *ir.Func, broken bool) {
				f.Threads = 128
				c := constF32(f, 1)
				tt := ir.Tile(ir.F32, 4)
				tt.Layout = lay
				if broken {
					tt.Layout = ir.Blocked([]int{1, 1}, []int{1, 32}, []int{1, 4}, []int{1, 0})
				}
				f.Entry.Append(c)
				f.Entry.Append(f.NewValue(ir.OpSplat, tt, nil, c))
			},
			phase: ir.PhaseLayout,
			want:  []string{"on a rank-1 tile"},
		},
		{
			name: "elementwise layouts differ in the layout phase",
			build: func(f *ir.Func, broken bool) {
				f.Threads = 128
				c := constF32(f, 1)
				x := f.NewValue(ir.OpSplat, ir.Type{Shape: []int{256}, DType: ir.F32, Layout: lay}, nil, c)
				yl := lay
				if broken {
					yl = ir.Blocked([]int{2}, []int{32}, []int{4}, []int{0})
				}
				y := f.NewValue(ir.OpSplat, ir.Type{Shape: []int{256}, DType: ir.F32, Layout: yl}, nil, c)
				z := f.NewValue(ir.OpAdd, ir.Type{Shape: []int{256}, DType: ir.F32, Layout: lay}, nil, x, y)
				for _, v := range []*ir.Value{c, x, y, z} {
					f.Entry.Append(v)
				}
			},
			phase: ir.PhaseLayout,
			want:  []string{"v4 = add", "operand 1 layout #blocked{spt=[2] tpw=[32] wpb=[4] order=[0]} differs"},
		},
		{
			name: "lanes op in the tile phase",
			build: func(f *ir.Func, broken bool) {
				f.Entry.Append(constF32(f, 1))
				if broken {
					f.Entry.Append(f.NewValue(ir.OpBarrier, ir.Type{}, nil))
				}
			},
			phase: ir.PhaseTile,
			want:  []string{": barrier: op barrier does not belong in the tile phase"},
		},
		{
			name: "nil operand",
			build: func(f *ir.Func, broken bool) {
				c := constF32(f, 1)
				y := c
				if broken {
					y = nil
				}
				f.Entry.Append(c)
				f.Entry.Append(f.NewValue(ir.OpAdd, ir.Scalar(ir.F32), nil, c, y))
			},
			phase: ir.PhaseTile,
			want:  []string{"operand 1 is not defined before its use"},
		},
		{
			name: "unlowered reduce in the lanes phase",
			build: func(f *ir.Func, broken bool) {
				f.Threads = 128
				c := constF32(f, 1)
				f.Entry.Append(c)
				if broken {
					x := f.NewValue(ir.OpSplat, ir.Lanes(ir.F32, 4), nil, c)
					f.Entry.Append(x)
					f.Entry.Append(f.NewValue(ir.OpReduce, ir.Lanes(ir.F32, 1), ir.ReduceAttr{Kind: ir.RMax}, x))
				}
			},
			phase: ir.PhaseLanes,
			want:  []string{"reduce [axis=0 max] <regs<1xf32>> v2: op reduce does not belong in the lanes phase"},
		},
		{
			name: "attribute of another op",
			build: func(f *ir.Func, broken bool) {
				var a ir.Attr = ir.AxisAttr{Axis: 1}
				if broken {
					a = ir.IntAttr{N: 1}
				}
				f.Entry.Append(f.NewValue(ir.OpProgramID, ir.Scalar(ir.I32), a))
			},
			phase: ir.PhaseTile,
			want:  []string{"program_id [1] <i32>: attribute ir.IntAttr, want ir.AxisAttr"},
		},
		{
			name: "register counts disagree in the lanes phase",
			build: func(f *ir.Func, broken bool) {
				f.Threads = 128
				c := constF32(f, 1)
				x := f.NewValue(ir.OpSplat, ir.Lanes(ir.F32, 4), nil, c)
				n := 4
				if broken {
					n = 8
				}
				y := f.NewValue(ir.OpSplat, ir.Lanes(ir.F32, n), nil, c)
				for _, v := range []*ir.Value{c, x, y, f.NewValue(ir.OpAdd, ir.Lanes(ir.F32, n), nil, x, y)} {
					f.Entry.Append(v)
				}
			},
			phase: ir.PhaseLanes,
			want:  []string{"v4 = add <regs<8xf32>> v2 v3: operand 0 has 4 registers, another 8"},
		},
		{
			name: "register map out of range",
			build: func(f *ir.Func, broken bool) {
				f.Threads = 128
				c := constF32(f, 1)
				x := f.NewValue(ir.OpSplat, ir.Lanes(ir.F32, 4), nil, c)
				m := []int{3, 2, 1, 0}
				if broken {
					m[0] = 4
				}
				for _, v := range []*ir.Value{c, x, f.NewValue(ir.OpGatherRegs, ir.Lanes(ir.F32, 4), ir.RegMapAttr{Map: m}, x)} {
					f.Entry.Append(v)
				}
			},
			phase: ir.PhaseLanes,
			want:  []string{"map entry 4 of 4 registers"},
		},
		{
			name: "yield in the middle of a block",
			build: func(f *ir.Func, broken bool) {
				lo := f.NewValue(ir.OpConst, ir.Scalar(ir.I32), ir.ConstAttr{})
				f.Entry.Append(lo)
				loop := f.NewValue(ir.OpFor, ir.Type{}, nil, lo, lo, lo)
				loop.Body = &ir.Block{Parent: loop}
				iv := f.NewValue(ir.OpLoopVar, ir.Scalar(ir.I32), ir.IntAttr{})
				iv.Block = loop.Body
				loop.Body.Vars = []*ir.Value{iv}
				if broken {
					loop.Body.Append(f.NewValue(ir.OpYield, ir.Type{}, nil))
				}
				loop.Body.Append(f.NewValue(ir.OpAdd, ir.Scalar(ir.I32), nil, iv, lo))
				loop.Body.Append(f.NewValue(ir.OpYield, ir.Type{}, nil))
				f.Entry.Append(loop)
			},
			phase: ir.PhaseTile,
			want:  []string{"yield does not end its block"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.bug != "" {
				t.Skip("BUG: " + tt.bug)
			}
			good := ir.NewFunc("k", sm90(t))
			tt.build(good, false)
			if err := ir.Verify(good, tt.phase); err != nil {
				t.Fatalf("unbroken IR rejected: %v\n%v", err, good)
			}
			bad := ir.NewFunc("k", sm90(t))
			tt.build(bad, true)
			err := verifyNoPanic(bad, tt.phase)
			if err == nil {
				t.Fatalf("broken IR accepted:\n%v", bad)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

func pick(c bool, x, y *ir.Value) *ir.Value {
	if c {
		return x
	}
	return y
}

func verifyNoPanic(f *ir.Func, phase ir.Phase) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("verifier panicked: %v", r)
		}
	}()
	return ir.Verify(f, phase)
}

// TestVerifyNamesPosition: an error from the verifier starts with the Go
// position recorded on the value.
func TestVerifyNamesPosition(t *testing.T) {
	f := ir.NewFunc("k", sm90(t))
	c := constF32(f, 1)
	v := f.NewValue(ir.OpAbs, ir.Scalar(ir.F32), nil)
	v.Pos = ir.Pos{File: "kern.go", Line: 42}
	f.Entry.Append(c)
	f.Entry.Append(v)
	err := ir.Verify(f, ir.PhaseTile)
	if err == nil || !strings.HasPrefix(err.Error(), "kern.go:42: v2 = abs <f32>: 0 operands, want 1") {
		t.Errorf("got %v; want it to start with kern.go:42: and name the value", err)
	}
}
