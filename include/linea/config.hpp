// linea/config.hpp — version, index type and the one host/device macro.
#pragma once
#include <cstdint>

#define LINEA_VERSION_MAJOR 0
#define LINEA_VERSION_MINOR 1
#define LINEA_VERSION_PATCH 0

// Functions that hold per-token math are written once and compiled for both host and device.
#if defined(__CUDACC__)
#define LINEA_HD __host__ __device__
#else
#define LINEA_HD
#endif

// Forces inlining where a call per token would cost more than the work it does (the token loader).
#if defined(__GNUC__) || defined(__clang__)
#define LINEA_INLINE inline __attribute__((always_inline))
#else
#define LINEA_INLINE inline
#endif

namespace linea {
using index_t = std::int64_t;  // every extent, stride and position
}  // namespace linea
