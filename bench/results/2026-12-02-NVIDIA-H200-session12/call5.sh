# Session 12, call 5: colwise's new default (KEEP=2) against the
# references at the GPU test shapes and its goldens; the QK forward's
# default reading qkv once (ONCE=1: LoadOnce) checked at every schedule,
# tuned at the bench shapes and benched with peers.
set -u
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_REQUIRE_GPU=1 FP8GEN_CACHE=/tmp/jit11 PYTHONUNBUFFERED=1
B=$PWD/.gpurun12
R=$OUT/r; mkdir -p $R
note() { echo "$*" | tee -a $R/log.txt; }
pack() { cp -f /tmp/tune12.json $R/ 2>/dev/null; tar czf $OUT/r.tgz -C $OUT r; }
tar xzf $B/jit.tgz -C /tmp
(cd backend && timeout 150 $B/backend.test -test.v -test.run 'GPUOpsMatchReference/(colwise|qk_norm_rope$)|GPUEverySchedule/^qk_norm_rope$|GPUGoldenSchedules/colwise' > $R/backend-tests.log 2>&1; echo "backend tests rc=$?" >> $R/log.txt)
grep -h -- '^--- \|^    --- FAIL' $R/backend-tests.log | tail -8
pack
export FP8GEN_TUNE_CACHE=/tmp/tune12.json
t0=$(date +%s); timeout 120 $B/fp8gen tune qk_norm_rope --bench --force > $R/tune-qk.log 2>&1; note "tune qk rc=$? $(( $(date +%s) - t0 )) s"
grep -h "^\*\|^  [0-9]" $R/tune-qk.log | cut -c1-150
pack
t0=$(date +%s); timeout 150 $B/fp8gen bench --ops qk_norm_rope --out $R/bench-qk > $R/bench-qk.log 2>&1; note "bench qk rc=$? $(( $(date +%s) - t0 )) s"
grep -h '^| [a-z]' $R/bench-qk/*.md
pack
