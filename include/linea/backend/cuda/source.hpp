// linea/backend/cuda/source.hpp — one token's inputs as the kernels read them, in float: the same
// conversions as core/load.hpp (in-kernel gates, beta activation), element by element, from any strides.
//
// In the stats pass (the CCQ read's key statistics) the "rule" is additive with a scalar decay c_t: values are
// the keys, and the erase / write gates are 0 / 1.
#pragma once
#include "params.hpp"

#include <cstdint>
#include <cstring>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "../../core/epilogue.hpp"
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

// The 16 bits of a 16-bit value — linea's bf16 / fp16 or CUDA's __nv_bfloat16 / __half — and back. (memcpy: the
// types share one layout, and only linea's have a `bits` member.)
template <class T>
__device__ __forceinline__ std::uint16_t half_bits(T x) {
  static_assert(sizeof(T) == 2, "half_bits: a 16-bit type");
  std::uint16_t b;
  memcpy(&b, &x, sizeof b);
  return b;
}
template <class T>
__device__ __forceinline__ T half_from_bits(std::uint16_t b) {
  static_assert(sizeof(T) == 2, "half_from_bits: a 16-bit type");
  T x;
  memcpy(&x, &b, sizeof x);
  return x;
}

// What a pass computes, fixed at compile time from the rule's policy kinds (rules/policy.hpp). The values
// come from the policies' hooks: source::log_alpha, erase_gate, write_gate below.
template <class Rule, pass P>
struct pass_traits {
  using decay = typename Rule::decay;
  using update = typename Rule::update;
  static_assert(decay::kind == decay_kind::none || decay::kind == decay_kind::scalar ||
                    decay::kind == decay_kind::per_key,
                "linea: the CUDA backend has no kernel for this decay kind");
  static_assert(update::kind == update_kind::additive || update::kind == update_kind::erase,
                "linea: the CUDA backend has no kernel for this update kind");
  static constexpr bool stats = P == pass::stats;
  static constexpr bool per_key = !stats && decay::kind == decay_kind::per_key;
  static constexpr bool scalar = stats || decay::kind == decay_kind::scalar;  // stats: c_t (0 when uniform)
  static constexpr bool erases = !stats && update::kind == update_kind::erase;
  // The stats pass needs the mean of the rule's per-key decay when c_t defaults to it.
  static constexpr bool stats_mean_gk = stats && decay::kind == decay_kind::per_key;
  // The rule's own decay is one number per token (the stats pass defaults c_t to it).
  static constexpr bool rule_scalar = decay::kind == decay_kind::scalar;
  static constexpr bool stats_rule_g = stats && rule_scalar;
  // Which gate inputs a main pass reads (the stats pass reads none of them).
  static constexpr bool reads_g = !stats && reads(Rule::inputs, input::g);
  static constexpr bool reads_beta = !stats && reads(Rule::inputs, input::beta);
  static constexpr bool reads_b = !stats && reads(Rule::inputs, input::b);
  static constexpr bool reads_w = !stats && reads(Rule::inputs, input::w);
};

