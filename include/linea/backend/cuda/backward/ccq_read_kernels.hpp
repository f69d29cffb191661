// linea/backend/cuda/backward/ccq_read_kernels.hpp — the CCQ read's own kernels in the CUDA backward (ccq_read.hpp
// runs them around the rule's backward and the statistics pass's). The forward's launch 2 (ccq_kernel.hpp),
//     m_t = a_t m_{t-1} + k̂_t,   z_t = a_t z_{t-1} + 1,   q̃_t = q̂_t − λ_t (Y_t/z_t − m_t (m_tᵀq̂_t)/z_t²),
// is recomputed (scan, tilde) and then run backward (direct, reverse, finish; docs/math/backward.md §4):
//   with dy = −λ dq̃:   dλ = −dq̃·(Y/z − m (m·q̂)/z²),   dY = dy / z  (the statistics pass's d_o),
//                      dq̂ = dq̃ − m (m·dy)/z²  (+ C dY from the statistics pass),
//                      dm_t = −(dy (m·q̂) + (m·dy) q̂)/z²,   dz_t = −dy·Y/z² + 2 (m·dy)(m·q̂)/z³,
//   carried backward:  dL/dm_t = dm_t + a_{t+1} dL/dm_{t+1} (the same for z),  dk̂_t += dL/dm_t,
//                      dc_t = a_t (dL/dz_t z_{t-1} + dL/dm_t·m_{t-1}) + the statistics pass's d log α_t,
//   and dm_0, dz_0 what is carried past the first token.
// Per (chunk, value head) kernels take a warp per token; the two scans take a thread per key channel.
#pragma once
#include "inputs_kernel.hpp"

namespace linea::cuda_detail::bwd {

// Where c_t (the statistics' log decay) comes from.
enum class ccq_decay_source : int { none, given, rule_scalar, rule_key_mean };

// The CCQ read's float32 tensors ("token" as in work.hpp). The statistics pass's own work holds kv (its values),
// y (its d_o) and c (its log decay); the rest lies past both works in the workspace.
struct ccq_work {
  index_t T = 0, H = 0, HV = 0, K = 0, G = 1;
  const chunk_info* chunk = nullptr;
  const seq_chunks* seqs = nullptr;
  const float *qhat = nullptr, *khat = nullptr;  // [tokens, H, K] (the rule's work: q̂, k̂)
  float* kv;   // [tokens, HV, K]  k̂ per value head: the statistics' values and the rule's keys with q̃
  float* c;    // [tokens, HV]     c_t
  float* y;    // [tokens, HV, K]  Y_t = C_t q̂_t, then dL/dY_t
  float* qt;   // [tokens, HV, K]  q̃_t
  float* m;    // [tokens, HV, K]  m_t
  float* z;    // [tokens, HV]     z_t
  float* dm;   // [tokens, HV, K]  dm_t, then dL/dm_t
  float* dz;   // [tokens, HV]     dz_t, then dL/dz_t
  float* dkv;  // [tokens, HV, K]  the statistics pass's dv (k̂ as its value)

  __host__ __device__ index_t token(index_t bt, index_t t) const { return bt * T + t; }
  __host__ __device__ std::size_t row(index_t tok, index_t hv) const { return std::size_t(tok * HV + hv); }
};

// c_t per token and value head; k̂ copied per value head.
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
    const float* k = cw.khat + (tok * cw.H + h) * K;
    float* kv = cw.kv + cw.row(tok, hv) * K;
    float sum = 0;
    for (index_t i = lane; i < K; i += 32) {
      kv[i] = k[i];
      if (from == ccq_decay_source::rule_key_mean) sum += log_alpha_k[cw.row(tok, hv) * K + i];
    }
    sum = warp_sum(sum);
    if (lane == 0) {
      float x = 0;
      if (from == ccq_decay_source::given) x = to_float(given(ci.bt, ci.t0 + r, hv));
      if (from == ccq_decay_source::rule_scalar) x = log_alpha[cw.row(tok, hv)];
      if (from == ccq_decay_source::rule_key_mean) x = sum / float(K);  // as the forward: the mean over K
      cw.c[cw.row(tok, hv)] = x;
    }
  }
}

