package runtime

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The JIT cache's promises: an entry is whole or absent whatever kills the
// writer, a damaged entry is found by its hash and rebuilt, and a compiler
// that hangs or crashes gives a clear error and leaves nothing behind.

func TestCacheEntryRoundTrip(t *testing.T) {
	for _, c := range []struct {
		bin []byte
		log string
	}{{[]byte("IMAGE"), ""}, {[]byte{0, 1, 2, '\n', '\n'}, "ptxas info\n\nmore\n"}, {bytes.Repeat([]byte{0xff}, 1<<16), "x"}} {
		bin, log, err := decodeEntry(encodeEntry(c.bin, c.log))
		if err != nil || !bytes.Equal(bin, c.bin) || log != c.log {
			t.Errorf("round trip of %d-byte image, log %q: %q, %q, %v", len(c.bin), c.log, bin, log, err)
		}
	}
}

// Every kind of damage to an entry is noticed, named, and repaired by a
// fresh compile.
func TestCacheCorruptEntryRebuilt(t *testing.T) {
	f := newFake(t)
	t.Setenv("NVCC", f.script)
	t.Setenv("FAKE_SLEEP", "0")
	dir := t.TempDir()
	c := &Compiler{CacheDir: dir}
	tgt := lookup(t, "sm_90")
	want := []byte("IMAGE\n" + goodSrc)
	_, info, err := c.Compile(context.Background(), goodSrc, tgt, "k1")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, info.Key+".jit")
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// hashDigit changes one hex digit of the header's hash to another.
	hashDigit := func(b []byte) []byte {
		b = bytes.Clone(b)
		i := len(entryMagic) + len("\nsha256 ") + 10
		if b[i] == '0' {
			b[i] = '1'
		} else {
			b[i] = '0'
		}
		return b
	}
	flip := func(i int) []byte {
		b := bytes.Clone(good)
		b[i] ^= 0x10
		return b
	}
	for _, d := range []struct {
		name   string
		data   []byte
		reason string
	}{
		{"a bit flipped in the image", flip(len(good) - 3), "corrupt"},
		{"a bit flipped in the log", flip(len(good) - len(want) - 5), "corrupt"},
		{"a digit changed in the hash", hashDigit(good), "corrupt"},
		{"truncated by a byte", good[:len(good)-1], "the file holds"},
		{"a byte appended", append(bytes.Clone(good), 0), "the file holds"},
		{"empty", nil, "no entry header"},
		{"the header only", good[:bytes.Index(good, []byte("\n\n"))+2], "the file holds"},
		{"another program's file", []byte("\x7fELF\x02\x01\x01\n\nnot ours"), "bad entry header"},
		{"a length that overflows", []byte(entryMagic + "\nsha256 " + strings.Repeat("0", 64) + "\nlog 9223372036854775807\nimage 2\n\nxx"), "the file holds"},
	} {
		t.Run(d.name, func(t *testing.T) {
			if err := os.WriteFile(path, d.data, 0o644); err != nil {
				t.Fatal(err)
			}
			runs := f.runs(t)
			bin, info, err := c.Compile(context.Background(), goodSrc, tgt, "k1")
			if err != nil {
				t.Fatal(err)
			}
			if info.Hit || !strings.Contains(info.Rebuilt, d.reason) || !strings.Contains(info.Rebuilt, path) {
				t.Errorf("hit %v, rebuilt %q; want a rebuild naming %s and %q", info.Hit, info.Rebuilt, path, d.reason)
			}
			if !bytes.Equal(bin, want) || f.runs(t) != runs+1 {
				t.Errorf("image %q after %d compiler runs; want %q after 1", bin, f.runs(t)-runs, want)
			}
			// The rebuild repaired the entry.
			if _, info, err := c.Compile(context.Background(), goodSrc, tgt, "k1"); err != nil || !info.Hit || info.Rebuilt != "" {
				t.Errorf("after the rebuild: hit %v, rebuilt %q, %v", info.Hit, info.Rebuilt, err)
			}
		})
	}
}

