#!/bin/bash
# call 7: the stores in aligned pieces at every alignment class the
# overloads of fp8g_st_any serve (16-, 8-, 4- and 2-byte runs): fp8gen run
# (bit-exact against the reference) under compute-sanitizer memcheck, for
# rowwise (q's rows K apart), colwise and grouped (qt's rows M, T apart)
# and expert nk (K apart), with K, M, T ≡ 1, 2, 4, 8 (mod 16).
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_CACHE=/tmp/jit17 FP8GEN_REQUIRE_GPU=1
R=$OUT/r; mkdir -p $R
B=$PWD/.gpurun17
nvidia-smi --query-gpu=name,uuid,pci.bus_id,driver_version --format=csv > $R/gpu.txt
for a in "rowwise_cast --shape M=64,K=4097" "rowwise_cast --shape M=64,K=4098" "rowwise_cast --shape M=64,K=4100" "rowwise_cast --shape M=64,K=4104" "rowwise_cast --shape M=7,K=4098 --in-dtype f32" \
         "colwise_cast --shape M=1002,K=100" "colwise_cast --shape M=1004,K=64" "colwise_cast --shape M=1016,K=64" \
         "grouped_colwise_cast --shape T=1002,K=100,E=5" "grouped_colwise_cast --shape T=4100,K=64,E=3" \
         "expert_colwise_cast --shape E=2,K=1002,N=64 --opt layout=nk" "expert_colwise_cast --shape E=2,K=1009,N=64 --opt layout=nk"; do
  echo "== $a" >> $R/memcheck.txt
  timeout 40 compute-sanitizer --tool memcheck $B/fp8gen run $a >> $R/memcheck.txt 2>&1; echo "rc=$?" >> $R/memcheck.txt
done
tar czf $OUT/r.tgz -C $OUT r
