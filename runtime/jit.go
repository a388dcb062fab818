package runtime

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
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
}

// CompileInfo describes one Compile call.
type CompileInfo struct {
	Hit         bool          // the image came from the cache
	Duration    time.Duration // wall time of the call, hit or miss
	Key         string        // cache key (hex sha256)
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

// compileFlags are the flags before "-o OUT SRC". Contraction is off so
// device arithmetic matches the Go references bit for bit.
func compileFlags(t *target.Target) []string {
	if t.Vendor == target.NVIDIA {
		return []string{"--cubin", "-arch=" + t.Name, "-O3", "--fmad=false", "-Xptxas", "-v"}
	}
	return []string{"--genco", "--offload-arch=" + t.Name, "-O3", "-ffp-contract=off", "-fno-gpu-flush-denormals-to-zero"}
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

// toolVersion runs `tool --version` once per process per (path, size,
// mtime), so a replaced compiler is noticed.
var versions = struct {
	sync.Mutex
	m map[versionKey]string
}{m: map[versionKey]string{}}

type versionKey struct {
	path  string
	size  int64
	mtime time.Time
}

func toolVersion(ctx context.Context, tool string) (string, error) {
	st, err := os.Stat(tool)
	if err != nil {
		return "", fmt.Errorf("runtime: %w", err)
	}
	k := versionKey{tool, st.Size(), st.ModTime()}
	versions.Lock()
	defer versions.Unlock()
	if v, ok := versions.m[k]; ok {
		return v, nil
	}
	out, err := exec.CommandContext(ctx, tool, "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("runtime: %s --version: %v: %s", tool, err, bytes.TrimSpace(out))
	}
	v := strings.TrimSpace(string(out))
	versions.m[k] = v
	return v, nil
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
	field("fp8gen-jit-1")
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
	ver, err := toolVersion(ctx, tool)
	if err != nil {
		return nil, info, err
	}
	flags := compileFlags(t)
	key := cacheKey(src, t.Name, tool, ver, flags)
	info = CompileInfo{Key: key, Tool: tool, ToolVersion: versionLine(ver)}
	dir, err := c.dir()
	if err != nil {
		return nil, info, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, info, fmt.Errorf("runtime: JIT cache: %w", err)
	}
	e := entry{dir: dir, key: key, ext: tc.outExt}
	if bin, ok := e.read(); ok {
		info.Hit, info.Log, info.Duration = true, e.log(), time.Since(start)
		return bin, info, nil
	}
	job := compileJob{tool: tool, flags: flags, tc: tc, src: src, kernel: kernelName, target: t.Name, entry: e}
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

// entry is one cache entry: KEY.cubin (or .hsaco) and KEY.log. The log is
// written first and the image last, each by rename, so a present image is
// a complete entry.
type entry struct{ dir, key, ext string }

func (e entry) path() string    { return filepath.Join(e.dir, e.key+e.ext) }
func (e entry) logPath() string { return filepath.Join(e.dir, e.key+".log") }

func (e entry) read() ([]byte, bool) {
	b, err := os.ReadFile(e.path())
	return b, err == nil && len(b) > 0
}

func (e entry) log() string {
	b, _ := os.ReadFile(e.logPath())
	return string(b)
}

func (e entry) write(bin []byte, log string) error {
	if err := writeAtomic(e.dir, e.key+".log", []byte(log)); err != nil {
		return err
	}
	return writeAtomic(e.dir, e.key+e.ext, bin)
}

// writeAtomic writes dir/name so that readers see the whole file or none;
// an interrupted write leaves at most a hidden temporary file no reader opens.
func writeAtomic(dir, name string, data []byte) error {
	if err := atomicfile.WriteFile(filepath.Join(dir, name), data); err != nil {
		return fmt.Errorf("runtime: JIT cache: writing %s: %w", filepath.Join(dir, name), err)
	}
	return nil
}

// ---- one compilation, shared by concurrent callers ----

type flightResult struct {
	bin []byte
	log string
	hit bool
	err error
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
}

func (j compileJob) run(ctx context.Context) flightResult {
	// Another process may have written the entry since we looked.
	if bin, ok := j.entry.read(); ok {
		return flightResult{bin: bin, log: j.entry.log(), hit: true}
	}
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
	cmd := exec.CommandContext(ctx, j.tool, args...)
	cmd.Dir = work // messages then name the source k.cu / k.hip
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	log := stderr.String()
	if s := strings.TrimSpace(stdout.String()); s != "" {
		log = strings.TrimRight(log, "\n") + "\n" + s + "\n"
	}
	if ctx.Err() != nil {
		return flightResult{log: log, err: fmt.Errorf("runtime: compiling %s for %s: %w", j.kernel, j.target, ctx.Err())}
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
