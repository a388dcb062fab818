#!/usr/bin/env bash
# What runs on the GPU machine (which has no Go). Here: `make gpu` builds the
# binaries into .gpu/; copy the few a run needs into a small folder that is
# carried along (the device tool takes 64 MiB a call):
#
#   mkdir -p .gpurun && cp .gpu/{backend,runtime,launch,cmd_fp8gen,golden}.test .gpu/fp8gen .gpu/fp8gen-plot .gpurun/
#
# (fp8gen-plot beside fp8gen draws bench's PNG chart; without it bench says so.)
#
# There, from the repository root: `bash scripts/gpu.sh OUTDIR [BASELINE]`.
#
# STAGES (default "tests sanitize bench") picks what runs (TESTS and
# SKIP_TESTS, Go -test.run and -test.skip patterns, narrow the backend's):
#   tests     the runtime, launcher, tune-command, register-estimate, PyTorch
#             loader (if torch is there) and backend GPU tests: every op,
#             shape, option set and schedule bit for bit against the
#             reference, the IR capability kernels, the sum's determinism,
#             tensors past 2^31 elements. They fail rather than skip
#             (FP8GEN_REQUIRE_GPU=1); each plan runs twice and must write the
#             same bits and leave no device memory allocated.
#   sanitize  compute-sanitizer memcheck, racecheck, synccheck and initcheck
#             over every op at the small odd shapes, the capability kernels
#             and garbage group offsets.
#   tune      fp8gen tune OP --bench for each op of BENCH_OPS (default every
#             op) into OUTDIR/tune.json, which the bench then takes its
#             default schedules from (commit it as tune/shipped/<GPU>.json).
#   bench     fp8gen bench, one op at a time (BENCH_OPS, default every op),
#             with the PyTorch peers (PEERS=off leaves them out) and, with
#             SWEEP=1, the space's best beside the default. With BASELINE (an
#             fp8gen binary built from another commit) it times both,
#             interleaved twice, without the peers and the reference check
#             (the tests check): before/after in one run.
#
# Tests and sanitizers only check results, so they run concurrently (on
# the H200 all of them take about 5 minutes); tune and bench time, so
# they run alone, after them. Each step is bounded so that the call ends by
# DEADLINE seconds (default 540: the device tool allows 600 a call; CHECKS,
# default half of it, bounds the tests and sanitizers), and
# what has finished is packed into OUTDIR/results.tgz after every step (the
# tool brings back at most 8 files, and nothing of a call it had to kill).
set -uo pipefail
out=$(mkdir -p "${1:-bench/results}" && cd "${1:-bench/results}" && pwd) || exit 1
base=${2:-}
bin=$(cd "${BIN:-.gpurun}" && pwd) || exit 1 # absolute: some tests run in their package's folder
stages=" ${STAGES:-tests sanitize bench} "
deadline=${DEADLINE:-540}
start=$(date +%s)
R=$out/results
mkdir -p "$R"
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
export FP8GEN_CACHE=${FP8GEN_CACHE:-/tmp/fp8gen-jit} # one JIT cache for every process
left() { echo $((deadline - ($(date +%s) - start))); }
pack() { tar czf "$out/.results.tgz" -C "$out" results && mv "$out/.results.tgz" "$out/results.tgz"; }
note() { echo "$*" | tee -a "$R/log.txt"; }
# step NAME SECONDS CMD…: run CMD (its output into NAME.log), bounded.
step() {
	local name=$1 limit=$2 t0
	shift 2
	t0=$(date +%s)
	timeout "$limit" "$@" > "$R/$name.log" 2>&1
	local rc=$?
	note "$name: rc=$rc ($(($(date +%s) - t0)) s)$([ $rc = 124 ] && echo ', stopped at its time limit')"
}
# uuid and bus: which of the lent machines ran it (two H200s have timed the
# same binary 1.4% apart)
nvidia-smi --query-gpu=name,uuid,pci.bus_id,driver_version,clocks.sm,clocks.mem --format=csv > "$R/gpu.txt" 2>&1
checks=${CHECKS:-$((deadline / 2))} # the tests' and sanitizers' bound
if [[ $stages == *" tests "* ]]; then
	(cd runtime && step runtime-tests 200 "$bin/runtime.test" -test.v -test.run GPU) &
	(
		[ -x "$bin/launch.test" ] && step launch-tests 200 "$bin/launch.test" -test.v -test.run GPU
		[ -x "$bin/cmd_fp8gen.test" ] && (cd cmd/fp8gen && step cmd-tests 200 "$bin/cmd_fp8gen.test" -test.v -test.run GPU)
		if python3 -c 'import torch' 2>/dev/null; then
			FP8GEN="$bin/fp8gen" step torch-tests 200 python3 -m unittest discover -s python/tests -v
		fi
	) &
	[ -x "$bin/golden.test" ] && (cd golden && step nvcc-registers 200 "$bin/golden.test" -test.v -test.run NVCCRegisters) &
	step backend-tests "$checks" "$bin/backend.test" -test.v -test.run "${TESTS:-GPU}" -test.skip "${SKIP_TESTS:-}" -test.timeout 30m &
