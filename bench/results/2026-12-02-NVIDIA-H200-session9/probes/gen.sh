#!/usr/bin/env bash
# Writes the PDL probe's kernels (run here, where Go is): colwise_cast's two
# kernels at each bench shape's shipped H200 schedule, emitted by fp8gen for
# sm_90, renamed, with griddepcontrol hooks at the start of each kernel
# (no-ops unless the launch asks for programmatic dependent launch).
set -euo pipefail
cd "$(dirname "$0")"
root=$(git rev-parse --show-toplevel)
for s in "k8 M=8192,K=8192 8" "k16 M=16384,K=4096 16" "k4 M=4096,K=14336 4"; do
	set -- $s
	(cd "$root" && go run ./cmd/fp8gen emit colwise_cast --target sm_90 --shape "$2" \
		--schedule "BLOCK_K=64,BLOCK_M=64,PREFETCH=1,SPLIT=$3,WARPS=4") |
		sed -E "s/colwise_amax_[0-9a-f]+\(/amax_$1(/; s/colwise_cast_[0-9a-f]+\(/cast_$1(/" |
		awk '{print} /__global__.*amax_/ {print "  asm volatile(\"griddepcontrol.launch_dependents;\");"} /__global__.*cast_/ {print "  asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");"}' > "$1.cu"
	echo "extern \"C\" const void* amax_$1_fn = (const void*)amax_$1; extern \"C\" const void* cast_$1_fn = (const void*)cast_$1;" >> "$1.cu"
done
