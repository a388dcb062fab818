#!/bin/bash
# call 7: call 6's bench runs (620 µs) against the sweep's (611 µs) at
# grouped 65536x7168x8: the sweep passes --warm 5 and --schedule; bench
# defaults to --warm 20 and the tuned schedule (the same knobs).
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_CACHE=/tmp/jit16
R=$OUT/r; mkdir -p $R
B=$PWD/.gpurun16
S=65536x7168x8
K=BLOCK_E=1,BLOCK_K=64,BLOCK_T=64,BY_ROWS=0,FUSED=0,ORDER=1,PREFETCH=1,SPLIT=8,WARPS=4
run() { echo "== $*" >> $R/control.log; timeout 60 $B/fp8gen bench --ops grouped_colwise_cast --shapes $S --peers off --plot off --check=false --out $R/x "$@" 2>&1 | grep 'fp8gen .* µs' >> $R/control.log; }
for rep in 1 2; do
  run --warm 5 --iters 60
  run --warm 20 --iters 60
  run --warm 5 --iters 60 --schedule $K
  run --warm 20 --iters 60 --schedule $K
  run --warm 0 --iters 60
  run --warm 100 --iters 60
done
tar czf $OUT/r.tgz -C $OUT r
