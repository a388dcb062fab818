#!/bin/bash
# call 1: main at 08728c2 (max.f32 where no operand is ever -0, fp8
# conversions two at a time) against 002c874 on the H200: each op's
# default schedules at its bench shapes, base and new interleaved (peers
# off; new checked bit for bit at the full shapes), the SASS instruction
# count of every kernel either build compiled, then the GPU tests of the
# new build as time allows. Stops starting steps 560 s in.
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_REQUIRE_GPU=1
R=$OUT/r; mkdir -p $R
B=$PWD/.gpurun19
T0=$(date +%s)
left() { [ $(($(date +%s) - T0)) -lt ${1:-560} ]; }
pack() { tar czf $OUT/r.tgz -C $OUT r; }
nvidia-smi --query-gpu=name,uuid,pci.bus_id,driver_version --format=csv > $R/gpu.txt
bench() { # build op tag [opts...]
  local v=$1 op=$2 tag=$3; shift 3
  local chk=--check=false; [ $v = new ] && [ ! -e $R/checked_$tag ] && chk=--check=true && touch $R/checked_$tag
  FP8GEN_CACHE=/tmp/jit_$v timeout 90 $B/$v/fp8gen bench --ops $op --peers off --iters 60 $chk "$@" --out $R/b_${v}_$tag > $R/b_${v}_$tag.$(date +%s).txt 2>&1
  echo "$v $tag: $(grep -h 'µs' $R/b_${v}_$tag.*.txt | tail -4 | tr '\n' ' ')"
}
for spec in "grouped_colwise_cast grouped" "expert_colwise_cast expert" "colwise_cast colwise" "rowwise_cast rowwise" "tensorwise_cast tensorwise"; do
  set -- $spec
  for v in base new new base; do left 420 && bench $v $1 $2; done
  pack
done
H64=BLOCK_E=1,BLOCK_K=64,BLOCK_T=64,BY_ROWS=0,FUSED=2,HOLD=4,ORDER=0,PREFETCH=1,SPLIT=1,WARPS=4
for v in base new; do left 440 && bench $v grouped_colwise_cast held64 --shapes 16384x5120x64 --schedule $H64; done
for v in base new; do
  for c in $(find /tmp/jit_$v -name '*.cubin' 2>/dev/null); do
    cuobjdump -sass $c | awk -v v=$v '/Function :/{f=$3} /^ +\/\*[0-9a-f]+\*\/ /{n[f]++} END{for (k in n) print v, k, n[k]}'
  done
done > $R/sass.txt 2>&1
pack
(cd backend && left 470 && timeout $((590 - ($(date +%s) - T0))) $B/new/backend.test -test.run 'TestGPU(OpsMatchReference|GoldenSchedules|Capabilities|SumContract)$' -test.v -test.timeout 300s > $R/backend.txt 2>&1; echo "rc=$?" >> $R/backend.txt)
grep -E '^(--- FAIL|FAIL|ok|PASS)|rc=' $R/backend.txt | tail -5
pack
