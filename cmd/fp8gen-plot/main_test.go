package main

import (
	"bytes"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fp8gen/fp8gen/bench"
)

func writeRows(t *testing.T, path string, rows []bench.Row) {
	t.Helper()
	if err := bench.WriteJSON(path, rows); err != nil {
		t.Fatal(err)
	}
}

func TestPlotFiles(t *testing.T) {
	dir := t.TempDir()
	ours := filepath.Join(dir, "2026-12-03-nvidia-h200.json")
	peers := filepath.Join(dir, "peers.json")
	// The first file holds only the copy: the chart has bars only if the
	// second is read too.
	writeRows(t, ours, []bench.Row{{Op: "rowwise_cast", Shape: "64x64", Impl: bench.ImplCopy, TimeUS: 5, GBPerS: 1000}})
	writeRows(t, peers, []bench.Row{{Op: "rowwise_cast", Shape: "64x64", Impl: bench.ImplEager, TimeUS: 20, GBPerS: 250}})
	var stderr bytes.Buffer
	if code := run([]string{ours, peers}, io.Discard, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	f, err := os.Open(strings.TrimSuffix(ours, ".json") + ".png")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	out := filepath.Join(dir, "named.png")
	if code := run([]string{"-o", out, peers}, io.Discard, &stderr); code != 0 {
		t.Fatalf("-o: exit %d: %s", code, stderr.String())
	}
	if _, err := os.Stat(out); err != nil {
		t.Errorf("-o %s: %v", out, err)
	}
}

func TestPlotMisuse(t *testing.T) {
	dir := t.TempDir()
	copyOnly := filepath.Join(dir, "copy.json")
	writeRows(t, copyOnly, []bench.Row{{Op: "rowwise_cast", Shape: "64x64", Impl: bench.ImplCopy, TimeUS: 5, GBPerS: 1000}})
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "no rows file given"},
		{[]string{"--nosuch"}, 2, "-nosuch"},
		{[]string{filepath.Join(dir, "rows.csv")}, 2, "want the .json rows"},
		{[]string{filepath.Join(dir, "missing.json")}, 1, "missing.json"},
		{[]string{bad}, 1, "bad.json"},
		{[]string{copyOnly}, 1, "no fp8gen or peer rows"},
		{[]string{copyOnly, "-o", "x.png"}, 2, "-o: flags go before the rows files"},
	} {
		var stderr bytes.Buffer
		code := run(tc.args, io.Discard, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.want) || strings.Count(strings.TrimSpace(stderr.String()), "\n") > 1 {
			t.Errorf("fp8gen-plot %q: exit %d, stderr %q; want exit %d naming %q", tc.args, code, stderr.String(), tc.code, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "copy.png")); !os.IsNotExist(err) {
		t.Error("a failed plot left a PNG")
	}
}

func TestReadmeTable(t *testing.T) {
	dir := t.TempDir()
	rows := filepath.Join(dir, "NVIDIA-H200.json")
	writeRows(t, rows, []bench.Row{
		{Op: "rowwise_cast", Shape: "64x64", Impl: bench.ImplCopy, TimeUS: 5, GBPerS: 1000, GPU: "NVIDIA H200", Date: "2026-12-04"},
		{Op: "rowwise_cast", Shape: "64x64", Impl: bench.ImplFP8Gen, TimeUS: 10, GBPerS: 500, GPU: "NVIDIA H200", Date: "2026-12-04", Commit: "abc1234"},
		{Op: "rowwise_cast", Shape: "64x64", Impl: bench.ImplCompiled, TimeUS: 20, GBPerS: 250, GPU: "NVIDIA H200", Date: "2026-12-04", Torch: "2.11.0"},
	})
	readme := filepath.Join(dir, "README.md")
	doc := "# x\n\n" + readmeBegin + "\nold table\n" + readmeEnd + "\n\nafter\n"
	if err := os.WriteFile(readme, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	if code := run([]string{"--readme", readme, "--check", rows}, io.Discard, &stderr); code != 1 || !strings.Contains(stderr.String(), "make readme") {
		t.Fatalf("--check of a stale table: exit %d, %q; want 1 and what to run", code, stderr.String())
	}
	if b, _ := os.ReadFile(readme); string(b) != doc {
		t.Fatalf("--check wrote the README")
	}
	if code := run([]string{"--readme", readme, rows}, io.Discard, &stderr); code != 0 {
		t.Fatalf("--readme: exit %d: %s", code, stderr.String())
	}
	b, _ := os.ReadFile(readme)
	got := string(b)
	for _, want := range []string{"NVIDIA H200, 2026-12-04; fp8gen abc1234; PyTorch 2.11.0.",
		"| `rowwise_cast` | 64x64 | 10.0 | 50.0 | — | 2.00× | — |", "\nafter\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("README lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "old table") {
		t.Errorf("the old table is still there:\n%s", got)
	}
	stderr.Reset()
	if code := run([]string{"--readme", readme, "--check", rows}, io.Discard, &stderr); code != 0 {
		t.Fatalf("--check of a fresh table: exit %d: %s", code, stderr.String())
	}
	var md bytes.Buffer
	if code := run([]string{"--markdown", rows}, &md, &stderr); code != 0 || !strings.Contains(got, md.String()) {
		t.Fatalf("--markdown: exit %d, %q is not the README's table", code, md.String())
	}
	if code := run([]string{"--check", rows}, io.Discard, &stderr); code != 2 {
		t.Errorf("--check without --readme: exit %d, want 2", code)
	}
}