// TestJITKillHelper is the process the kill tests kill: it compiles once,
// against the cache and fake compiler its environment names, and with
// FP8GEN_KILL_MIDWRITE it says on stdout when it is halfway through
// writing the entry, and stops there ("stop") or goes on ("go on"). Run
// alone it does nothing.
func TestJITKillHelper(t *testing.T) {
	dir := os.Getenv("FP8GEN_KILL_HELPER")
	if dir == "" {
		t.Skip("helper process of TestCacheSurvivesKill")
	}
	switch os.Getenv("FP8GEN_KILL_MIDWRITE") {
	case "stop":
		testHookMidWrite = func() {
			fmt.Println("MIDWRITE")
			time.Sleep(time.Minute)
		}
	case "go on":
		testHookMidWrite = func() { fmt.Println("MIDWRITE") }
	}
	src, _ := os.ReadFile(os.Getenv("FP8GEN_KILL_SRC"))
	if _, _, err := (&Compiler{CacheDir: dir}).Compile(context.Background(), string(src), lookup(t, "sm_90"), "k1"); err != nil {
		t.Fatal(err)
	}
	fmt.Println("DONE")
}

// killHelper starts TestJITKillHelper over dir with src.
func killHelper(t *testing.T, dir, srcFile, midWrite string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestJITKillHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), "FP8GEN_KILL_HELPER="+dir, "FP8GEN_KILL_SRC="+srcFile, "FP8GEN_KILL_MIDWRITE="+midWrite)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, bufio.NewScanner(out)
}

// A process killed with SIGKILL in the middle of writing an entry leaves
// no entry that loads, and the next compile rebuilds it; the half-written
// temporary file goes once it is stale. Then kills at random moments:
// whatever they leave, the cache gives the right image.
func TestCacheSurvivesKill(t *testing.T) {
	f := newFake(t)
	t.Setenv("NVCC", f.script)
	t.Setenv("TMPDIR", t.TempDir()) // the killed helper's work folders
	tgt := lookup(t, "sm_90")
	// A 4 MiB source makes a 4 MiB image, long enough to write that random
	// kills land in the write too.
	src := goodSrc + "//" + strings.Repeat("x", 4<<20) + "\n"
	srcFile := filepath.Join(t.TempDir(), "src")
	if err := os.WriteFile(srcFile, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	want := []byte("IMAGE\n" + src)

	t.Run("mid-write", func(t *testing.T) {
		dir := t.TempDir()
		cmd, out := killHelper(t, dir, srcFile, "stop")
		for out.Scan() && out.Text() != "MIDWRITE" {
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
			t.Fatalf("helper: %v, want killed", err)
		}
		files := cacheFiles(t, dir)
		if len(files) != 1 || !strings.Contains(files[0], ".tmp-") {
			t.Fatalf("after a kill mid-write the cache holds %v; want one temporary file", files)
		}
		if fi, _ := os.Stat(filepath.Join(dir, files[0])); fi == nil || fi.Size() == 0 || fi.Size() >= int64(len(want)) {
			t.Fatalf("the temporary file is not half an entry: %v", fi)
		}
		bin, info, err := (&Compiler{CacheDir: dir}).Compile(context.Background(), src, tgt, "k1")
		if err != nil || info.Hit || !bytes.Equal(bin, want) {
			t.Fatalf("after the kill: hit %v, right image %v, %v", info.Hit, bytes.Equal(bin, want), err)
		}
		// Fresh, the leftover stays (it could be a live writer's); stale,
		// the next miss removes it.
		tmp := filepath.Join(dir, files[0])
		if _, err := os.Stat(tmp); err != nil {
			t.Fatalf("a fresh temporary file was removed: %v", err)
		}
		old := time.Now().Add(-2 * staleAfter)
		if err := os.Chtimes(tmp, old, old); err != nil {
			t.Fatal(err)
		}
		if _, _, err := (&Compiler{CacheDir: dir}).Compile(context.Background(), goodSrc, tgt, "k1"); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("stale temporary file still there: %v", err)
		}
	})

	t.Run("random", func(t *testing.T) {
		t.Setenv("FAKE_SLEEP", "0")
		// How long the second half of the write and the rename take; the
		// kills spread from the middle of the write to past its end.
		var rest time.Duration
		for range 3 {
			cmd, out := killHelper(t, t.TempDir(), srcFile, "go on")
			for out.Scan() && out.Text() != "MIDWRITE" {
			}
			mid := time.Now()
			for out.Scan() && out.Text() != "DONE" {
			}
			rest = max(rest, time.Since(mid))
			if err := cmd.Wait(); err != nil {
				t.Fatal(err)
			}
		}
		r := rand.New(rand.NewPCG(3, 4))
		outcomes := map[string]int{}
		const kills = 12
		for i := range kills {
			dir := t.TempDir()
			cmd, out := killHelper(t, dir, srcFile, "go on")
			for out.Scan() && out.Text() != "MIDWRITE" {
			}
			go func() {
				for out.Scan() {
				}
			}()
			time.Sleep(time.Duration(r.Float64() * 1.2 * float64(rest)))
			cmd.Process.Signal(syscall.SIGKILL)
			err := cmd.Wait()
			e := entry{dir: dir, key: cacheKeyOf(t, src, tgt.Name)}
			bin, _, bad := e.read()
			switch {
			case bad != "":
				t.Fatalf("kill %d left an entry that does not load: %s", i, bad)
			case bin != nil && !bytes.Equal(bin, want):
				t.Fatalf("kill %d left an entry with the wrong image", i)
			case bin != nil:
				outcomes["entry complete"]++
			case len(cacheFiles(t, dir)) > 0:
				outcomes["temporary file only"]++
			default:
				t.Fatalf("kill %d: neither an entry nor a temporary file after MIDWRITE", i)
			}
			if err == nil {
				outcomes["helper finished first"]++
			}
			got, _, err := (&Compiler{CacheDir: dir}).Compile(context.Background(), src, tgt, "k1")
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("compile after kill %d: right image %v, %v", i, bytes.Equal(got, want), err)
			}
		}
		t.Logf("%d kills over the %v from mid-write to exit: %v", kills, rest, outcomes)
	})
}

