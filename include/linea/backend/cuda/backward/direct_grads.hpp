// linea/backend/cuda/backward/direct_grads.hpp — the caller's gradients written by phase 4 itself, in the input
// type, instead of phase 5 (input_adjoint_kernel.hpp) reading them back from the float32 workspace.
//
// Why (issue #14): phase 5 is a pass over every token (gated_delta bf16 8×4096: 0.6 ms; kda, with its per-key dgk:
// 0.9 ms) that, where no in-kernel option sits between, only converts dq̂, dk̂, d log α, de to the caller's type.
// `on` only there — one value head a key head (no group sums), no in-kernel L2 norm, gate or β activation, no
// normalize, the identity read (backward.hpp's direct_grads_ok) — and then phase 5 is not launched. The values are
// the same floats phase 5 would read, rounded once: the same bits (dg, dgk, dβ up to the order of the kernels'
// shared-memory atomics, which differs from run to run either way). Null views are skipped.
// Writers: chunk_grad16_kernel (scalar or no decay, erasing update, 16-bit inputs), per_key_grad_kernel (gla, kda).
#pragma once
#include <cstdint>

#include "../source.hpp"

namespace linea::cuda_detail::bwd {

template <class T>
struct direct_grads {
  view<T, 4> dq, dk;     // [B, T, H = HV, K]
  view<T, 3> dg, dbeta;  // [B, T, HV]
  view<T, 4> dgk;        // [B, T, HV, K]
  bool on = false;
};

// x(bt, t, h, dd), x(bt, t, h, dd + 1) = x0, x1 (the columns < K only): one 4-byte (16-bit T) or 8-byte store where
// the row is contiguous and the pair aligned, else element by element through the strides.
template <class T>
__device__ __forceinline__ void store_grad_pair(const view<T, 4>& x, index_t bt, index_t t, index_t h, int dd, int K,
                                                float x0, float x1) {
  T* p = x.row(bt, t, h) + dd * x.stride(3);
  if (x.stride(3) == 1 && dd + 1 < K && reinterpret_cast<std::uintptr_t>(p) % (2 * sizeof(T)) == 0) {
    if constexpr (sizeof(T) == 4) {
      *reinterpret_cast<float2*>(p) = make_float2(x0, x1);
    } else {
      const std::uint32_t lo = half_bits(from_float<T>(x0)), hi = half_bits(from_float<T>(x1));
      *reinterpret_cast<std::uint32_t*>(p) = lo | (hi << 16);
    }
    return;
  }
  p[0] = from_float<T>(x0);
  if (dd + 1 < K) p[x.stride(3)] = from_float<T>(x1);
}

// The CTA's L rows of K floats at src (row stride ld) into x(bt, t0 + r, h, ·), all threads of the CTA, a column
// pair a thread (consecutive threads, consecutive pairs: coalesced). The rows must be complete and visible to the
// CTA (after a __syncthreads).
template <class T>
__device__ __forceinline__ void store_grad_rows(const view<T, 4>& x, const float* src, index_t ld, index_t bt,
                                                index_t t0, index_t h, int L, int K) {
  if (!x.ptr) return;
  const int pairs = (K + 1) / 2;
  for (int e = threadIdx.x; e < L * pairs; e += blockDim.x) {
    const int r = e / pairs, dd = 2 * (e % pairs);
    const float* s = src + r * ld + dd;
    store_grad_pair(x, bt, t0 + r, h, dd, K, s[0], dd + 1 < K ? s[1] : 0.f);
  }
}

}  // namespace linea::cuda_detail::bwd
