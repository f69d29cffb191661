// linea/backend/cuda/backward/inputs_kernel.hpp — phase 0: the caller's inputs (any type, any strides) as the
// float32 values the rule uses, contiguous (work.hpp): q, k after the in-kernel L2 norm; v; d_o; the log decay
// and the update's gates through the policies' hooks (in-kernel gates and β activation included).
// One CTA per token; one warp a row (row_quads.hpp: each row read once, four elements a lane), so the L2 norm
// of q, k is a warp reduction over values already in registers.
#pragma once
#include "../source.hpp"
#include "row_quads.hpp"
#include "work.hpp"

namespace linea::cuda_detail::bwd {

__device__ __forceinline__ float warp_sum(float x) {
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

template <class Rule, class T>
__global__ void __launch_bounds__(threads) inputs_kernel(const kernel_args<T> a, const view<const T, 4> d_o, const work w) {
  const index_t token = blockIdx.x, bt = token / w.T, t = token % w.T;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  constexpr int warps = threads / 32;
  const source<T> src{a};

  for (index_t h = warp; h < w.H; h += warps) {  // q, k of key head h (one warp a row), normalised when asked
    float x[4], y[4];
    load_quad(a.q.row(bt, t, h), a.q.stride(3), w.K, lane, x);
    load_quad(a.k.row(bt, t, h), a.k.stride(3), w.K, lane, y);
    const float iq = a.l2q ? rsqrtf(warp_sum(quad_dot(x, x)) + 1e-6f) : 1.f;
    const float ik = a.l2k ? rsqrtf(warp_sum(quad_dot(y, y)) + 1e-6f) : 1.f;
    const std::size_t at = std::size_t((token * w.H + h) * w.K);
    store_quad(w.q + at, 1, w.K, lane, x, iq);
    store_quad(w.k + at, 1, w.K, lane, y, ik);
  }
  for (index_t hv = warp; hv < w.HV; hv += warps) {  // v, d_o of value head hv
    float x[4], y[4];
    load_quad(a.v.row(bt, t, hv), a.v.stride(3), w.V, lane, x);
    load_quad(d_o.row(bt, t, hv), d_o.stride(3), w.V, lane, y);
    const std::size_t at = std::size_t((token * w.HV + hv) * w.V);
    store_quad(w.v + at, 1, w.V, lane, x);
    store_quad(w.d_o + at, 1, w.V, lane, y);
  }
  using U = typename Rule::update;
  if constexpr (Rule::decay::kind == decay_kind::per_key) {
    for (index_t hv = warp; hv < w.HV; hv += warps) {
      const token_scalars s = src.template scalars<Rule::decay::inputs>(bt, t, hv);
      float* out = w.log_alpha_k + std::size_t((token * w.HV + hv) * w.K);
      for (index_t i = lane; i < w.K; i += 32) out[i] = src.template log_alpha<Rule>(s, bt, t, hv, i);
    }
  }
  for (index_t hv = tid; hv < w.HV; hv += threads) {
    const std::size_t at = std::size_t(token * w.HV + hv);
    if constexpr (Rule::decay::kind == decay_kind::scalar) w.log_alpha[at] = src.template token_log_alpha<Rule>(bt, t, hv);
    else w.log_alpha[at] = 0.f;
    if constexpr (U::kind == update_kind::erase) {
      const token_scalars s = src.template scalars<U::inputs>(bt, t, hv);
      w.erase[at] = src.template erase_gate<Rule>(s, bt, t, hv, 0);
      w.write[at] = src.template write_gate<Rule>(s, bt, t, hv, 0);
    }
  }
}

}  // namespace linea::cuda_detail::bwd
