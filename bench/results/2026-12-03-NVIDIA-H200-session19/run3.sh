#!/bin/bash
# call 3: 2e8ea4e (new2) on the H200: fp8gen tune at every bench shape of
# the ops whose kernels changed (into tune.json, to ship), then the
# defaults under that tuning against base (002c874, its shipped tuning),
# interleaved, peers off; then, as time allows, expert with the peers.
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_REQUIRE_GPU=1
R=$OUT/r; mkdir -p $R
B=$PWD/.gpurun19
T0=$(date +%s)
left() { [ $(($(date +%s) - T0)) -lt ${1:-560} ]; }
pack() { tar czf $OUT/r.tgz -C $OUT r; }
nvidia-smi --query-gpu=name,uuid,pci.bus_id,driver_version --format=csv > $R/gpu.txt
export FP8GEN_CACHE=/tmp/jit_new2
for spec in "colwise_cast" "grouped_colwise_cast" "expert_colwise_cast" "expert_colwise_cast --opt layout=nk" "rowwise_cast" "tensorwise_cast"; do
  left 200 || break
  timeout 120 $B/new2/fp8gen tune $spec --bench --cache $R/tune.json >> $R/tune.txt 2>&1; echo "rc=$? $spec" >> $R/tune.txt
  tail -1 $R/tune.txt
done
pack
bench() { # build tag [opts...]
  local v=$1 tag=$2; shift 2
  local tc=; [ $v = new2 ] && tc=$R/tune.json
  FP8GEN_TUNE_CACHE=$tc FP8GEN_CACHE=/tmp/jit_$v timeout 90 $B/$v/fp8gen bench --peers off --iters 60 --check=false "$@" --out $R/b_${v}_$tag > $R/b_${v}_$tag.$(date +%s%N).txt 2>&1
  echo "$v $tag: $(grep -h 'fp8gen .* µs' $R/b_${v}_$tag.*.txt | tail -4 | sed 's/, [0-9.]*% of copy//' | tr '\n' ' ')"
}
for spec in "colwise --ops colwise_cast" "grouped --ops grouped_colwise_cast" "expert --ops expert_colwise_cast" "expertnk --ops expert_colwise_cast --opt layout=nk" "rowwise --ops rowwise_cast" "tensorwise --ops tensorwise_cast"; do
  set -- $spec; tag=$1; shift
  for v in base new2 new2 base; do left 360 && bench $v $tag "$@"; done
  pack
done
left 380 && FP8GEN_TUNE_CACHE=$R/tune.json timeout $((585 - ($(date +%s) - T0))) $B/new2/fp8gen bench --ops expert_colwise_cast --peers on --out $R/peers > $R/peers.txt 2>&1
tail -12 $R/peers.txt
pack
