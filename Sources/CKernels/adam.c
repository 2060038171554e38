// atk_adam (CKernels.h): one Adam / AdamW step over a parameter vector, elementwise, with the
// same scalar operations in the same order as Sources/ActionTrain/Adam.swift's reference loop
// (no fused multiply-adds: every product and sum is rounded on its own), so the AVX-512, AVX2
// and portable variants give the bits of that loop, whatever the vector width or the split.
// The step is bound by its two divisions and square root per value: the portable loop (what
// Swift's baseline x86-64 build vectorises to 4 lanes) takes about twice the AVX2 time.
#include "CKernels.h"

#include <float.h>
#include <math.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define ATK_X86 1
#endif

#pragma STDC FP_CONTRACT OFF

// A square root that never sets errno (its argument is never negative here), so that the
// portable loop vectorises instead of calling libm.
#if defined(__has_builtin) && __has_builtin(__builtin_elementwise_sqrt)
#define ATK_SQRT(x) __builtin_elementwise_sqrt(x)
#else
#define ATK_SQRT(x) sqrtf(x)
#endif

// One value, the reference order; `plain`: no weight decay (decay = 1, l2 = 0).
static inline void adam_one(float *p, const float *g, float *m, float *v, const atk_adam_params *h, int plain) {
    float pi = plain ? *p : *p * h->decay;
    float gi = plain ? *g : *g + h->l2 * pi;
    float mi = *m + h->w1 * (gi - *m);
    float vi = h->b2 * *v + h->w2 * gi * gi;
    mi = fabsf(mi) < FLT_MIN ? 0.0f : mi;
    vi = vi < FLT_MIN ? 0.0f : vi;
    *m = mi;
    *v = vi;
    float root = ATK_SQRT(vi >= 0.0f ? vi : 0.0f);
    *p = pi - h->step_size * (mi / (root / h->bc2_sqrt + h->eps));
}

static void adam_portable(float *p, const float *g, float *m, float *v, long lo, long hi, const atk_adam_params *h,
                          int plain) {
    if (plain) {
        for (long i = lo; i < hi; i++) adam_one(p + i, g + i, m + i, v + i, h, 1);
    } else {
        for (long i = lo; i < hi; i++) adam_one(p + i, g + i, m + i, v + i, h, 0);
    }
}

#ifdef ATK_X86

#define ATK_AVX2_TARGET __attribute__((target("avx2")))
#define ATK_AVX512_TARGET __attribute__((target("avx512f")))

ATK_AVX2_TARGET static void adam256(float *p, const float *g, float *m, float *v, long n, const atk_adam_params *h,
                                    int plain) {
    const __m256 decay = _mm256_set1_ps(h->decay), l2 = _mm256_set1_ps(h->l2), w1 = _mm256_set1_ps(h->w1);
    const __m256 b2 = _mm256_set1_ps(h->b2), w2 = _mm256_set1_ps(h->w2), bc2 = _mm256_set1_ps(h->bc2_sqrt);
    const __m256 eps = _mm256_set1_ps(h->eps), step = _mm256_set1_ps(h->step_size);
    const __m256 tiny = _mm256_set1_ps(FLT_MIN), zero = _mm256_setzero_ps(), sign = _mm256_set1_ps(-0.0f);
    long i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 pi = _mm256_loadu_ps(p + i), gi = _mm256_loadu_ps(g + i);
        __m256 mo = _mm256_loadu_ps(m + i), vo = _mm256_loadu_ps(v + i);
        if (!plain) {
            pi = _mm256_mul_ps(pi, decay);
            gi = _mm256_add_ps(gi, _mm256_mul_ps(l2, pi));
        }
        __m256 mi = _mm256_add_ps(mo, _mm256_mul_ps(w1, _mm256_sub_ps(gi, mo)));
        __m256 vi = _mm256_add_ps(_mm256_mul_ps(b2, vo), _mm256_mul_ps(_mm256_mul_ps(w2, gi), gi));
        // |m| < tiny and v < tiny become +0 (NaN compares false and stays).
        mi = _mm256_andnot_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, mi), tiny, _CMP_LT_OQ), mi);
        vi = _mm256_andnot_ps(_mm256_cmp_ps(vi, tiny, _CMP_LT_OQ), vi);
        _mm256_storeu_ps(m + i, mi);
        _mm256_storeu_ps(v + i, vi);
        __m256 root = _mm256_sqrt_ps(_mm256_and_ps(_mm256_cmp_ps(vi, zero, _CMP_GE_OQ), vi));
        __m256 den = _mm256_add_ps(_mm256_div_ps(root, bc2), eps);
        _mm256_storeu_ps(p + i, _mm256_sub_ps(pi, _mm256_mul_ps(step, _mm256_div_ps(mi, den))));
    }
    adam_portable(p, g, m, v, i, n, h, plain);
}

