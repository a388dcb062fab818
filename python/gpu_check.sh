#!/usr/bin/env bash
# The PyTorch loader's check on an NVIDIA GPU machine (torch with CUDA, no
# Go): export the ops for sm_90 with a prebuilt fp8gen, run python/tests
# (pytest where installed, else unittest), and measure the host time per
# call with bench_host.py.
#
#   python/gpu_check.sh FP8GEN_BINARY [OUT_DIR] [COMMIT]
#
# FP8GEN_BINARY  the fp8gen CLI built elsewhere (go build -o fp8gen ./cmd/fp8gen)
# OUT_DIR        where everything goes (default: ./gpu-check-out)
# COMMIT         recorded in the bench report (default: git rev-parse HEAD of
#                this tree, else "unknown")
#
# Writes under OUT_DIR: env.txt (GPU, driver, torch), exports/ (the
# exports), tests.log, install.log (pip install of ./python into a scratch
# folder), host_bench.json and bench.log (bench_host.py), status.txt (each
# step's exit code). Exits nonzero if the exports, the tests or the bench
# failed; the bench runs even when a test fails.
#
# FP8GEN_COMPILE=no (default yes) exports without code objects, for a dry
# run where no nvcc is found; PYTHON picks the interpreter (default python3).

set -euo pipefail

if [ $# -lt 1 ]; then
    sed -n '2,22p' "$0" >&2
    exit 2
fi

FP8GEN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
OUT=${2:-gpu-check-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
COMMIT=${3:-$(git -C "$REPO" rev-parse HEAD 2>/dev/null || echo unknown)}
TARGET=sm_90
COMPILE=${FP8GEN_COMPILE:-yes}
export PATH="/usr/local/cuda/bin:$PATH"
export FP8GEN                                  # tests/test_torch_gpu.py runs it
export FP8GEN_EXPORTS="$OUT/exports"           # the torch-free tests read these
export FP8GEN_TORCH_CACHE="$OUT/jit-cache"     # the loader's JIT cache, kept out of ~
PY=${PYTHON:-python3}

run() {
    echo "+ $*" >&2
    "$@"
}

status=0

cd "$REPO"
: >"$OUT/status.txt"
[ -x "$FP8GEN" ] || { echo "$FP8GEN: not an executable" >&2; exit 2; }
"$PY" -c 'import torch' || { echo "$PY has no torch: this check needs torch with CUDA" >&2; exit 2; }

{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit: $COMMIT"
    echo "fp8gen: $FP8GEN"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || true
    command -v nvcc && nvcc --version | tail -2 || echo "nvcc: not found"
    "$PY" -c 'import sys, torch; print("python", sys.version.split()[0]); print("torch", torch.__version__, "cuda", torch.version.cuda, "gpu", torch.cuda.is_available() and torch.cuda.get_device_name())'
    "$PY" -c 'import pytest; print("pytest", pytest.__version__)' 2>/dev/null || echo "pytest: not installed (unittest runs the tests)"
} 2>&1 | tee "$OUT/env.txt"

# --- exports ---------------------------------------------------------------
# Folder names op-target: the torch-free tests look for rowwise_cast-… and
# qk_norm_rope-…. --compile yes: a code object, made by nvcc, or an error.
rm -rf "$FP8GEN_EXPORTS"
mkdir -p "$FP8GEN_EXPORTS"
OPS="rowwise_cast tensorwise_cast colwise_cast grouped_colwise_cast qk_norm_rope qk_norm_rope_bwd"
for op in $OPS; do
    run "$FP8GEN" export "$op" --target "$TARGET" --compile "$COMPILE" -o "$FP8GEN_EXPORTS/$op-$TARGET"
done

# --- tests -----------------------------------------------------------------
set +e
if "$PY" -c 'import pytest' 2>/dev/null; then
    run "$PY" -m pytest -v -rs python/tests 2>&1 | tee "$OUT/tests.log"
else
    run "$PY" -m unittest discover -s python/tests -v 2>&1 | tee "$OUT/tests.log"
fi
rc=${PIPESTATUS[0]}
set -e
echo "tests $rc" >>"$OUT/status.txt"
[ "$rc" -eq 0 ] || { echo "!! tests failed (exit $rc)" >&2; status=1; }

# --- the package installs (into a scratch folder: nothing of the machine's
# changes). Reported, not fatal: without network pip builds with the
# machine's setuptools, and setuptools before 70.1 also wants wheel.
set +e
run "$PY" -m pip install --no-build-isolation --no-deps --no-index --target "$OUT/pip-target" ./python >"$OUT/install.log" 2>&1
rc=$?
set -e
echo "install $rc" >>"$OUT/status.txt"
[ "$rc" -eq 0 ] || echo "!! pip install ./python failed (exit $rc; not counted): see $OUT/install.log" >&2

# --- host time per call ----------------------------------------------------
set +e
run "$PY" python/bench_host.py --out "$OUT/host_bench.json" --commit "$COMMIT" \
    "$FP8GEN_EXPORTS/rowwise_cast-$TARGET" "$FP8GEN_EXPORTS/tensorwise_cast-$TARGET" \
    "$FP8GEN_EXPORTS/colwise_cast-$TARGET" "$FP8GEN_EXPORTS/qk_norm_rope-$TARGET" \
    "$FP8GEN_EXPORTS/qk_norm_rope_bwd-$TARGET" 2>&1 | tee "$OUT/bench.log"
rc=${PIPESTATUS[0]}
set -e
echo "bench $rc" >>"$OUT/status.txt"
[ "$rc" -eq 0 ] || { echo "!! bench_host.py failed (exit $rc)" >&2; status=1; }

echo "--- $OUT/status.txt" >&2
cat "$OUT/status.txt" >&2
exit $status
