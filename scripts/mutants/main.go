// Command mutants is a mutation check of the test suite: it plants known
// bugs in the compiler, one at a time, and holds the tests to catching
// every one. A suite that passes with a rounding bug in the FP8 encoder or
// an off-by-one owner predicate in lowering proves nothing about those
// lines, however green it is; this program is how we know it would fail.
//
// Each mutant replaces one exact string of one file. The file on disk is
// never touched: the mutated copy goes to a temporary directory and the
// go command reads it in place of the original through -overlay, so an
// interrupted run leaves the work tree as it was. For each mutant the
// program runs
//
//	go test -overlay=<json> -count=1 -vet=off -timeout 5m <packages...>
//
// with only the packages that catch that mutant (the fast ones, so the
// whole run stays within minutes on a 2-core CI machine), and -run where
// one test of a slow package is what catches it. A non-zero exit is a
// catch, reported with the tests that failed; exit 0 means the mutant
// survived, a test gap. Mutants run -j at a time (one a core by
// default): each has its own overlay, so they cannot see each other, and
// most of a mutant's time is a link and a single-threaded test run, which
// leave the other cores idle. Vet is off (make check vets the tree; a
// mutant is a test of the tests). A mutant whose
// string no longer occurs exactly once is stale (the code moved on and the
// table must follow), and one that does not compile is broken (a build
// failure would look like a catch but tests nothing); both fail the run.
//
// Usage, from the repository root:
//
//	go run ./scripts/mutants            every mutant
//	go run ./scripts/mutants -run fp8   those whose file or reason matches
//	go run ./scripts/mutants -v         print the test output of survivors
//	go run ./scripts/mutants -j 1       one mutant at a time
//
// The exit status is 1 if any mutant survived, is stale or is broken, and
// the last lines name each of them.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"
)

// mutant is one planted bug: old, which must occur exactly once in file,
// becomes new; a test of pkgs must then fail.
type mutant struct {
	file     string   // relative to the repository root
	old, new string   // exact text
	pkgs     []string // packages whose tests must catch it, fastest first
	tests    string   // go test -run pattern, "" for every test of pkgs
	reason   string   // the bug it plants, in one line
}

