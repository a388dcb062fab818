set -u
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_REQUIRE_GPU=1
R=$OUT/r; mkdir -p $R
B=$PWD/.gpurun
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
(cd backend && timeout 280 $B/backend.test -test.v -test.run 'GPU(EverySchedule|GoldenSchedules|PrepareOn|Capabilities|GroupedGarbageOffsets)' -test.timeout 30m > $R/backend-a.log 2>&1; echo "backend-a rc=$?" >> $R/log.txt) &
(cd backend && timeout 280 $B/backend.test -test.v -test.run 'GPUOpsMatchReference/^(rowwise_cast|tensorwise_cast)' -test.timeout 30m > $R/backend-b.log 2>&1; echo "backend-b rc=$?" >> $R/log.txt) &
wait
# cold tune: an empty JIT cache, one op at a time, each bench shape, wall clock
for op in colwise_cast grouped_colwise_cast expert_colwise_cast; do
  export FP8GEN_CACHE=/tmp/jit-cold-$op
  t0=$(date +%s%N)
  timeout 120 $B/fp8gen tune $op --bench --cache $R/tune-$op.json > $R/tune-$op.log 2>&1
  echo "tune $op rc=$? wall $(( ($(date +%s%N) - t0) / 1000000 )) ms (3 shapes, cold JIT cache)" >> $R/log.txt
  t0=$(date +%s%N)
  $B/fp8gen tune $op --bench --cache $R/tune-$op.json > $R/tune-$op-warm.log 2>&1
  echo "tune $op again rc=$? wall $(( ($(date +%s%N) - t0) / 1000000 )) ms (cache hits)" >> $R/log.txt
done
cat $R/log.txt
grep -h "compiled .* in\|^cached" $R/tune-*.log
grep -hE "^--- FAIL|^FAIL|^ok|^PASS" $R/backend-*.log
tar czf $OUT/r.tgz -C $OUT r
