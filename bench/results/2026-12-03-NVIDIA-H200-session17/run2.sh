#!/bin/bash
# call 2: tall tiles where T (colwise: M) is not a multiple of 32, at the
# three grouped bench shapes less 16 rows (and 65528, 65535), and the dense
# colwise cast at M = 16368 and 16383 beside 16384. Op times by the sweep,
# some kernels' times by ncu.
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_CACHE=/tmp/jit17
D=bench/results/2026-12-03-NVIDIA-H200-session17
R=$OUT/r; mkdir -p $R
BIN=.gpurun17 ITERS=60 DEADLINE=480 bash scripts/sweep.sh $R/sweep < $D/spec2.txt > $R/sweep.log 2>&1
cp $R/sweep/sweep.tsv $R/sweep/kernels.tsv $R/sweep/gpu.txt $R/ 2>/dev/null
tar czf $OUT/r.tgz -C $OUT r
