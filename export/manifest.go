// Package export writes an op, made concrete for a target, options and a
// schedule, as files another program can launch without fp8gen: the HIP
// source of its kernels in one translation unit, the compiled code object
// where the target's compiler is present, and manifest.json, which says
// everything a launch needs — kernels in order with their entry symbols
// and parameters, tensors with roles, dtypes and shapes as expressions of
// the sizes, grids and blocks, dynamic LDS, scratch and its initial value,
// the FP8 format and the target — and the sizes at which the compiled
// code is valid. docs/manifest.md documents the format; Version numbers it.
//
// A manifest describes a class of shapes, not one shape: the kernels are
// compiled for sizes that are multiples of given powers of two, under the
// schedule's constraints, and for one index width. Check holds a shape to
// all three, so a loader refuses a shape the code cannot run before any
// launch.
package export

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/fp8gen/fp8gen/backend"
	"github.com/fp8gen/fp8gen/expr"
	"github.com/fp8gen/fp8gen/fp8"
	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/ops"
	"github.com/fp8gen/fp8gen/runtime"
	"github.com/fp8gen/fp8gen/schedule"
)

// Version is the manifest format's version. A reader refuses any other.
const Version = 1

// manifestDTypes are the dtype names a manifest may give a tensor: the
// stored kinds, an FP8 one by its format's name.
func manifestDTypes() []string {
	var out []string
	for _, k := range ir.StoredKinds() {
		if k == "fp8" {
			out = append(out, fp8.Names()...)
			continue
		}
		out = append(out, k)
	}
	return out
}

// ElemBytes is the size of an element of a dtype a manifest names, and
// whether it names one (the dtype table's: ir.DTypeNamed).
func ElemBytes(dtype string) (int, bool) {
	d, ok := ir.DTypeNamed(dtype)
	if !ok {
		return 0, false
	}
	return d.Bytes(), true
}

// Manifest is manifest.json.
type Manifest struct {
	Version  int               `json:"fp8gen_manifest"`
	Op       string            `json:"op"`
	Doc      string            `json:"doc"`
	Target   Target            `json:"target"`
	FP8      *Format           `json:"fp8"`
	Options  map[string]string `json:"options"`
	Schedule map[string]int    `json:"schedule"`
	// IndexBits is the kernels' index width: 32 or 64. With 32, no tensor
	// may have more than MaxElements elements.
	IndexBits   int            `json:"index_bits"`
	MaxElements int64          `json:"max_elements"`
	Shape       map[string]int `json:"shape"` // the shape it was exported at
	Sizes       []Size         `json:"sizes"`
	Constraints []Constraint   `json:"constraints"`
	Tensors     []Tensor       `json:"tensors"`
	Source      File           `json:"source"`
	// CompileFlags are what compiling the source needs besides choosing
	// the arch and the output (no fused multiply-adds, subnormals kept):
	// without them the code computes other bits.
	CompileFlags []string    `json:"compile_flags"`
	CodeObject   *CodeObject `json:"code_object"`
	Kernels      []Kernel    `json:"kernels"`
}

// Target is the hardware the code is for.
type Target struct {
	Name     string `json:"name"`   // gfx942, gfx950, sm_90
	Vendor   string `json:"vendor"` // amd or nvidia
	Product  string `json:"product"`
	WaveSize int    `json:"wave_size"`
}

// Format is the FP8 format of the fp8 tensors.
type Format struct {
	Name string  `json:"name"` // e4m3fn, e4m3fnuz, e5m2, e5m2fnuz
	Max  float32 `json:"max"`
}

// Size is one named size; every value must be a positive multiple of
// MultipleOf (the specialization the kernels were compiled for).
type Size struct {
	Name       string `json:"name"`
	MultipleOf int    `json:"multiple_of"`
}

// Constraint must hold (be nonzero) at every shape; Expr reads sizes only.
type Constraint struct {
	Expr expr.Expr `json:"expr"`
	Why  string    `json:"why"`
}

// Tensor is one tensor argument.
type Tensor struct {
	Name  string      `json:"name"`
	Role  string      `json:"role"`  // input, output or scratch
	DType string      `json:"dtype"` // f32, bf16, i32, i64, or the FP8 format's name
	Shape []expr.Expr `json:"shape"` // of the sizes; row-major, contiguous
	// Init is a scratch tensor's value before the first kernel, every
	// element; the loader allocates and fills it for each call.
	Init *float64 `json:"init,omitempty"`
	// Status, on a scratch tensor, makes it a status word: zero after the
	// run, or bad input the kernels found, read as Status says.
	Status string `json:"status,omitempty"`
	Doc    string `json:"doc"`
}

// File is a file beside the manifest, with its SHA-256 (hex).
type File struct {
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
}

