# Session 8, call 1: the persistent rowwise loop on the H200 — its GPU
# tests and memcheck, ptxas's registers against the estimate, then a
# sweep of persistent schedules against today's default at the bench shapes.
set -u
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_REQUIRE_GPU=1 FP8GEN_CACHE=/tmp/jit8
B=$PWD/.gpurun8
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/gpu.txt 2>&1
t0=$(date +%s)
timeout 150 $B/backend.test -test.v -test.run 'GPU(OpsMatchReference|EverySchedule|GoldenSchedules)/rowwise' > $R/backend-tests.log 2>&1; echo "backend tests rc=$? $(( $(date +%s) - t0 )) s" >> $R/log.txt &
FP8GEN_GPU_SMALL=1 timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 $B/backend.test -test.run 'GPU(OpsMatchReference|GoldenSchedules)/rowwise' > $R/memcheck.log 2>&1; echo "memcheck rc=$?" >> $R/log.txt &
(cd golden && timeout 150 $B/golden.test -test.v -test.run NVCCRegisters > $R/nvcc-registers.log 2>&1; echo "nvcc registers rc=$?" >> $R/log.txt) &
wait
grep -E -- '--- FAIL|ERROR SUMMARY' $R/*.log | head
BIN=$B DEADLINE=360 bash scripts/sweep.sh $R/sweep < scripts/session8/sweep1.txt > $R/sweep.log 2>&1
cat $R/log.txt
grep rowwise $R/nvcc-registers.log | head -40
cat $R/sweep/sweep.tsv
tar czf $OUT/r.tgz -C $OUT r
