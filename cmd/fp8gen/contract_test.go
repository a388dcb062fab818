package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// failWriter fails every write, as a closed pipe or a full disk does.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// A command whose output is lost does not exit 0.
func TestStdoutWriteErrors(t *testing.T) {
	for _, args := range [][]string{
		{"list"},
		{"ir", "rowwise_cast", "--shape", "M=4,K=64"},
		{"emit", "rowwise_cast", "--target", "sm_90", "--shape", "M=4,K=64"},
		cpu("run", "rowwise_cast", "--shape", "M=4,K=64"),
	} {
		var stderr strings.Builder
		code := Main(args, failWriter{}, &stderr)
		if code != 1 || !strings.Contains(stderr.String(), "no space left on device") {
			t.Errorf("fp8gen %v with a failing stdout: exit %d, stderr %q; want 1 and the error", args, code, stderr.String())
		}
	}
}

// emit -o writes through a symlink to its target and refuses FIFOs.
func TestEmitThroughSymlinkAndFIFO(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.hip")
	if err := os.WriteFile(real, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.hip")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	args := []string{"emit", "rowwise_cast", "--target", "sm_90", "--shape", "M=4,K=64", "-o", link}
	code, _, errs := fp8gen(t, args...)
	want(t, args, code, 0, errs)
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink was replaced: %v %v", fi, err)
	}
	if b, _ := os.ReadFile(real); !strings.Contains(string(b), "rowwise_cast") {
		t.Errorf("the link's target holds %q", b)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	args[len(args)-1] = fifo
	code, _, errs = fp8gen(t, args...)
	want(t, args, code, 2, errs, "not a regular file")
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v %v", fi, err)
	}
	args[len(args)-1] = dir
	code, _, errs = fp8gen(t, args...)
	want(t, args, code, 2, errs, "is a folder")
}

// --out that is a file, or under a file, is refused before the run, and
// nothing is written.
func TestRunOutChecksFirst(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{file, filepath.Join(file, "sub")} {
		args := cpu("run", "rowwise_cast", "--shape", "M=4,K=64", "--out", out)
		code, stdout, errs := fp8gen(t, args...)
		want(t, args, code, 2, errs, "--out")
		if stdout != "" {
			t.Errorf("fp8gen %v: ran anyway: %q", args, stdout)
		}
	}
	if b, _ := os.ReadFile(file); string(b) != "keep\n" {
		t.Errorf("the file now holds %q", b)
	}
	// A good --out gets every output; the probe file is gone.
	out := filepath.Join(dir, "out")
	args := cpu("run", "tensorwise_cast", "--shape", "M=4,K=64", "--out", out)
	code, stdout, errs := fp8gen(t, args...)
	want(t, args, code, 0, stdout+errs, "wrote 2 outputs")
	ents, _ := os.ReadDir(out)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "inv_scale.npy q.npy" {
		t.Errorf("--out holds %v", names)
	}
}

// A bad flag value is one line, not the usage between two copies of the error.
func TestBadFlagIsOneLine(t *testing.T) {
	for _, args := range [][]string{{"run", "--seed", "x"}, {"bench", "--iters", "many"}, {"emit", "--nosuch"}} {
		code, _, errs := fp8gen(t, args...)
		if code != 2 || strings.Count(strings.TrimSpace(errs), "\n") != 0 || errs == "" {
			t.Errorf("fp8gen %v: exit %d, stderr %q; want 2 and one line", args, code, errs)
		}
	}
}

// bench checks its flags before it looks for a GPU.
func TestBenchFlagsBeforeGPU(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--ops", "nosuch"}, `unknown op "nosuch"`},
		{[]string{"bench", "--ops", "rowwise_cast", "--shapes", "12"}, `"12" is not MxK`},
		{[]string{"bench", "--peers", "sometimes"}, `--peers "sometimes"`},
		{[]string{"bench", "--plot", "sometimes"}, `--plot "sometimes"`},
		{[]string{"bench", "--iters", "0"}, "iters ≥ 1"},
		{[]string{"bench", "--ops", "rowwise_cast", "--opt", "layout=nk"}, "unknown option layout"},
		{[]string{"bench", "--ops", "expert_colwise_cast", "--opt", "layout=kt"}, "want one of kn, nk"},
		{[]string{"bench", "--ops", "expert_colwise_cast", "--opt", "layout"}, `"layout": want NAME=VALUE`},
		{[]string{"bench", "--ops", "expert_colwise_cast", "--opt", "layout=nk", "--opt", "layout=kn"}, "layout given twice"},
	} {
		code, _, errs := fp8gen(t, tt.args...)
		want(t, tt.args, code, 2, errs, tt.want)
	}
}