// cacheKeyOf is the key Compile uses for src with the fake compiler.
func cacheKeyOf(t *testing.T, src, targetName string) string {
	t.Helper()
	tool, err := findTool(toolchainFor(lookup(t, targetName).Vendor))
	if err != nil {
		t.Fatal(err)
	}
	ver, err := toolVersion(context.Background(), tool, "", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return cacheKey(src, targetName, tool, ver, compileFlags(lookup(t, targetName)))
}

// A hung compiler is killed at the time limit, its children with it, and
// the error says what hung and how to allow longer.
func TestCompilerTimeout(t *testing.T) {
	f := newFake(t)
	t.Setenv("NVCC", f.script)
	tgt := lookup(t, "sm_90")
	// The version first, so that the hang below is in the compile.
	if _, err := toolVersion(context.Background(), f.script, "", time.Minute); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	t.Setenv("FAKE_HANG", pidFile)
	dir := t.TempDir()
	start := time.Now()
	_, _, err := (&Compiler{CacheDir: dir, Timeout: 500 * time.Millisecond}).Compile(context.Background(), goodSrc, tgt, "k1")
	took := time.Since(start)
	t.Logf("error after %v:\n%v", took, err)
	if !errors.Is(err, ErrCompilerTimeout) {
		t.Fatalf("want ErrCompilerTimeout, got %v", err)
	}
	for _, w := range []string{"fakecc compiling k1 for sm_90", "killed after 500ms", "FP8GEN_JIT_TIMEOUT", "fake: hanging"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q", w)
		}
	}
	if took > 4*time.Second {
		t.Errorf("took %v: the hung child kept the compile waiting", took)
	}
	pid := 0
	if b, err := os.ReadFile(pidFile); err == nil {
		fmt.Sscan(string(b), &pid)
	}
	if pid == 0 {
		t.Fatal("the fake compiler did not record its child")
	}
	if outlives(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the compiler's child %d outlived the timeout", pid)
	}
	if files := cacheFiles(t, dir); len(files) != 0 {
		t.Errorf("a timed-out compile left %v in the cache", files)
	}

	// $FP8GEN_JIT_TIMEOUT sets the limit; a bad value is refused by name.
	t.Setenv("FP8GEN_JIT_TIMEOUT", "300ms")
	if _, _, err := (&Compiler{CacheDir: dir}).Compile(context.Background(), goodSrc, tgt, "k1"); !errors.Is(err, ErrCompilerTimeout) || !strings.Contains(err.Error(), "300ms") {
		t.Errorf("FP8GEN_JIT_TIMEOUT=300ms: %v", err)
	}
	for _, bad := range []string{"soon", "-1s", "0"} {
		t.Setenv("FP8GEN_JIT_TIMEOUT", bad)
		_, _, err := (&Compiler{CacheDir: dir}).Compile(context.Background(), goodSrc, tgt, "k1")
		if err == nil || !strings.Contains(err.Error(), "FP8GEN_JIT_TIMEOUT="+fmt.Sprintf("%q", bad)) {
			t.Errorf("FP8GEN_JIT_TIMEOUT=%s: %v", bad, err)
		}
	}
}

