// linea/backend/cuda/backward/work.hpp — what the backward kernels share: the chunk table (every chunk of every
// sequence, so per-chunk kernels run over all of them at once) and the float32 workspace they pass results in.
//
// Layouts (all contiguous float32; "token" = bt·T + t, the flat position of a token in [B, T]):
//   q, k        [tokens, H, K]     the keys and queries the rule uses (after the in-kernel L2 norm)
//   v, d_o      [tokens, HV, V]
//   log_alpha   [tokens, HV]       the rule's log decay (0 without decay); erase, write: the update's gates
//   G           [chunks, HV, CL]   in-chunk cumulative log decay
//   P, Tinv     [chunks, HV, CL, CL]  decayed causal Q Kᵀ (no scale); (I + A)⁻¹ of the UT transform (the per-key
//                                     phase 1 parks A there first, then overwrites it with T)
//   W, U        [chunks, HV, CL, K|V] the UT transform's products T(e⊙Γ⊙K), T(w⊙V)
//   U_new, dU   [chunks, HV, CL, V]   the residuals U − W S, and dL/dU_new
//   h, dh       [chunks, HV, K, V]    the state before chunk c, and dL/d(state after chunk c)
//   dq, dk      [tokens, HV, K]       per value head (summed over a group in the input-adjoint kernel)
//   dlog_alpha, derase [tokens, HV]   d L / d log α_t and d L / d(e_t = w_t) (the activated β)
// Per-key decays (gla, kda) instead keep G per key channel, and phase 1 also writes the decayed operands that the
// state passes read (so they need no exponentials):
//   log_alpha_k, dlog_alpha_k [tokens, HV, K];   Gk, Kd [chunks, HV, CL, K];   gL [chunks, HV, K]
//   Kd_s = k_s ⊙ exp(G_L − G_s),   gL = exp(G_L)   (Qg = q ⊙ exp(G) is not stored: phase 1 folds it into s Qgᵀ dO,
//   the reverse pass's Y; the member stays null — its [chunks, HV, CL, K] slot was carved, unused, until 2026-12-04)
// Scalar decays (per-key ones too with per_key_inter, below) with 16-bit inputs (inter_grad_kernel.hpp: phase 4's
// inter-chunk products, a kernel of their own) also keep what that kernel hands chunk_grad_kernel (per_key_grad_kernel)
// besides its dq and dk terms:
//   dW_inter [chunks, HV, CL, K]  −dU hᵀ;   dP_inter [chunks, HV, CL, CL]  s dO U_newᵀ (zeros above the diagonal)
// and, for the erasing rules, what ut_grad_kernel.hpp hands it (grad13b; dW_inter then holds dBk = Tᵀ dW):
//   dBv_inter [chunks, HV, CL, V]  Tᵀ dU;   M_inter [chunks, HV, CL, CL]  −(dBv Uᵀ + dBk Wᵀ) ⊙ D (strictly lower)
#pragma once
#include "../params.hpp"

namespace linea::cuda_detail::bwd {

inline constexpr int CL = 64;        // chunk length
inline constexpr int max_kv = 128;   // K, V limit of the shared-memory tiles
inline constexpr int threads = 256;  // every backward kernel

// Per-key decays with 16-bit inputs hand phase 4's products over V (dq's and dk's inter-chunk terms, dW, dP) to
// inter_grad_kernel and, erasing, the UT transform's adjoints (dBv, dBk, M) to ut_grad_kernel, as the scalar decays do
// since grad13 / grad13b; per_key_grad_kernel then stages them (its Inter form). plan.hpp carves their scratch,
// phases.hpp's grad_phase launches them. Session 13's change, measured in session 15 (bench/cuda/README.md);
// LINEA_BWD_PER_KEY_INTER=0 keeps phase 4 in per_key_grad_kernel alone (an A/B).
#ifdef LINEA_BWD_PER_KEY_INTER
inline constexpr bool per_key_inter = LINEA_BWD_PER_KEY_INTER;
#else
inline constexpr bool per_key_inter = true;
#endif

struct chunk_info {
  index_t bt, t0;  // batch row, first token (in that row)
  int len, seq;    // tokens in the chunk (≤ CL), sequence number
};
struct seq_chunks {
  index_t first;  // first chunk in the table
  index_t count;
};

struct work {
  index_t T = 0, H = 0, HV = 0, K = 0, V = 0, G = 1, N = 0, chunks = 0;
  float scale = 1;
  const chunk_info* chunk = nullptr;  // [chunks]
  const seq_chunks* seqs = nullptr;   // [N]
  // (null where the plan carves no slot: plan.hpp's slots)
  float *q = nullptr, *k = nullptr, *v = nullptr, *d_o = nullptr, *log_alpha = nullptr, *erase = nullptr,
        *write = nullptr;
  float *Gc = nullptr, *P = nullptr, *Tinv = nullptr, *W = nullptr, *U = nullptr, *U_new = nullptr, *dU = nullptr,
        *h = nullptr, *dh = nullptr;
  float *dq = nullptr, *dk = nullptr, *dlog_alpha = nullptr, *derase = nullptr;
  float *log_alpha_k = nullptr, *dlog_alpha_k = nullptr, *Gk = nullptr, *Kd = nullptr, *Qg = nullptr, *gL = nullptr;
  float *dW_inter = nullptr, *dP_inter = nullptr, *dBv_inter = nullptr, *M_inter = nullptr;

  __host__ __device__ index_t token(index_t bt, index_t t) const { return bt * T + t; }
  __host__ __device__ std::size_t ch(index_t c, index_t hv) const { return std::size_t(c * HV + hv); }
};

}  // namespace linea::cuda_detail::bwd
