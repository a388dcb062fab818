package amdgpu

import (
	"bytes"
	"context"
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
)

// KernelInfo is what the compiler reports for one kernel.
type KernelInfo struct {
	Name         string // the symbol: the plain name for extern "C", else mangled
	VGPRs        int    // .vgpr_count
	SGPRs        int    // .sgpr_count
	AGPRs        int    // .agpr_count (0 where the target has none)
	LDSBytes     int    // .group_segment_fixed_size: static __shared__ memory
	VGPRSpills   int    // .vgpr_spill_count
	SGPRSpills   int    // .sgpr_spill_count
	PrivateBytes int    // .private_segment_fixed_size: scratch per lane
	Wavefront    int    // .wavefront_size
}

// Report is the result of compiling one HIP source for one architecture.
type Report struct {
	Arch    string
	Kernels []KernelInfo // in the order of the metadata note
	Disasm  string       // llvm-objdump -d output for the whole device ELF
	Log     string       // the compiler's diagnostics (warnings), temporary paths removed
}

// Kernel returns the kernel whose symbol is name.
func (r *Report) Kernel(name string) (KernelInfo, bool) {
	for _, k := range r.Kernels {
		if k.Name == name {
			return k, true
		}
	}
	return KernelInfo{}, false
}

// KernelDisasm returns the disassembly of the function named name, from its
// label line to the next label, without the s_nop padding that follows its
// last s_endpgm. It returns "" if there is no such function.
func (r *Report) KernelDisasm(name string) string {
	lines := strings.Split(r.Disasm, "\n")
	start := -1
	for i, l := range lines {
		if label, ok := labelName(l); ok && label == name {
			start = i
			break
		}
	}
	if start < 0 {
		return ""
	}
	end := len(lines)
	for i := start + 1; i < len(lines); i++ {
		if _, ok := labelName(lines[i]); ok {
			end = i
			break
		}
	}
	body := lines[start:end]
	for len(body) > 1 && strings.TrimSpace(body[len(body)-1]) == "" {
		body = body[:len(body)-1]
	}
	pad := len(body)
	for pad > 1 && instruction(body[pad-1]) == "s_nop 0" {
		pad--
	}
	if pad < len(body) && instruction(body[pad-1]) == "s_endpgm" {
		body = body[:pad]
	}
	return strings.Join(body, "\n") + "\n"
}

// labelName reads a function label line, "0000000000001b00 <name>:".
func labelName(line string) (string, bool) {
	addr, rest, ok := strings.Cut(line, " <")
	if !ok || addr == "" || strings.Trim(addr, "0123456789abcdef") != "" {
		return "", false
	}
	name, ok := strings.CutSuffix(rest, ">:")
	return name, ok
}

// instruction is a disassembly line without its indentation and its
// "// address: encoding" comment.
func instruction(line string) string {
	if i := strings.Index(line, "//"); i >= 0 {
		line = line[:i]
	}
	return strings.TrimSpace(line)
}

// tools are the programs Compile runs, as absolute paths.
type tools struct {
	hipcc, bundler, objdump, readelf string
}

// llvmTool lists where to look for an LLVM tool, in order. The LLVM 15
// install that Debian's hipcc uses comes before PATH: Debian's unversioned
// llvm-objdump may be an older LLVM that cannot disassemble gfx940.
func llvmTool(name string) []string {
	return []string{"/usr/lib/llvm-15/bin/" + name, name + "-15", "/opt/rocm/llvm/bin/" + name, name}
}

var findTools = sync.OnceValues(func() (tools, error) {
	var missing []string
	look := func(candidates ...string) string {
		for _, c := range candidates {
			// LookPath checks a name with a slash as a path and searches PATH for the rest.
			if p, err := exec.LookPath(c); err == nil {
				return p
			}
		}
		missing = append(missing, filepath.Base(candidates[0]))
		return ""
	}
	t := tools{
		hipcc:   look("hipcc", "/opt/rocm/bin/hipcc"),
		bundler: look(llvmTool("clang-offload-bundler")...),
		objdump: look(llvmTool("llvm-objdump")...),
		readelf: look(llvmTool("llvm-readelf")...),
	}
	if len(missing) > 0 {
		return t, fmt.Errorf("amdgpu: %s not found (on Debian: apt-get install hipcc libamdhip64-dev rocm-device-libs llvm-15 clang-tools-15, or make deps)",
			strings.Join(missing, ", "))
	}
	return t, nil
})

// Available reports whether the tools Compile needs are installed: nil if
// they are, else an error naming each one that is missing.
func Available() error {
	_, err := findTools()
	return err
}

