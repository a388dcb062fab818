# call 3: the strip probe at equal groups that fit what a program holds
# (x read once, no second read at all), and ncu of one launch at equal and
# at realistic groups
export PATH=/usr/local/cuda/bin:$PATH
B=.gpurun18
nvcc -O3 -std=c++17 -arch=sm_90 -Xptxas -v -o /tmp/strip $B/strip.cu > $OUT/build.txt 2>&1 || { cat $OUT/build.txt; exit 1; }
/tmp/strip uni > $OUT/probe.txt 2>&1
cat $OUT/probe.txt
for m in ncu1 ncu2; do
  ncu --clock-control none -k regex:^strip -c 1 --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats --section SchedulerStats \
    --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct /tmp/strip $m > $OUT/$m.txt 2>&1
  grep -E 'Duration|dram__bytes|hit_rate|DRAM Throughput|Memory Throughput|Achieved Occupancy|Stall|Warp Cycles Per Issued|Issued Warp|No Eligible|Registers|Block Limit' $OUT/$m.txt | head -40
done
