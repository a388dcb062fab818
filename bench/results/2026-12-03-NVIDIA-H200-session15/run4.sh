#!/bin/bash
# call 4: the capability test of programs waiting on each other (a grid
# barrier through signal/wait, launched resident) and the grouped tests on
# the GPU; then the grouped two-pass with KEEP (the amax walked backward,
# its last KEEP KiB read plainly, the rest once) timed against KEEP=0.
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_CACHE=/tmp/jit15 FP8GEN_REQUIRE_GPU=1
R=$OUT/r; mkdir -p $R
B=$PWD/.gpurun15
pack() { tar czf $OUT/r.tgz -C $OUT r; }
(cd backend && timeout 150 $B/backend.test -test.run 'TestGPUCapabilities|TestGPUEverySchedule/grouped|TestGPUGoldenSchedules/grouped' -test.v 2>&1 | grep -E "^\s*--- |^(PASS|FAIL|ok)|panic|rror" > $R/tests.txt)
(cd backend && timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 $B/backend.test -test.run 'TestGPUCapabilities/programs' > $R/racecheck.txt 2>&1; echo "rc=$?" >> $R/racecheck.txt)
pack
T="FUSED=0,BY_ROWS=0,BLOCK_E=1,ORDER=1,PREFETCH=1,BLOCK_T=64,BLOCK_K=64,WARPS=4"
{
for k in 0 32768 16384 24576 40960 0 32768; do echo "grouped_colwise_cast 65536x7168x8 $T,SPLIT=8,KEEP=$k"; done
for s in 16 32; do for k in 0 32768; do echo "grouped_colwise_cast 32768x2048x16 $T,SPLIT=$s,KEEP=$k"; done; done
for s in 2 4; do for k in 0 32768; do echo "grouped_colwise_cast 16384x5120x64 $T,SPLIT=$s,KEEP=$k"; done; done
} > /tmp/spec.txt
BIN=$B ITERS=60 DEADLINE=230 bash scripts/sweep.sh $R/sweep < /tmp/spec.txt > /dev/null 2>&1
cp $R/sweep/sweep.tsv $R/ 2>/dev/null; rm -rf $R/sweep
pack
