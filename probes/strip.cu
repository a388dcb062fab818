// Can one program per (group, column strip) read its strip once, with no
// waits on other programs? The program holds the first HOLD rows of its
// group's strip in registers (loaded all at once: up to HOLD·COLS·2 bytes
// in flight a program), reads the rest of the group once for the amax,
// reduces the columns, then casts the held rows from registers and the
// rest by a second read (from L2, the strip having just passed through
// it), storing qt through shared memory along T. Groups no longer than
// HOLD rows (most rows at E=64) cross the memory bus once and never leave
// the chip; longer ones reread their tail.
//
// Earlier probes tried one read across programs (a cluster's registers,
// colcluster.cu; chunks held across waits on other programs, coop.cu; a
// resident grid rereading L2, l2pipe.cu): 57–60% of copy at best. This
// probe has no cross-program wait at all.
//
// Timed as fp8gen's bench times: a 256 MB memset before each repetition,
// events around the kernel, median of REPS. Outputs compared with a naive
// reference (one thread a column's amax, one thread a row's cast).
// Build: nvcc -O3 -std=c++17 -arch=sm_90 -o strip strip.cu
// Run: strip (shared memory for the held rows), strip uni | regs | rest,
// strip ncu1 | ncu2 (one launch each for the profiler).
#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

constexpr int THREADS = 256;
constexpr float FMAX = 448.f;

__device__ __forceinline__ float bf(uint32_t h) { return __uint_as_float(h << 16); }
__device__ __forceinline__ uint32_t e4m3x2(float lo, float hi) {
	unsigned short r;
	asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
	return r;
}

enum Out { GROUPED = 0, KN = 1, NK = 2 };

struct Args {
	const uint16_t* x; uint8_t* q; float* inv;
	const int* offsets; // grouped: cumulative ends; expert: null (groups of Kr rows)
	long long T;        // rows in all
	int K;              // columns
	int E;
	int hint;           // 1: the rest's second read evict-first
	int lpt = 0;        // 1: blockIdx.y is the rank of the group by size, longest first
	int pre = 0;        // 1: the rest's cast loop loads the next chunk before casting this one
};

// the (lo, hi) rows of group g
__device__ __forceinline__ void bounds(const Args& a, int g, long long& lo, long long& hi) {
	long long Kr = a.T / a.E;
	hi = a.offsets ? min((long long)max(a.offsets[g], 0), a.T) : (g + 1) * Kr;
	lo = g == 0 ? 0 : a.offsets ? min((long long)max(a.offsets[g - 1], 0), a.T) : g * Kr;
	hi = max(hi, lo);
}

// Thread t holds 4 adjacent rows × 8 adjacent columns of each chunk: tc =
// t % TPR its column group, tr = t / TPR its rows (tr*4 .. tr*4+3). A chunk
// is CH = 4·THREADS/TPR rows.
template <int COLS>
struct Geo {
	static constexpr int TPR = COLS / 8, CH = 4 * THREADS / TPR, SW = CH / 4 + 1; // words a column row in shared memory, odd
};

template <int COLS>
__device__ __forceinline__ void load_chunk(const Args& a, long long R, long long lo, long long hi, int c0, uint4 (&v)[4], bool once) {
	using G = Geo<COLS>;
	int tr = threadIdx.x / G::TPR;
#pragma unroll
	for (int i = 0; i < 4; i++) {
		long long row = R + tr * 4 + i;
		const uint4* p = (const uint4*)(a.x + row * a.K + c0);
		if (row >= lo && row < hi) v[i] = once ? __ldcs(p) : __ldg(p);
		else v[i] = make_uint4(0, 0, 0, 0);
	}
}

__device__ __forceinline__ void amax8(const uint4 (&v)[4], float (&m)[8]) {
#pragma unroll
	for (int i = 0; i < 4; i++) {
		uint32_t w[4] = {v[i].x, v[i].y, v[i].z, v[i].w};
#pragma unroll
		for (int j = 0; j < 4; j++) {
			m[2 * j] = fmaxf(m[2 * j], fabsf(bf(w[j] & 0xffff)));
			m[2 * j + 1] = fmaxf(m[2 * j + 1], fabsf(bf(w[j] >> 16)));
		}
	}
}

