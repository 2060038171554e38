// atk_layernorm_stats8, atk_layernorm_sums8 (CKernels.h): the per-row sums of layerNorm for 8
// consecutive rows, one row per lane, with the scalar operations of the Swift loops in
// Sources/ActionRuntime/Layers/LayerNorm.swift (`statistics8Reference`, `sums8Reference`) in
// the same order: every sum runs over the channels in channel order, every product and sum
// rounded on its own (no fused multiply-adds). The Swift loops build each lane vector from 8
// strided loads; here 8 channels of the 8 rows are loaded as 8 vectors and transposed, so a
// block of 64 values costs 8 loads and 24 shuffles instead of 64 loads and 56 inserts. The
// AVX2 path also runs on AVX-512 CPUs (the same bits: lanes are independent).
#include "CKernels.h"

#include <math.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define ATK_X86 1
#endif

#pragma STDC FP_CONTRACT OFF

static void stats8_portable(const float *x, int C, float inv_c, float eps, float *mean, float *rstd) {
    for (int k = 0; k < 8; k++) {
        const float *xr = x + (long)k * C;
        float s = 0.0f;
        for (int c = 0; c < C; c++) s = s + xr[c];
        float m = s * inv_c, v = 0.0f;
        for (int c = 0; c < C; c++) {
            float d = xr[c] - m;
            v = v + d * d;
        }
        mean[k] = m;
        rstd[k] = 1.0f / sqrtf(v * inv_c + eps);
    }
}

static void sums8_portable(const float *x, const float *dy, const float *gamma, int C, const float *mean,
                           const float *rstd, float *sum_g, float *sum_gx) {
    for (int k = 0; k < 8; k++) {
        const float *xr = x + (long)k * C, *dyr = dy + (long)k * C;
        float a = 0.0f, b = 0.0f, m = mean[k], inv = rstd[k];
        for (int c = 0; c < C; c++) {
            float gc = gamma[c] * dyr[c];
            a = a + gc;
            b = b + (gc * (xr[c] - m)) * inv;
        }
        sum_g[k] = a;
        sum_gx[k] = b;
    }
}

// y = ((x − mean)·rstd)·γ + β for the channels c0 ..< C of every row, each operation rounded on
// its own (LayerNorm.forward's order).
static void normalize_portable(const float *x, long rows, int C, const float *mean, const float *rstd,
                               const float *gamma, const float *beta, float *y, int c0) {
    for (long r = 0; r < rows; r++) {
        const float *xr = x + r * C;
        float *yr = y + r * C;
        for (int c = c0; c < C; c++) yr[c] = (xr[c] - mean[r]) * rstd[r] * gamma[c] + beta[c];
    }
}

#ifdef ATK_X86

#define ATK_AVX2_TARGET __attribute__((target("avx2")))
#define ATK_INLINE static inline __attribute__((always_inline))

