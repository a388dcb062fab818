# Session 9, call 3: where the early trigger (griddepcontrol.launch_dependents
# at each kernel's start) pays: this tree (fp8gen: wait and trigger), the
# same with the wait only (fp8gen-notrig: the next grid launched when this
# one ends), and without PDL (FP8GEN_PDL=off), the multi-kernel ops,
# interleaved twice.
set -u
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_CACHE=/tmp/jit9
B=$PWD/.gpurun9
R=$OUT/r; mkdir -p $R
note() { echo "$*" | tee -a $R/log.txt; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/gpu.txt 2>&1
ops=colwise_cast,grouped_colwise_cast,expert_colwise_cast,qk_norm_rope_bwd,tensorwise_cast
for i in 1 2; do
  for v in trig notrig nopdl; do
    b=$B/fp8gen; [ $v = notrig ] && b=$B/fp8gen-notrig
    pdl=on; [ $v = nopdl ] && pdl=off
    FP8GEN_PDL=$pdl timeout 120 $b bench --ops $ops --peers off --check=false --iters 100 --warm 10 --out $R/bench-$v$i > $R/bench-$v$i.log 2>&1
    note "$v$i rc=$? µs: $(grep '^| [a-z]' $R/bench-$v$i/*.md | awk -F'|' '{printf "%s%s ", $3, $4}')"
  done
done
tar czf $OUT/r.tgz -C $OUT r
