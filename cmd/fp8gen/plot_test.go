package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fp8gen links no plotting library: its fonts were parsed at every start
// (a fifth of a tune's cache hit); the chart is fp8gen-plot's.
func TestNoPlottingLinked(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "gonum.org/v1/plot") || p == "encoding/gob" || strings.HasSuffix(p, "/bench/chart") {
			t.Errorf("fp8gen links %s", p)
		}
	}
}

// stubPlot writes a program named fp8gen-plot into dir that runs script.
func stubPlot(t *testing.T, dir, script string) string {
	t.Helper()
	p := filepath.Join(dir, plotProgram)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// fp8gen-plot is taken from beside fp8gen first, then from PATH; --plot
// on without either fails before any timing, auto and off go on without.
func TestFindPlotter(t *testing.T) {
	beside, onPath, nowhere := t.TempDir(), t.TempDir(), t.TempDir()
	t.Cleanup(func() { executable = os.Executable })
	executable = func() (string, error) { return filepath.Join(beside, "fp8gen"), nil }
	t.Setenv("PATH", nowhere)
	for _, mode := range []string{"auto", "off"} {
		if p, err := findPlotter(mode); p != "" || err != nil {
			t.Errorf("%s without fp8gen-plot: %q, %v; want none, no error", mode, p, err)
		}
	}
	if _, err := findPlotter("on"); err == nil || !strings.Contains(err.Error(), "--plot on: fp8gen-plot is neither beside fp8gen nor on PATH") {
		t.Errorf("on without fp8gen-plot: %v", err)
	}
	want := stubPlot(t, onPath, "exit 0\n")
	t.Setenv("PATH", onPath)
	if p, _ := findPlotter("auto"); p != want {
		t.Errorf("on PATH: %q; want %q", p, want)
	}
	want = stubPlot(t, beside, "exit 0\n")
	if p, _ := findPlotter("on"); p != want {
		t.Errorf("beside fp8gen and on PATH: %q; want the one beside, %q", p, want)
	}
	if p, _ := findPlotter("off"); p != "" {
		t.Errorf("off: %q", p)
	}
}

func TestDrawPlot(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh for the stand-in fp8gen-plot")
	}
	dir := t.TempDir()
	base := filepath.Join(dir, "rows")
	stale := func() {
		t.Helper()
		if err := os.WriteFile(base+".png", []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gone := func(what string) {
		t.Helper()
		if _, err := os.Stat(base + ".png"); !os.IsNotExist(err) {
			t.Errorf("%s: the earlier run's chart is still there", what)
		}
	}
	var stderr bytes.Buffer

	stale()
	if drawn, err := drawPlot("", "auto", base, &stderr); drawn || err != nil || !strings.Contains(stderr.String(), "no chart drawn: fp8gen-plot is neither beside fp8gen nor on PATH") {
		t.Errorf("auto without fp8gen-plot: drawn %v, err %v, stderr %q; want a line saying so", drawn, err, stderr.String())
	}
	gone("auto without fp8gen-plot")
	stderr.Reset()
	stale()
	if drawn, err := drawPlot("", "off", base, &stderr); drawn || err != nil || stderr.Len() != 0 {
		t.Errorf("off: drawn %v, err %v, stderr %q", drawn, err, stderr.String())
	}
	gone("off")

	// The stand-in writes the file named after -o, as fp8gen-plot does.
	good := stubPlot(t, t.TempDir(), `[ "$1" = -o ] && [ "$3" = "`+base+`.json" ] && echo png > "$2"`+"\n")
	if drawn, err := drawPlot(good, "auto", base, &stderr); !drawn || err != nil {
		t.Errorf("with fp8gen-plot: drawn %v, err %v", drawn, err)
	}
	if b, err := os.ReadFile(base + ".png"); err != nil || string(b) != "png\n" {
		t.Errorf("the chart: %q, %v", b, err)
	}

	bad := stubPlot(t, t.TempDir(), "echo broken >&2; exit 1\n")
	stderr.Reset()
	stale()
	if drawn, err := drawPlot(bad, "auto", base, &stderr); drawn || err != nil || !strings.Contains(stderr.String(), "no chart drawn") {
		t.Errorf("a failing fp8gen-plot under auto: drawn %v, err %v, stderr %q; want a line, no error", drawn, err, stderr.String())
	}
	gone("a failing fp8gen-plot")
	if _, err := drawPlot(bad, "on", base, &stderr); err == nil {
		t.Error("a failing fp8gen-plot under on: no error")
	}
}
