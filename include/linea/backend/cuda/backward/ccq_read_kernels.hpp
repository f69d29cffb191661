// linea/backend/cuda/backward/ccq_read_kernels.hpp — the CCQ read's own kernels in the CUDA backward (ccq_read.hpp
// runs them around the rule's backward and the statistics pass's). The statistics are kept centred (Welford):
//     z_t = a_t z_{t-1} + 1,   δ_t = k̂_t − μ_{t-1},   w_t = a_t z_{t-1} / z_t,   μ_t = μ_{t-1} + δ_t / z_t,
//     M_t = a_t M_{t-1} + w_t δ_t δ_tᵀ   (= C_t − m_t m_tᵀ / z_t = z_t Σ_t;  μ_0 = m_0/z_0, M_0 = C_0 − m_0 m_0ᵀ/z_0),
//     q̃_t = q̂_t − λ_t Y_t / z_t   with Y_t = M_t q̂_t
// (docs/math/backward.md §4). Why centred: the forward's uncentred form Y/z − μ(μ·q̂) subtracts two terms of size
// |k̂|²|q̂| whose difference Σ q̂ is small whenever the weights are lopsided (a_t ≈ e^-20, or a T = 2 sequence): in
// float32 dλ = −dq̃·Σq̂ and dc_t, which are proportional to that difference, then lose most of their digits
// (issue #14: up to 1.7e-2 relative). M_t is a sum of nonnegative terms: no cancellation.
// M_t is an additive decayed linear attention with keys u_t = w_t δ_t, values δ_t, log decay c_t and initial state
// M_0 — the statistics pass (ccq_read.hpp); z_t, μ_t are per-token scans. Backward:
//   direct:    dλ = −dq̃·Y/z,   dY = −λ dq̃ / z  (the pass's d_o),   dz_t = λ (dq̃·Y) / z²,   dq̂ = dq̃ (+ M dY)
//   the pass:  dk_pass (of u), dv_pass (of δ), d log α (the a_t M_{t-1} part of dc_t), dM_0
//   μ, reverse:  e_t = w_t dk_pass + dv_pass + Gμ_t / z_t  (dL/dδ_t = dk̂_t's read part),  Gμ_{t-1} = Gμ_t − e_t
//   z, reverse:  with dw_t = dk_pass·δ_t, s_t = Gμ_t·δ_t and Gz_t = dz_t + (carried),
//                Ḡ_t = Gz_t − dw_t w_t / z_t − s_t / z_t²,   dc_t += a_t z_{t-1} Ḡ_t + dw_t w_t,
//                carried Gz_{t-1} = a_t Ḡ_t + dw_t a_t / z_t
//   initial statistics, through the uncentred first step m_1 = a m_0 + k̂, z_1 = a z_0 + 1, C_1 = a C_0 + k̂k̂ᵀ
//   (exact for every z_0, also z_0 = 0):  dC_0 = dM_0,  dm_0 = a_1 Gμ_1 / z_1 − (dM_0 + dM_0ᵀ) μ_1,
//                dz_0 = a_1 Gz_1 − a_1 (Gμ_1·μ_1) / z_1 + μ_1ᵀ dM_0 μ_1.
// (z_0 = 0 with m_0 ≠ 0 is no set of keys; the centred form reads its m_0 as 0.)
// Every 1/z is inverse_key_weight(z) (core/numeric.hpp): 0 where z = 0, as the reference's Σ = 0 there. A caller's
// z_0 < 0 is exact here while z_t ≠ 0 (the identities above hold for any nonzero z), and so is a z_t = 0 at a
// sequence's last token (its read is the identity, with no adjoint: nothing later reads the statistics). A z_t = 0
// with tokens after it is not: μ_t = m_t / z_t and M_t have no finite value there, so this form then reads the
// statistics at t as (a_t M_{t-1}, μ_{t-1}) — finite gradients, but not the reference's (which carries C_t, m_t).
// Per (chunk, value head) kernels take a warp per token; the scans take a thread per key channel.
#pragma once
#include "inputs_kernel.hpp"

