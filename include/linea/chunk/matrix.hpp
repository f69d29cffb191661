// linea/chunk/matrix.hpp — the small dense matrices of the chunkwise form (one chunk of one value head).
//
// A chunk is gathered row by row (row r = token t0 + r) into these; whole tensors are never copied.
// Row-major, because every chunk matrix is built and read one token row at a time.
#pragma once

#include "../backend/isa.hpp"
#include "../backend/cpu/third_party.hpp"  // Eigen

namespace linea::chunk::inline LINEA_ISA {

template <class R>
using mat = Eigen::Matrix<R, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;  // L×K, L×V, L×L, K×V

template <class R>
using vec = Eigen::Matrix<R, Eigen::Dynamic, 1>;  // one value per row of a chunk (length L)

// In-chunk cumulative log decays are summed in double whatever R is: a cumulative sum of up to 128 gates of
// −20 reaches −2560, where a float32 ulp is 2.4e-4, and exp() turns that absolute error into a relative one.
using log_real = double;

}  // namespace linea::chunk
