package tune

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/fp8gen/fp8gen/ops"
)

func TestClass(t *testing.T) {
	rw, _ := ops.Lookup("rowwise_cast")
	for _, c := range []struct {
		sh   ops.Shape
		want string
	}{
		{ops.Shape{"M": 8192, "K": 8192}, "M=8192/32,K=8192/32"},
		{ops.Shape{"M": 8176, "K": 8192}, "M=8192/16,K=8192/32"},
		{ops.Shape{"M": 5000, "K": 7168}, "M=8192/8,K=8192/32"},
		{ops.Shape{"M": 1, "K": 33}, "M=1/1,K=64/1"},
	} {
		if got := Class(rw, c.sh); got != c.want {
			t.Errorf("Class(%v) = %s; want %s", c.sh, got, c.want)
		}
	}
}

func entry(op string, sched map[string]int) Entry {
	return Entry{Key: Key{Op: op, Options: "fp8=e4m3,in=bf16,pow2=false", Target: "sm_90", Class: "M=8192/32,K=8192/32", Compiler: "nvcc Cuda compilation tools, release 12.8"},
		Schedule: sched, TimeUS: 60.9, Shape: "M=8192,K=8192", Timed: 8, GPU: "NVIDIA H200", Date: "2026-12-01"}
}

func TestSaveLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tune.json")
	c, warn := Load(path)
	if c.Len() != 0 || len(warn) != 0 {
		t.Fatalf("a missing file: %d entries, warnings %v", c.Len(), warn)
	}
	e := entry("rowwise_cast", map[string]int{"BLOCK_K": 8192, "LOOP": 0, "PER_CU": 0, "PREFETCH": 0, "ROWS": 1, "WARPS": 8})
	c.Put(e)
	c.Put(entry("colwise_cast", map[string]int{"BLOCK_K": 64, "BLOCK_M": 128, "KEEP": 8, "PREFETCH": 0, "SPLIT": 32, "WARPS": 8}))
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	back, warn := Load(path)
	if len(warn) != 0 || back.Len() != 2 {
		t.Fatalf("read back %d entries, warnings %v", back.Len(), warn)
	}
	got, ok := back.Lookup(e.Key)
	if !ok || got.Schedule["WARPS"] != 8 || got.TimeUS != 60.9 {
		t.Errorf("lookup: %+v, %v", got, ok)
	}
	other := e.Key
	other.Compiler = "nvcc Cuda compilation tools, release 13.0"
	if _, ok := back.Lookup(other); ok {
		t.Error("an entry tuned with another compiler was found")
	}
	// Saving is deterministic, sorted by key.
	first, _ := os.ReadFile(path)
	back.Save(path)
	second, _ := os.ReadFile(path)
	if string(first) != string(second) || strings.Index(string(first), "colwise_cast") > strings.Index(string(first), "rowwise_cast") {
		t.Errorf("the file is not sorted or not stable:\n%s", first)
	}
}