// m_t, z_t of every token: one CTA per (value head, sequence), a thread per key channel.
template <class = void>
__global__ void __launch_bounds__(max_kv) ccq_scan_kernel(const ccq_work cw, const view<const float, 3> m0,
                                                          const view<const float, 2> z0) {
  const index_t hv = blockIdx.x, n = blockIdx.y, h = hv / cw.G, K = cw.K, i = threadIdx.x;
  const bool on = i < K;
  float m = on && m0.ptr ? m0(n, hv, i) : 0.f;
  float z = z0.ptr ? z0(n, hv) : 0.f;
  const seq_chunks sc = cw.seqs[n];
  for (index_t c = sc.first; c < sc.first + sc.count; ++c) {
    const chunk_info ci = cw.chunk[c];
    const index_t tok0 = cw.token(ci.bt, ci.t0);
    for (int r = 0; r < ci.len; ++r) {
      const index_t tok = tok0 + r;
      const float a = expf(cw.c[cw.row(tok, hv)]);
      z = a * z + 1.f;
      if (on) {
        m = a * m + cw.khat[(tok * cw.H + h) * K + i];
        cw.m[cw.row(tok, hv) * K + i] = m;
      }
      if (i == 0) cw.z[cw.row(tok, hv)] = z;
    }
  }
}

// Y = C q̂ from the statistics pass's states (h_c: C before the chunk) and factors (G, P), then q̃.
//   Y_r = exp(G_r) h_cᵀ q̂_r + Σ_{s≤r} P_rs k̂_s      (C symmetric: Y = C q̂)
template <class T>
__global__ void __launch_bounds__(threads) ccq_tilde_kernel(const ccq_work cw, const work ws, const view<const T, 3> lambda) {
  const index_t c = blockIdx.x, hv = blockIdx.y, h = hv / cw.G;
  const int K = int(cw.K), tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
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
    for (int s = 0; s <= r; ++s) acc = fmaf(P[r * CL + s], cw.kv[cw.row(tok0 + s, hv) * K + j], acc);
    cw.y[cw.row(tok0 + r, hv) * K + j] = acc;
  }
  __syncthreads();  // (y of this chunk, written above, is read back by other threads)
  for (int r = warp; r < L; r += threads / 32) {
    const std::size_t at = cw.row(tok0 + r, hv);
    const float* m = cw.m + at * K;
    float mq = 0;
    for (int i = lane; i < K; i += 32) mq += m[i] * sQ[r * K + i];
    mq = warp_sum(mq);
    const float iz = 1.f / cw.z[at], lam = to_float(lambda(ci.bt, ci.t0 + r, hv));
    for (int i = lane; i < K; i += 32)
      cw.qt[at * K + i] = sQ[r * K + i] - lam * (cw.y[at * K + i] * iz - m[i] * mq * iz * iz);
  }
}

// The direct adjoints of q̃_t (header formulas): dλ; dY over y; dq̂'s direct part over dq (which holds dq̃); dm_t, dz_t.
template <class T>
__global__ void __launch_bounds__(threads) ccq_direct_kernel(const ccq_work cw, float* dq, const view<const T, 3> lambda,
                                                             const view<T, 3> dlambda) {
  const index_t c = blockIdx.x, hv = blockIdx.y, h = hv / cw.G, K = cw.K;
  const chunk_info ci = cw.chunk[c];
  const index_t tok0 = cw.token(ci.bt, ci.t0);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  for (int r = warp; r < ci.len; r += threads / 32) {
    const index_t tok = tok0 + r;
    const std::size_t at = cw.row(tok, hv);
    const float *q = cw.qhat + (tok * cw.H + h) * K, *m = cw.m + at * K;
    float *y = cw.y + at * K, *dqt = dq + at * K, *dm = cw.dm + at * K;
    float mq = 0, mdq = 0, ydq = 0;  // m·q̂, m·dq̃, Y·dq̃
    for (index_t i = lane; i < K; i += 32) mq += m[i] * q[i], mdq += m[i] * dqt[i], ydq += y[i] * dqt[i];
    mq = warp_sum(mq), mdq = warp_sum(mdq), ydq = warp_sum(ydq);
    const float iz = 1.f / cw.z[at], lam = to_float(lambda(ci.bt, ci.t0 + r, hv)), iz2 = iz * iz;
    if (lane == 0) {
      if (dlambda.ptr) dlambda(ci.bt, ci.t0 + r, hv) = from_float<T>(-(ydq * iz - mdq * mq * iz2));
      cw.dz[at] = lam * ydq * iz2 - 2.f * lam * mdq * mq * iz2 * iz;
    }
    for (index_t i = lane; i < K; i += 32) {
      const float d = dqt[i];
      y[i] = -lam * d * iz;
      dqt[i] = d + lam * mdq * m[i] * iz2;
      dm[i] = lam * (d * mq + mdq * q[i]) * iz2;
    }
  }
}

