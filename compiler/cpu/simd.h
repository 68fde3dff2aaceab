// Internal to the CPU target: PODSIM_CPU_SIMD marks the hot loops (free functions;
// GCC cannot multiversion virtual functions). With GCC on x86-64 each is compiled for
// AVX-512 (x86-64-v4), AVX2 and baseline x86-64, and the dynamic loader picks the
// widest the CPU supports, so the library needs no -march flag to use wide vectors.
//
// Results do not depend on the version picked: each marked loop performs one IR op per
// element (no multiply feeding an add that the compiler could contract into an FMA,
// which would round differently from the evaluator) - keep it that way.
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define PODSIM_CPU_SIMD __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define PODSIM_CPU_SIMD
#endif
