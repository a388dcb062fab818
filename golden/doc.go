// Package golden holds the golden HIP files: the exact source fp8gen emits
// for every op on every target, kept under testdata/ so that any change to
// what the compiler writes shows up as a reviewable diff.
//
// Each op has a case per target at its example shape with the default
// options, testdata/<op>_<target>.txtar, and one per variant its
// description names (options, odd shapes, 64-bit indexing, a schedule),
// testdata/<op>_<target>_<variant>.txtar. The schedule is the one the plan chooses at that shape; it is recorded in
// the case, so a change of choice is a diff too. Each archive holds, for
// every kernel of the op's plan in launch order:
//
//	<kernel>.schedule  the schedule's knobs, the grid, and what schedule/
//	                   predicted: threads, LDS bytes, registers per lane
//	<kernel>.hip       the full emitted source, as the runtime compiles it
//
// The archives are txtar files (golang.org/x/tools/txtar): a comment, then
// each file as a "-- name --" line followed by its text.
//
// The tests:
//
//   - TestGolden emits every case twice (plan, lower and emit again from
//     scratch), requires both emissions to be identical, and compares them
//     with the archive, reporting differences as (-want +got).
//   - TestAMDCompile compiles each case of an AMD target that CI's hipcc
//     knows (target.CheckArch: gfx942 as gfx940; gfx950 has no compiler in
//     CI and is skipped with a note) and holds the compiler's report against
//     the schedule: no spills, no scratch, the LDS bytes schedule/
//     predicted, at most 512 VGPRs, and logs a table of what hipcc reports.
//     It compiles the sources as emitted, which TestGolden holds equal to
//     the files. It and the next test need hipcc and the LLVM 15 tools
//     (make deps); without them they skip, unless FP8GEN_REQUIRE_HIPCC=1,
//     as make test sets it: then they fail.
//   - TestRelaxedAmaxHasNoCacheMaintenance checks that tensorwise amax's
//     relaxed atomic is a bare global atomic on gfx942, and that the same
//     kernel with an acq_rel atomic gets the L2 write-back and invalidate:
//     the ordering attribute is visible in the ISA.
//
// After an intended change to what is emitted, rewrite the files with
//
//	go test ./golden -update
//
// (or make golden) and review the diff of testdata/ like code.
package golden