// dL/dm_t and dL/dz_t carried backward over each sequence (in place), and dm_0, dz_0.
template <class = void>
__global__ void __launch_bounds__(max_kv) ccq_reverse_kernel(const ccq_work cw, const view<float, 3> dm0,
                                                             const view<float, 2> dz0) {
  const index_t hv = blockIdx.x, n = blockIdx.y, K = cw.K, i = threadIdx.x;
  const bool on = i < K;
  float dm = 0, dz = 0;
  const seq_chunks sc = cw.seqs[n];
  for (index_t c = sc.first + sc.count - 1; c >= sc.first; --c) {
    const chunk_info ci = cw.chunk[c];
    const index_t tok0 = cw.token(ci.bt, ci.t0);
    for (int r = ci.len - 1; r >= 0; --r) {
      const std::size_t at = cw.row(tok0 + r, hv);
      const float a = expf(cw.c[at]);
      if (on) {
        dm += cw.dm[at * K + i];
        cw.dm[at * K + i] = dm;
        dm *= a;
      }
      if (i == 0) {
        dz += cw.dz[at];
        cw.dz[at] = dz;
      }
      dz *= a;
    }
  }
  if (on && dm0.ptr) dm0(n, hv, i) = dm;
  if (i == 0 && dz0.ptr) dz0(n, hv) = dz;
}

// The sums into the rule's work: dq̂ += the statistics pass's dq (C dY); dk̂ += its dk and dv (k̂ as key and as
// value) and dL/dm_t; dc_t to ccq.log_decay's gradient or to the rule's log decay (its default).
template <class T>
__global__ void __launch_bounds__(threads) ccq_finish_kernel(const ccq_work cw, const work wm, const work ws,
                                                             const view<const float, 3> m0, const view<const float, 2> z0,
                                                             const ccq_decay_source from, const view<T, 3> dgiven) {
  const index_t c = blockIdx.x, hv = blockIdx.y, K = cw.K;
  const chunk_info ci = cw.chunk[c];
  const index_t tok0 = cw.token(ci.bt, ci.t0);
  const bool first_chunk = c == cw.seqs[ci.seq].first;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  for (int r = warp; r < ci.len; r += threads / 32) {
    const index_t tok = tok0 + r;
    const std::size_t at = cw.row(tok, hv);
    const bool first = first_chunk && r == 0;  // m_{t-1}, z_{t-1}: the initial statistics
    const float* m_prev = first ? nullptr : cw.m + cw.row(tok - 1, hv) * K;
    const float z_prev = first ? (z0.ptr ? z0(ci.seq, hv) : 0.f) : cw.z[cw.row(tok - 1, hv)];
    float dm_m = 0;
    for (index_t i = lane; i < K; i += 32) {
      const float dm = cw.dm[at * K + i];
      dm_m += dm * (first ? (m0.ptr ? m0(ci.seq, hv, i) : 0.f) : m_prev[i]);
      wm.dq[at * K + i] += ws.dq[at * K + i];
      wm.dk[at * K + i] += ws.dk[at * K + i] + cw.dkv[at * K + i] + dm;
    }
    dm_m = warp_sum(dm_m);
    const float dc = ws.dlog_alpha[at] + expf(cw.c[at]) * (cw.dz[at] * z_prev + dm_m);
    if (from == ccq_decay_source::given && lane == 0 && dgiven.ptr) dgiven(ci.bt, ci.t0 + r, hv) = from_float<T>(dc);
    if (from == ccq_decay_source::rule_scalar && lane == 0) wm.dlog_alpha[at] += dc;
    if (from == ccq_decay_source::rule_key_mean)  // c_t = (1/K) Σ_i log α_i
      for (index_t i = lane; i < K; i += 32) wm.dlog_alpha_k[at * K + i] += dc / float(K);
  }
}

}  // namespace linea::cuda_detail::bwd
