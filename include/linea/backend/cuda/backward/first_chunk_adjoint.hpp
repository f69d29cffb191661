// linea/backend/cuda/backward/first_chunk_adjoint.hpp — dL/dS_0 of the erasing rules with scalar (or no) decay
// (delta, gated_delta), token by token over each sequence's first chunk, in float32, after the reverse state pass.
//
// Why (kone16, issue #14): the reverse pass carries dh across a chunk as dh = γ_L dh' − Wᵀ (Kd dh') + …, i.e. the
// chunk's transition Π_r α_r (I − e_r k_r k_rᵀ) in the UT / WY form γ_L I − Kdᵀ W. Where that product is tiny in some
// key direction (a channel with e k² ≈ 1: at K = 1 and unit keys, Π_t (1 − β_t) over 64 tokens is 1e-20 – 1e-41)
// the form is a cancellation of O(1) terms to ~0, and its rounding (bf16 operands of W: ~2⁻⁹; 3xTF32: ~2⁻²¹) times
// dh' — the whole rest of the sequence's adjoint — lands in dS_0, whose true value then comes from the first few
// tokens only and can be orders of magnitude smaller than dh'. (Fuzz cases 1303, 261, 2639, 817: bf16 up to 1.43
// relative; float32 418, 1768, 337: 1.3–3.3e-4 against SPEC §6's 1e-4.) Inside later chunks the same rounding only
// perturbs dh_c by ε |dh_{c+1}|, which the gradients of chunk c − 1 see in proportion to their own size, and which
// reaches dS_0 through the first chunk's transition (small exactly when the cancellation was deep); so the first
// chunk is where the form must not cancel. Here it does not: from dh' of the first chunk (w.dh, written by the
// reverse pass) the token recurrence
//     dS += s q_t dO_tᵀ;     dS ← α_t (dS − e_t k_t (k_tᵀ dS))          t = L − 1, …, 0
// (the adjoint of o_t = s S_tᵀ q_t and S_t = α_t (I − e_t k_t k_tᵀ) S_{t−1} + w_t k_t v_tᵀ) gives dS_0 as the
// product form, each factor applied exactly (no 1 − Σ), in float32 FMAs, overwriting what the reverse pass wrote.
// Cost: one launch when dS_0 is asked for, ≤ 64 tokens × 3 K·V FMAs per (sequence, head).
//
// Layout: one CTA per (32 value columns, value head, sequence), 4 warps × 8 columns; lane l owns key rows
// l, l + 32, l + 64, l + 96 (K ≤ max_kv = 128) of its warp's 8 columns: k_tᵀ dS is 4 FMAs and a butterfly per column.
// The chunk's q, k, dO tile and gates are staged in shared memory first (coalesced rows).
#pragma once
#include "../check.hpp"
#include "../kernel_attributes.hpp"
#include "channel_gates.hpp"
#include "work.hpp"

