#!/bin/bash
# call 3: the probe with asynchronous copies (cp.async) into a ring of S stages
# in shared memory (pipe2), against call 2's best; then ncu of one launch.
# (It ran with no argument; in the committed probe "call3" selects those
# runs, located by binary search as then.)
export PATH=/usr/local/cuda/bin:$PATH
D=bench/results/2026-12-03-NVIDIA-H200-session16
R=$OUT/r; mkdir -p $R
pack() { tar czf $OUT/r.tgz -C $OUT r; }
( cd $D/probes && nvcc -O3 -std=c++17 -arch=sm_90 -Xptxas -v -o /tmp/l2pipe l2pipe.cu ) > $R/probe_build.txt 2>&1
timeout 300 /tmp/l2pipe call3 > $R/probe.txt 2>&1; echo "rc=$?" >> $R/probe.txt
pack
timeout 150 ncu --clock-control none -k regex:pipe --launch-skip 1 --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats /tmp/l2pipe one > $R/ncu.txt 2>&1
pack