// outlives reports whether pid is still running 2 s from now: a SIGKILL
// is delivered asynchronously, so a process just killed may still run for
// a moment after its killer has returned.
func outlives(pid int) bool {
	for range 100 {
		if !alive(pid) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// alive reports whether pid is a process that has not exited (a zombie
// waiting for its parent to reap it counts as exited).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	// pid (comm) STATE ...: the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z' && s[i+2] != 'X'
}

func TestCompilerVersionTimeout(t *testing.T) {
	f := newFake(t)
	t.Setenv("NVCC", f.script)
	t.Setenv("FAKE_HANG_VERSION", "1")
	_, _, err := (&Compiler{CacheDir: t.TempDir(), Timeout: 300 * time.Millisecond}).Compile(context.Background(), goodSrc, lookup(t, "sm_90"), "k1")
	if !errors.Is(err, ErrCompilerTimeout) || !strings.Contains(err.Error(), "--version") {
		t.Errorf("a compiler hanging in --version: %v", err)
	}
}

// A compiler that dies of a signal is a compile error naming the signal;
// nothing is cached and the next call tries again.
func TestCompilerCrash(t *testing.T) {
	f := newFake(t)
	t.Setenv("NVCC", f.script)
	t.Setenv("FAKE_CRASH", "1")
	dir := t.TempDir()
	for range 2 {
		_, _, err := (&Compiler{CacheDir: dir}).Compile(context.Background(), goodSrc, lookup(t, "sm_90"), "k1")
		var ce *CompileError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "signal: segmentation fault") {
			t.Fatalf("crashing compiler: %v", err)
		}
	}
	if n := f.runs(t); n != 2 {
		t.Errorf("compiler ran %d times for two crashing calls", n)
	}
	if files := cacheFiles(t, dir); len(files) != 0 {
		t.Errorf("a crashed compile left %v in the cache", files)
	}
}

