#!/usr/bin/env bash
# What runs on the GPU machine (which has no Go). Here: `make gpu` builds the
# binaries into .gpu/; there, from the repository root with .gpu/ copied
# along: `bash scripts/gpu.sh OUTDIR`. It runs the runtime and backend GPU
# tests (every op, shape, option and schedule bit for bit against the
# reference; they fail rather than skip with FP8GEN_REQUIRE_GPU=1), then the
# benchmark with the schedule sweep and the PyTorch peers.
set -uo pipefail
out=${1:-bench/results}
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
(cd runtime && ../.gpu/runtime.test -test.v -test.run GPU) > "$out/runtime-tests.log" 2>&1
echo "runtime GPU tests: rc=$?"
.gpu/backend.test -test.v -test.run GPU > "$out/backend-tests.log" 2>&1
echo "backend GPU tests: rc=$? ($(grep -c '^    --- PASS' "$out/backend-tests.log") subtests passed)"
grep -A3 -- '--- FAIL' "$out/backend-tests.log" | head -40
.gpu/fp8gen bench --sweep --out "$out" 2>"$out/bench.err" | tee "$out/bench.out" | grep -v '^  sweep'
