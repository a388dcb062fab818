#!/bin/bash
# call 3: the stores of qt in aligned pieces (fp8g_st_any) where T or M is
# not a multiple of 16. First the backend's GPU tests that run every op at
# odd shapes (every schedule, the goldens, the reference shapes), and
# memcheck over odd-shaped runs; then the sweep at odd T and M; then tunes
# at the three grouped bench shapes less 16 rows, into a fresh cache.
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_CACHE=/tmp/jit17 FP8GEN_REQUIRE_GPU=1
D=bench/results/2026-12-03-NVIDIA-H200-session17
R=$OUT/r; mkdir -p $R
B=$PWD/.gpurun17
pack() { tar czf $OUT/r.tgz -C $OUT r; }
nvidia-smi --query-gpu=name,uuid,pci.bus_id,driver_version --format=csv > $R/gpu.txt
(cd backend && timeout 240 $B/backend.test -test.run 'TestGPU(EverySchedule|GoldenSchedules|OpsMatchReference)$' -test.timeout 235s > $R/backend.txt 2>&1; echo "rc=$?" >> $R/backend.txt)
pack
for a in "colwise_cast --shape M=1001,K=333" "grouped_colwise_cast --shape T=1001,K=333,E=7" "expert_colwise_cast --shape E=3,K=1001,N=333 --opt layout=nk"; do
  timeout 60 compute-sanitizer --tool memcheck $B/fp8gen run $a >> $R/memcheck.txt 2>&1; echo "rc=$? ($a)" >> $R/memcheck.txt
done
pack
BIN=.gpurun17 ITERS=60 DEADLINE=120 bash scripts/sweep.sh $R/sweep < $D/spec3.txt > $R/sweep.log 2>&1
cp $R/sweep/sweep.tsv $R/sweep/kernels.tsv $R/ 2>/dev/null
pack
for s in T=65520,K=7168,E=8 T=32752,K=2048,E=16 T=16368,K=5120,E=64; do
  timeout 100 $B/fp8gen tune grouped_colwise_cast --shape $s --cache $R/tune.json --iters 50 >> $R/tune.txt 2>&1; echo "rc=$? ($s)" >> $R/tune.txt
  pack
done
