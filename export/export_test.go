package export

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/fp8gen/fp8gen/ops"
	"github.com/fp8gen/fp8gen/target"
)

func schema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	s, err := c.Compile(filepath.Join("..", "docs", "manifest.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func bundle(t testing.TB, op, tgt string, sh ops.Shape, o ops.Options) *Bundle {
	t.Helper()
	x, err := ops.Lookup(op)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := target.Lookup(tgt)
	if err != nil {
		t.Fatal(err)
	}
	if sh == nil {
		sh = x.Example
	}
	p, err := x.NewPlan(tg, sh, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func validate(s *jsonschema.Schema, js []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		return err
	}
	return s.Validate(v)
}

// Every op, on every target, with every option set the tests run: the
// manifest meets the schema, reads back equal, and admits its own shape.
func TestEveryOpExports(t *testing.T) {
	s := schema(t)
	n := 0
	for _, name := range ops.Names() {
		op, _ := ops.Lookup(name)
		for _, tg := range target.Names() {
			if t, _ := target.Lookup(tg); op.RunsOn(t) != nil {
				continue // refused: ops.TestOCPOnly
			}
			for _, o := range op.OptionSets() {
				b := bundle(t, name, tg, nil, o)
				m := b.Manifest
				js, err := m.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				if err := validate(s, js); err != nil {
					t.Errorf("%s %s %v: the manifest breaks the schema: %v\n%s", name, tg, o, err, js)
				}
				back, err := Parse(js)
				if err != nil {
					t.Fatalf("%s %s %v: %v", name, tg, o, err)
				}
				if diff := cmp.Diff(m, back, cmp.Comparer(func(a, b interface{ String() string }) bool { return a.String() == b.String() })); diff != "" {
					t.Errorf("%s %s %v: read back (-wrote +read):\n%s", name, tg, o, diff)
				}
				if err := m.Check(Sizes64(m.Shape)); err != nil {
					t.Errorf("%s %s %v: refuses its own shape: %v", name, tg, o, err)
				}
				for _, k := range m.Kernels {
					if !strings.Contains(b.Source, " "+k.Symbol+"(") {
						t.Errorf("%s %s: the source has no entry %s", name, tg, k.Symbol)
					}
				}
				n++
			}
		}
	}
	t.Logf("%d manifests", n)
}

// The schema is not vacuous: it refuses manifests broken in each way a
// loader would trip on.
func TestSchemaRefuses(t *testing.T) {
	s := schema(t)
	js, err := bundle(t, "tensorwise_cast", "gfx942", nil, nil).Manifest.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(m map[string]any){
		"version 2":           func(m map[string]any) { m["fp8gen_manifest"] = 2 },
		"no kernels":          func(m map[string]any) { m["kernels"] = []any{} },
		"unknown field":       func(m map[string]any) { m["extra"] = 1 },
		"bad role":            func(m map[string]any) { tensor(m, 0)["role"] = "inout" },
		"scratch, no init":    func(m map[string]any) { delete(scratchOf(m), "init") },
		"input with init":     func(m map[string]any) { tensor(m, 0)["init"] = 0 },
		"bad dtype":           func(m map[string]any) { tensor(m, 0)["dtype"] = "f16" },
		"size of f32":         func(m map[string]any) { param(m, -1)["dtype"] = "f32" },
		"grid of two":         func(m map[string]any) { kernel(m)["grid"] = []any{"1", "1"} },
		"symbol without hash": func(m map[string]any) { kernel(m)["symbol"] = "tensorwise_amax" },
		"path in a file":      func(m map[string]any) { m["source"].(map[string]any)["file"] = "../x.hip" },
		"short sha":           func(m map[string]any) { m["source"].(map[string]any)["sha256"] = "abc" },
	} {
		var m map[string]any
		if err := json.Unmarshal(js, &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		bad, _ := json.Marshal(m)
		if validate(s, bad) == nil {
			t.Errorf("%s: the schema accepts it", name)
		}
	}
}

func tensor(m map[string]any, i int) map[string]any { return m["tensors"].([]any)[i].(map[string]any) }
func scratchOf(m map[string]any) map[string]any {
	for _, x := range m["tensors"].([]any) {
		if x.(map[string]any)["role"] == "scratch" {
			return x.(map[string]any)
		}
	}
	panic("BUG: no scratch tensor")
}
func kernel(m map[string]any) map[string]any { return m["kernels"].([]any)[0].(map[string]any) }
func param(m map[string]any, i int) map[string]any {
	ps := kernel(m)["params"].([]any)
	if i < 0 {
		i += len(ps)
	}
	return ps[i].(map[string]any)
}

// dependent_launch: on every kernel but the first of an sm_90 plan, and
// refused on a first kernel or off NVIDIA.
func TestDependentLaunch(t *testing.T) {
	for _, tg := range []string{"sm_90", "gfx942"} {
		m := bundle(t, "tensorwise_cast", tg, nil, nil).Manifest
		if len(m.Kernels) < 2 {
			t.Fatalf("tensorwise_cast on %s: %d kernels", tg, len(m.Kernels))
		}
		for i, k := range m.Kernels {
			if want := i > 0 && tg == "sm_90"; k.DependentLaunch != want {
				t.Errorf("%s kernel %d (%s): dependent_launch %v, want %v", tg, i, k.Symbol, k.DependentLaunch, want)
			}
		}
		if tg == "gfx942" {
			m.Kernels[1].DependentLaunch = true
			if err := m.Validate(); err == nil || !strings.Contains(err.Error(), "off NVIDIA") {
				t.Errorf("dependent_launch on gfx942: %v", err)
			}
		}
	}
}

func TestParseRefuses(t *testing.T) {
	js, err := bundle(t, "rowwise_cast", "sm_90", nil, nil).Manifest.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ from, to, want string }{
		{`"fp8gen_manifest": 1`, `"fp8gen_manifest": 7`, "format version 7; this fp8gen reads version 1"},
		{`"fp8gen_manifest": 1,`, ``, "not an fp8gen manifest"},
		{`"op":`, `"opp": 1, "op":`, `unknown field "opp"`},
		{`"kind": "size"`, `"kind": "scalar"`, "is neither a tensor nor a size"},
		{`"index_bits": 32`, `"index_bits": 16`, "index_bits 16"},
		{`"expr": "`, `"expr": "WARPS + `, "reads WARPS, which is not a size"},
		{`"dtype": "bf16"`, `"dtype": "f16"`, `dtype "f16": want one of i32, i64, f32, bf16, e4m3fn, e4m3fnuz, e5m2, e5m2fnuz, e8m0`},
		{`"name": "K",`, `"name": "M",`, "size M given twice"},
		{`"block": [
        64,`, `"block": [
        0,`, "want positive extents"},
		{`"dynamic_lds_bytes": 0,`, `"dynamic_lds_bytes": 0, "dependent_launch": true,`, "dependent_launch on the first kernel"},
	} {
		bad := strings.Replace(string(js), c.from, c.to, 1)
		if bad == string(js) {
			t.Fatalf("%q is not in the manifest", c.from)
		}
		_, err := Parse([]byte(bad))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s → %s: error %v; want %q", c.from, c.to, err, c.want)
		}
	}
}

// A manifest may name an E8M0 tensor (OCP MX's scale bytes): one byte an
// element, as the dtype table says.
func TestParseE8M0(t *testing.T) {
	js, err := bundle(t, "rowwise_cast", "sm_90", nil, nil).Manifest.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(js), `"dtype": "f32"`, `"dtype": "e8m0"`)
	m, err := Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(m.Tensors, func(t Tensor) bool { return t.Name == "inv_scale" })
	if i < 0 || m.Tensors[i].DType != "e8m0" {
		t.Fatalf("inv_scale not e8m0 in %v", m.Tensors)
	}
	if n, ok := ElemBytes("e8m0"); !ok || n != 1 {
		t.Errorf("ElemBytes(e8m0) = %d, %v; want 1", n, ok)
	}
}