// cast a chunk at row R and store it: transposed through shared memory
// (sm: COLS rows of SW words) for GROUPED and NK, directly for KN.
template <int COLS, int OUT>
__device__ __forceinline__ void cast_chunk(const Args& a, long long R, long long lo, long long hi, int g, int c0, const uint4 (&v)[4], const float (&s)[8], uint32_t* sm) {
	using G = Geo<COLS>;
	int t = threadIdx.x, tc = t % G::TPR, tr = t / G::TPR;
	float f[4][8];
#pragma unroll
	for (int i = 0; i < 4; i++) {
		uint32_t w[4] = {v[i].x, v[i].y, v[i].z, v[i].w};
#pragma unroll
		for (int j = 0; j < 4; j++) { f[i][2 * j] = bf(w[j] & 0xffff) * s[2 * j]; f[i][2 * j + 1] = bf(w[j] >> 16) * s[2 * j + 1]; }
	}
	if (OUT == KN) {
#pragma unroll
		for (int i = 0; i < 4; i++) {
			long long row = R + tr * 4 + i;
			if (row < lo || row >= hi) continue;
			uint2 o;
			o.x = e4m3x2(f[i][0], f[i][1]) | e4m3x2(f[i][2], f[i][3]) << 16;
			o.y = e4m3x2(f[i][4], f[i][5]) | e4m3x2(f[i][6], f[i][7]) << 16;
			*(uint2*)(a.q + row * a.K + c0) = o;
		}
		return;
	}
	// column tc*8+j, rows tr*4 .. +3: one word
#pragma unroll
	for (int j = 0; j < 8; j++)
		sm[(tc * 8 + j) * G::SW + tr] = e4m3x2(f[0][j], f[1][j]) | e4m3x2(f[2][j], f[3][j]) << 16;
	__syncthreads();
	long long stride = OUT == GROUPED ? a.T : a.T / a.E;
	long long base = OUT == GROUPED ? 0 : (long long)g * a.K * stride - lo; // NK: qt[g][c][row - lo]
	constexpr int SEGS = G::CH / 16;
#pragma unroll
	for (int k = 0; k < COLS * SEGS / THREADS; k++) {
		int vi = t + k * THREADS, c = vi / SEGS, seg = vi % SEGS;
		long long row = R + seg * 16;
		const uint32_t* p = sm + c * G::SW + seg * 4;
		uint4 o = make_uint4(p[0], p[1], p[2], p[3]);
		uint8_t* dst = a.q + base + (long long)(c0 - (c0 % COLS) + c) * stride + row;
		if (row >= lo && row + 16 <= hi) *(uint4*)dst = o;
		else {
			uint32_t w[4] = {o.x, o.y, o.z, o.w};
			for (int b = 0; b < 16; b++)
				if (row + b >= lo && row + b < hi) dst[b] = (uint8_t)(w[b / 4] >> (8 * (b % 4)));
		}
	}
	__syncthreads();
}

__device__ __forceinline__ void cp16(void* dst, const void* src, int n) {
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"((unsigned)__cvta_generic_to_shared(dst)), "l"(src), "r"(n) : "memory");
}

