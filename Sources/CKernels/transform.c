// atk_transform (CKernels.h): out[i] = start + Σ_j m[i, j]·src[j] for every row i of a small
// matrix, vectorised over the channels. For each block of channels (AVX-512: 16, masked at
// the end; AVX2: 8, then scalar fmaf) the source rows are loaded once and every output row is
// summed from them: the rows' sums are independent chains, so the fused multiply-adds
// overlap instead of waiting on one another.
#include "CKernels.h"

#include <math.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define ATK_X86 1
#endif

#define ATK_MAX_COLS 8

static void transform_portable(int rows, int cols, const float *m, int ldm, const float *src, int src_stride,
                               const float *start, float *dst, int dst_stride, int channels) {
    for (int i = 0; i < rows; i++) {
        float *out = dst + (size_t)i * dst_stride;
        for (int c = 0; c < channels; c++) {
            float a = start ? start[c] : 0.0f;
            for (int j = 0; j < cols; j++) a += m[i * ldm + j] * src[(size_t)j * src_stride + c];
            out[c] = a;
        }
    }
}

#ifdef ATK_X86

// COLS is a compile-time constant in every call (see the switches below), so the source
// vectors s[j] stay in registers and the sum over j unrolls. Every coefficient is used,
// zeros too (a zero term adds an exact zero), so the loop has no branches.

#define ATK_AVX2_TARGET __attribute__((target("avx2,fma")))
#define ATK_AVX512_TARGET __attribute__((target("avx512f")))
#define ATK_INLINE static inline __attribute__((always_inline))

ATK_AVX2_TARGET ATK_INLINE void transform256_cols(const int cols, int rows, const float *m, int ldm, const float *src,
                                                  int src_stride, const float *start, float *dst, int dst_stride,
                                                  int channels) {
    __m256 s[8];
    int c = 0;
    for (; c + 8 <= channels; c += 8) {
        for (int j = 0; j < cols; j++) s[j] = _mm256_loadu_ps(src + (size_t)j * src_stride + c);
        __m256 s0 = start ? _mm256_loadu_ps(start + c) : _mm256_setzero_ps();
        for (int i = 0; i < rows; i++) {
            __m256 a = s0;
            for (int j = 0; j < cols; j++) a = _mm256_fmadd_ps(_mm256_set1_ps(m[i * ldm + j]), s[j], a);
            _mm256_storeu_ps(dst + (size_t)i * dst_stride + c, a);
        }
    }
    for (; c < channels; c++) {
        for (int i = 0; i < rows; i++) {
            float a = start ? start[c] : 0.0f;
            for (int j = 0; j < cols; j++) a = fmaf(m[i * ldm + j], src[(size_t)j * src_stride + c], a);
            dst[(size_t)i * dst_stride + c] = a;
        }
    }
}

ATK_AVX512_TARGET ATK_INLINE void transform512_cols(const int cols, int rows, const float *m, int ldm, const float *src,
                                                    int src_stride, const float *start, float *dst, int dst_stride,
                                                    int channels) {
    __m512 s[8];
    for (int c = 0; c < channels; c += 16) {
        __mmask16 k = channels - c >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (channels - c)) - 1);
        for (int j = 0; j < cols; j++) s[j] = _mm512_maskz_loadu_ps(k, src + (size_t)j * src_stride + c);
        __m512 s0 = start ? _mm512_maskz_loadu_ps(k, start + c) : _mm512_setzero_ps();
        for (int i = 0; i < rows; i++) {
            __m512 a = s0;
            for (int j = 0; j < cols; j++) a = _mm512_fmadd_ps(_mm512_set1_ps(m[i * ldm + j]), s[j], a);
            _mm512_mask_storeu_ps(dst + (size_t)i * dst_stride + c, k, a);
        }
    }
}

