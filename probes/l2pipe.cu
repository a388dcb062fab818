// Can the MoE column scales reread x from L2 instead of memory? A resident
// grid (cooperative launch) walks the problem's tiles (R rows × 64
// columns) in one order: "units" (a group's or expert's rows × a band of
// 64-column strips, about TARGET bytes) one after another, a unit's tiles
// strip-fastest. Each tile is visited twice: its amax (loads, column max,
// atomicMax, a count on the unit), and L tiles later its cast (loads, a
// wait until its unit's count is complete, the cast and store). Items
// alternate: amax of tile L+k, cast of tile k. L = the largest unit + LAG
// grids of tiles, so a cast rarely waits, and a tile's second read comes
// ~2L items after its first: L2 should still hold it, so x crosses the
// memory bus once. Program p takes items p, p + grid, ...; each has the
// next item's loads in flight while it works on this one (a cast issues
// its loads before its wait). Deadlock-free with every program resident:
// the lowest unfinished item never waits.
// Timed as fp8gen's bench times: a 256 MB memset before each repetition,
// events around the op alone (scratch memsets, the kernel, the inv kernel),
// median of 30. Outputs are compared with a naive reference.
// Build: nvcc -O3 -std=c++17 -arch=sm_90 -o l2pipe l2pipe.cu
// Run: l2pipe (the walk, every case), l2pipe binsearch | costs | one (the
// profiler's case).
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

constexpr int COLS = 64, THREADS = 256, UMAX = 1024, EMAX = 256;
constexpr float FMAX = 448.f;

