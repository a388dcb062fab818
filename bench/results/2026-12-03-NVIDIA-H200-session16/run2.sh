#!/bin/bash
# call 2: the probe with the counts released by one lane, an odd grid
# (programs alternate amax and cast items), two register buffers in turn;
# then ncu of one launch.
export PATH=/usr/local/cuda/bin:$PATH
D=bench/results/2026-12-03-NVIDIA-H200-session16
R=$OUT/r; mkdir -p $R
pack() { tar czf $OUT/r.tgz -C $OUT r; }
( cd $D/probes && nvcc -O3 -std=c++17 -arch=sm_90 -Xptxas -v -o /tmp/l2pipe l2pipe.cu ) > $R/probe_build.txt 2>&1
timeout 300 /tmp/l2pipe > $R/probe.txt 2>&1; echo "rc=$?" >> $R/probe.txt
pack
timeout 150 ncu --clock-control none -k regex:pipe --launch-skip 1 --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats /tmp/l2pipe one > $R/ncu.txt 2>&1
pack
