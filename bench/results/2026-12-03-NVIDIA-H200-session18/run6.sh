# call 6 (the machine still warm): ptxas's registers for the held and the
# fused kernels as fp8gen emits them (fp8gen emit ... > .gpurun18c/*.cu)
export PATH=/usr/local/cuda/bin:$PATH; for f in held fused; do nvcc -c -O3 -arch=sm_90 -Xptxas -v -o /tmp/$f.o .gpurun18c/$f.cu 2>&1 | grep -E 'Compiling|registers|spill'; done > $OUT/ptxas.txt; cat $OUT/ptxas.txt
