// atk_dropout (CKernels.h): inverted dropout's mask and output, the bits of the Swift loop in
// Sources/ActionRuntime/Layers/Dropout.swift (SeededGenerator's SplitMix64, one draw per value).
// The draw is bound by its two 64-bit multiplications: the scalar loop does one value per
// about 4 cycles; AVX2 (also used on AVX-512 CPUs) does 8 per iteration, each 64-bit product
// from three 32-bit ones.
#include "CKernels.h"

#include <stdint.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define ATK_X86 1
#endif

#pragma STDC FP_CONTRACT OFF

#define ATK_INCREMENT 0x9E3779B97F4A7C15ULL
#define ATK_MIX1 0xBF58476D1CE4E5B9ULL
#define ATK_MIX2 0x94D049BB133111EBULL

static void dropout_portable(const float *x, float *y, unsigned char *mask, long lo, long hi, uint64_t state, float p,
                             float scale) {
    for (long i = lo; i < hi; i++) {
        uint64_t z = state + (uint64_t)(i + 1) * ATK_INCREMENT;
        z = (z ^ (z >> 30)) * ATK_MIX1;
        z = (z ^ (z >> 27)) * ATK_MIX2;
        z ^= z >> 31;
        float u = (float)(uint32_t)(z >> 40) * 0x1p-24f;
        int kept = !(u < p);
        mask[i] = (unsigned char)kept;
        y[i] = x[i] * (kept ? scale : 0.0f);
    }
}

#ifdef ATK_X86

#define ATK_AVX2_TARGET __attribute__((target("avx2")))

// The low 64 bits of a·b in each lane: a₀b₀ + ((a₁b₀ + a₀b₁) << 32) with 32-bit halves.
ATK_AVX2_TARGET static inline __m256i mul64(__m256i a, __m256i b) {
    __m256i low = _mm256_mul_epu32(a, b);
    __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), b), _mm256_mul_epu32(a, _mm256_srli_epi64(b, 32)));
    return _mm256_add_epi64(low, _mm256_slli_epi64(cross, 32));
}

// SplitMix64's output of each lane's state, shifted right by 40 (24 bits).
ATK_AVX2_TARGET static inline __m256i draw24(__m256i z) {
    const __m256i m1 = _mm256_set1_epi64x((long long)ATK_MIX1), m2 = _mm256_set1_epi64x((long long)ATK_MIX2);
    z = mul64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 30)), m1);
    z = mul64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 27)), m2);
    z = _mm256_xor_si256(z, _mm256_srli_epi64(z, 31));
    return _mm256_srli_epi64(z, 40);
}

ATK_AVX2_TARGET static void dropout256(const float *x, float *y, unsigned char *mask, long n, uint64_t state, float p,
                                       float scale) {
    const uint64_t d = ATK_INCREMENT;
    __m256i s0 = _mm256_setr_epi64x((long long)(state + d), (long long)(state + 2 * d), (long long)(state + 3 * d),
                                    (long long)(state + 4 * d));
    __m256i s1 = _mm256_add_epi64(s0, _mm256_set1_epi64x((long long)(4 * d)));
    const __m256i step = _mm256_set1_epi64x((long long)(8 * d)), low32 = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    const __m256 pv = _mm256_set1_ps(p), sv = _mm256_set1_ps(scale), unit = _mm256_set1_ps(0x1p-24f);
    long i = 0;
    for (; i + 8 <= n; i += 8) {
        // The 24-bit draws of values i ..< i + 8, in order, as int32 (exact in float).
        __m128i a = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(draw24(s0), low32));
        __m128i b = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(draw24(s1), low32));
        __m256 u = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(a), b, 1)), unit);
        __m256 kept = _mm256_cmp_ps(u, pv, _CMP_NLT_UQ);  // !(u < p)
        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), _mm256_and_ps(kept, sv)));
        // Each lane's 0 or 1 (the sign bit of the all-ones compare), packed to 8 bytes.
        __m256i one = _mm256_srli_epi32(_mm256_castps_si256(kept), 31);
        __m128i words = _mm_packus_epi32(_mm256_castsi256_si128(one), _mm256_extracti128_si256(one, 1));
        _mm_storel_epi64((__m128i *)(mask + i), _mm_packus_epi16(words, _mm_setzero_si128()));
        s0 = _mm256_add_epi64(s0, step);
        s1 = _mm256_add_epi64(s1, step);
    }
    dropout_portable(x, y, mask, i, n, state, p, scale);
}

#endif

void atk_dropout(const float *x, float *y, unsigned char *mask, long n, unsigned long long state, float p, float scale) {
#ifdef ATK_X86
    if (atk_isa() >= ATK_AVX2) {
        dropout256(x, y, mask, n, (uint64_t)state, p, scale);
        return;
    }
#endif
    dropout_portable(x, y, mask, 0, n, (uint64_t)state, p, scale);
}
