package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"go/token"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"github.com/dave/jennifer/jen"

	"github.com/fp8gen/fp8gen/export"
	"github.com/fp8gen/fp8gen/internal/atomicfile"
	"github.com/fp8gen/fp8gen/ops"
	"github.com/fp8gen/fp8gen/runtime"
	"github.com/fp8gen/fp8gen/schedule"
	"github.com/fp8gen/fp8gen/target"
	"github.com/fp8gen/fp8gen/tune"
)

const generateUsage = `generate -o FILE.go [-package P] [--targets T,…] [--objects T[=ARCH],…] SPEC…

A SPEC is [Func=]OP[:OPTION=VALUE,…][@SIZE=N,…[+SIZE=N,…]…]: the
launcher's name (the op's, in CamelCase, by default), the op, its options,
and the shapes it is exported at (default the op's example). Each sets a
class of shapes (the sizes' multiples, the schedule's constraints: see
docs/manifest.md); the launcher runs the first class that holds a call's
shape, so a fast specialized shape first and a general one last
(rowwise_cast@M=4096,K=4096+M=1,K=16385) covers every shape.
FILE.go holds one typed launcher per SPEC over package launch; the exports
it embeds go in the folder FILE_kernels beside it, replaced whole.`

func cmdGenerate(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("generate", generateUsage, stderr)
	out := fs.String("o", "", "the Go file to write")
	pkg := fs.String("package", "", "its package (default: $GOPACKAGE, as go generate sets it)")
	targetsFlag := fs.String("targets", strings.Join(target.Names(), ","), "targets to export for (by default, all that run each op)")
	objects := fs.String("objects", "", "targets to embed code objects for, each optionally =ARCH, a stand-in of its family (gfx942=gfx940); the target's compiler must be found")
	specs, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *out == "" || !strings.HasSuffix(*out, ".go") {
		return usagef("-o FILE.go is required")
	}
	// The Go file is written through a symlink; its exports go beside the
	// link, in the package's folder.
	goFile, err := outputFile("-o", *out)
	if err != nil {
		return err
	}
	if *pkg == "" {
		*pkg = os.Getenv("GOPACKAGE")
	}
	if *pkg == "" || !token.IsIdentifier(*pkg) {
		return usagef("-package %q: want a Go package name (go generate sets $GOPACKAGE)", *pkg)
	}
	if len(specs) == 0 {
		return usagef("no SPEC: say which ops to generate launchers for")
	}
	targetsSet := false
	fs.Visit(func(f *flag.Flag) { targetsSet = targetsSet || f.Name == "targets" })
	var targets []*target.Target
	for _, n := range strings.Split(*targetsFlag, ",") {
		t, err := target.Lookup(strings.TrimSpace(n))
		if err != nil {
			return usagef("--targets: %v", err)
		}
		if slices.Contains(targets, t) {
			return usagef("--targets: %s given twice", t.Name)
		}
		targets = append(targets, t)
	}
	objArch := map[string]string{}
	if *objects != "" {
		for _, o := range strings.Split(*objects, ",") {
			t, arch, _ := strings.Cut(strings.TrimSpace(o), "=")
			if !slices.ContainsFunc(targets, func(x *target.Target) bool { return x.Name == t }) {
				return usagef("--objects %s: not one of --targets", t)
			}
			if _, dup := objArch[t]; dup {
				return usagef("--objects: %s given twice", t)
			}
			objArch[t] = arch
		}
	}
	var vs []*variant
	for _, s := range specs {
		v, err := parseSpec(s)
		if err != nil {
			return err
		}
		for _, w := range vs {
			switch {
			case w.fn == v.fn:
				return usagef("two SPECs make the launcher %s: name them (Func=OP…)", v.fn)
			case w.dir() == v.dir():
				return usagef("the launchers %s and %s would share the exports folder %s: rename one", w.fn, v.fn, v.dir())
			case w.fn+"Tensor" == v.fn || v.fn+"Tensor" == w.fn:
				return usagef("the launchers %s and %s clash: %sTensor is %s's tensor allocator", w.fn, v.fn, min(w.fn, v.fn), min(w.fn, v.fn))
			}
		}
		vs = append(vs, v)
	}
	stem := strings.TrimSuffix(filepath.Base(*out), ".go")
	if !token.IsIdentifier(embedVar(stem)) {
		return usagef("-o %s: the file's name must make a Go identifier (a letter first)", *out)
	}
	kdir := stem + "_kernels"
	dir := filepath.Dir(*out)
	// Build everything before writing anything.
	type exported struct {
		v       *variant
		classes [][]*export.Bundle // by class, then target
	}
	var all []exported
	for _, v := range vs {
		e := exported{v: v}
		for _, sh := range v.shapes {
			var class []*export.Bundle
			for _, t := range targets {
				if err := v.op.RunsOn(t); err != nil && !targetsSet {
					// The default is every target that runs the op.
					fmt.Fprintf(stderr, "fp8gen generate: %v; %s gets no %s export\n", err, v.spec, t.Name)
					continue
				}
				p, err := v.op.NewPlan(t, sh, v.opts, shippedSchedule(v.op, t, sh, v.opts, stderr))
				if err != nil {
					if strings.HasPrefix(err.Error(), v.spec+": ") { // the op's own name already leads
						return usageError{err}
					}
					return usageError{fmt.Errorf("%s: %w", v.spec, err)}
				}
				b, err := export.New(p)
				if err != nil {
					return err
				}
				if arch, ok := objArch[t.Name]; ok {
					if err := b.Compile(context.Background(), &runtime.Compiler{}, arch); err != nil {
						return fmt.Errorf("%s for %s: --objects asks for a code object: %w", v.spec, t.Name, err)
					}
				}
				class = append(class, b)
			}
			for _, prev := range e.classes {
				if prev[0].Manifest.Kernels[0].Symbol == class[0].Manifest.Kernels[0].Symbol {
					return usagef("%s: the shapes %s and %s make the same kernels (one class of shapes); keep one", v.spec, ops.Shape(prev[0].Manifest.Shape).String(), ops.Shape(class[0].Manifest.Shape).String())
				}
			}
			e.classes = append(e.classes, class)
		}
		all = append(all, e)
	}
	f := jen.NewFile(*pkg)
	f.ImportName(launchPkg, "launch")
	f.HeaderComment("Code generated by fp8gen; DO NOT EDIT.")
	f.HeaderComment("fp8gen " + strings.Join(append([]string{"generate"}, args...), " "))
	f.Comment("//go:embed " + kdir)
	f.Var().Id(embedVar(stem)).Qual("embed", "FS")
	for _, e := range all {
		launcher(f, kdir, stem, e.v, e.classes)
	}
	var src bytes.Buffer
	if err := f.Render(&src); err != nil {
		return fmt.Errorf("BUG: generate: %w", err)
	}
	// The kernels' folder is written aside, then swapped in whole.
	tmp, err := os.MkdirTemp(dir, "."+kdir+".tmp-")
	if err != nil {
		return usagef("-o %s: %v", *out, err)
	}
	defer os.RemoveAll(tmp)
	written := map[string]bool{} // the targets given exports
	for _, e := range all {
		for i, class := range e.classes {
			d := filepath.Join(tmp, e.v.dir())
			if len(e.classes) > 1 {
				d = filepath.Join(d, fmt.Sprint(i)) // the order launch.Load tries them in
			}
			for _, b := range class {
				written[b.Manifest.Target.Name] = true
				if err := b.Write(filepath.Join(d, b.Manifest.Target.Name)); err != nil {
					return err
				}
			}
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	// Both or neither: the Go file is staged beside its path, the old
	// exports moved aside, then the new ones and the Go file put in place;
	// a failure puts the old ones back.
	var set atomicfile.Set
	if err := set.Stage(goFile, src.Bytes()); err != nil {
		return err
	}
	final := filepath.Join(dir, kdir)
	old := tmp + ".old"
	if err := os.Rename(final, old); err != nil && !os.IsNotExist(err) {
		set.Abort()
		return err
	}
	restore := func() {
		os.RemoveAll(final)
		os.Rename(old, final)
	}
	if err := os.Rename(tmp, final); err != nil {
		set.Abort()
		restore()
		return err
	}
	if err := set.Commit(); err != nil {
		restore()
		return err
	}
	os.RemoveAll(old)
	_, err = fmt.Fprintf(stdout, "%s: %d launchers for %d targets; exports in %s\n", *out, len(vs), len(written), final)
	return err
}

type variant struct {
	spec, fn string
	op       *ops.Op
	opts     ops.Options
	shapes   []ops.Shape
}

// dir is the variant's folder in the kernels' folder.
func (v *variant) dir() string { return snake(v.fn) }

func parseSpec(s string) (*variant, error) {
	v := &variant{spec: s, opts: ops.Options{}}
	rest, shape, hasShape := strings.Cut(s, "@")
	head, opts, _ := strings.Cut(rest, ":")
	name, opName, named := strings.Cut(head, "=")
	if !named {
		opName = head
	}
	op, err := ops.Lookup(opName)
	if err != nil {
		return nil, usagef("SPEC %q: %v", s, err)
	}
	v.op = op
	v.fn = camel(op.Name)
	if named {
		if !token.IsIdentifier(name) || !token.IsExported(name) {
			return nil, usagef("SPEC %q: launcher name %q: want an exported Go identifier", s, name)
		}
		v.fn = name
	}
	if opts != "" {
		for _, kv := range strings.Split(opts, ",") {
			k, val, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return nil, usagef("SPEC %q: option %q is not NAME=VALUE", s, kv)
			}
			if _, dup := v.opts[k]; dup {
				return nil, usagef("SPEC %q: option %s given twice", s, k)
			}
			v.opts[k] = val
		}
	}
	if _, err := op.CheckOptions(v.opts); err != nil {
		return nil, usagef("SPEC %q: %v", s, err)
	}
	v.shapes = []ops.Shape{op.Example}
	if hasShape {
		v.shapes = nil
		for _, one := range strings.Split(shape, "+") {
			if strings.TrimSpace(one) == "" {
				return nil, usagef("SPEC %q: an empty shape", s)
			}
			sh, err := parseShape(one)
			if err != nil {
				return nil, err
			}
			v.shapes = append(v.shapes, sh)
		}
		if len(v.shapes) > 9 {
			return nil, usagef("SPEC %q: %d shapes; at most 9", s, len(v.shapes))
		}
	}
	return v, nil
}

// launcher writes one variant's function and its loader.
func launcher(f *jen.File, kdir, stem string, v *variant, classes [][]*export.Bundle) {
	bs := classes[0]
	m0 := bs[0].Manifest
	load := lowerFirst(v.fn) + "Op"
	f.Comment(load + " loads the exports " + v.fn + " runs, once.")
	f.Var().Id(load).Op("=").Qual("sync", "OnceValues").Call(jen.Func().Params().Params(jen.Op("*").Qual(launchPkg, "Op"), jen.Error()).Block(
		jen.Return(jen.Qual(launchPkg, "Load").Call(jen.Id(embedVar(stem)), jen.Lit(kdir+"/"+v.dir()))),
	))
	var doc []string
	doc = append(doc, fmt.Sprintf("%s runs %s (%s): %s.", v.fn, m0.Op, optionsText(m0.Options), strings.TrimSuffix(m0.Doc, ".")))
	doc = append(doc, "", "Tensors, host memory or device buffers:", "")
	w := 0
	for _, t := range m0.Tensors {
		w = max(w, len(t.Name))
	}
	for _, t := range m0.Tensors {
		if t.Role == "scratch" {
			continue
		}
		dt := t.DType
		if m0.FP8 != nil && dt == m0.FP8.Name {
			var per []string
			for _, b := range bs {
				per = append(per, b.Manifest.Target.Name+" "+b.Manifest.FP8.Name)
			}
			dt = "fp8 (" + strings.Join(per, ", ") + ")"
		}
		var dims []string
		for _, d := range t.Shape {
			dims = append(dims, d.String())
		}
		doc = append(doc, fmt.Sprintf("\t%-*s  %-6s  %s [%s]", w, t.Name, t.Role, dt, strings.Join(dims, ", ")))
	}
	if len(classes) == 1 {
		doc = append(doc, "", fmt.Sprintf("Exported at %s; it runs the shapes where", ops.Shape(m0.Shape).String()), "")
	} else {
		doc = append(doc, "", "It runs the first of its exports that holds a call's shape:", "")
	}
	for _, class := range classes {
		if len(classes) > 1 {
			doc = append(doc, fmt.Sprintf("\texported at %s, where", ops.Shape(class[0].Manifest.Shape).String()))
		}
		indent := "\t"
		if len(classes) > 1 {
			indent = "\t\t"
		}
		for _, b := range class {
			doc = append(doc, indent+b.Manifest.Target.Name+": "+classText(b.Manifest))
		}
	}
	doc = append(doc, "", "and refuses any other shape, and any tensor of another dtype or shape, before a launch.")
	for _, l := range doc {
		f.Comment(l) // line comments: one Comment of several lines would be a /* */ block
	}
	params := []jen.Code{jen.Id("ctx").Qual("context", "Context"), jen.Id("r").Op("*").Qual(launchPkg, "Runner")}
	var sizeIDs []jen.Code
	for _, s := range m0.Sizes {
		sizeIDs = append(sizeIDs, jen.Id(s.Name))
	}
	params = append(params, jen.List(sizeIDs...).Int())
	var tensorIDs []jen.Code
	sizes, tensors := jen.Dict{}, jen.Dict{}
	for _, s := range m0.Sizes {
		sizes[jen.Lit(s.Name)] = jen.Id(s.Name)
	}
	for _, t := range m0.Tensors {
		if t.Role != "scratch" {
			tensorIDs = append(tensorIDs, jen.Id(lowerFirst(camel(t.Name))))
			tensors[jen.Lit(t.Name)] = jen.Id(lowerFirst(camel(t.Name)))
		}
	}
	params = append(params, jen.List(tensorIDs...).Op("*").Qual(launchPkg, "Tensor"))
	f.Func().Id(v.fn).Params(params...).Error().Block(
		jen.List(jen.Id("op"), jen.Err()).Op(":=").Id(load).Call(),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
		jen.Return(jen.Id("r").Dot("Run").Call(jen.Id("ctx"), jen.Id("op"),
			jen.Qual(launchPkg, "Sizes").Values(sizes), jen.Qual(launchPkg, "Tensors").Values(tensors))),
	)
	f.Comment(fmt.Sprintf("%sTensor allocates one of %s's tensors in host memory, zeroed, of the dtype", v.fn, v.fn))
	f.Comment("and shape it has on r's target at these sizes.")
	f.Func().Id(v.fn+"Tensor").Params(jen.Id("r").Op("*").Qual(launchPkg, "Runner"), jen.Id("name").String(), jen.List(sizeIDs...).Int()).
		Params(jen.Op("*").Qual(launchPkg, "Tensor"), jen.Error()).Block(
		jen.List(jen.Id("op"), jen.Err()).Op(":=").Id(load).Call(),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
		jen.Return(jen.Id("r").Dot("NewTensor").Call(jen.Id("op"), jen.Id("name"), jen.Qual(launchPkg, "Sizes").Values(sizes))),
	)
}

const launchPkg = "github.com/fp8gen/fp8gen/launch"

// embedVar names the embedded folder's variable after the file.
func embedVar(stem string) string {
	var id []rune
	for _, r := range camel(strings.NewReplacer("-", "_", ".", "_").Replace(stem)) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			id = append(id, r)
		}
	}
	return lowerFirst(string(id)) + "Kernels"
}

