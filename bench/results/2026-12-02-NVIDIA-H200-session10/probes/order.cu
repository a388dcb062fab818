// Does the colwise cast find the amax's last reads in L2 if it starts
// with them? fp8gen's two kernels at the shipped schedules (k8/k16/k4.cu)
// with the cast's tile order varied (gen_order.sh: v0 fp8gen's, v1 along
// the rows from the bottom band, v2 along the rows from the top, v3 down
// the columns from the bottom). Each variant's qt is compared with v0's.
// Timed as fp8gen's bench times an op: memset, amax, cast back to back,
// events between repetitions, median of 60; "same" reuses one x as the
// bench does, "rot" takes the next of three copies each time (nothing of
// the repetition before in L2); "cast" is the cast alone (rot).
// Build (after gen_order.sh): S=../../2026-12-02-NVIDIA-H200-session9/probes;
//   nvcc -O3 -std=c++17 -arch=sm_90 -o order order.cu $S/k8.cu $S/k16.cu $S/k4.cu build/k*_v?.cu
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

extern "C" const void *amax_k8_fn, *amax_k16_fn, *amax_k4_fn;
#define DECL(k) extern "C" const void *cast_##k##_v0_fn, *cast_##k##_v1_fn, *cast_##k##_v2_fn, *cast_##k##_v3_fn;
DECL(k8) DECL(k16) DECL(k4)

struct Shape { const char* name; int M, K, split; const void* amax; const void* cast[4]; };

int main() {
	Shape shapes[] = {
		{"8192x8192", 8192, 8192, 8, amax_k8_fn, {cast_k8_v0_fn, cast_k8_v1_fn, cast_k8_v2_fn, cast_k8_v3_fn}},
		{"16384x4096", 16384, 4096, 16, amax_k16_fn, {cast_k16_v0_fn, cast_k16_v1_fn, cast_k16_v2_fn, cast_k16_v3_fn}},
		{"4096x14336", 4096, 14336, 4, amax_k4_fn, {cast_k4_v0_fn, cast_k4_v1_fn, cast_k4_v2_fn, cast_k4_v3_fn}},
	};
	const int reps = 60;
	std::vector<cudaEvent_t> ev(reps + 1);
	for (auto& e : ev) CK(cudaEventCreate(&e));
	auto timed = [&](auto&& seq) {
		for (int i = 0; i < 6; i++) seq(i);
		CK(cudaEventRecord(ev[0]));
		for (int i = 1; i <= reps; i++) { seq(i); CK(cudaEventRecord(ev[i])); }
		CK(cudaEventSynchronize(ev[reps]));
		std::vector<float> t(reps);
		for (int i = 0; i < reps; i++) { float ms; CK(cudaEventElapsedTime(&ms, ev[i], ev[i + 1])); t[i] = 1000 * ms; }
		std::sort(t.begin(), t.end()); return t[reps / 2];
	};
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
		for (int v = 0; v < 4; v++) {
			dim3 gc = (v == 1 || v == 2) ? dim3(nk, nm) : dim3(nm, nk);
			auto run = [&](int i, bool amax, bool cast) {
				void* x = xs[i % 3];
				void* aargs[] = {&x, &am, &M, &K};
				void* cargs[] = {&x, &qt, &inv, &am, &M, &K};
				if (amax) { CK(cudaMemsetAsync(am, 0, 4 * K)); CK(cudaLaunchKernel(s.amax, dim3(s.split, nk), dim3(128), aargs, 0, 0)); }
				if (cast) CK(cudaLaunchKernel(s.cast[v], gc, dim3(128), cargs, 0, 0));
			};
			CK(cudaMemset(qt, 0xa5, n));
			run(0, true, true); CK(cudaDeviceSynchronize());
			CK(cudaMemcpy(v ? got.data() : ref.data(), qt, n, cudaMemcpyDeviceToHost));
			bool ok = v == 0 || memcmp(ref.data(), got.data(), n) == 0;
			float same = timed([&](int i) { run(0, true, true); });
			float rot = timed([&](int i) { run(i, true, true); });
			float amax = timed([&](int i) { run(i, true, false); });
			float cast = timed([&](int i) { run(i, false, true); });
			printf("round %d %s v%d %s same %.1f rot %.1f amax+memset %.1f cast %.1f us\n", round, s.name, v, ok ? "ok" : "DIFFERS", same, rot, amax, cast);
		}
		for (auto& x : xs) CK(cudaFree(x));
		CK(cudaFree(qt)); CK(cudaFree(inv)); CK(cudaFree(am));
	}
	return 0;
}
