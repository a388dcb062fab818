package runtime

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fp8gen/fp8gen/internal/atomicfile"
	"github.com/fp8gen/fp8gen/target"
)

// Compiler JIT-compiles kernel source with nvcc (NVIDIA targets) or hipcc
// (AMD targets) and keeps the images in an on-disk cache. The zero value
// (and a nil *Compiler) uses the default cache directory. A Compiler holds
// no state of its own and may be copied and shared between goroutines.
type Compiler struct {
	// CacheDir holds compiled images. Empty means $FP8GEN_CACHE, or else
	// os.UserCacheDir()/fp8gen/jit.
	CacheDir string
	// Timeout bounds each run of the compiler; one that runs longer is
	// killed, with its children. Zero means $FP8GEN_JIT_TIMEOUT (a Go
	// duration, "90s"), or else DefaultTimeout.
	Timeout time.Duration
}

// DefaultTimeout is how long a compile may take unless told otherwise:
// an fp8gen kernel compiles in seconds, so a compiler still running after
// this has hung.
const DefaultTimeout = 5 * time.Minute

func (c *Compiler) timeout() (time.Duration, error) {
	if c != nil && c.Timeout > 0 {
		return c.Timeout, nil
	}
	v := os.Getenv("FP8GEN_JIT_TIMEOUT")
	if v == "" {
		return DefaultTimeout, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("runtime: $FP8GEN_JIT_TIMEOUT=%q is not a positive duration (like 90s or 10m)", v)
	}
	return d, nil
}

// CompileInfo describes one Compile call.
type CompileInfo struct {
	Hit         bool          // the image came from the cache
	Duration    time.Duration // wall time of the call, hit or miss
	Key         string        // cache key (hex sha256)
	Rebuilt     string        // why a cache entry that was there could not be used ("" if none was, or it was)
	Tool        string        // compiler path
	ToolVersion string        // the telling line of `tool --version`
	Log         string        // compiler stderr (e.g. ptxas -v), kept with the cache entry
}

// ErrNoCompiler is wrapped when neither the environment nor the usual
// places provide the compiler a target needs.
var ErrNoCompiler = errors.New("runtime: no GPU compiler found")

// Install locations tried after the environment and PATH (variables so
// that tests can point them elsewhere).
var (
	nvccDefaults  = []string{"/usr/local/cuda/bin/nvcc"}
	hipccDefaults = []string{"/opt/rocm/bin/hipcc"}
)

// toolchain is how one vendor's kernels are compiled.
type toolchain struct {
	tool     string // executable name
	env      string // variable naming the executable
	rootEnv  string // variable naming the install root (root/bin/tool)
	defaults []string
	srcExt   string // nvcc picks the language from the suffix
	outExt   string
}

func toolchainFor(v target.Vendor) toolchain {
	if v == target.NVIDIA {
		return toolchain{tool: "nvcc", env: "NVCC", rootEnv: "CUDA_PATH", defaults: nvccDefaults, srcExt: ".cu", outExt: ".cubin"}
	}
	return toolchain{tool: "hipcc", env: "HIPCC", rootEnv: "ROCM_PATH", defaults: hipccDefaults, srcExt: ".hip", outExt: ".hsaco"}
}

// NumericsFlags are the compiler flags the emitted source needs to
// compute what the interpreter computes: no contraction into fused
// multiply-adds, subnormals kept. An export's manifest names them for
// other programs that compile its source.
func NumericsFlags(t *target.Target) []string {
	if t.Vendor == target.NVIDIA {
		// nvcc's defaults but --fmad, spelled out: --use_fast_math in a
		// consumer's build would turn them all off.
		return []string{"-O3", "--fmad=false", "-ftz=false", "-prec-div=true", "-prec-sqrt=true"}
	}
	return []string{"-O3", "-ffp-contract=off", "-fno-gpu-flush-denormals-to-zero"}
}