// SMEM=1: the held rows in shared memory (xs, HOLD rows of COLS bf16),
// loaded asynchronously, instead of registers: no registers for them, all
// in flight at once.
template <int COLS, int HC, int OUT, int SMEM = 0, int MINB = 1>
__global__ void __launch_bounds__(THREADS, MINB) strip(Args a) {
	using G = Geo<COLS>;
	__shared__ uint32_t sm[COLS * G::SW];
	__shared__ float red[THREADS / 32][COLS];
	extern __shared__ uint4 xs[]; // SMEM=1: HC*CH rows of COLS/8 uint4
	int g = blockIdx.y, t = threadIdx.x, tc = t % G::TPR, tr = t / G::TPR;
	if (a.lpt) { // the longest groups first: their programs then leave no tail
		__shared__ int order[256];
		for (int h = t; h < a.E; h += THREADS) {
			long long l, e; bounds(a, h, l, e);
			int rank = 0;
			for (int o = 0; o < a.E; o++) {
				long long lo2, hi2; bounds(a, o, lo2, hi2);
				rank += hi2 - lo2 > e - l || (hi2 - lo2 == e - l && o < h);
			}
			order[rank] = h;
		}
		__syncthreads();
		g = order[blockIdx.y];
	}
	int cs = blockIdx.x * COLS, c0 = cs + tc * 8;
	long long lo, hi;
	bounds(a, g, lo, hi);
	long long R0 = lo & ~15ll;
	uint4 v[SMEM ? 1 : HC][4];
	if (SMEM) {
#pragma unroll
		for (int h = 0; h < HC; h++)
#pragma unroll
			for (int i = 0; i < 4; i++) {
				int r = h * G::CH + tr * 4 + i;
				long long row = R0 + r;
				bool ok = row >= lo && row < hi;
				cp16(&xs[r * G::TPR + tc], ok ? (const void*)(a.x + row * a.K + c0) : (const void*)a.x, ok ? 16 : 0);
			}
		asm volatile("cp.async.commit_group;" ::: "memory");
	} else {
#pragma unroll
		for (int h = 0; h < HC; h++) load_chunk<COLS>(a, R0 + h * G::CH, lo, hi, c0, v[SMEM ? 0 : h], false);
	}
	float m[8];
#pragma unroll
	for (int j = 0; j < 8; j++) m[j] = 0.f;
	// the rest, read once for the amax (two chunks in flight)
	long long R = R0 + HC * G::CH;
	for (; R + G::CH < hi; R += 2 * G::CH) {
		uint4 u[4], w[4];
		load_chunk<COLS>(a, R, lo, hi, c0, u, false);
		load_chunk<COLS>(a, R + G::CH, lo, hi, c0, w, false);
		amax8(u, m); amax8(w, m);
	}
	if (R < hi) { uint4 u[4]; load_chunk<COLS>(a, R, lo, hi, c0, u, false); amax8(u, m); }
	if (SMEM) {
		asm volatile("cp.async.wait_all;" ::: "memory");
		__syncthreads(); // each thread reads the rows it copied, but the cast's transposes share sm
#pragma unroll
		for (int h = 0; h < HC; h++) {
			uint4 u[4];
#pragma unroll
			for (int i = 0; i < 4; i++) u[i] = xs[(h * G::CH + tr * 4 + i) * G::TPR + tc];
			amax8(u, m);
		}
	} else {
#pragma unroll
		for (int h = 0; h < HC; h++) amax8(v[SMEM ? 0 : h], m);
	}
	// the column's threads: in the warp (lanes TPR apart), then across warps
#pragma unroll
	for (int d = G::TPR; d < 32; d *= 2)
#pragma unroll
		for (int j = 0; j < 8; j++) m[j] = fmaxf(m[j], __shfl_xor_sync(0xffffffff, m[j], d));
	if ((t % 32) < G::TPR)
#pragma unroll
		for (int j = 0; j < 8; j++) red[t / 32][tc * 8 + j] = m[j];
	__syncthreads();
	float s[8];
#pragma unroll
	for (int j = 0; j < 8; j++) {
		float am = 0.f;
#pragma unroll
		for (int w = 0; w < THREADS / 32; w++) am = fmaxf(am, red[w][tc * 8 + j]);
		s[j] = FMAX / fmaxf(am, 1e-12f);
	}
	if (t < G::TPR)
#pragma unroll
		for (int j = 0; j < 8; j++) a.inv[(long long)g * a.K + c0 + j] = 1.f / s[j];
	if (hi <= lo) return;
#pragma unroll
	for (int h = 0; h < HC; h++) {
		if (R0 + h * G::CH >= hi) break;
		if (SMEM) {
			uint4 u[4];
#pragma unroll
			for (int i = 0; i < 4; i++) u[i] = xs[(h * G::CH + tr * 4 + i) * G::TPR + tc];
			cast_chunk<COLS, OUT>(a, R0 + h * G::CH, lo, hi, g, c0, u, s, sm);
		} else cast_chunk<COLS, OUT>(a, R0 + h * G::CH, lo, hi, g, c0, v[SMEM ? 0 : h], s, sm);
	}
	R = R0 + HC * G::CH;
	if (a.pre && R < hi) {
		uint4 u[4], w[4];
		load_chunk<COLS>(a, R, lo, hi, c0, u, a.hint);
		for (; R < hi; R += G::CH) {
			load_chunk<COLS>(a, R + G::CH, lo, hi, c0, w, a.hint);
			cast_chunk<COLS, OUT>(a, R, lo, hi, g, c0, u, s, sm);
#pragma unroll
			for (int i = 0; i < 4; i++) u[i] = w[i];
		}
	}
	for (; R < hi; R += G::CH) {
		uint4 u[4];
		load_chunk<COLS>(a, R, lo, hi, c0, u, a.hint);
		cast_chunk<COLS, OUT>(a, R, lo, hi, g, c0, u, s, sm);
	}
}

