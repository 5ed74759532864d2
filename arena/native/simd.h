// SIMD lanes for the CPU step code: one lane per env, in GCC/Clang vector extensions.
// The overloads here are the vector forms of the scalar vselect/vsqrt/vabs/vclamp in common.h,
// so a template written against those names runs one env (double) or LANES envs (vdouble).
// Every operation is the IEEE one the scalar code does (no FMA contraction, no approximate
// reciprocals), so lanes give bit for bit the results of the scalar path.
// CPU only: CUDA code never includes this header.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__AVX512F__) || defined(__AVX__) || defined(__SSE2__)
#include <immintrin.h>
#endif

namespace arena {
namespace simd {

// The widest vector of doubles the build targets (CMake option ARENA_NATIVE_ARCH picks the
// instruction set of the build machine).
#if defined(__AVX512F__)
constexpr int LANES = 8;
#elif defined(__AVX__)
constexpr int LANES = 4;
#else
constexpr int LANES = 2;
#endif

typedef double vdouble __attribute__((vector_size(8 * LANES)));
// A lane mask: -1 (all bits set) where true, 0 where false; also the integer lane type.
typedef int64_t vmask __attribute__((vector_size(8 * LANES)));

inline vdouble splat(double x) {
  vdouble v;
  for (int l = 0; l < LANES; ++l) v[l] = x;
  return v;
}

inline vmask splat_int(int64_t x) {
  vmask v;
  for (int l = 0; l < LANES; ++l) v[l] = x;
  return v;
}

// True when any lane of the mask is set.
inline bool any(vmask m) {
#if defined(__AVX512F__)
  return _mm512_test_epi64_mask(reinterpret_cast<__m512i>(m), reinterpret_cast<__m512i>(m)) != 0;
#elif defined(__AVX__)
  return !_mm256_testz_si256(reinterpret_cast<__m256i>(m), reinterpret_cast<__m256i>(m));
#else
  int64_t r = 0;
  for (int l = 0; l < LANES; ++l) r |= m[l];
  return r != 0;
#endif
}

}  // namespace simd

using simd::vdouble;
using simd::vmask;

inline vdouble vselect(vmask m, vdouble a, vdouble b) { return m ? a : b; }
inline vdouble vselect(vmask m, vdouble a, double b) { return m ? a : simd::splat(b); }
inline vdouble vselect(vmask m, double a, vdouble b) { return m ? simd::splat(a) : b; }
inline vdouble vselect(vmask m, double a, double b) { return m ? simd::splat(a) : simd::splat(b); }

inline vdouble vsqrt(vdouble x) {
#if defined(__AVX512F__)
  // maskz with every lane on is plain vsqrtpd; _mm512_sqrt_pd trips GCC 12's -Wmaybe-uninitialized.
  return reinterpret_cast<vdouble>(_mm512_maskz_sqrt_pd(static_cast<__mmask8>(0xFF), reinterpret_cast<__m512d>(x)));
#elif defined(__AVX__)
  return reinterpret_cast<vdouble>(_mm256_sqrt_pd(reinterpret_cast<__m256d>(x)));
#elif defined(__SSE2__)
  return reinterpret_cast<vdouble>(_mm_sqrt_pd(reinterpret_cast<__m128d>(x)));
#else
  vdouble r;
  for (int l = 0; l < simd::LANES; ++l) r[l] = std::sqrt(x[l]);
  return r;
#endif
}

// |x| by clearing the sign bit, as fabs does.
inline vdouble vabs(vdouble x) {
  return reinterpret_cast<vdouble>(reinterpret_cast<vmask>(x) & simd::splat_int(INT64_MAX));
}

inline vdouble vclamp(vdouble x, double lo, double hi) {
  return x < lo ? simd::splat(lo) : (x > hi ? simd::splat(hi) : x);
}

}  // namespace arena
