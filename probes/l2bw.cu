// How much faster is a read that hits L2 than one from DRAM on this GPU?
// A grid-stride kernel reads N bytes in 16-byte vectors (and folds them so
// the loads stay), over a buffer that fits L2 (read again and again, no
// flush: every read after the first hits) and over one far larger than
// it (every read misses). Also a copy of the same sizes (read + write).
// Median of 50 launches timed by events; bytes / time.
// Build: nvcc -O3 -std=c++17 -arch=sm_90 -o l2bw l2bw.cu
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); return 1; } } while (0)

__global__ void readk(const uint4* __restrict__ p, size_t n, unsigned* out) {
	unsigned acc = 0;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		uint4 v = p[i];
		acc ^= v.x ^ v.y ^ v.z ^ v.w;
	}
	if (acc == 0x12345678u) *out = acc; // never, but the loads must stay
}
__global__ void copyk(const uint4* __restrict__ p, uint4* __restrict__ q, size_t n) {
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) q[i] = p[i];
}

int main() {
	int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	int l2; CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
	printf("SMs %d, L2 %d MB\n", sms, l2 >> 20);
	size_t big = 2ull << 30;
	uint4 *a, *b; unsigned* out;
	CK(cudaMalloc(&a, big)); CK(cudaMalloc(&b, big)); CK(cudaMalloc(&out, 4));
	CK(cudaMemset(a, 1, big)); CK(cudaMemset(b, 2, big));
	cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
	for (size_t mb : {8, 16, 24, 32, 48, 2048}) {
		size_t bytes = mb << 20, n = bytes / 16;
		for (int kind = 0; kind < 2; kind++) {
			for (int per : {4, 8, 16}) {
				std::vector<float> t;
				for (int i = 0; i < 53; i++) {
					CK(cudaEventRecord(e0));
					if (kind == 0) readk<<<sms * per, 256>>>(a, n, out);
					else copyk<<<sms * per, 256>>>(a, b, n / 2); // half read, half written: the same bytes moved
					CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
					float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
					if (i >= 3) t.push_back(ms);
				}
				std::sort(t.begin(), t.end());
				float ms = t[t.size() / 2];
				printf("%s %5zu MB, %2d blocks a SM: %8.2f us, %6.2f TB/s\n", kind ? "copy" : "read", mb, per, 1000 * ms, bytes / (ms * 1e9));
			}
		}
	}
	return 0;
}
