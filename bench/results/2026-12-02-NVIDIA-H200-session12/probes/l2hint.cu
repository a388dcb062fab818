// Does the colwise cast find x's last-read band in L2 when the amax marks
// it evict_last (and the rest evict_first), and the cast marks what it is
// done with evict_first? gen_l2hint.py's variants h0-h5 of fp8gen's two
// kernels (the cast along the rows from the bottom band), timed as
// fp8gen's bench times an op since the tenth session: a 256 MB memset
// (the L2 flush) before each repetition, events around the op alone
// (the amax's scratch memset, the amax, the cast), median of 40; x is
// the next of three copies each time. Every variant's qt and inv_scale
// are compared with h0's.
// Build: python3 gen_l2hint.py && nvcc -O3 -std=c++17 -arch=sm_90 -o l2hint l2hint.cu build/k*_h?.cu
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

#define DECL(k) extern "C" const void *amax_##k##_h0_fn, *amax_##k##_h1_fn, *amax_##k##_h2_fn, *amax_##k##_h3_fn, *amax_##k##_h4_fn, *amax_##k##_h5_fn, *amax_##k##_h6_fn, *amax_##k##_h7_fn, \
  *cast_##k##_h0_fn, *cast_##k##_h1_fn, *cast_##k##_h2_fn, *cast_##k##_h3_fn, *cast_##k##_h4_fn, *cast_##k##_h5_fn, *cast_##k##_h6_fn, *cast_##k##_h7_fn;
DECL(k8) DECL(k16) DECL(k4)
#define FNS(k, p) {p##_##k##_h0_fn, p##_##k##_h1_fn, p##_##k##_h2_fn, p##_##k##_h3_fn, p##_##k##_h4_fn, p##_##k##_h5_fn, p##_##k##_h6_fn, p##_##k##_h7_fn}
#define NV 8

struct Shape { const char* name; int M, K, split; const void* amax[NV]; const void* cast[NV]; };
static const char* what[NV] = {"plain", "amax last 2/8 evict_last, cast ld+st evict_first", "amax last 3/8 evict_last, cast ld+st evict_first",
  "cast ld+st evict_first only", "amax last 2/8 evict_last only", "amax last 3/8 evict_last, cast ld evict_first",
  "amax first 6/8 evict_first, last 2/8 normal", "amax last 3/8 evict_last only"};

// argv[1]: the L2 set-aside for persisting lines, MB (cudaLimitPersistingL2CacheSize; -1: the device's most).
int main(int argc, char** argv) {
	int mb = argc > 1 ? atoi(argv[1]) : 0;
	int maxp = 0; CK(cudaDeviceGetAttribute(&maxp, cudaDevAttrMaxPersistingL2CacheSize, 0));
	size_t want = mb < 0 ? (size_t)maxp : (size_t)mb << 20;
	CK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, want));
	size_t got = 0; CK(cudaDeviceGetLimit(&got, cudaLimitPersistingL2CacheSize));
	printf("persisting L2 set-aside %zu B (device most %d B)\n", got, maxp);
	Shape shapes[] = {
		{"8192x8192", 8192, 8192, 8, FNS(k8, amax), FNS(k8, cast)},
		{"16384x4096", 16384, 4096, 16, FNS(k16, amax), FNS(k16, cast)},
		{"4096x14336", 4096, 14336, 4, FNS(k4, amax), FNS(k4, cast)},
	};
	const int reps = 40;
	void* flush; const size_t fb = 256u << 20;
	CK(cudaMalloc(&flush, fb));
	cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
	for (int round = 0; round < 2; round++)
	for (auto& s : shapes) {
		size_t n = (size_t)s.M * s.K;
		std::vector<uint16_t> hx(n);
		uint32_t r = 12345;
		for (size_t i = 0; i < n; i++) { r = r * 1664525u + 1013904223u; hx[i] = (uint16_t)(0x3c00 + (r >> 20) % 0x0800) ^ (uint16_t)((r >> 8) & 0x8000); }
		void *xs[3], *qt, *inv, *am;
		for (auto& x : xs) { CK(cudaMalloc(&x, 2 * n)); CK(cudaMemcpy(x, hx.data(), 2 * n, cudaMemcpyHostToDevice)); }
		CK(cudaMalloc(&qt, n)); CK(cudaMalloc(&inv, 4 * s.K)); CK(cudaMalloc(&am, 4 * s.K));
		int M = s.M, K = s.K, nm = M / 64, nk = K / 64;
		std::vector<uint8_t> ref(n), got(n);
		std::vector<float> refi(s.K), goti(s.K);
		for (int v = 0; v < NV; v++) {
			auto run = [&](int i) {
				void* x = xs[i % 3];
				void* aargs[] = {&x, &am, &M, &K};
				void* cargs[] = {&x, &qt, &inv, &am, &M, &K};
				CK(cudaMemsetAsync(am, 0, 4 * K));
				CK(cudaLaunchKernel(s.amax[v], dim3(s.split, nk), dim3(128), aargs, 0, 0));
				CK(cudaLaunchKernel(s.cast[v], dim3(nk, nm), dim3(128), cargs, 0, 0));
			};
			CK(cudaMemset(qt, 0xa5, n));
			run(0); CK(cudaDeviceSynchronize());
			CK(cudaMemcpy(v ? got.data() : ref.data(), qt, n, cudaMemcpyDeviceToHost));
			CK(cudaMemcpy(v ? goti.data() : refi.data(), inv, 4 * s.K, cudaMemcpyDeviceToHost));
			bool ok = v == 0 || (memcmp(ref.data(), got.data(), n) == 0 && memcmp(refi.data(), goti.data(), 4 * s.K) == 0);
			std::vector<float> t;
			for (int i = 0; i < reps + 5; i++) {
				CK(cudaMemsetAsync(flush, i & 0xff, fb));
				CK(cudaEventRecord(e0)); run(i); CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
				float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
				if (i >= 5) t.push_back(1000 * ms);
			}
			std::sort(t.begin(), t.end());
			printf("round %d %s h%d %s %.1f us (min %.1f) %s\n", round, s.name, v, ok ? "ok" : "DIFFERS", t[reps / 2], t[0], what[v]);
			fflush(stdout);
		}
		for (auto& x : xs) CK(cudaFree(x));
		CK(cudaFree(qt)); CK(cudaFree(inv)); CK(cudaFree(am));
	}
	return 0;
}
