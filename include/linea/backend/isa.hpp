// linea/backend/isa.hpp — the instruction set a translation unit is compiled for, as an inline namespace.
//
// Header-only code is compiled once per translation unit, with that unit's flags, and the linker keeps one copy
// of each function. Two units built with different -march flags would then share the xsimd and Eigen kernels
// of whichever unit the linker saw first: an AVX-512 kernel in a unit meant for an older CPU (SIGILL), or a
// kernel whose lane count disagrees with its caller's buffers (wrong results). So everything whose code the
// instruction set changes sits in `inline namespace LINEA_ISA` (isa_avx512bw, isa_fma3_avx2, isa_sse2, ...):
// the backend tags cpu_arch, native_arch and generic (so every form instantiated on them), linea::cpu_backend,
// linea::chunk, the chunkwise CCQ reader, linea::reference, the generic loops (forms/recurrent_head.hpp) and the
// token loading (core/load.hpp, gates.hpp, epilogue.hpp). Code keeps naming them without it
// (linea::backend::cpu, linea::chunk::kernel); only the symbols differ. What stays shared is argument checking
// and error text (core/validate.hpp, view.hpp, error.hpp), whose code does no arithmetic worth vectorising.
// The levels follow xsimd's choice of default_arch (backend/cpu/simd.hpp checks that they agree), from the
// compiler's own macros, so this header needs neither xsimd nor anything else.
//
// nvcc compiles a .cu file twice (host, device) and the host compiler's -m macros need not reach the device
// pass, so every nvcc unit uses the one name isa_nvcc: a .cu file never shares these symbols with a .cpp file,
// but two .cu files given different host -march flags (-Xcompiler) would share them.
#pragma once

#if defined(__CUDACC__)
#define LINEA_ISA isa_nvcc
#define LINEA_ISA_NAME "nvcc"
#elif defined(__AVX512BW__)
#define LINEA_ISA isa_avx512bw
#define LINEA_ISA_NAME "avx512bw"
#elif defined(__AVX512DQ__)
#define LINEA_ISA isa_avx512dq
#define LINEA_ISA_NAME "avx512dq"
#elif defined(__AVX512CD__)
#define LINEA_ISA isa_avx512cd
#define LINEA_ISA_NAME "avx512cd"
#elif defined(__AVX512F__)
#define LINEA_ISA isa_avx512f
#define LINEA_ISA_NAME "avx512f"
#elif defined(__AVX2__) && defined(__FMA__)
#define LINEA_ISA isa_fma3_avx2
#define LINEA_ISA_NAME "fma3+avx2"
#elif defined(__AVX2__)
#define LINEA_ISA isa_avx2
#define LINEA_ISA_NAME "avx2"
#elif defined(__AVX__) && defined(__FMA__)
#define LINEA_ISA isa_fma3_avx
#define LINEA_ISA_NAME "fma3+avx"
#elif defined(__AVX__)
#define LINEA_ISA isa_avx
#define LINEA_ISA_NAME "avx"
#elif defined(__FMA4__)
#define LINEA_ISA isa_fma4
#define LINEA_ISA_NAME "fma4"
#elif defined(__SSE4_2__) && defined(__FMA__)
#define LINEA_ISA isa_fma3_sse4_2
#define LINEA_ISA_NAME "fma3+sse4.2"
#elif defined(__SSE4_2__)
#define LINEA_ISA isa_sse4_2
#define LINEA_ISA_NAME "sse4.2"
#elif defined(__SSE4_1__)
#define LINEA_ISA isa_sse4_1
#define LINEA_ISA_NAME "sse4.1"
#elif defined(__SSSE3__)
#define LINEA_ISA isa_ssse3
#define LINEA_ISA_NAME "ssse3"
#elif defined(__SSE3__)
#define LINEA_ISA isa_sse3
#define LINEA_ISA_NAME "sse3"
#elif defined(__SSE2__)
#define LINEA_ISA isa_sse2
#define LINEA_ISA_NAME "sse2"
#elif defined(__aarch64__) && defined(__ARM_NEON)
#define LINEA_ISA isa_arm64_neon
#define LINEA_ISA_NAME "arm64+neon"
#elif defined(__ARM_NEON)
#define LINEA_ISA isa_arm32_neon
#define LINEA_ISA_NAME "arm32+neon"
#else
#define LINEA_ISA isa_scalar
#define LINEA_ISA_NAME "scalar"
#endif

// GCC 12 warns "'__Y' may be used uninitialized" inside its own AVX-512 intrinsics (_mm512_undefined_*; GCC bug
// 105593, fixed in GCC 13) wherever xsimd or Eigen inline them into a caller, so a user's -Wall build of linea's
// SIMD code would print hundreds of them. The SIMD headers silence exactly these two warnings, for their own code.
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__) && __GNUC__ == 12
#define LINEA_SIMD_WARNINGS_BEGIN \
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"") \
      _Pragma("GCC diagnostic ignored \"-Wuninitialized\"")
#define LINEA_SIMD_WARNINGS_END _Pragma("GCC diagnostic pop")
#else
#define LINEA_SIMD_WARNINGS_BEGIN
#define LINEA_SIMD_WARNINGS_END
#endif