// mutants is the table. Every entry is a real bug (wrong results, a check
// that no longer checks, a wrong instruction), not a performance change or
// a cosmetic one, which tests rightly ignore. Each names the packages that
// catch it today; keep them the fastest that do.
var mutants = []mutant{
	// Bugs only behaviour shows: a race check, a size bound and emitted C.
	{
		file:   "interp/interp.go",
		old:    "if r.rEpoch[i] == e && r.rLane[i] != int32(lane) {\n\t\t\treturn fmt.Errorf(\"LDS race: lane %d writes",
		new:    "if false {\n\t\t\treturn fmt.Errorf(\"LDS race: lane %d writes",
		pkgs:   []string{"./interp"},
		tests:  "TestLDSWriteAfterRead",
		reason: "the LDS race check misses a write over bytes another lane still reads",
	},
	{
		file:   "ops/call.go",
		old:    "const MaxI32Elems = math.MaxInt32 - ir.MaxTileElems",
		new:    "const MaxI32Elems = math.MaxInt32",
		pkgs:   []string{"./ops"},
		tests:  "TestIndexWidthWithinATileOf2to31",
		reason: "32-bit indexing up to 2^31 elements: a loader checking only max_elements runs a last tile past 2^31",
	},
	{
		file:   "emit/expr.go",
		old:    `return x + " " + op + " " + y, precShift`,
		new:    `return y + " " + op + " " + x, precShift`,
		pkgs:   []string{"./emit"},
		tests:  "TestEmittedOpsMatchInterpreter",
		reason: "the emitted arithmetic shift swaps value and amount",
	},
	{
		file:   "emit/access.go",
		old:    `next := lds("const "+d, fmt.Sprintf("%s + %d", addr, a.Stride))`,
		new:    `next := lds("const "+d, addr)`,
		pkgs:   []string{"./emit"},
		tests:  "TestEmittedBlocksMatchInterpreter",
		reason: "an LDS fold of two values printed without its loop reads the first twice",
	},
	{
		file:   "emit/access.go",
		old:    `return fmt.Sprintf("%s = %s;", acc, e.fold(a.Kind, d, src(j, "0"), src(j, "1"), x))`,
		new:    `return fmt.Sprintf("%s = %s;", acc, e.fold(a.Kind, d, src(j, "0"), src(j, "0"), x))`,
		pkgs:   []string{"./emit"},
		tests:  "TestEmittedBlocksMatchInterpreter",
		reason: "a fold of two registers printed without its loop reads the first twice",
	},
	{
		file:   "emit/access.go",
		old:    "for (int w = 1; w < %d; ++w)",
		new:    "for (int w = 1; w <= %d; ++w)",
		pkgs:   []string{"./emit"},
		tests:  "TestEmittedBlocksMatchInterpreter",
		reason: "the emitted LDS fold reads one wave past its partials",
	},
	// The SwiGLU kernels, held bit for bit (d_probs within its allowance).
	{
		file:   "ops/swiglu_kernels.go",
		old:    "p = p.MulAdd(x, c)",
		new:    "p = p.Mul(x).Add(c)",
		pkgs:   []string{"./ops"},
		tests:  "TestSiluBits",
		reason: "exp's Horner steps rounded twice (the reference fuses them)",
	},
	{
		file:   "ir/numerics.go",
		old:    "err != 0 && math.Float64bits(s)&1 == 0",
		new:    "false && err != 0",
		pkgs:   []string{"./internal/refnum"},
		tests:  "TestFMA",
		reason: "the IR's fma rounded twice, through float64",
	},
	{
		file:   "ops/swiglu_kernels.go",
		old:    "neg := b.Where(g.Lt(-siluClamp), -siluClamp, g).Mul(e)",
		new:    "neg := g.Mul(e)",
		pkgs:   []string{"./ops"},
		tests:  "TestSwigluEveryGate",
		reason: "silu without its clamp: silu(−Inf) is NaN (−Inf · 0), not −0",
	},
	{
		file:   "ops/swiglu_kernels.go",
		old:    "u = g.Add(1)",
		new:    "u = g.Add(3)",
		pkgs:   []string{"./ops"},
		tests:  "^TestOpsInterpMatchReference$/^sm_90$/^swiglu_probs$/",
		reason: "interleaved h: up read from the next pair's up",
	},
	{
		file:   "ops/swiglu_kernels.go",
		old:    "dg, du = dg.Mul(p), a.Mul(p)",
		new:    "dg, du = dg, a.Mul(p)",
		pkgs:   []string{"./ops"},
		tests:  "^TestOpsInterpMatchReference$/^sm_90$/^swiglu_probs_bwd$/",
		reason: "d_gate without the routing probability",
	},
	{
		file:   "ops/swiglu_kernels.go",
		old:    "for i, m := range t.read {\n\t\tout = append(out, b.Load(b.PtrAdd(h, t.gate[i]), m, 0)",
		new:    "for i, m := range t.masks {\n\t\tout = append(out, b.Load(b.PtrAdd(h, t.gate[i]), m, 0)",
		pkgs:   []string{"./ops"},
		tests:  "^TestOpsInterpMatchReference$/^sm_90$/^grouped_swiglu_probs$/",
		reason: "the grouped activation reads the padding rows' gates (NaN there adversarially)",
	},
	{
		file:   "ops/swiglu_kernels.go",
		old:    "dy = dy.Mul(dyScale)",
		new:    "dy = dy.Add(dyScale)",
		pkgs:   []string{"./ops"},
		tests:  "^TestOpsInterpMatchReference$/^sm_90$/^swiglu_probs_bwd$/",
		reason: "fp8 dy not scaled by its inverse scale",
	},
	{
		file:   "ops/swiglu_kernels.go",
		old:    "gate = base.Add(col.Mul(2 * mxBlock)).MultipleOf(2 * mxBlock).Col().Add(lane.Mul(2))",
		new:    "gate = base.Add(col.Mul(mxBlock)).Col().Add(lane.Mul(2))",
		pkgs:   []string{"./ops"},
		tests:  "^TestOpsInterpMatchReference$/^sm_90$/^swiglu_probs_mx$/",
		reason: "interleaved MX blocks: a block's 64 alternating values taken from half its offset",
	},
	// The MoE permute and its ways back.
	{
		file:   "ops/permute_kernels.go",
		old:    "order = r.Col().Ge(r.Row()) // and this one's",
		new:    "order = r.Col().Gt(r.Row()) // and this one's",
		pkgs:   []string{"./ops"},
		tests:  "^TestOpsInterpMatchReference$/^sm_90$/^moe_permute$/",
		reason: "a token routed twice to one expert: both routes take one row",
	},
	{
		file:   "ops/permute_kernels.go",
		old:    "from, end = from.Named(\"pad_from\"), end.Named(\"end\")",
		new:    "from, end = from.Add(1).Named(\"pad_from\"), end.Named(\"end\")",
		pkgs:   []string{"./ops"},
		tests:  "^TestOpsInterpMatchReference$/^sm_90$/^moe_permute$/",
		reason: "an expert's first padding row left unwritten",
	},
	{
		file:   "ops/permute_kernels.go",
		old:    "acc = b.Where(has[k].Col(), term, acc).Named(\"acc\")",
		new:    "acc = term.Named(\"acc\")",
		pkgs:   []string{"./ops"},
		tests:  "^TestOpsInterpMatchReference$/^sm_90$/^moe_unpermute$/",
		reason: "a route without a row adds +0: a sum of −0 comes back +0",
	},
	{
		file:   "ops/permute_kernels.go",
		old:    "rows, _ := z.loadRows(b, c, x, toks.Min(z.t.Sub(1)), routed.Named(\"routed\"))",
		new:    "rows, _ := z.loadRows(b, c, x, toks.Min(z.t.Sub(1)), toks.Lt(z.t))",
		pkgs:   []string{"./ops"},
		tests:  "^TestOpsInterpMatchReference$/^sm_90$/^moe_permute$/",
		reason: "the tensorwise amax counts the rows of tokens routed to no local expert",
	},
	// The QK-norm kernels, held to their float64 references within an allowance.
	{
		file:   "ops/qknorm_kernels.go",
		old:    "return b.Where(first, p.Neg(), p)",
		new:    "return b.Where(first, p, p.Neg())",
		pkgs:   []string{"./ops"},
		tests:  "^TestOpsInterpMatchReference$/^sm_90$/^qk_norm_rope$/",
		reason: "rotate-half negates the second half instead of the first",
	},
	{
		file:   "ops/qknorm_kernels.go",
		old:    ".Add(qkEps(c)).Rsqrt().Named(\"rrms\")",
		new:    ".Add(0.0).Rsqrt().Named(\"rrms\")",
		pkgs:   []string{"./ops"},
		tests:  "^TestOpsInterpMatchReference$/^sm_90$/^qk_norm_rope$/",
		reason: "RMSNorm without its epsilon (a zero head becomes NaN)",
	},
	{
		file:   "ops/qknorm_kernels.go",
		old:    "acc := b.For(0, parts, qkFoldRows,",
		new:    "acc := b.For(qkFoldRows, parts, qkFoldRows,",
		pkgs:   []string{"./ops"},
		tests:  "^TestOpsInterpMatchReference$/^sm_90$/^qk_norm_rope_bwd$/",
		reason: "the weight-gradient fold skips the first 32 programs' partial sums",
	},
	{
		file:   "ops/qknorm_kernels.go",
		old:    `cos = pick(cr, sr.Neg(), cr.Neg(), sr).Named("cos")`,
		new:    `cos = pick(cr, sr, cr.Neg(), sr.Neg()).Named("cos")`,
		pkgs:   []string{"./ops"},
		tests:  "TestSinCos",
		reason: "the in-kernel cosine takes the wrong sign in the second and fourth quadrants",
	},
	{
		file:   "ops/qknorm_kernels.go",
		old:    `n = n.Cast(ir.BF16).Cast(ir.F32).Named("normed_bf16")`,
		new:    `n = n.Named("normed_bf16")`,
		pkgs:   []string{"./ops"},
		tests:  "^TestOpsInterpMatchReference$/^sm_90$/^qk_norm_rope$/",
		reason: "round_norm ignored: the normalised value is not rounded to bf16 before the rotation",
	},
	{
		file:   "ops/qknorm_kernels.go",
		old:    `y := n.Mul(cs).Add(rotated(b, c, n, t.d, false).Mul(sn)).Cast(ir.BF16).Named("y")`,
		new:    `y := n.Mul(cs).Add(rotated(b, c, n, t.d, false).Mul(sn)).Mul(1 - 1.0/256).Cast(ir.BF16).Named("y")`,
		pkgs:   []string{"./ops"},
		tests:  "^TestOpsInterpMatchReference$/^sm_90$/^qk_norm_rope$/",
		reason: "every q and k output biased by 0.4%, within a bf16 ulp's width of the truth",
	},
	// tune: the cache is never trusted blindly, never clobbered.
	{
		file:   "cmd/fp8gen/tune.go",
		old:    "_, err := c.With(e.Params()).Plan()\n\treturn err",
		new:    "return c.CheckSchedule(e.Params())",
		pkgs:   []string{"./cmd/fp8gen"},
		tests:  "TuningCache",
		reason: "a cached schedule is held to the constraints but not to the target's resources",
	},
	{
		file:   "tune/tune.go",
		old:    "whole.Version == Version && !slices.ContainsFunc(whole.Entries, func(e Entry) bool { return check(e) != \"\" })",
		new:    "whole.Version == Version",
		pkgs:   []string{"./tune"},
		tests:  "LoadDistrusts",
		reason: "a tuning cache read in one pass takes entries it cannot use (no warning, not kept as they are)",
	},
	{
		file:   "tune/tune.go",
		old:    "if json.Unmarshal(data, &whole) == nil && whole.Version",
		new:    "if _ = json.Unmarshal(data, &whole); whole.Version",
		pkgs:   []string{"./tune"},
		tests:  "LoadDistrusts",
		reason: "a tuning cache read in one pass takes an entry with a field of the wrong type (its decoding error ignored)",
	},
	{
		file:   "tune/tune.go",
		old:    "if c.broken != \"\" {",
		new:    "if false {",
		pkgs:   []string{"./tune"},
		tests:  "SaveKeepsWhatItCannotUse",
		reason: "saving the tuning cache overwrites a file it could not read",
	},
	{
		file:   "tune/tune.go",
		old:    "e.Class != classUpTo(op, sh, 16)",
		new:    "e.Class != classUpTo(op, sh, 32)",
		pkgs:   []string{"./tune"},
		tests:  "OldClassesMigrate",
		reason: "entries tuned under the first class definition are never found again",
	},
	// The index width: chosen from what the tiles reach, not only the elements.
	{
		file:   "ir/ranges.go",
		old:    "return corners(z.a(0), z.a(1), satMul)",
		new:    "return span{satMul(z.a(0).lo, z.a(1).lo), satMul(z.a(0).lo, z.a(1).hi)}",
		pkgs:   []string{"./ir"},
		tests:  "TestIndexOverflow",
		reason: "the range of a product ignores its first operand's upper bound (a tile's last row)",
	},
	{
		file:   "ops/plan.go",
		old:    "if wide {",
		new:    "if wide && false {",
		pkgs:   []string{"./ops"},
		tests:  "TestIndexWidthFromTiles",
		reason: "a call whose tile padding passes 2^31 still indexes in 32 bits",
	},
	// ops, export, launch: variants, manifests and the launcher's checks.
	{
		file:   "ops/plan.go",
		old:    `"options=" + c.Options.String(), "schedule=" + c.Schedule.String(), `,
		new:    `"options=" + c.Options.String(), `,
		pkgs:   []string{"./ops"},
		tests:  "VariantSymbols",
		reason: "a kernel's symbol ignores the schedule: two variants collide in one module",
	},
	{
		file:   "export/manifest.go",
		old:    "case v%int64(s.MultipleOf) != 0:",
		new:    "case false:",
		pkgs:   []string{"./export"},
		tests:  "Check",
		reason: "a manifest admits sizes that are not the multiples its vector loads assume",
	},
	{
		file:   "export/manifest.go",
		old:    "if v, err := b.Eval(nil); err == nil && v != 0 {",
		new:    "if _, err := b.Eval(nil); err != nil || true {",
		pkgs:   []string{"./export"},
		tests:  "Check",
		reason: "an export drops its schedule's constraints (a one-pass kernel runs rows longer than its tile)",
	},
	{
		file:   "export/files.go",
		old:    "if Hash(data) != f.SHA256 {",
		new:    "if false {",
		pkgs:   []string{"./export"},
		tests:  "WriteRead",
		reason: "an export's files are not checked against their hashes",
	},
	{
		file:   "launch/launch.go",
		old:    "if a.DType != t.DType {",
		new:    "if false {",
		pkgs:   []string{"./launch"},
		tests:  "RunRefuses",
		reason: "a launcher takes a tensor of another dtype",
	},
	// fp8: the reference encoder every kernel is held to.
	{
		file:   "fp8/fp8.go",
		old:    "r := (sig + half - 1 + ((sig >> shift) & 1)) >> shift",
		new:    "r := (sig + half) >> shift",
		pkgs:   []string{"./fp8", "./internal/refnum"},
		reason: "FP8 encoder rounds ties up instead of to even",
	},
	{
		file:   "fp8/fp8.go",
		old:    "Bias: 8, FNUZ: true, Max: 240}",
		new:    "Bias: 8, FNUZ: true, Max: 256}",
		pkgs:   []string{"./fp8"},
		reason: "e4m3fnuz's largest finite value is 256 instead of 240",
	},
	// internal/refnum: the ops' independent reference arithmetic.
	{
		file:   "internal/refnum/refnum.go",
		old:    "case t.codes[i-1]&1 == 0:",
		new:    "case t.codes[i-1]&1 == 1:",
		pkgs:   []string{"./internal/refnum"},
		reason: "reference FP8 encoder breaks ties to the odd code",
	},
	// target: the formats are a property of the hardware.
	{
		file:   "target/target.go",
		old:    "E4M3: fp8.E4M3FNUZ, E5M2: fp8.E5M2FNUZ",
		new:    "E4M3: fp8.E4M3FNUZ, E5M2: fp8.E5M2",
		pkgs:   []string{"./target"},
		reason: "gfx942 quantizes e5m2 in OCP e5m2 instead of e5m2fnuz",
	},
	// ir: the semantics the interpreter and constant folding share.
	{
		file:   "ir/eval.go",
		old:    "return int64(uint64(a) & (^uint64(0) >> (64 - bits)) >> n)",
		new:    "return a >> n",
		pkgs:   []string{"./backend"},
		tests:  "^TestCapabilities$",
		reason: "logical shift right (shr_u) of an i32 sign-extends",
	},
	{
		file:   "ir/eval.go",
		old:    "OpShr: {i: shiftBy(func(a int64, n, _ uint) int64 { return a >> n })},",
		new:    "OpShr: {i: shiftBy(func(a int64, n, bits uint) int64 { return int64(uint64(a) & (^uint64(0) >> (64 - bits)) >> n) })},",
		pkgs:   []string{"./backend"},
		tests:  "^TestCapabilities$",
		reason: "arithmetic shift right (shr) zero-fills like shr_u",
	},
	{
		file:   "ir/verify.go",
		old:    "if info.phase&c.phase == 0 {",
		new:    "if false && info.phase&c.phase == 0 {",
		pkgs:   []string{"./ir"},
		reason: "verifier accepts an op outside its phase (an unlowered op after lowering)",
	},
	// expr: grids and constraints are written as expressions.
	{
		file:   "expr/expr.go",
		old:    "return a[0]/a[1] + b2i(a[0]%a[1] != 0), nil",
		new:    "return a[0]/a[1], nil",
		pkgs:   []string{"./expr"},
		reason: "cdiv rounds down, so a grid misses the last partial block",
	},
	// schedule: bad points refused, resources held to the target.
	{
		file:   "schedule/schedule.go",
		old:    "return d.Kind != Pow2Range || x > 0 && x&(x-1) == 0, nil",
		new:    "return d.Kind != Pow2Range || x > 0, nil",
		pkgs:   []string{"./ops"},
		tests:  "^TestBadSchedulesRefusedFast$",
		reason: "a power-of-two knob's domain accepts any positive value",
	},
	{
		file:   "schedule/schedule.go",
		old:    "case regs > t.RegsLane:",
		new:    "case regs > 2*t.RegsLane:",
		pkgs:   []string{"./schedule"},
		reason: "register check allows twice the per-lane limit",
	},
	// lower: layouts, vectors, owner predicates, reductions, folding.
	{
		file:   "lower/vectorize.go",
		old:    "m.Uniform = m.Vec > 1 && info[v.Mask()].constant[ax] >= m.Vec",
		new:    "m.Uniform = m.Vec > 1",
		pkgs:   []string{"./interp"},
		reason: "every vector access claims a mask uniform over the vector",
	},
	{
		file:   "lower/vectorize.go",
		old:    "m.Vec, m.Unaligned = run, true",
		new:    "m.Vec, m.Unaligned = run, false",
		pkgs:   []string{"./lower"},
		tests:  "TestLowerPasses",
		reason: "a store whose alignment is unknown claims its whole run aligned (a misaligned vector store)",
	},
	{
		file:   "lower/expand.go",
		old:    "\te.emit(ir.OpAsyncWait, ir.Type{}, nil)\n",
		new:    "",
		pkgs:   []string{"./interp"},
		tests:  "TestStage",
		reason: "unstage reads the staged rows without waiting for their asynchronous copies",
	},
	{
		file:   "lower/expand.go",
		old:    "\te.emit(ir.OpAsyncWait, ir.Type{}, nil)\n\te.emit(ir.OpBarrier, ir.Type{}, nil)\n",
		new:    "\te.emit(ir.OpBarrier, ir.Type{}, nil)\n\te.emit(ir.OpAsyncWait, ir.Type{}, nil)\n",
		pkgs:   []string{"./interp"},
		tests:  "TestStage",
		reason: "unstage's barrier comes before the copies' wait: other lanes' copies are not yet visible",
	},
	{
		file:   "lower/expand.go",
		old:    "e.stages[v] = e.base\n",
		new:    "e.stages[v] = 0\n",
		pkgs:   []string{"./backend"},
		tests:  "TestCapabilities",
		reason: "every stage's region starts at LDS byte 0: two staged tiles overwrite each other",
	},
	{
		file:   "interp/interp.go",
		old:    "\t\tvar x uint64\n\t\tif on {",
		new:    "\t\tx := uint64(0x7f7f)\n\t\tif on {",
		pkgs:   []string{"./interp"},
		tests:  "TestStage",
		reason: "a stage's masked-off elements are not zero in LDS (the interpreter's copy drops cp.async's zero fill)",
	},
	{
		file:   "lower/axis.go",
		old:    "a.constant[i] = min(x.constant[i], y.constant[i])\n\t\t\tif and {",
		new:    "a.constant[i] = max(x.constant[i], y.constant[i])\n\t\t\tif and {",
		pkgs:   []string{"./ops"},
		tests:  "^(TestGroupedGarbageOffsets|TestExpertLayouts)$",
		reason: "and/or of masks is taken constant over the longer run of its operands (max, not min)",
	},
	{
		file:   "lower/axis.go",
		old:    "ir.OpNe:  compareAxes(false),",
		new:    "ir.OpNe:  compareAxes(true),",
		pkgs:   []string{"./interp"},
		reason: "x != k is taken to hold on one interval of a vector (it holds on two), so its end bits stand for the vector",
	},
	{
		file:   "lower/layout.go",
		old:    "back(loop.Args[2+v.Index()], n)\n\t\t\tback(loop.Yield().Args[v.Index()-1], n)",
		new:    "_ = loop",
		pkgs:   []string{"./golden"},
		tests:  "^TestGolden$",
		reason: "the transposing write's layout is not followed into a prefetched (loop-carried) tile: its LDS writes go byte by byte",
	},
	{
		file:   "lower/expand.go",
		old:    "own := e.bin(ir.OpLt, e.raw(xt, d), e.i32(extent[d]))",
		new:    "own := e.bin(ir.OpLe, e.raw(xt, d), e.i32(extent[d]))",
		pkgs:   []string{"./interp"},
		reason: "a sum counts the first replica past the extent (owner test < becomes <=)",
	},
	{
		file:   "lower/expand.go",
		old:    "First: l.LaneStride(d)",
		new:    "First: 2 * l.LaneStride(d)",
		pkgs:   []string{"./interp"},
		reason: "the reduction butterfly starts at twice the lane distance, skipping partners",
	},
	{
		file:   "lower/layout.go",
		old:    "\t\t\t\tc := f.NewValue(ir.OpConvert,",
		new:    "\t\t\t\tcontinue\n\t\t\t\tc := f.NewValue(ir.OpConvert,",
		pkgs:   []string{"./lower"},
		tests:  "^TestLowerPasses$",
		reason: "insertConverts leaves data in a layout other than its user needs (no convert)",
	},
	{
		file:   "lower/simplify.go",
		old:    "ir.OpMul: func(s *simplifier, v, x, y *ir.Value) *ir.Value {\n\t\tif isConst(y, 1) {",
		new:    "ir.OpMul: func(s *simplifier, v, x, y *ir.Value) *ir.Value {\n\t\tif isConst(y, 2) {",
		pkgs:   []string{"./interp"},
		reason: "simplify folds x*2 to x (the x*1 identity on the wrong constant)",
	},
	// interp: the checks that hold lowering to what the GPU needs.
	{
		file:   "interp/interp.go",
		old:    "if r.wEpoch[i] == e && r.wLane[i] != int32(lane) {\n\t\t\treturn fmt.Errorf(\"LDS race: lane %d reads",
		new:    "if false && r.wEpoch[i] == e && r.wLane[i] != int32(lane) {\n\t\t\treturn fmt.Errorf(\"LDS race: lane %d reads",
		pkgs:   []string{"./interp"},
		reason: "the LDS race tracker no longer checks a read against another lane's write",
	},
	// emit: the C the GPU compiles. The golden mutants run TestGolden
	// alone: it compares the emitted text, while TestAMDCompile would put
	// every changed kernel through hipcc (a minute) to learn nothing more.
	{
		file:   "ir/signs.go",
		old:    "if x := v.Data(); x.Type.DType.K == KF32 && !in[x] {",
		new:    "if x := v.Data(); false && x.Type.DType.K == KF32 && !in[x] {",
		pkgs:   []string{"./emit"},
		tests:  "TestHardwareMax",
		reason: "an f32 read from LDS counts as never -0 though raw values were stored there: sm_90 folds them with max.f32",
	},
	{
		file:   "ir/signs.go",
		old:    "OpMax:   func(_ *Value, arg func(int) bool) bool { return arg(0) && arg(1) },",
		new:    "OpMax:   func(_ *Value, arg func(int) bool) bool { return arg(0) || arg(1) },",
		pkgs:   []string{"./ir"},
		tests:  "TestNoNegZero",
		reason: "a max with one raw operand counts as never -0",
	},
	{
		file:   "emit/expr.go",
		old:    "case !e.noNegZero[x] || !e.noNegZero[y]:",
		new:    "case false:",
		pkgs:   []string{"./emit"},
		tests:  "TestHardwareMax",
		reason: "every f32 max and min is the form for operands never -0 (max.f32 on sm_90), which may order -0 above +0",
	},
	{
		file:   "emit/prelude.go",
		old:    "fp8g_maxf_nn(float a, float b) { return b > a ? b : a; }",
		new:    "fp8g_maxf_nn(float a, float b) { return a > b ? a : b; }",
		pkgs:   []string{"./emit"},
		tests:  "TestPreludeMatchesGo",
		reason: "the max for a never-NaN first operand returns a NaN second one",
	},
	{
		file:   "ir/signs.go",
		old:    "OpAbs:   func(_ *Value, arg func(int) bool) bool { return arg(0) },",
		new:    "OpAbs:   func(_ *Value, arg func(int) bool) bool { return true },",
		pkgs:   []string{"./ir"},
		tests:  "TestNoNaN",
		reason: "the absolute value of a NaN counts as never NaN",
	},
	{
		file:   "emit/expr.go",
		old:    "return name(\"fp8g_maxf_nn\", \"fp8g_minf_nn\"), !e.noNaN[x]",
		new:    "return name(\"fp8g_maxf_nn\", \"fp8g_minf_nn\"), false",
		pkgs:   []string{"./emit"},
		tests:  "TestNeverNaNFirst",
		reason: "AMD's max for a never-NaN operand takes a maybe-NaN operand first",
	},
	{
		file:   "emit/prelude.go",
		old:    "(r & 0x7f7fu) + 0x0101u",
		new:    "(r & 0x7f7fu) + 0x0100u",
		pkgs:   []string{"./emit"},
		tests:  "TestPairNaNFix",
		reason: "sm_90's paired e4m3fn conversion leaves a negative NaN 0xff in its low byte",
	},
	{
		file:   "emit/prelude.go",
		old:    `"e5m2": "e5m2x2"`,
		new:    `"e5m2": "e4m3x2"`,
		pkgs:   []string{"./emit"},
		reason: "sm_90's hardware e5m2 convert emits the e4m3 instruction",
	},
	{
		file:   "emit/prelude.go",
		old:    "lo = s == 8 ? hi : (lo >> (8 * s)) | (hi << (64 - 8 * s));",
		new:    "lo = s == 8 ? hi : (lo >> (8 * s));",
		pkgs:   []string{"./emit"},
		tests:  "TestStAny",
		reason: "an unaligned store's pieces lose the bytes they should take from the vector's high half",
	},
	{
		file:   "emit/access.go",
		old:    "if shift := (j * size % 4) * 8; shift > 0 {",
		new:    "if shift := (j * size % 4) * 4; shift > 0 {",
		pkgs:   []string{"./golden"},
		tests:  "^TestGolden$",
		reason: "a vector store packs sub-word elements at half their bit offsets",
	},
	{
		file:   "emit/access.go",
		old:    "if e.written[root(v.Ptr())] {",
		new:    "if !e.written[root(v.Ptr())] {",
		pkgs:   []string{"./emit"},
		tests:  "^TestEvictFirstLoads$",
		reason: "a load read once through the non-coherent path from a tensor the kernel writes in place",
	},
	{
		file:   "emit/emit.go",
		old:    "for e.used[n] {",
		new:    "for false && e.used[n] {",
		pkgs:   []string{"./golden"},
		tests:  "^TestAMDCompileCapabilities$/^gfx942$/^clang$/^loads_read_once$",
		reason: "the emitter names a value h2 beside a parameter h2",
	},
	{
		file:   "cost/cost.go",
		old:    "if v.Op != ir.OpLoad || v.Mem().EvictFirst {",
		new:    "if v.Op != ir.OpLoad {",
		pkgs:   []string{"./cost"},
		tests:  "^TestSecondReadFromL2$",
		reason: "the cost model counts the amax's loop of rows read once as a second read of x",
	},
	{
		file:   "emit/access.go",
		old:    `"for (int off = %d; off <= %d; off <<= 1)"`,
		new:    `"for (int off = %d; off < %d; off <<= 1)"`,
		pkgs:   []string{"./golden"},
		tests:  "^TestGolden$",
		reason: "the emitted butterfly loop stops before its last shuffle",
	},
	// ops: the kernels themselves.
	{
		file:   "ops/cast_kernels.go",
		old:    "s := b.FP8Max(c.Format).Div(amax.Max(Eps))",
		new:    "s := b.FP8Max(c.Format).Div(amax)",
		pkgs:   []string{"./ops"},
		tests:  "TestOpsInterpMatchReference/sm_90/rowwise_cast",
		reason: "the kernel's scale has no eps floor, so a zero row divides by zero",
	},
	{
		file:   "ops/cast_kernels.go",
		old:    "\tif c.Flag(opt.Pow2) {\n\t\ts = s.Pow2Floor()\n\t}\n\treturn s.Named(\"scale\")",
		new:    "\treturn s.Named(\"scale\")",
		pkgs:   []string{"./ops"},
		tests:  "TestOpsInterpMatchReference/sm_90/rowwise_cast",
		reason: "the kernel ignores the pow2 option and keeps unrounded scales",
	},
	{
		file:   "ops/cast_kernels.go",
		old:    "tileLoop(b, r0, m, b.NumPrograms(0).Mul(nr), nr,",
		new:    "tileLoop(b, r0, m, b.NumPrograms(0).Mul(2*nr), nr,",
		pkgs:   []string{"./ops"},
		tests:  "TestRowwisePersistentTrips",
		reason: "the persistent rowwise loop strides twice the rows its programs cover, skipping blocks",
	},
	{
		file:   "ops/cast_kernels.go",
		old:    "return append(next, body(r0, carried[:n], carried[n:])...)",
		new:    "return append(next, body(r0, next, carried[n:])...)",
		pkgs:   []string{"./ops"},
		tests:  "TestRowwisePersistentTrips",
		reason: "a prefetching loop works on the tile it loaded for the next trip, not this one",
	},
	// runtime: what the CPU-only runtime tests hold.
	{
		file:   "ops/moe_kernels.go",
		old:    "hi = hiRaw.Max(lo).Min(t).Named(\"hi\")",
		new:    "hi = hiRaw.Max(lo).Named(\"hi\")",
		pkgs:   []string{"./ops"},
		tests:  "^TestGroupedGarbageOffsets$",
		reason: "a group's end row is not clamped to T, so garbage offsets read past x",
	},
	{
		file:   "ops/moe_kernels.go",
		old:    "hiRaw.Gt(t).Or(g.Eq(ne.Sub(1)).And(hiRaw.Ne(t)))",
		new:    "hiRaw.Gt(t)",
		pkgs:   []string{"./ops"},
		tests:  "^TestGroupedGarbageOffsets$",
		reason: "the device status misses a last offset short of T",
	},
	{
		file:   "lower/expand.go",
		old:    "func (x exprInts) And(a, b *ir.Value) *ir.Value { return x.e.bin(ir.OpAnd, a, b) }",
		new:    "func (x exprInts) And(a, b *ir.Value) *ir.Value { return x.e.bin(ir.OpRem, a, b) }",
		pkgs:   []string{"./lower"},
		tests:  "^TestCoordsMatchLayout$",
		reason: "the lowered coordinate of a replicated tile wraps with % (extent−1), not & (extent−1)",
	},
	{
		file:   "lower/hoist.go",
		old:    "return d.Op == ir.OpConst && d.Const().Int != 0",
		new:    "return d != nil",
		pkgs:   []string{"./lower"},
		tests:  "Hoist",
		reason: "an integer division by a size is hoisted before a loop that may not run",
	},
	{
		file:   "runtime/device.go",
		old:    "slots[i], sizes[i] = uint64(uint32(v)), 4\n\t\tcase uint32:",
		new:    "slots[i], sizes[i] = uint64(uint32(v)), 8\n\t\tcase uint32:",
		pkgs:   []string{"./runtime"},
		tests:  "PackArgs",
		reason: "packArgs passes an int32 argument as 8 bytes",
	},
	{
		file:   "runtime/jit.go",
		old:    "got != sum {",
		new:    "false && got != sum {",
		pkgs:   []string{"./runtime"},
		tests:  "CacheCorrupt|ToolVersionKeptOnDisk",
		reason: "a JIT cache entry's hash is not checked, so a corrupt image loads (or an edited --version memo names another compiler)",
	},
	{
		file:   "runtime/jit.go",
		old:    "case <-timer.C:\n\t\tsyscall.Kill(-pgid, syscall.SIGKILL)",
		new:    "case <-timer.C:\n\t\tsyscall.Kill(pgid, syscall.SIGKILL)",
		pkgs:   []string{"./runtime"},
		tests:  "CompilerTimeout",
		reason: "a timed-out compiler is killed without its children",
	},
	{
		file:   "runtime/jit.go",
		old:    "\tfield(toolVersion)\n",
		new:    "",
		pkgs:   []string{"./runtime"},
		tests:  "CacheKey",
		reason: "the JIT cache key ignores the compiler's version (stale binaries after an upgrade)",
	},
	{
		file:   "runtime/jit.go",
		old:    "env = append(env, n+\"=\"+os.Getenv(n))",
		new:    "env = append(env, n)",
		pkgs:   []string{"./runtime"},
		tests:  "ToolVersionKeptOnDisk",
		reason: "the --version memo ignores the environment hipcc reads (one ROCm's answer given for another)",
	},
	{
		file:   "lower/layout.go",
		old:    "if v.Mem().Spread {",
		new:    "if v.Mem().Spread && false {",
		pkgs:   []string{"./ops"},
		tests:  "^TestQKThetaOnceAToken$",
		reason: "a spread load takes the layout of the tiles it is broadcast into (theta's angles worked in every lane again)",
	},
	{
		file:   "ops/qknorm_kernels.go",
		old:    `first := t.r0.Div(t.heads).Named("tok0")`,
		new:    `first := t.r0.Add(t.heads).Div(t.heads).Named("tok0")`,
		pkgs:   []string{"./ops"},
		tests:  "^TestQKThetaOnceAToken$",
		reason: "theta's once-a-token angles take the next token's position",
	},
	{
		file:   "ops/qknorm_kernels.go",
		old:    "next := t.tok.Ne(first).Col()",
		new:    "next := t.tok.Ne(t.tok).Col()",
		pkgs:   []string{"./ops"},
		tests:  "^TestQKThetaOnceAToken$",
		reason: "a theta tile over two tokens gives every row the first token's angles",
	},
	{
		file:   "ops/qknorm_kernels.go",
		old:    "b.Store(b.PtrAdd(tab, offs.Add(s.Mul(hd))), sn, m)",
		new:    "b.Store(b.PtrAdd(tab, offs.Add(s.Mul(hd-1))), sn, m)",
		pkgs:   []string{"./ops"},
		tests:  "^TestQKThetaOnceAToken$",
		reason: "the backward's theta tables put sin S elements early, over the end of cos",
	},
	{
		file:   "interp/interp.go",
		old:    "m.dead = m.waiting >= m.live",
		new:    "m.dead = m.waiting > m.live",
		pkgs:   []string{"./interp"},
		tests:  "^TestWait",
		reason: "a wait no program can end hangs the interpreter instead of failing",
	},
	{
		file:   "interp/interp.go",
		old:    "		m.waiting = 0\n		m.sync.Broadcast()",
		new:    "		m.sync.Broadcast()",
		pkgs:   []string{"./interp"},
		tests:  "^TestWait",
		reason: "a signal leaves the programs that saw an old count counted as waiting: a false deadlock",
	},
	{
		file:   "interp/interp.go",
		old:    "b.m.moved() // it may be a counter a program waits on",
		new:    "",
		pkgs:   []string{"./interp"},
		tests:  "^TestWaitOnAnAtomicCounter$",
		reason: "an atomic that moves a waited-on counter wakes no one: a false deadlock",
	},
	{
		file:   "emit/access.go",
		old:    "red.release.gpu.global.add.s32",
		new:    "red.relaxed.gpu.global.add.s32",
		pkgs:   []string{"./emit"},
		tests:  "^TestSignalWaitEmitted$",
		reason: "a signal on NVIDIA releases nothing: a waiter may read what was written before it too early",
	},
	{
		file:   "emit/emit.go",
		old:    "v.Op == ir.OpAtomic || v.Op == ir.OpSignal || v.Op == ir.OpWait {",
		new:    "v.Op == ir.OpAtomic {",
		pkgs:   []string{"./emit"},
		tests:  "^TestSignalWaitEmitted$",
		reason: "a counter only signalled and waited on is emitted const, which nvcc refuses",
	},
}

