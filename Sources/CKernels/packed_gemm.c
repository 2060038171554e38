// The packed GEMM of CKernels.h: C = bias + A·B with B packed in panels of 16 columns.
//
// Shapes: A [m, k] with row stride lda (rows may overlap), B [k, n] packed (see
// atk_pack_transposed), C [m, n] with row stride ldc. A tile is mr rows × one or two panels;
// its accumulators stay in registers for the whole sum over k:
//   AVX-512: up to 12 rows × 32 columns (24 zmm), AVX2: up to 6 rows × 16 columns (12 ymm),
//   portable: 1 row × 16 columns (left to the compiler's vectoriser).
// Each step r broadcasts a[i·lda + r] and multiplies it into the panel's row r (16 floats).
// Long sums are cut into blocks of ATK_KC steps and the rows into blocks of ATK_MC (BLIS's
// loop order without packing A: for each row block, for each k block, for each panel, for
// each tile), so that a tile's slice of the panel (ATK_KC·16 floats, 16 KB) stays in L1 for
// the whole row block and the row block's slice of A (ATK_MC·ATK_KC floats, 96 KB) in L2 for
// every panel: a batch-1024 MLP layer (k = 2565) otherwise streams all of A from L3 or memory
// once per panel. A tile's first block starts from the bias, the next ones from the partial
// sums in C: every output is still bias + Σ_r a·b in r order, one fused multiply-add per term,
// the same bits whatever the blocking.
// atk_gemv_packed (one row) splits its sum into four chains instead (row256, row512).
// The tile functions are inlined into a switch on mr, so the row loops unroll and the
// accumulator arrays become registers.
// atk_sgemm (training's products through BLAS.gemm) packs a small B on each call into a
// per-thread scratch and runs the same tiles, starting each sum from 0 or from C (β = 1).
#include "CKernels.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#define ATK_X86 1
#endif

#define ATK_INLINE static inline __attribute__((always_inline))

// Steps of the sum per block, and rows per block (a multiple of both tile heights, 6 and 12).
#define ATK_KC 256
#define ATK_MC 96

size_t atk_packed_count(int n, int k) { return (size_t)((n + ATK_PANEL - 1) / ATK_PANEL) * (size_t)k * ATK_PANEL; }

void atk_pack(const float *b, long ldb, int transposed, int n, int k, float *packed) {
    int panels = (n + ATK_PANEL - 1) / ATK_PANEL;
    if (!transposed) {
        for (int p = 0; p < panels; p++) {
            float *dst = packed + (size_t)p * k * ATK_PANEL;
            int cols = n - p * ATK_PANEL < ATK_PANEL ? n - p * ATK_PANEL : ATK_PANEL;
            const float *src = b + p * ATK_PANEL;
            for (int r = 0; r < k; r++) {
                memcpy(dst + (size_t)r * ATK_PANEL, src + (size_t)r * ldb, (size_t)cols * sizeof(float));
                if (cols < ATK_PANEL) memset(dst + (size_t)r * ATK_PANEL + cols, 0, (size_t)(ATK_PANEL - cols) * sizeof(float));
            }
        }
        return;
    }
    for (int p = 0; p < panels; p++) {
        float *dst = packed + (size_t)p * k * ATK_PANEL;
        for (int j = 0; j < ATK_PANEL; j++) {
            int col = p * ATK_PANEL + j;
            if (col < n) {
                const float *src = b + (size_t)col * ldb;
                for (int r = 0; r < k; r++) dst[(size_t)r * ATK_PANEL + j] = src[r];
            } else {
                for (int r = 0; r < k; r++) dst[(size_t)r * ATK_PANEL + j] = 0.0f;
            }
        }
    }
}

void atk_pack_transposed(const float *bt, int n, int k, float *packed) { atk_pack(bt, k, 1, n, k, packed); }

// MARK: - Scratch

