// linea/backend/cuda/decode_kernel.hpp — the decode step (one token per state row) at memory speed.
//
//   S ← Diag(α) S;   u = w ⊙ v − Sᵀ e;   S ← S + k uᵀ;   o = s Sᵀ q        (SPEC §2, e the erase key)
//
// The step reads and writes the K×V float32 state once and does ~4 flops per element: it is bound by memory
// bandwidth, so the kernel is laid out for the loads. One block of 4 warps per (state row, value head, tile of
// 128 value columns); lane l owns columns 4l..4l+3 (one 16-byte load per key row) and warp w owns key rows
// w, w+4, w+8, ...: each load instruction of a warp reads 512 contiguous bytes, and every state load of the
// thread is issued before the first one is used. The two sums over key rows (Sᵀe and Sᵀq) cross warps
// through shared memory. Strided or unaligned states take the same path with scalar loads.
#pragma once
#include "source.hpp"

namespace linea::cuda_detail {

constexpr int decode_threads = 128, decode_cols = 128;  // 4 warps; 4 columns per lane

// The state tile of one thread: s[r][c] = S(r·4 + warp, j0 + c).
template <int RW>
struct decode_tile {
  float s[RW][4];
};

template <class Rule, class T, int KMAX>
__global__ void __launch_bounds__(decode_threads) decode_kernel(const kernel_args<T> a) {
  using traits = pass_traits<Rule, pass::main>;
  constexpr int NW = decode_threads / 32, RW = KMAX / NW;
  const source<T> src{a};
  const int K = static_cast<int>(a.K), V = static_cast<int>(a.V);
  const index_t hv = blockIdx.y, n = blockIdx.z;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int jb = static_cast<int>(blockIdx.x) * decode_cols, j0 = jb + 4 * lane;
  const seq_range seq = sequence_of(a, n);
  const index_t bt = seq.bt;

  if (seq.row < 0) {  // skipped row: zero output and residual, state untouched (as on the CPU)
    const int j = jb + tid;
    if (j < V) {
      a.o(bt, 0, hv, j) = from_float<T>(0.f);
      if (a.residual.ptr) a.residual(bt, 0, hv, j) = from_float<T>(0.f);
    }
    return;
  }

  __shared__ float qs[KMAX], ks[KMAX], es[KMAX], al[KMAX];
  __shared__ __align__(16) float part_r[NW][decode_cols], part_o[NW][decode_cols];
  __shared__ float red[2][NW], sc[2];

  // ---- 1. the state tile: all loads in flight before any is used -------------------------------------------------
  const float* s0 = a.initial_state.ptr ? a.initial_state.row(seq.row, hv, 0) : nullptr;
  const index_t rs0 = a.initial_state.str[2], cs0 = a.initial_state.str[3];
  const bool vec0 = s0 && cs0 == 1 && rs0 % 4 == 0 && V % 4 == 0 && (reinterpret_cast<std::uintptr_t>(s0) & 15) == 0;
  float s[RW][4];
#pragma unroll
  for (int r = 0; r < RW; ++r) {
    const int i = r * NW + warp;
    if (vec0) {
      float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
      if (i < K && j0 < V) x = __ldcs(reinterpret_cast<const float4*>(s0 + i * rs0 + j0));
      s[r][0] = x.x, s[r][1] = x.y, s[r][2] = x.z, s[r][3] = x.w;
    } else {
#pragma unroll
      for (int c = 0; c < 4; ++c) s[r][c] = (s0 && i < K && j0 + c < V) ? s0[i * rs0 + (j0 + c) * cs0] : 0.f;
    }
  }

  // ---- 2. the token: q, k, gates into shared memory; this lane's v (and w) in registers ----------------------------
  float qq = 0, kk = 0;
  for (int i = tid; i < KMAX; i += decode_threads) {
    float qi = 0, ki = 0, l = 0, bi = 0;
    if (i < K) {
      qi = src.q(bt, 0, hv, i), ki = src.k(bt, 0, hv, i);
      if constexpr (traits::per_key) l = src.gk(bt, 0, hv, i);
      if constexpr (traits::channel_gates) bi = src.b(bt, 0, hv, i);
    }
    qs[i] = qi, ks[i] = ki, al[i] = traits::per_key ? expf(l) : 1.f, es[i] = bi;
    qq += qi * qi, kk += ki * ki;
  }
  float vv[4] = {}, ww[4] = {1.f, 1.f, 1.f, 1.f};
#pragma unroll
  for (int c = 0; c < 4; ++c)
    if (j0 + c < V) {
      vv[c] = src.v(bt, 0, hv, j0 + c);
      if constexpr (traits::channel_gates) ww[c] = src.w(bt, 0, hv, j0 + c);
    }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    qq += __shfl_xor_sync(0xffffffffu, qq, o);
    kk += __shfl_xor_sync(0xffffffffu, kk, o);
  }
  if (lane == 0) red[0][warp] = qq, red[1][warp] = kk;
  if (tid == 0) {
    if constexpr (traits::scalar) sc[0] = expf(src.g(bt, 0, hv));
    if constexpr (traits::uses_beta) sc[1] = src.beta(bt, 0, hv);
  }
  __syncthreads();
  float qsum = 0, ksum = 0;
#pragma unroll
  for (int w = 0; w < NW; ++w) qsum += red[0][w], ksum += red[1][w];
  const float qn = src.q_normalised() ? rsqrtf(qsum + 1e-6f) : 1.f, kn = a.l2k ? rsqrtf(ksum + 1e-6f) : 1.f;
  const float alpha = traits::scalar ? sc[0] : 1.f, beta = traits::uses_beta ? sc[1] : 0.f;