// readPid waits up to a few seconds for a pid written to file.
func readPid(t *testing.T, file string) int {
	t.Helper()
	for range 200 {
		if b, err := os.ReadFile(file); err == nil {
			pid := 0
			if _, err := fmt.Sscan(string(b), &pid); err == nil && pid > 0 {
				return pid
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no pid in %s", file)
	return 0
}

// A compiler that succeeds but leaves a child behind (holding stderr) is a
// success, at once, and the child is killed with its group.
func TestCompilerStraggler(t *testing.T) {
	f := newFake(t)
	t.Setenv("NVCC", f.script)
	t.Setenv("FAKE_SLEEP", "0")
	pidFile := filepath.Join(t.TempDir(), "pid")
	t.Setenv("FAKE_STRAGGLER", pidFile)
	start := time.Now()
	bin, _, err := (&Compiler{CacheDir: t.TempDir()}).Compile(context.Background(), goodSrc, lookup(t, "sm_90"), "k1")
	if err != nil || !bytes.Equal(bin, []byte("IMAGE\n"+goodSrc)) {
		t.Fatalf("compile with a straggler: %q, %v", bin, err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %v: the straggler held the compile up", d)
	}
	pid := readPid(t, pidFile)
	time.Sleep(50 * time.Millisecond)
	if outlives(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the compiler's child %d outlived the compile", pid)
	}
}

// KillCompilers, which the command line calls when SIGINT or SIGTERM stops
// it, kills a running compiler and its children: they sit in a process
// group of their own, which the signal to the program's group misses.
func TestKillCompilers(t *testing.T) {
	f := newFake(t)
	t.Setenv("NVCC", f.script)
	if _, err := toolVersion(context.Background(), f.script, "", time.Minute); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	t.Setenv("FAKE_HANG", pidFile)
	errc := make(chan error, 1)
	go func() {
		_, _, err := (&Compiler{CacheDir: t.TempDir()}).Compile(context.Background(), goodSrc, lookup(t, "sm_90"), "k1")
		errc <- err
	}()
	pid := readPid(t, pidFile)
	KillCompilers()
	select {
	case err := <-errc:
		var ce *CompileError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "killed") {
			t.Errorf("compile after KillCompilers: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the compile still runs 5 s after KillCompilers")
	}
	if outlives(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the compiler's child %d outlived KillCompilers", pid)
	}
}

// The compiler's --version is asked once per JIT cache, not once per
// process (a tuning cache hit must not wait for nvcc), and asked again
// when the compiler file changes.
func TestToolVersionKeptOnDisk(t *testing.T) {
	bin := t.TempDir()
	script, log := filepath.Join(bin, "cc"), filepath.Join(bin, "log")
	write := func(release string, mtime time.Time) {
		body := "#!/bin/sh\necho asked >> '" + log + "'\necho 'Cuda compilation tools, release " + release + "'\n"
		if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(script, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	asked := func() int {
		b, _ := os.ReadFile(log)
		return strings.Count(string(b), "asked\n")
	}
	newProcess := func() {
		versions.Lock()
		clear(versions.m)
		versions.Unlock()
	}
	dir := t.TempDir()
	write("1.0", time.Unix(1e9, 0))
	for i, want := range []int{1, 1, 1} {
		newProcess()
		v, err := toolVersion(context.Background(), script, dir, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(v, "release 1.0") || asked() != want {
			t.Fatalf("call %d: version %q after %d runs of --version, want release 1.0 after %d", i, v, asked(), want)
		}
	}
	write("2.0", time.Unix(2e9, 0)) // same size, another mtime: a new compiler
	newProcess()
	if v, err := toolVersion(context.Background(), script, dir, time.Minute); err != nil || !strings.Contains(v, "release 2.0") || asked() != 2 {
		t.Fatalf("replaced compiler: version %q, err %v, %d runs of --version (want release 2.0, 2 runs)", v, err, asked())
	}
	// No cache folder: asked each process.
	newProcess()
	if _, err := toolVersion(context.Background(), script, "", time.Minute); err != nil || asked() != 3 {
		t.Fatalf("no cache folder: err %v, %d runs of --version, want 3", err, asked())
	}
	// Another environment (hipcc finds its clang through ROCM_PATH): asked
	// again, and the first environment's memo still answers it.
	t.Setenv("ROCM_PATH", "/opt/rocm-other")
	newProcess()
	if _, err := toolVersion(context.Background(), script, dir, time.Minute); err != nil || asked() != 4 {
		t.Fatalf("another environment: err %v, %d runs of --version, want 4", err, asked())
	}
	// A memo cut short or edited is not trusted.
	memos, _ := filepath.Glob(filepath.Join(dir, "tool-versions", "*"))
	if len(memos) != 3 {
		t.Fatalf("memos %v, want 3 (two compilers, two environments of the second)", memos)
	}
	for _, m := range memos {
		b, _ := os.ReadFile(m)
		if err := os.WriteFile(m, []byte(strings.Replace(string(b), "release", "rElease", 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	newProcess()
	if v, err := toolVersion(context.Background(), script, dir, time.Minute); err != nil || asked() != 5 || !strings.Contains(v, "release 2.0") {
		t.Fatalf("edited memo: version %q, err %v, %d runs of --version, want release 2.0 after 5", v, err, asked())
	}
}
