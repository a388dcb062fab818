#!/bin/bash
# call 1: the grouped cast at T not a multiple of 32. The shipped schedule
# and taller tiles at T=65520 (≡ 16 mod 32), the shipped one at 65528
# (≡ 8 mod 16) and 65535 (odd), the two smaller bench shapes at T-16;
# each kernel's time by ncu. Then DRAM and L2 write metrics of the cast
# kernel at 65536 against 65520 (does a straddled sector cost a DRAM read?),
# and ncu's sections on the E=64 fused kernel.
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_CACHE=/tmp/jit17
D=bench/results/2026-12-03-NVIDIA-H200-session17
R=$OUT/r; mkdir -p $R
pack() { tar czf $OUT/r.tgz -C $OUT r; }
BIN=.gpurun17 ITERS=60 DEADLINE=330 bash scripts/sweep.sh $R/sweep < $D/spec1.txt > $R/sweep.log 2>&1
cp $R/sweep/sweep.tsv $R/sweep/kernels.tsv $R/ 2>/dev/null
pack
M=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_write.sum,lts__t_requests_op_write.sum,lts__t_sectors_op_read.sum,lts__t_sector_op_read_hit_rate.pct,gpu__time_duration.sum
for T in 65536 65520; do
  timeout 60 ncu --clock-control none --metrics $M -k regex:grouped_ -c 2 --csv .gpurun17/fp8gen bench --ops grouped_colwise_cast --shapes ${T}x7168x8 \
    --schedule BLOCK_T=64,BLOCK_K=64,WARPS=4,SPLIT=8,ORDER=1,BLOCK_E=1,BY_ROWS=0,FUSED=0,PREFETCH=1 --peers off --check=false --iters 1 --warm 0 --out $R/m$T > $R/metrics$T.csv 2>&1
done
pack
timeout 90 ncu --clock-control none --section SpeedOfLight --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis --section LaunchStats -k regex:grouped_fused -c 1 \
  .gpurun17/fp8gen bench --ops grouped_colwise_cast --shapes 16384x5120x64 \
  --schedule BLOCK_T=64,BLOCK_K=64,WARPS=4,SPLIT=1,ORDER=0,BLOCK_E=1,BY_ROWS=0,FUSED=1,PREFETCH=1 --peers off --check=false --iters 1 --warm 0 --out $R/f64 > $R/fused64.txt 2>&1
pack