// The per-token scalar inputs of a rule (g, β), loaded once per token and shared by every lane.
struct token_scalars {
  float g = 0, beta = 0;
};
// One lane of a token as the policies' hooks see it: the token's scalars and this lane's element of each row.
using lane_token = token<float, lane_value<float>>;

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
    const float x = to_float(a.g(bt, t, hv));
    return a.gate_active ? gate_from_logit(x, a.A_log, a.dt_bias, a.has_lower_bound, a.lower_bound, hv, hv) : x;
  }
  // Rule's per-key log decay gk_t[i].
  __device__ float gk(index_t bt, index_t t, index_t hv, index_t i) const {
    const float x = to_float(a.gk(bt, t, hv, i));
    return a.gate_active ? gate_from_logit(x, a.A_log, a.dt_bias, a.has_lower_bound, a.lower_bound, hv, hv * a.K + i) : x;
  }
  __device__ float beta(index_t bt, index_t t, index_t hv) const {
    return activate_beta(to_float(a.beta(bt, t, hv)), static_cast<beta_activation>(a.beta_act));
  }
  __device__ float b(index_t bt, index_t t, index_t hv, index_t i) const { return to_float(a.b(bt, t, hv, i)); }
  __device__ float w(index_t bt, index_t t, index_t hv, index_t j) const { return to_float(a.w(bt, t, hv, j)); }

  // ---- the policies' hooks on one lane --------------------------------------------------------------
  // Each hook sees only the inputs its own policy names (Decay::inputs or Update::inputs), so a pass loads
  // nothing else (the stats pass reads the rule's decay, never its β or b).
  template <unsigned Inputs>
  __device__ token_scalars scalars(index_t bt, index_t t, index_t hv) const {
    token_scalars s;
    if constexpr (reads(Inputs, input::g)) s.g = g(bt, t, hv);
    if constexpr (reads(Inputs, input::beta)) s.beta = beta(bt, t, hv);
    return s;
  }
  // Key lane i of token t: the scalars and this lane's gk_i, b_i.
  template <unsigned Inputs>
  __device__ lane_token key_lane(const token_scalars& s, index_t bt, index_t t, index_t hv, index_t i) const {
    lane_token x;
    x.g = s.g, x.beta = s.beta;
    if constexpr (reads(Inputs, input::gk)) x.gk.value = gk(bt, t, hv, i);
    if constexpr (reads(Inputs, input::b)) x.b.value = b(bt, t, hv, i);
    return x;
  }
  // Value lane j of token t: the scalars and w_j.
  template <unsigned Inputs>
  __device__ lane_token value_lane(const token_scalars& s, index_t bt, index_t t, index_t hv, index_t j) const {
    lane_token x;
    x.g = s.g, x.beta = s.beta;
    if constexpr (reads(Inputs, input::w)) x.w.value = w(bt, t, hv, j);
    return x;
  }
  // log α of key lane i (the decay's hook); for a scalar decay any i gives the token's one value.
  template <class Rule>
  __device__ float log_alpha(const token_scalars& s, index_t bt, index_t t, index_t hv, index_t i) const {
    using D = typename Rule::decay;
    return D::log_alpha(key_lane<D::inputs>(s, bt, t, hv, i), i);
  }
  // b_i, the erase gate of key lane i, and w_j, the write gate of value lane j (the update's hooks).
  template <class Rule>
  __device__ float erase_gate(const token_scalars& s, index_t bt, index_t t, index_t hv, index_t i) const {
    using U = typename Rule::update;
    return U::erase_gate(key_lane<U::inputs>(s, bt, t, hv, i), i);
  }
  template <class Rule>
  __device__ float write_gate(const token_scalars& s, index_t bt, index_t t, index_t hv, index_t j) const {
    using U = typename Rule::update;
    return U::write_gate(value_lane<U::inputs>(s, bt, t, hv, j), j);
  }

  // The token's one log α (a decay of kind scalar) and one erase gate (an update whose gates are per token, such
  // as delta's β), each from its own policy's inputs.
  template <class Rule>
  __device__ float token_log_alpha(index_t bt, index_t t, index_t hv) const {
    return log_alpha<Rule>(scalars<Rule::decay::inputs>(bt, t, hv), bt, t, hv, 0);
  }
  template <class Rule>
  __device__ float token_erase_gate(index_t bt, index_t t, index_t hv) const {
    return erase_gate<Rule>(scalars<Rule::update::inputs>(bt, t, hv), bt, t, hv, 0);
  }

  // Stats pass: c_t, given the rule's own log decay (g, or the mean of gk) for when the caller gave none.
  __device__ float stats_log_decay(index_t bt, index_t t, index_t hv, float rule_log_decay) const {
    if (!a.ccq_decays) return 0.f;
    if (a.ccq_log_decay.ptr) return to_float(a.ccq_log_decay(bt, t, hv));
    return rule_log_decay;
  }
};

// Sequence n of a launch: tokens [t0, t1) of batch row bt, state row `row` (−1: skip, decode step only).
// Indices on the device are not checked on the host (cuda::launch): whatever their values, no kernel leaves the
// views — a state index outside [-1, N) skips its row, a sequence's bounds are clipped into [0, T].
struct seq_range {
  index_t bt, t0, t1, row;
};
template <class T>
__device__ seq_range sequence_of(const kernel_args<T>& a, index_t n) {
  if (a.state_indices) {
    const index_t row = a.state_indices[n];
    return {n, 0, 1, row >= -1 && row < a.N ? row : -1};
  }
  if (a.cu_seqlens || a.cu_seqlens32) {
    index_t t0 = a.cu_seqlens ? a.cu_seqlens[n] : a.cu_seqlens32[n];
    index_t t1 = a.cu_seqlens ? a.cu_seqlens[n + 1] : a.cu_seqlens32[n + 1];
    t0 = t0 < 0 ? 0 : t0 > a.T ? a.T : t0;
    t1 = t1 < t0 ? t0 : t1 > a.T ? a.T : t1;
    return {0, t0, t1, n};
  }
  return {n, 0, a.T, n};
}

}  // namespace linea::cuda_detail