func main() {
	runFlag := flag.String("run", "", "run only the mutants whose file or reason matches this regular expression")
	verbose := flag.Bool("v", false, "print the test output of mutants that survive")
	jobs := flag.Int("j", runtime.NumCPU(), "how many mutants to test at once")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "mutants: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	var sel *regexp.Regexp
	if *runFlag != "" {
		var err error
		if sel, err = regexp.Compile(*runFlag); err != nil {
			fmt.Fprintf(os.Stderr, "mutants: -run: %v\n", err)
			os.Exit(2)
		}
	}
	root, err := repoRoot()
	if err != nil {
		fmt.Fprintf(os.Stderr, "mutants: %v\n", err)
		os.Exit(2)
	}
	// Ctrl-C stops the running go test; the deferred clean-up of the
	// temporary directory still runs, and the originals were never touched.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, root, sel, *verbose, max(1, *jobs)))
}

// repoRoot is the directory of the main module's go.mod, so the program
// works from any directory inside the repository.
func repoRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %v", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside a Go module; run from the repository root")
	}
	return filepath.Dir(mod), nil
}

// outcome of one mutant.
type outcome int

const (
	caught outcome = iota
	survived
	stale  // old does not occur exactly once
	broken // the mutant does not build: a failure that tests nothing
	failed // the check itself could not run
)

