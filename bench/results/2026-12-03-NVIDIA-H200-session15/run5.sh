#!/bin/bash
# call 5: grouped_colwise_cast at (65536, 7168, 8) with the PyTorch peers,
# at main's kernels (unchanged since 27e80c7): the target nearest reach
# (55% of copy; the sweep of call 4 timed the default at 611.6-611.9 µs
# against a 337 µs copy).
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_CACHE=/tmp/jit15
R=$OUT/r; mkdir -p $R
B=$PWD/.gpurun15
timeout 330 $B/fp8gen bench --ops grouped_colwise_cast --shapes 65536x7168x8 --peers on --out $R > $R/bench.log 2>&1
echo "rc=$?" >> $R/bench.log
tar czf $OUT/r.tgz -C $OUT r
