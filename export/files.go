package export

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/fp8gen/fp8gen/internal/atomicfile"
	"github.com/fp8gen/fp8gen/runtime"
	"github.com/fp8gen/fp8gen/target"
)

// Marshal writes the manifest as manifest.json holds it: indented, with
// expressions' operators as they are (no HTML escapes).
func (m *Manifest) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ManifestFile is the manifest's name in an export folder.
const ManifestFile = "manifest.json"

// Bundle is an export: the manifest and the files it names.
type Bundle struct {
	Manifest *Manifest
	Source   string
	Object   []byte // nil: none
}

// Compile builds the code object for arch — the target's own, or a
// stand-in of its family that a local compiler knows (gfx940 for gfx942)
// — and records it in the manifest. The error wraps runtime.ErrNoCompiler
// where the target's compiler is missing.
func (b *Bundle) Compile(ctx context.Context, c *runtime.Compiler, arch string) error {
	t, err := target.Lookup(b.Manifest.Target.Name)
	if err != nil {
		return err
	}
	if arch == "" {
		arch = t.Name
	}
	// The compiler takes the architecture from the target's name.
	as := *t
	as.Name = arch
	obj, info, err := c.Compile(ctx, b.Source, &as, b.Manifest.Kernels[0].Symbol)
	if err != nil {
		return err
	}
	ext := ".hsaco"
	if t.Vendor == target.NVIDIA {
		ext = ".cubin"
	}
	b.Object = obj
	b.Manifest.CodeObject = &CodeObject{
		File:     File{File: b.Manifest.Op + "." + arch + ext, SHA256: Hash(obj)},
		Arch:     arch,
		Compiler: info.ToolVersion,
	}
	return nil
}

// Write puts the bundle's files in dir (created if missing), all or none.
// Files an earlier export there named and this one does not (a code
// object of another arch) are removed, so the folder holds one export.
func (b *Bundle) Write(dir string) (err error) {
	created := false
	if _, serr := os.Stat(dir); os.IsNotExist(serr) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		created = true
	}
	defer func() {
		if err != nil && created {
			os.Remove(dir) // only if still empty
		}
	}()
	var stale []string
	if old, rerr := os.ReadFile(filepath.Join(dir, ManifestFile)); rerr == nil {
		if m, perr := Parse(old); perr == nil {
			stale = append(stale, m.Source.File, codeObjectName(m))
		}
	}
	js, err := b.Manifest.Marshal()
	if err != nil {
		return err
	}
	var set atomicfile.Set
	files := map[string][]byte{ManifestFile: js, b.Manifest.Source.File: []byte(b.Source)}
	if b.Manifest.CodeObject != nil {
		files[b.Manifest.CodeObject.File.File] = b.Object
	}
	for _, name := range []string{b.Manifest.Source.File, codeObjectName(b.Manifest), ManifestFile} {
		if data, ok := files[name]; ok {
			if err := set.Stage(throughLinks(filepath.Join(dir, name)), data); err != nil {
				return err
			}
		}
	}
	if err := set.Commit(); err != nil {
		return err
	}
	for _, name := range stale {
		if _, ours := files[name]; name != "" && !ours && filepath.Base(name) == name {
			os.Remove(filepath.Join(dir, name))
		}
	}
	return nil
}

// throughLinks follows path while it is a symlink, so that Write writes
// through a link in the folder rather than replacing it.
func throughLinks(path string) string {
	for range 40 {
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			return path
		}
		to, err := os.Readlink(path)
		if err != nil {
			return path
		}
		if !filepath.IsAbs(to) {
			to = filepath.Join(filepath.Dir(path), to)
		}
		path = to
	}
	return path
}

func codeObjectName(m *Manifest) string {
	if m.CodeObject == nil {
		return ""
	}
	return m.CodeObject.File.File
}

// Read loads an export folder: the manifest, and the files it names,
// each checked against its hash.
func Read(dir string) (*Bundle, error) { return ReadFS(os.DirFS(dir), ".") }

// ReadFS is Read of the folder dir of fsys (an embedded one, say).
func ReadFS(fsys fs.FS, dir string) (*Bundle, error) {
	where := func(name string) string { return path.Join(dir, name) }
	data, err := fs.ReadFile(fsys, where(ManifestFile))
	if err != nil {
		return nil, err
	}
	m, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where(ManifestFile), err)
	}
	b := &Bundle{Manifest: m}
	read := func(f File) ([]byte, error) {
		if !fs.ValidPath(f.File) || strings.Contains(f.File, "/") || f.File == "." {
			return nil, fmt.Errorf("%s: file %q is not a name in its folder", where(ManifestFile), f.File)
		}
		data, err := fs.ReadFile(fsys, where(f.File))
		if err != nil {
			return nil, err
		}
		if Hash(data) != f.SHA256 {
			return nil, fmt.Errorf("%s: SHA-256 %s; the manifest says %s", where(f.File), Hash(data), f.SHA256)
		}
		return data, nil
	}
	src, err := read(m.Source)
	if err != nil {
		return nil, err
	}
	b.Source = string(src)
	if m.CodeObject != nil {
		if b.Object, err = read(m.CodeObject.File); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// ErrWrongTarget is a bundle loaded on hardware it was not built for.
var ErrWrongTarget = errors.New("export: wrong target")

// CheckDevice refuses a bundle for another target than the device's, or
// a code object for another architecture, naming both.
func (b *Bundle) CheckDevice(dev *target.Target) error {
	m := b.Manifest
	if m.Target.Name != dev.Name {
		return fmt.Errorf("%w: %s was exported for %s; this device is %s", ErrWrongTarget, m.Op, m.Target.Name, dev.Name)
	}
	if m.CodeObject != nil && m.CodeObject.Arch != dev.Name {
		return fmt.Errorf("%w: %s's code object is compiled for %s; this device is %s", ErrWrongTarget, m.Op, m.CodeObject.Arch, dev.Name)
	}
	return nil
}
