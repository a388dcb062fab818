package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fp8gen links no plotting library: its fonts were parsed at every start
// (a fifth of a tune's cache hit); the chart is fp8gen-plot's.
func TestNoPlottingLinked(t *testing.T) {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		t.Skipf("no go command at %s: %v", goTool, err)
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

// fakePlot puts a program named fp8gen-plot on PATH that runs script.
func fakePlot(t *testing.T, script string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, plotProgram), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
}

func TestDrawPlot(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh for the stand-in fp8gen-plot")
	}
	base := filepath.Join(t.TempDir(), "rows")
	var stderr bytes.Buffer

	t.Setenv("PATH", t.TempDir()) // none anywhere
	if drawn, err := drawPlot("auto", base, &stderr); drawn || err != nil || !strings.Contains(stderr.String(), "no chart drawn: fp8gen-plot is neither beside fp8gen nor on PATH") {
		t.Errorf("auto without fp8gen-plot: drawn %v, err %v, stderr %q; want a line saying so", drawn, err, stderr.String())
	}
	if _, err := drawPlot("on", base, &stderr); err == nil || !strings.Contains(err.Error(), "go install") {
		t.Errorf("on without fp8gen-plot: %v; want an error saying how to get it", err)
	}

	// The stand-in writes the file named after -o, as fp8gen-plot does.
	fakePlot(t, `[ "$1" = -o ] && [ "$3" = "`+base+`.json" ] && echo png > "$2"`+"\n")
	stderr.Reset()
	if drawn, err := drawPlot("off", base, &stderr); drawn || err != nil || stderr.Len() != 0 {
		t.Errorf("off: drawn %v, err %v, stderr %q", drawn, err, stderr.String())
	}
	if _, err := os.Stat(base + ".png"); !os.IsNotExist(err) {
		t.Fatal("off ran fp8gen-plot")
	}
	if drawn, err := drawPlot("auto", base, &stderr); !drawn || err != nil {
		t.Errorf("auto with fp8gen-plot on PATH: drawn %v, err %v", drawn, err)
	}
	if b, err := os.ReadFile(base + ".png"); err != nil || string(b) != "png\n" {
		t.Errorf("the chart: %q, %v", b, err)
	}

	fakePlot(t, "echo broken >&2; exit 1\n")
	if drawn, err := drawPlot("auto", base, &stderr); drawn || err == nil {
		t.Errorf("a failing fp8gen-plot: drawn %v, err %v; want its failure", drawn, err)
	}
}
