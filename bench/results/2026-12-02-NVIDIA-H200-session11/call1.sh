# Session 11, call 1: TestGPUTimeFlushed (never run on the H200), every
# colwise, grouped and expert schedule (colwise 64 x 64 in 8 waves, the MoE ops fused in 16 waves new) and the ops against
# their references, the tune tests; the tune's cache hit as a process
# (nvcc's version kept on disk, no lowering); a cold tune of grouped at
# T=65536; then every op's bench shapes tuned again (--force) under the
# flushed timing into a fresh cache, and colwise benched with its peers.
set -u
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_REQUIRE_GPU=1 FP8GEN_CACHE=/tmp/jit11 PYTHONUNBUFFERED=1
B=$PWD/.gpurun11
R=$OUT/r; mkdir -p $R
note() { echo "$*" | tee -a $R/log.txt; }
pack() { cp -f /tmp/tune11.json $R/ 2>/dev/null; tar czf $OUT/r.tgz -C $OUT r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/gpu.txt 2>&1
(cd backend && timeout 100 $B/backend.test -test.v -test.run 'GPUTimeFlushed|GPUOpsMatchReference' > $R/backend-tests.log 2>&1; echo "backend tests rc=$?" >> $R/log.txt
 timeout 100 $B/backend.test -test.v -test.run 'GPUEverySchedule/^(colwise_cast|grouped_colwise_cast|expert_colwise_cast)$' >> $R/backend-tests.log 2>&1; echo "backend every-schedule rc=$?" >> $R/log.txt)
grep -h -- '^--- \|^    --- FAIL\|flushed\|twice' $R/backend-tests.log | tail -20
pack
export FP8GEN_TUNE_CACHE=/tmp/tune11.json
# cold tune of grouped at T=65536, empty JIT cache
rm -rf /tmp/jitcold; t0=$(date +%s%N)
FP8GEN_CACHE=/tmp/jitcold FP8GEN_TUNE_CACHE=/tmp/tunecold.json timeout 60 $B/fp8gen tune grouped_colwise_cast --shape T=65536,K=7168,E=8 --force > $R/tune-cold-grouped.log 2>&1
note "cold tune grouped T=65536 rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms wall"
for a in "rowwise_cast" "tensorwise_cast" "colwise_cast" "grouped_colwise_cast" "expert_colwise_cast" "expert_colwise_cast --opt layout=nk" "qk_norm_rope" "qk_norm_rope_bwd"; do
  t0=$(date +%s); timeout 200 $B/fp8gen tune $a --bench --force > "$R/tune-${a// /_}.log" 2>&1; note "tune $a rc=$? $(( $(date +%s) - t0 )) s"
  pack
done
(cd cmd/fp8gen && timeout 90 $B/cmd.test -test.v -test.run 'GPUTune|TuneCached' > $R/cmd-tests.log 2>&1; echo "cmd tests rc=$?" >> $R/log.txt)
grep -h -- '^--- \|cold tune\|hit answered' $R/cmd-tests.log
# the cache hit, as a process
$B/fp8gen tune rowwise_cast --shape M=8192,K=8192 --target sm_90 > $R/hit.log 2>&1
for i in $(seq 9); do s=$(date +%s%N); $B/fp8gen tune rowwise_cast --shape M=8192,K=8192 --target sm_90 >> $R/hit.log 2>&1; e=$(date +%s%N); echo $(( (e-s)/1000 )); done | sort -n | tr '\n' ' ' | sed 's/^/hit with --target, us: /' | tee -a $R/log.txt; echo
for i in $(seq 5); do s=$(date +%s%N); $B/fp8gen version > /dev/null 2>&1; e=$(date +%s%N); echo $(( (e-s)/1000 )); done | sort -n | tr '\n' ' ' | sed 's/^/fp8gen version, us: /' | tee -a $R/log.txt; echo
pack
t0=$(date +%s); timeout 120 $B/fp8gen bench --ops colwise_cast --out $R/bench-colwise_cast > $R/bench-colwise_cast.log 2>&1; note "bench colwise rc=$? $(( $(date +%s) - t0 )) s"
grep -h '^| [a-z]' $R/bench-*/*.md
tar czf $OUT/jit.tgz -C /tmp jit11
pack
