# Session 14, call 3: every GPU test and the four compute-sanitizer tools
# over every op at the final code (scripts/gpu.sh, tests and sanitize),
# then a probe: the forward under angles=theta with its angles worked by a
# first kernel into tables, as the backward now does (fp8gen-fwdtab, built
# from the work tree with the forward's description given the backward's
# table kernel and scratch; not in main), against the shipped forward,
# each with its shipped schedule, in one run.
set -u
export PATH=/usr/local/cuda/bin:$PATH
STAGES="tests sanitize" DEADLINE=480 bash scripts/gpu.sh $OUT/gpu 2>&1 | tail -30
R=$OUT/gpu/results
for i in 1 2; do
  for b in fp8gen fp8gen-fwdtab; do
    timeout 100 .gpurun/$b bench --ops qk_norm_rope --opt angles=theta --peers off --plot off --check=false --out $R/fwd-$b-$i > $R/fwd-$b-$i.log 2>&1
    echo "$b round $i rc=$?" >> $R/log.txt
    grep -h '^| [a-z]' $R/fwd-$b-$i/*.md | tee -a $R/log.txt
  done
done
tar czf $OUT/gpu/results.tgz -C $OUT/gpu results