func optionsText(o map[string]string) string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(o)) {
		kv = append(kv, k+"="+o[k])
	}
	if len(kv) == 0 {
		return "no options"
	}
	return strings.Join(kv, ", ")
}

// classText says which shapes a manifest runs, in a line.
func classText(m *export.Manifest) string {
	var parts []string
	byMul := map[int][]string{}
	for _, s := range m.Sizes {
		if s.MultipleOf > 1 {
			byMul[s.MultipleOf] = append(byMul[s.MultipleOf], s.Name)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(byMul)) {
		parts = append(parts, fmt.Sprintf("%s multiples of %d", strings.Join(byMul[k], ", "), k))
	}
	for _, c := range m.Constraints {
		parts = append(parts, c.Expr.String())
	}
	parts = append(parts, fmt.Sprintf("at most %d elements a tensor", m.MaxElements))
	return strings.Join(parts, "; ")
}

func camel(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		if r == '_' {
			up = true
			continue
		}
		if up {
			r = unicode.ToUpper(r)
		}
		b.WriteRune(r)
		up = false
	}
	return b.String()
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	// Keep an initialism's case together: "QK" → "qk", not "qK".
	rs := []rune(s)
	i := 0
	for i < len(rs) && unicode.IsUpper(rs[i]) && (i == 0 || i+1 == len(rs) || unicode.IsUpper(rs[i+1])) {
		rs[i] = unicode.ToLower(rs[i])
		i++
	}
	return string(rs)
}

func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// shippedSchedule is the schedule fp8gen's shipped tuning holds for an
// export, if one holds there: generated launchers take it (and only it,
// not the user's cache, so that go generate writes the same files on
// every machine).
func shippedSchedule(op *ops.Op, t *target.Target, sh ops.Shape, o ops.Options, w io.Writer) schedule.Params {
	c, err := op.NewCall(t, sh, o)
	if err != nil {
		return nil
	}
	e, ok := shippedTuning(w).LookupAnyCompiler(tune.Key{Op: op.Name, Options: c.Options.String(), Target: t.Name, Class: tune.Class(op, sh)})
	if !ok || usable(c, e) != nil {
		return nil
	}
	return e.Params()
}
