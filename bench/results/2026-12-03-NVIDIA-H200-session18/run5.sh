#!/bin/bash
# call 5: the staged rows (stage/unstage, FUSED=2) on the H200: the
# grouped op's GPU tests and the capability case, the garbage offsets under
# memcheck, the held kernel against the defaults at the bench shapes and
# at equal groups, and what a read that hits L2 costs (l2bw.cu). Stops
# starting benches 380 s in.
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_CACHE=/tmp/jit18 FP8GEN_REQUIRE_GPU=1
R=$OUT/r; mkdir -p $R
B=$PWD/.gpurun18b
T0=$(date +%s)
left() { [ $(($(date +%s) - T0)) -lt 380 ]; }
pack() { tar czf $OUT/r.tgz -C $OUT r; }
nvidia-smi --query-gpu=name,uuid,pci.bus_id,driver_version --format=csv > $R/gpu.txt
(cd backend && timeout 170 $B/backend.test -test.run 'TestGPU(EverySchedule|GoldenSchedules|OpsMatchReference)$/grouped|TestGPUCapabilities' -test.v -test.timeout 165s > $R/backend.txt 2>&1; echo "rc=$?" >> $R/backend.txt)
grep -E '^(--- FAIL|FAIL|ok|PASS)|rc=' $R/backend.txt | tail -5
(cd backend && timeout 90 compute-sanitizer --tool memcheck $B/backend.test -test.run 'TestGPUGroupedGarbageOffsets' -test.v > $R/memcheck.txt 2>&1; echo "rc=$?" >> $R/memcheck.txt)
tail -4 $R/memcheck.txt
pack
nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/l2bw $B/l2bw.cu > $R/l2bw_build.txt 2>&1 && timeout 40 /tmp/l2bw > $R/l2bw.txt 2>&1
grep -E ' (24|2048) MB, 16' $R/l2bw.txt
H2=BLOCK_E=1,BLOCK_K=64,BLOCK_T=128,BY_ROWS=0,FUSED=2,HOLD=2,ORDER=0,PREFETCH=1,SPLIT=1,WARPS=8
H4=BLOCK_E=1,BLOCK_K=64,BLOCK_T=128,BY_ROWS=0,FUSED=2,HOLD=4,ORDER=0,PREFETCH=1,SPLIT=1,WARPS=8
H64=BLOCK_E=1,BLOCK_K=64,BLOCK_T=64,BY_ROWS=0,FUSED=2,HOLD=4,ORDER=0,PREFETCH=1,SPLIT=1,WARPS=4
for p in "16384x5120x64 def" "16384x5120x64 H2" "16384x5120x64 H64" "16384x5120x64 H4" "32768x2048x16 def" "32768x2048x16 H4" "32768x2048x16 H2" "65536x7168x8 def" "65536x7168x8 H4"; do
  set -- $p; left || break
  if [ $2 = def ]; then s=""; else s="--schedule ${!2}"; fi
  timeout 45 $B/fp8gen bench --ops grouped_colwise_cast --shapes $1 --peers off --iters 60 $s --out $R/b_$2_$1 > $R/b_$2_$1.txt 2>&1
  echo "$p: $(grep -h 'fp8gen .* µs' $R/b_$2_$1.txt)"
done
pack
for s in "" "--schedule $H2"; do
  left || break
  timeout 30 $B/fp8gen run grouped_colwise_cast --shape T=16384,K=5120,E=64 --in offsets=$B/uni64.npy --device gpu $s >> $R/uni.txt 2>&1
done
grep -E 'kernel|time|check' $R/uni.txt
pack