namespace linea::cuda_detail::bwd {

struct first_chunk_shape {
  static constexpr int cols = 32, warps = cols / 8, nthreads = 32 * warps, rows = max_kv / 32;
  static constexpr int q_at = 0, k_at = q_at + CL * max_kv, o_at = k_at + CL * max_kv, a_at = o_at + CL * cols,
                       e_at = a_at + CL, end = e_at + CL;  // floats
  static constexpr std::size_t bytes = sizeof(float) * end;
  static_assert(max_kv % 32 == 0, "first_chunk_adjoint: key rows in lane strides of 32");
};

// What both kernels below share: one CTA per (32 value columns, value head, sequence), 4 warps × 8 columns, lane l
// owning key rows l, l + 32, l + 64, l + 96 of its warp's columns.
namespace first_chunk_detail {

constexpr int R = first_chunk_shape::rows, C = 8;  // key rows a lane, value columns a warp

// The chunk's q, k rows [L][K] and dO's [L][cols] columns of the tile into shared memory (coalesced rows).
__device__ __forceinline__ void stage_rows(const work& w, float* sQ, float* sK, float* sO, index_t tok0, index_t h,
                                           index_t hv, index_t jt, int L, int K, int bv) {
  constexpr int cols = first_chunk_shape::cols, nthreads = first_chunk_shape::nthreads;
  const index_t ldq = w.H * w.K, ldv = w.HV * w.V;
  for (int e = threadIdx.x; e < L * K; e += nthreads) {
    const int r = e / K, d = e % K;
    sQ[r * max_kv + d] = w.q[(tok0 + r) * ldq + h * w.K + d];
    sK[r * max_kv + d] = w.k[(tok0 + r) * ldq + h * w.K + d];
  }
  for (int e = threadIdx.x; e < L * cols; e += nthreads) {
    const int r = e / cols, j = e % cols;
    sO[e] = j < bv ? w.d_o[(tok0 + r) * ldv + hv * w.V + jt + j] : 0.f;
  }
}

// dS = dh' of the first chunk (the state adjoint after it: the reverse pass's w.dh slot), this lane's elements.
__device__ __forceinline__ void load_dh(float (&dS)[R][C], const work& w, index_t first, index_t hv, index_t jt, int K,
                                        int bv, int j0) {
  const int lane = threadIdx.x & 31;
  const float* dh = w.dh + w.ch(first, hv) * w.K * w.V + jt;
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const int d = lane + 32 * i;
#pragma unroll
    for (int c = 0; c < C; ++c) dS[i][c] = d < K && j0 + c < bv ? dh[d * w.V + j0 + c] : 0.f;
  }
}

// The tokens of the chunk in reverse: the read's adjoint dS += s q_t dO_tᵀ and dot = k_tᵀ dS (per column, a
// butterfly over the lanes), then update(t, k, dot) applies the update's transposed factor and the decay to dS.
template <class Update>
__device__ __forceinline__ void reverse_tokens(float (&dS)[R][C], const float* sQ, const float* sK, const float* sO,
                                               int L, int K, float s, int j0, Update update) {
  const int lane = threadIdx.x & 31;
  for (int t = L - 1; t >= 0; --t) {
    float q[R], k[R];
#pragma unroll
    for (int i = 0; i < R; ++i) {
      const int d = lane + 32 * i;
      q[i] = d < K ? s * sQ[t * max_kv + d] : 0.f;
      k[i] = d < K ? sK[t * max_kv + d] : 0.f;
    }
    float dot[C];
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const float o = sO[t * first_chunk_shape::cols + j0 + c];
      float x = 0.f;
#pragma unroll
      for (int i = 0; i < R; ++i) {
        dS[i][c] = fmaf(q[i], o, dS[i][c]);
        x = fmaf(k[i], dS[i][c], x);
      }
      dot[c] = x;
    }
#pragma unroll
    for (int m = 16; m >= 1; m >>= 1)
#pragma unroll
      for (int c = 0; c < C; ++c) dot[c] += __shfl_xor_sync(0xffffffffu, dot[c], m);
    update(t, k, dot);
  }
}

__device__ __forceinline__ void store_ds0(const float (&dS)[R][C], const view<float, 4>& dS0, index_t n, index_t hv,
                                          index_t jt, int K, int bv, int j0) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const int d = lane + 32 * i;
#pragma unroll
    for (int c = 0; c < C; ++c)
      if (d < K && j0 + c < bv) dS0(n, hv, d, jt + j0 + c) = dS[i][c];
  }
}

}  // namespace first_chunk_detail