// One growing 64-byte-aligned buffer per thread, freed when the thread ends.
static pthread_key_t atk_scratch_key;
static pthread_once_t atk_scratch_once = PTHREAD_ONCE_INIT;
static __thread float *atk_scratch_ptr;
static __thread size_t atk_scratch_cap;

static void atk_scratch_free(void *p) { free(p); }
static void atk_scratch_init(void) { pthread_key_create(&atk_scratch_key, atk_scratch_free); }

float *atk_scratch(size_t count) {
    if (count <= atk_scratch_cap) return atk_scratch_ptr;
    pthread_once(&atk_scratch_once, atk_scratch_init);
    size_t cap = (count + 4095) & ~(size_t)4095;
    float *p = aligned_alloc(64, cap * sizeof(float));
    if (!p) return NULL;
    free(atk_scratch_ptr);
    atk_scratch_ptr = p;
    atk_scratch_cap = cap;
    pthread_setspecific(atk_scratch_key, p);
    return p;
}

// MARK: - Instruction set

#ifdef ATK_X86
static uint64_t atk_xgetbv(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}
#endif

static int atk_cpu_isa(void) {
#ifdef ATK_X86
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return ATK_PORTABLE;
    int fma = (c >> 12) & 1, osxsave = (c >> 27) & 1, avx = (c >> 28) & 1;
    if (!(fma && osxsave && avx)) return ATK_PORTABLE;
    uint64_t xcr0 = atk_xgetbv();
    if ((xcr0 & 0x6) != 0x6) return ATK_PORTABLE;  // the OS saves the ymm state
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return ATK_PORTABLE;
    int avx2 = (b >> 5) & 1, avx512f = (b >> 16) & 1;
    if (!avx2) return ATK_PORTABLE;
    if (avx512f && (xcr0 & 0xE6) == 0xE6) return ATK_AVX512;  // and the zmm / mask state
    return ATK_AVX2;
#else
    return ATK_PORTABLE;
#endif
}

static int atk_detected = -1, atk_current = -1;

int atk_detected_isa(void) {
    if (atk_detected < 0) {
        int isa = atk_cpu_isa();
        const char *want = getenv("ACTIONTRAIN_KERNEL");
        if (want) {
            int w = !strcmp(want, "portable") ? ATK_PORTABLE : !strcmp(want, "avx2") ? ATK_AVX2 : ATK_AVX512;
            if (w < isa) isa = w;
        }
        atk_detected = isa;
    }
    return atk_detected;
}

int atk_isa(void) {
    if (atk_current < 0) atk_current = atk_detected_isa();
    return atk_current;
}

int atk_set_isa(int isa) {
    int best = atk_detected_isa();
    atk_current = isa < ATK_PORTABLE ? ATK_PORTABLE : isa > best ? best : isa;
    return atk_current;
}

// MARK: - Portable

static void gemm_portable(int m, int n, int k, const float *a, int lda, const float *packed, const float *bias,
                          float *c, int ldc, int plo, int phi, int accumulate) {
    for (int p = plo; p < phi; p++) {
        const float *q = packed + (size_t)p * k * ATK_PANEL;
        int cols = n - p * ATK_PANEL < ATK_PANEL ? n - p * ATK_PANEL : ATK_PANEL;
        for (int i = 0; i < m; i++) {
            float acc[ATK_PANEL];
            for (int j = 0; j < ATK_PANEL; j++) {
                acc[j] = j >= cols ? 0.0f : accumulate ? c[(size_t)i * ldc + p * ATK_PANEL + j] : bias ? bias[p * ATK_PANEL + j] : 0.0f;
            }
            const float *row = a + (size_t)i * lda;
            for (int r = 0; r < k; r++) {
                float x = row[r];
                for (int j = 0; j < ATK_PANEL; j++) acc[j] += x * q[(size_t)r * ATK_PANEL + j];
            }
            memcpy(c + (size_t)i * ldc + p * ATK_PANEL, acc, (size_t)cols * sizeof(float));
        }
    }
}