#define ATK_COLS_SWITCH(F)                                                                          \
    switch (cols) {                                                                                 \
    case 1: F(1, rows, m, ldm, src, src_stride, start, dst, dst_stride, channels); break;           \
    case 2: F(2, rows, m, ldm, src, src_stride, start, dst, dst_stride, channels); break;           \
    case 3: F(3, rows, m, ldm, src, src_stride, start, dst, dst_stride, channels); break;           \
    case 4: F(4, rows, m, ldm, src, src_stride, start, dst, dst_stride, channels); break;           \
    case 5: F(5, rows, m, ldm, src, src_stride, start, dst, dst_stride, channels); break;           \
    case 6: F(6, rows, m, ldm, src, src_stride, start, dst, dst_stride, channels); break;           \
    case 7: F(7, rows, m, ldm, src, src_stride, start, dst, dst_stride, channels); break;           \
    default: F(8, rows, m, ldm, src, src_stride, start, dst, dst_stride, channels); break;          \
    }

ATK_AVX2_TARGET static void transform256(int rows, int cols, const float *m, int ldm, const float *src, int src_stride,
                                         const float *start, float *dst, int dst_stride, int channels) {
    ATK_COLS_SWITCH(transform256_cols)
}

ATK_AVX512_TARGET static void transform512(int rows, int cols, const float *m, int ldm, const float *src,
                                           int src_stride, const float *start, float *dst, int dst_stride,
                                           int channels) {
    ATK_COLS_SWITCH(transform512_cols)
}

#endif

void atk_transform(int rows, int cols, const float *m, int ldm, const float *src, int src_stride, const float *start,
                   float *dst, int dst_stride, int channels) {
    if (cols > ATK_MAX_COLS) cols = ATK_MAX_COLS;
#ifdef ATK_X86
    switch (atk_isa()) {
    case ATK_AVX512: transform512(rows, cols, m, ldm, src, src_stride, start, dst, dst_stride, channels); return;
    case ATK_AVX2: transform256(rows, cols, m, ldm, src, src_stride, start, dst, dst_stride, channels); return;
    default: break;
    }
#endif
    transform_portable(rows, cols, m, ldm, src, src_stride, start, dst, dst_stride, channels);
}

// MARK: - atk_transform_exact: the training transforms, without fused multiply-adds

#pragma STDC FP_CONTRACT OFF

// out[i][c] = s + Σ_{j: m[i, j] ≠ 0} m[i, j]·src[j][c] in j order, each product and sum rounded on
// its own, s being 0, out[i][c] or start[c] (mode 0, 1, 2). As atk_transform, the source rows of
// a block of channels are loaded once and every output row summed from them.
static void exact_portable(int rows, int cols, const float *m, int ldm, const float *src, long src_stride, int mode,
                           const float *start, float *dst, long dst_stride, int c0, int channels) {
    for (int i = 0; i < rows; i++) {
        float *out = dst + (long)i * dst_stride;
        for (int c = c0; c < channels; c++) {
            float a = mode == 0 ? 0.0f : mode == 1 ? out[c] : start[c];
            for (int j = 0; j < cols; j++) {
                float w = m[i * ldm + j];
                if (w != 0.0f) a = a + w * src[(long)j * src_stride + c];
            }
            out[c] = a;
        }
    }
}

#ifdef ATK_X86

ATK_AVX2_TARGET ATK_INLINE void exact256_cols(const int cols, int rows, const float *m, int ldm, const float *src,
                                              long src_stride, int mode, const float *start, float *dst,
                                              long dst_stride, int channels) {
    __m256 s[8];
    int c = 0;
    for (; c + 8 <= channels; c += 8) {
        for (int j = 0; j < cols; j++) s[j] = _mm256_loadu_ps(src + (long)j * src_stride + c);
        __m256 s0 = mode == 2 ? _mm256_loadu_ps(start + c) : _mm256_setzero_ps();
        for (int i = 0; i < rows; i++) {
            float *out = dst + (long)i * dst_stride + c;
            __m256 a = mode == 1 ? _mm256_loadu_ps(out) : s0;
            for (int j = 0; j < cols; j++) {
                float w = m[i * ldm + j];
                if (w != 0.0f) a = _mm256_add_ps(a, _mm256_mul_ps(_mm256_set1_ps(w), s[j]));
            }
            _mm256_storeu_ps(out, a);
        }
    }
    if (c < channels) exact_portable(rows, cols, m, ldm, src, src_stride, mode, start, dst, dst_stride, c, channels);
}