// (A template only so that the header can be included by several translation units: Scalar = true, scalar decays.)
template <bool Scalar = true>
__global__ void __launch_bounds__(first_chunk_shape::nthreads)
    first_chunk_adjoint_kernel(const work w, const view<float, 4> dS0) {
  static_assert(Scalar, "first_chunk_adjoint: scalar (or no) decays");
  namespace fc = first_chunk_detail;
  using sh = first_chunk_shape;
  constexpr int R = fc::R, C = fc::C;
  const index_t jt = index_t(blockIdx.x) * sh::cols, hv = blockIdx.y, n = blockIdx.z, h = hv / w.G;
  const seq_chunks sc = w.seqs[n];
  if (sc.count == 0) return;  // an empty sequence: dS_0 = dS_T, the reverse pass's
  const chunk_info ci = w.chunk[sc.first];
  const int L = ci.len, K = int(w.K), bv = int(w.V - jt < sh::cols ? w.V - jt : sh::cols), tid = threadIdx.x;
  const index_t tok0 = w.token(ci.bt, ci.t0);
  extern __shared__ __align__(16) float sm[];
  float *sQ = sm + sh::q_at, *sK = sm + sh::k_at, *sO = sm + sh::o_at, *sA = sm + sh::a_at, *sE = sm + sh::e_at;

  // ---- stage the chunk: q, k, dO's columns of this tile, α_t and e_t ----
  fc::stage_rows(w, sQ, sK, sO, tok0, h, hv, jt, L, K, bv);
  for (int r = tid; r < L; r += sh::nthreads) {
    sA[r] = __expf(w.log_alpha[(tok0 + r) * w.HV + hv]);
    sE[r] = w.erase[(tok0 + r) * w.HV + hv];
  }
  const int j0 = 8 * (tid >> 5);  // this warp's columns j0 .. j0 + 7 of the tile
  float dS[R][C];
  fc::load_dh(dS, w, sc.first, hv, jt, K, bv, j0);
  __syncthreads();

  // ---- the tokens in reverse: the read's adjoint, then the update's transposed factor ----
  fc::reverse_tokens(dS, sQ, sK, sO, L, K, w.scale, j0, [&](int t, const float (&k)[R], const float (&dot)[C]) {
    const float a = sA[t], ea = sE[t];
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const float ed = ea * dot[c];
#pragma unroll
      for (int i = 0; i < R; ++i) dS[i][c] = a * fmaf(-ed, k[i], dS[i][c]);
    }
  });
  fc::store_ds0(dS, dS0, n, hv, jt, K, bv, j0);
}

// After the reverse pass of an erasing rule with scalar decay, where dS_0 is asked for (state_phases).
inline void first_chunk_adjoint_phase(const work& w, const view<float, 4>& dS0, cudaStream_t st) {
  if (!dS0.ptr || !w.N || !w.chunks) return;
  using sh = first_chunk_shape;
  const dim3 grid{unsigned((w.V + sh::cols - 1) / sh::cols), unsigned(w.HV), unsigned(w.N)};
  constexpr auto kern = first_chunk_adjoint_kernel<true>;
  allow_dynamic_shared<kern, sh::bytes>();
  kern<<<grid, sh::nthreads, sh::bytes, st>>>(w, dS0);
  check_launch("backward first_chunk_adjoint_kernel");
}

// Per-key decays (kda; gdn2 with Channels), for the 16-bit state passes (phases.hpp's state16_per_key: written in
// session 13, first run on the H200 in session 15). The token recurrence with a decay per key channel and an erase key per
// channel (S_t = (I − k_t e_tᵀ) Diag(α_t) S_{t−1} + k_t x_tᵀ, e_t = b_t ⊙ k_t; kda: b_t = β_t):
//     dS += s q_t dO_tᵀ;     dS ← Diag(α_t) (dS − e_t (k_tᵀ dS))          t = L − 1, …, 0
// The same layout as the kernel above; α_t (and gdn2's b_t) staged per (token, channel) besides q, k and dO.
struct first_chunk_per_key_shape {
  using base = first_chunk_shape;
  static constexpr int cols = base::cols, warps = base::warps, nthreads = base::nthreads, rows = base::rows;
  static constexpr int q_at = 0, k_at = q_at + CL * max_kv, o_at = k_at + CL * max_kv, a_at = o_at + CL * cols,
                       b_at = a_at + CL * max_kv, e_at = b_at + CL * max_kv, end = e_at + CL;  // floats
  static constexpr std::size_t bytes = sizeof(float) * end;
  static_assert(bytes <= 227 * 1024, "first_chunk_adjoint (per key): one CTA must fit");
};

