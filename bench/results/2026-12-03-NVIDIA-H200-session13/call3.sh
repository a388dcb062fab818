# Session 13, call 3: the forward QK space with 16 elements a lane in
# 2- and 1-wave blocks (the backward's 2-wave point, 1.3–1.5× slower in
# call 2, taken out again) and the grouped cast's by-rows 64 × 64 at 8
# blocks a CU (call 2: 114.9 against 120.2 µs at T=32768): GPU tests of
# both ops over every schedule, the tunes, the bench with peers.
set -u
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_REQUIRE_GPU=1 FP8GEN_CACHE=/tmp/jit13 PYTHONUNBUFFERED=1
B=$PWD/.gpurun13
R=/tmp/r; mkdir -p $R
note() { echo "$*" | tee -a $R/log.txt; }
pack() { cp -f /tmp/tune13.json $R/ 2>/dev/null; tar czf $OUT/r.tgz -C /tmp r; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
(cd backend && timeout 200 $B/backend.test -test.v -test.run 'GPUEverySchedule/(qk|grouped)|GPUOpsMatchReference/(qk|grouped)|GPUGoldenSchedules/(qk|grouped)' > $R/backend-tests.log 2>&1; echo "backend tests rc=$?" >> $R/log.txt)
grep -h -- '^--- \|^    --- FAIL' $R/backend-tests.log | tail -12; tail -1 $R/log.txt
pack
export FP8GEN_TUNE_CACHE=/tmp/tune13.json
for op in qk_norm_rope grouped_colwise_cast; do
  t0=$(date +%s); timeout 100 $B/fp8gen tune $op --bench --force > $R/tune-$op.log 2>&1; note "tune $op rc=$? $(( $(date +%s) - t0 )) s"
  grep -h "^\*\|^kept" $R/tune-$op.log | cut -c1-160
  pack
done
t0=$(date +%s); timeout 280 $B/fp8gen bench --ops qk_norm_rope,qk_norm_rope_bwd --out $R/bench-qk > $R/bench-qk.log 2>&1; note "bench qk rc=$? $(( $(date +%s) - t0 )) s"
grep -h '^| [a-z]' $R/bench-qk/*.md
pack
t0=$(date +%s); timeout 100 $B/fp8gen bench --ops grouped_colwise_cast --shapes 32768x2048x16 --out $R/bench-grouped > $R/bench-grouped.log 2>&1; note "bench grouped rc=$? $(( $(date +%s) - t0 )) s"
grep -h '^| [a-z]' $R/bench-grouped/*.md
pack
