package main

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The committed launchers and exports are what go generate writes today:
// the //go:generate line of main.go, run into a fresh folder, gives the
// same files byte for byte. (make check does the same through git.)
func TestGeneratedUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fp8gen")
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(string(src), "\n") {
		if rest, ok := strings.CutPrefix(l, "//go:generate go run github.com/fp8gen/fp8gen/cmd/fp8gen "); ok {
			line = rest
		}
	}
	if line == "" {
		t.Fatal("main.go has no //go:generate line running fp8gen")
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "fp8gen")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/fp8gen/fp8gen/cmd/fp8gen").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	work := filepath.Join(tmp, "work")
	os.Mkdir(work, 0o755)
	cmd := exec.Command(bin, strings.Fields(line)...)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "GOPACKAGE=main")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("fp8gen %s: %v\n%s", line, err, out)
	}
	files := func(root string) map[string][]byte {
		m := map[string][]byte{}
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(root, p)
				if rel == "kernels_gen.go" || strings.HasPrefix(rel, "kernels_gen_kernels"+string(filepath.Separator)) {
					m[rel], _ = os.ReadFile(p)
				}
			}
			return nil
		})
		return m
	}
	want, got := files(work), files(".")
	for name, data := range want {
		if g, ok := got[name]; !ok {
			t.Errorf("%s: missing; run go generate ./examples/...", name)
		} else if !bytes.Equal(g, data) {
			t.Errorf("%s: stale; run go generate ./examples/...", name)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: go generate no longer writes it; remove it", name)
		}
	}
}