  // ---- 3. decay, then r = Sᵀ e (partial over this warp's rows, summed across warps) ---------------------------------
  float r4[4] = {};
#pragma unroll
  for (int r = 0; r < RW; ++r) {
    const int i = r * NW + warp;
    const float d = traits::per_key ? al[i] : alpha;
    float e = 0;
    if constexpr (traits::channel_gates) e = es[i] * ks[i] * kn;
    else if constexpr (traits::uses_beta) e = beta * ks[i] * kn;
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      if constexpr (traits::per_key || traits::scalar) s[r][c] *= d;
      if constexpr (traits::erases) r4[c] = fmaf(e, s[r][c], r4[c]);
    }
  }
  float u[4];
  if constexpr (traits::erases) {
    *reinterpret_cast<float4*>(&part_r[warp][4 * lane]) = make_float4(r4[0], r4[1], r4[2], r4[3]);
    __syncthreads();
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      float rr = 0;
#pragma unroll
      for (int w = 0; w < NW; ++w) rr += part_r[w][4 * lane + c];
      u[c] = (traits::channel_gates ? ww[c] : beta) * vv[c] - rr;
    }
  } else {
#pragma unroll
    for (int c = 0; c < 4; ++c) u[c] = vv[c];
  }

  // ---- 4. S ← S + k uᵀ, o = Sᵀ q; the state goes back as soon as it is final ---------------------------------------
  float o4[4] = {};
  float* s1 = a.final_state.ptr ? a.final_state.row(seq.row, hv, 0) : nullptr;
  const index_t rs1 = a.final_state.str[2], cs1 = a.final_state.str[3];
  const bool vec1 = s1 && cs1 == 1 && rs1 % 4 == 0 && V % 4 == 0 && (reinterpret_cast<std::uintptr_t>(s1) & 15) == 0;
#pragma unroll
  for (int r = 0; r < RW; ++r) {
    const int i = r * NW + warp;
    const float k = ks[i] * kn, q = qs[i] * qn;
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      s[r][c] = fmaf(k, u[c], s[r][c]);
      o4[c] = fmaf(q, s[r][c], o4[c]);
    }
    if (s1 && i < K) {
      if (vec1) {
        if (j0 < V) __stcs(reinterpret_cast<float4*>(s1 + i * rs1 + j0), make_float4(s[r][0], s[r][1], s[r][2], s[r][3]));
      } else {
#pragma unroll
        for (int c = 0; c < 4; ++c)
          if (j0 + c < V) s1[i * rs1 + (j0 + c) * cs1] = s[r][c];
      }
    }
  }
  *reinterpret_cast<float4*>(&part_o[warp][4 * lane]) = make_float4(o4[0], o4[1], o4[2], o4[3]);
  __syncthreads();
  if (warp == 0) {
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      if (j0 + c >= V) continue;
      float o = 0;
#pragma unroll
      for (int w = 0; w < NW; ++w) o += part_o[w][4 * lane + c];
      a.o(bt, 0, hv, j0 + c) = from_float<T>(o * a.scale);
      if (a.residual.ptr) a.residual(bt, 0, hv, j0 + c) = from_float<T>(u[c]);
    }
  }
}

}  // namespace linea::cuda_detail