// CodeObject is the compiled source: a cubin for NVIDIA, an hsaco for AMD.
// Arch is what it was compiled for; a loader refuses it on any other.
type CodeObject struct {
	File
	Arch     string `json:"arch"`
	Compiler string `json:"compiler"` // the compiler's version line
}

// Kernel is one launch, in order.
type Kernel struct {
	Name   string  `json:"name"`   // the op's kernel
	Symbol string  `json:"symbol"` // its entry point in the source and code object
	Params []Param `json:"params"`
	// Grid is the number of blocks along x, y, z: expressions of the sizes.
	Grid  [3]expr.Expr `json:"grid"`
	Block [3]int       `json:"block"`
	// DynamicLDSBytes is the dynamic shared memory to pass at launch (on
	// NVIDIA, above 48 KiB, after raising the function's maximum to it).
	DynamicLDSBytes int `json:"dynamic_lds_bytes"`
	// StaticLDSBytes is declared in the kernel; nothing to pass.
	StaticLDSBytes int `json:"static_lds_bytes"`
	// DependentLaunch: the kernel begins by waiting for the kernel before
	// it (griddepcontrol.wait), so it may be launched to overlap that one's
	// tail (CUDA's programmatic dependent launch: cuLaunchKernelEx with
	// CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION). A plain
	// launch is always correct.
	DependentLaunch bool `json:"dependent_launch,omitempty"`
}

// Param is one kernel parameter, in order: a tensor (a device pointer to
// its first element) or a size (an integer of DType, by value).
type Param struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"` // tensor or size
	DType string `json:"dtype,omitempty"`
}

// New describes a plan and writes its kernels into one translation unit,
// without a code object (see Compile). The plan's shape becomes the
// manifest's class: its sizes' divisors, its schedule's constraints, its
// index width.
func New(p *ops.Plan) (*Bundle, error) {
	op := p.Op
	m := &Manifest{
		Version: Version, Op: op.Name, Doc: op.Doc,
		Target:   Target{Name: p.Target.Name, Vendor: p.Target.Vendor.String(), Product: p.Target.Product, WaveSize: p.Target.WaveSize},
		Options:  maps.Clone(p.Options),
		Schedule: maps.Clone(map[string]int(p.Schedule)),
		Shape:    maps.Clone(map[string]int(p.Shape)),
	}
	if m.Options == nil {
		m.Options = map[string]string{}
	}
	m.Constraints = []Constraint{}
	if p.Format != nil {
		m.FP8 = &Format{Name: p.Format.Name, Max: p.Format.Max}
	}
	m.IndexBits, m.MaxElements = 32, ops.MaxI32Elems
	if p.Index == ir.I64 {
		m.IndexBits, m.MaxElements = 64, ops.MaxElems
	}
	div := ops.Divisors(p.Shape)
	for _, n := range op.Sizes {
		m.Sizes = append(m.Sizes, Size{Name: n, MultipleOf: div[n]})
	}
	// Knobs and target facts are fixed here: bind them, leaving sizes.
	fixed := schedule.Env(p.Target)
	for k, v := range p.Schedule {
		fixed[k] = int64(v)
	}
	for _, c := range append(p.Rules(), op.Constraints...) {
		b := c.Cond.Bind(fixed)
		if v, err := b.Eval(nil); err == nil && v != 0 {
			continue // holds at every shape
		}
		m.Constraints = append(m.Constraints, Constraint{Expr: b, Why: c.Why})
	}
	for _, a := range op.Tensors {
		if !a.Present(p.Options) {
			continue
		}
		t := Tensor{Name: a.Name, Role: a.Role.String(), DType: p.DType(a.Name).String(), Doc: a.Doc}
		for _, d := range a.Shape {
			t.Shape = append(t.Shape, d.Bind(fixed)) // a scratch's may read target facts
		}
		if a.Role == ops.Scratch {
			init := a.Init
			t.Init = &init
			if a.Status != nil {
				t.Status = a.Doc // op.check requires it
			}
		}
		m.Tensors = append(m.Tensors, t)
	}
	u, err := backend.Unit(p)
	if err != nil {
		return nil, err
	}
	for i, s := range p.Steps {
		if s.Func.Waits() {
			// Its grid must be clamped to what the device holds at once,
			// which a manifest cannot yet tell a loader.
			return nil, fmt.Errorf("export %s: kernel %s waits on other programs; such kernels are not exported", p.Op.Name, s.Func.Name)
		}
		ek := u.Kernels[i]
		k := Kernel{Name: s.Func.Name, Symbol: ek.Name, Block: [3]int{ek.Threads, 1, 1}, StaticLDSBytes: ek.LDSBytes,
			DependentLaunch: i > 0 && p.Target.PDL}
		if ek.Dynamic {
			k.DynamicLDSBytes, k.StaticLDSBytes = ek.LDSBytes, 0
		}
		for j, g := range s.Kernel.Grid {
			k.Grid[j] = g.Bind(fixed)
		}
		for _, prm := range s.Func.Params {
			if prm.Op == ir.OpSize {
				k.Params = append(k.Params, Param{Name: prm.ArgName(), Kind: "size", DType: prm.Type.DType.String()})
			} else {
				k.Params = append(k.Params, Param{Name: prm.ArgName(), Kind: "tensor"})
			}
		}
		m.Kernels = append(m.Kernels, k)
	}
	m.CompileFlags = runtime.NumericsFlags(p.Target)
	m.Source = File{File: op.Name + "." + map[string]string{"amd": "hip", "nvidia": "cu"}[m.Target.Vendor], SHA256: Hash([]byte(u.Source))}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("BUG: export %s: %w", op.Name, err)
	}
	return &Bundle{Manifest: m, Source: u.Source}, nil
}

