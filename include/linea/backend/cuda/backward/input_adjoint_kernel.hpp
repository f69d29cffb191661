// linea/backend/cuda/backward/input_adjoint_kernel.hpp — phase 5: from the gradients of the values the rule used
// to the gradients of the raw stored inputs (docs/math/backward.md §3), one CTA per token:
//   dq, dk: the value heads of a group added into their key head, then the in-kernel L2 norm's adjoint
//           dx = (dx̂ − x̂ (x̂·dx̂)) / n, in a form that does not cancel (one warp per key head);
//   dg, dgk: d log α through the in-kernel gate (dA_log, ddt_bias added over tokens with float64 atomics into the
//           workspace, then stored as float32 by sums_kernel: a sum over many tokens can cancel to a millionth of
//           Σ|terms| (issue #14: gated_delta, T = 6000, 1.4e6), where float32 atomics lost 14 % of ddt_bias);
//   dβ:     d(e = w = β) through β's activation.
// The formulas are the reference's (reference/input_adjoints.hpp), called on the device.
#pragma once
#include "../../../reference/input_adjoints.hpp"
#include "inputs_kernel.hpp"

namespace linea::cuda_detail::bwd {

template <class T>
struct input_grads {
  view<T, 4> dq, dk;
  view<T, 3> dg, dbeta;
  view<float, 1> dA_log, ddt_bias;
  view<T, 4> dgk;
  double *sum_A_log = nullptr, *sum_dt_bias = nullptr;  // the workspace's float64 accumulators (zeroed first)
  // A dg summed over positions (g_gamma's: stride 0 over B and / or T; summed_dg in backward.hpp): dg is then empty,
  // and each token adds its d log α into sum_dg[(b'·T' + t')·HV + hv] (b' = bt or 0, t' = t or 0, T' = T or 1 by
  // which of the two axes the caller's view keeps), stored by summed_store_kernel afterwards.
  double* sum_dg = nullptr;
  bool dg_keeps_b = false, dg_keeps_t = false;
};

// dA_log, ddt_bias from their float64 accumulators (zeros without tokens, or without an in-kernel gate: sum null).
template <class = void>  // a template: one definition across the TUs that include it
__global__ void sums_kernel(const view<float, 1> x, const double* sum) {
  for (index_t i = blockIdx.x * blockDim.x + threadIdx.x; i < x.extent(0); i += gridDim.x * blockDim.x)
    x(i) = sum ? float(sum[i]) : 0.f;
}

// A summed dg from its float64 accumulators: x is the caller's view with its stride-0 axes cut to one position
// (summed_dg_targets), sum its elements in x's row-major order.
template <class T>
__global__ void summed_store_kernel(const view<T, 3> x, const double* sum) {
  const index_t n = x.extent(0) * x.extent(1) * x.extent(2);
  for (index_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const index_t hv = i % x.extent(2), t = i / x.extent(2) % x.extent(1), b = i / (x.extent(1) * x.extent(2));
    x(b, t, hv) = from_float<T>(float(sum[i]));
  }
}

// One warp, one key head h of q or k (row_quads.hpp: four elements a lane): its dx̂ summed over the value heads of
// the group, and the raw row when the L2 norm's adjoint needs it. Loading (gather) and storing (store) are apart so
// that a warp has q's and k's loads in flight together.
struct adjoint_row {
  float d[4] = {0, 0, 0, 0}, x[4];
};
template <class T>
__device__ __forceinline__ void gather_adjoint(const view<const T, 4>& raw, bool l2, const float* dhat, index_t G,
                                               index_t K, index_t bt, index_t t, index_t h, adjoint_row& r) {
  const int lane = threadIdx.x & 31;
  for (index_t hv = h * G; hv < (h + 1) * G; ++hv) {
    float x[4];
    load_quad(dhat + hv * K, 1, K, lane, x);
#pragma unroll
    for (int j = 0; j < 4; ++j) r.d[j] += x[j];
  }
  if (l2) load_quad(raw.row(bt, t, h), raw.stride(3), K, lane, r.x);
}
// The in-kernel L2 norm's adjoint dx = (dx̂ − x̂ (x̂·dx̂)) / ν, ν = sqrt(P + ε), in the reference's form that does not
// cancel (reference/input_adjoints.hpp, docs/math/backward.md §3):
//   dx_i = (ε dx̂_i + (P − x_i²) dx̂_i − x_i (D − x_i dx̂_i)) / ν³,  P = Σ x², D = Σ x dx̂,
// with P, D and the bracket in double (x_i², x_i dx̂_i exact). The first form lost 5 % of dq, dk in float32 where x is
// one channel or nearly (K = 1: dx = ε dx̂ / ν³, a millionth of its terms). Without the norm: dx̂.
__device__ __forceinline__ double warp_sum(double x) {
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}
template <class T>
__device__ __forceinline__ void store_adjoint(adjoint_row& r, bool l2, index_t K, index_t bt, index_t t, index_t h,
                                              const view<T, 4>& out) {
  if (l2) {
    double P = 0, D = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) P += double(r.x[j]) * double(r.x[j]), D += double(r.x[j]) * double(r.d[j]);
    P = warp_sum(P), D = warp_sum(D);
    constexpr double eps = 1e-6;
    const double nu2 = P + eps, inv_nu3 = 1.0 / (nu2 * sqrt(nu2));
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const double x = r.x[j], d = r.d[j];
      r.d[j] = float((eps * d + (P - x * x) * d - x * (D - x * d)) * inv_nu3);
    }
  }
  store_quad(out.row(bt, t, h), out.stride(3), K, threadIdx.x & 31, r.d);
}

template <class T>
__global__ void __launch_bounds__(threads) input_adjoint_kernel(const kernel_args<T> a, const work w,
                                                                const input_grads<T> o) {
  const index_t token = blockIdx.x, bt = token / w.T, t = token % w.T;
  const int tid = threadIdx.x, warp = tid >> 5;
  for (index_t h = warp; h < w.H; h += threads / 32) {
    adjoint_row rq, rk;
    if (o.dq.ptr) gather_adjoint(a.q, a.l2q, w.dq + token * w.HV * w.K, w.G, w.K, bt, t, h, rq);
    if (o.dk.ptr) gather_adjoint(a.k, a.l2k, w.dk + token * w.HV * w.K, w.G, w.K, bt, t, h, rk);
    if (o.dq.ptr) store_adjoint(rq, a.l2q, w.K, bt, t, h, o.dq);
    if (o.dk.ptr) store_adjoint(rk, a.l2k, w.K, bt, t, h, o.dk);
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
      if (o.sum_dg)
        atomicAdd(o.sum_dg + ((o.dg_keeps_b ? bt : 0) * (o.dg_keeps_t ? w.T : 1) + (o.dg_keeps_t ? t : 0)) * w.HV + hv,
                  double(dx));
      else if (o.dg.ptr)
        o.dg(bt, t, hv) = from_float<T>(dx);
    }
    if (o.dbeta.ptr) {  // (β's activation: the update's gates are e = w = β)
      const float x = to_float(a.beta(bt, t, hv));
      o.dbeta(bt, t, hv) = from_float<T>(w.derase[at] * reference::beta_activation_derivative(x, static_cast<beta_activation>(a.beta_act)));
    }
  }
  if (a.gk.ptr)  // the rule's per-key log decay (dt_bias per (hv, i): index hv·K + i); one warp a value head
    for (index_t hv = warp; hv < w.HV; hv += threads / 32)
      for (index_t i = threadIdx.x & 31; i < w.K; i += 32) {
        const index_t e = hv * w.K + i;
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

}  // namespace linea::cuda_detail::bwd
