// linea/backend/cuda/source.hpp — one token's inputs as the kernels read them, in float: the same
// conversions as core/load.hpp (in-kernel gates, beta activation), element by element, from any strides.
//
// In the stats pass (the CCQ read's key statistics) the "rule" is additive with a scalar decay c_t: values are
// the keys, and the erase / write gates are 0 / 1.
#pragma once
#include "params.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "../../core/gates.hpp"
#include "../../core/storage.hpp"
#include "../../rules/write_rule.hpp"

namespace linea::cuda_detail {

template <class T>
__device__ __forceinline__ float to_float(T x) {
  return static_cast<float>(x);
}
template <class T>
__device__ __forceinline__ T from_float(float x) {
  return static_cast<T>(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <>
__device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half_rn(x);
}

template <>
__device__ __forceinline__ bf16 from_float<bf16>(float x) {
  return bf16::from_bits(__bfloat16_as_ushort(__float2bfloat16_rn(x)));
}
template <>
__device__ __forceinline__ fp16 from_float<fp16>(float x) {
  return fp16::from_bits(__half_as_ushort(__float2half_rn(x)));
}

// What a pass computes, fixed at compile time.
template <class Rule, pass P>
struct pass_traits {
  static constexpr bool stats = P == pass::stats;
  static constexpr bool per_key = !stats && Rule::decay::key_gate;
  static constexpr bool scalar = stats || Rule::decay::scalar_gate;  // stats: c_t (0 when uniform)
  static constexpr bool erases = !stats && Rule::update::erases;
  static constexpr bool channel_gates = !stats && Rule::update::uses_channel_gates;
  static constexpr bool uses_beta = !stats && Rule::update::uses_beta;
  // The stats pass's c_t defaults to the rule's own log decay: its scalar gate g, or the mean of its per-key gk.
  static constexpr bool stats_rule_g = stats && Rule::decay::scalar_gate;
  static constexpr bool stats_mean_gk = stats && Rule::decay::key_gate;
};

template <class T>
struct source {
  const kernel_args<T>& a;

  __device__ float q(index_t bt, index_t t, index_t hv, index_t i) const {
    if (a.q_tilde_in.ptr) return a.q_tilde_in(bt, t, hv, i);
    return to_float(a.q(bt, t, hv / a.G, i));
  }
  __device__ bool q_normalised() const { return a.l2q && !a.q_tilde_in.ptr; }
  __device__ float k(index_t bt, index_t t, index_t hv, index_t i) const { return to_float(a.k(bt, t, hv / a.G, i)); }
  __device__ float v(index_t bt, index_t t, index_t hv, index_t j) const { return to_float(a.v(bt, t, hv, j)); }

  // Rule's scalar log decay g_t (after the in-kernel gate when A_log is given).
  __device__ float g(index_t bt, index_t t, index_t hv) const {
    float x = to_float(a.g(bt, t, hv));
    if (a.gate_active) {
      const float bias = a.dt_bias.ptr ? a.dt_bias(hv) : 0.f;
      x = activate_gate(x, a.A_log(hv), bias, a.has_lower_bound, a.lower_bound);
    }
    return x;
  }
  // Rule's per-key log decay gk_t[i].
  __device__ float gk(index_t bt, index_t t, index_t hv, index_t i) const {
    float x = to_float(a.gk(bt, t, hv, i));
    if (a.gate_active) {
      const float bias = a.dt_bias.ptr ? a.dt_bias(hv * a.K + i) : 0.f;
      x = activate_gate(x, a.A_log(hv), bias, a.has_lower_bound, a.lower_bound);
    }
    return x;
  }
  __device__ float beta(index_t bt, index_t t, index_t hv) const {
    return activate_beta(to_float(a.beta(bt, t, hv)), static_cast<beta_activation>(a.beta_act));
  }
  __device__ float b(index_t bt, index_t t, index_t hv, index_t i) const { return to_float(a.b(bt, t, hv, i)); }
  __device__ float w(index_t bt, index_t t, index_t hv, index_t j) const { return to_float(a.w(bt, t, hv, j)); }

  // Stats pass: c_t, given the rule's own log decay (g, or the mean of gk) for when the caller gave none.
  __device__ float stats_log_decay(index_t bt, index_t t, index_t hv, float rule_log_decay) const {
    if (!a.ccq_decays) return 0.f;
    if (a.ccq_log_decay.ptr) return to_float(a.ccq_log_decay(bt, t, hv));
    return rule_log_decay;
  }
};

// Sequence n of a launch: tokens [t0, t1) of batch row bt, state row `row` (−1: skip, decode step only).
struct seq_range {
  index_t bt, t0, t1, row;
};
template <class T>
__device__ seq_range sequence_of(const kernel_args<T>& a, index_t n) {
  if (a.state_indices) return {n, 0, 1, a.state_indices[n]};
  if (a.cu_seqlens) return {0, a.cu_seqlens[n], a.cu_seqlens[n + 1], n};
  return {n, 0, a.T, n};
}

}  // namespace linea::cuda_detail