// compileFlags are the flags before "-o OUT SRC".
func compileFlags(t *target.Target) []string {
	if t.Vendor == target.NVIDIA {
		return append(append([]string{"--cubin", "-arch=" + t.Name}, NumericsFlags(t)...), "-Xptxas", "-v")
	}
	return append([]string{"--genco", "--offload-arch=" + t.Name}, NumericsFlags(t)...)
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// findTool locates the compiler: $NVCC, $CUDA_PATH/bin/nvcc, nvcc in PATH,
// then the install defaults (hipcc likewise with HIPCC and ROCM_PATH). A set
// but unusable $NVCC/$HIPCC is an error rather than silently skipped.
func findTool(tc toolchain) (string, error) {
	if v := os.Getenv(tc.env); v != "" {
		p, err := exec.LookPath(v)
		if err != nil {
			return "", fmt.Errorf("%w: $%s=%s is not an executable: %v", ErrNoCompiler, tc.env, v, err)
		}
		return filepath.Abs(p)
	}
	tried := []string{"$" + tc.env + " (unset)"}
	if root := os.Getenv(tc.rootEnv); root != "" {
		p := filepath.Join(root, "bin", tc.tool)
		if isExecutable(p) {
			return filepath.Abs(p)
		}
		tried = append(tried, fmt.Sprintf("$%s/bin/%s = %s (not found)", tc.rootEnv, tc.tool, p))
	} else {
		tried = append(tried, fmt.Sprintf("$%s/bin/%s ($%s unset)", tc.rootEnv, tc.tool, tc.rootEnv))
	}
	if p, err := exec.LookPath(tc.tool); err == nil {
		return filepath.Abs(p)
	}
	tried = append(tried, tc.tool+" in $PATH (not found)")
	for _, p := range tc.defaults {
		if isExecutable(p) {
			return p, nil
		}
		tried = append(tried, p+" (not found)")
	}
	return "", fmt.Errorf("%w: no %s: tried %s", ErrNoCompiler, tc.tool, strings.Join(tried, ", "))
}

// versions are the --version answers this process has, by compiler file.
var versions = struct {
	sync.Mutex
	m map[versionKey]string
}{m: map[versionKey]string{}}

type versionKey struct {
	path  string
	size  int64
	mtime time.Time
}

// toolVersion runs `tool --version` once per (path, size, mtime), so a
// replaced compiler is noticed: once per process, and where dir is not
// empty once per JIT cache, whose tool-versions folder keeps the answer
// (nvcc --version takes longer than a tuning cache hit is allowed) in the
// cache entries' hash-checked form, so that an edited or cut memo is not
// trusted.
func toolVersion(ctx context.Context, tool, dir string, limit time.Duration) (string, error) {
	st, err := os.Stat(tool)
	if err != nil {
		return "", fmt.Errorf("runtime: %w", err)
	}
	k := versionKey{tool, st.Size(), st.ModTime()}
	remember := func(v string) {
		versions.Lock()
		versions.m[k] = v
		versions.Unlock()
	}
	versions.Lock()
	v, ok := versions.m[k]
	versions.Unlock()
	if ok {
		return v, nil
	}
	var memo string
	if dir != "" {
		memo = filepath.Join(dir, "tool-versions", versionMemoKey(k))
		if b, err := os.ReadFile(memo); err == nil {
			if text, _, err := decodeEntry(b); err == nil {
				remember(string(text))
				return string(text), nil
			}
		}
	}
	// Not under the lock: a hung compiler must not hold up other tools'
	// compiles (two callers may both ask; they get the same answer).
	var out bytes.Buffer
	if err := runTool(ctx, limit, exec.Command(tool, "--version"), &out, &out); err != nil {
		return "", fmt.Errorf("runtime: %s --version: %w: %s", tool, err, bytes.TrimSpace(out.Bytes()))
	}
	v = strings.TrimSpace(out.String())
	remember(v)
	if memo != "" && v != "" {
		// Best effort: a cache that cannot be written only costs the
		// next process another --version.
		if os.MkdirAll(filepath.Dir(memo), 0o755) == nil {
			_ = atomicfile.WriteFile(memo, encodeEntry([]byte(v), ""))
		}
	}
	return v, nil
}

// versionEnv are the variables a compiler's --version may read: hipcc is
// a script that finds its clang through them, and either may be a wrapper
// found through PATH. A memo is kept per their values too.
var versionEnv = []string{"PATH", "HIP_PATH", "ROCM_PATH", "HIP_CLANG_PATH", "HIP_PLATFORM", "CUDA_HOME", "CUDA_PATH"}

// versionMemoKey names a tool's --version memo: its path, size and
// modification time, and the environment it would run in.
func versionMemoKey(k versionKey) string {
	env := make([]string, 0, len(versionEnv))
	for _, n := range versionEnv {
		env = append(env, n+"="+os.Getenv(n))
	}
	return cacheKey(k.path, strconv.FormatInt(k.size, 10), k.mtime.UTC().Format(time.RFC3339Nano), "version memo", env)
}

// Identity names the compiler Compile would use for t: its file name (not
// its folder, so that one version installed anywhere is one identity) and
// the line of its --version output that names the version. A tuning result
// is kept per identity, since another compiler may favour another
// schedule.
func (c *Compiler) Identity(ctx context.Context, t *target.Target) (string, error) {
	tool, version, err := c.Tool(ctx, t.Vendor)
	if err != nil {
		return "", err
	}
	return filepath.Base(tool) + " " + version, nil
}

// Tool is the compiler Compile would use for vendor v's targets (nvcc or
// hipcc): its path, and the line of its --version output that names the
// version. The error wraps ErrNoCompiler where none is found.
func (c *Compiler) Tool(ctx context.Context, v target.Vendor) (path, version string, err error) {
	tool, err := findTool(toolchainFor(v))
	if err != nil {
		return "", "", err
	}
	limit, err := c.timeout()
	if err != nil {
		return tool, "", err
	}
	dir, _ := c.dir() // no cache folder: --version each process
	out, err := toolVersion(ctx, tool, dir, limit)
	if err != nil {
		return tool, "", err
	}
	return tool, versionLine(out), nil
}

// versionLine picks the line of a --version output that names the version
// ("Cuda compilation tools, release 13.0, V13.0.88", "HIP version: 5.2...").
func versionLine(v string) string {
	lines := strings.Split(v, "\n")
	for _, l := range lines {
		low := strings.ToLower(l)
		if strings.Contains(low, "release") || strings.Contains(low, "version") {
			return strings.TrimSpace(l)
		}
	}
	return strings.TrimSpace(lines[0])
}

// cacheKey hashes everything that determines the image. Fields are length
// prefixed so that no two different inputs hash the same bytes.
func cacheKey(src, targetName, tool, toolVersion string, flags []string) string {
	h := sha256.New()
	field := func(s string) {
		fmt.Fprintf(h, "%d:", len(s))
		h.Write([]byte(s))
	}
	field("fp8gen-jit-2")
	field(src)
	field(targetName)
	field(tool)
	field(toolVersion)
	field(strconv.Itoa(len(flags)))
	for _, f := range flags {
		field(f)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (c *Compiler) dir() (string, error) {
	if c != nil && c.CacheDir != "" {
		return c.CacheDir, nil
	}
	if v := os.Getenv("FP8GEN_CACHE"); v != "" {
		return v, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("runtime: no JIT cache directory (set FP8GEN_CACHE): %w", err)
	}
	return filepath.Join(base, "fp8gen", "jit"), nil
}

// Compile compiles src for t and returns the image for LoadModule. The
// result is cached on disk under a key of (source, target, compiler path
// and version, flags); concurrent calls for one key in a process compile
// once. kernelName names the kernel in messages and must occur in src.
func (c *Compiler) Compile(ctx context.Context, src string, t *target.Target, kernelName string) ([]byte, CompileInfo, error) {
	start := time.Now()
	var info CompileInfo
	if t == nil {
		return nil, info, errors.New("runtime: Compile: nil target")
	}
	if kernelName != "" && !hasIdent(src, kernelName) {
		return nil, info, fmt.Errorf("runtime: Compile: kernel %q does not occur in the source", kernelName)
	}
	tc := toolchainFor(t.Vendor)
	tool, err := findTool(tc)
	if err != nil {
		return nil, info, fmt.Errorf("%w (needed for target %s)", err, t.Name)
	}
	limit, err := c.timeout()
	if err != nil {
		return nil, info, err
	}
	dir, err := c.dir()
	if err != nil {
		return nil, info, err
	}
	ver, err := toolVersion(ctx, tool, dir, limit)
	if err != nil {
		return nil, info, err
	}
	flags := compileFlags(t)
	key := cacheKey(src, t.Name, tool, ver, flags)
	info = CompileInfo{Key: key, Tool: tool, ToolVersion: versionLine(ver)}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, info, fmt.Errorf("runtime: JIT cache: %w", err)
	}
	e := entry{dir: dir, key: key}
	bin, log, bad := e.read()
	if bad == "" && bin != nil {
		info.Hit, info.Log, info.Duration = true, log, time.Since(start)
		return bin, info, nil
	}
	info.Rebuilt = bad
	job := compileJob{tool: tool, flags: flags, tc: tc, src: src, kernel: kernelName, target: t.Name, entry: e, limit: limit}
	for {
		call, leader, err := flight(ctx, e.path(), func() flightResult { return job.run(ctx) })
		if err != nil {
			info.Duration = time.Since(start)
			return nil, info, err
		}
		if !leader && call.err != nil && isContextErr(call.err) && ctx.Err() == nil {
			continue // the leader's context ended, not ours: try again
		}
		info.Hit, info.Log, info.Duration = call.hit, call.log, time.Since(start)
		// The rebuild is the leader's to report, and a hit rebuilt nothing.
		info.Rebuilt = ""
		if leader && !call.hit {
			info.Rebuilt = call.rebuilt
		}
		if call.err != nil {
			return nil, info, call.err
		}
		if leader {
			return call.bin, info, nil
		}
		return bytes.Clone(call.bin), info, nil
	}
}

func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// hasIdent reports whether name occurs in src as a whole identifier.
func hasIdent(src, name string) bool {
	isID := func(c byte) bool {
		return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	for i := 0; ; {
		j := strings.Index(src[i:], name)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(name)
		if (j == 0 || !isID(src[j-1])) && (end == len(src) || !isID(src[end])) {
			return true
		}
		i = j + 1
	}
}

// ---- cache entries ----

// entry is one cache entry, the file KEY.jit: a header that gives the
// lengths of the compiler log and the image and the sha256 of both, then
// the log, then the image. It is written to a temporary file and renamed
// into place, so a reader sees a whole entry or none; the hash catches
// what rename cannot (a disk that flipped or lost bytes, an entry some
// other program truncated), and such an entry is rebuilt, not loaded.
type entry struct{ dir, key string }

const entryMagic = "fp8gen-jit-entry 2"

func (e entry) path() string { return filepath.Join(e.dir, e.key+".jit") }

// read returns the entry's image and log. bad says why an entry that is
// there cannot be used; a missing entry is nil, nil, "".
func (e entry) read() (bin []byte, log string, bad string) {
	b, err := os.ReadFile(e.path())
	if errors.Is(err, os.ErrNotExist) {
		return nil, "", ""
	}
	if err != nil {
		return nil, "", fmt.Sprintf("reading %s: %v", e.path(), err)
	}
	bin, log, err = decodeEntry(b)
	if err != nil {
		return nil, "", fmt.Sprintf("%s: %v", e.path(), err)
	}
	return bin, log, ""
}

func encodeEntry(bin []byte, log string) []byte {
	h := sha256.New()
	h.Write([]byte(log))
	h.Write(bin)
	head := fmt.Sprintf("%s\nsha256 %x\nlog %d\nimage %d\n\n", entryMagic, h.Sum(nil), len(log), len(bin))
	return slices.Concat([]byte(head), []byte(log), bin)
}

func decodeEntry(b []byte) (bin []byte, log string, err error) {
	var sum string
	var nlog, nbin int
	head, body, ok := bytes.Cut(b, []byte("\n\n"))
	if !ok {
		return nil, "", errors.New("no entry header")
	}
	if _, err := fmt.Sscanf(string(head), entryMagic+"\nsha256 %64s\nlog %d\nimage %d", &sum, &nlog, &nbin); err != nil {
		return nil, "", fmt.Errorf("bad entry header: %v", err)
	}
	if nlog < 0 || nbin <= 0 || nlog+nbin != len(body) {
		return nil, "", fmt.Errorf("header says %d + %d bytes, the file holds %d", nlog, nbin, len(body))
	}
	if got := fmt.Sprintf("%x", sha256.Sum256(body)); got != sum {
		return nil, "", fmt.Errorf("sha256 %s, the header says %s: the entry is corrupt", got, sum)
	}
	return body[nlog:], string(body[:nlog]), nil
}

// testHookMidWrite, if set, runs when half an entry has been written (a
// test kills the process there).
var testHookMidWrite func()

func (e entry) write(bin []byte, log string) error {
	data := encodeEntry(bin, log)
	err := atomicfile.Write(e.path(), func(w io.Writer) error {
		half := len(data) / 2
		if _, err := w.Write(data[:half]); err != nil {
			return err
		}
		if testHookMidWrite != nil {
			testHookMidWrite()
		}
		_, err := w.Write(data[half:])
		return err
	})
	if err != nil {
		return fmt.Errorf("runtime: JIT cache: writing %s: %w", e.path(), err)
	}
	return nil
}

// tempEntry names an entry's temporary file (atomicfile's ".NAME.tmp-*").
var tempEntry = regexp.MustCompile(`^\.[0-9a-f]{64}\.jit\.tmp-`)

// staleAfter is the age past which a temporary file in the cache is taken
// for the leftover of a killed writer and removed: a live writer renames
// its file within seconds.
const staleAfter = time.Hour

// sweep removes the cache's stale temporary files, the leftovers of
// writers that were killed. It is best effort: the cache works without it.
func sweep(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, d := range ents {
		if !tempEntry.MatchString(d.Name()) {
			continue // not ours: the cache directory may be shared
		}
		if fi, err := d.Info(); err == nil && time.Since(fi.ModTime()) > staleAfter {
			os.Remove(filepath.Join(dir, d.Name()))
		}
	}
}

// ---- one compilation, shared by concurrent callers ----

type flightResult struct {
	bin     []byte
	log     string
	hit     bool
	rebuilt string
	err     error
}

type flightCall struct {
	done chan struct{}
	flightResult
}

var flights = struct {
	sync.Mutex
	m map[string]*flightCall
}{m: map[string]*flightCall{}}

// flight runs fn once for concurrent callers with the same key: the first
// caller (the leader) runs it, the others wait for its result or for their
// own context to end.
func flight(ctx context.Context, key string, fn func() flightResult) (call *flightCall, leader bool, err error) {
	flights.Lock()
	if c, ok := flights.m[key]; ok {
		flights.Unlock()
		select {
		case <-c.done:
			return c, false, nil
		case <-ctx.Done():
			return nil, false, fmt.Errorf("runtime: waiting for a compile in flight: %w", ctx.Err())
		}
	}
	c := &flightCall{done: make(chan struct{})}
	flights.m[key] = c
	flights.Unlock()
	finished := false
	defer func() {
		if !finished { // fn panicked: release the waiters, then let the panic go on
			c.err = errors.New("runtime: compile panicked")
		}
		flights.Lock()
		delete(flights.m, key)
		flights.Unlock()
		close(c.done)
	}()
	c.flightResult = fn()
	finished = true
	return c, true, nil
}

type compileJob struct {
	tool   string
	flags  []string
	tc     toolchain
	src    string
	kernel string
	target string
	entry  entry
	limit  time.Duration
}

func (j compileJob) run(ctx context.Context) flightResult {
	// Another process may have written the entry since we looked.
	bin, log, bad := j.entry.read()
	if bad == "" && bin != nil {
		return flightResult{bin: bin, log: log, hit: true}
	}
	res := j.compile(ctx)
	res.rebuilt = bad
	sweep(j.entry.dir)
	return res
}

func (j compileJob) compile(ctx context.Context) flightResult {
	work, err := os.MkdirTemp("", "fp8gen-jit-")
	if err != nil {
		return flightResult{err: fmt.Errorf("runtime: %w", err)}
	}
	defer os.RemoveAll(work)
	srcName, outName := "k"+j.tc.srcExt, "k"+j.tc.outExt
	if err := os.WriteFile(filepath.Join(work, srcName), []byte(j.src), 0o644); err != nil {
		return flightResult{err: fmt.Errorf("runtime: %w", err)}
	}
	args := append(slices.Clone(j.flags), "-o", outName, srcName)
	cmd := exec.Command(j.tool, args...)
	cmd.Dir = work // messages then name the source k.cu / k.hip
	var stdout, stderr bytes.Buffer
	runErr := runTool(ctx, j.limit, cmd, &stdout, &stderr)
	log := stderr.String()
	if s := strings.TrimSpace(stdout.String()); s != "" {
		log = strings.TrimRight(log, "\n") + "\n" + s + "\n"
	}
	if ctx.Err() != nil {
		return flightResult{log: log, err: fmt.Errorf("runtime: compiling %s for %s: %w", j.kernel, j.target, ctx.Err())}
	}
	if errors.Is(runErr, ErrCompilerTimeout) {
		return flightResult{log: log, err: fmt.Errorf("runtime: %s compiling %s for %s: %w (%s); set FP8GEN_JIT_TIMEOUT to allow longer\n%s",
			filepath.Base(j.tool), j.kernel, j.target, runErr, strings.Join(args, " "), log)}
	}
	if runErr != nil {
		return flightResult{log: log, err: &CompileError{
			Tool: j.tool, Args: args, Target: j.target, Kernel: j.kernel, Err: runErr,
			Output: log, Source: quoteSource(j.src, log, srcName),
		}}
	}
	bin, err := os.ReadFile(filepath.Join(work, outName))
	if err != nil || len(bin) == 0 {
		return flightResult{log: log, err: fmt.Errorf("runtime: %s %s produced no %s (%v)\n%s",
			j.tool, strings.Join(args, " "), outName, err, log)}
	}
	if err := j.entry.write(bin, log); err != nil {
		return flightResult{log: log, err: fmt.Errorf("%w (set FP8GEN_CACHE to a writable directory)", err)}
	}
	return flightResult{bin: bin, log: log}
}

// ErrCompilerTimeout is wrapped when the compiler ran past its time limit
// and was killed.
var ErrCompilerTimeout = errors.New("the compiler did not finish in time")

// runTool runs cmd, its output to stdout and stderr, within limit and ctx.
// The compiler runs in a process group of its own, killed whole when the
// leader exits, times out or is cancelled: nvcc and hipcc run their work
// in child processes (cicc, ptxas, clang), which would otherwise live on.
// Output goes through files, not pipes, so a straggler holding them open
// cannot keep Wait from returning.
func runTool(ctx context.Context, limit time.Duration, cmd *exec.Cmd, stdout, stderr io.Writer) error {
	outF, err := os.CreateTemp("", "fp8gen-tool-out-")
	if err != nil {
		return err
	}
	defer os.Remove(outF.Name())
	defer outF.Close()
	errF, err := os.CreateTemp("", "fp8gen-tool-err-")
	if err != nil {
		return err
	}
	defer os.Remove(errF.Name())
	defer errF.Close()
	cmd.Stdout, cmd.Stderr = outF, errF
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := startTracked(cmd); err != nil {
		return err
	}
	pgid := cmd.Process.Pid
	defer untrack(pgid)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case err = <-done:
		syscall.Kill(-pgid, syscall.SIGKILL) // stragglers of a leader that is gone
	case <-ctx.Done():
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
		err = ctx.Err()
	case <-timer.C:
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
		err = fmt.Errorf("%w: killed after %v", ErrCompilerTimeout, limit)
	}
	for _, c := range []struct {
		f *os.File
		w io.Writer
	}{{outF, stdout}, {errF, stderr}} {
		if _, serr := c.f.Seek(0, io.SeekStart); serr == nil {
			io.Copy(c.w, c.f)
		}
	}
	return err
}

// The process groups of the compilers running now, so that a program
// stopped by a signal can take them with it (they are in groups of their
// own, which a signal to the program's group does not reach).
var live = struct {
	sync.Mutex
	groups map[int]bool
}{groups: map[int]bool{}}

func startTracked(cmd *exec.Cmd) error {
	live.Lock()
	defer live.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	live.groups[cmd.Process.Pid] = true
	return nil
}

func untrack(pgid int) {
	live.Lock()
	delete(live.groups, pgid)
	live.Unlock()
}

// KillCompilers kills every compiler this process is running, with its
// children. A command stopped by SIGINT or SIGTERM calls it before it
// exits.
func KillCompilers() {
	live.Lock()
	defer live.Unlock()
	for pgid := range live.groups {
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

// CompileError is a failed compilation: the compiler's messages and the
// source lines they point at.
type CompileError struct {
	Tool   string
	Args   []string
	Target string
	Kernel string
	Err    error  // how the compiler exited
	Output string // what it printed
	Source string // numbered source lines around each location in Output ("" if none)
}

// UnknownArch reports whether the compiler refused the architecture
// itself (an older hipcc knows no gfx942; an older nvcc no sm_90), not
// the source: the messages clang and nvcc print for that.
func (e *CompileError) UnknownArch() bool {
	for _, s := range []string{"invalid target ID", "Unsupported CUDA gpu architecture", "unsupported gpu architecture", "is not defined for option 'gpu-architecture'"} {
		if strings.Contains(e.Output, s) {
			return true
		}
	}
	return false
}

func (e *CompileError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "runtime: %s failed compiling %s for %s: %v\n", filepath.Base(e.Tool), e.Kernel, e.Target, e.Err)
	fmt.Fprintf(&b, "command: %s %s\n", e.Tool, strings.Join(e.Args, " "))
	b.WriteString(strings.TrimRight(e.Output, "\n"))
	if e.Source != "" {
		b.WriteString("\n")
		b.WriteString(e.Source)
	}
	return strings.TrimRight(b.String(), "\n")
}

func (e *CompileError) Unwrap() error { return e.Err }

// quoteSource finds the locations in output that point into file — nvcc
// writes "k.cu(12): error", clang "k.hip:12:5: error" — and quotes lines
// LINE-2..LINE+2 of src around each, numbered, the located lines marked >.
func quoteSource(src, output, file string) string {
	const maxLocations = 8
	re := regexp.MustCompile(`(?:^|[^\w.])` + regexp.QuoteMeta(file) + `(?:\((\d+)\)|:(\d+):)`)
	lines := strings.Split(strings.TrimSuffix(src, "\n"), "\n")
	marked := map[int]bool{}
	var nums []int
	for _, m := range re.FindAllStringSubmatch(output, -1) {
		s := m[1]
		if s == "" {
			s = m[2]
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > len(lines) || marked[n] {
			continue
		}
		marked[n] = true
		nums = append(nums, n)
		if len(nums) == maxLocations {
			break
		}
	}
	if len(nums) == 0 {
		return ""
	}
	slices.Sort(nums)
	width := len(strconv.Itoa(min(len(lines), nums[len(nums)-1]+2)))
	var b strings.Builder
	fmt.Fprintf(&b, "%s:\n", file)
	shown := 0 // last line printed
	for _, n := range nums {
		lo, hi := max(1, n-2), min(len(lines), n+2)
		if lo <= shown {
			lo = shown + 1
		} else if shown > 0 {
			b.WriteString("  ...\n")
		}
		for i := lo; i <= hi; i++ {
			mark := "  "
			if marked[i] {
				mark = "> "
			}
			fmt.Fprintf(&b, "%s%*d | %s\n", mark, width, i, lines[i-1])
		}
		shown = max(shown, hi)
	}
	return b.String()
}
