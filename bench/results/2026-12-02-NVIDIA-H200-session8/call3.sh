# Session 8, call 3: the persistent rowwise default (PER_CU, PREFETCH) —
# every rowwise GPU test (and the tests of what runs rowwise: runtime,
# launchers, CLI, PyTorch loader, the 3.28e9-element cast), the four
# sanitizers, ptxas's registers; then the tune of all 8 candidates at the
# bench shapes and the bench with the PyTorch peers, default from it.
set -u
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_REQUIRE_GPU=1 FP8GEN_CACHE=/tmp/jit8 PYTHONUNBUFFERED=1
B=$PWD/.gpurun8
R=$OUT/r; mkdir -p $R
note() { echo "$*" | tee -a $R/log.txt; }
step() { local name=$1 limit=$2 t0=$(date +%s); shift 2; timeout $limit "$@" > $R/$name.log 2>&1; note "$name: rc=$? ($(( $(date +%s) - t0 )) s)"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/gpu.txt 2>&1
step backend-rowwise 240 $B/backend.test -test.v -test.run 'GPU(OpsMatchReference|EverySchedule|GoldenSchedules)/^rowwise_cast$' &
step backend-huge 240 $B/backend.test -test.v -test.run 'GPU(HugeTensor|PrepareOn|Capabilities)' &
(cd runtime && step runtime-tests 120 $B/runtime.test -test.v -test.run GPU) &
(cd launch && step launch-tests 120 $B/launch.test -test.v -test.run GPU; cd ../cmd/fp8gen && step cmd-tests 120 $B/cmd_fp8gen.test -test.v -test.run GPU; cd ../.. && FP8GEN=$B/fp8gen step torch-tests 150 python3 -m unittest discover -s python/tests -v) &
(cd golden && step nvcc-registers 150 $B/golden.test -test.v -test.run NVCCRegisters) &
for tool in memcheck racecheck synccheck initcheck; do
  FP8GEN_GPU_SMALL=1 step sanitizer-$tool 240 compute-sanitizer --tool $tool --error-exitcode 9 $B/backend.test -test.run 'GPU(OpsMatchReference|EverySchedule|GoldenSchedules)/^rowwise_cast$' &
done
wait
grep -h -E -- '--- FAIL|ERROR SUMMARY|RACECHECK SUMMARY' $R/*.log | sort | uniq -c | head
grep -E "rowwise" $R/nvcc-registers.log | head -20
export FP8GEN_TUNE_CACHE=$R/tune.json
step tune-rowwise_cast 150 $B/fp8gen tune rowwise_cast --bench
step bench-rowwise_cast 200 $B/fp8gen bench --ops rowwise_cast --out $R/bench-rowwise_cast
grep -h '^| [a-z]' $R/bench-rowwise_cast/*.md
grep -h "kept\|^\*\|compiled" $R/tune-rowwise_cast.log
tar czf $OUT/r.tgz -C $OUT r
