# Session 10, call 5: TestGPUTimeFlushed and TestGPUTune (the tune timed
# as the bench: flushed), the tune's cache hit as a process with and
# without --target (no device opened with it), cold tunes of the MoE ops
# (empty JIT cache) at their first bench shape, then the bench with the
# PyTorch peers of the MoE ops, all timed as the peers are.
set -u
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_REQUIRE_GPU=1 FP8GEN_CACHE=/tmp/jit10 PYTHONUNBUFFERED=1
B=$PWD/.gpurun10
R=$OUT/r; mkdir -p $R
note() { echo "$*" | tee -a $R/log.txt; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/gpu.txt 2>&1
(cd backend && timeout 60 $B/backend.test -test.v -test.run 'GPUTimeFlushed' > $R/backend-tests.log 2>&1; echo "backend tests rc=$?" >> $R/log.txt)
(cd cmd/fp8gen && timeout 90 $B/cmd.test -test.v -test.run 'GPUTune|TuneCached' > $R/cmd-tests.log 2>&1; echo "cmd tests rc=$?" >> $R/log.txt)
grep -h -- '--- \|flushed\|cold tune\|hit answered' $R/*-tests.log
export FP8GEN_TUNE_CACHE=/tmp/tune10.json
$B/fp8gen tune rowwise_cast --shape M=8192,K=8192 > $R/tune-rowwise.log 2>&1
for i in 1 2 3 4 5; do /usr/bin/time -f "hit with --target: %e s" $B/fp8gen tune rowwise_cast --shape M=8192,K=8192 --target sm_90 >> $R/tune-rowwise.log 2>&1; done
for i in 1 2 3; do /usr/bin/time -f "hit, device opened: %e s" $B/fp8gen tune rowwise_cast --shape M=8192,K=8192 >> $R/tune-rowwise.log 2>&1; done
grep -h "hit\|cached" $R/tune-rowwise.log | sort | uniq -c
for s in "grouped_colwise_cast T=65536,K=7168,E=8" "grouped_colwise_cast T=32768,K=2048,E=16" "expert_colwise_cast E=32,K=7168,N=2048" "expert_colwise_cast E=128,K=2048,N=768"; do
  set -- $s
  rm -rf /tmp/jitcold; t0=$(date +%s%N)
  FP8GEN_CACHE=/tmp/jitcold timeout 60 $B/fp8gen tune $1 --shape $2 --force > $R/tune-$1-$2.log 2>&1
  note "cold tune $1 $2 rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms wall"
done
tar czf $OUT/r.tgz -C $OUT r
for op in grouped_colwise_cast expert_colwise_cast; do
  t0=$(date +%s); timeout 150 $B/fp8gen bench --ops $op --out $R/bench-$op > $R/bench-$op.log 2>&1; note "bench $op rc=$? $(( $(date +%s) - t0 )) s"
  tar czf $OUT/r.tgz -C $OUT r
done
grep -h '^| [a-z]' $R/bench-*/*.md
tar czf $OUT/r.tgz -C $OUT r
