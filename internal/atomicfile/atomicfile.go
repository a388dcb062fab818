// Package atomicfile writes files so that a reader sees either the old file
// or the whole new one, never a part: the data goes to a temporary file in
// the same folder, is synced, and is renamed over the path. A failed write
// leaves nothing behind.
package atomicfile

import (
	"io"
	"os"
	"path/filepath"
)

// Write creates path (mode 0644) with what write writes.
func Write(path string, write func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = write(f); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	// Make the rename durable too, where the file system allows it.
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// WriteFile creates path (mode 0644) holding data.
func WriteFile(path string, data []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Set writes several files all or none: Stage writes each to a temporary
// file beside its path, Commit renames them all into place, and a failed
// Stage or Commit — or Abort — removes the temporary files and every file
// this Set has already put in place.
type Set struct {
	staged []staged
	done   []string
}

type staged struct{ tmp, path string }

// Stage writes data to a temporary file beside path.
func (s *Set) Stage(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		s.Abort()
		return err
	}
	s.staged = append(s.staged, staged{f.Name(), path})
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		s.Abort()
	}
	return err
}

// Commit puts every staged file in place.
func (s *Set) Commit() error {
	for _, st := range s.staged {
		if err := os.Rename(st.tmp, st.path); err != nil {
			s.Abort()
			return err
		}
		s.done = append(s.done, st.path)
	}
	s.staged = nil
	return nil
}

// Abort removes the staged files and those already put in place.
func (s *Set) Abort() {
	for _, st := range s.staged {
		os.Remove(st.tmp)
	}
	for _, p := range s.done {
		os.Remove(p)
	}
	s.staged, s.done = nil, nil
}