// the reference: one thread a column of a group, then one a row
__global__ void ref_amax(const uint16_t* x, float* am, const int* offsets, long long T, int K, int E) {
	int g = blockIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
	if (c >= K) return;
	long long lo = g ? (offsets ? offsets[g - 1] : (long long)g * (T / E)) : 0, hi = offsets ? offsets[g] : (long long)(g + 1) * (T / E);
	float m = 0;
	for (long long t = lo; t < hi; t++) m = fmaxf(m, fabsf(bf(x[t * K + c])));
	am[(long long)g * K + c] = m;
}
__global__ void ref_cast2(const uint16_t* x, const float* am, uint8_t* q, const int* offsets, long long T, int K, int E, int out, long long row0) {
	long long t = row0 + blockIdx.x;
	int g = 0;
	if (offsets) { while (g < E && offsets[g] <= t) g++; } else g = (int)(t / (T / E));
	for (int c = threadIdx.x; c < K; c += blockDim.x) {
		float s = FMAX / fmaxf(am[(long long)g * K + c], 1e-12f);
		uint8_t v = e4m3x2(bf(x[t * K + c]) * s, 0.f) & 0xff;
		long long Kr = T / E;
		if (out == GROUPED) q[(long long)c * T + t] = v;
		else if (out == KN) q[t * K + c] = v;
		else q[((long long)g * K + c) * Kr + (t - (long long)g * Kr)] = v;
	}
}
__global__ void ref_inv(const float* am, float* inv, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) inv[i] = 1.f / (FMAX / fmaxf(am[i], 1e-12f));
}

struct Case { const char* name; int out; long long T; int K, E; int uniform = 0; };

struct Bufs { void *x = nullptr, *q, *rq, *inv, *rinv, *ram, *dof = nullptr, *cp; size_t n, ns; std::vector<int> off; float tcp; };

static float timeit(void* flush, size_t fb, int reps, const std::function<void()>& f) {
	static cudaEvent_t e0, e1; static bool init = false;
	if (!init) { CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1)); init = true; }
	std::vector<float> t;
	for (int i = 0; i < reps + 3; i++) {
		CK(cudaMemsetAsync(flush, i & 0xff, fb));
		CK(cudaEventRecord(e0)); f(); CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
		float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
		if (i >= 3) t.push_back(1000 * ms);
	}
	std::sort(t.begin(), t.end());
	return t[t.size() / 2];
}