#ifdef ATK_X86

// MARK: - AVX2 + FMA: mr ≤ 6 rows × 16 columns

#define ATK_AVX2_TARGET __attribute__((target("avx2,fma")))

// bias16: the 16 starting values of every row (a block's first), or NULL to continue the sums
// in C (the next blocks).
ATK_AVX2_TARGET ATK_INLINE void tile256(const int mr, int k, const float *a, int lda, const float *q,
                                        const float *bias16, float *c, int ldc, int cols) {
    __m256 acc[6][2];
    if (bias16) {
        __m256 b0 = _mm256_loadu_ps(bias16), b1 = _mm256_loadu_ps(bias16 + 8);
        for (int i = 0; i < mr; i++) acc[i][0] = b0, acc[i][1] = b1;
    } else if (cols == 16) {
        for (int i = 0; i < mr; i++) {
            acc[i][0] = _mm256_loadu_ps(c + (size_t)i * ldc);
            acc[i][1] = _mm256_loadu_ps(c + (size_t)i * ldc + 8);
        }
    } else {
        float t[16] = {0};
        for (int i = 0; i < mr; i++) {
            memcpy(t, c + (size_t)i * ldc, (size_t)cols * sizeof(float));
            acc[i][0] = _mm256_loadu_ps(t);
            acc[i][1] = _mm256_loadu_ps(t + 8);
        }
    }
    for (int r = 0; r < k; r++) {
        __m256 w0 = _mm256_load_ps(q + (size_t)r * 16), w1 = _mm256_load_ps(q + (size_t)r * 16 + 8);
        for (int i = 0; i < mr; i++) {
            __m256 x = _mm256_broadcast_ss(a + (size_t)i * lda + r);
            acc[i][0] = _mm256_fmadd_ps(x, w0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(x, w1, acc[i][1]);
        }
    }
    if (cols == 16) {
        for (int i = 0; i < mr; i++) {
            _mm256_storeu_ps(c + (size_t)i * ldc, acc[i][0]);
            _mm256_storeu_ps(c + (size_t)i * ldc + 8, acc[i][1]);
        }
    } else {
        float t[16];
        for (int i = 0; i < mr; i++) {
            _mm256_storeu_ps(t, acc[i][0]);
            _mm256_storeu_ps(t + 8, acc[i][1]);
            memcpy(c + (size_t)i * ldc, t, (size_t)cols * sizeof(float));
        }
    }
}

// One row (m = 1, a matrix-vector product): the sum over r is split into four chains, term r
// going to chain r mod 4, combined as (c0 + c1) + (c2 + c3) with the bias starting c0, so that
// four fused multiply-adds are in flight instead of one (the AVX-512 row does the same).
ATK_AVX2_TARGET static void row256(int k, const float *a, const float *q, const float *bias16, float *c, int cols) {
    __m256 acc[4][2];
    for (int j = 0; j < 4; j++) acc[j][0] = acc[j][1] = _mm256_setzero_ps();
    acc[0][0] = _mm256_loadu_ps(bias16), acc[0][1] = _mm256_loadu_ps(bias16 + 8);
    int r = 0;
    for (; r + 4 <= k; r += 4) {
        for (int j = 0; j < 4; j++) {
            __m256 x = _mm256_broadcast_ss(a + r + j);
            acc[j][0] = _mm256_fmadd_ps(x, _mm256_load_ps(q + (size_t)(r + j) * 16), acc[j][0]);
            acc[j][1] = _mm256_fmadd_ps(x, _mm256_load_ps(q + (size_t)(r + j) * 16 + 8), acc[j][1]);
        }
    }
    for (int j = 0; r < k; r++, j++) {
        __m256 x = _mm256_broadcast_ss(a + r);
        acc[j][0] = _mm256_fmadd_ps(x, _mm256_load_ps(q + (size_t)r * 16), acc[j][0]);
        acc[j][1] = _mm256_fmadd_ps(x, _mm256_load_ps(q + (size_t)r * 16 + 8), acc[j][1]);
    }
    float t[16];
    _mm256_storeu_ps(t, _mm256_add_ps(_mm256_add_ps(acc[0][0], acc[1][0]), _mm256_add_ps(acc[2][0], acc[3][0])));
    _mm256_storeu_ps(t + 8, _mm256_add_ps(_mm256_add_ps(acc[0][1], acc[1][1]), _mm256_add_ps(acc[2][1], acc[3][1])));
    memcpy(c, t, (size_t)cols * sizeof(float));
}

ATK_AVX2_TARGET static void gemm256(int m, int n, int k, const float *a, int lda, const float *packed,
                                    const float *bias, float *c, int ldc, int plo, int phi, int accumulate) {
    for (int i0 = 0; i0 < m; i0 += ATK_MC) {
        int mb = m - i0 < ATK_MC ? m - i0 : ATK_MC;
        for (int r0 = 0; r0 < k; r0 += ATK_KC) {
            int kb = k - r0 < ATK_KC ? k - r0 : ATK_KC;
            for (int p = plo; p < phi; p++) {
                const float *q = packed + ((size_t)p * k + r0) * ATK_PANEL;
                int cols = n - p * ATK_PANEL < ATK_PANEL ? n - p * ATK_PANEL : ATK_PANEL;
                float b16[16] = {0};
                if (bias) memcpy(b16, bias + p * ATK_PANEL, (size_t)cols * sizeof(float));
                const float *start = r0 == 0 && !accumulate ? b16 : NULL;
                float *cp = c + (size_t)i0 * ldc + p * ATK_PANEL;
                const float *ap = a + (size_t)i0 * lda + r0;
                for (int i = 0; i < mb; i += 6) {
                    const float *ai = ap + (size_t)i * lda;
                    float *ci = cp + (size_t)i * ldc;
                    switch (mb - i < 6 ? mb - i : 6) {
                    case 6: tile256(6, kb, ai, lda, q, start, ci, ldc, cols); break;
                    case 5: tile256(5, kb, ai, lda, q, start, ci, ldc, cols); break;
                    case 4: tile256(4, kb, ai, lda, q, start, ci, ldc, cols); break;
                    case 3: tile256(3, kb, ai, lda, q, start, ci, ldc, cols); break;
                    case 2: tile256(2, kb, ai, lda, q, start, ci, ldc, cols); break;
                    default: tile256(1, kb, ai, lda, q, start, ci, ldc, cols); break;
                    }
                }
            }
        }
    }
}

// MARK: - AVX-512: mr ≤ 12 rows × 1 or 2 panels

#define ATK_AVX512_TARGET __attribute__((target("avx512f")))

// first: start every row from b0, b1 (a block's first), else continue the sums in C.
ATK_AVX512_TARGET ATK_INLINE void tile512(const int mr, const int np, int k, const float *a, int lda,
                                          const float *q0, const float *q1, __m512 b0, __m512 b1, int first,
                                          float *c, int ldc, __mmask16 m0, __mmask16 m1) {
    __m512 acc[12][2];
    for (int i = 0; i < mr; i++) {
        acc[i][0] = first ? b0 : _mm512_maskz_loadu_ps(m0, c + (size_t)i * ldc);
        if (np == 2) acc[i][1] = first ? b1 : _mm512_maskz_loadu_ps(m1, c + (size_t)i * ldc + 16);
    }
    for (int r = 0; r < k; r++) {
        __m512 w0 = _mm512_load_ps(q0 + (size_t)r * 16);
        __m512 w1 = np == 2 ? _mm512_load_ps(q1 + (size_t)r * 16) : w0;
        for (int i = 0; i < mr; i++) {
            __m512 x = _mm512_set1_ps(a[(size_t)i * lda + r]);
            acc[i][0] = _mm512_fmadd_ps(x, w0, acc[i][0]);
            if (np == 2) acc[i][1] = _mm512_fmadd_ps(x, w1, acc[i][1]);
        }
    }
    for (int i = 0; i < mr; i++) {
        _mm512_mask_storeu_ps(c + (size_t)i * ldc, m0, acc[i][0]);
        if (np == 2) _mm512_mask_storeu_ps(c + (size_t)i * ldc + 16, m1, acc[i][1]);
    }
}

#define ATK_TILE512(NP)                                                                                       \
    switch (m - i < 12 ? m - i : 12) {                                                                        \
    case 12: tile512(12, NP, kb, ai, lda, q0, q1, b0, b1, first, ci, ldc, m0, m1); break;                             \
    case 11: tile512(11, NP, kb, ai, lda, q0, q1, b0, b1, first, ci, ldc, m0, m1); break;                             \
    case 10: tile512(10, NP, kb, ai, lda, q0, q1, b0, b1, first, ci, ldc, m0, m1); break;                             \
    case 9: tile512(9, NP, kb, ai, lda, q0, q1, b0, b1, first, ci, ldc, m0, m1); break;                               \
    case 8: tile512(8, NP, kb, ai, lda, q0, q1, b0, b1, first, ci, ldc, m0, m1); break;                               \
    case 7: tile512(7, NP, kb, ai, lda, q0, q1, b0, b1, first, ci, ldc, m0, m1); break;                               \
    case 6: tile512(6, NP, kb, ai, lda, q0, q1, b0, b1, first, ci, ldc, m0, m1); break;                               \
    case 5: tile512(5, NP, kb, ai, lda, q0, q1, b0, b1, first, ci, ldc, m0, m1); break;                               \
    case 4: tile512(4, NP, kb, ai, lda, q0, q1, b0, b1, first, ci, ldc, m0, m1); break;                               \
    case 3: tile512(3, NP, kb, ai, lda, q0, q1, b0, b1, first, ci, ldc, m0, m1); break;                               \
    case 2: tile512(2, NP, kb, ai, lda, q0, q1, b0, b1, first, ci, ldc, m0, m1); break;                               \
    default: tile512(1, NP, kb, ai, lda, q0, q1, b0, b1, first, ci, ldc, m0, m1); break;                              \
    }

ATK_AVX512_TARGET static __mmask16 mask_of(int cols) {
    return cols >= 16 ? (__mmask16)0xFFFF : cols <= 0 ? (__mmask16)0 : (__mmask16)((1u << cols) - 1);
}

// One row: as row256, per panel (one zmm per chain and panel).
ATK_AVX512_TARGET static void row512(int k, const float *a, const float *q0, __m512 b0, float *c, __mmask16 m0) {
    __m512 acc[4];
    acc[0] = b0, acc[1] = acc[2] = acc[3] = _mm512_setzero_ps();
    int r = 0;
    for (; r + 4 <= k; r += 4) {
        for (int j = 0; j < 4; j++) acc[j] = _mm512_fmadd_ps(_mm512_set1_ps(a[r + j]), _mm512_load_ps(q0 + (size_t)(r + j) * 16), acc[j]);
    }
    for (int j = 0; r < k; r++, j++) acc[j] = _mm512_fmadd_ps(_mm512_set1_ps(a[r]), _mm512_load_ps(q0 + (size_t)r * 16), acc[j]);
    _mm512_mask_storeu_ps(c, m0, _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])));
}

