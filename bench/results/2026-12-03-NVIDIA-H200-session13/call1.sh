# Session 13, call 1: points next to the shipped defaults, each timed by
# `fp8gen bench --peers off --schedule …` (flushed, median of 200): colwise's
# KEEP from 1 to 4 eighths at the three bench shapes (the tune only ever
# timed 2 and 8); rowwise 4096×14336's persistent programs a CU (PER_CU)
# around the shipped 8; the QK forward at (8, 4096, 32, 8, 128) in 8-wave
# blocks of the same per-lane work, and with angles=theta (no tables). Each point twice, interleaved.
set -u
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_CACHE=/tmp/jit13 PYTHONUNBUFFERED=1
B=$PWD/.gpurun13
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
pack() { tar czf $OUT/r.tgz -C $OUT r; }
one() { # op shape schedule [more bench flags]
  local op=$1 shape=$2 sched=$3; shift 3
  local out; out=$(timeout 60 $B/fp8gen bench --peers off --ops $op --shapes $shape --schedule $sched --out $R/tmp "$@" 2>&1 | tee -a $R/all.log | grep -m1 "fp8gen .* µs")
  echo "$op $shape $sched $* :: $out" | tee -a $R/log.txt
}
for rep in 1 2; do
  for k in 1 2 3 4; do
    one colwise_cast 8192x8192 BLOCK_M=64,BLOCK_K=64,WARPS=4,SPLIT=8,PREFETCH=1,KEEP=$k
    one colwise_cast 16384x4096 BLOCK_M=64,BLOCK_K=64,WARPS=4,SPLIT=16,PREFETCH=1,KEEP=$k
    one colwise_cast 4096x14336 BLOCK_M=64,BLOCK_K=64,WARPS=4,SPLIT=4,PREFETCH=1,KEEP=$k
  done
  pack
  for cu in 3 4 5 6 8; do
    one rowwise_cast 4096x14336 BLOCK_K=16384,LOOP=0,PER_CU=$cu,PREFETCH=1,ROWS=1,WARPS=8
  done
  one qk_norm_rope 8x4096x32x8x128 EARLY_LOADS=0,GROUP=4,HEAD_D=128,KV_HEADS=8,LANES=8,ROWS=16,WARPS=4
  one qk_norm_rope 8x4096x32x8x128 EARLY_LOADS=0,GROUP=4,HEAD_D=128,KV_HEADS=8,LANES=8,ROWS=32,WARPS=8
  one qk_norm_rope 8x4096x32x8x128 EARLY_LOADS=0,GROUP=4,HEAD_D=128,KV_HEADS=8,LANES=8,ROWS=8,WARPS=2
  # No tables: cos and sin computed in the kernel (another option, not a
  # schedule: how much do the tables' loads and registers cost?)
  one qk_norm_rope 8x4096x32x8x128 EARLY_LOADS=0,GROUP=4,HEAD_D=128,KV_HEADS=8,LANES=8,ROWS=16,WARPS=4 --opt angles=theta
  pack
done
