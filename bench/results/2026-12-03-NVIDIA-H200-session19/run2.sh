#!/bin/bash
# call 2: three builds on the H200: base (002c874), new (08728c2: max.f32,
# casts paired (r, r+1)), new2 (2e8ea4e: casts paired at their store's
# register stride). ptxas registers and SASS instruction counts of each
# build's default kernels (cu/, emitted here by fp8gen emit); the defaults
# timed interleaved (peers off); the GPU tests of new2.
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_REQUIRE_GPU=1
R=$OUT/r; mkdir -p $R
B=$PWD/.gpurun19
T0=$(date +%s)
left() { [ $(($(date +%s) - T0)) -lt ${1:-560} ]; }
pack() { tar czf $OUT/r.tgz -C $OUT r; }
nvidia-smi --query-gpu=name,uuid,pci.bus_id,driver_version --format=csv > $R/gpu.txt
mkdir -p /tmp/cub
for f in $B/cu/*.cu; do
  n=$(basename $f .cu)
  nvcc --cubin -arch=sm_90 -O3 --fmad=false -ftz=false -prec-div=true -prec-sqrt=true -Xptxas -v -o /tmp/cub/$n.cubin $f > $R/ptxas_$n.txt 2>&1
  cuobjdump -sass /tmp/cub/$n.cubin | awk -v n=$n '/Function :/{f=$3} /\/\*[0-9a-f][0-9a-f][0-9a-f][0-9a-f]\*\//{c[f]++} END{for (k in c) print n, k, c[k]}'
done > $R/sass.txt 2>&1
grep -h "registers" $R/ptxas_*.txt | head -3
cat $R/sass.txt
pack
bench() { # build tag [opts...]
  local v=$1 tag=$2; shift 2
  FP8GEN_CACHE=/tmp/jit_$v timeout 90 $B/$v/fp8gen bench --peers off --iters 60 --check=false "$@" --out $R/b_${v}_$tag > $R/b_${v}_$tag.$(date +%s%N).txt 2>&1
  echo "$v $tag: $(grep -h 'fp8gen .* µs' $R/b_${v}_$tag.*.txt | tail -4 | sed 's/, [0-9.]*% of copy//' | tr '\n' ' ')"
}
H64=BLOCK_E=1,BLOCK_K=64,BLOCK_T=64,BY_ROWS=0,FUSED=2,HOLD=4,ORDER=0,PREFETCH=1,SPLIT=1,WARPS=4
for spec in "colwise --ops colwise_cast" "grouped --ops grouped_colwise_cast" "expert --ops expert_colwise_cast" "expertnk --ops expert_colwise_cast --opt layout=nk" "rowwise --ops rowwise_cast" "held64 --ops grouped_colwise_cast --shapes 16384x5120x64 --schedule $H64"; do
  set -- $spec; tag=$1; shift
  for v in base new new2 base; do left 300 && bench $v $tag "$@"; done
  pack
done
(cd backend && left 360 && timeout $((590 - ($(date +%s) - T0))) $B/new2/backend.test -test.run 'TestGPU(OpsMatchReference|GoldenSchedules|Capabilities|SumContract)$' -test.v -test.timeout 300s > $R/backend.txt 2>&1; echo "rc=$?" >> $R/backend.txt)
grep -E '^(--- FAIL|FAIL|ok|PASS)|rc=' $R/backend.txt | tail -6
pack
