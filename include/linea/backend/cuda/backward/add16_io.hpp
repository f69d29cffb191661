// linea/backend/cuda/backward/add16_io.hpp — where the additive fast path's kernels (add16_phases.hpp) read q, k, v,
// dO, log α and write dq, dk, d log α: either phase 0's / phase 5's float32 workspace (work.hpp: X = float), or —
// the direct path (issue #14) — the caller's own 16-bit tensors (X = T), so that phases 0 and 5 are not launched.
// The direct path needs nothing of phases 0 and 5: one value head a key head (G = 1: no group sums), no L2 norm, no
// in-kernel gate (log α = g as given, fla's convention), no `normalize`, and unit element strides (rows read four
// elements at a time); add16_direct_ok says when. The scale is applied by the kernels in both forms.
// Every tensor is [B, T, heads, D] with unit element stride: row (bt, t, head) at p + bt·sb + t·st + head·sh
// (the workspace's are [tokens, heads, D] with token = bt·T + t: sb = T·st).
#pragma once
#include <cstdint>
#include <type_traits>

#include "../../../core/arguments.hpp"
#include "../../../core/gradients.hpp"
#include "../source.hpp"
#include "work.hpp"

namespace linea::cuda_detail::bwd {

template <class X>
struct add16_rows {
  using element = std::remove_const_t<X>;
  X* p = nullptr;
  index_t sb = 0, st = 0, sh = 0;

  __host__ __device__ X* row(index_t bt, index_t t, index_t head) const { return p + bt * sb + t * st + head * sh; }
};

template <class X>
struct add16_io {
  add16_rows<const X> q, k, v, d_o;  // q, k by key head h = hv / G; v, dO by value head
  add16_rows<const X> log_alpha;     // [.., HV, 1] (decays only)
  add16_rows<X> dq, dk;              // by value head (the workspace's are per value head; direct: G = 1); p null: skipped
  add16_rows<X> dlog_alpha;          // [.., HV, 1]; p null: skipped
};

// Phase 0's inputs and phase 5's inputs in the workspace (work.hpp's layouts).
inline add16_io<float> add16_workspace_io(const work& w) {
  const auto rows = [&](auto* p, index_t heads, index_t D) {
    using X = std::remove_pointer_t<decltype(p)>;
    return add16_rows<X>{p, w.T * heads * D, heads * D, D};
  };
  add16_io<float> io;
  io.q = rows(static_cast<const float*>(w.q), w.H, w.K), io.k = rows(static_cast<const float*>(w.k), w.H, w.K);
  io.v = rows(static_cast<const float*>(w.v), w.HV, w.V), io.d_o = rows(static_cast<const float*>(w.d_o), w.HV, w.V);
  io.log_alpha = rows(static_cast<const float*>(w.log_alpha), w.HV, 1);
  io.dq = rows(w.dq, w.HV, w.K), io.dk = rows(w.dk, w.HV, w.K), io.dlog_alpha = rows(w.dlog_alpha, w.HV, 1);
  return io;
}

template <class X, int R>
add16_rows<X> add16_rows_of(const view<X, R>& x) {
  static_assert(R == 3 || R == 4);
  return {x.ptr, x.stride(0), x.stride(1), x.stride(2)};
}

// True when the caller's tensors can be read and written directly (the preconditions above). Host only.
template <bool Decays, class T>
bool add16_direct_ok(const arguments<T, float>& a, const gradients<T, float>& g, index_t group) {
  const auto unit = [](const auto& x) { return !x.ptr || x.extent(3) <= 1 || x.stride(3) == 1; };
  return group == 1 && !a.qk_l2norm && !a.gate.active() && !a.normalize && (!Decays || a.g.ptr) && unit(a.q) &&
         unit(a.k) && unit(a.v) && unit(g.d_o) && unit(g.dq) && unit(g.dk);
}

template <bool Decays, class T>
add16_io<T> add16_direct_io(const arguments<T, float>& a, const gradients<T, float>& g) {
  add16_io<T> io;
  io.q = add16_rows_of(a.q), io.k = add16_rows_of(a.k), io.v = add16_rows_of(a.v), io.d_o = add16_rows_of(g.d_o);
  io.dq = add16_rows_of(g.dq), io.dk = add16_rows_of(g.dk);
  if (Decays) io.log_alpha = add16_rows_of(a.g), io.dlog_alpha = add16_rows_of(g.dg);
  return io;
}

namespace add16_detail {

// Bits of a 16-bit value as float.
template <class X>
__device__ __forceinline__ float half_bits_to_float(std::uint32_t b) {
  if constexpr (std::is_same_v<X, fp16>) return __half2float(__ushort_as_half(static_cast<unsigned short>(b)));
  else return __uint_as_float(b << 16);
}
template <class X>
__device__ __forceinline__ std::uint32_t float_to_half_bits(float x) {
  return half_bits(from_float<X>(x));
}

// out[j], out[j + 1] = a, b as X, the columns < n only; one 4- or 8-byte store where both are in and aligned.
template <class X>
__device__ __forceinline__ void store_pair(X* out, int j, int n, float a, float b) {
  X* p = out + j;
  if (j + 1 < n && reinterpret_cast<std::uintptr_t>(p) % (2 * sizeof(X)) == 0) {
    if constexpr (sizeof(X) == 4)
      *reinterpret_cast<float2*>(p) = make_float2(a, b);
    else
      *reinterpret_cast<std::uint32_t*>(p) = float_to_half_bits<X>(a) | (float_to_half_bits<X>(b) << 16);
    return;
  }
  if (j < n) p[0] = from_float<X>(a);
  if (j + 1 < n) p[1] = from_float<X>(b);
}

}  // namespace add16_detail
}  // namespace linea::cuda_detail::bwd
