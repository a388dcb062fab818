# Session 8, call 5 (the code as committed, f6130f1): cold tunes with an
# empty JIT cache and the references in parallel (wall times), a cache
# hit, then the casts' bench with the PyTorch peers in one run (the
# shipped tuning as the default).
set -u
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
B=$PWD/.gpurun8
R=$OUT/r; mkdir -p $R
note() { echo "$*" | tee -a $R/log.txt; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/gpu.txt 2>&1
export FP8GEN_CACHE=/tmp/jit-cold
for s in "rowwise_cast M=16384,K=8192" "rowwise_cast M=32768,K=4096" "tensorwise_cast M=16384,K=8192"; do
  set -- $s
  t0=$(date +%s%N); timeout 100 $B/fp8gen tune $1 --shape $2 --cache $R/tune.json > $R/tune-$1-$2.log 2>&1
  note "tune $1 $2 rc=$? wall $(( ($(date +%s%N) - t0) / 1000000 )) ms (cold: empty JIT cache, empty tuning cache)"
done
t0=$(date +%s%N); $B/fp8gen tune rowwise_cast --shape M=16384,K=8192 --cache $R/tune.json > $R/tune-hit.log 2>&1
note "tune rowwise_cast M=16384,K=8192 rc=$? wall $(( ($(date +%s%N) - t0) / 1000000 )) ms (a cache hit)"
grep -h "compiled" $R/tune-*.log
export FP8GEN_CACHE=/tmp/jit8
for op in rowwise_cast tensorwise_cast colwise_cast; do
  t0=$(date +%s); timeout 200 $B/fp8gen bench --ops $op --out $R/bench-$op > $R/bench-$op.log 2>&1; note "bench $op rc=$? $(( $(date +%s) - t0 )) s"
done
grep -h '^| [a-z]' $R/bench-*/*.md
tar czf $OUT/r.tgz -C $OUT r