// v[j] = channels c0 … c0+7 of row j  →  v[j] = channel c0 + j of rows 0 … 7.
ATK_AVX2_TARGET static inline void transpose8(__m256 v[8]) {
    __m256 t0 = _mm256_unpacklo_ps(v[0], v[1]), t1 = _mm256_unpackhi_ps(v[0], v[1]);
    __m256 t2 = _mm256_unpacklo_ps(v[2], v[3]), t3 = _mm256_unpackhi_ps(v[2], v[3]);
    __m256 t4 = _mm256_unpacklo_ps(v[4], v[5]), t5 = _mm256_unpackhi_ps(v[4], v[5]);
    __m256 t6 = _mm256_unpacklo_ps(v[6], v[7]), t7 = _mm256_unpackhi_ps(v[6], v[7]);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    v[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
    v[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
    v[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
    v[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
    v[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
    v[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
    v[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
    v[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

// Channels c0 … c0+7 of the 8 rows, one vector per channel (rows in the lanes).
ATK_AVX2_TARGET static inline void load_columns(const float *p, int C, int c0, __m256 v[8]) {
    for (int k = 0; k < 8; k++) v[k] = _mm256_loadu_ps(p + (long)k * C + c0);
    transpose8(v);
}

// Channel c of the 8 rows (the last C mod 8 channels).
ATK_AVX2_TARGET static inline __m256 column(const float *p, int C, int c) {
    return _mm256_setr_ps(p[c], p[C + c], p[2L * C + c], p[3L * C + c], p[4L * C + c], p[5L * C + c], p[6L * C + c],
                          p[7L * C + c]);
}

// G groups of 8 rows (G = 1 or 2, a compile-time constant): each group's sums are its own
// chains, so with two groups two chains of dependent additions are in flight, and each lane
// still sums its row in channel order (the same bits as one group at a time).
ATK_AVX2_TARGET ATK_INLINE void stats_groups_avx2(const int G, const float *x, int C, float inv_c, float eps,
                                                  float *mean, float *rstd) {
    const int full = C / 8 * 8;
    __m256 v[2][8], s[2], m[2], var[2];
    for (int g = 0; g < G; g++) s[g] = var[g] = _mm256_setzero_ps();
    for (int c0 = 0; c0 < full; c0 += 8) {
        for (int g = 0; g < G; g++) load_columns(x + (long)g * 8 * C, C, c0, v[g]);
        for (int j = 0; j < 8; j++)
            for (int g = 0; g < G; g++) s[g] = _mm256_add_ps(s[g], v[g][j]);
    }
    for (int c = full; c < C; c++)
        for (int g = 0; g < G; g++) s[g] = _mm256_add_ps(s[g], column(x + (long)g * 8 * C, C, c));
    for (int g = 0; g < G; g++) m[g] = _mm256_mul_ps(s[g], _mm256_set1_ps(inv_c));
    for (int c0 = 0; c0 < full; c0 += 8) {
        for (int g = 0; g < G; g++) load_columns(x + (long)g * 8 * C, C, c0, v[g]);
        for (int j = 0; j < 8; j++) {
            for (int g = 0; g < G; g++) {
                __m256 d = _mm256_sub_ps(v[g][j], m[g]);
                var[g] = _mm256_add_ps(var[g], _mm256_mul_ps(d, d));
            }
        }
    }
    for (int c = full; c < C; c++) {
        for (int g = 0; g < G; g++) {
            __m256 d = _mm256_sub_ps(column(x + (long)g * 8 * C, C, c), m[g]);
            var[g] = _mm256_add_ps(var[g], _mm256_mul_ps(d, d));
        }
    }
    for (int g = 0; g < G; g++) {
        __m256 root = _mm256_sqrt_ps(_mm256_add_ps(_mm256_mul_ps(var[g], _mm256_set1_ps(inv_c)), _mm256_set1_ps(eps)));
        _mm256_storeu_ps(mean + 8 * g, m[g]);
        _mm256_storeu_ps(rstd + 8 * g, _mm256_div_ps(_mm256_set1_ps(1.0f), root));
    }
}

ATK_AVX2_TARGET static void stats8_avx2(const float *x, int C, float inv_c, float eps, float *mean, float *rstd) {
    stats_groups_avx2(1, x, C, inv_c, eps, mean, rstd);
}

ATK_AVX2_TARGET static void stats16_avx2(const float *x, int C, float inv_c, float eps, float *mean, float *rstd) {
    stats_groups_avx2(2, x, C, inv_c, eps, mean, rstd);
}

// normalize_portable, 8 channels at a time (the last C mod 8 by the portable loop).
ATK_AVX2_TARGET static void normalize_avx2(const float *x, long rows, int C, const float *mean, const float *rstd,
                                           const float *gamma, const float *beta, float *y) {
    const int full = C / 8 * 8;
    for (long r = 0; r < rows; r++) {
        const float *xr = x + r * C;
        float *yr = y + r * C;
        const __m256 m = _mm256_set1_ps(mean[r]), inv = _mm256_set1_ps(rstd[r]);
        for (int c = 0; c < full; c += 8) {
            __m256 t = _mm256_mul_ps(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(xr + c), m), inv), _mm256_loadu_ps(gamma + c));
            _mm256_storeu_ps(yr + c, _mm256_add_ps(t, _mm256_loadu_ps(beta + c)));
        }
    }
    if (full < C) normalize_portable(x, rows, C, mean, rstd, gamma, beta, y, full);
}

ATK_AVX2_TARGET static void sums8_avx2(const float *x, const float *dy, const float *gamma, int C, const float *mean,
                                       const float *rstd, float *sum_g, float *sum_gx) {
    const int full = C / 8 * 8;
    const __m256 m = _mm256_loadu_ps(mean), inv = _mm256_loadu_ps(rstd);
    __m256 a = _mm256_setzero_ps(), b = _mm256_setzero_ps(), xv[8], dv[8];
    for (int c0 = 0; c0 < full; c0 += 8) {
        load_columns(x, C, c0, xv);
        load_columns(dy, C, c0, dv);
        for (int j = 0; j < 8; j++) {
            __m256 gc = _mm256_mul_ps(_mm256_set1_ps(gamma[c0 + j]), dv[j]);
            a = _mm256_add_ps(a, gc);
            b = _mm256_add_ps(b, _mm256_mul_ps(_mm256_mul_ps(gc, _mm256_sub_ps(xv[j], m)), inv));
        }
    }
    for (int c = full; c < C; c++) {
        __m256 gc = _mm256_mul_ps(_mm256_set1_ps(gamma[c]), column(dy, C, c));
        a = _mm256_add_ps(a, gc);
        b = _mm256_add_ps(b, _mm256_mul_ps(_mm256_mul_ps(gc, _mm256_sub_ps(column(x, C, c), m)), inv));
    }
    _mm256_storeu_ps(sum_g, a);
    _mm256_storeu_ps(sum_gx, b);
}

#endif

void atk_layernorm_stats8(const float *x, int channels, float inv_c, float eps, float *mean, float *rstd) {
#ifdef ATK_X86
    if (atk_isa() >= ATK_AVX2) {
        stats8_avx2(x, channels, inv_c, eps, mean, rstd);
        return;
    }
#endif
    stats8_portable(x, channels, inv_c, eps, mean, rstd);
}

void atk_layernorm_sums8(const float *x, const float *dy, const float *gamma, int channels, const float *mean,
                         const float *rstd, float *sum_g, float *sum_gx) {
#ifdef ATK_X86
    if (atk_isa() >= ATK_AVX2) {
        sums8_avx2(x, dy, gamma, channels, mean, rstd, sum_g, sum_gx);
        return;
    }
#endif
    sums8_portable(x, dy, gamma, channels, mean, rstd, sum_g, sum_gx);
}

void atk_layernorm_stats16(const float *x, int channels, float inv_c, float eps, float *mean, float *rstd) {
#ifdef ATK_X86
    if (atk_isa() >= ATK_AVX2) {
        stats16_avx2(x, channels, inv_c, eps, mean, rstd);
        return;
    }
#endif
    stats8_portable(x, channels, inv_c, eps, mean, rstd);
    stats8_portable(x + 8L * channels, channels, inv_c, eps, mean + 8, rstd + 8);
}

void atk_layernorm_normalize(const float *x, long rows, int channels, const float *mean, const float *rstd,
                             const float *gamma, const float *beta, float *y) {
#ifdef ATK_X86
    if (atk_isa() >= ATK_AVX2) {
        normalize_avx2(x, rows, channels, mean, rstd, gamma, beta, y);
        return;
    }
#endif
    normalize_portable(x, rows, channels, mean, rstd, gamma, beta, y, 0);
}