template <int COLS, int HC, int OUT, int SMEM = 0, int MINB = 1>
static void run(const Case& cs, Bufs& b, int hint, int reps, void* flush, size_t fb, int lpt = 0, int pre = 0) {
	long long T = cs.T; int K = cs.K, E = cs.E;
	const void* kern = (const void*)strip<COLS, HC, OUT, SMEM, MINB>;
	int per = 0;
	size_t dyn = SMEM ? (size_t)HC * Geo<COLS>::CH * COLS * 2 : 0;
	if (dyn) CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dyn));
	CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kern, THREADS, dyn));
	cudaFuncAttributes fa; CK(cudaFuncGetAttributes(&fa, kern));
	Args a{(const uint16_t*)b.x, (uint8_t*)b.q, (float*)b.inv, (const int*)b.dof, T, K, E, hint, lpt, pre};
	dim3 grid(K / COLS, E);
	auto op = [&]() { strip<COLS, HC, OUT, SMEM, MINB><<<grid, THREADS, dyn>>>(a); CK(cudaGetLastError()); };
	CK(cudaMemset(b.q, 0xa5, b.n));
	op(); CK(cudaDeviceSynchronize());
	std::vector<uint8_t> hq(b.n), hrq(b.n); std::vector<float> hi(b.ns), hri(b.ns);
	CK(cudaMemcpy(hq.data(), b.q, b.n, cudaMemcpyDeviceToHost)); CK(cudaMemcpy(hrq.data(), b.rq, b.n, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(hi.data(), b.inv, 4 * b.ns, cudaMemcpyDeviceToHost)); CK(cudaMemcpy(hri.data(), b.rinv, 4 * b.ns, cudaMemcpyDeviceToHost));
	size_t bad = 0, first = 0;
	for (size_t i = 0; i < b.n; i++) if (hq[i] != hrq[i]) { if (!bad) first = i; bad++; }
	size_t badi = 0;
	for (size_t i = 0; i < b.ns; i++) if (memcmp(&hi[i], &hri[i], 4)) badi++;
	float top = timeit(flush, fb, reps, op);
	printf("%-24s %s %s minb %d COLS=%2d HOLD=%4d hint %d lpt %d pre %d regs %3d (%d a SM): %8.1f us, copy %7.1f us = %5.1f%% of copy; mismatches q %zu (first %zu) inv %zu\n",
		cs.name, OUT == GROUPED ? "qt" : OUT == KN ? "kn" : "nk", SMEM ? "smem" : "regs", MINB, COLS, HC * Geo<COLS>::CH, hint, lpt, pre, fa.numRegs, per, top, b.tcp, 100 * b.tcp / top, bad, first, badi);
	fflush(stdout);
}

static void setup(const Case& cs, Bufs& b, void* flush, size_t fb, int reps) {
	long long T = cs.T; int K = cs.K, E = cs.E, out = cs.out;
	size_t n = (size_t)T * K; b.n = n;
	std::vector<uint16_t> hx(n);
	uint32_t r = 12345;
	for (size_t i = 0; i < n; i++) { r = r * 1664525u + 1013904223u; hx[i] = (uint16_t)(0x3c00 + (r >> 20) % 0x0800) ^ (uint16_t)((r >> 8) & 0x8000); }
	b.off.clear();
	if (out == GROUPED && cs.uniform) {
		for (int g = 0; g < E; g++) b.off.push_back((int)(T / E * (g + 1)));
	} else if (out == GROUPED) {
		// realistic: exponential spread, one group empty
		std::vector<double> w(E); double sum = 0; uint32_t s = 777;
		for (auto& v : w) { s = s * 1664525u + 1013904223u; v = -log(1 - (s >> 8) / 16777216.0); sum += v; }
		w[E / 2] = 0; sum = 0; for (auto v : w) sum += v;
		long long end = 0, big = 0, prev = 0;
		for (int g = 0; g < E; g++) { end += (long long)(T * w[g] / sum); b.off.push_back((int)std::min(end, T)); }
		b.off[E - 1] = (int)T;
		for (int g = 0; g < E; g++) { big = std::max(big, b.off[g] - prev); prev = b.off[g]; }
		printf("%s: largest group %lld rows (mean %lld)\n", cs.name, big, T / E);
	}
	CK(cudaMalloc(&b.x, 2 * n)); CK(cudaMemcpy(b.x, hx.data(), 2 * n, cudaMemcpyHostToDevice));
	CK(cudaMalloc(&b.q, n)); CK(cudaMalloc(&b.rq, n));
	b.ns = (size_t)E * K;
	CK(cudaMalloc(&b.inv, 4 * b.ns)); CK(cudaMalloc(&b.rinv, 4 * b.ns)); CK(cudaMalloc(&b.ram, 4 * b.ns));
	if (out == GROUPED) { CK(cudaMalloc(&b.dof, 4 * E)); CK(cudaMemcpy(b.dof, b.off.data(), 4 * E, cudaMemcpyHostToDevice)); }
	ref_amax<<<dim3((K + 255) / 256, E), 256>>>((const uint16_t*)b.x, (float*)b.ram, (const int*)b.dof, T, K, E);
	for (long long r0 = 0; r0 < T; r0 += 65535)
		ref_cast2<<<(unsigned)std::min<long long>(65535, T - r0), 256>>>((const uint16_t*)b.x, (const float*)b.ram, (uint8_t*)b.rq, (const int*)b.dof, T, K, E, out, r0);
	ref_inv<<<(unsigned)((b.ns + 255) / 256), 256>>>((const float*)b.ram, (float*)b.rinv, (int)b.ns);
	CK(cudaDeviceSynchronize());
	CK(cudaMalloc(&b.cp, n * 3 / 2));
	b.tcp = timeit(flush, fb, reps, [&]() { CK(cudaMemcpyAsync(b.cp, b.x, n * 3 / 2, cudaMemcpyDeviceToDevice)); });
}

