#!/bin/bash
# call 4: every GPU test of main (892d14e: the one C fg_launch with the
# cooperative flag had not run on a GPU), the capability tests under
# compute-sanitizer memcheck.
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_CACHE=/tmp/jit16 FP8GEN_REQUIRE_GPU=1
R=$OUT/r; mkdir -p $R
B=$PWD/.gpurun16
pack() { tar czf $OUT/r.tgz -C $OUT r; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
(cd runtime && timeout 90 $B/runtime.test -test.run 'TestGPU' -test.v > $R/runtime.txt 2>&1; echo "rc=$?" >> $R/runtime.txt)
(cd launch && timeout 90 $B/launch.test -test.run 'TestGPU' -test.v > $R/launch.txt 2>&1; echo "rc=$?" >> $R/launch.txt)
pack
(cd backend && timeout 120 compute-sanitizer --tool memcheck $B/backend.test -test.run 'TestGPUCapabilities' -test.v > $R/capmem.txt 2>&1; echo "rc=$?" >> $R/capmem.txt)
pack
(cd backend && timeout 330 $B/backend.test -test.run 'TestGPU' -test.v -test.timeout 320s > $R/backend.txt 2>&1; echo "rc=$?" >> $R/backend.txt)
pack
