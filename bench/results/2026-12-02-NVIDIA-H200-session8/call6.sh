# Session 8, call 6 (98c89d0, the final kernels and candidates): rowwise's
# GPU tests, the launcher and CLI GPU tests, memcheck.
set -u
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_REQUIRE_GPU=1 FP8GEN_CACHE=/tmp/jit8
B=$PWD/.gpurun8
R=$OUT/r; mkdir -p $R
note() { echo "$*" | tee -a $R/log.txt; }
step() { local name=$1 limit=$2 t0=$(date +%s); shift 2; timeout $limit "$@" > $R/$name.log 2>&1; note "$name: rc=$? ($(( $(date +%s) - t0 )) s)"; }
step backend-rowwise 150 $B/backend.test -test.v -test.run 'GPU(OpsMatchReference|EverySchedule|GoldenSchedules)/^rowwise_cast$' &
(cd launch && step launch-tests 100 $B/launch.test -test.v -test.run GPU; cd ../cmd/fp8gen && step cmd-tests 100 $B/cmd_fp8gen.test -test.v -test.run GPU) &
FP8GEN_GPU_SMALL=1 step sanitizer-memcheck 150 compute-sanitizer --tool memcheck --error-exitcode 9 $B/backend.test -test.run 'GPU(OpsMatchReference|EverySchedule|GoldenSchedules)/^rowwise_cast$' &
wait
grep -h -E -- '--- FAIL|ERROR SUMMARY' $R/*.log | sort | uniq -c
grep -c -- '--- PASS' $R/backend-rowwise.log
tar czf $OUT/r.tgz -C $OUT r
