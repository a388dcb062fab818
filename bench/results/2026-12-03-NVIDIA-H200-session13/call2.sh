# Session 13, call 2: the QK kernels' spaces with smaller blocks (the
# forward's 16 elements a lane in 2- and 1-wave blocks, the backward's in
# 2-wave blocks, 8 a CU; call 1 ran the forward's 2-wave point 1% faster
# at (8, 4096, 32, 8, 128)). Their GPU tests over every schedule, the tune
# of both at the bench shapes, then the bench with peers under that tune.
# Last, the column-wise casts' tiles in half the waves (half the rows, the
# same work a lane) beside their shipped schedules, `bench --schedule`.
set -u
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_REQUIRE_GPU=1 FP8GEN_CACHE=/tmp/jit13 PYTHONUNBUFFERED=1
B=$PWD/.gpurun13
R=$OUT/r; mkdir -p $R
note() { echo "$*" | tee -a $R/log.txt; }
pack() { cp -f /tmp/tune13.json $R/ 2>/dev/null; tar czf $OUT/r.tgz -C $OUT r; }
one() { # op shape schedule
  local out; out=$(timeout 60 $B/fp8gen bench --peers off --ops $1 --shapes $2 --schedule $3 --out $R/tmp 2>&1 | tee -a $R/all.log | grep -m1 "fp8gen .* µs")
  echo "$1 $2 $3 :: $out" | tee -a $R/log.txt
}
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
(cd backend && timeout 200 $B/backend.test -test.v -test.run 'GPUEverySchedule/qk|GPUOpsMatchReference/qk|GPUGoldenSchedules/qk' > $R/backend-tests.log 2>&1; echo "backend tests rc=$?" >> $R/log.txt)
grep -h -- '^--- \|^    --- FAIL' $R/backend-tests.log | tail -12; tail -2 $R/log.txt
pack
export FP8GEN_TUNE_CACHE=/tmp/tune13.json
for op in qk_norm_rope qk_norm_rope_bwd; do
  t0=$(date +%s); timeout 150 $B/fp8gen tune $op --bench --force > $R/tune-$op.log 2>&1; note "tune $op rc=$? $(( $(date +%s) - t0 )) s"
  grep -h "^\*\|^  [0-9]" $R/tune-$op.log | cut -c1-120
  pack
done
t0=$(date +%s); timeout 200 $B/fp8gen bench --ops qk_norm_rope,qk_norm_rope_bwd --out $R/bench-qk > $R/bench-qk.log 2>&1; note "bench qk rc=$? $(( $(date +%s) - t0 )) s"
grep -h '^| [a-z]' $R/bench-qk/*.md
pack
unset FP8GEN_TUNE_CACHE
for rep in 1 2; do
  one colwise_cast 8192x8192 BLOCK_M=64,BLOCK_K=64,WARPS=4,SPLIT=8,PREFETCH=1,KEEP=2
  one colwise_cast 8192x8192 BLOCK_M=32,BLOCK_K=64,WARPS=2,SPLIT=8,PREFETCH=1,KEEP=2
  one colwise_cast 8192x8192 BLOCK_M=32,BLOCK_K=64,WARPS=2,SPLIT=16,PREFETCH=1,KEEP=2
  one grouped_colwise_cast 16384x5120x64 BLOCK_E=1,BLOCK_K=64,BLOCK_T=64,BY_ROWS=0,FUSED=1,ORDER=0,PREFETCH=1,SPLIT=1,WARPS=4
  one grouped_colwise_cast 16384x5120x64 BLOCK_E=1,BLOCK_K=64,BLOCK_T=32,BY_ROWS=0,FUSED=1,ORDER=0,PREFETCH=1,SPLIT=1,WARPS=2
  one grouped_colwise_cast 32768x2048x16 BLOCK_E=16,BLOCK_K=64,BLOCK_T=128,BY_ROWS=1,FUSED=0,ORDER=0,PREFETCH=1,SPLIT=32,WARPS=8
  one grouped_colwise_cast 32768x2048x16 BLOCK_E=16,BLOCK_K=64,BLOCK_T=64,BY_ROWS=1,FUSED=0,ORDER=0,PREFETCH=1,SPLIT=32,WARPS=4
  one grouped_colwise_cast 32768x2048x16 BLOCK_E=16,BLOCK_K=64,BLOCK_T=64,BY_ROWS=1,FUSED=0,ORDER=0,PREFETCH=1,SPLIT=64,WARPS=4
  one expert_colwise_cast 64x2048x1408 BLOCK_K=64,BLOCK_N=64,FUSED=0,PREFETCH=1,SPLIT=2,WARPS=4
  one expert_colwise_cast 64x2048x1408 BLOCK_K=32,BLOCK_N=64,FUSED=0,PREFETCH=1,SPLIT=2,WARPS=2
  one expert_colwise_cast 64x2048x1408 BLOCK_K=32,BLOCK_N=64,FUSED=0,PREFETCH=1,SPLIT=4,WARPS=2
  pack
done
