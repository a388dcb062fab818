#!/bin/bash
# call 5: is the grouped cast's qt store at T=65536 (a column every 64 KiB)
# slowed by its power-of-two stride? The shipped schedule at T=65536,
# 65520 and 65664 (16-byte aligned rows, the same schedule class), each
# kernel's time by ncu.
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_CACHE=/tmp/jit16
D=bench/results/2026-12-03-NVIDIA-H200-session16
R=$OUT/r; mkdir -p $R
BIN=.gpurun16 ITERS=60 DEADLINE=400 bash scripts/sweep.sh $R/sweep < $D/spec5.txt > $R/sweep.log 2>&1
cp $R/sweep/sweep.tsv $R/sweep/kernels.tsv $R/ 2>/dev/null
tar czf $OUT/r.tgz -C $OUT r