__device__ __forceinline__ float bf(uint32_t h) { return __uint_as_float(h << 16); }
__device__ __forceinline__ uint32_t e4m3x2(float lo, float hi) {
	unsigned short r;
	asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
	return r;
}
__device__ __forceinline__ int ld_acquire(const int* p) {
	int v;
	asm volatile("ld.acquire.gpu.global.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
}
__device__ __forceinline__ void red_release(int* p, int v) {
	asm volatile("red.release.gpu.global.add.s32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}

enum Out { GROUPED = 0, KN = 1, NK = 2 };

struct Args {
	const uint16_t* x; uint8_t* q; float* inv; unsigned* amax; int* cnt;
	const int* offsets; // grouped: cumulative ends; expert: null (groups of Kr rows)
	long long T;        // rows in all
	int K;              // columns
	int E;
	int nstrip;         // K / 64
	long long target;   // unit bytes
	float lag;          // the cast's lag beyond a unit, in grids of tiles
	int hint;           // 1: cast loads evict-first (__ldcs)
	int fence;          // 1: every atomicking lane fences before the count
	int walk;           // 1: locate items by walking forward (32-bit), 0: by binary search
	int nosync;         // timing only, wrong results: 1 no count and no wait; 2 also no atomics, no scale read
};

// The unit table, built by each block's first warp.
struct Units {
	int U;
	long long NT, L;          // tiles in all; the cast's lag in tiles
	long long tp[UMAX + 1];   // first tile of unit u
	short g[UMAX], s0[UMAX], ns[UMAX];
	int nb[UMAX];
	int glo[EMAX], ghi[EMAX]; // a group's rows
};

template <int R>
__device__ void build(const Args& a, Units& u) {
	// lane l: groups [l*G, (l+1)*G)
	int lane = threadIdx.x;
	int G = (a.E + 31) / 32;
	long long Kr = a.T / a.E;
	auto bounds = [&](int g, long long& lo, long long& hi) {
		hi = a.offsets ? a.offsets[g] : (g + 1) * Kr;
		lo = g == 0 ? 0 : a.offsets ? a.offsets[g - 1] : g * Kr;
	};
	auto bands = [&](long long rows, int& ns) {
		long long w = a.target / (rows * COLS * 2);
		int n = (int)max(1ll, min((long long)a.nstrip, w));
		int nbands = (a.nstrip + n - 1) / n;
		ns = (a.nstrip + nbands - 1) / nbands;
		return nbands;
	};
	if (a.E > EMAX) { if (lane == 0) printf("too many groups %d\n", a.E); __trap(); }
	int mine = 0;
	long long tiles = 0;
	for (int g = lane * G; g < min(a.E, (lane + 1) * G); g++) {
		long long lo, hi; bounds(g, lo, hi);
		u.glo[g] = (int)lo; u.ghi[g] = (int)hi;
		int ns;
		if (hi > lo) { mine += bands(hi - lo, ns); tiles += ((hi - 1) / R - lo / R + 1) * a.nstrip; }
	}
	int incl = mine;
	long long tin = tiles;
	for (int d = 1; d < 32; d *= 2) {
		int v = __shfl_up_sync(0xffffffff, incl, d); long long w = __shfl_up_sync(0xffffffff, tin, d);
		if (lane >= d) { incl += v; tin += w; }
	}
	int k = incl - mine;
	long long tk = tin - tiles;
	int U = __shfl_sync(0xffffffff, incl, 31);
	if (U > UMAX) { if (lane == 0) printf("too many units %d\n", U); __trap(); }
	long long big = 0;
	for (int g = lane * G; g < min(a.E, (lane + 1) * G); g++) {
		long long lo, hi; bounds(g, lo, hi);
		if (hi <= lo) continue;
		int ns, nbands = bands(hi - lo, ns);
		int nb = (int)((hi - 1) / R - lo / R + 1);
		for (int b = 0; b < nbands; b++, k++) {
			u.g[k] = (short)g; u.s0[k] = (short)(b * ns); u.ns[k] = (short)min(ns, a.nstrip - b * ns);
			u.nb[k] = nb; u.tp[k] = tk;
			tk += (long long)nb * u.ns[k];
			big = max(big, (long long)nb * u.ns[k]);
		}
	}
	for (int d = 16; d > 0; d /= 2) big = max(big, __shfl_xor_sync(0xffffffff, big, d));
	if (lane == 31) { u.tp[U] = tin; u.NT = tin; u.U = U; u.L = min(tin, big + (long long)(a.lag * gridDim.x)); }
	__syncwarp();
}

// Item i of the walk: the amax of tile i for i < L, then the amax of tile
// L + k and the cast of tile k alternately, then the casts left.
struct Item { int kind, unit, strip; long long t0, lo, hi; };

// Walker: a program's items in order, the units of its amax and cast
// streams followed forward (they only grow), the rest in 32-bit: a profile
// found the first locate's binary search and 64-bit divisions a large part
// of an item's instructions (WALK=0 keeps it, for comparison).
struct Walk { int ua = 0, uc = 0; };

__device__ __forceinline__ Item locate(long long i, const Units& u, int R, Walk* w = nullptr) {
	long long NT = u.NT, L = u.L, t;
	Item it;
	if (i < L) { it.kind = 0; t = i; }
	else if (i < 2 * NT - L) { long long k = (i - L) / 2; it.kind = (int)((i - L) & 1); t = it.kind ? k : L + k; }
	else { it.kind = 1; t = i - NT; }
	int un;
	if (w) {
		int& c = it.kind ? w->uc : w->ua;
		while (u.tp[c + 1] <= t) c++;
		un = c;
	} else {
		int a = 0, b = u.U - 1; // last unit with tp <= t
		while (a < b) { int m = (a + b + 1) / 2; if (u.tp[m] <= t) a = m; else b = m - 1; }
		un = a;
	}
	unsigned rel = (unsigned)(t - u.tp[un]), ns = (unsigned)u.ns[un];
	it.unit = un;
	it.strip = u.s0[un] + (int)(rel % ns);
	int rb = (int)(rel / ns);
	int lo = u.glo[u.g[un]], hi = u.ghi[u.g[un]];
	int base = (lo / R + rb) * R;
	it.t0 = base; it.lo = max(lo, base); it.hi = min(hi, base + R);
	return it;
}

// thread (cg = t % 8, rl = t / 8): rows 128h + 4rl + jj, 8 columns at cg*8
// (R a multiple of 128).
template <int R>
struct Tile { static_assert(R % 128 == 0, "R"); uint4 v[R / 32]; };

template <int R>
__device__ __forceinline__ void load(const Args& a, const Item& it, Tile<R>& t) {
	int cg = threadIdx.x % 8, rl = threadIdx.x / 8;
#pragma unroll
	for (int j = 0; j < R / 32; j++) {
		long long row = it.t0 + 128 * (j / 4) + 4 * rl + j % 4;
		const uint4* p = reinterpret_cast<const uint4*>(a.x + row * a.K + it.strip * COLS + cg * 8);
		if (row >= it.lo && row < it.hi) t.v[j] = (it.kind && a.hint) ? __ldcs(p) : *p;
		else t.v[j] = make_uint4(0, 0, 0, 0);
	}
}

template <int R>
__device__ __forceinline__ void amax_tile(const Args& a, const Units& u, const Item& it, const Tile<R>& t, float* red) {
	float m[8];
#pragma unroll
	for (int i = 0; i < 8; i++) m[i] = 0.f;
#pragma unroll
	for (int j = 0; j < R / 32; j++) {
		const uint32_t* w = reinterpret_cast<const uint32_t*>(&t.v[j]);
#pragma unroll
		for (int i = 0; i < 4; i++) {
			m[2 * i] = fmaxf(m[2 * i], fabsf(bf(w[i] & 0xffff)));
			m[2 * i + 1] = fmaxf(m[2 * i + 1], fabsf(bf(w[i] >> 16)));
		}
	}
#pragma unroll
	for (int i = 0; i < 8; i++) {
		m[i] = fmaxf(m[i], __shfl_xor_sync(0xffffffff, m[i], 8));
		m[i] = fmaxf(m[i], __shfl_xor_sync(0xffffffff, m[i], 16));
	}
	int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	if (lane < 8)
#pragma unroll
		for (int i = 0; i < 8; i++) red[warp * COLS + lane * 8 + i] = m[i];
	__syncthreads();
	if (threadIdx.x < COLS && a.nosync < 2) {
		float v = red[threadIdx.x];
#pragma unroll
		for (int w = 1; w < THREADS / 32; w++) v = fmaxf(v, red[w * COLS + threadIdx.x]);
		atomicMax(&a.amax[(long long)u.g[it.unit] * a.K + it.strip * COLS + threadIdx.x], __float_as_uint(v));
		if (a.fence) __threadfence();
	}
	__syncthreads();
	if (threadIdx.x == 0 && !a.nosync) red_release(&a.cnt[it.unit], 1);
}

template <int R, int OUT>
__device__ __forceinline__ void cast_tile(const Args& a, const Units& u, const Item& it, const Tile<R>& t, float* scl, uint32_t* st) {
	int need = u.nb[it.unit] * u.ns[it.unit];
	if (threadIdx.x == 0 && !a.nosync)
		while (ld_acquire(&a.cnt[it.unit]) < need) __nanosleep(32);
	__syncthreads();
	int g = u.g[it.unit];
	if (threadIdx.x < COLS) {
		float am = a.nosync < 2 ? __uint_as_float(__ldcg(&a.amax[(long long)g * a.K + it.strip * COLS + threadIdx.x])) : 1.f;
		scl[threadIdx.x] = FMAX / fmaxf(am, 1e-12f);
	}
	__syncthreads();
	int cg = threadIdx.x % 8, rl = threadIdx.x / 8;
	float s[8];
#pragma unroll
	for (int i = 0; i < 8; i++) s[i] = scl[cg * 8 + i];
	uint2 o[R / 32];
#pragma unroll
	for (int j = 0; j < R / 32; j++) {
		const uint32_t* w = reinterpret_cast<const uint32_t*>(&t.v[j]);
		o[j].x = e4m3x2(bf(w[0] & 0xffff) * s[0], bf(w[0] >> 16) * s[1]) | e4m3x2(bf(w[1] & 0xffff) * s[2], bf(w[1] >> 16) * s[3]) << 16;
		o[j].y = e4m3x2(bf(w[2] & 0xffff) * s[4], bf(w[2] >> 16) * s[5]) | e4m3x2(bf(w[3] & 0xffff) * s[6], bf(w[3] >> 16) * s[7]) << 16;
	}
	if (OUT == KN) {
#pragma unroll
		for (int j = 0; j < R / 32; j++) {
			long long row = it.t0 + 128 * (j / 4) + 4 * rl + j % 4;
			if (row >= it.lo && row < it.hi)
				__stcs(reinterpret_cast<uint2*>(a.q + row * a.K + it.strip * COLS + cg * 8), o[j]);
		}
		return;
	}
	// transposed through LDS: st[c][word], a word = 4 consecutive rows of column c
	constexpr int PW = R / 4 + 1;
#pragma unroll
	for (int h = 0; h < R / 128; h++) {
		uint32_t w0 = o[4 * h].x, w1 = o[4 * h + 1].x, w2 = o[4 * h + 2].x, w3 = o[4 * h + 3].x;
		uint32_t lo01 = __byte_perm(w0, w1, 0x5140), lo23 = __byte_perm(w2, w3, 0x5140);
		uint32_t hi01 = __byte_perm(w0, w1, 0x7362), hi23 = __byte_perm(w2, w3, 0x7362);
		int c = cg * 8, r = 32 * h + rl;
		st[(c + 0) * PW + r] = __byte_perm(lo01, lo23, 0x5410);
		st[(c + 1) * PW + r] = __byte_perm(lo01, lo23, 0x7632);
		st[(c + 2) * PW + r] = __byte_perm(hi01, hi23, 0x5410);
		st[(c + 3) * PW + r] = __byte_perm(hi01, hi23, 0x7632);
		w0 = o[4 * h].y; w1 = o[4 * h + 1].y; w2 = o[4 * h + 2].y; w3 = o[4 * h + 3].y;
		lo01 = __byte_perm(w0, w1, 0x5140); lo23 = __byte_perm(w2, w3, 0x5140);
		hi01 = __byte_perm(w0, w1, 0x7362); hi23 = __byte_perm(w2, w3, 0x7362);
		st[(c + 4) * PW + r] = __byte_perm(lo01, lo23, 0x5410);
		st[(c + 5) * PW + r] = __byte_perm(lo01, lo23, 0x7632);
		st[(c + 6) * PW + r] = __byte_perm(hi01, hi23, 0x5410);
		st[(c + 7) * PW + r] = __byte_perm(hi01, hi23, 0x7632);
	}
	__syncthreads();
	constexpr int W = R / 4;
	long long Kr = a.T / a.E;
	for (int k = threadIdx.x; k < COLS * W; k += THREADS) {
		int c = k / W, w = k % W;
		long long r = it.t0 + 4 * w;
		uint8_t* dst;
		if (OUT == GROUPED) dst = a.q + (long long)(it.strip * COLS + c) * a.T + r;
		else dst = a.q + ((long long)g * a.K + it.strip * COLS + c) * Kr + (r - (long long)g * Kr);
		uint32_t v = st[c * PW + w];
		if (r >= it.lo && r + 4 <= it.hi) __stcs(reinterpret_cast<unsigned*>(dst), v);
		else for (int i = 0; i < 4; i++) if (r + i >= it.lo && r + i < it.hi) dst[i] = (v >> (8 * i)) & 0xff;
	}
}

template <int R, int OUT>
__global__ void __launch_bounds__(THREADS) pipe(Args a) {
	__shared__ Units u;
	__shared__ float red[THREADS / 32 * COLS];
	__shared__ float scl[COLS];
	__shared__ uint32_t st[OUT == KN ? 1 : COLS * (R / 4 + 1)];
	if (threadIdx.x < 32) build<R>(a, u);
	__syncthreads();
	long long total = 2 * u.NT;
	long long i = blockIdx.x;
	Tile<R> A, B;
	Item ia, ib;
	Walk wk, *w = a.walk ? &wk : nullptr;
	// two buffers in turn (no register copies that would wait on the loads)
	if (i < total) { ia = locate(i, u, R, w); load<R>(a, ia, A); }
	while (i < total) {
		long long n = i + gridDim.x;
		if (n < total) { ib = locate(n, u, R, w); load<R>(a, ib, B); }
		if (ia.kind == 0) amax_tile<R>(a, u, ia, A, red);
		else cast_tile<R, OUT>(a, u, ia, A, scl, st);
		i = n;
		if (i >= total) break;
		n = i + gridDim.x;
		if (n < total) { ia = locate(n, u, R, w); load<R>(a, ia, A); }
		if (ib.kind == 0) amax_tile<R>(a, u, ib, B, red);
		else cast_tile<R, OUT>(a, u, ib, B, scl, st);
		i = n;
	}
}

// The same walk with the loads asynchronous (cp.async, 16 bytes a lane)
// into a ring of S stages in shared memory, S-1 items ahead: the bytes in
// flight no longer sit in registers, so they stay in flight through the
// barriers, atomics and waits. Each lane reads back only what it copied
// itself, so the ring needs no barrier of its own.
__device__ __forceinline__ void cp16(uint4* sdst, const void* gsrc, bool valid) {
	unsigned sa = (unsigned)__cvta_generic_to_shared(sdst);
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(sa), "l"(gsrc), "r"(valid ? 16 : 0) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory"); }

template <int R>
__device__ __forceinline__ void issue(const Args& a, const Item& it, uint4* slot) {
	int cg = threadIdx.x % 8, rl = threadIdx.x / 8;
#pragma unroll
	for (int j = 0; j < R / 32; j++) {
		long long row = it.t0 + 128 * (j / 4) + 4 * rl + j % 4;
		bool ok = row >= it.lo && row < it.hi;
		cp16(slot + j * THREADS + threadIdx.x, ok ? (const void*)(a.x + row * a.K + it.strip * COLS + cg * 8) : (const void*)a.x, ok);
	}
}

template <int R, int OUT, int S>
__global__ void __launch_bounds__(THREADS) pipe2(Args a) {
	__shared__ Units u;
	__shared__ float red[THREADS / 32 * COLS];
	__shared__ float scl[COLS];
	__shared__ uint32_t st[OUT == KN ? 1 : COLS * (R / 4 + 1)];
	extern __shared__ uint4 ring[]; // [S][R/32][THREADS]
	constexpr int J = R / 32;
	if (threadIdx.x < 32) build<R>(a, u);
	__syncthreads();
	long long total = 2 * u.NT, G = gridDim.x;
	Walk wi, wp, *pi = a.walk ? &wi : nullptr, *pp = a.walk ? &wp : nullptr;
#pragma unroll
	for (int k = 0; k < S - 1; k++) {
		long long i = blockIdx.x + k * G;
		if (i < total) issue<R>(a, locate(i, u, R, pi), ring + k * J * THREADS);
		cp_commit();
	}
	int slot = 0;
	for (long long i = blockIdx.x; i < total; i += G) {
		cp_wait<S - 2>();
		long long n = i + (S - 1) * G;
		int ns = slot == 0 ? S - 1 : slot - 1;
		if (n < total) issue<R>(a, locate(n, u, R, pi), ring + ns * J * THREADS);
		cp_commit();
		Tile<R> t;
#pragma unroll
		for (int j = 0; j < J; j++) t.v[j] = ring[(slot * J + j) * THREADS + threadIdx.x];
		Item it = locate(i, u, R, pp);
		if (it.kind == 0) amax_tile<R>(a, u, it, t, red);
		else cast_tile<R, OUT>(a, u, it, t, scl, st);
		slot = slot == S - 1 ? 0 : slot + 1;
	}
	cp_wait<0>();
}

__global__ void inv_from_amax(const unsigned* amax, float* inv, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) inv[i] = 1.f / (FMAX / fmaxf(__uint_as_float(amax[i]), 1e-12f));
}

// the reference: one thread a column of a group, then one a element
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

struct Case { const char* name; int out; long long T; int K, E; };

struct Bufs { void *x = nullptr, *q, *rq, *inv, *rinv, *am, *ram, *cnt, *dof = nullptr, *cp; size_t n, ns; std::vector<int> off; float tcp; };

static float timeit(void* flush, size_t fb, int reps, const std::function<void()>& f);

struct Cfg { long long target; float lag; int want, hint, fence, odd, nosync = 0, walk = 1; };

template <int R, int OUT, int S = 0>
static void run(const Case& cs, Bufs& b, Cfg f, int reps, void* flush, size_t fb) {
	long long target = f.target; float lag = f.lag; int want = f.want, hint = f.hint;
	long long T = cs.T; int K = cs.K, E = cs.E;
	int per = 0, sms = 0;
	const void* kern = S ? (const void*)pipe2<R, OUT, S ? S : 2> : (const void*)pipe<R, OUT>;
	size_t dyn = S ? (size_t)S * (R / 32) * THREADS * 16 : 0;
	if (dyn) CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dyn));
	CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kern, THREADS, dyn));
	CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	if (want > 0) per = std::min(per, want);
	int grid = per * sms - (f.odd && per * sms % 2 == 0);
	Args a{(const uint16_t*)b.x, (uint8_t*)b.q, (float*)b.inv, (unsigned*)b.am, (int*)b.cnt, (const int*)b.dof, T, K, E, K / COLS, target, lag, hint, f.fence, f.walk, f.nosync};
	auto op = [&]() {
		CK(cudaMemsetAsync(b.am, 0, 4 * b.ns));
		CK(cudaMemsetAsync(b.cnt, 0, 4 * UMAX));
		void* args[] = {&a};
		CK(cudaLaunchCooperativeKernel(kern, dim3(grid), dim3(THREADS), args, dyn, 0));
		inv_from_amax<<<(unsigned)((b.ns + 255) / 256), 256>>>((const unsigned*)b.am, (float*)b.inv, (int)b.ns);
	};
	CK(cudaMemset(b.q, 0xa5, b.n));
	op(); CK(cudaDeviceSynchronize());
	std::vector<uint8_t> hq(b.n), hrq(b.n); std::vector<float> hi(b.ns), hri(b.ns);
	CK(cudaMemcpy(hq.data(), b.q, b.n, cudaMemcpyDeviceToHost)); CK(cudaMemcpy(hrq.data(), b.rq, b.n, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(hi.data(), b.inv, 4 * b.ns, cudaMemcpyDeviceToHost)); CK(cudaMemcpy(hri.data(), b.rinv, 4 * b.ns, cudaMemcpyDeviceToHost));
	size_t bad = 0, first = 0;
	for (size_t i = 0; i < b.n; i++) if (hq[i] != hrq[i]) { if (!bad) first = i; bad++; }
	size_t badi = 0;
	for (size_t i = 0; i < b.ns; i++) if (memcmp(&hi[i], &hri[i], 4)) badi++;
	if (reps == 0) { for (int k = 0; k < 3; k++) op(); CK(cudaDeviceSynchronize()); return; }
	float top = timeit(flush, fb, reps, op);
	printf("%-24s %s S=%d R=%3d unit %2lld MB lag %.2f hint %d fence %d nosync %d walk %d grid %4d (%d a SM): %8.1f us, copy %7.1f us = %5.1f%% of copy; mismatches q %zu (first %zu) inv %zu\n",
		cs.name, OUT == GROUPED ? "qt" : OUT == KN ? "kn" : "nk", S, R, target >> 20, lag, hint, f.fence, f.nosync, f.walk, grid, per, top, b.tcp, 100 * b.tcp / top, bad, first, badi);
	fflush(stdout);
}

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

