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

// MARK: - atk_sparse_apply: the training transforms, without fused multiply-adds

#pragma STDC FP_CONTRACT OFF

// out[c] = s + Σ_t w[t]·src_t[c] in t order, the product and the sum rounded separately, s being
// 0, out[c] or start[c] (mode 0, 1, 2).
static void combine_portable(const float *const *srcs, const float *w, int n, float *out, int channels, int mode,
                             const float *start, int c) {
    for (; c < channels; c++) {
        float a = mode == 0 ? 0.0f : mode == 1 ? out[c] : start[c];
        for (int t = 0; t < n; t++) a = a + w[t] * srcs[t][c];
        out[c] = a;
    }
}

#ifdef ATK_X86

ATK_AVX2_TARGET static void combine256(const float *const *srcs, const float *w, int n, float *out, int channels,
                                       int mode, const float *start) {
    int c = 0;
    for (; c + 8 <= channels; c += 8) {
        __m256 a = mode == 0 ? _mm256_setzero_ps() : _mm256_loadu_ps(mode == 1 ? out + c : start + c);
        for (int t = 0; t < n; t++) a = _mm256_add_ps(a, _mm256_mul_ps(_mm256_set1_ps(w[t]), _mm256_loadu_ps(srcs[t] + c)));
        _mm256_storeu_ps(out + c, a);
    }
    combine_portable(srcs, w, n, out, channels, mode, start, c);
}

ATK_AVX512_TARGET static void combine512(const float *const *srcs, const float *w, int n, float *out, int channels,
                                         int mode, const float *start) {
    for (int c = 0; c < channels; c += 16) {
        __mmask16 k = channels - c >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (channels - c)) - 1);
        __m512 a = mode == 0 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(k, mode == 1 ? out + c : start + c);
        for (int t = 0; t < n; t++)
            a = _mm512_add_ps(a, _mm512_mul_ps(_mm512_set1_ps(w[t]), _mm512_maskz_loadu_ps(k, srcs[t] + c)));
        _mm512_mask_storeu_ps(out + c, k, a);
    }
}

#endif

void atk_sparse_apply(int row_lo, int row_hi, int col_lo, int col_hi, const long *row_start, const long *column,
                      const float *coefficient, const float *src, long src_stride, float *dst, long dst_stride,
                      int channels, int mode, const float *start) {
    const float *srcs[ATK_MAX_COLS];
    float w[ATK_MAX_COLS];
#ifdef ATK_X86
    int isa = atk_isa();
#endif
    for (int i = row_lo; i < row_hi; i++) {
        int n = 0;
        for (long t = row_start[i]; t < row_start[i + 1] && n < ATK_MAX_COLS; t++) {
            long col = column[t];
            if (col >= col_lo && col < col_hi) {
                srcs[n] = src + (col - col_lo) * src_stride;
                w[n++] = coefficient[t];
            }
        }
        float *out = dst + (long)(i - row_lo) * dst_stride;
#ifdef ATK_X86
        if (isa == ATK_AVX512) {
            combine512(srcs, w, n, out, channels, mode, start);
            continue;
        }
        if (isa == ATK_AVX2) {
            combine256(srcs, w, n, out, channels, mode, start);
            continue;
        }
#endif
        combine_portable(srcs, w, n, out, channels, mode, start, 0);
    }
}
