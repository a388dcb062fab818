#!/bin/bash
# call 2: the one-read probe; the one-read grouped kernel checked bit for bit
# on the GPU (run at the GPU shapes, every-schedule and garbage-offsets
# tests); then timed at the bench shapes (sweep points, no peers).
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_CACHE=/tmp/jit15 FP8GEN_REQUIRE_GPU=1
D=bench/results/2026-12-03-NVIDIA-H200-session15
R=$OUT/r; mkdir -p $R
B=$PWD/.gpurun15
pack() { tar czf $OUT/r.tgz -C $OUT r; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
( cd $D/probes && nvcc -O3 -std=c++17 -arch=sm_90 -Xptxas -v -o /tmp/coop coop.cu > $R/probe_build.txt 2>&1 && timeout 150 /tmp/coop ) > $R/probe.txt 2>&1
pack
S="SPLIT=1,FUSED=0,BY_ROWS=0,ORDER=0,PREFETCH=0,BLOCK_E=64"
for sh in T=4096,K=2048,E=16 T=3000,K=777,E=7 T=20000,K=64,E=3; do
  for adv in false true; do
    for sch in "$S,PER_CU=4,BLOCK_T=64,BLOCK_K=64,WARPS=8" "$S,PER_CU=8,BLOCK_T=32,BLOCK_K=64,WARPS=4"; do
      echo "== $sh adv=$adv $sch" >> $R/run.txt
      timeout 60 $B/fp8gen run grouped_colwise_cast --device gpu --shape $sh --schedule "$sch" --adversarial=$adv >> $R/run.txt 2>&1; echo "rc=$?" >> $R/run.txt
    done
  done
done
(cd backend && timeout 110 $B/backend.test -test.run 'TestGPU(EverySchedule|GroupedGarbageOffsets)' -test.v 2>&1 | grep -E "^(=== RUN|\s*--- (FAIL|PASS)|FAIL|PASS|ok|panic)|grouped" | grep -v "=== RUN" | grep -E "grouped|FAIL|panic|^(PASS|FAIL|ok)" > $R/tests.txt)
pack
for sh in 65536x7168x8 32768x2048x16 16384x5120x64; do
  for sch in "$S,PER_CU=4,BLOCK_T=64,BLOCK_K=64,WARPS=8" "$S,PER_CU=2,BLOCK_T=64,BLOCK_K=64,WARPS=8" "$S,PER_CU=8,BLOCK_T=32,BLOCK_K=64,WARPS=4" "$S,PER_CU=4,BLOCK_T=32,BLOCK_K=64,WARPS=4"; do
    echo "grouped_colwise_cast $sh $sch"
  done
done > /tmp/spec.txt
BIN=$B ITERS=30 DEADLINE=150 bash scripts/sweep.sh $R/sweep < /tmp/spec.txt > /dev/null 2>&1
cp $R/sweep/sweep.tsv $R/ 2>/dev/null
pack
