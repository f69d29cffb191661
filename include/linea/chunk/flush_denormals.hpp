// linea/chunk/flush_denormals.hpp — a scoped guard that flushes subnormal floats to zero on the calling thread.
//
// Decay factors exp(G_r − G_s) of long or strongly decaying chunks fall below the smallest normal number
// (1.2e-38 in float32, e.g. 128 tokens at a log decay of −0.8), and x86 cores take a slow microcode path for every
// operation on a subnormal: a chunk of 128 runs several times slower than one of 64. The chunkwise kernel sets
// FTZ/DAZ for its own duration and restores the caller's mode when it returns or throws; what it changes are values
// below 1.2e-38 (2.2e-308 in float64), far under every tolerance. A no-op where the ISA has no such mode here.
#pragma once

#include "../backend/isa.hpp"
#if defined(__SSE__) || defined(_M_X64)
#include <xmmintrin.h>
#define LINEA_HAS_MXCSR 1
#endif

namespace linea::chunk::inline LINEA_ISA {

class flush_denormals {
 public:
#if defined(LINEA_HAS_MXCSR)
  flush_denormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | 0x8040u); }  // FTZ (bit 15) | DAZ (bit 6)
  ~flush_denormals() { _mm_setcsr(saved_); }
#else
  flush_denormals() = default;
#endif
  flush_denormals(const flush_denormals&) = delete;
  flush_denormals& operator=(const flush_denormals&) = delete;

 private:
#if defined(LINEA_HAS_MXCSR)
  unsigned saved_;
#endif
};

}  // namespace linea::chunk
