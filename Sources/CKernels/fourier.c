// atk_fourier_magnitudes (CKernels.h): the Fourier pyramid of a frozen network, one segment of
// one window: for each frequency f, the cos and sin sums over the segment's frames of a block
// of channels stay in registers (4 frequencies, so 8 sums, a pass), each frame's channels are
// loaded once per pass, and the magnitudes are written straight to the layer's output. Every
// sum runs over the frames in order from 0 with one fused multiply-add per term, and the
// magnitude is √(fma(b, b, a·a)): the same bits on every instruction set, for any batch and
// any split of the windows.
#include "CKernels.h"

#include <math.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define ATK_X86 1
#endif

/// Frequencies summed together in one pass over the frames.
#define ATK_FOURIER_BLOCK 4

static void fourier_portable(int F, int n, const float *basis, const float *src, long src_stride, float *dst,
                             long dst_stride, int c0, int channels) {
    for (int f = 0; f < F; f++) {
        const float *cosines = basis + (long)f * n, *sines = basis + (long)(F + f) * n;
        for (int c = c0; c < channels; c++) {
            float a = 0.0f, b = 0.0f;
            for (int t = 0; t < n; t++) {
                float x = src[(long)t * src_stride + c];
                a = fmaf(cosines[t], x, a);
                b = fmaf(sines[t], x, b);
            }
            dst[(long)f * dst_stride + c] = sqrtf(fmaf(b, b, a * a));
        }
    }
}

#ifdef ATK_X86

#define ATK_AVX2_TARGET __attribute__((target("avx2,fma")))
#define ATK_AVX512_TARGET __attribute__((target("avx512f")))
#define ATK_INLINE static inline __attribute__((always_inline))

// FB (frequencies in this pass, 1 ... 4) is a compile-time constant in every call, so the sums
// stay in registers and the loop over them unrolls.
ATK_AVX2_TARGET ATK_INLINE void fourier256_block(const int FB, int F, int f0, int n, const float *basis,
                                                 const float *src, long src_stride, float *dst, long dst_stride,
                                                 int c) {
    __m256 a[ATK_FOURIER_BLOCK], b[ATK_FOURIER_BLOCK];
    for (int q = 0; q < FB; q++) a[q] = b[q] = _mm256_setzero_ps();
    for (int t = 0; t < n; t++) {
        __m256 x = _mm256_loadu_ps(src + (long)t * src_stride + c);
        for (int q = 0; q < FB; q++) {
            a[q] = _mm256_fmadd_ps(_mm256_set1_ps(basis[(long)(f0 + q) * n + t]), x, a[q]);
            b[q] = _mm256_fmadd_ps(_mm256_set1_ps(basis[(long)(F + f0 + q) * n + t]), x, b[q]);
        }
    }
    for (int q = 0; q < FB; q++)
        _mm256_storeu_ps(dst + (long)(f0 + q) * dst_stride + c,
                         _mm256_sqrt_ps(_mm256_fmadd_ps(b[q], b[q], _mm256_mul_ps(a[q], a[q]))));
}

ATK_AVX2_TARGET static void fourier256(int F, int n, const float *basis, const float *src, long src_stride,
                                       float *dst, long dst_stride, int channels) {
    int c = 0;
    for (; c + 8 <= channels; c += 8) {
        for (int f0 = 0; f0 < F; f0 += ATK_FOURIER_BLOCK) {
            switch (F - f0) {
            case 1: fourier256_block(1, F, f0, n, basis, src, src_stride, dst, dst_stride, c); break;
            case 2: fourier256_block(2, F, f0, n, basis, src, src_stride, dst, dst_stride, c); break;
            case 3: fourier256_block(3, F, f0, n, basis, src, src_stride, dst, dst_stride, c); break;
            default: fourier256_block(4, F, f0, n, basis, src, src_stride, dst, dst_stride, c); break;
            }
        }
    }
    if (c < channels) fourier_portable(F, n, basis, src, src_stride, dst, dst_stride, c, channels);
}

ATK_AVX512_TARGET ATK_INLINE void fourier512_block(const int FB, int F, int f0, int n, const float *basis,
                                                   const float *src, long src_stride, float *dst, long dst_stride,
                                                   int c, __mmask16 k) {
    __m512 a[ATK_FOURIER_BLOCK], b[ATK_FOURIER_BLOCK];
    for (int q = 0; q < FB; q++) a[q] = b[q] = _mm512_setzero_ps();
    for (int t = 0; t < n; t++) {
        __m512 x = _mm512_maskz_loadu_ps(k, src + (long)t * src_stride + c);
        for (int q = 0; q < FB; q++) {
            a[q] = _mm512_fmadd_ps(_mm512_set1_ps(basis[(long)(f0 + q) * n + t]), x, a[q]);
            b[q] = _mm512_fmadd_ps(_mm512_set1_ps(basis[(long)(F + f0 + q) * n + t]), x, b[q]);
        }
    }
    for (int q = 0; q < FB; q++)
        _mm512_mask_storeu_ps(dst + (long)(f0 + q) * dst_stride + c, k,
                              _mm512_sqrt_ps(_mm512_fmadd_ps(b[q], b[q], _mm512_mul_ps(a[q], a[q]))));
}

ATK_AVX512_TARGET static void fourier512(int F, int n, const float *basis, const float *src, long src_stride,
                                         float *dst, long dst_stride, int channels) {
    for (int c = 0; c < channels; c += 16) {
        __mmask16 k = channels - c >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (channels - c)) - 1);
        for (int f0 = 0; f0 < F; f0 += ATK_FOURIER_BLOCK) {
            switch (F - f0) {
            case 1: fourier512_block(1, F, f0, n, basis, src, src_stride, dst, dst_stride, c, k); break;
            case 2: fourier512_block(2, F, f0, n, basis, src, src_stride, dst, dst_stride, c, k); break;
            case 3: fourier512_block(3, F, f0, n, basis, src, src_stride, dst, dst_stride, c, k); break;
            default: fourier512_block(4, F, f0, n, basis, src, src_stride, dst, dst_stride, c, k); break;
            }
        }
    }
}

#endif

void atk_fourier_magnitudes(int frequencies, int n, const float *basis, const float *src, long src_stride, float *dst,
                            long dst_stride, int channels) {
#ifdef ATK_X86
    switch (atk_isa()) {
    case ATK_AVX512: fourier512(frequencies, n, basis, src, src_stride, dst, dst_stride, channels); return;
    case ATK_AVX2: fourier256(frequencies, n, basis, src, src_stride, dst, dst_stride, channels); return;
    default: break;
    }
#endif
    fourier_portable(frequencies, n, basis, src, src_stride, dst, dst_stride, 0, channels);
}
