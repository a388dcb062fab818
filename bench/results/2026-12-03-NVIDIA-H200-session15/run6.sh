#!/bin/bash
# call 6: the review's changes to the emitted signal/wait (the bounded
# spin, AMD's fence) and to LaunchResident, on the H200: the capability
# test of programs waiting on each other, racecheck and synccheck.
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_CACHE=/tmp/jit15 FP8GEN_REQUIRE_GPU=1
R=$OUT/r; mkdir -p $R
B=$PWD/.gpurun15
cd backend
timeout 60 $B/backend.test -test.run 'TestGPUCapabilities|TestGPUSumContract' -test.v 2>&1 | grep -E "^\s*--- |^(PASS|FAIL|ok)|panic|rror" > $R/tests.txt
for tool in racecheck synccheck memcheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 $B/backend.test -test.run 'TestGPUCapabilities/programs' > $R/$tool.txt 2>&1; echo "rc=$?" >> $R/$tool.txt
done
tar czf $OUT/r.tgz -C $OUT r
