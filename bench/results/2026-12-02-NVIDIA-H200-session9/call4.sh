# Session 9, call 4: the final code (PDL with the wait only): the runtime
# and launcher GPU tests, every golden schedule and colwise and grouped
# against the reference on the GPU, bit for bit (90 s bound); then the
# bench with the PyTorch peers of the ops PDL and the stream-ordered
# memset changed (tensorwise, colwise, grouped, expert).
set -u
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_REQUIRE_GPU=1 FP8GEN_CACHE=/tmp/jit9 PYTHONUNBUFFERED=1
B=$PWD/.gpurun9
R=$OUT/r; mkdir -p $R
note() { echo "$*" | tee -a $R/log.txt; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/gpu.txt 2>&1
(cd runtime && timeout 90 $B/runtime.test -test.v -test.run GPU > $R/runtime-tests.log 2>&1; echo "runtime tests rc=$?" >> $R/log.txt) &
(cd launch && timeout 90 $B/launch.test -test.v -test.run GPU > $R/launch-tests.log 2>&1; echo "launch tests rc=$?" >> $R/log.txt) &
(timeout 90 $B/backend.test -test.v -test.timeout 30m -test.run 'GPUGoldenSchedules|GPUOpsMatchReference/^(colwise_cast|grouped_colwise_cast)$' > $R/backend-tests.log 2>&1; echo "backend tests rc=$? (124: stopped at its bound)" >> $R/log.txt) &
wait
grep -h -- '--- FAIL' $R/*.log | head
note "passed: $(grep -c -- '--- PASS' $R/backend-tests.log) backend subtests, $(grep -c -- '--- FAIL' $R/backend-tests.log) failed"
for op in tensorwise_cast colwise_cast grouped_colwise_cast expert_colwise_cast; do
  t0=$(date +%s); timeout 110 $B/fp8gen bench --ops $op --out $R/bench-$op > $R/bench-$op.log 2>&1; note "bench $op rc=$? $(( $(date +%s) - t0 )) s"
  tar czf $OUT/r.tgz -C $OUT r
done
grep -h '^| [a-z]' $R/bench-*/*.md
tar czf $OUT/r.tgz -C $OUT r