static void setup(const Case& cs, Bufs& b, int out, void* flush, size_t fb, int reps) {
	long long T = cs.T; int K = cs.K, E = cs.E;
	size_t n = (size_t)T * K; b.n = n;
	std::vector<uint16_t> hx(n);
	uint32_t r = 12345;
	for (size_t i = 0; i < n; i++) { r = r * 1664525u + 1013904223u; hx[i] = (uint16_t)(0x3c00 + (r >> 20) % 0x0800) ^ (uint16_t)((r >> 8) & 0x8000); }
	b.off.clear();
	if (out == GROUPED) {
		// realistic: exponential spread, one group empty
		std::vector<double> w(E); double sum = 0; uint32_t s = 777;
		for (auto& v : w) { s = s * 1664525u + 1013904223u; v = -log(1 - (s >> 8) / 16777216.0); sum += v; }
		w[E / 2] = 0; sum = 0; for (auto v : w) sum += v;
		long long end = 0;
		for (int g = 0; g < E; g++) { end += (long long)(T * w[g] / sum); b.off.push_back((int)std::min(end, T)); }
		b.off[E - 1] = (int)T;
	}
	CK(cudaMalloc(&b.x, 2 * n)); CK(cudaMemcpy(b.x, hx.data(), 2 * n, cudaMemcpyHostToDevice));
	CK(cudaMalloc(&b.q, n)); CK(cudaMalloc(&b.rq, n));
	b.ns = (size_t)E * K;
	CK(cudaMalloc(&b.inv, 4 * b.ns)); CK(cudaMalloc(&b.rinv, 4 * b.ns)); CK(cudaMalloc(&b.am, 4 * b.ns)); CK(cudaMalloc(&b.ram, 4 * b.ns));
	CK(cudaMalloc(&b.cnt, 4 * UMAX));
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
	cudaFree(b.cp); cudaFree(b.x); cudaFree(b.q); cudaFree(b.rq); cudaFree(b.inv); cudaFree(b.rinv); cudaFree(b.am); cudaFree(b.ram); cudaFree(b.cnt);
	if (b.dof) cudaFree(b.dof);
	b.dof = nullptr;
}

