#!/usr/bin/env python3
"""The L2-hint probe's kernels, from the ninth session's k8/k16/k4.cu
(fp8gen's colwise kernels: 64 x 64 tiles, the amax's next tile
prefetched), written into build/ (not committed): run this, then
l2hint.cu's build line, from this folder. Every variant's cast takes its
tiles along the rows from the bottom band (the tenth session's order v1:
the band the amax read last first). Variant h (the macros H_*):
  H_CUT    the amax loads rows at or past M - M*H_CUT/8 with the L2
           eviction priority evict_last and the rows above evict_first
           (0: plain loads; negative: those rows evict_normal, not last)
  H_CASTLD the cast's loads of x evict_first (it is done with them)
  H_CASTST the cast's stores of qt evict_first (they need no L2)
"""
import os, re
src = "../../2026-12-02-NVIDIA-H200-session9/probes"
os.makedirs("build", exist_ok=True)
variants = {  # name: (cut eighths, cast loads first, cast stores first)
    "h0": (0, 0, 0), "h1": (2, 1, 1), "h2": (3, 1, 1), "h3": (0, 1, 1), "h4": (2, 0, 0), "h5": (3, 1, 0),
    "h6": (-2, 0, 0), "h7": (3, 0, 0),
}
helpers = r'''
static __device__ __forceinline__ unsigned long long pol_last() { unsigned long long p; asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p)); return p; }
static __device__ __forceinline__ unsigned long long pol_normal() { unsigned long long p; asm("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(p)); return p; }
static __device__ __forceinline__ unsigned long long pol_first() { unsigned long long p; asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p)); return p; }
static __device__ __forceinline__ uint4 ld_hint(const void* p, unsigned long long pol) {
  uint4 w; asm("ld.global.nc.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;" : "=r"(w.x), "=r"(w.y), "=r"(w.z), "=r"(w.w) : "l"(p), "l"(pol)); return w; }
static __device__ __forceinline__ void st_hint(void* p, uint4 w, unsigned long long pol) {
  asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1,%2,%3,%4}, %5;" :: "l"(p), "r"(w.x), "r"(w.y), "r"(w.z), "r"(w.w), "l"(pol) : "memory"); }
'''
for k in ["k8", "k16", "k4"]:
    text = open(f"{src}/{k}.cu").read()
    for v, (cut, cl, cs) in variants.items():
        s = text.replace("#define FP8G_FN", helpers + "#define FP8G_FN", 1)
        s = s.replace(f"amax_{k}(", f"amax_{k}_{v}(").replace(f"cast_{k}(", f"cast_{k}_{v}(")
        s = s.replace(f"amax_{k}_fn = (const void*)amax_{k};", f"amax_{k}_{v}_fn = (const void*)amax_{k}_{v};")
        s = s.replace(f"cast_{k}_fn = (const void*)cast_{k};", f"cast_{k}_{v}_fn = (const void*)cast_{k}_{v};")
        amax, cast = s.split("// fp8gen colwise_cast (op colwise_cast)", 1)
        if cut:
            last = "pol_last()" if cut > 0 else "pol_normal()"
            pro = f"  const unsigned long long pl = {last}, pf = pol_first();\n  const int cut = M - M / 8 * {abs(cut)};\n"
            amax = amax.replace("  const int m_start =", pro + "  const int m_start =", 1)
            amax = amax.replace("if (mask[r]) w = *(const uint4*)(x + offs[r]);",
                                "if (mask[r]) w = ld_hint(x + offs[r], rows_in[r / 8] >= cut ? pl : pf);")
            amax = amax.replace("if (mask1[r]) w = *(const uint4*)(x + offs1[r]);",
                                "if (mask1[r]) w = ld_hint(x + offs1[r], rows_in1[r / 8] >= cut ? pl : pf);")
        # the cast along the rows from the bottom band (grid (nk, nm))
        cast = cast.replace("(int)blockIdx.x", "PMX").replace("(int)blockIdx.y", "PKX")
        cast = cast.replace("PMX", "((int)gridDim.y - 1 - (int)blockIdx.y)").replace("PKX", "(int)blockIdx.x")
        if cl or cs:
            cast = cast.replace("  const int tid = threadIdx.x;", "  const unsigned long long pf = pol_first();\n  const int tid = threadIdx.x;", 1)
        if cl:
            cast = cast.replace("if (mask[r]) w = *(const uint4*)(x + offs[r]);", "if (mask[r]) w = ld_hint(x + offs[r], pf);")
        if cs:
            cast, n = re.subn(r"if \(mask_t\[r\]\) \*\(uint4\*\)\(qt \+ offs_t\[r\]\) = (make_uint4\(.*\));\n",
                              r"if (mask_t[r]) st_hint(qt + offs_t[r], \1, pf);\n", cast)
            assert n == 1, (k, v)
        out = amax + "// fp8gen colwise_cast (op colwise_cast)" + cast
        for needle in (["ld_hint(x + offs1"] if cut else []) + (["ld_hint(x + offs[r], pf)"] if cl else []) + (["st_hint(qt"] if cs else []):
            assert needle in out, (k, v, needle)
        open(f"build/{k}_{v}.cu", "w").write(out)
print("ok")
