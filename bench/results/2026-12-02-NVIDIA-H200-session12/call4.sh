# Session 12, call 4: loads of data read once (MemAttr.EvictFirst, an L2
# evict-first policy on sm_90) and colwise's KEEP (the amax reads all
# but the bottom KEEP eighths of x once; the cast starts at the bottom
# band, along the rows): the capability kernel on the GPU, every colwise
# schedule, the references and goldens, memcheck of every colwise
# schedule at small shapes; the tune of colwise's 8 candidates at the
# bench shapes; the bench with peers under that tuning.
set -u
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_REQUIRE_GPU=1 FP8GEN_CACHE=/tmp/jit11 PYTHONUNBUFFERED=1
B=$PWD/.gpurun12
R=$OUT/r; mkdir -p $R
note() { echo "$*" | tee -a $R/log.txt; }
pack() { cp -f /tmp/tune12.json $R/ 2>/dev/null; tar czf $OUT/r.tgz -C $OUT r; }
tar xzf $B/jit.tgz -C /tmp
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
(cd backend && timeout 150 $B/backend.test -test.v -test.run 'GPUCapabilities|GPUEverySchedule/^colwise_cast$|GPUOpsMatchReference/colwise|GPUGoldenSchedules/colwise' > $R/backend-tests.log 2>&1; echo "backend tests rc=$?" >> $R/log.txt
 FP8GEN_GPU_SMALL=1 timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 $B/backend.test -test.run 'GPUEverySchedule/^colwise_cast$|GPUCapabilities' > $R/memcheck.log 2>&1; echo "memcheck rc=$?" >> $R/log.txt)
grep -h -- '^--- \|^    --- FAIL\|read once' $R/backend-tests.log | tail -12; tail -3 $R/memcheck.log
pack
export FP8GEN_TUNE_CACHE=/tmp/tune12.json
t0=$(date +%s); timeout 120 $B/fp8gen tune colwise_cast --bench --force > $R/tune-colwise.log 2>&1; note "tune colwise rc=$? $(( $(date +%s) - t0 )) s"
grep -h "^\*\|^  [0-9]" $R/tune-colwise.log | cut -c1-160
pack
t0=$(date +%s); timeout 150 $B/fp8gen bench --ops colwise_cast --out $R/bench-colwise > $R/bench-colwise.log 2>&1; note "bench colwise rc=$? $(( $(date +%s) - t0 )) s"
grep -h '^| [a-z]' $R/bench-colwise/*.md
pack