// archRE is a processor name with optional target-ID features,
// e.g. gfx940 or gfx90a:sramecc+:xnack-.
var archRE = regexp.MustCompile(`^gfx[0-9a-f]+(:[a-z0-9-]+[+-])*$`)

// Compile compiles the HIP source src for arch (e.g. "gfx940") and reports
// each kernel's metadata and the disassembly. A compile error carries
// hipcc's diagnostics, which name the source as kernel.hip with line and
// column. flags go to hipcc before the source: pass the flags the source
// ships with (runtime.NumericsFlags) to check the code that runs.
func Compile(ctx context.Context, src, arch string, flags ...string) (*Report, error) {
	return compile(ctx, src, arch, flags, true)
}

// compile is Compile; replay says whether a command hipcc ran before for
// arch and flags may be run without hipcc.
func compile(ctx context.Context, src, arch string, flags []string, replay bool) (*Report, error) {
	if !archRE.MatchString(arch) {
		return nil, fmt.Errorf("amdgpu: bad architecture %q, want a target ID such as gfx940", arch)
	}
	t, err := findTools()
	if err != nil {
		return nil, err
	}
	dir, run, err := newRun(ctx, src, arch, "HIPCC_VERBOSE=1")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)

	var log string
	key := strings.Join(append([]string{arch}, flags...), "\x00")
	if argv, ok := hipccCommands.Load(key); ok && replay {
		argv := argv.([]string)
		_, log, err = run(argv[0], argv[1:]...)
	} else {
		var out string
		args := append(append([]string{"--genco", "--offload-arch=" + arch}, flags...), "kernel.hip", "-o", "kernel.co")
		out, log, err = run(t.hipcc, args...)
		if argv := hipccCommand(out); err == nil && argv != nil {
			hipccCommands.Store(key, argv)
		}
	}
	if err != nil {
		return nil, err
	}
	list, _, err := run(t.bundler, "--list", "--type=o", "--input=kernel.co")
	if err != nil {
		return nil, err
	}
	bundle, err := deviceBundle(list, arch)
	if err != nil {
		return nil, err
	}
	if _, _, err := run(t.bundler, "--unbundle", "--type=o", "--input=kernel.co",
		"--targets="+bundle, "--output=kernel.elf"); err != nil {
		return nil, err
	}
	return inspect(run, t.objdump, t.readelf, arch, log)
}

// runner runs a tool in the compile's directory: its stdout and its
// diagnostics with the directory's path removed.
type runner func(name string, args ...string) (stdout, diag string, err error)

// inspect reads kernel.elf, the device code object: its disassembly and
// its kernels' metadata.
func inspect(run runner, objdump, readelf, arch, log string) (*Report, error) {
	processor, _, _ := strings.Cut(arch, ":")
	disasm, _, err := run(objdump, "-d", "--mcpu="+processor, "kernel.elf")
	if err != nil {
		return nil, err
	}
	notes, _, err := run(readelf, "--notes", "kernel.elf")
	if err != nil {
		return nil, err
	}
	kernels, err := parseNotes(notes)
	if err != nil {
		return nil, err
	}
	return &Report{Arch: arch, Kernels: kernels, Disasm: disasm, Log: log}, nil
}

// newRun makes dir a compile's directory holding src as kernel.hip, and
// the runner of its tools (env added to each one's environment).
func newRun(ctx context.Context, src, arch string, env ...string) (string, runner, error) {
	dir, err := os.MkdirTemp("", "fp8gen-amdgpu-")
	if err != nil {
		return "", nil, fmt.Errorf("amdgpu: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kernel.hip"), []byte(src), 0o644); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("amdgpu: %w", err)
	}
	return dir, func(name string, args ...string) (string, string, error) {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		if len(env) > 0 {
			cmd.Env = append(os.Environ(), env...)
		}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		diag := strings.ReplaceAll(stderr.String(), dir+string(filepath.Separator), "")
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				err = ctxErr
			}
			return "", "", fmt.Errorf("amdgpu: %s for %s: %w\n%s", filepath.Base(name), arch, err, strings.TrimRight(diag, "\n"))
		}
		return stdout.String(), diag, nil
	}, nil
}

// freestandingTools are a clang that knows gfx950 and the LLVM tools of
// its install, as absolute paths.
type freestandingTools struct {
	clang, objdump, readelf string
}

// freestandingLLVMs are the LLVM releases looked for, newest first: gfx950
// came in LLVM 20 (Debian bookworm's clang-19 rejects it).
var freestandingLLVMs = []int{24, 23, 22, 21, 20}

