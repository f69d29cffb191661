// bench/cuda/io_ab_v0.hpp — main 861c7ef's phase 0 and phase 5 kernels (inputs_kernel.hpp, input_adjoint_kernel.hpp), in
// namespace v0 for io_ab.cu's A/B. Generated: git show 861c7ef:<file>, the includes and warp_sum / sums_kernel / input_grads dropped.
#pragma once
#include <linea/cuda.hpp>
namespace linea::cuda_detail::bwd::v0 {
using bwd::warp_sum;
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
template <class T>
__device__ void qk_adjoint(const view<const T, 4>& raw, bool l2, const float* dhat, index_t G, index_t K, index_t bt,
                           index_t t, index_t h, const view<T, 4>& out) {
  const int lane = threadIdx.x & 31;
  const auto sum_group = [&](index_t i) {  // Σ over the value heads of key head h
    float x = 0;
    for (index_t hv = h * G; hv < (h + 1) * G; ++hv) x += dhat[hv * K + i];
    return x;
  };
  float inv = 1.f, dot = 0.f;
  if (l2) {  // n = sqrt(Σ x² + 1e-6), x̂·dx̂
    float ss = 0, xd = 0;
    for (index_t i = lane; i < K; i += 32) {
      const float x = to_float(raw(bt, t, h, i));
      ss += x * x, xd += x * sum_group(i);
    }
    inv = rsqrtf(warp_sum(ss) + 1e-6f);
    dot = warp_sum(xd) * inv;
  }
  for (index_t i = lane; i < K; i += 32) {
    const float d = sum_group(i);
    out(bt, t, h, i) = from_float<T>(l2 ? (d - to_float(raw(bt, t, h, i)) * inv * dot) * inv : d);
  }
}

template <class T>
__global__ void __launch_bounds__(threads) input_adjoint_kernel(const kernel_args<T> a, const work w,
                                                                const input_grads<T> o) {
  const index_t token = blockIdx.x, bt = token / w.T, t = token % w.T;
  const int tid = threadIdx.x, warp = tid >> 5;
  for (index_t h = warp; h < w.H; h += threads / 32) {
    if (o.dq.ptr) qk_adjoint(a.q, a.l2q, w.dq + token * w.HV * w.K, w.G, w.K, bt, t, h, o.dq);
    if (o.dk.ptr) qk_adjoint(a.k, a.l2k, w.dk + token * w.HV * w.K, w.G, w.K, bt, t, h, o.dk);
  }
  for (index_t hv = tid; hv < w.HV; hv += threads) {
    const std::size_t at = std::size_t(token * w.HV + hv);
    if (a.g.ptr) {  // the rule's scalar log decay: given directly, or from a logit by the in-kernel gate
      const float d = w.dlog_alpha[at];
      float dx = d;
      if (a.gate_active) {
        const float bias = a.dt_bias.empty() ? 0.f : a.dt_bias(hv);
        const auto pd = reference::activate_gate_partials(to_float(a.g(bt, t, hv)), a.A_log(hv), bias,
                                                          a.has_lower_bound, a.lower_bound);
        dx = d * pd.dx;
        if (o.dA_log.ptr) atomicAdd(o.sum_A_log + hv, double(d) * double(pd.dA_log));
        if (o.ddt_bias.ptr) atomicAdd(o.sum_dt_bias + hv, double(d) * double(pd.ddt_bias));
      }
      if (o.dg.ptr) o.dg(bt, t, hv) = from_float<T>(dx);
    }
    if (o.dbeta.ptr) {  // (β's activation: the update's gates are e = w = β)
      const float x = to_float(a.beta(bt, t, hv));
      o.dbeta(bt, t, hv) = from_float<T>(w.derase[at] * reference::beta_activation_derivative(x, static_cast<beta_activation>(a.beta_act)));
    }
  }
  if (a.gk.ptr)  // the rule's per-key log decay (dt_bias per (hv, i): index hv·K + i)
    for (index_t e = tid; e < w.HV * w.K; e += threads) {
      const index_t hv = e / w.K, i = e % w.K;
      const float d = w.dlog_alpha_k[token * w.HV * w.K + e];
      float dx = d;
      if (a.gate_active) {
        const float bias = a.dt_bias.empty() ? 0.f : a.dt_bias(e);
        const auto pd = reference::activate_gate_partials(to_float(a.gk(bt, t, hv, i)), a.A_log(hv), bias,
                                                          a.has_lower_bound, a.lower_bound);
        dx = d * pd.dx;
        if (o.dA_log.ptr) atomicAdd(o.sum_A_log + hv, double(d) * double(pd.dA_log));
        if (o.ddt_bias.ptr) atomicAdd(o.sum_dt_bias + e, double(d) * double(pd.ddt_bias));
      }
      if (o.dgk.ptr) o.dgk(bt, t, hv, i) = from_float<T>(dx);
    }
}
}  // namespace linea::cuda_detail::bwd::v0
