# call 2: the strip probe with the held rows in shared memory (cp.async)
export PATH=/usr/local/cuda/bin:$PATH
B=.gpurun18
nvcc -O3 -std=c++17 -arch=sm_90 -Xptxas -v -o /tmp/strip $B/strip.cu > $OUT/build.txt 2>&1 || { cat $OUT/build.txt; exit 1; }
/tmp/strip > $OUT/probe.txt 2>&1
cat $OUT/probe.txt