var findFreestanding = sync.OnceValues(func() (freestandingTools, error) {
	for _, v := range freestandingLLVMs {
		dir := fmt.Sprintf("/usr/lib/llvm-%d/bin/", v)
		t := freestandingTools{dir + "clang++", dir + "llvm-objdump", dir + "llvm-readelf"}
		ok := true
		for _, p := range []string{t.clang, t.objdump, t.readelf, dir + "ld.lld"} {
			if _, err := os.Stat(p); err != nil {
				ok = false
			}
		}
		if ok {
			return t, nil
		}
	}
	return freestandingTools{}, errors.New("amdgpu: no clang of LLVM 20 or later with its lld (on Debian bookworm: apt-get install clang-22 lld-22 llvm-22, or make deps)")
})

// AvailableFreestanding reports whether CompileFreestanding's tools are
// installed: nil if they are, else an error saying what to install.
func AvailableFreestanding() error {
	_, err := findFreestanding()
	return err
}

// FreestandingFlags are the flags CompileFreestanding gives clang before
// the caller's: device code only, no HIP headers or device libraries (the
// source's own prelude under FP8G_FREESTANDING stands in for them), and
// the code object itself rather than an offload bundle.
var FreestandingFlags = []string{"-x", "hip", "--cuda-device-only", "-nogpuinc", "-nogpulib", "-DFP8G_FREESTANDING", "--no-gpu-bundle-output"}

// CompileFreestanding compiles src for arch with clang alone, no HIP
// install: for architectures CI's hipcc does not know (gfx942, gfx950). The
// source must stand without HIP's headers, as package emit's AMD sources
// do under FP8G_FREESTANDING. The report is Compile's.
func CompileFreestanding(ctx context.Context, src, arch string, flags ...string) (*Report, error) {
	if !archRE.MatchString(arch) {
		return nil, fmt.Errorf("amdgpu: bad architecture %q, want a target ID such as gfx950", arch)
	}
	t, err := findFreestanding()
	if err != nil {
		return nil, err
	}
	dir, run, err := newRun(ctx, src, arch)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	args := append(append(append([]string{}, FreestandingFlags...), "--offload-arch="+arch), flags...)
	_, log, err := run(t.clang, append(args, "-c", "kernel.hip", "-o", "kernel.elf")...)
	if err != nil {
		return nil, err
	}
	return inspect(run, t.objdump, t.readelf, arch, log)
}

// hipccCommands holds, per architecture and flags, the compiler command that hipcc
// ran for a --genco compile of kernel.hip into kernel.co (the same in every
// temporary directory). hipcc is a Perl script that spends about 0.5 s of a
// 1.7 s compile probing the install on each call; running its command
// directly gives the same bytes without that.
var hipccCommands sync.Map // arch and flags, NUL-separated → []string

// hipccCommand reads the command hipcc printed under HIPCC_VERBOSE=1
// ("hipcc-cmd: …", words in shell syntax). It returns nil where it cannot
// replay the command exactly: no such line, more than one, or shell syntax
// beyond plain and double-quoted words.
func hipccCommand(stdout string) []string {
	var line string
	for l := range strings.Lines(stdout) {
		if cmd, ok := strings.CutPrefix(l, "hipcc-cmd: "); ok {
			if line != "" {
				return nil
			}
			line = strings.TrimSpace(cmd)
		}
	}
	if line == "" || strings.ContainsAny(line, "\\'$`;|&<>()*?{}~") {
		return nil
	}
	var argv []string
	var word strings.Builder
	inWord, quoted := false, false
	for _, r := range line {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				argv = append(argv, word.String())
				word.Reset()
				inWord = false
			}
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		return nil
	}
	if inWord {
		argv = append(argv, word.String())
	}
	if !slices.Contains(argv, "kernel.hip") || !slices.Contains(argv, "kernel.co") {
		return nil
	}
	return argv
}

// deviceBundle picks the bundle entry for arch from clang-offload-bundler
// --list output, e.g. hipv4-amdgcn-amd-amdhsa--gfx940.
func deviceBundle(list, arch string) (string, error) {
	var entries []string
	for _, e := range strings.Fields(list) {
		entries = append(entries, e)
		triple, id, ok := strings.Cut(e, "--")
		if ok && strings.HasPrefix(triple, "hip") && strings.Contains(triple, "amdgcn") && id == arch {
			return e, nil
		}
	}
	return "", fmt.Errorf("amdgpu: no %s code object in hipcc's bundle (entries: %s)", arch, strings.Join(entries, " "))
}