func (o outcome) String() string {
	return [...]string{"caught", "SURVIVED", "STALE", "BROKEN", "ERROR"}[o]
}

func run(ctx context.Context, root string, sel *regexp.Regexp, verbose bool, jobs int) int {
	tmp, err := os.MkdirTemp("", "fp8gen-mutants-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "mutants: %v\n", err)
		return 2
	}
	defer os.RemoveAll(tmp)

	var picked []int
	for i, m := range mutants {
		if sel == nil || sel.MatchString(m.file) || sel.MatchString(m.reason) {
			picked = append(picked, i)
		}
	}
	if len(picked) == 0 {
		fmt.Println("no mutant matches -run")
		return 1
	}

	// Each mutant's result, filled in by the workers; the lines are
	// printed in table order, each as soon as it and those before it are
	// done.
	type result struct {
		o              outcome
		detail, output string
		took           time.Duration
		done           chan struct{}
	}
	results := make([]*result, len(picked))
	for k := range results {
		results[k] = &result{done: make(chan struct{})}
	}
	start := time.Now()
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(jobs, len(picked)) {
		wg.Go(func() {
			for k := range next {
				i := picked[k]
				r := results[k]
				t0 := time.Now()
				r.o, r.detail, r.output = try(ctx, root, filepath.Join(tmp, fmt.Sprint(i)), mutants[i], verbose)
				r.took = time.Since(t0)
				close(r.done)
			}
		})
	}
	go func() {
		defer close(next)
		for k := range picked {
			if ctx.Err() != nil {
				// The rest are not planted; their lines say so.
				for _, r := range results[k:] {
					r.o, r.detail = failed, "interrupted before it was planted"
					close(r.done)
				}
				return
			}
			next <- k
		}
	}()

	count := map[outcome]int{}
	var bad []string // the mutants that fail the run, with their outcome
	for k, i := range picked {
		m, r := mutants[i], results[k]
		<-r.done
		count[r.o]++
		// One line a mutant; what caught it (or why it counts as a
		// failure) goes last, as it varies in length.
		fmt.Printf("%-8s %-25s %-86s %5.1fs  %s\n", r.o, m.file, m.reason, r.took.Seconds(), r.detail)
		// A broken mutant's build errors say what to fix in the table; a
		// survivor's test output (with -v) says what the tests did run.
		if r.o == broken || r.o == failed || (r.o == survived && verbose) {
			fmt.Println(indent(r.output))
		}
		if r.o != caught {
			bad = append(bad, fmt.Sprintf("%-8s %s: %s", r.o, m.file, m.reason))
		}
	}
	wg.Wait()
	fmt.Printf("\nplanted %d, caught %d, survived %d", len(picked), count[caught], count[survived])
	for _, o := range []outcome{stale, broken, failed} {
		if count[o] > 0 {
			fmt.Printf(", %s %d", strings.ToLower(o.String()), count[o])
		}
	}
	fmt.Printf(" (%.0fs, %d at a time)\n", time.Since(start).Seconds(), min(jobs, len(picked)))
	if len(bad) > 0 {
		fmt.Println("\nnot caught:")
		for _, b := range bad {
			fmt.Println("  " + b)
		}
	}
	if ctx.Err() != nil {
		fmt.Println("interrupted")
		return 1
	}
	if len(bad) > 0 {
		return 1
	}
	return 0
}

