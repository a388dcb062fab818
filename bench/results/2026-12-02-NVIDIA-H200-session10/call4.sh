# Session 10, call 4: the bench timed as its peers (a 256 MB write before
# each repetition, events around the op alone): TestGPUTimeFlushed, then
# the bench with the PyTorch peers of colwise, tensorwise and rowwise.
set -u
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_REQUIRE_GPU=1 FP8GEN_CACHE=/tmp/jit10 PYTHONUNBUFFERED=1
B=$PWD/.gpurun10
R=$OUT/r; mkdir -p $R
note() { echo "$*" | tee -a $R/log.txt; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/gpu.txt 2>&1
(cd backend && timeout 60 $B/backend.test -test.v -test.run 'GPUTimeFlushed' > $R/backend-tests.log 2>&1; echo "backend tests rc=$?" >> $R/log.txt)
grep -h -- '--- \|flushed' $R/backend-tests.log
for op in colwise_cast tensorwise_cast rowwise_cast; do
  t0=$(date +%s); timeout 150 $B/fp8gen bench --ops $op --out $R/bench-$op > $R/bench-$op.log 2>&1; note "bench $op rc=$? $(( $(date +%s) - t0 )) s"
  tar czf $OUT/r.tgz -C $OUT r
done
grep -h '^| [a-z]' $R/bench-*/*.md
tar czf $OUT/r.tgz -C $OUT r
