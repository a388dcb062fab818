# Session 13, call 4: the grouped cast at its two shapes short of their
# targets, points beyond the candidates (bench --schedule, no peers, no
# reference check): at (65536, 7168, 8) programs a group (SPLIT), grid
# order and prefetch around the shipped 64 × 64 two-pass, by rows at more
# ranges; at (16384, 5120, 64) the fused kernel on narrower strips and
# the two-pass with 2 and 4 programs a group.
set -u
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_CACHE=/tmp/jit13 PYTHONUNBUFFERED=1
B=$PWD/.gpurun13
R=/tmp/r; mkdir -p $R
pack() { tar czf $OUT/r.tgz -C /tmp r; }
one() { # shape schedule
  local out; out=$(timeout 60 $B/fp8gen bench --peers off --check=false --ops grouped_colwise_cast --shapes $1 --schedule $2 --out $R/tmp 2>&1 | tee -a $R/all.log | grep -m1 "fp8gen .* µs")
  echo "$1 $2 :: $out" | tee -a $R/log.txt
}
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
two=BLOCK_E=1,BLOCK_K=64,BLOCK_T=64,BY_ROWS=0,FUSED=0,WARPS=4
for rep in 1 2; do
  for s in 4 8 16 32; do one 65536x7168x8 $two,ORDER=1,PREFETCH=1,SPLIT=$s; done
  one 65536x7168x8 $two,ORDER=0,PREFETCH=1,SPLIT=8
  one 65536x7168x8 $two,ORDER=1,PREFETCH=0,SPLIT=8
  for s in 32 64; do one 65536x7168x8 BLOCK_E=8,BLOCK_K=64,BLOCK_T=64,BY_ROWS=1,FUSED=0,ORDER=0,PREFETCH=1,WARPS=4,SPLIT=$s; done
  one 16384x5120x64 BLOCK_E=1,BLOCK_K=64,BLOCK_T=64,BY_ROWS=0,FUSED=1,ORDER=0,PREFETCH=1,SPLIT=1,WARPS=4
  one 16384x5120x64 BLOCK_E=1,BLOCK_K=32,BLOCK_T=64,BY_ROWS=0,FUSED=1,ORDER=0,PREFETCH=1,SPLIT=1,WARPS=4
  one 16384x5120x64 BLOCK_E=1,BLOCK_K=32,BLOCK_T=128,BY_ROWS=0,FUSED=1,ORDER=0,PREFETCH=1,SPLIT=1,WARPS=4
  for s in 2 4; do one 16384x5120x64 $two,ORDER=1,PREFETCH=1,SPLIT=$s; done
  pack
done
