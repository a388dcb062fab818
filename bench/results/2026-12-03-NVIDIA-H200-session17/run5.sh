#!/bin/bash
# call 5: the bench with the PyTorch peers at (65520, 7168, 8), the
# default schedule of main at 67057f6 (split from call 4, whose first try
# the device machine was taken back during).
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_CACHE=/tmp/jit17 FP8GEN_REQUIRE_GPU=1
R=$OUT/r; mkdir -p $R
B=$PWD/.gpurun17
pack() { tar czf $OUT/r.tgz -C $OUT r; }
nvidia-smi --query-gpu=name,uuid,pci.bus_id,driver_version --format=csv > $R/gpu.txt
timeout 170 $B/fp8gen bench --ops grouped_colwise_cast --shapes 65520x7168x8 --peers on --out $R/peers > $R/peers.log 2>&1; echo "rc=$?" >> $R/peers.log
pack
