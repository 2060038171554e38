// CKernels: the few hand-written SIMD kernels of the runtime: a product with B packed ahead of
// time (a frozen network's linear and convolution layers) or on each call (training's products
// with a small B, through BLAS.gemm), the small Winograd transforms, a frozen Fourier
// pyramid's sums, and training's elementwise kernels (Adam, dropout, layerNorm's sums). Seen
// from Swift only through Sources/ActionRuntime/PackedGEMM.swift, ElementwiseKernels.swift and
// BLAS.swift.
// Plain C99; x86-64 gets AVX2+FMA and AVX-512 variants chosen at run time (cpuid), every
// other target the portable loop.
#ifndef ACTIONTRAIN_CKERNELS_H
#define ACTIONTRAIN_CKERNELS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Columns per panel of a packed matrix.
#define ATK_PANEL 16

/// Instruction sets a kernel can run with, in increasing order.
enum atk_isa { ATK_PORTABLE = 0, ATK_AVX2 = 1, ATK_AVX512 = 2 };

/// The best instruction set this CPU and OS support, lowered by the environment variable
/// ACTIONTRAIN_KERNEL=portable|avx2|avx512 when set (never raised above what the CPU has).
int atk_detected_isa(void);

/// The instruction set `atk_gemm_packed` uses: `atk_detected_isa()` unless set.
int atk_isa(void);

/// Uses `isa` from now on, clamped to `atk_detected_isa()`; returns the one in effect.
/// For tests and benchmarks; not thread-safe with concurrent products.
int atk_set_isa(int isa);

/// Floats of the packed form of a matrix with `n` columns and `k` rows.
size_t atk_packed_count(int n, int k);

/// Packs `bt [n, k]` (row-major, row stride `k`: a weight stored output-major, i.e. Bᵀ)
/// into `packed`, panels of 16 columns of B = btᵀ [k, n]:
/// `packed[(p·k + r)·16 + j] = bt[(16p + j)·k + r]`, zero where 16p + j ≥ n.
void atk_pack_transposed(const float *bt, int n, int k, float *packed);

/// Packs B [k, n] given as `b` with row stride `ldb` (`transposed` = 0), or as its transpose
/// `b [n, k]` with row stride `ldb` (`transposed` = 1), into `packed` as atk_pack_transposed does.
void atk_pack(const float *b, long ldb, int transposed, int n, int k, float *packed);
/// This thread's scratch buffer of at least `count` floats, 64-byte aligned (NULL if out of
/// memory); valid until this thread's next call with a larger count, freed when it ends.
float *atk_scratch(size_t count);
/// `packed` must be 64-byte aligned.
/// `c[i·ldc + j] = bias[j] + Σ_r a[i·lda + r] · B[r, j]` for i < m and the columns of
/// panels `panel_lo ..< panel_hi` (j < n), B given packed. `bias` may be NULL (zero).
/// Rows of `a` may overlap (`lda < k`): a convolution's padded input read as its im2col
/// matrix without building it. Sums run over r in order, one fused multiply-add per term
/// on AVX2/AVX-512 (the same bits on both), whatever m and the panel range.
void atk_gemm_packed(int m, int n, int k, const float *a, int lda, const float *packed,
                     const float *bias, float *c, int ldc, int panel_lo, int panel_hi);

/// A training product, B packed on the fly into this thread's scratch (atk_scratch):
/// `c[i·ldc + j] = s + Σ_r a[i·lda + r]·B[r, j]` for i < m, j < n, where B[r, j] is
/// `b[r·ldb + j]`, or `b[j·ldb + r]` when `transposed_b`, and s is 0, or `c`'s own value when
/// `accumulate`; summed over r in order from s, one fused multiply-add per term on AVX2 and
/// AVX-512 (the same bits on both, and for any split of the rows or columns). Returns 0, or -1
/// when the scratch could not be allocated (nothing written).
int atk_sgemm(int transposed_b, int m, int n, int k, const float *a, int lda, const float *b, int ldb, int accumulate,
              float *c, int ldc);
/// The product of one row, `c[j] = bias[j] + Σ_r a[r]·B[r, j]` for the columns of panels
/// `panel_lo ..< panel_hi`: as atk_gemm_packed with m = 1, but the sum runs in four chains
/// (term r in chain r mod 4, the bias starting chain 0) combined as (c0 + c1) + (c2 + c3), so
/// that four fused multiply-adds are in flight (the same bits on AVX2 and AVX-512).
void atk_gemv_packed(int n, int k, const float *a, const float *packed, const float *bias, float *c, int panel_lo,
                     int panel_hi);

/// One row against `n` weight rows: `c[o] = bias[o] + Σ_r a[r]·w[o·k + r]` for o < n (`bias`
/// may be NULL), the sum over r in four chains of 8 lanes (term r in lane r mod 8 of chain
/// ⌊r/8⌋ mod 4, one fused multiply-add each), combined in a fixed order: the same bits on every
/// instruction set, the portable loop included. A batch-1 linear layer with few outputs, whose
/// packed panels of 16 columns would be mostly zeros.
void atk_dot_rows(int n, int k, const float *a, const float *w, const float *bias, float *c);

/// A small matrix applied across channels (a Winograd transform of one tile):
/// `dst[i·dst_stride + c] = s + Σ_j m[i·ldm + j]·src[j·src_stride + c]` for i < rows,
/// j < cols ≤ 8, c < channels, summed over j in order, zero coefficients included (they add
/// exact zeros), where s is `start[c]`, or 0 when `start` is NULL. One fused multiply-add per
/// term on AVX2 and AVX-512 (the same bits on both).
void atk_transform(int rows, int cols, const float *m, int ldm, const float *src, int src_stride, const float *start,
                   float *dst, int dst_stride, int channels);

