# Session 13, call 5: angles=theta with a tile's angles worked once a
# token (a spread load of inv_freq, cos and sin one element a lane, then
# broadcast to the head rows through LDS) where a tile's rows are heads of
# one token: the QK GPU tests (the references at the two new GPU shapes,
# whose default tiles take that way, with every option set; every
# schedule; the goldens' schedules), then both directions timed with
# theta and with the tables at the three bench shapes (no peers).
set -u
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_REQUIRE_GPU=1 FP8GEN_CACHE=/tmp/jit13 PYTHONUNBUFFERED=1
B=$PWD/.gpurun13
R=/tmp/r; mkdir -p $R
note() { echo "$*" | tee -a $R/log.txt; }
pack() { tar czf $OUT/r.tgz -C /tmp r; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
(cd backend && timeout 200 $B/backend.test -test.v -test.run 'GPUEverySchedule/qk|GPUOpsMatchReference/qk|GPUGoldenSchedules/qk' > $R/backend-tests.log 2>&1; echo "backend tests rc=$?" >> $R/log.txt)
grep -h -- '^--- \|^    --- FAIL' $R/backend-tests.log | tail -12; tail -1 $R/log.txt
pack
for a in table theta; do
  t0=$(date +%s); timeout 150 $B/fp8gen bench --peers off --check --ops qk_norm_rope,qk_norm_rope_bwd --opt angles=$a --out $R/bench-$a > $R/bench-$a.log 2>&1; note "bench $a rc=$? $(( $(date +%s) - t0 )) s"
  grep -h "fp8gen .* µs" $R/bench-$a.log | tee -a $R/log.txt
  pack
done
