// Package tune keeps measured schedules: a tuning cache, a readable JSON
// file a user can commit and ship, mapping (op, options, target, shape
// class, compiler) to the schedule that ran fastest there. fp8gen tune
// fills it on a GPU; run, bench and the launchers look their schedule up
// in it before falling back to the op's preferred candidate.
//
// A shape class groups the shapes one schedule suits: each size rounded
// up to a power of two, with the power of two up to 32 that divides it
// (16 is the widest vector the kernels are compiled for; 32 is the sector
// that the rows of a transposed fp8 output start in, which a tall tile
// straddles less often). An entry written under the earlier definition
// (divisors up to 16) is given its class under this one when a file is
// read, from the shape it was tuned at. A looked-up schedule
// is still held to the op's constraints at the actual shape; one that
// fails them is not used.
//
// The cache is never trusted blindly: a file that is not valid JSON, of
// another version, or entries naming unknown ops or knobs are reported in
// one line each and ignored.
package tune

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/fp8gen/fp8gen/internal/atomicfile"
	"github.com/fp8gen/fp8gen/ops"
	"github.com/fp8gen/fp8gen/schedule"
)

// Version is the cache file's format version.
const Version = 1

// Key is what a tuned schedule holds for.
type Key struct {
	Op       string `json:"op"`
	Options  string `json:"options"` // ops.Options.String(), defaults filled in
	Target   string `json:"target"`
	Class    string `json:"class"`    // Class(op, shape)
	Compiler string `json:"compiler"` // runtime.Compiler.Identity
}

// Entry is one tuned schedule with what its tuning measured.
type Entry struct {
	Key
	Schedule map[string]int `json:"schedule"`
	TimeUS   float64        `json:"time_us"` // the winner's median
	Shape    string         `json:"shape"`   // the shape it was tuned at
	Timed    int            `json:"timed"`   // candidates timed
	GPU      string         `json:"gpu"`
	Date     string         `json:"date"`
}

// Cache is a tuning cache in memory.
type Cache struct {
	entries map[Key]Entry
	// kept are the entries of the file this fp8gen cannot use (an op it
	// does not know, say), written back unchanged; broken says why the
	// file could not be read as a whole, which Save then refuses to
	// overwrite.
	kept   []json.RawMessage
	broken string
}

// Class is a shape's class: each size rounded up to a power of two, and
// its power-of-two divisor up to 32, in the op's size order
// ("M=8192/32,K=8192/32").
func Class(op *ops.Op, sh ops.Shape) string { return classUpTo(op, sh, 32) }

// classUpTo is Class with divisors up to most.
func classUpTo(op *ops.Op, sh ops.Shape, most int) string {
	var parts []string
	for _, n := range op.Sizes {
		v := sh[n]
		p := 1
		if v > 1 {
			p = 1 << bits.Len(uint(v-1))
		}
		d := 1
		for d < most && v%(d*2) == 0 {
			d *= 2
		}
		parts = append(parts, fmt.Sprintf("%s=%d/%d", n, p, d))
	}
	return strings.Join(parts, ",")
}

// classOf is e's class: the one it names, or where that is its shape's
// class under the first definition (divisors up to 16, before 2026-12-03),
// its shape's class now.
func classOf(e Entry) string {
	op, err := ops.Lookup(e.Op)
	if err != nil {
		return e.Class
	}
	sh, ok := parseShapeText(op, e.Shape)
	if !ok || e.Class != classUpTo(op, sh, 16) {
		return e.Class
	}
	return Class(op, sh)
}

// New is an empty cache.
func New() *Cache { return &Cache{entries: map[Key]Entry{}} }

// Load reads path; a missing file is an empty cache. What cannot be
// trusted is left out, each with a one-line warning.
func Load(path string) (*Cache, []string) {
	c := New()
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	refuse := func(why string) (*Cache, []string) {
		c.broken = why
		return c, []string{fmt.Sprintf("tuning cache %s: %s; ignored", path, why)}
	}
	if err != nil {
		return refuse(err.Error())
	}
	return parse(path, data)
}