ATK_AVX512_TARGET ATK_INLINE void exact512_cols(const int cols, int rows, const float *m, int ldm, const float *src,
                                                long src_stride, int mode, const float *start, float *dst,
                                                long dst_stride, int channels) {
    __m512 s[8];
    for (int c = 0; c < channels; c += 16) {
        __mmask16 k = channels - c >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (channels - c)) - 1);
        for (int j = 0; j < cols; j++) s[j] = _mm512_maskz_loadu_ps(k, src + (long)j * src_stride + c);
        __m512 s0 = mode == 2 ? _mm512_maskz_loadu_ps(k, start + c) : _mm512_setzero_ps();
        for (int i = 0; i < rows; i++) {
            float *out = dst + (long)i * dst_stride + c;
            __m512 a = mode == 1 ? _mm512_maskz_loadu_ps(k, out) : s0;
            for (int j = 0; j < cols; j++) {
                float w = m[i * ldm + j];
                if (w != 0.0f) a = _mm512_add_ps(a, _mm512_mul_ps(_mm512_set1_ps(w), s[j]));
            }
            _mm512_mask_storeu_ps(out, k, a);
        }
    }
}

#define ATK_EXACT_SWITCH(F)                                                                            \
    switch (cols) {                                                                                    \
    case 1: F(1, rows, m, ldm, src, src_stride, mode, start, dst, dst_stride, channels); break;        \
    case 2: F(2, rows, m, ldm, src, src_stride, mode, start, dst, dst_stride, channels); break;        \
    case 3: F(3, rows, m, ldm, src, src_stride, mode, start, dst, dst_stride, channels); break;        \
    case 4: F(4, rows, m, ldm, src, src_stride, mode, start, dst, dst_stride, channels); break;        \
    case 5: F(5, rows, m, ldm, src, src_stride, mode, start, dst, dst_stride, channels); break;        \
    case 6: F(6, rows, m, ldm, src, src_stride, mode, start, dst, dst_stride, channels); break;        \
    case 7: F(7, rows, m, ldm, src, src_stride, mode, start, dst, dst_stride, channels); break;        \
    default: F(8, rows, m, ldm, src, src_stride, mode, start, dst, dst_stride, channels); break;       \
    }

ATK_AVX2_TARGET static void exact256(int rows, int cols, const float *m, int ldm, const float *src, long src_stride,
                                     int mode, const float *start, float *dst, long dst_stride, int channels) {
    ATK_EXACT_SWITCH(exact256_cols)
}

ATK_AVX512_TARGET static void exact512(int rows, int cols, const float *m, int ldm, const float *src, long src_stride,
                                       int mode, const float *start, float *dst, long dst_stride, int channels) {
    ATK_EXACT_SWITCH(exact512_cols)
}

#endif

void atk_transform_exact(int rows, int cols, const float *m, int ldm, const float *src, long src_stride, int mode,
                         const float *start, float *dst, long dst_stride, int channels) {
    if (rows <= 0 || cols <= 0) return;
    if (cols > ATK_MAX_COLS) cols = ATK_MAX_COLS;
#ifdef ATK_X86
    switch (atk_isa()) {
    case ATK_AVX512: exact512(rows, cols, m, ldm, src, src_stride, mode, start, dst, dst_stride, channels); return;
    case ATK_AVX2: exact256(rows, cols, m, ldm, src, src_stride, mode, start, dst, dst_stride, channels); return;
    default: break;
    }
#endif
    exact_portable(rows, cols, m, ldm, src, src_stride, mode, start, dst, dst_stride, 0, channels);
}