// try plants m in a copy under dir and runs its packages' tests against
// it, with go test -v where verbose. It returns the outcome, a line of
// detail, and the go test output.
func try(ctx context.Context, root, dir string, m mutant, verbose bool) (outcome, string, string) {
	orig := filepath.Join(root, filepath.FromSlash(m.file))
	src, err := os.ReadFile(orig)
	if err != nil {
		return stale, err.Error(), ""
	}
	if n := strings.Count(string(src), m.old); n != 1 {
		return stale, fmt.Sprintf("the old text occurs %d times in %s; want exactly once", n, m.file), ""
	}
	if m.old == m.new || len(m.pkgs) == 0 {
		return failed, "the table entry plants nothing or names no package", ""
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return failed, err.Error(), ""
	}
	// The copy keeps the original's base name, so that compiler messages
	// name the file they always did.
	mutated := filepath.Join(dir, filepath.Base(orig))
	if err := os.WriteFile(mutated, []byte(strings.Replace(string(src), m.old, m.new, 1)), 0o644); err != nil {
		return failed, err.Error(), ""
	}
	overlay, err := json.Marshal(struct{ Replace map[string]string }{map[string]string{orig: mutated}})
	if err != nil {
		return failed, err.Error(), ""
	}
	overlayPath := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayPath, overlay, 0o644); err != nil {
		return failed, err.Error(), ""
	}

	args := []string{"test", "-overlay=" + overlayPath, "-count=1", "-vet=off", "-timeout", "5m"}
	if m.tests != "" {
		args = append(args, "-run", m.tests)
	}
	if verbose {
		args = append(args, "-v") // a survivor's output then shows which tests ran, and which skipped
	}
	args = append(args, m.pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	// A missing hipcc skips the AMD compile check rather than failing it,
	// so that only a planted bug can make the tests fail (a skip does not
	// count as a catch).
	cmd.Env = append(os.Environ(), "FP8GEN_REQUIRE_HIPCC=0")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	text := out.String()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return survived, "every test passed with the bug in", text
	case ctx.Err() != nil:
		return failed, "interrupted", text
	case !errors.As(err, &exit):
		return failed, err.Error(), text
	case strings.Contains(text, "[build failed]") || strings.Contains(text, "[setup failed]"):
		return broken, "the mutant does not build, so its failure tests nothing", text
	}
	return caught, "by " + failures(text), text
}

// failures names what failed in go test output: the top-level tests that
// failed, a panic, or the packages, so that a catch can be told from an
// accident (a catch by the wrong test is worth a look).
func failures(out string) string {
	var names []string
	seen := map[string]bool{}
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "--- FAIL: "):
			add(strings.Fields(l)[2])
		case strings.HasPrefix(l, "panic: "):
			add("a panic")
		case strings.HasPrefix(l, "FAIL\t") && len(names) == 0:
			add(strings.Fields(l)[1])
		}
	}
	if len(names) == 0 {
		return "a failing exit status"
	}
	if len(names) > 4 {
		names = append(names[:4], fmt.Sprintf("and %d more", len(names)-4))
	}
	return strings.Join(names, ", ")
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	return "    | " + strings.ReplaceAll(s, "\n", "\n    | ")
}
