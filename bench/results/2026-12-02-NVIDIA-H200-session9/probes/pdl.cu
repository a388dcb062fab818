// Where colwise_cast's time between its kernels goes, and whether
// programmatic dependent launch (PDL) takes it back: fp8gen's two kernels
// (gen.sh) timed as the bench times an op (events around each repetition,
// back to back, median), in these sequences:
//   legacy   cuMemset on the legacy stream, amax, cast (fp8gen until now)
//   async    cudaMemsetAsync on the stream, amax, cast
//   nomemset amax, cast (amax not zeroed: the time only)
//   pdl      cudaMemsetAsync, amax, cast launched with programmatic stream
//            serialization (its griddepcontrol.wait holds it until amax is done)
//   amax, cast, memset  each alone
// and checks that pdl's outputs equal async's.
// Build: nvcc -O3 -arch=sm_90 -o pdl pdl.cu k8.cu k16.cu k4.cu
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <cstdint>
#include <vector>

extern "C" const void *amax_k8_fn, *cast_k8_fn, *amax_k16_fn, *cast_k16_fn, *amax_k4_fn, *cast_k4_fn;

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

struct Shape { const char* name; int M, K, split; const void *amax, *cast; };

static cudaStream_t st;

static void launch(const void* fn, dim3 g, void** args, bool pdl) {
	cudaLaunchConfig_t cfg = {};
	cfg.gridDim = g; cfg.blockDim = dim3(128); cfg.dynamicSmemBytes = 0; cfg.stream = st;
	cudaLaunchAttribute at[1];
	at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
	at[0].val.programmaticStreamSerializationAllowed = 1;
	cfg.attrs = pdl ? at : nullptr; cfg.numAttrs = pdl ? 1 : 0;
	CK(cudaLaunchKernelExC(&cfg, fn, args));
}

int main() {
	Shape shapes[] = {
		{"8192x8192", 8192, 8192, 8, amax_k8_fn, cast_k8_fn},
		{"16384x4096", 16384, 4096, 16, amax_k16_fn, cast_k16_fn},
		{"4096x14336", 4096, 14336, 4, amax_k4_fn, cast_k4_fn},
	};
	CK(cudaStreamCreate(&st)); // blocking, as fp8gen's
	const int reps = 200;
	for (auto& s : shapes) {
		size_t n = (size_t)s.M * s.K;
		std::vector<uint16_t> hx(n);
		uint32_t r = 12345;
		for (size_t i = 0; i < n; i++) { r = r * 1664525u + 1013904223u; hx[i] = (uint16_t)(0x3c00 + (r >> 20) % 0x0800) ^ (uint16_t)((r >> 8) & 0x8000); }
		void *x, *qt, *inv, *am;
		CK(cudaMalloc(&x, 2 * n)); CK(cudaMalloc(&qt, n)); CK(cudaMalloc(&inv, 4 * s.K)); CK(cudaMalloc(&am, 4 * s.K));
		CK(cudaMemcpy(x, hx.data(), 2 * n, cudaMemcpyHostToDevice));
		int M = s.M, K = s.K;
		void* aargs[] = {&x, &am, &M, &K};
		void* cargs[] = {&x, &qt, &inv, &am, &M, &K};
		dim3 ga(s.split, (K + 63) / 64), gc((M + 63) / 64, (K + 63) / 64);
		auto seq = [&](int v) {
			switch (v) {
			case 0: CK(cudaMemset(am, 0, 4 * K)); launch(s.amax, ga, aargs, false); launch(s.cast, gc, cargs, false); break;
			case 1: CK(cudaMemsetAsync(am, 0, 4 * K, st)); launch(s.amax, ga, aargs, false); launch(s.cast, gc, cargs, false); break;
			case 2: launch(s.amax, ga, aargs, false); launch(s.cast, gc, cargs, false); break;
			case 3: CK(cudaMemsetAsync(am, 0, 4 * K, st)); launch(s.amax, ga, aargs, false); launch(s.cast, gc, cargs, true); break;
			case 4: launch(s.amax, ga, aargs, false); break;
			case 5: launch(s.cast, gc, cargs, false); break;
			case 6: CK(cudaMemsetAsync(am, 0, 4 * K, st)); break;
			}
		};
		const char* names[] = {"legacy", "async", "nomemset", "pdl", "amax", "cast", "memset"};
		std::vector<uint8_t> ref(n), got(n);
		for (int v : {1, 3}) {
			CK(cudaMemsetAsync(qt, 0xa5, n, st));
			seq(v);
			CK(cudaStreamSynchronize(st));
			CK(cudaMemcpy(v == 1 ? ref.data() : got.data(), qt, n, cudaMemcpyDeviceToHost));
		}
		printf("%s: pdl output %s async's\n", s.name, memcmp(ref.data(), got.data(), n) ? "DIFFERS from" : "equals");
		for (int round = 0; round < 2; round++)
			for (int v = 0; v < 7; v++) {
				for (int i = 0; i < 10; i++) seq(v);
				std::vector<cudaEvent_t> ev(reps + 1);
				for (auto& e : ev) CK(cudaEventCreate(&e));
				CK(cudaEventRecord(ev[0], st));
				for (int i = 1; i <= reps; i++) { seq(v); CK(cudaEventRecord(ev[i], st)); }
				CK(cudaEventSynchronize(ev[reps]));
				std::vector<float> t(reps);
				for (int i = 0; i < reps; i++) CK(cudaEventElapsedTime(&t[i], ev[i], ev[i + 1]));
				std::sort(t.begin(), t.end());
				printf("%s round %d %-9s median %7.1f us  p10 %7.1f  p90 %7.1f\n", s.name, round, names[v], 1000 * t[reps / 2], 1000 * t[reps / 10], 1000 * t[reps * 9 / 10]);
				for (auto& e : ev) CK(cudaEventDestroy(e));
			}
		CK(cudaFree(x)); CK(cudaFree(qt)); CK(cudaFree(inv)); CK(cudaFree(am));
	}
	return 0;
}
