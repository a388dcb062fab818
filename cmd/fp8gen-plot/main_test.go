package main

import (
	"bytes"
	"image/png"
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
	if code := run([]string{ours, peers}, &stderr); code != 0 {
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
	if code := run([]string{"-o", out, peers}, &stderr); code != 0 {
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
		code := run(tc.args, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.want) || strings.Count(strings.TrimSpace(stderr.String()), "\n") > 1 {
			t.Errorf("fp8gen-plot %q: exit %d, stderr %q; want exit %d naming %q", tc.args, code, stderr.String(), tc.code, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "copy.png")); !os.IsNotExist(err) {
		t.Error("a failed plot left a PNG")
	}
}
