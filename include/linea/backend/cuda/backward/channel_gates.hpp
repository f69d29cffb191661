// linea/backend/cuda/backward/channel_gates.hpp — GDN-2's channel gates in the CUDA backward: the erase key b ⊙ k
// (b per key channel) and the written value w ⊙ v (w per value channel) in place of delta's one β per token.
// The per-key kernels (per_key_prep_kernel, per_key_grad_kernel) read them from the workspace as float32 and
// write db, dw (raw inputs: GDN-2's gates have no in-kernel activation, as in fla) straight to the caller's views:
//   A_rs = Σ_d b_rd k_rd k_sd D_rsd,   W = T (b ⊙ Γ ⊙ K),   U = T (w ⊙ V)
//   db_rd = k_rd (rowA_rd + γ_rd dBk_rd),   dw_rj = v_rj dBv_rj,   dv_rj = w_rj dBv_rj
// The state passes need nothing new: the erase key enters them only through W.
#pragma once
#include "../source.hpp"
#include "row_quads.hpp"
#include "work.hpp"

namespace linea::cuda_detail::bwd {

struct channel_gates {
  const float* b = nullptr;  // [tokens, HV, K]
  const float* w = nullptr;  // [tokens, HV, V]
};

template <class T>
struct channel_grads {
  view<T, 4> db, dw;  // [B, T, HV, K], [B, T, HV, V] (each written when given)
};

// The gates as float32, one CTA per token, one warp a row (row_quads.hpp).
template <class T>
__global__ void __launch_bounds__(threads) channel_gates_kernel(const view<const T, 4> b, const view<const T, 4> wv,
                                                                const work w, float* b_out, float* w_out) {
  const index_t token = blockIdx.x, bt = token / w.T, t = token % w.T;
  const int lane = threadIdx.x & 31;
  for (index_t hv = threadIdx.x >> 5; hv < w.HV; hv += threads / 32) {
    float x[4], y[4];
    load_quad(b.row(bt, t, hv), b.stride(3), w.K, lane, x);
    load_quad(wv.row(bt, t, hv), wv.stride(3), w.V, lane, y);
    store_quad(b_out + std::size_t((token * w.HV + hv) * w.K), 1, w.K, lane, x);
    store_quad(w_out + std::size_t((token * w.HV + hv) * w.V), 1, w.V, lane, y);
  }
}

}  // namespace linea::cuda_detail::bwd
