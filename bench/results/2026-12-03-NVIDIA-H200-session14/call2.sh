# Session 14, call 2: the process start of fp8gen at 7757cfe (old), 6482e53
# (new: no gonum/plot) and the work tree (lazy: the tuning file decoded in
# one pass, the ops package's candidates made when asked, no self-check at
# init, expressions parsed once), timed with bash's $EPOCHREALTIME around
# the command alone; the stages of a cache hit in a fresh process
# (hitstages.go.txt); then the QK backward under angles=theta with its
# angle tables worked by a first kernel: GPU tests, compute-sanitizer
# racecheck and memcheck over both QK ops at the small shapes, a tune at
# the bench shapes, and a bench against the tables (no peers).
set -u
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_CACHE=/tmp/jit14b PYTHONUNBUFFERED=1
B=$PWD/.gpurun14
R=$OUT/r; mkdir -p $R
note() { echo "$*" | tee -a $R/log.txt; }
pack() { cp -f /tmp/tune14b.json $R/ 2>/dev/null; tar czf $OUT/r.tgz -C $OUT r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/gpu.txt 2>&1
rt() { for i in $(seq 21); do s=$EPOCHREALTIME; "$@" > /dev/null 2>&1; e=$EPOCHREALTIME; echo "$s $e"; done | awk '{printf "%d\n", ($2-$1)*1e6}' | sort -n | tr '\n' ' '; }
cp $B/shipped.json /tmp/hit.json
hit="tune rowwise_cast --shape M=8192,K=8192 --target sm_90 --cache /tmp/hit.json"
for b in old new lazy; do $B/fp8gen-$b $hit > $R/hit-$b.log 2>&1; done
for round in 1 2 3; do
  note "round $round hello us: $(rt $B/hello)"
  for b in old new lazy; do
    note "round $round $b help us: $(rt $B/fp8gen-$b help)"
    note "round $round $b hit us: $(rt $B/fp8gen-$b $hit)"
  done
done
for i in $(seq 11); do $B/hitstages /tmp/hit.json; done > $R/hitstages.txt 2>&1
for i in 1 2 3; do GODEBUG=inittrace=1 $B/fp8gen-lazy help 2>&1 > /dev/null | grep "fp8gen/ops @"; done >> $R/log.txt
pack
cd backend
FP8GEN_REQUIRE_GPU=1 timeout 200 $B/backend.test -test.v -test.run 'GPUOpsMatchReference/qk_norm_rope|GPUGoldenSchedules/qk_norm_rope' > $R/backend-tests.log 2>&1
note "backend tests rc=$? $(grep -c -- '--- PASS' $R/backend-tests.log) passed, $(grep -c -- '--- FAIL' $R/backend-tests.log) failed"
pack
for tool in racecheck memcheck; do
  FP8GEN_REQUIRE_GPU=1 FP8GEN_GPU_SMALL=1 timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 $B/backend.test -test.run 'GPUOpsMatchReference/qk_norm_rope' > $R/sanitize-$tool.log 2>&1
  note "sanitize $tool rc=$? $(grep -c -- '--- PASS' $R/sanitize-$tool.log) passed; $(grep -h 'ERROR SUMMARY\|RACECHECK SUMMARY' $R/sanitize-$tool.log | tail -1)"
  pack
done
cd ..
export FP8GEN_TUNE_CACHE=/tmp/tune14b.json
t0=$(date +%s); timeout 150 $B/fp8gen-lazy tune qk_norm_rope_bwd --bench --opt angles=theta --force > $R/tune-bwd.log 2>&1; note "tune bwd theta rc=$? $(( $(date +%s) - t0 )) s"
grep -h "^\*\|^  [0-9]" $R/tune-bwd.log | cut -c1-200
pack
for a in theta table; do
  t0=$(date +%s); timeout 120 $B/fp8gen-lazy bench --ops qk_norm_rope_bwd --opt angles=$a --peers off --plot off --out $R/bench-$a > $R/bench-$a.log 2>&1; note "bench $a rc=$? $(( $(date +%s) - t0 )) s"
  grep -h '^| [a-z]' $R/bench-$a/*.md
  pack
done