ATK_AVX512_TARGET static void gemm512(int m, int n, int k, const float *a, int lda, const float *packed,
                                      const float *bias, float *c, int ldc, int plo, int phi, int accumulate) {
    for (int i0 = 0; i0 < m; i0 += ATK_MC) {
        int mb = m - i0 < ATK_MC ? m - i0 : ATK_MC;
        for (int r0 = 0; r0 < k; r0 += ATK_KC) {
            int kb = k - r0 < ATK_KC ? k - r0 : ATK_KC, first = r0 == 0 && !accumulate;
            for (int p = plo; p < phi; p += 2) {
                int np = p + 1 < phi ? 2 : 1, col0 = p * ATK_PANEL;
                __mmask16 m0 = mask_of(n - col0), m1 = np == 2 ? mask_of(n - col0 - 16) : 0;
                __m512 b0 = bias ? _mm512_maskz_loadu_ps(m0, bias + col0) : _mm512_setzero_ps();
                __m512 b1 = bias && np == 2 ? _mm512_maskz_loadu_ps(m1, bias + col0 + 16) : _mm512_setzero_ps();
                const float *q0 = packed + ((size_t)p * k + r0) * ATK_PANEL, *q1 = q0 + (size_t)k * ATK_PANEL;
                for (int i = 0; i < mb; i += 12) {
                    const float *ai = a + (size_t)(i0 + i) * lda + r0;
                    float *ci = c + (size_t)(i0 + i) * ldc + col0;
                    int m = mb;  // ATK_TILE512's row count
                    if (np == 2) {
                        ATK_TILE512(2)
                    } else {
                        ATK_TILE512(1)
                    }
                }
            }
        }
    }
}

