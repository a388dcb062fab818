#!/bin/bash
# call 4: main at 67057f6 on the H200. The backend's GPU tests of the
# column-wise, MoE, row-wise and tensor-wise ops (every schedule at the odd
# shapes, the goldens, the reference shapes: the stores in aligned pieces
# and the tall default tiles), then the defaults where T or M is not a
# multiple of 32 against the copy (the peers: call 5).
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_CACHE=/tmp/jit17 FP8GEN_REQUIRE_GPU=1
R=$OUT/r; mkdir -p $R
B=$PWD/.gpurun17
pack() { tar czf $OUT/r.tgz -C $OUT r; }
nvidia-smi --query-gpu=name,uuid,pci.bus_id,driver_version --format=csv > $R/gpu.txt
(cd backend && timeout 250 $B/backend.test -test.run 'TestGPU(EverySchedule|GoldenSchedules|OpsMatchReference)$/(colwise|expert|grouped|rowwise|tensorwise)' -test.v -test.timeout 245s > $R/backend.txt 2>&1; echo "rc=$?" >> $R/backend.txt)
pack
timeout 60 $B/fp8gen bench --ops grouped_colwise_cast --shapes 65520x7168x8,32752x2048x16,16368x5120x64,65528x7168x8,65535x7168x8 --peers off --out $R/grouped > $R/grouped.log 2>&1; echo "rc=$?" >> $R/grouped.log
timeout 40 $B/fp8gen bench --ops colwise_cast --shapes 16384x8192,16368x8192,16383x8192 --peers off --out $R/colwise > $R/colwise.log 2>&1; echo "rc=$?" >> $R/colwise.log
pack