namespace linea::cuda_detail::bwd {

// Where c_t (the statistics' log decay) comes from.
enum class ccq_decay_source : int { none, given, rule_scalar, rule_key_mean };

// The CCQ read's float32 tensors ("token" as in work.hpp; rows = tokens·HV). The statistics pass's own work holds
// delta (its values), y (its d_o) and c (its log decay); the rest lies past both works in the workspace.
struct ccq_work {
  index_t T = 0, H = 0, HV = 0, K = 0, G = 1;
  const chunk_info* chunk = nullptr;
  const seq_chunks* seqs = nullptr;
  const float *qhat = nullptr, *khat = nullptr;  // [tokens, H, K] (the rule's work: q̂, k̂)
  float* kv;     // [rows, K]  k̂ per value head: the rule's keys with q̃
  float* qv;     // [rows, K]  q̂ per value head: the statistics pass's queries
  float* u;      // [rows, K]  w_t δ_t: the statistics pass's keys
  float* delta;  // [rows, K]  δ_t: its values
  float* c;      // [rows]     c_t
  float* y;      // [rows, K]  Y_t = M_t q̂_t, then dL/dY_t
  float* qt;     // [rows, K]  q̃_t
  float* mu;     // [rows, K]  μ_t
  float* z;      // [rows]     z_t
  float* az;     // [rows]     a_t z_{t-1} (= z_t − 1, kept exact when a_t is tiny)
  float* dz;     // [rows]     dL/dz_t's direct part, then the read's part of dc_t
  float* dkv;    // [rows, K]  the statistics pass's dv (of δ)
  float* e;      // [rows, K]  dL/dδ_t: the read's part of dk̂
  float* gmu;    // [rows, K]  Gμ_t, the adjoint of μ_t carried from later tokens
  float* dw;     // [rows]     dk_pass·δ_t
  float* sg;     // [rows]     Gμ_t·δ_t
  float *M0, *dM0;  // [N, HV, K, K]  M_0, and the statistics pass's dL/dM_0