// parseNotes reads the kernels from llvm-readelf --notes output. It keys on
// the list under "amdhsa.kernels:": each "- " item at the list's indentation
// starts a kernel, the kernel's own keys sit two columns deeper, and deeper
// lines (.args and its entries, which have .name keys of their own) are
// skipped. A kernel without .name or one of the counts every code object
// carries is an error, not a zero.
func parseNotes(notes string) ([]KernelInfo, error) {
	lines := strings.Split(notes, "\n")
	start := -1
	for i, l := range lines {
		switch strings.TrimSpace(l) {
		case "amdhsa.kernels:":
			start = i
		case "amdhsa.kernels: []":
			return nil, nil
		}
		if start >= 0 {
			break
		}
	}
	if start < 0 {
		return nil, errors.New("amdgpu: no amdhsa.kernels in llvm-readelf --notes output (code object v2, or no AMDGPU metadata note?)")
	}
	parentIndent := indent(lines[start])

	var (
		kernels    []KernelInfo
		seen       []map[string]bool
		itemIndent = -1
		keyIndent  = -1
	)
	for n, l := range lines[start+1:] {
		lineNo := start + 2 + n
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if t == "..." || t == "---" {
			break
		}
		ind := indent(l)
		isItem := t == "-" || strings.HasPrefix(t, "- ")
		if itemIndent < 0 {
			if !isItem || ind < parentIndent {
				break // an empty kernel list
			}
			itemIndent = ind
		}
		if ind < itemIndent || (ind == itemIndent && !isItem) {
			break // past the list
		}
		if ind == itemIndent {
			kernels = append(kernels, KernelInfo{})
			seen = append(seen, map[string]bool{})
			rest := strings.TrimPrefix(t, "-")
			keyIndent = ind + 1 + indent(rest)
			if t = strings.TrimSpace(rest); t == "" {
				keyIndent = -1 // the keys start on the next line
				continue
			}
		} else if keyIndent < 0 {
			keyIndent = ind
		}
		if ind != itemIndent && ind != keyIndent {
			continue // nested under a key of the kernel
		}
		key, value, ok := strings.Cut(t, ":")
		if !ok {
			return nil, fmt.Errorf("amdgpu: notes line %d: want key: value, got %q", lineNo, t)
		}
		key, value = strings.TrimSpace(key), unquote(strings.TrimSpace(value))
		k := &kernels[len(kernels)-1]
		if key == ".name" {
			k.Name = value
			seen[len(seen)-1][key] = true
			continue
		}
		field := intField(k, key)
		if field == nil {
			continue
		}
		v, err := strconv.Atoi(value)
		if err != nil {
			return nil, fmt.Errorf("amdgpu: notes line %d: %s: want an integer, got %q", lineNo, key, value)
		}
		*field = v
		seen[len(seen)-1][key] = true
	}
	for i, k := range kernels {
		for _, key := range []string{".name", ".vgpr_count", ".sgpr_count", ".group_segment_fixed_size", ".private_segment_fixed_size"} {
			if !seen[i][key] {
				return nil, fmt.Errorf("amdgpu: kernel %d (%q) in the metadata note has no %s", i, k.Name, key)
			}
		}
	}
	return kernels, nil
}

// intField returns the field of k that the integer metadata key fills, or nil.
func intField(k *KernelInfo, key string) *int {
	switch key {
	case ".vgpr_count":
		return &k.VGPRs
	case ".sgpr_count":
		return &k.SGPRs
	case ".agpr_count":
		return &k.AGPRs
	case ".group_segment_fixed_size":
		return &k.LDSBytes
	case ".vgpr_spill_count":
		return &k.VGPRSpills
	case ".sgpr_spill_count":
		return &k.SGPRSpills
	case ".private_segment_fixed_size":
		return &k.PrivateBytes
	case ".wavefront_size":
		return &k.Wavefront
	}
	return nil
}

func indent(s string) int {
	return len(s) - len(strings.TrimLeft(s, " "))
}

// unquote strips YAML quotes from a scalar: a doubled single quote is one
// quote inside single quotes, and double quotes take Go-like escapes.
func unquote(v string) string {
	if len(v) < 2 || v[len(v)-1] != v[0] {
		return v
	}
	switch v[0] {
	case '\'':
		return strings.ReplaceAll(v[1:len(v)-1], "''", "'")
	case '"':
		if u, err := strconv.Unquote(v); err == nil {
			return u
		}
	}
	return v
}