// parse reads a cache file's contents; name is for messages.
func parse(name string, data []byte) (*Cache, []string) {
	c := New()
	refuse := func(why string) (*Cache, []string) {
		c.broken = why
		return c, []string{fmt.Sprintf("tuning cache %s: %s; ignored", name, why)}
	}
	// Most files hold only entries this fp8gen can use: decoded whole at
	// once they cost a cache hit 0.6 of the long way below (each entry
	// decoded from its raw bytes scans them twice more), which keeps the
	// entries it cannot use as they are.
	var whole struct {
		Version int     `json:"fp8gen_tune"`
		Entries []Entry `json:"entries"`
	}
	if json.Unmarshal(data, &whole) == nil && whole.Version == Version && !slices.ContainsFunc(whole.Entries, func(e Entry) bool { return check(e) != "" }) {
		for _, e := range whole.Entries {
			e.Class = classOf(e)
			c.entries[e.Key] = e
		}
		return c, nil
	}
	var f struct {
		Version int               `json:"fp8gen_tune"`
		Entries []json.RawMessage `json:"entries"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return refuse(fmt.Sprintf("not valid JSON (%v)", err))
	}
	if f.Version != Version {
		return refuse(fmt.Sprintf("format version %d, want %d", f.Version, Version))
	}
	var warn []string
	for i, raw := range f.Entries {
		var e Entry
		why := ""
		if err := json.Unmarshal(raw, &e); err != nil {
			why = err.Error()
		} else {
			why = check(e)
		}
		if why != "" {
			warn = append(warn, fmt.Sprintf("tuning cache %s: entry %d (%s %s on %s): %s; not used, kept", name, i, e.Op, e.Class, e.Target, why))
			c.kept = append(c.kept, raw)
			continue
		}
		e.Class = classOf(e)
		c.entries[e.Key] = e
	}
	return c, warn
}

// check says why an entry cannot be used anywhere, or "".
func check(e Entry) string {
	op, err := ops.Lookup(e.Op)
	if err != nil {
		return "no such op"
	}
	if e.Compiler == "" || e.Target == "" || e.Class == "" {
		return "no compiler, target or class"
	}
	for k := range e.Schedule {
		if !slices.ContainsFunc(op.Knobs, func(n schedule.Knob) bool { return n.Name == k }) {
			return "unknown knob " + k
		}
	}
	if len(e.Schedule) != len(op.Knobs) {
		return "not every knob given"
	}
	return ""
}

// Lookup is the tuned schedule for k, if any.
func (c *Cache) Lookup(k Key) (Entry, bool) {
	e, ok := c.entries[k]
	return e, ok
}

// Put records an entry, replacing one of the same key.
func (c *Cache) Put(e Entry) { c.entries[e.Key] = e }

// Len is the number of entries.
func (c *Cache) Len() int { return len(c.entries) }

// Save writes the cache to path atomically, entries sorted by key, with
// the entries it kept but could not use after them. It refuses to
// overwrite a file Load could not read as a whole.
func (c *Cache) Save(path string) error {
	if c.broken != "" {
		return fmt.Errorf("tuning cache %s: %s; not overwriting it (move it aside, or name another with --cache)", path, c.broken)
	}
	var f struct {
		Version int               `json:"fp8gen_tune"`
		Entries []json.RawMessage `json:"entries"`
	}
	f.Version = Version
	for _, k := range slices.SortedFunc(maps.Keys(c.entries), func(a, b Key) int {
		return strings.Compare(keyString(a), keyString(b))
	}) {
		raw, err := json.Marshal(c.entries[k])
		if err != nil {
			return err
		}
		f.Entries = append(f.Entries, raw)
	}
	f.Entries = append(f.Entries, c.kept...)
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(data, '\n'))
}

// Update applies put to the cache at path under an exclusive lock, loading
// it afresh and saving it after, so that two tunes at once both land.
func Update(path string, put func(*Cache)) (warnings []string, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return nil, fmt.Errorf("tuning cache %s: lock: %w", path, err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	c, warnings := Load(path)
	put(c)
	return warnings, c.Save(path)
}

func keyString(k Key) string {
	return strings.Join([]string{k.Op, k.Target, k.Options, k.Class, k.Compiler}, "\x00")
}

// DefaultPath is where the cache lives: $FP8GEN_TUNE_CACHE, or
// fp8gen/tune.json in the user's cache folder.
func DefaultPath() (string, error) {
	if p := os.Getenv("FP8GEN_TUNE_CACHE"); p != "" {
		return p, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("tune: no cache folder (set $FP8GEN_TUNE_CACHE): %w", err)
	}
	return d + string(os.PathSeparator) + "fp8gen" + string(os.PathSeparator) + "tune.json", nil
}

// Params is an entry's schedule.
func (e Entry) Params() schedule.Params { return schedule.Params(maps.Clone(e.Schedule)) }

// ShapeText writes a shape in the op's size order, as Class does.
func ShapeText(op *ops.Op, sh ops.Shape) string {
	var parts []string
	for _, n := range op.Sizes {
		parts = append(parts, n+"="+strconv.Itoa(sh[n]))
	}
	return strings.Join(parts, ",")
}

// parseShapeText reads ShapeText's form: every size of op, each once and
// positive; ok is false for anything else.
func parseShapeText(op *ops.Op, s string) (sh ops.Shape, ok bool) {
	sh = ops.Shape{}
	for _, kv := range strings.Split(s, ",") {
		n, v, ok := strings.Cut(kv, "=")
		x, err := strconv.Atoi(v)
		if !ok || err != nil || x < 1 || !slices.Contains(op.Sizes, n) {
			return nil, false
		}
		sh[n] = x
	}
	return sh, len(sh) == len(op.Sizes)
}

//go:embed shipped
var shippedFS embed.FS

// Shipped is the tuning compiled into fp8gen (tune/shipped/*.json), and
// a warning for each file or entry that cannot be used.
func Shipped() (*Cache, []string) {
	c := New()
	var warn []string
	ents, _ := shippedFS.ReadDir("shipped")
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		data, err := shippedFS.ReadFile("shipped/" + e.Name())
		if err != nil {
			warn = append(warn, err.Error())
			continue
		}
		one, w := parse("shipped "+e.Name(), data)
		warn = append(warn, w...)
		for k, v := range one.entries {
			c.entries[k] = v
		}
	}
	return c, warn
}

// LookupAnyCompiler is an entry for k tuned with any compiler (the
// shipped tuning's lookup), the first in key order.
func (c *Cache) LookupAnyCompiler(k Key) (Entry, bool) {
	for _, key := range slices.SortedFunc(maps.Keys(c.entries), func(a, b Key) int {
		return strings.Compare(keyString(a), keyString(b))
	}) {
		if key.Op == k.Op && key.Options == k.Options && key.Target == k.Target && key.Class == k.Class {
			return c.entries[key], true
		}
	}
	return Entry{}, false
}