static void teardown(Bufs& b) {
	cudaFree(b.cp); cudaFree(b.x); cudaFree(b.q); cudaFree(b.rq); cudaFree(b.inv); cudaFree(b.rinv); cudaFree(b.ram);
	if (b.dof) cudaFree(b.dof);
	b.dof = nullptr;
}

int main(int argc, char** argv) {
	void* flush; const size_t fb = 256u << 20;
	CK(cudaMalloc(&flush, fb));
	const int reps = 30;
	Case g[3] = {{"grouped 65536,7168,8", GROUPED, 65536, 7168, 8}, {"grouped 32768,2048,16", GROUPED, 32768, 2048, 16}, {"grouped 16384,5120,64", GROUPED, 16384, 5120, 64}};
	Case e[4] = {{"expert 32,7168,2048", KN, 32ll * 7168, 2048, 32}, {"expert 128,2048,768", KN, 128ll * 2048, 768, 128},
		{"expert 64,2048,1408", KN, 64ll * 2048, 1408, 64}, {"expert 16,5120,8192", KN, 16ll * 5120, 8192, 16}};
	Bufs b;
	std::string what = argc > 1 ? argv[1] : "";
	if (what == "regs") { // the held rows in registers only
		for (auto& c : g) {
			setup(c, b, flush, fb, reps);
			run<64, 2, GROUPED>(c, b, 0, reps, flush, fb);
			run<64, 4, GROUPED>(c, b, 0, reps, flush, fb);
			run<64, 2, GROUPED>(c, b, 1, reps, flush, fb);
			run<32, 1, GROUPED>(c, b, 0, reps, flush, fb);
			run<32, 2, GROUPED>(c, b, 0, reps, flush, fb);
			run<16, 1, GROUPED>(c, b, 0, reps, flush, fb);
			teardown(b);
		}
		return 0;
	}
	if (what == "uni") { // equal groups that fit what a program holds: x read once
		Case u[3] = {{"uniform 16384,5120,64", GROUPED, 16384, 5120, 64, 1}, {"uniform 16384,5120,128", GROUPED, 16384, 5120, 128, 1}, {"uniform 32768,2048,128", GROUPED, 32768, 2048, 128, 1}};
		for (auto& c : u) {
			setup(c, b, flush, fb, reps);
			run<64, 2, GROUPED, 1, 3>(c, b, 0, reps, flush, fb);
			run<64, 2, GROUPED, 1, 4>(c, b, 0, reps, flush, fb);
			run<64, 2, GROUPED, 0, 2>(c, b, 0, reps, flush, fb);
			run<64, 1, GROUPED, 1, 4>(c, b, 0, reps, flush, fb);
			run<64, 1, GROUPED, 0, 4>(c, b, 0, reps, flush, fb);
			run<32, 1, GROUPED, 1, 4>(c, b, 0, reps, flush, fb);
			teardown(b);
		}
		Case k[2] = {{"expert 64,256,5120", KN, 64ll * 256, 5120, 64}, {"expert 128,128,5120", KN, 128ll * 128, 5120, 128}};
		for (auto c : k) {
			setup(c, b, flush, fb, reps);
			run<64, 2, KN, 1, 3>(c, b, 0, reps, flush, fb);
			run<64, 1, KN, 1, 4>(c, b, 0, reps, flush, fb);
			teardown(b);
		}
		return 0;
	}
	if (what == "rest") { // the long groups' path: longest first, the reread prefetched, evict-first
		for (auto& c : g) {
			setup(c, b, flush, fb, reps);
			run<64, 2, GROUPED, 1, 4>(c, b, 0, reps, flush, fb);
			run<64, 2, GROUPED, 1, 4>(c, b, 0, reps, flush, fb, 1);
			run<64, 2, GROUPED, 1, 3>(c, b, 0, reps, flush, fb, 1, 1);
			run<64, 2, GROUPED, 1, 3>(c, b, 1, reps, flush, fb, 1, 1);
			run<64, 3, GROUPED, 1, 4>(c, b, 0, reps, flush, fb, 1);
			run<64, 3, GROUPED, 1, 3>(c, b, 0, reps, flush, fb, 1, 1);
			run<64, 4, GROUPED, 1, 3>(c, b, 0, reps, flush, fb, 1, 1);
			run<64, 1, GROUPED, 1, 4>(c, b, 0, reps, flush, fb, 1);
			teardown(b);
		}
		return 0;
	}
	if (what == "ncu1" || what == "ncu2") { // one launch each for ncu: equal groups of 256 rows, then the realistic ones
		Case c = {"ncu 16384,5120,64", GROUPED, 16384, 5120, 64, what == "ncu1"};
		setup(c, b, flush, fb, 1);
		run<64, 2, GROUPED, 1, 4>(c, b, 0, 1, flush, fb);
		return 0;
	}
	// no argument: shared memory for the held rows, registers capped
	for (auto& c : g) {
		setup(c, b, flush, fb, reps);
		run<64, 2, GROUPED>(c, b, 0, reps, flush, fb);
		run<64, 1, GROUPED, 0, 4>(c, b, 0, reps, flush, fb);
		run<64, 1, GROUPED, 1, 4>(c, b, 0, reps, flush, fb);
		run<64, 2, GROUPED, 1, 3>(c, b, 0, reps, flush, fb);
		run<64, 2, GROUPED, 1, 4>(c, b, 0, reps, flush, fb);
		run<64, 4, GROUPED, 1, 2>(c, b, 0, reps, flush, fb);
		run<64, 4, GROUPED, 1, 3>(c, b, 0, reps, flush, fb);
		run<32, 1, GROUPED, 1, 4>(c, b, 0, reps, flush, fb);
		run<32, 2, GROUPED, 1, 3>(c, b, 0, reps, flush, fb);
		teardown(b);
	}
	for (auto c : e) {
		setup(c, b, flush, fb, reps);
		run<64, 2, KN>(c, b, 0, reps, flush, fb);
		run<64, 2, KN, 1, 3>(c, b, 0, reps, flush, fb);
		run<64, 4, KN, 1, 2>(c, b, 0, reps, flush, fb);
		teardown(b);
		c.out = NK;
		setup(c, b, flush, fb, reps);
		run<64, 2, NK, 1, 3>(c, b, 0, reps, flush, fb);
		run<64, 4, NK, 1, 2>(c, b, 0, reps, flush, fb);
		teardown(b);
	}
	return 0;
}
