# call 4: the strip probe's long-group path at realistic groups: longest
# groups first (lpt), the second read prefetched (pre), evict-first (hint)
export PATH=/usr/local/cuda/bin:$PATH
B=.gpurun18
nvcc -O3 -std=c++17 -arch=sm_90 -Xptxas -v -o /tmp/strip $B/strip.cu > $OUT/build.txt 2>&1 || { cat $OUT/build.txt; exit 1; }
/tmp/strip rest > $OUT/probe.txt 2>&1
cat $OUT/probe.txt