// A corrupt or foreign file is reported in one line and ignored; a bad
// entry is dropped and the rest kept.
func TestLoadDistrusts(t *testing.T) {
	dir := t.TempDir()
	good := `{"op": "rowwise_cast", "options": "x", "target": "sm_90", "class": "c", "compiler": "nvcc 12", "schedule": {"BLOCK_K": 1, "LOOP": 0, "PER_CU": 0, "PREFETCH": 0, "ROWS": 1, "WARPS": 1}}`
	for _, c := range []struct {
		name, text, want string
		n                int
	}{
		{"bad json", `{"fp8gen_tune": 1, "entries": [`, "not valid JSON", 0},
		{"version", `{"fp8gen_tune": 2, "entries": []}`, "format version 2, want 1", 0},
		{"no version", `{"entries": []}`, "format version 0, want 1", 0},
		{"unknown op", `{"fp8gen_tune": 1, "entries": [` + good + `, {"op": "nosuch", "class": "c", "target": "t", "compiler": "c"}]}`, "entry 1 (nosuch c on t): no such op", 1},
		{"unknown knob", `{"fp8gen_tune": 1, "entries": [{"op": "rowwise_cast", "options": "x", "target": "sm_90", "class": "c", "compiler": "nvcc", "schedule": {"BLOCK": 1}}, ` + good + `]}`, "unknown knob BLOCK", 1},
		{"knob missing", `{"fp8gen_tune": 1, "entries": [{"op": "rowwise_cast", "options": "x", "target": "sm_90", "class": "c", "compiler": "nvcc", "schedule": {"WARPS": 1}}]}`, "not every knob given", 0},
		{"no compiler", `{"fp8gen_tune": 1, "entries": [{"op": "rowwise_cast", "target": "sm_90", "class": "c", "schedule": {}}]}`, "no compiler, target or class", 0},
		// A field of the wrong type: decoding goes on past it, so the
		// one-pass read must not take the entry.
		{"wrong type", `{"fp8gen_tune": 1, "entries": [` + good + `, ` + strings.Replace(good, `"options": "x"`, `"options": "y", "timed": "many"`, 1) + `]}`, "entry 1 (rowwise_cast c on sm_90): json: cannot unmarshal", 1},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".json")
		os.WriteFile(path, []byte(c.text), 0o644)
		cache, warn := Load(path)
		if len(warn) != 1 || !strings.Contains(warn[0], c.want) || strings.Contains(warn[0], "\n") {
			t.Errorf("%s: warnings %q; want one line with %q", c.name, warn, c.want)
		}
		if cache.Len() != c.n {
			t.Errorf("%s: %d entries kept; want %d", c.name, cache.Len(), c.n)
		}
	}
}

// What Load could not use survives a Save; a file it could not read at
// all is never overwritten; two updates at once both land.
func TestSaveKeepsWhatItCannotUse(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tune.json")
	foreign := `{"op": "op_of_a_newer_fp8gen", "class": "c", "target": "t", "compiler": "c", "schedule": {"X": 1}}`
	os.WriteFile(path, []byte(`{"fp8gen_tune": 1, "entries": [`+foreign+`]}`), 0o644)
	if _, err := Update(path, func(c *Cache) {
		c.Put(entry("rowwise_cast", map[string]int{"BLOCK_K": 8192, "LOOP": 0, "PER_CU": 0, "PREFETCH": 0, "ROWS": 1, "WARPS": 8}))
	}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), "op_of_a_newer_fp8gen") || !strings.Contains(string(data), `"rowwise_cast"`) {
		t.Errorf("after an update, the file lost an entry:\n%s", data)
	}
	for _, bad := range []string{`{"fp8gen_tune": 1, "entries": [`, `{"fp8gen_tune": 2, "entries": []}`} {
		os.WriteFile(path, []byte(bad), 0o644)
		_, err := Update(path, func(c *Cache) {
			c.Put(entry("colwise_cast", map[string]int{"BLOCK_K": 64, "BLOCK_M": 128, "KEEP": 8, "PREFETCH": 0, "SPLIT": 32, "WARPS": 8}))
		})
		if err == nil || !strings.Contains(err.Error(), "not overwriting it") {
			t.Errorf("an update over %q: %v", bad, err)
		}
		if data, _ := os.ReadFile(path); string(data) != bad {
			t.Errorf("the unreadable file was changed to:\n%s", data)
		}
	}
	os.Remove(path)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if _, err := Update(path, func(c *Cache) {
				e := entry("rowwise_cast", map[string]int{"BLOCK_K": 8192, "LOOP": 0, "PER_CU": 0, "PREFETCH": 0, "ROWS": 1, "WARPS": 8})
				e.Class = fmt.Sprintf("class%d", i)
				c.Put(e)
			}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if c, warn := Load(path); c.Len() != 8 || len(warn) != 0 {
		t.Errorf("8 concurrent updates left %d entries (warnings %v)", c.Len(), warn)
	}
}

