#!/usr/bin/env bash
# What runs on the GPU machine (which has no Go). Here: `make gpu` builds the
# binaries into .gpu/; copy the few a run needs into a small folder that is
# carried along (the device tool takes 64 MiB a call):
#
#   mkdir -p .gpurun && cp .gpu/{backend,runtime,launch,cmd_fp8gen,golden}.test .gpu/fp8gen .gpurun/
#
# There, from the repository root: `bash scripts/gpu.sh OUTDIR [BASELINE]`.
# It runs the runtime and backend GPU tests (every op, shape, option and
# schedule bit for bit against the reference, the IR capability kernels,
# the sum's determinism, a 3.28e9-element tensor; they fail rather than
# skip with FP8GEN_REQUIRE_GPU=1; each plan runs twice and must write the
# same bits, and leave no device memory allocated), then compute-sanitizer's
# memcheck, racecheck, synccheck and initcheck over every op at the small
# odd shapes, the capability kernels and garbage group offsets (SANITIZE=0
# skips them), then the
# benchmark. With BASELINE (an
# fp8gen binary built from another commit) it times both, interleaved
# twice, without the PyTorch peers: a before/after comparison in one run.
#
# STAGES (default "tests sanitize bench") picks what runs, so that the
# work fits the device tool's 10 minutes a call: for instance
# STAGES=tests, then STAGES=sanitize, then STAGES="tune bench"
# BENCH_OPS=rowwise_cast,… (bench's --ops; default every op). "tune"
# times the candidates of each op of BENCH_OPS (default every op) at its
# bench shapes into $out/tune.json, which the bench then takes its default
# schedules from; bench --sweep reports the space's best beside them.
set -uo pipefail
out=${1:-bench/results}
base=${2:-}
bin=$(cd "${BIN:-.gpurun}" && pwd) || exit 1 # absolute: some tests run in their package's folder
stages=" ${STAGES:-tests sanitize bench} "
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
if [[ $stages == *" tests "* ]]; then
(cd runtime && "$bin/runtime.test" -test.v -test.run GPU) > "$out/runtime-tests.log" 2>&1
echo "runtime GPU tests: rc=$?"
if [ -x "$bin/launch.test" ]; then
	# Exported ops through the Go launcher; then the PyTorch loader against the Go runtime.
	"$bin/launch.test" -test.v -test.run GPU > "$out/launch-tests.log" 2>&1
	echo "launch GPU tests: rc=$?"
	if [ -x "$bin/cmd_fp8gen.test" ]; then
		(cd cmd/fp8gen && "$bin/cmd_fp8gen.test" -test.v -test.run GPU) > "$out/cmd-tests.log" 2>&1
		echo "fp8gen command GPU tests (tune): rc=$?"
	fi
	if python3 -c 'import torch' 2>/dev/null; then
		FP8GEN="$bin/fp8gen" python3 -m unittest discover -s python/tests -v > "$out/torch-tests.log" 2>&1
		echo "PyTorch loader tests: rc=$?"
	fi
fi
if [ -x "$bin/golden.test" ]; then
	# The register estimate against ptxas (nvcc is here).
	(cd golden && "$bin/golden.test" -test.v -test.run NVCCRegisters) > "$out/nvcc-registers.log" 2>&1
	echo "register estimate vs ptxas: rc=$?"
fi
"$bin/backend.test" -test.v -test.run GPU -test.timeout 8m > "$out/backend-tests.log" 2>&1
echo "backend GPU tests: rc=$? ($(grep -c -- '--- PASS' "$out/backend-tests.log") passed, $(grep -c -- '--- FAIL' "$out/backend-tests.log") failed)"
grep -A3 -- '--- FAIL' "$out/backend-tests.log" | head -40
fi
if [[ $stages == *" sanitize "* ]] && [ "${SANITIZE:-1}" = 1 ]; then
	for tool in memcheck racecheck synccheck initcheck; do
		FP8GEN_GPU_SMALL=1 compute-sanitizer --tool "$tool" --error-exitcode 9 \
			"$bin/backend.test" -test.run 'GPUOpsMatchReference|GPUCapabilities|GPUGroupedGarbageOffsets' -test.timeout 9m \
			> "$out/sanitizer-$tool.log" 2>&1
		echo "compute-sanitizer $tool: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitizer-$tool.log" | tail -1)"
	done
fi
ops=()
if [ -n "${BENCH_OPS:-}" ]; then
	ops=(--ops "$BENCH_OPS")
fi
export FP8GEN_TUNE_CACHE="$out/tune.json"
if [[ $stages == *" tune "* ]]; then
	tune_ops=${BENCH_OPS:-$("$bin/fp8gen" list | awk '/^Ops:/ {f = 1; next} /^$/ {f = 0} f && /^  [a-z]/ {print $1}' | paste -sd, -)}
	for op in ${tune_ops//,/ }; do
		"$bin/fp8gen" tune "$op" --bench >> "$out/tune.txt" 2>&1
		echo "tune $op: rc=$? $(grep -c '^kept' "$out/tune.txt") kept so far"
	done
fi
if [[ $stages != *" bench "* ]]; then
	exit 0
fi
if [ -n "$base" ]; then
	for i in 1 2; do
		for b in "$base" "$bin/fp8gen"; do
			name=$(basename "$b")$i
			"$b" bench "${ops[@]}" --peers off --iters 100 --warm 10 --out "$out/$name" > "$out/$name.txt" 2>&1
			echo "$name µs: $(grep '^| [a-z]' "$out/$name.txt" | awk -F'|' '{printf "%s%s ", $3, $4}')"
		done
	done
else
	"$bin/fp8gen" bench "${ops[@]}" --sweep --out "$out" 2>"$out/bench.err" | tee "$out/bench.out" | grep -v '^  sweep'
fi