// Hash is the hex SHA-256 the manifest records of its files.
func Hash(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Parse reads a manifest, refusing another version and anything that
// does not hold together.
func Parse(data []byte) (*Manifest, error) {
	var probe struct {
		Version *int `json:"fp8gen_manifest"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if probe.Version == nil {
		return nil, errors.New("manifest: no fp8gen_manifest version: not an fp8gen manifest")
	}
	if *probe.Version != Version {
		return nil, fmt.Errorf("manifest: format version %d; this fp8gen reads version %d", *probe.Version, Version)
	}
	var m Manifest
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// Validate checks that the manifest holds together: every name an
// expression reads is a size, every parameter names a tensor or a size.
func (m *Manifest) Validate() error {
	bad := func(f string, a ...any) error { return fmt.Errorf("manifest of %s: "+f, append([]any{m.Op}, a...)...) }
	if m.IndexBits != 32 && m.IndexBits != 64 {
		return bad("index_bits %d: want 32 or 64", m.IndexBits)
	}
	sizes := map[string]bool{}
	for _, s := range m.Sizes {
		if s.MultipleOf < 1 {
			return bad("size %s: multiple_of %d: want at least 1", s.Name, s.MultipleOf)
		}
		if sizes[s.Name] {
			return bad("size %s given twice", s.Name)
		}
		sizes[s.Name] = true
	}
	reads := func(what string, e expr.Expr) error {
		if e.IsZero() {
			return bad("%s: empty expression", what)
		}
		for _, n := range e.Names() {
			if !sizes[n] {
				return bad("%s %q reads %s, which is not a size", what, e, n)
			}
		}
		return nil
	}
	for _, c := range m.Constraints {
		if err := reads("constraint", c.Expr); err != nil {
			return err
		}
	}
	tensors := map[string]bool{}
	for _, t := range m.Tensors {
		if !slices.Contains([]string{"input", "output", "scratch"}, t.Role) {
			return bad("tensor %s: role %q", t.Name, t.Role)
		}
		if (t.Role == "scratch") != (t.Init != nil) {
			return bad("tensor %s: init is for scratch tensors, and every scratch has one", t.Name)
		}
		if t.Status != "" && t.Role != "scratch" {
			return bad("tensor %s: a status word must be scratch", t.Name)
		}
		if _, ok := ElemBytes(t.DType); !ok {
			return bad("tensor %s: dtype %q: want one of %s", t.Name, t.DType, strings.Join(manifestDTypes(), ", "))
		}
		if tensors[t.Name] {
			return bad("tensor %s given twice", t.Name)
		}
		for _, d := range t.Shape {
			if err := reads("shape of "+t.Name, d); err != nil {
				return err
			}
		}
		tensors[t.Name] = true
	}
	if len(m.Kernels) == 0 {
		return bad("no kernels")
	}
	for i, k := range m.Kernels {
		if k.DependentLaunch && (i == 0 || m.Target.Vendor != "nvidia") {
			// A loader would launch it to overlap what came before it in
			// the stream, which only a later kernel of an NVIDIA plan,
			// emitted to wait for its predecessor, may be.
			return bad("kernel %s: dependent_launch on the first kernel or off NVIDIA", k.Symbol)
		}
		for _, g := range k.Grid {
			if err := reads("grid of "+k.Symbol, g); err != nil {
				return err
			}
		}
		for _, b := range k.Block {
			if b < 1 {
				return bad("kernel %s: block %v: want positive extents", k.Symbol, k.Block)
			}
		}
		for _, p := range k.Params {
			switch {
			case p.Kind == "tensor" && tensors[p.Name]:
			case p.Kind == "size" && sizes[p.Name] && (p.DType == "i32" || p.DType == "i64"):
			default:
				return bad("kernel %s: parameter %s (%s %s) is neither a tensor nor a size", k.Symbol, p.Name, p.Kind, p.DType)
			}
		}
	}
	return nil
}

// Check holds a shape to the manifest's class: every size given, positive
// and a multiple of its divisor; every constraint met; every tensor within
// the index width; every grid within a launch. The error names the size or
// the bound.
func (m *Manifest) Check(sh map[string]int64) error {
	for _, s := range m.Sizes {
		v, ok := sh[s.Name]
		switch {
		case !ok:
			return fmt.Errorf("%s: size %s missing", m.Op, s.Name)
		case v <= 0:
			return fmt.Errorf("%s: size %s=%d must be positive", m.Op, s.Name, v)
		case v%int64(s.MultipleOf) != 0:
			return fmt.Errorf("%s: size %s=%d: this build is compiled for multiples of %d", m.Op, s.Name, v, s.MultipleOf)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(sh)) {
		if !slices.ContainsFunc(m.Sizes, func(s Size) bool { return s.Name == n }) {
			return fmt.Errorf("%s: unknown size %s", m.Op, n)
		}
	}
	env := expr.Env(sh)
	for _, c := range m.Constraints {
		v, err := c.Expr.Eval(env)
		if err != nil {
			return fmt.Errorf("%s: constraint %s: %v", m.Op, c.Expr, err)
		}
		if v == 0 {
			return fmt.Errorf("%s: at %s, %s fails: %s", m.Op, SizesText(sh), c.Expr, c.Why)
		}
	}
	for _, t := range m.Tensors {
		n, err := m.Elems(t, sh)
		if err != nil {
			return err
		}
		if n > m.MaxElements {
			return fmt.Errorf("%s: tensor %s has %d elements, more than this build's %d-bit indexing reaches (%d)", m.Op, t.Name, n, m.IndexBits, m.MaxElements)
		}
	}
	for _, k := range m.Kernels {
		for _, p := range k.Params {
			if p.Kind == "size" && p.DType == "i32" && sh[p.Name] > math.MaxInt32 {
				return fmt.Errorf("%s: size %s=%d does not fit the 32-bit parameter of kernel %s", m.Op, p.Name, sh[p.Name], k.Symbol)
			}
		}
		g, err := k.GridAt(sh)
		if err != nil {
			return fmt.Errorf("%s: %w", m.Op, err)
		}
		for i, v := range g {
			if v > math.MaxInt32 {
				return fmt.Errorf("%s: kernel %s: %d blocks along axis %d, more than a launch takes", m.Op, k.Symbol, v, i)
			}
		}
	}
	return nil
}

// Elems is a tensor's element count at sh.
func (m *Manifest) Elems(t Tensor, sh map[string]int64) (int64, error) {
	dims, err := DimsAt(t, sh)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", m.Op, err)
	}
	n := int64(1)
	for _, d := range dims {
		if d <= 0 || n > math.MaxInt64/d {
			return 0, fmt.Errorf("%s: tensor %s of shape %v: too large", m.Op, t.Name, dims)
		}
		n *= d
	}
	return n, nil
}

// DimsAt is a tensor's shape at sh.
func DimsAt(t Tensor, sh map[string]int64) ([]int64, error) {
	var dims []int64
	for _, d := range t.Shape {
		v, err := d.Eval(expr.Env(sh))
		if err != nil {
			return nil, fmt.Errorf("tensor %s: %v", t.Name, err)
		}
		dims = append(dims, v)
	}
	return dims, nil
}

// GridAt is the kernel's grid at sh.
func (k *Kernel) GridAt(sh map[string]int64) ([3]int64, error) {
	var g [3]int64
	for i, e := range k.Grid {
		v, err := e.Eval(expr.Env(sh))
		if err != nil {
			return g, fmt.Errorf("kernel %s: grid: %v", k.Symbol, err)
		}
		if v < 0 {
			return g, fmt.Errorf("kernel %s: grid %s = %d along axis %d", k.Symbol, e, v, i)
		}
		g[i] = v
	}
	return g, nil
}

// SizesText writes sizes sorted by name: "K=4096,M=64".
func SizesText(sh map[string]int64) string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(sh)) {
		kv = append(kv, fmt.Sprintf("%s=%d", k, sh[k]))
	}
	return strings.Join(kv, ",")
}

// Sizes64 is a shape as Check and the manifest's expressions take it.
func Sizes64(sh map[string]int) map[string]int64 {
	out := make(map[string]int64, len(sh))
	for k, v := range sh {
		out[k] = int64(v)
	}
	return out
}