/// One segment of a Fourier pyramid across channels: for f < `frequencies`, c < `channels`,
/// `dst[f·dst_stride + c] = √(b² + a²)` with `a = Σ_t basis[f·n + t]·src[t·src_stride + c]` and
/// `b = Σ_t basis[(frequencies + f)·n + t]·src[t·src_stride + c]` (t < n: the cos rows, then the
/// sin rows of `basis [2·frequencies, n]`), each sum over t in order from 0, one fused
/// multiply-add per term, the magnitude `√(fma(b, b, a·a))`: the same bits on every
/// instruction set.
void atk_fourier_magnitudes(int frequencies, int n, const float *basis, const float *src, long src_stride, float *dst,
                            long dst_stride, int channels);

/// A small matrix applied across channels as training's Winograd transforms need it (no fused
/// multiply-adds, zero coefficients skipped): for i < rows, c < channels,
/// `dst[i·dst_stride + c] = s + Σ_{j < cols, m[i·ldm + j] ≠ 0} m[i·ldm + j]·src[j·src_stride + c]`,
/// summed in j order with every product and sum rounded on its own, where s is 0 (mode 0), the
/// destination's own value (mode 1) or `start[c]` (mode 2); cols ≤ 8. Every instruction set
/// gives the same bits (the Swift loop's, `Winograd.applyReference`).
void atk_transform_exact(int rows, int cols, const float *m, int ldm, const float *src, long src_stride, int mode,
                         const float *start, float *dst, long dst_stride, int channels);

/// The constants of one Adam step (Sources/ActionTrain/Adam.swift derives them, in Double,
/// then rounded once): `decay` = 1 − lr·λ (AdamW, else 1), `l2` = λ (Adam with L2, else 0),
/// `w1` = 1 − β1, `b2` = β2, `w2` = 1 − β2, `bc2_sqrt` = √(1 − β2ᵗ), `eps` = ε,
/// `step_size` = lr / (1 − β1ᵗ).
typedef struct {
    float decay, l2, w1, b2, w2, bc2_sqrt, eps, step_size;
} atk_adam_params;

/// One Adam step over values `0 ..< n`, elementwise, each value exactly as the scalar loop
///     θ ← θ·decay;  g ← g + l2·θ                  (only when decay ≠ 1 or l2 ≠ 0)
///     m ← m + w1·(g − m);  v ← b2·v + (w2·g)·g
///     m ← 0 if |m| < FLT_MIN;  v ← 0 if v < FLT_MIN  (NaN stays)
///     θ ← θ − step_size·(m / (√max(v, 0) / bc2_sqrt + eps))   (√ of NaN taken as √0)
/// computes it, every operation rounded on its own (no fused multiply-add), so every
/// instruction set and every split of the range gives the same bits.
void atk_adam(float *p, const float *g, float *m, float *v, long n, const atk_adam_params *h);

/// Inverted dropout's forward over values `0 ..< n`: value i draws SplitMix64 at state
/// `state + (i + 1)·0x9E3779B97F4A7C15` (the generator's stream `state` starts before value 0),
/// `u = (z >> 40)·2⁻²⁴`, keeps the value unless `u < p`, and writes `mask[i]` = 1 (kept) or 0 and
/// `y[i] = x[i]·(kept ? scale : 0)`: the integer draws and one rounded product per value, so
/// every instruction set and every split of the range gives the same bits.
void atk_dropout(const float *x, float *y, unsigned char *mask, long n, unsigned long long state, float p, float scale);

/// layerNorm's statistics of 8 consecutive rows of `x` (row stride `channels`), row k:
/// `s = Σ_c x[k][c]`, `mean[k] = s·inv_c`, `v = Σ_c (x[k][c] − mean[k])²`, `rstd[k] = 1/√(v·inv_c + eps)`,
/// the sums in channel order, every product and sum rounded on its own (the bits of
/// `LayerNorm.statistics8Reference` on every instruction set).
void atk_layernorm_stats8(const float *x, int channels, float inv_c, float eps, float *mean, float *rstd);

/// `atk_layernorm_stats8` of 16 consecutive rows (two groups of 8 whose sums are in flight
/// together): the same bits as two calls.
void atk_layernorm_stats16(const float *x, int channels, float inv_c, float eps, float *mean, float *rstd);

/// layerNorm's output for `rows` consecutive rows: `y[r][c] = ((x[r][c] − mean[r])·rstd[r])·gamma[c] + beta[c]`,
/// every operation rounded on its own (the Swift loop's bits on every instruction set).
void atk_layernorm_normalize(const float *x, long rows, int channels, const float *mean, const float *rstd,
                             const float *gamma, const float *beta, float *y);

/// layerNorm backward's sums for 8 consecutive rows, row k: `g = gamma[c]·dy[k][c]`,
/// `sum_g[k] = Σ_c g`, `sum_gx[k] = Σ_c (g·(x[k][c] − mean[k]))·rstd[k]`, in channel order, every
/// product and sum rounded on its own (the bits of `LayerNorm.sums8Reference`).
void atk_layernorm_sums8(const float *x, const float *dy, const float *gamma, int channels, const float *mean,
                         const float *rstd, float *sum_g, float *sum_gx);

#ifdef __cplusplus
}
#endif
#endif