// The shipped tuning parses without a warning, and its lookup takes an
// entry of any compiler version.
func TestShipped(t *testing.T) {
	c, warn := Shipped()
	if len(warn) != 0 {
		t.Errorf("the shipped tuning warns: %v", warn)
	}
	t.Logf("%d shipped entries", c.Len())
	e := entry("rowwise_cast", map[string]int{"BLOCK_K": 8192, "LOOP": 0, "PER_CU": 0, "PREFETCH": 0, "ROWS": 1, "WARPS": 8})
	own := New()
	own.Put(e)
	k := e.Key
	k.Compiler = "nvcc Cuda compilation tools, release 99.0"
	if _, ok := own.Lookup(k); ok {
		t.Error("Lookup matched another compiler")
	}
	if got, ok := own.LookupAnyCompiler(k); !ok || got.Schedule["WARPS"] != 8 {
		t.Errorf("LookupAnyCompiler: %+v, %v", got, ok)
	}
	k.Class = "M=1/1,K=1/1"
	if _, ok := own.LookupAnyCompiler(k); ok {
		t.Error("LookupAnyCompiler matched another class")
	}
}

// An entry written when classes held divisors up to 16 is found under its
// shape's class now; one whose class is not its shape's old class keeps
// the class it names.
func TestOldClassesMigrate(t *testing.T) {
	old := entry("rowwise_cast", map[string]int{"BLOCK_K": 8192, "LOOP": 0, "PER_CU": 0, "PREFETCH": 0, "ROWS": 1, "WARPS": 8})
	old.Class = "M=8192/16,K=8192/16"
	other := old
	other.Class = "M=8192/16,K=8192/8"
	other.Compiler = "another"
	// A third entry of an op this fp8gen does not know sends the file down
	// the entry-by-entry path, which must migrate too.
	unknown := old
	unknown.Op = "no_such_op"
	for _, third := range []*Entry{nil, &unknown} {
		path := filepath.Join(t.TempDir(), "tune.json")
		c := New()
		c.Put(old)
		c.Put(other)
		if third != nil {
			c.Put(*third)
		}
		if err := c.Save(path); err != nil {
			t.Fatal(err)
		}
		got, warn := Load(path)
		if len(warn) != 0 && third == nil || len(warn) != 1 && third != nil {
			t.Fatalf("warnings %v", warn)
		}
		k := old.Key
		k.Class = "M=8192/32,K=8192/32"
		if e, ok := got.Lookup(k); !ok || e.Schedule["WARPS"] != 8 {
			t.Errorf("the old entry under %s (third entry %v): %+v, %v", k.Class, third != nil, e, ok)
		}
		if _, ok := got.Lookup(other.Key); !ok {
			t.Errorf("the entry of class %s was not kept under it (third entry %v)", other.Class, third != nil)
		}
	}
}

// Every shipped entry is filed under its shape's class: a class definition
// that moves on must re-key the shipped files with it.
func TestShippedClasses(t *testing.T) {
	c, _ := Shipped()
	if c.Len() == 0 {
		t.Fatal("no shipped entries")
	}
	for k, e := range c.entries {
		op, err := ops.Lookup(e.Op)
		if err != nil {
			t.Fatal(err)
		}
		sh, ok := parseShapeText(op, e.Shape)
		if !ok {
			t.Fatalf("%s: shape %q", e.Op, e.Shape)
		}
		if want := Class(op, sh); k.Class != want {
			t.Errorf("%s at %s is filed under %s, its shape's class is %s", k.Op, e.Shape, k.Class, want)
		}
	}
}

// Every shipped entry names all of its op's options, defaults filled in,
// as a lookup's key does: an option added to an op must re-key the shipped
// files (with its default, where the entry's kernel is the one it tuned),
// or their schedules are silently no longer found.
func TestShippedOptions(t *testing.T) {
	c, _ := Shipped()
	for k, e := range c.entries {
		op, err := ops.Lookup(e.Op)
		if err != nil {
			t.Fatal(err)
		}
		given := ops.Options{}
		for _, kv := range strings.Split(k.Options, ",") {
			if n, v, ok := strings.Cut(kv, "="); ok {
				given[n] = v
			}
		}
		full, err := op.CheckOptions(given)
		if err != nil {
			t.Errorf("%s at %s: %v", k.Op, e.Shape, err)
			continue
		}
		if want := full.String(); k.Options != want {
			t.Errorf("%s at %s is filed under options %q; a lookup's key is %q", k.Op, e.Shape, k.Options, want)
		}
	}
}