// A shape outside the class is refused with the size or bound named.
func TestCheck(t *testing.T) {
	m := bundle(t, "rowwise_cast", "sm_90", nil, nil).Manifest // 4096×4096: multiples of 16, one pass, 32-bit
	for _, c := range []struct {
		sh   map[string]int64
		want string
	}{
		{map[string]int64{"M": 16, "K": 32}, ""},
		{map[string]int64{"M": 4096 * 8, "K": 4096}, ""},
		{map[string]int64{"M": 16, "K": 17}, "size K=17: this build is compiled for multiples of 16"},
		{map[string]int64{"M": 16, "K": 8192}, "4096 >= K fails: a one-pass schedule"},
		{map[string]int64{"M": 0, "K": 16}, "size M=0 must be positive"},
		{map[string]int64{"M": 16}, "size K missing"},
		{map[string]int64{"M": 16, "K": 16, "N": 1}, "unknown size N"},
		{map[string]int64{"M": 1 << 20, "K": 4096}, "tensor x has 4294967296 elements, more than this build's 32-bit indexing reaches"},
	} {
		err := m.Check(c.sh)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%v: %v; want %q", c.sh, err, c.want)
		}
	}
}

// Write puts every file in place and Read checks each hash; a failed
// write leaves nothing.
func TestWriteRead(t *testing.T) {
	b := bundle(t, "colwise_cast", "gfx942", nil, nil)
	b.Object = []byte("not really a code object")
	b.Manifest.CodeObject = &CodeObject{File: File{File: "colwise_cast.gfx942.hsaco", SHA256: Hash(b.Object)}, Arch: "gfx942", Compiler: "test"}
	dir := filepath.Join(t.TempDir(), "x")
	if err := b.Write(dir); err != nil {
		t.Fatal(err)
	}
	back, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if back.Source != b.Source || !bytes.Equal(back.Object, b.Object) {
		t.Error("read back other files than written")
	}
	if err := os.WriteFile(filepath.Join(dir, "colwise_cast.hip"), []byte("// changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), "colwise_cast.hip: SHA-256") {
		t.Errorf("a changed source: %v", err)
	}
	// manifest.json is a folder: nothing is written.
	dir2 := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir2, ManifestFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(dir2); err == nil {
		t.Fatal("Write over a folder named manifest.json: no error")
	}
	ents, _ := os.ReadDir(dir2)
	if len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("a failed Write left %v", names)
	}
	tg, _ := target.Lookup("sm_90")
	if err := b.CheckDevice(tg); err == nil || !strings.Contains(err.Error(), "exported for gfx942; this device is sm_90") {
		t.Errorf("a gfx942 export on sm_90: %v", err)
	}
	b.Manifest.CodeObject.Arch = "gfx940"
	tg, _ = target.Lookup("gfx942")
	if err := b.CheckDevice(tg); err == nil || !strings.Contains(err.Error(), "compiled for gfx940; this device is gfx942") {
		t.Errorf("a gfx940 code object on gfx942: %v", err)
	}
}

// Exporting again into a folder leaves no file of the earlier export the
// new manifest does not name.
func TestWriteReplacesExport(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "x")
	b := bundle(t, "rowwise_cast", "gfx942", nil, nil)
	b.Object = []byte("object")
	b.Manifest.CodeObject = &CodeObject{File: File{File: "rowwise_cast.gfx940.hsaco", SHA256: Hash(b.Object)}, Arch: "gfx940", Compiler: "test"}
	if err := b.Write(dir); err != nil {
		t.Fatal(err)
	}
	b2 := bundle(t, "rowwise_cast", "gfx942", nil, nil)
	if err := b2.Write(dir); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if len(names) != 2 {
		t.Errorf("after exporting without a code object: %v; want the manifest and the source", names)
	}
	if _, err := Read(dir); err != nil {
		t.Error(err)
	}
}
