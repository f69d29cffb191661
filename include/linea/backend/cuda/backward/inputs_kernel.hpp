// linea/backend/cuda/backward/inputs_kernel.hpp — phase 0: the caller's inputs (any type, any strides) as the
// float32 values the rule uses, contiguous (work.hpp): q, k after the in-kernel L2 norm; v; d_o; the log decay
// and the update's gates through the policies' hooks (in-kernel gates and β activation included).
// One CTA per token; one warp per key head for q, k (the L2 norm is a warp reduction).
#pragma once
#include "../source.hpp"
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
  const source<T> src{a};

  for (index_t h = warp; h < w.H; h += threads / 32) {  // q, k of key head h, normalised when asked
    float sq = 0, sk = 0;
    for (index_t i = lane; i < w.K; i += 32) {
      const float x = to_float(a.q(bt, t, h, i)), y = to_float(a.k(bt, t, h, i));
      sq += x * x, sk += y * y;
    }
    const float iq = a.l2q ? rsqrtf(warp_sum(sq) + 1e-6f) : 1.f, ik = a.l2k ? rsqrtf(warp_sum(sk) + 1e-6f) : 1.f;
    for (index_t i = lane; i < w.K; i += 32) {
      const std::size_t at = std::size_t((token * w.H + h) * w.K + i);
      w.q[at] = to_float(a.q(bt, t, h, i)) * iq;
      w.k[at] = to_float(a.k(bt, t, h, i)) * ik;
    }
  }
  for (index_t e = tid; e < w.HV * w.V; e += threads) {
    const index_t hv = e / w.V, j = e % w.V;
    w.v[token * w.HV * w.V + e] = to_float(a.v(bt, t, hv, j));
    w.d_o[token * w.HV * w.V + e] = to_float(d_o(bt, t, hv, j));
  }
  using U = typename Rule::update;
  if constexpr (Rule::decay::kind == decay_kind::per_key) {
    for (index_t e = tid; e < w.HV * w.K; e += threads) {
      const index_t hv = e / w.K, i = e % w.K;
      const token_scalars s = src.template scalars<Rule::decay::inputs>(bt, t, hv);
      w.log_alpha_k[token * w.HV * w.K + e] = src.template log_alpha<Rule>(s, bt, t, hv, i);
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