ATK_AVX512_TARGET static void gemv512(int n, int k, const float *a, const float *packed, const float *bias, float *c,
                                      int plo, int phi) {
    for (int p = plo; p < phi; p++) {
        __mmask16 m0 = mask_of(n - p * ATK_PANEL);
        __m512 b0 = bias ? _mm512_maskz_loadu_ps(m0, bias + p * ATK_PANEL) : _mm512_setzero_ps();
        row512(k, a, packed + (size_t)p * k * ATK_PANEL, b0, c + p * ATK_PANEL, m0);
    }
}

ATK_AVX2_TARGET static void gemv256(int n, int k, const float *a, const float *packed, const float *bias, float *c,
                                    int plo, int phi) {
    for (int p = plo; p < phi; p++) {
        int cols = n - p * ATK_PANEL < ATK_PANEL ? n - p * ATK_PANEL : ATK_PANEL;
        float b16[16] = {0};
        if (bias) memcpy(b16, bias + p * ATK_PANEL, (size_t)cols * sizeof(float));
        row256(k, a, packed + (size_t)p * k * ATK_PANEL, b16, c + p * ATK_PANEL, cols);
    }
}

#endif  // ATK_X86

// MARK: - atk_dot_rows: one row against a few outputs' weight rows

// Lane l of chain q sums the terms r = 8·b + l of the blocks b ≡ q (mod 4), in block order,
// one fused multiply-add each; the chains are combined as (q0 + q1) + (q2 + q3), then lane l
// with lane l + 4, lane l with l + 2, lane 0 with lane 1, and the bias plus that sum. The
// portable loop below and the AVX2 kernel (which AVX-512 CPUs run too) do exactly these
// operations.
static void dots_portable(int n, int k, const float *a, const float *w, const float *bias, float *c) {
    for (int o = 0; o < n; o++) {
        const float *wo = w + (size_t)o * k;
        float acc[4][8] = {{0}};
        for (int r = 0; r < k; r++) acc[(r / 8) % 4][r % 8] = fmaf(a[r], wo[r], acc[(r / 8) % 4][r % 8]);
        float v[8];
        for (int l = 0; l < 8; l++) v[l] = (acc[0][l] + acc[1][l]) + (acc[2][l] + acc[3][l]);
        for (int l = 0; l < 4; l++) v[l] = v[l] + v[l + 4];
        for (int l = 0; l < 2; l++) v[l] = v[l] + v[l + 2];
        c[o] = (bias ? bias[o] : 0.0f) + (v[0] + v[1]);
    }
}

