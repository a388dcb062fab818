# Session 8, call 4: colwise's cast as loops down M (CAST_SPLIT), the next
# tile loaded before this one's transpose — its GPU tests, memcheck and
# racecheck, then a sweep of CAST_SPLIT against one tile a program (ncu
# splitting amax and cast at a few points).
set -u
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_REQUIRE_GPU=1 FP8GEN_CACHE=/tmp/jit8
B=$PWD/.gpurun8
D=bench/results/2026-12-02-NVIDIA-H200-session8
R=$OUT/r; mkdir -p $R
note() { echo "$*" | tee -a $R/log.txt; }
step() { local name=$1 limit=$2 t0=$(date +%s); shift 2; timeout $limit "$@" > $R/$name.log 2>&1; note "$name: rc=$? ($(( $(date +%s) - t0 )) s)"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/gpu.txt 2>&1
step backend-colwise 200 $B/backend.test -test.v -test.run 'GPU(OpsMatchReference|EverySchedule|GoldenSchedules)/^colwise_cast$' &
for tool in memcheck racecheck; do
  FP8GEN_GPU_SMALL=1 step sanitizer-$tool 200 compute-sanitizer --tool $tool --error-exitcode 9 $B/backend.test -test.run 'GPU(OpsMatchReference|EverySchedule|GoldenSchedules)/^colwise_cast$' &
done
wait
grep -h -E -- '--- FAIL|ERROR SUMMARY|RACECHECK SUMMARY' $R/*.log | sort | uniq -c | head
BIN=$B DEADLINE=300 bash scripts/sweep.sh $R/sweep < $D/sweep4.txt > $R/sweep.log 2>&1
cat $R/log.txt
cut -f2- $R/sweep/sweep.tsv
cat $R/sweep/kernels.tsv 2>/dev/null | cut -f2-
rm -rf $R/sweep/[0-9]*
tar czf $OUT/r.tgz -C $OUT r