ATK_AVX512_TARGET static void adam512(float *p, const float *g, float *m, float *v, long n, const atk_adam_params *h,
                                      int plain) {
    const __m512 decay = _mm512_set1_ps(h->decay), l2 = _mm512_set1_ps(h->l2), w1 = _mm512_set1_ps(h->w1);
    const __m512 b2 = _mm512_set1_ps(h->b2), w2 = _mm512_set1_ps(h->w2), bc2 = _mm512_set1_ps(h->bc2_sqrt);
    const __m512 eps = _mm512_set1_ps(h->eps), step = _mm512_set1_ps(h->step_size);
    const __m512 tiny = _mm512_set1_ps(FLT_MIN), zero = _mm512_setzero_ps();
    for (long i = 0; i < n; i += 16) {
        __mmask16 k = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        __m512 pi = _mm512_maskz_loadu_ps(k, p + i), gi = _mm512_maskz_loadu_ps(k, g + i);
        __m512 mo = _mm512_maskz_loadu_ps(k, m + i), vo = _mm512_maskz_loadu_ps(k, v + i);
        if (!plain) {
            pi = _mm512_mul_ps(pi, decay);
            gi = _mm512_add_ps(gi, _mm512_mul_ps(l2, pi));
        }
        __m512 mi = _mm512_add_ps(mo, _mm512_mul_ps(w1, _mm512_sub_ps(gi, mo)));
        __m512 vi = _mm512_add_ps(_mm512_mul_ps(b2, vo), _mm512_mul_ps(_mm512_mul_ps(w2, gi), gi));
        mi = _mm512_mask_mov_ps(mi, _mm512_cmp_ps_mask(_mm512_abs_ps(mi), tiny, _CMP_LT_OQ), zero);
        vi = _mm512_mask_mov_ps(vi, _mm512_cmp_ps_mask(vi, tiny, _CMP_LT_OQ), zero);
        _mm512_mask_storeu_ps(m + i, k, mi);
        _mm512_mask_storeu_ps(v + i, k, vi);
        __m512 root = _mm512_sqrt_ps(_mm512_maskz_mov_ps(_mm512_cmp_ps_mask(vi, zero, _CMP_GE_OQ), vi));
        __m512 den = _mm512_add_ps(_mm512_div_ps(root, bc2), eps);
        _mm512_mask_storeu_ps(p + i, k, _mm512_sub_ps(pi, _mm512_mul_ps(step, _mm512_div_ps(mi, den))));
    }
}

#endif

void atk_adam(float *p, const float *g, float *m, float *v, long n, const atk_adam_params *h) {
    int plain = h->decay == 1.0f && h->l2 == 0.0f;
#ifdef ATK_X86
    switch (atk_isa()) {
    case ATK_AVX512: adam512(p, g, m, v, n, h, plain); return;
    case ATK_AVX2: adam256(p, g, m, v, n, h, plain); return;
    default: break;
    }
#endif
    adam_portable(p, g, m, v, 0, n, h, plain);
}
