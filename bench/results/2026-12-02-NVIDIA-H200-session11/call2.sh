# Session 11, call 2: TestGPUTimeFlushed (call 1 ran out of time before it), then the bench with the PyTorch peers of every op but
# colwise (call 1), the expert cast in both layouts, as a user runs it: no tuning cache of their own, so
# the shipped tuning (tune/shipped/NVIDIA-H200.json, call 1's tune).
set -u
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_CACHE=/tmp/jit11 PYTHONUNBUFFERED=1 FP8GEN_TUNE_CACHE=/tmp/none.json
B=$PWD/.gpurun11
R=$OUT/r; mkdir -p $R
note() { echo "$*" | tee -a $R/log.txt; }
[ -f .gpurun11/jit.tgz ] && tar xzf .gpurun11/jit.tgz -C /tmp
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/gpu.txt 2>&1
(cd backend && FP8GEN_REQUIRE_GPU=1 timeout 60 $B/backend.test -test.v -test.run 'GPUTimeFlushed' > $R/backend-tests.log 2>&1; echo "backend TimeFlushed rc=$?" >> $R/log.txt)
grep -h -- '^--- \|flushed' $R/backend-tests.log
for a in qk_norm_rope qk_norm_rope_bwd grouped_colwise_cast expert_colwise_cast "expert_colwise_cast --opt layout=nk" rowwise_cast tensorwise_cast; do
  set -- $a; d=$R/bench-$1${2:+-nk}
  t0=$(date +%s); timeout 150 $B/fp8gen bench --ops $a --out $d > $d.log 2>&1; note "bench $a rc=$? $(( $(date +%s) - t0 )) s"
  tar czf $OUT/r.tgz -C $OUT r
done
grep -h '^| [a-z]' $R/bench-*/*.md
tar czf $OUT/r.tgz -C $OUT r