fi
if [[ $stages == *" sanitize "* ]]; then
	for tool in memcheck racecheck synccheck initcheck; do
		FP8GEN_GPU_SMALL=1 step "sanitizer-$tool" "$checks" compute-sanitizer --tool "$tool" --error-exitcode 9 \
			"$bin/backend.test" -test.run "${SANITIZE_TESTS:-GPUOpsMatchReference|GPUCapabilities|GPUGroupedGarbageOffsets|GPUSwigluGarbageOffsets}" -test.timeout 30m &
	done
fi
wait
for f in "$R"/*tests.log "$R"/nvcc-registers.log; do
	[ -f "$f" ] && grep -H -- '--- FAIL' "$f" | head -20
done
for f in "$R"/sanitizer-*.log; do
	[ -f "$f" ] && note "$(basename "$f" .log): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$f" | tail -1)"
done
pack
ops=${BENCH_OPS:-$("$bin/fp8gen" list | awk '/^Ops:/ {f = 1; next} /^$/ {f = 0} f && /^  [a-z]/ {print $1}' | paste -sd, -)}
export FP8GEN_TUNE_CACHE=$R/tune.json
if [[ $stages == *" tune "* ]]; then
	for op in ${ops//,/ }; do
		l=$(left)
		if [ "$l" -lt 60 ]; then
			note "tune $op: not run (the deadline)"
			continue
		fi
		step "tune-$op" $((l - 30)) "$bin/fp8gen" tune "$op" --bench
		pack
	done
fi
if [[ $stages != *" bench "* ]]; then
	exit 0
fi
if [ -n "$base" ]; then
	for i in 1 2; do
		for b in "$base" "$bin/fp8gen"; do
			name=$(basename "$b")$i
			step "bench-$name" $(($(left) - 10)) "$b" bench --ops "$ops" --peers off --check=false --iters 100 --warm 10 --out "$R/$name"
			note "$name µs: $(grep '^| [a-z]' "$R/bench-$name.log" | awk -F'|' '{printf "%s%s ", $3, $4}')"
		done
	done
	pack
	exit 0
fi
flags=(--peers "${PEERS:-auto}")
[ "${SWEEP:-0}" = 1 ] && flags+=(--sweep)
for op in ${ops//,/ }; do
	l=$(left)
	if [ "$l" -lt 30 ]; then
		note "bench $op: not run (the deadline)"
		continue
	fi
	# One folder for every op: each run merges its rows into GPU.json there.
	step "bench-$op" $((l - 10)) "$bin/fp8gen" bench --ops "$op" "${flags[@]}" --out "$R/bench"
	grep -h 'fp8gen .* µs' "$R/bench-$op.log"
	pack
done