#ifdef ATK_X86
ATK_AVX2_TARGET static void dots256(int n, int k, const float *a, const float *w, const float *bias, float *c) {
    int k8 = k & ~7, tail = k - k8;
    __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(tail), lanes);
    __m256 at = _mm256_maskload_ps(a + k8, mask);
    for (int o = 0; o < n; o++) {
        const float *wo = w + (size_t)o * k;
        __m256 acc[4];
        for (int q = 0; q < 4; q++) acc[q] = _mm256_setzero_ps();
        int r = 0;
        for (; r + 32 <= k8; r += 32) {
            for (int q = 0; q < 4; q++)
                acc[q] = _mm256_fmadd_ps(_mm256_loadu_ps(a + r + 8 * q), _mm256_loadu_ps(wo + r + 8 * q), acc[q]);
        }
        for (int q = 0; r < k8; r += 8, q++) acc[q] = _mm256_fmadd_ps(_mm256_loadu_ps(a + r), _mm256_loadu_ps(wo + r), acc[q]);
        if (tail) {
            int q = (k8 / 8) % 4;
            acc[q] = _mm256_fmadd_ps(at, _mm256_maskload_ps(wo + k8, mask), acc[q]);
        }
        __m256 v = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
        __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        h = _mm_add_ps(h, _mm_movehl_ps(h, h));
        h = _mm_add_ss(h, _mm_shuffle_ps(h, h, 1));
        c[o] = (bias ? bias[o] : 0.0f) + _mm_cvtss_f32(h);
    }
}
#endif

