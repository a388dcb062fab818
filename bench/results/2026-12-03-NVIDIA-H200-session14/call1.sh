# Session 14, call 1: the process start without gonum/plot (fp8gen-old is
# 7757cfe, fp8gen-new 6482e53 + theta's two-token tiles), timed two ways:
# bash's $EPOCHREALTIME around the command alone, and `date +%s%N` before
# and after as sessions 11-12 did (which times two date processes too);
# then the QK ops under angles=theta with tiles over two tokens: the GPU
# tests, a tune of both directions at the bench shapes, and a bench of
# theta against the tables (no peers).
set -u
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_REQUIRE_GPU=1 FP8GEN_CACHE=/tmp/jit14 PYTHONUNBUFFERED=1
B=$PWD/.gpurun14
R=$OUT/r; mkdir -p $R
note() { echo "$*" | tee -a $R/log.txt; }
pack() { cp -f /tmp/tune14.json $R/ 2>/dev/null; tar czf $OUT/r.tgz -C $OUT r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/gpu.txt 2>&1
rt() { for i in $(seq 21); do s=$EPOCHREALTIME; "$@" > /dev/null 2>&1; e=$EPOCHREALTIME; echo "$s $e"; done | awk '{printf "%d\n", ($2-$1)*1e6}' | sort -n | tr '\n' ' '; }
dt() { for i in $(seq 21); do s=$(date +%s%N); "$@" > /dev/null 2>&1; e=$(date +%s%N); echo $(( (e-s)/1000 )); done | sort -n | tr '\n' ' '; }
cp $B/shipped.json /tmp/hit.json
for b in old new; do $B/fp8gen-$b tune rowwise_cast --shape M=8192,K=8192 --target sm_90 --cache /tmp/hit.json > $R/hit-$b.log 2>&1; done
for round in 1 2; do
  note "round $round hello rt us: $(rt $B/hello)"
  for b in old new; do
    note "round $round $b help rt us: $(rt $B/fp8gen-$b help)"
    note "round $round $b hit rt us: $(rt $B/fp8gen-$b tune rowwise_cast --shape M=8192,K=8192 --target sm_90 --cache /tmp/hit.json)"
    note "round $round $b hit date us: $(dt $B/fp8gen-$b tune rowwise_cast --shape M=8192,K=8192 --target sm_90 --cache /tmp/hit.json)"
  done
  note "round $round hello date us: $(dt $B/hello)"
done
GODEBUG=inittrace=1 $B/fp8gen-new help 2> $R/inittrace-new.txt > /dev/null
pack
(cd backend && timeout 240 $B/backend.test -test.v -test.run 'GPUOpsMatchReference/qk_norm_rope|GPUGoldenSchedules/qk_norm_rope' > $R/backend-tests.log 2>&1; echo "backend tests rc=$?" >> $R/log.txt)
grep -h -- '^--- \|^    --- FAIL' $R/backend-tests.log | tail -8
grep -c -- '--- PASS' $R/backend-tests.log >> $R/log.txt
pack
export FP8GEN_TUNE_CACHE=/tmp/tune14.json
for op in qk_norm_rope qk_norm_rope_bwd; do
  t0=$(date +%s); timeout 150 $B/fp8gen-new tune $op --bench --opt angles=theta --force > $R/tune-$op.log 2>&1; note "tune $op theta rc=$? $(( $(date +%s) - t0 )) s"
  grep -h "^\*\|^  [0-9]" $R/tune-$op.log | cut -c1-220
  pack
done
t0=$(date +%s); timeout 150 $B/fp8gen-new bench --ops qk_norm_rope,qk_norm_rope_bwd --opt angles=theta --peers off --plot off --out $R/bench-theta > $R/bench-theta.log 2>&1; note "bench theta rc=$? $(( $(date +%s) - t0 )) s"
grep -h '^| [a-z]' $R/bench-theta/*.md
pack
t0=$(date +%s); timeout 120 $B/fp8gen-new bench --ops qk_norm_rope,qk_norm_rope_bwd --peers off --plot off --out $R/bench-tables > $R/bench-tables.log 2>&1; note "bench tables rc=$? $(( $(date +%s) - t0 )) s"
grep -h '^| [a-z]' $R/bench-tables/*.md
pack
