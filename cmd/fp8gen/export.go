package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/fp8gen/fp8gen/export"
	"github.com/fp8gen/fp8gen/runtime"
)

func cmdExport(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("export", "export OP [--target T] [--shape M=…,K=…] [--schedule k=v,…] [--compile auto|yes|no] [--object-arch A] -o DIR", stderr)
	var of opFlags
	of.register(fs, "the GPU's; without one, --target is required", "the op's example shape")
	of.useShipped = true // as generate: the same file on every machine, whatever its tuning cache
	out := fs.String("o", "", "write manifest.json, the source and the code object to the folder DIR (all or none)")
	compile := fs.String("compile", "auto", "build the code object: yes (fail without the target's compiler or where it refuses the target), no, or auto (where the compiler is found and knows the target; else the source and manifest alone, saying why)")
	objArch := fs.String("object-arch", "", "compile for this architecture of the target's family instead of the target's own (gfx940 for gfx942 with an older hipcc); the manifest records it, and loaders refuse it on other hardware")
	name, err := parse(fs, args, true)
	if err != nil {
		return err
	}
	if *out == "" {
		return usagef("-o DIR is required")
	}
	switch *compile {
	case "auto", "yes", "no":
	default:
		return usagef("--compile %q: want auto, yes or no", *compile)
	}
	if *objArch != "" && *compile == "no" {
		return usagef("--object-arch %s with --compile no: nothing would be compiled", *objArch)
	}
	if err := underAFile(*out); err != nil {
		return err
	}
	if fi, err := os.Stat(*out); err == nil && !fi.IsDir() {
		return usagef("-o %s is not a folder", *out)
	} else if err != nil && !os.IsNotExist(err) {
		return usagef("-o %s: %v", *out, err)
	}
	p, err := of.planFor(name, false)
	if err != nil {
		return err
	}
	b, err := export.New(p)
	if err != nil {
		return err
	}
	obj := "no code object (--compile no)"
	if *compile != "no" {
		err := b.Compile(context.Background(), &runtime.Compiler{}, *objArch)
		switch {
		case err == nil:
			obj = "code object " + b.Manifest.CodeObject.File.File + " (" + b.Manifest.CodeObject.Compiler + ")"
		case *compile == "auto" && errors.Is(err, runtime.ErrNoCompiler):
			obj = "no code object: " + err.Error()
		case *compile == "auto" && unknownArch(err):
			// The source and manifest are still good; say why there is
			// no object and how to get one.
			arch := p.Target.Name
			if *objArch != "" {
				arch = *objArch
			}
			obj = fmt.Sprintf("no code object: the installed %s does not know %s", filepath.Base(compileTool(err)), arch)
			if p.Target.CheckArch != "" && *objArch == "" {
				obj += fmt.Sprintf(" (--object-arch %s builds the stand-in)", p.Target.CheckArch)
			}
			obj += "; --compile yes makes this an error"
		case p.Target.CheckArch != "" && *objArch == "":
			return fmt.Errorf("%w\n(a hipcc that knows no %s can build the stand-in %s with --object-arch %s; --compile no writes no code object)", err, p.Target.Name, p.Target.CheckArch, p.Target.CheckArch)
		default:
			return err
		}
	}
	if fi, err := os.Stat(*out); err == nil && fi.IsDir() {
		// A folder, or other non-file, where a file of the export goes
		// is refused; a symlink is written through.
		for _, f := range []string{export.ManifestFile, b.Manifest.Source.File, codeObjectName(b)} {
			if f == "" {
				continue
			}
			if _, err := outputFile("-o", filepath.Join(*out, f)); err != nil {
				return err
			}
		}
	}
	if err := b.Write(*out); err != nil {
		return err
	}
	m := b.Manifest
	var ks []string
	for _, k := range m.Kernels {
		ks = append(ks, k.Symbol)
	}
	_, err = fmt.Fprintf(stdout, "%s: %s for %s, kernels %s; %s\n", filepath.Join(*out, export.ManifestFile), m.Op, m.Target.Name, strings.Join(ks, ", "), obj)
	return err
}

func unknownArch(err error) bool {
	var ce *runtime.CompileError
	return errors.As(err, &ce) && ce.UnknownArch()
}

func compileTool(err error) string {
	var ce *runtime.CompileError
	if errors.As(err, &ce) {
		return ce.Tool
	}
	return "compiler"
}

func codeObjectName(b *export.Bundle) string {
	if b.Manifest.CodeObject == nil {
		return ""
	}
	return b.Manifest.CodeObject.File.File
}

// underAFile refuses a path one of whose parents exists and is not a folder.
func underAFile(path string) error {
	for d := filepath.Dir(filepath.Clean(path)); ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil {
			if !fi.IsDir() {
				return usagef("-o %s: %s is a file, not a folder", path, d)
			}
			return nil
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}
