#!/bin/bash
# call 4: main with call 3's tuning shipped (fp8gen built from the working
# tree after 2e8ea4e, tune/shipped/NVIDIA-H200.json updated; backend.test
# of 2e8ea4e, whose kernels are the same): the grouped cast and the
# expert cast's nk layout with the PyTorch peers (kn had them in call 3),
# then the garbage offsets under compute-sanitizer memcheck.
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_REQUIRE_GPU=1 FP8GEN_CACHE=/tmp/jit4
R=$OUT/r; mkdir -p $R
B=$PWD/.gpurun19/new3
T0=$(date +%s)
pack() { tar czf $OUT/r.tgz -C $OUT r; }
nvidia-smi --query-gpu=name,uuid,pci.bus_id,driver_version --format=csv > $R/gpu.txt
timeout 220 $B/fp8gen bench --ops grouped_colwise_cast --peers on --out $R/grouped > $R/grouped.txt 2>&1; echo "rc=$?" >> $R/grouped.txt
grep -A6 '^| op' $R/grouped.txt; tail -1 $R/grouped.txt
pack
timeout 200 $B/fp8gen bench --ops expert_colwise_cast --opt layout=nk --peers on --out $R/expertnk > $R/expertnk.txt 2>&1; echo "rc=$?" >> $R/expertnk.txt
grep -A7 '^| op' $R/expertnk.txt; tail -1 $R/expertnk.txt
pack
(cd backend && timeout $((560 - ($(date +%s) - T0))) compute-sanitizer --tool memcheck $B/backend.test -test.run 'TestGPUGroupedGarbageOffsets' -test.v > $R/memcheck.txt 2>&1; echo "rc=$?" >> $R/memcheck.txt)
tail -4 $R/memcheck.txt
pack
