// linea/backend/cuda/decay_product_kernel.hpp — pass M of the segmented forward (segments/plan.hpp) for the rules
// whose transition is a decay alone (segments::diagonal_transition: simple_gla, gla, any additive rule with a scalar
// or per-key decay):
//
//   M[n][hv][i] = Π_{t ∈ sequence n} α_t[i] = exp(Σ_t log α_t[i])      (a scalar decay: the same for every i)
//
// written as [N, HV, K, 1], the layout the combine reads (state_dims::KM = 1). Before, pass M ran the rule's chunk
// kernel with V = 1 and v = 0 from S_0 = 1 — a serial walk over each piece for a product of gates: 1.35 ms of gla's
// 3.67 ms at 1×32768, and ~2.7 times simple_gla's pass A per step (bench/cuda/README.md, fwd7). This kernel only
// reads the gate inputs (g: 2 bytes a token and head; gk: 2·K).
//
// log α_t[i] is source::log_alpha<Rule> — the decay's hook as every chunk kernel calls it, with the in-kernel gate
// (A_log, dt_bias, lower bound), g_gamma's stride 0 and any strides. Precision: each log α in float32, as the chunk
// kernels compute it; the sums in float64 (a thread's share of up to a piece's tokens, then a fixed-order sum over the
// CTA: deterministic, and no loss of a long run of small decays to rounding), exp in float64, M rounded to float32.
// No clamp (the chunk kernels clamp log₂ α at −64 only to keep their in-chunk differences finite): a gate of exactly 0
// gives M = 0, as the reference; NaN propagates.
#pragma once
#include "source.hpp"

namespace linea::cuda_detail {

// One CTA per (sequence, value head, 32 key lanes): 32 key lanes × 32 token rows for a per-key decay (a warp reads
// 32 neighbouring keys of one token); 1024 token lanes for a scalar one (then one CTA per sequence and head).
struct decay_product_shape {
  static constexpr int lanes = 32, rows = 32, threads = lanes * rows;
};

template <class Rule>
inline constexpr bool decay_product_rule =
    Rule::decay::kind == decay_kind::scalar || Rule::decay::kind == decay_kind::per_key;

template <class Rule>
unsigned decay_product_key_blocks(index_t K) {
  return Rule::decay::kind == decay_kind::per_key ? static_cast<unsigned>((K + decay_product_shape::lanes - 1) / decay_product_shape::lanes) : 1u;
}

template <class Rule, class T>
__global__ void __launch_bounds__(decay_product_shape::threads) decay_product_kernel(const kernel_args<T> a, const view<float, 4> M) {
  // Preconditions (device_ops::decay_transitions): grid (N, HV, decay_product_key_blocks<Rule>(K)), threads as the
  // shape says; M is [N, HV, K, 1]; a's sequences are M's rows (cu_seqlens, or batch rows).
  using sh = decay_product_shape;
  using D = typename Rule::decay;
  static_assert(decay_product_rule<Rule>, "decay_product_kernel: a scalar or per-key decay");
  constexpr bool per_key = D::kind == decay_kind::per_key;
  const source<T> src{a};
  const seq_range seq = sequence_of(a, blockIdx.x);
  const index_t n = blockIdx.x, hv = blockIdx.y;
  const int lane = static_cast<int>(threadIdx.x) % sh::lanes, row = static_cast<int>(threadIdx.x) / sh::lanes;
  __shared__ double part[sh::rows][sh::lanes + 1];

  // 1. this thread's share of Σ log α: key i over tokens row, row + 32, ... (per key); tokens tid, tid + 1024, ...
  const index_t i = per_key ? static_cast<index_t>(blockIdx.z) * sh::lanes + lane : 0;
  double sum = 0;
  if (i < a.K) {
    const index_t first = per_key ? row : threadIdx.x, stride = per_key ? sh::rows : sh::threads;
#pragma unroll 4
    for (index_t t = seq.t0 + first; t < seq.t1; t += stride)
      sum += src.template log_alpha<Rule>(src.template scalars<D::inputs>(seq.bt, t, hv), seq.bt, t, hv, i);
  }

  // 2. the CTA's sums in a fixed order: per key lane over the 32 rows (then, for a scalar decay, over the lanes)
  part[row][lane] = sum;
  __syncthreads();
  if (row != 0) return;
  double total = 0;
  for (int r = 0; r < sh::rows; ++r) total += part[r][lane];
  if constexpr (!per_key)
    for (int o = sh::lanes / 2; o > 0; o /= 2) total += __shfl_xor_sync(0xffffffffu, total, o);  // every lane the same

  // 3. M's entries
  const float m = static_cast<float>(exp(total));
  if constexpr (per_key) {
    if (i < a.K) M(n, hv, i, 0) = m;
  } else {
    for (index_t k = lane; k < a.K; k += sh::lanes) M(n, hv, k, 0) = m;
  }
}

}  // namespace linea::cuda_detail