template <bool Channels>
__global__ void __launch_bounds__(first_chunk_per_key_shape::nthreads)
    first_chunk_adjoint_per_key_kernel(const work w, const view<float, 4> dS0, const channel_gates cg) {
  namespace fc = first_chunk_detail;
  using sh = first_chunk_per_key_shape;
  constexpr int R = fc::R, C = fc::C;
  const index_t jt = index_t(blockIdx.x) * sh::cols, hv = blockIdx.y, n = blockIdx.z, h = hv / w.G;
  const seq_chunks sc = w.seqs[n];
  if (sc.count == 0) return;  // an empty sequence: dS_0 = dS_T, the reverse pass's
  const chunk_info ci = w.chunk[sc.first];
  const int L = ci.len, K = int(w.K), bv = int(w.V - jt < sh::cols ? w.V - jt : sh::cols), tid = threadIdx.x,
            lane = tid & 31;
  const index_t tok0 = w.token(ci.bt, ci.t0);
  extern __shared__ __align__(16) float sm[];
  float *sQ = sm + sh::q_at, *sK = sm + sh::k_at, *sO = sm + sh::o_at, *sA = sm + sh::a_at, *sB = sm + sh::b_at,
        *sE = sm + sh::e_at;

  // ---- stage the chunk: q, k, dO's columns of this tile, α_td (and b_td, or β_t) ----
  fc::stage_rows(w, sQ, sK, sO, tok0, h, hv, jt, L, K, bv);
  const index_t ldg = w.HV * w.K;
  for (int e = tid; e < L * K; e += sh::nthreads) {
    const int r = e / K, d = e % K;
    sA[r * max_kv + d] = __expf(w.log_alpha_k[(tok0 + r) * ldg + hv * w.K + d]);
    if constexpr (Channels) sB[r * max_kv + d] = cg.b[(tok0 + r) * ldg + hv * w.K + d];
  }
  if constexpr (!Channels)
    for (int r = tid; r < L; r += sh::nthreads) sE[r] = w.erase[(tok0 + r) * w.HV + hv];
  const int j0 = 8 * (tid >> 5);
  float dS[R][C];
  fc::load_dh(dS, w, sc.first, hv, jt, K, bv, j0);
  __syncthreads();

  // ---- the tokens in reverse: the read's adjoint, then the update's transposed factor, then the decay ----
  fc::reverse_tokens(dS, sQ, sK, sO, L, K, w.scale, j0, [&](int t, const float (&k)[R], const float (&dot)[C]) {
    float e[R], a[R];
#pragma unroll
    for (int i = 0; i < R; ++i) {
      const int d = lane + 32 * i;
      e[i] = d < K ? (Channels ? sB[t * max_kv + d] : sE[t]) * k[i] : 0.f;
      a[i] = d < K ? sA[t * max_kv + d] : 0.f;
    }
#pragma unroll
    for (int c = 0; c < C; ++c)
#pragma unroll
      for (int i = 0; i < R; ++i) dS[i][c] = a[i] * fmaf(-e[i], dot[c], dS[i][c]);
  });
  fc::store_ds0(dS, dS0, n, hv, jt, K, bv, j0);
}

// After the reverse pass of an erasing rule with per-key decays on the 16-bit passes, where dS_0 is asked for
// (chunk_phases: it knows the channel gates, which state_phases does not).
template <bool Channels>
void first_chunk_adjoint_per_key_phase(const work& w, const view<float, 4>& dS0, const channel_gates& cg,
                                       cudaStream_t st) {
  if (!dS0.ptr || !w.N || !w.chunks) return;
  using sh = first_chunk_per_key_shape;
  const dim3 grid{unsigned((w.V + sh::cols - 1) / sh::cols), unsigned(w.HV), unsigned(w.N)};
  constexpr auto kern = first_chunk_adjoint_per_key_kernel<Channels>;
  allow_dynamic_shared<kern, sh::bytes>();
  kern<<<grid, sh::nthreads, sh::bytes, st>>>(w, dS0, cg);
  check_launch("backward first_chunk_adjoint_per_key_kernel");
}

}  // namespace linea::cuda_detail::bwd