  __host__ __device__ index_t token(index_t bt, index_t t) const { return bt * T + t; }
  __host__ __device__ std::size_t row(index_t tok, index_t hv) const { return std::size_t(tok * HV + hv); }
};

// c_t per token and value head; k̂ and q̂ copied per value head.
template <class T>
__global__ void __launch_bounds__(threads) ccq_setup_kernel(const ccq_work cw, const float* log_alpha,
                                                            const float* log_alpha_k, const view<const T, 3> given,
                                                            const ccq_decay_source from) {
  const index_t c = blockIdx.x, hv = blockIdx.y, h = hv / cw.G, K = cw.K;
  const chunk_info ci = cw.chunk[c];
  const index_t tok0 = cw.token(ci.bt, ci.t0);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  for (int r = warp; r < ci.len; r += threads / 32) {
    const index_t tok = tok0 + r;
    const std::size_t at = cw.row(tok, hv);
    const float *k = cw.khat + (tok * cw.H + h) * K, *q = cw.qhat + (tok * cw.H + h) * K;
    float sum = 0;
    for (index_t i = lane; i < K; i += 32) {
      cw.kv[at * K + i] = k[i], cw.qv[at * K + i] = q[i];
      if (from == ccq_decay_source::rule_key_mean) sum += log_alpha_k[at * K + i];
    }
    sum = warp_sum(sum);
    if (lane == 0) {
      float x = 0;
      if (from == ccq_decay_source::given) x = to_float(given(ci.bt, ci.t0 + r, hv));
      if (from == ccq_decay_source::rule_scalar) x = log_alpha[at];
      if (from == ccq_decay_source::rule_key_mean) x = sum / float(K);  // as the forward: the mean over K
      cw.c[at] = x;
    }
  }
}

// μ_0 of sequence n, value head hv, channel i (0 without initial statistics or with z_0 = 0).
__device__ inline float ccq_mu0(const view<const float, 3> m0, const view<const float, 2> z0, index_t n, index_t hv,
                                index_t i) {
  const float z = z0.ptr ? z0(n, hv) : 0.f;
  return m0.ptr ? m0(n, hv, i) * inverse_key_weight(z) : 0.f;
}

// M_0 = C_0 − m_0 m_0ᵀ / z_0 (C_0 alone when z_0 = 0; 0 without initial statistics), per (value head, sequence).
template <class = void>
__global__ void __launch_bounds__(max_kv) ccq_initial_kernel(const ccq_work cw, const view<const float, 4> C0,
                                                             const view<const float, 3> m0,
                                                             const view<const float, 2> z0) {
  const index_t hv = blockIdx.x, n = blockIdx.y, K = cw.K;
  const float iz = inverse_key_weight(z0.ptr ? z0(n, hv) : 0.f);
  float* M = cw.M0 + (std::size_t(n) * cw.HV + hv) * K * K;
  for (index_t e = threadIdx.x; e < K * K; e += max_kv) {
    const index_t i = e / K, j = e % K;
    float x = C0.ptr ? C0(n, hv, i, j) : 0.f;
    if (m0.ptr) x -= m0(n, hv, i) * m0(n, hv, j) * iz;
    M[e] = x;
  }
}

// z_t, μ_t and the statistics pass's keys u_t = w_t δ_t and values δ_t: one CTA per (value head, sequence), a
// thread per key channel. Each chunk's inputs are staged in shared memory first, so that the sequential loop waits
// on no global load (a scan's time is then per chunk, not per token).
template <class = void>
__global__ void __launch_bounds__(max_kv) ccq_scan_kernel(const ccq_work cw, const view<const float, 3> m0,
                                                          const view<const float, 2> z0) {
  const index_t hv = blockIdx.x, n = blockIdx.y, K = cw.K, i = threadIdx.x;
  const bool on = i < K;
  __shared__ float sK[CL * max_kv], sA[CL];
  float mu = on ? ccq_mu0(m0, z0, n, hv, i) : 0.f;
  float z = z0.ptr ? z0(n, hv) : 0.f;
  const seq_chunks sc = cw.seqs[n];
  for (index_t c = sc.first; c < sc.first + sc.count; ++c) {
    const chunk_info ci = cw.chunk[c];
    const index_t tok0 = cw.token(ci.bt, ci.t0);
    __syncthreads();  // (the previous chunk's loop has read sK, sA)
    for (index_t e = i; e < ci.len * K; e += max_kv) sK[e] = cw.kv[cw.row(tok0 + e / K, hv) * K + e % K];
    for (index_t r = i; r < ci.len; r += max_kv) sA[r] = expf(cw.c[cw.row(tok0 + r, hv)]);
    __syncthreads();
    for (int r = 0; r < ci.len; ++r) {
      const std::size_t at = cw.row(tok0 + r, hv);
      const float az = sA[r] * z;
      z = az + 1.f;
      const float iz = inverse_key_weight(z);
      if (on) {
        const float d = sK[r * K + i] - mu;
        mu += d * iz;
        cw.delta[at * K + i] = d, cw.u[at * K + i] = az * iz * d, cw.mu[at * K + i] = mu;
      }
      if (i == 0) cw.z[at] = z, cw.az[at] = az;
    }
  }
}

// Y = M q̂ from the statistics pass's states (h_c: M before the chunk) and factors (G, P), then q̃.
//   Y_r = exp(G_r) h_cᵀ q̂_r + Σ_{s≤r} P_rs δ_s      (P_rs = exp(G_r − G_s) q̂_r·u_s)
template <class T>
__global__ void __launch_bounds__(threads) ccq_tilde_kernel(const ccq_work cw, const work ws, const view<const T, 3> lambda) {
  const index_t c = blockIdx.x, hv = blockIdx.y, h = hv / cw.G;
  const int K = int(cw.K), tid = threadIdx.x;
  const chunk_info ci = cw.chunk[c];
  const int L = ci.len;
  const index_t tok0 = cw.token(ci.bt, ci.t0);
  extern __shared__ __align__(16) float sm[];
  float *sQ = sm, *sH = sm + CL * K;  // q̂ rows [CL][K], h_c [K][K]
  __shared__ float sGam[CL];
  const std::size_t cv = ws.ch(c, hv);
  for (int e = tid; e < L * K; e += threads) sQ[e] = cw.qhat[((tok0 + e / K) * cw.H + h) * K + e % K];
  for (int e = tid; e < K * K; e += threads) sH[e] = ws.h[cv * K * K + e];
  for (int r = tid; r < L; r += threads) sGam[r] = __expf(ws.Gc[cv * CL + r]);
  __syncthreads();
  const float* P = ws.P + cv * CL * CL;
  for (int e = tid; e < L * K; e += threads) {
    const int r = e / K, j = e % K;
    float acc = 0;
    for (int d = 0; d < K; ++d) acc = fmaf(sQ[r * K + d], sH[d * K + j], acc);
    acc *= sGam[r];
    for (int s = 0; s <= r; ++s) acc = fmaf(P[r * CL + s], cw.delta[cw.row(tok0 + s, hv) * K + j], acc);
    cw.y[cw.row(tok0 + r, hv) * K + j] = acc;
  }
  __syncthreads();  // (y of this chunk, written above, is read back by other threads)
  for (int e = tid; e < L * K; e += threads) {
    const int r = e / K, i = e % K;
    const std::size_t at = cw.row(tok0 + r, hv);
    const float lam = to_float(lambda(ci.bt, ci.t0 + r, hv));
    cw.qt[at * K + i] = sQ[r * K + i] - lam * cw.y[at * K + i] * inverse_key_weight(cw.z[at]);
  }
}

// The direct adjoints of q̃_t (header formulas): dλ; dY over y; dL/dz_t's direct part. dq (which holds dq̃) is
// already dq̂'s direct part.
template <class T>
__global__ void __launch_bounds__(threads) ccq_direct_kernel(const ccq_work cw, const float* dq, const view<const T, 3> lambda,
                                                             const view<T, 3> dlambda) {
  const index_t c = blockIdx.x, hv = blockIdx.y, K = cw.K;
  const chunk_info ci = cw.chunk[c];
  const index_t tok0 = cw.token(ci.bt, ci.t0);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  for (int r = warp; r < ci.len; r += threads / 32) {
    const std::size_t at = cw.row(tok0 + r, hv);
    float* y = cw.y + at * K;
    const float* dqt = dq + at * K;
    float ydq = 0;  // Y·dq̃
    for (index_t i = lane; i < K; i += 32) ydq += y[i] * dqt[i];
    ydq = warp_sum(ydq);
    const float iz = inverse_key_weight(cw.z[at]), lam = to_float(lambda(ci.bt, ci.t0 + r, hv));
    if (lane == 0) {
      if (dlambda.ptr) dlambda(ci.bt, ci.t0 + r, hv) = from_float<T>(-ydq * iz);
      cw.dz[at] = lam * ydq * iz * iz;
    }
    __syncwarp();  // (every lane has read y before it is overwritten)
    for (index_t i = lane; i < K; i += 32) y[i] = -lam * dqt[i] * iz;
  }
}

// The adjoint of μ carried backward over each sequence: Gμ_t (kept) and e_t = dL/dδ_t (chunks staged as in
// ccq_scan_kernel).
template <class = void>
__global__ void __launch_bounds__(max_kv) ccq_mean_adjoint_kernel(const ccq_work cw, const float* dk_pass) {
  const index_t hv = blockIdx.x, n = blockIdx.y, K = cw.K, i = threadIdx.x;
  __shared__ float sE[CL * max_kv], sIz[CL];  // w_t dk_pass + dv_pass;  1/z_t
  float g = 0;
  const seq_chunks sc = cw.seqs[n];
  for (index_t c = sc.first + sc.count - 1; c >= sc.first; --c) {
    const chunk_info ci = cw.chunk[c];
    const index_t tok0 = cw.token(ci.bt, ci.t0);
    __syncthreads();
    for (index_t e = i; e < ci.len * K; e += max_kv) {
      const std::size_t at = cw.row(tok0 + e / K, hv);
      sE[e] = fmaf(cw.az[at] * inverse_key_weight(cw.z[at]), dk_pass[at * K + e % K], cw.dkv[at * K + e % K]);
    }
    for (index_t r = i; r < ci.len; r += max_kv) sIz[r] = inverse_key_weight(cw.z[cw.row(tok0 + r, hv)]);
    __syncthreads();
    if (i < K)
      for (int r = ci.len - 1; r >= 0; --r) {
        const std::size_t at = cw.row(tok0 + r, hv);
        const float e = fmaf(g, sIz[r], sE[r * K + i]);
        cw.gmu[at * K + i] = g, cw.e[at * K + i] = e;
        g -= e;
      }
  }
}

// Per token: dw_t = dk_pass·δ_t and s_t = Gμ_t·δ_t.
template <class = void>
__global__ void __launch_bounds__(threads) ccq_dots_kernel(const ccq_work cw, const float* dk_pass) {
  const index_t c = blockIdx.x, hv = blockIdx.y, K = cw.K;
  const chunk_info ci = cw.chunk[c];
  const index_t tok0 = cw.token(ci.bt, ci.t0);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  for (int r = warp; r < ci.len; r += threads / 32) {
    const std::size_t at = cw.row(tok0 + r, hv);
    float dw = 0, sg = 0;
    for (index_t i = lane; i < K; i += 32) {
      const float d = cw.delta[at * K + i];
      dw = fmaf(dk_pass[at * K + i], d, dw), sg = fmaf(cw.gmu[at * K + i], d, sg);
    }
    dw = warp_sum(dw), sg = warp_sum(sg);
    if (lane == 0) cw.dw[at] = dw, cw.sg[at] = sg;
  }
}

// The adjoint of z carried backward (one thread: a scalar recurrence), the read's part of dc_t (over dz), and the
// initial statistics' gradients dC_0, dm_0, dz_0 (header formulas), per (value head, sequence).
template <class = void>
__global__ void __launch_bounds__(max_kv) ccq_count_adjoint_kernel(const ccq_work cw, const view<float, 4> dC0,
                                                                   const view<float, 3> dm0, const view<float, 2> dz0) {
  const index_t hv = blockIdx.x, n = blockIdx.y, K = cw.K, i = threadIdx.x;
  const seq_chunks sc = cw.seqs[n];
  __shared__ float sGz1;  // Gz_1: the adjoint of z_1 with μ_1, M_1 held
  __shared__ float sZ[CL], sAz[CL], sA[CL], sDw[CL], sSg[CL], sDz[CL];  // a chunk's scalars, staged
  float gz = 0;
  for (index_t c = sc.first + sc.count - 1; c >= sc.first; --c) {
    const chunk_info ci = cw.chunk[c];
    const index_t tok0 = cw.token(ci.bt, ci.t0);
    __syncthreads();
    for (index_t r = i; r < ci.len; r += max_kv) {
      const std::size_t at = cw.row(tok0 + r, hv);
      sZ[r] = cw.z[at], sAz[r] = cw.az[at], sA[r] = expf(cw.c[at]), sDw[r] = cw.dw[at], sSg[r] = cw.sg[at];
      sDz[r] = cw.dz[at];
    }
    __syncthreads();
    if (i == 0)
      for (int r = ci.len - 1; r >= 0; --r) {
        const float iz = inverse_key_weight(sZ[r]), a = sA[r], w = sAz[r] * iz, dw = sDw[r];
        gz += sDz[r];
        sGz1 = gz;
        const float gbar = gz - dw * w * iz - sSg[r] * (iz * iz);
        sDz[r] = sAz[r] * gbar + dw * w;
        gz = a * gbar + dw * a * iz;
      }
    __syncthreads();
    for (index_t r = i; r < ci.len; r += max_kv) cw.dz[cw.row(tok0 + r, hv)] = sDz[r];
  }
  __syncthreads();
  const float* dM = cw.dM0 + (std::size_t(n) * cw.HV + hv) * K * K;
  if (dC0.ptr)
    for (index_t e = i; e < K * K; e += max_kv) dC0(n, hv, e / K, e % K) = sc.count ? dM[e] : 0.f;
  if (sc.count == 0) {  // no tokens: the initial statistics reach nothing
    if (i < K && dm0.ptr) dm0(n, hv, i) = 0.f;
    if (i == 0 && dz0.ptr) dz0(n, hv) = 0.f;
    return;
  }
  const chunk_info c1 = cw.chunk[sc.first];
  const std::size_t at1 = cw.row(cw.token(c1.bt, c1.t0), hv);
  const float a1 = expf(cw.c[at1]), iz1 = inverse_key_weight(cw.z[at1]);
  const float *mu1 = cw.mu + at1 * K, *g1 = cw.gmu + at1 * K;
  float sym = 0, quad = 0, gm = 0;  // ((dM + dMᵀ) μ_1)_i;  μ_1ᵀ dM μ_1, Gμ_1·μ_1 (summed below)
  if (i < K) {
    for (index_t j = 0; j < K; ++j) {
      const float row = dM[i * K + j];
      sym = fmaf(row + dM[j * K + i], mu1[j], sym);
      quad = fmaf(row, mu1[j], quad);
    }
    quad *= mu1[i], gm = g1[i] * mu1[i];
    if (dm0.ptr) dm0(n, hv, i) = a1 * g1[i] * iz1 - sym;
  }
  __shared__ float sQuad[max_kv / 32], sGm[max_kv / 32];
  quad = warp_sum(quad), gm = warp_sum(gm);
  if ((i & 31) == 0) sQuad[i >> 5] = quad, sGm[i >> 5] = gm;
  __syncthreads();
  if (i == 0 && dz0.ptr) {
    float q = 0, g = 0;
    for (int w = 0; w < max_kv / 32; ++w) q += sQuad[w], g += sGm[w];
    dz0(n, hv) = a1 * sGz1 - a1 * g * iz1 + q;
  }
}

// The sums into the rule's work: dq̂ += the statistics pass's dq (M dY); dk̂ += e_t; dc_t (the pass's d log α plus
// the read's part) to ccq.log_decay's gradient or to the rule's log decay (its default).
template <class T>
__global__ void __launch_bounds__(threads) ccq_finish_kernel(const ccq_work cw, const work wm, const work ws,
                                                             const ccq_decay_source from, const view<T, 3> dgiven) {
  const index_t c = blockIdx.x, hv = blockIdx.y, K = cw.K;
  const chunk_info ci = cw.chunk[c];
  const index_t tok0 = cw.token(ci.bt, ci.t0);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  for (int r = warp; r < ci.len; r += threads / 32) {
    const std::size_t at = cw.row(tok0 + r, hv);
    for (index_t i = lane; i < K; i += 32) {
      wm.dq[at * K + i] += ws.dq[at * K + i];
      wm.dk[at * K + i] += cw.e[at * K + i];
    }
    const float dc = ws.dlog_alpha[at] + cw.dz[at];
    if (from == ccq_decay_source::given && lane == 0 && dgiven.ptr) dgiven(ci.bt, ci.t0 + r, hv) = from_float<T>(dc);
    if (from == ccq_decay_source::rule_scalar && lane == 0) wm.dlog_alpha[at] += dc;
    if (from == ccq_decay_source::rule_key_mean)  // c_t = (1/K) Σ_i log α_i
      for (index_t i = lane; i < K; i += 32) wm.dlog_alpha_k[at * K + i] += dc / float(K);
  }
}

}  // namespace linea::cuda_detail::bwd
