#!/bin/bash
# call 5: main at ef8a71d (AMD's amax max; sm_90 kernels unchanged): the
# capability cases on the H200, the new "an amax carried by a loop"
# among them.
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_REQUIRE_GPU=1 FP8GEN_CACHE=/tmp/jit5
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,uuid,pci.bus_id,driver_version --format=csv > $R/gpu.txt
(cd backend && timeout 120 $PWD/../.gpurun19/t/backend.test -test.run 'TestGPUCapabilities$' -test.v > $R/backend.txt 2>&1; echo "rc=$?" >> $R/backend.txt)
grep -E '^(    --- |--- |PASS|FAIL|ok)|rc=' $R/backend.txt | tail -20
tar czf $OUT/r.tgz -C $OUT r
