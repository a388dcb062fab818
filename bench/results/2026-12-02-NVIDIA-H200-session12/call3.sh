# Session 12, call 3: the grouped op's fused kernel keeping its first
# STASH tiles in registers, checked (every schedule, the references,
# the goldens, garbage offsets; memcheck of the garbage offsets) and tuned
# at the three bench shapes; then the L2-hint probe again with two more
# variants (the amax's top rows evict_first and its band evict_normal;
# its band evict_last, 3/8), each with no L2 set-aside for persisting
# lines (the default, as in call 2) and with the device's most.
set -u
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_REQUIRE_GPU=1 FP8GEN_CACHE=/tmp/jit11 PYTHONUNBUFFERED=1
B=$PWD/.gpurun12
R=$OUT/r; mkdir -p $R
note() { echo "$*" | tee -a $R/log.txt; }
pack() { cp -f /tmp/tune12.json $R/ 2>/dev/null; tar czf $OUT/r.tgz -C $OUT r; }
tar xzf $B/jit.tgz -C /tmp
(cd backend && timeout 120 $B/backend.test -test.v -test.run 'GPUEverySchedule/^grouped_colwise_cast$|GPUOpsMatchReference/grouped|GPUGoldenSchedules/grouped|GPUGroupedGarbageOffsets' > $R/backend-tests.log 2>&1; echo "backend tests rc=$?" >> $R/log.txt
 FP8GEN_GPU_SMALL=1 timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 $B/backend.test -test.run 'GPUGroupedGarbageOffsets' > $R/memcheck.log 2>&1; echo "memcheck rc=$?" >> $R/log.txt)
grep -h -- '^--- \|^    --- FAIL' $R/backend-tests.log | tail -8; tail -3 $R/memcheck.log
pack
export FP8GEN_TUNE_CACHE=/tmp/tune12.json
t0=$(date +%s); timeout 150 $B/fp8gen tune grouped_colwise_cast --bench --force > $R/tune-grouped.log 2>&1; note "tune grouped rc=$? $(( $(date +%s) - t0 )) s"
grep -h "^\*\|^  [0-9]" $R/tune-grouped.log | cut -c1-230
pack
cd bench/results/2026-12-02-NVIDIA-H200-session12/probes
python3 gen_l2hint.py > $R/gen.log 2>&1
nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/l2hint l2hint.cu build/k*_h?.cu > $R/build.log 2>&1; echo "build rc=$?" | tee -a $R/build.log
grep -i error $R/build.log | head
timeout 100 /tmp/l2hint 0 2>&1 | grep -v "^round 0" | tee $R/l2hint-0.log
timeout 100 /tmp/l2hint -1 2>&1 | grep -v "^round 0" | tee $R/l2hint-max.log
pack
