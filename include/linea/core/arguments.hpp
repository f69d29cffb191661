// linea/core/arguments.hpp — the one arguments struct of every form, filled with designated initialisers.
//
//   linea::arguments<float> a{.q = q, .k = k, .v = v, .gk = gk, .beta = beta, .o = o};
//   linea::recurrent<linea::kda>(a);
//
// Shapes are SPEC.md §1 (fla's conventions, logical order b, t, h, d). A view left empty is "not given".
#pragma once
#include <cstdint>
#include <optional>
#include <span>

#include "numeric.hpp"
#include "seqlens.hpp"
#include "view.hpp"

namespace linea {

// How beta is given: as is, or as logits turned into σ(x) (or 2σ(x), allowing negative eigenvalues).
enum class beta_activation { none, sigmoid, two_sigmoid };

// In-kernel gates from raw logits (SPEC §1). When `A_log` is given, g / gk hold raw logits x and
//   g = −exp(A_log[hv]) · softplus(x + dt_bias)                 (no lower bound)
//   g = lower_bound · σ(exp(A_log[hv]) · (x + dt_bias))         (with a lower bound, KDA style)
// dt_bias is [HV] for scalar-decay rules and [HV·K] for per-key rules; it may be left empty (zero bias).
struct gate_activation {
  view<const float, 1> A_log = {};
  view<const float, 1> dt_bias = {};
  std::optional<float> lower_bound = {};
  bool active() const { return !A_log.empty(); }
};

// Inputs and outputs of the CCQ read (SPEC §3); ignored by the identity read.
template <class T, class S>
struct ccq_arguments {
  view<const T, 3> lambda = {};     // λ_t [B, T, HV], in [0, 1]
  view<const T, 3> log_decay = {};  // c_t [B, T, HV] for the decayed weighting; default: the rule's own gate
  view<const S, 4> C0 = {};         // initial statistics [N, HV, K, K]
  view<const S, 3> m0 = {};         //                    [N, HV, K]
  view<const S, 2> z0 = {};         //                    [N, HV]
  view<S, 4> C = {};                // final statistics, same shapes
  view<S, 3> m = {};
  view<S, 2> z = {};
  view<T, 4> q_tilde = {};          // optional output: cleaned queries q̃ (before scale) [B, T, HV, K]
};

template <class T, class S = accumulate_t<T>>
struct arguments {
  using input_type = T;
  using state_type = S;

  // ---- inputs ----------------------------------------------------------------------------------
  view<const T, 4> q = {};     // [B, T, H, K]
  view<const T, 4> k = {};     // [B, T, H, K]
  view<const T, 4> v = {};     // [B, T, HV, V], HV = G·H
  view<const T, 3> g = {};     // scalar log decay [B, T, HV] (stride 0 over b, t for g_gamma)
  view<const T, 4> gk = {};    // per-key log decay [B, T, HV, K]
  view<const T, 3> beta = {};  // delta-rule write strength [B, T, HV]
  view<const T, 4> b = {};     // Gated DeltaNet-2 erase gate [B, T, HV, K]
  view<const T, 4> w = {};     // Gated DeltaNet-2 write gate [B, T, HV, V]
  view<const S, 4> initial_state = {};        // S_0 [N, HV, K, V]; zero when empty
  cu_seqlens_span cu_seqlens = {};  // [N+1] int32 or int64 offsets (core/seqlens.hpp), packed sequences (B must be 1)
  ccq_arguments<T, S> ccq = {};

  // ---- outputs ---------------------------------------------------------------------------------
  view<T, 4> o = {};              // [B, T, HV, V] (required)
  view<S, 4> final_state = {};    // S_T [N, HV, K, V] (optional; may alias initial_state)
  view<T, 4> residual = {};       // write residual u_t [B, T, HV, V] (fla's v_new; optional)
  view<S, 5> checkpoints = {};    // chunkwise only: state at the start of every chunk [N, chunks, HV, K, V]

  // ---- options ---------------------------------------------------------------------------------
  std::optional<double> scale = {};  // default K^(-1/2); multiplies q at read time only
  bool qk_l2norm = false;       // x̂ = x / sqrt(Σx² + 1e-6) for q and k, in the kernel
  beta_activation beta_act = beta_activation::none;
  bool normalize = false;       // additive rule only: o_t / (s·q_t·z_t + 1e-10), z_t = Σ_{j≤t} k_j
  gate_activation gate = {};         // in-kernel gates from logits
  index_t chunk_size = 64;      // chunkwise form: 16, 32, 64 or 128
  int threads = 1;              // CPU backend: threads over (sequence, value head); 0 = one per hardware thread

  // ---- decode step only --------------------------------------------------------------------------
  // Row b of the batch reads and writes state state_indices[b]; −1 skips the row (its output is zero).
  std::span<const std::int32_t> state_indices = {};
};

// The problem sizes, derived by validate() from the arguments.
struct problem {
  index_t B = 0, T = 0, H = 0, HV = 0, K = 0, V = 0;
  index_t N = 0;      // sequences (B, or the number of packed sequences with cu_seqlens)
  index_t group = 1;  // G = HV / H: value heads per key head
  double scale = 1;
};

// Sequence n covers tokens [t_begin, t_end) of batch row `batch`.
struct sequence {
  index_t batch = 0, t_begin = 0, t_end = 0;
  index_t length() const { return t_end - t_begin; }
};

template <class T, class S>
sequence sequence_of(const arguments<T, S>& a, const problem& p, index_t n) {
  if (a.cu_seqlens.empty()) return {n, 0, p.T};
  return {0, a.cu_seqlens[n], a.cu_seqlens[n + 1]};
}

}  // namespace linea
