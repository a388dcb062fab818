package launch

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fp8gen/fp8gen/export"
	"github.com/fp8gen/fp8gen/ops"
	"github.com/fp8gen/fp8gen/target"
)

// exportTo writes op's export for each target under dir/TARGET.
func exportTo(t *testing.T, dir, name string, sh ops.Shape, o ops.Options, targets ...string) {
	t.Helper()
	op, _ := ops.Lookup(name)
	for _, tn := range targets {
		tg, _ := target.Lookup(tn)
		p, err := op.NewPlan(tg, sh, o, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := export.New(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Write(filepath.Join(dir, tn)); err != nil {
			t.Fatal(err)
		}
	}
}

// tensors are a call's inputs (random or adversarial) and zeroed outputs,
// as a launcher's caller holds them.
func tensors(c *ops.Call, seed uint64, adversarial bool) (Tensors, map[string]*ops.Tensor) {
	in := ops.Inputs(c, seed, adversarial)
	ts := Tensors{}
	for _, s := range c.Specs() {
		if s.Role == ops.Scratch {
			continue
		}
		data := make([]byte, s.Bytes())
		if s.Role == ops.Input {
			data = in[s.Name].Data
		}
		ts[s.Name] = &Tensor{DType: s.DType.String(), Shape: s.Shape, Data: data}
	}
	return ts, in
}

// An export runs every shape of its class as the op's reference says
// (bit for bit, or within its allowance): exported at a shape of odd sizes, it runs each test shape its
// manifest admits, in the interpreter, on random and adversarial inputs.
func TestClassMatchesReference(t *testing.T) {
	ctx := context.Background()
	for _, name := range ops.Names() {
		op, _ := ops.Lookup(name)
		for _, tn := range []string{"gfx942", "sm_90"} {
			if tg, _ := target.Lookup(tn); op.RunsOn(tg) != nil {
				tn = "gfx950" // the AMD target that runs OCP formats
			}
			r, err := OnCPU(tn)
			if err != nil {
				t.Fatal(err)
			}
			tg, _ := target.Lookup(tn)
			// Export at the test shapes that specialize least (odd sizes
			// where the op allows them), so that their classes are wide.
			spec := func(sh ops.Shape) int {
				n := 1
				for _, d := range ops.Divisors(sh) {
					n *= d
				}
				return n
			}
			least := spec(op.Tests.Shapes[0])
			for _, sh := range op.Tests.Shapes {
				least = min(least, spec(sh))
			}
			ran, other := 0, 0
			for _, at := range op.Tests.Shapes {
				if spec(at) != least {
					continue
				}
				dir := t.TempDir()
				exportTo(t, dir, name, at, nil, tn)
				lo, err := Load(os.DirFS(dir), ".")
				if err != nil {
					t.Fatal(err)
				}
				m := lo.Manifests(tn)[0]
				for _, sh := range op.Tests.Shapes {
					if m.Check(export.Sizes64(sh)) != nil {
						continue
					}
					c, err := op.NewCall(tg, sh, nil)
					if err != nil {
						t.Fatal(err)
					}
					for _, adv := range []bool{false, true} {
						ts, in := tensors(c, 7, adv)
						if err := r.Run(ctx, lo, Sizes(sh), ts); err != nil {
							t.Fatalf("%s on %s, exported at %v, run at %v: %v", name, tn, at, sh, err)
						}
						got := map[string]*ops.Tensor{}
						for _, s := range c.SpecsOf(ops.Output) {
							got[s.Name] = &ops.Tensor{Spec: s, Data: ts[s.Name].Data}
						}
						if _, err := c.CheckOutputs(in, got); err != nil {
							t.Errorf("%s on %s, exported at %v, run at %v (adversarial %v): %v", name, tn, at, sh, adv, err)
						}
					}
					ran++
					if fmt.Sprint(sh) != fmt.Sprint(at) {
						other++
					}
				}
			}
			if other == 0 {
				t.Errorf("%s on %s: no test shape ran but the one exported at (%d runs)", name, tn, ran)
			}
			t.Logf("%s on %s: %d shapes, %d of them other than exported", name, tn, ran, other)
		}
	}
}

// Run refuses, before anything runs, what does not fit the export.
func TestRunRefuses(t *testing.T) {
	dir := t.TempDir()
	exportTo(t, filepath.Join(dir, "rw"), "rowwise_cast", ops.Shape{"M": 7, "K": 33}, nil, "gfx942")
	lo, err := Load(os.DirFS(dir), "rw")
	if err != nil {
		t.Fatal(err)
	}
	r, _ := OnCPU("gfx942")
	tg, _ := target.Lookup("gfx942")
	op, _ := ops.Lookup("rowwise_cast")
	sh := ops.Shape{"M": 7, "K": 33}
	c, _ := op.NewCall(tg, sh, nil)
	fresh := func() Tensors { ts, _ := tensors(c, 1, false); return ts }
	for _, cs := range []struct {
		name  string
		sizes Sizes
		edit  func(Tensors)
		want  string
	}{
		{"dtype", Sizes(sh), func(ts Tensors) { ts["x"].DType = "f32" }, "tensor x is f32; want bf16"},
		{"shape", Sizes(sh), func(ts Tensors) { ts["x"].Shape = []int{33, 7} }, "tensor x has shape [33 7]; at K=33,M=7 it is [7 33]"},
		{"bytes", Sizes(sh), func(ts Tensors) { ts["q"].Data = ts["q"].Data[1:] }, "tensor q: 230 bytes of host memory; [7 33] e4m3fnuz is 231"},
		{"missing", Sizes(sh), func(ts Tensors) { delete(ts, "inv_scale") }, "tensor inv_scale (output f32) missing"},
		{"extra", Sizes(sh), func(ts Tensors) { ts["y"] = ts["x"] }, "no tensor y (tensors: inv_scale, q, x)"},
		{"class", Sizes{"M": 7, "K": 1000}, func(Tensors) {}, "64 >= K fails"},
		{"no data", Sizes(sh), func(ts Tensors) { ts["x"].Data = nil }, "give host Data or a device Buf"},
	} {
		ts := fresh()
		cs.edit(ts)
		err := r.Run(context.Background(), lo, cs.sizes, ts)
		if err == nil || !strings.Contains(err.Error(), cs.want) {
			t.Errorf("%s: %v; want %q", cs.name, err, cs.want)
		}
	}
	sm, _ := OnCPU("sm_90")
	if err := sm.Run(context.Background(), lo, Sizes(sh), fresh()); err == nil || !strings.Contains(err.Error(), "exported for gfx942, not for sm_90") {
		t.Errorf("a gfx942 export on an sm_90 runner: %v", err)
	}
}

// An export whose kernels this fp8gen would not build (another version,
// an edited manifest) is refused on the CPU rather than interpreted as
// something else.
func TestVariantSkew(t *testing.T) {
	dir := t.TempDir()
	exportTo(t, dir, "rowwise_cast", ops.Shape{"M": 7, "K": 33}, nil, "sm_90")
	mf := filepath.Join(dir, "sm_90", export.ManifestFile)
	js, _ := os.ReadFile(mf)
	b, _ := export.Read(filepath.Join(dir, "sm_90"))
	sym := b.Manifest.Kernels[0].Symbol
	os.WriteFile(mf, []byte(strings.ReplaceAll(string(js), `"symbol": "`+sym, `"symbol": "rowwise_cast_00000000`)), 0o644)
	lo, err := Load(os.DirFS(dir), ".")
	if err != nil {
		t.Fatal(err)
	}
	r, _ := OnCPU("sm_90")
	tg, _ := target.Lookup("sm_90")
	op, _ := ops.Lookup("rowwise_cast")
	c, _ := op.NewCall(tg, ops.Shape{"M": 7, "K": 33}, nil)
	ts, _ := tensors(c, 1, false)
	err = r.Run(context.Background(), lo, Sizes{"M": 7, "K": 33}, ts)
	if err == nil || !strings.Contains(err.Error(), "export it again") {
		t.Errorf("an edited symbol: %v", err)
	}
}

// Bad offsets are found on the host before a launch, and the kernels'
// status word is read after it.
func TestGroupedOffsetsRefused(t *testing.T) {
	dir := t.TempDir()
	sh := ops.Shape{"T": 7, "K": 33, "E": 3}
	exportTo(t, dir, "grouped_colwise_cast", sh, nil, "sm_90")
	lo, err := Load(os.DirFS(dir), ".")
	if err != nil {
		t.Fatal(err)
	}
	r, _ := OnCPU("sm_90")
	tg, _ := target.Lookup("sm_90")
	op, _ := ops.Lookup("grouped_colwise_cast")
	c, _ := op.NewCall(tg, sh, nil)
	ts, _ := tensors(c, 1, false)
	off := ts["offsets"].Data
	off[0], off[4] = 5, 2 // offsets 5, 2, 7: group 1 ends before it starts
	for i := 1; i < 4; i++ {
		off[i], off[4+i] = 0, 0
	}
	err = r.Run(context.Background(), lo, Sizes(sh), ts)
	if err == nil || !strings.Contains(err.Error(), "offsets") {
		t.Errorf("decreasing offsets: %v", err)
	}
}

// Several exports of one op are tried in order: a call runs the first
// whose class holds its shape, and a shape none holds is refused with
// each one's reason.
func TestClasses(t *testing.T) {
	dir := t.TempDir()
	exportTo(t, filepath.Join(dir, "0"), "rowwise_cast", ops.Shape{"M": 16, "K": 64}, nil, "sm_90")
	exportTo(t, filepath.Join(dir, "1"), "rowwise_cast", ops.Shape{"M": 7, "K": 201}, nil, "sm_90")
	lo, err := Load(os.DirFS(dir), ".")
	if err != nil {
		t.Fatal(err)
	}
	if ms := lo.Manifests("sm_90"); len(ms) != 2 || ms[0].Shape["K"] != 64 {
		t.Fatalf("exports loaded out of order: %v", ms)
	}
	r, _ := OnCPU("sm_90")
	tg, _ := target.Lookup("sm_90")
	op, _ := ops.Lookup("rowwise_cast")
	for i, sh := range []ops.Shape{{"M": 32, "K": 48}, {"M": 3, "K": 129}} { // both hold the first, only the second the second
		if m, err := lo.Pick("sm_90", Sizes(sh)); err != nil {
			t.Errorf("%v: %v", sh, err)
		} else if m.Shape["K"] != []int{64, 201}[i] {
			t.Errorf("%v: picked the export at %v; want the one at K=%d", sh, m.Shape, []int{64, 201}[i])
		}
		c, _ := op.NewCall(tg, sh, nil)
		ts, in := tensors(c, 2, true)
		if err := r.Run(context.Background(), lo, Sizes(sh), ts); err != nil {
			t.Fatalf("%v: %v", sh, err)
		}
		want := op.Reference(c, in)
		if string(want["q"].Data) != string(ts["q"].Data) {
			t.Errorf("%v: q differs from the reference", sh)
		}
	}
	c, _ := op.NewCall(tg, ops.Shape{"M": 3, "K": 1000}, nil)
	ts, _ := tensors(c, 2, false)
	err = r.Run(context.Background(), lo, Sizes{"M": 3, "K": 1000}, ts)
	for _, w := range []string{"none of its 2 exports for sm_90 runs K=1000,M=3", "export 1 (at K=64,M=16)", "size M=3: this build is compiled for multiples of 16", "export 2 (at K=201,M=7)", "256 >= K fails"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("a shape no export holds: %v; want %q", err, w)
		}
	}
}

// An export that names its tensors otherwise than this fp8gen's op, or
// whose source this fp8gen would not write, is refused, never run.
func TestExportSkew(t *testing.T) {
	tg, _ := target.Lookup("sm_90")
	op, _ := ops.Lookup("rowwise_cast")
	sh := ops.Shape{"M": 7, "K": 33}
	c, _ := op.NewCall(tg, sh, nil)
	for _, cs := range []struct {
		name string
		edit func(dir string, m map[string]any)
		want string
	}{
		{"renamed tensor", func(dir string, m map[string]any) {
			m["tensors"].([]any)[2].(map[string]any)["name"] = "scale_inv"
			for _, p := range m["kernels"].([]any)[0].(map[string]any)["params"].([]any) {
				if p := p.(map[string]any); p["name"] == "inv_scale" {
					p["name"] = "scale_inv"
				}
			}
		}, "does not match this fp8gen's op (tensor 2 is output f32 scale_inv"},
		{"edited source", func(dir string, m map[string]any) {
			src := filepath.Join(dir, "rowwise_cast.cu")
			data, _ := os.ReadFile(src)
			data = append(data, []byte("// edited\n")...)
			os.WriteFile(src, data, 0o644)
			m["source"].(map[string]any)["sha256"] = export.Hash(data)
		}, "the export's source is not what this fp8gen writes"},
	} {
		dir := t.TempDir()
		exportTo(t, dir, "rowwise_cast", sh, nil, "sm_90")
		mf := filepath.Join(dir, "sm_90", export.ManifestFile)
		var m map[string]any
		js, _ := os.ReadFile(mf)
		json.Unmarshal(js, &m)
		cs.edit(filepath.Join(dir, "sm_90"), m)
		js, _ = json.Marshal(m)
		os.WriteFile(mf, js, 0o644)
		lo, err := Load(os.DirFS(dir), ".")
		if err != nil {
			t.Fatal(err)
		}
		ts, _ := tensors(c, 1, false)
		if n := cs.name; n == "renamed tensor" {
			ts["scale_inv"] = ts["inv_scale"]
			delete(ts, "inv_scale")
		}
		r, _ := OnCPU("sm_90")
		err = r.Run(context.Background(), lo, Sizes(sh), ts)
		if err == nil || !strings.Contains(err.Error(), cs.want) {
			t.Errorf("%s: %v; want %q", cs.name, err, cs.want)
		}
	}
}

// A 32-bit export run at a shape whose tiles reach past 2^31 (the
// padding rows of the last tile times a long row) is refused, though its
// elements are within the manifest's bound.
func TestExportIndexReach(t *testing.T) {
	dir := t.TempDir()
	exportTo(t, dir, "grouped_colwise_cast", ops.Shape{"T": 7, "K": 33, "E": 3}, nil, "sm_90")
	lo, err := Load(os.DirFS(dir), ".")
	if err != nil {
		t.Fatal(err)
	}
	r, _ := OnCPU("sm_90")
	sh := Sizes{"T": 71580, "K": 30000, "E": 3}
	if err := lo.Manifests("sm_90")[0].Check(map[string]int64{"T": 71580, "K": 30000, "E": 3}); err != nil {
		t.Fatalf("the manifest itself should admit the shape: %v", err)
	}
	err = r.Run(context.Background(), lo, sh, Tensors{})
	if err == nil || !strings.Contains(err.Error(), "tiles reach past 2^31 elements") {
		t.Errorf("%v: %v", sh, err)
	}
}