int main(int argc, char** argv) {
	void* flush; const size_t fb = 256u << 20;
	CK(cudaMalloc(&flush, fb));
	const int reps = 30;
	const long long MB = 1 << 20;
	Case g[3] = {{"grouped 65536,7168,8", GROUPED, 65536, 7168, 8}, {"grouped 32768,2048,16", GROUPED, 32768, 2048, 16}, {"grouped 16384,5120,64", GROUPED, 16384, 5120, 64}};
	Case e[4] = {{"expert 32,7168,2048", KN, 32ll * 7168, 2048, 32}, {"expert 128,2048,768", KN, 128ll * 2048, 768, 128},
		{"expert 64,2048,1408", KN, 64ll * 2048, 1408, 64}, {"expert 16,5120,8192", KN, 16ll * 5120, 8192, 16}};
	Bufs b;
	const long long M4 = 4 * MB;
	std::string what = argc > 1 ? argv[1] : "";
	if (what == "one") { // one case under a profiler: expert 32,7168,2048 kn, R=128, S=4
		setup(e[0], b, KN, flush, fb, 1);
		run<128, KN, 4>(e[0], b, {M4, 1.f, 0, 0, 0, 1, 0, 0}, 0, flush, fb);
		return 0;
	}
	if (what == "binsearch") { // the ring (pipe2) against register buffers only, items located by binary search (walk 0)
		for (auto& c : e) {
			setup(c, b, KN, flush, fb, reps);
			run<256, KN>(c, b, {M4, 1.f, 2, 1, 0, 1, 0, 0}, reps, flush, fb);
			run<128, KN, 4>(c, b, {M4, 1.f, 0, 0, 0, 1, 0, 0}, reps, flush, fb);
			run<128, KN, 3>(c, b, {M4, 1.f, 0, 0, 0, 1, 0, 0}, reps, flush, fb);
			run<128, KN, 8>(c, b, {M4, 1.f, 0, 0, 0, 1, 0, 0}, reps, flush, fb);
			run<256, KN, 3>(c, b, {M4, 1.f, 0, 0, 0, 1, 0, 0}, reps, flush, fb);
			run<256, KN, 2>(c, b, {M4, 1.f, 0, 0, 0, 1, 0, 0}, reps, flush, fb);
			run<128, KN, 4>(c, b, {M4, 2.f, 0, 0, 0, 1, 0, 0}, reps, flush, fb);
			run<128, KN, 4>(c, b, {8 * MB, 1.f, 0, 0, 0, 1, 0, 0}, reps, flush, fb);
			teardown(b);
		}
		for (auto& c : g) {
			setup(c, b, GROUPED, flush, fb, reps);
			run<128, GROUPED, 4>(c, b, {M4, 1.f, 0, 0, 0, 1, 0, 0}, reps, flush, fb);
			run<128, GROUPED, 3>(c, b, {M4, 1.f, 0, 0, 0, 1, 0, 0}, reps, flush, fb);
			run<128, GROUPED, 8>(c, b, {M4, 1.f, 0, 0, 0, 1, 0, 0}, reps, flush, fb);
			run<256, GROUPED, 3>(c, b, {M4, 1.f, 0, 0, 0, 1, 0, 0}, reps, flush, fb);
			teardown(b);
		}
		for (auto c : e) {
			c.out = NK;
			setup(c, b, NK, flush, fb, reps);
			run<128, NK, 4>(c, b, {M4, 1.f, 0, 0, 0, 1, 0, 0}, reps, flush, fb);
			run<128, NK, 8>(c, b, {M4, 1.f, 0, 0, 0, 1, 0, 0}, reps, flush, fb);
			teardown(b);
		}
		return 0;
	}
	if (what == "costs") { // what the counts, waits, atomics and scale reads cost (nosync 1 and 2: timing only, wrong outputs)
		for (auto& c : {e[0], e[1]}) {
			setup(c, b, KN, flush, fb, reps);
			for (int ns : {0, 1, 2}) run<256, KN>(c, b, {M4, 1.f, 2, 1, 0, 1, ns, 0}, reps, flush, fb);
			for (int ns : {0, 2}) run<128, KN>(c, b, {M4, 1.f, 3, 1, 0, 1, ns, 0}, reps, flush, fb);
			teardown(b);
		}
		setup(g[1], b, GROUPED, flush, fb, reps);
		for (int ns : {0, 1, 2}) run<256, GROUPED>(g[1], b, {M4, 1.f, 2, 1, 0, 1, ns, 0}, reps, flush, fb);
		teardown(b);
		return 0;
	}
	// no argument: items located by walking forward
	for (auto& c : {e[0], e[1]}) {
		setup(c, b, KN, flush, fb, reps);
		run<256, KN>(c, b, {M4, 1.f, 2, 1, 0, 1, 0, 0}, reps, flush, fb);
		run<256, KN>(c, b, {M4, 1.f, 2, 1, 0, 1, 0, 1}, reps, flush, fb);
		run<256, KN>(c, b, {M4, 1.f, 2, 1, 0, 1, 2, 1}, reps, flush, fb);
		run<128, KN>(c, b, {M4, 1.f, 3, 1, 0, 1, 0, 1}, reps, flush, fb);
		run<128, KN, 4>(c, b, {M4, 1.f, 0, 0, 0, 1, 0, 1}, reps, flush, fb);
		run<128, KN, 3>(c, b, {M4, 1.f, 0, 0, 0, 1, 0, 1}, reps, flush, fb);
		run<256, KN, 2>(c, b, {M4, 1.f, 0, 0, 0, 1, 0, 1}, reps, flush, fb);
		teardown(b);
	}
	setup(g[1], b, GROUPED, flush, fb, reps);
	run<256, GROUPED>(g[1], b, {M4, 1.f, 2, 1, 0, 1, 0, 1}, reps, flush, fb);
	run<128, GROUPED, 4>(g[1], b, {M4, 1.f, 0, 0, 0, 1, 0, 1}, reps, flush, fb);
	teardown(b);
	return 0;
}