void atk_dot_rows(int n, int k, const float *a, const float *w, const float *bias, float *c) {
#ifdef ATK_X86
    if (atk_isa() >= ATK_AVX2) {
        dots256(n, k, a, w, bias, c);
        return;
    }
#endif
    dots_portable(n, k, a, w, bias, c);
}

void atk_gemv_packed(int n, int k, const float *a, const float *packed, const float *bias, float *c, int panel_lo,
                     int panel_hi) {
    if (panel_lo >= panel_hi) return;
#ifdef ATK_X86
    switch (atk_isa()) {
    case ATK_AVX512: gemv512(n, k, a, packed, bias, c, panel_lo, panel_hi); return;
    case ATK_AVX2: gemv256(n, k, a, packed, bias, c, panel_lo, panel_hi); return;
    default: break;
    }
#endif
    gemm_portable(1, n, k, a, k, packed, bias, c, n, panel_lo, panel_hi, 0);
}

void atk_gemm_packed(int m, int n, int k, const float *a, int lda, const float *packed, const float *bias, float *c,
                     int ldc, int panel_lo, int panel_hi) {
    if (m <= 0 || panel_lo >= panel_hi) return;
#ifdef ATK_X86
    switch (atk_isa()) {
    case ATK_AVX512: gemm512(m, n, k, a, lda, packed, bias, c, ldc, panel_lo, panel_hi, 0); return;
    case ATK_AVX2: gemm256(m, n, k, a, lda, packed, bias, c, ldc, panel_lo, panel_hi, 0); return;
    default: break;
    }
#endif
    gemm_portable(m, n, k, a, lda, packed, bias, c, ldc, panel_lo, panel_hi, 0);
}

int atk_sgemm(int transposed_b, int m, int n, int k, const float *a, int lda, const float *b, int ldb, int accumulate,
              float *c, int ldc) {
    if (m <= 0 || n <= 0) return 0;
    float *packed = atk_scratch(atk_packed_count(n, k));
    if (!packed) return -1;
    atk_pack(b, ldb, transposed_b, n, k, packed);
    int panels = (n + ATK_PANEL - 1) / ATK_PANEL;
#ifdef ATK_X86
    switch (atk_isa()) {
    case ATK_AVX512: gemm512(m, n, k, a, lda, packed, NULL, c, ldc, 0, panels, accumulate); return 0;
    case ATK_AVX2: gemm256(m, n, k, a, lda, packed, NULL, c, ldc, 0, panels, accumulate); return 0;
    default: break;
    }
#endif
    gemm_portable(m, n, k, a, lda, packed, NULL, c, ldc, 0, panels, accumulate);
    return 0;
}
