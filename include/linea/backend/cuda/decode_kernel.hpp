// linea/backend/cuda/decode_kernel.hpp — the decode step (one token per state row) at memory speed.
//
//   S ← Diag(α) S;   u = w ⊙ v − Sᵀ e;   S ← S + k uᵀ;   o = s Sᵀ q        (SPEC §2, e the erase key)
//
// The step reads and writes the K×V float32 state once and does ~4 flops per element: it is bound by memory
// bandwidth, so the kernel is laid out for the loads. One block of 4 warps per (state row, value head, tile of
// 32·CPL value columns); lane l owns columns CPL·l .. CPL·l + CPL − 1 (one CPL·4-byte load per key row) and warp w
// owns key rows w, w+4, w+8, ...: each load instruction of a warp reads 32·CPL·4 contiguous bytes, and every
// state load of the thread is issued before the first one is used. The two sums over key rows (Sᵀe and Sᵀq)
// cross warps through shared memory. Strided or unaligned states take the same path with scalar loads.
#pragma once
#include "source.hpp"

namespace linea::cuda_detail {

constexpr int decode_threads = 128;  // 4 warps

// CPL consecutive floats, one access when `vec` (CPL·4-byte aligned, unit stride), else CPL strided accesses.
template <int CPL>
__device__ __forceinline__ void load_cols(const float* p, index_t stride, bool vec, int n, float (&x)[CPL]) {
  if (vec && n >= CPL) {
    if constexpr (CPL == 4) {
      const float4 v = __ldcs(reinterpret_cast<const float4*>(p));
      x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
    } else if constexpr (CPL == 2) {
      const float2 v = __ldcs(reinterpret_cast<const float2*>(p));
      x[0] = v.x, x[1] = v.y;
    } else {
      x[0] = __ldcs(p);
    }
  } else {
#pragma unroll
    for (int c = 0; c < CPL; ++c) x[c] = c < n ? p[c * stride] : 0.f;
  }
}
template <int CPL>
__device__ __forceinline__ void store_cols(float* p, index_t stride, bool vec, int n, const float (&x)[CPL]) {
  if (vec && n >= CPL) {
    if constexpr (CPL == 4) __stcs(reinterpret_cast<float4*>(p), make_float4(x[0], x[1], x[2], x[3]));
    else if constexpr (CPL == 2) __stcs(reinterpret_cast<float2*>(p), make_float2(x[0], x[1]));
    else __stcs(p, x[0]);
  } else {
#pragma unroll
    for (int c = 0; c < CPL; ++c)
      if (c < n) p[c * stride] = x[c];
  }
}

template <class Rule, class T, int KMAX, int CPL, int NW = decode_threads / 32>
__global__ void __launch_bounds__(32 * NW) decode_kernel(const kernel_args<T> a) {
  using traits = pass_traits<Rule, pass::main>;
  static_assert(KMAX % NW == 0, "decode_kernel: every warp owns the same number of key rows");
  constexpr int threads = 32 * NW, RW = KMAX / NW, cols = 32 * CPL;
  const source<T> src{a};
  const int K = static_cast<int>(a.K), V = static_cast<int>(a.V);
  const index_t hv = blockIdx.y, n = blockIdx.z;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int jb = static_cast<int>(blockIdx.x) * cols, j0 = jb + CPL * lane;
  const int nj = V - j0;  // this lane's columns that exist (≥ CPL: all)
  const seq_range seq = sequence_of(a, n);
  const index_t bt = seq.bt;

  if (seq.row < 0) {  // skipped row: zero output and residual, state untouched (as on the CPU)
    for (int j = jb + tid; j < jb + cols && j < V; j += threads) {
      a.o(bt, 0, hv, j) = from_float<T>(0.f);
      if (a.residual.ptr) a.residual(bt, 0, hv, j) = from_float<T>(0.f);
    }
    return;
  }

  __shared__ float qs[KMAX], ks[KMAX], es[KMAX], al[KMAX];
  __shared__ __align__(16) float part_r[NW][cols], part_o[NW][cols];
  __shared__ float red[2][NW];

  // ---- 1. the state tile: all loads in flight before any is used -------------------------------------------------
  const float* s0 = a.initial_state.ptr ? a.initial_state.row(seq.row, hv, 0) : nullptr;
  const index_t rs0 = a.initial_state.str[2], cs0 = a.initial_state.str[3];
  const bool vec0 = cs0 == 1 && rs0 % CPL == 0 && (reinterpret_cast<std::uintptr_t>(s0) & (4 * CPL - 1)) == 0;
  float s[RW][CPL];
#pragma unroll
  for (int r = 0; r < RW; ++r) {
    const int i = r * NW + warp;
#pragma unroll
    for (int c = 0; c < CPL; ++c) s[r][c] = 0.f;
    if (s0 && i < K && nj > 0) load_cols<CPL>(s0 + i * rs0 + j0 * cs0, cs0, vec0, nj, s[r]);
  }

  // ---- 2. the token: q, k, gates into shared memory; this lane's v (and w) in registers ----------------------------
  // Row pointers once: a view's index costs a 64-bit multiply-add per dimension.
  const T* qrow = a.q.row(bt, 0, hv / a.G);
  const T* krow = a.k.row(bt, 0, hv / a.G);
  const float* qtrow = a.q_tilde_in.ptr ? a.q_tilde_in.row(bt, 0, hv) : nullptr;
  // The token's scalar inputs (g, β): every thread loads them (one broadcast load per warp), so each lane's hooks
  // have them without a barrier.
  const token_scalars ts = src.template scalars<Rule::inputs>(bt, 0, hv);
  float qq = 0, kk = 0;
  for (int i = tid; i < KMAX; i += threads) {
    float qi = 0, ki = 0, l = 0, bi = 0;
    if (i < K) {
      qi = qtrow ? qtrow[i * a.q_tilde_in.str[3]] : to_float(qrow[i * a.q.str[3]]);
      ki = to_float(krow[i * a.k.str[3]]);
      if constexpr (traits::per_key) l = src.template log_alpha<Rule>(ts, bt, 0, hv, i);
      if constexpr (traits::erases) bi = src.template erase_gate<Rule>(ts, bt, 0, hv, i);
    }
    qs[i] = qi, ks[i] = ki, al[i] = traits::per_key ? expf(l) : 1.f, es[i] = bi;  // es: the erase gate b_i
    qq += qi * qi, kk += ki * ki;
  }
  float vv[CPL] = {}, ww[CPL];
  {
    const T* vrow = a.v.row(bt, 0, hv);
    const T* wrow = reads(Rule::update::inputs, input::w) ? a.w.row(bt, 0, hv) : nullptr;
#pragma unroll
    for (int c = 0; c < CPL; ++c) {
      ww[c] = 1.f;
      if (c < nj) {
        vv[c] = to_float(vrow[(j0 + c) * a.v.str[3]]);
        lane_token x;  // value lane j0 + c for the write gate's hook (w read through the row pointer)
        x.g = ts.g, x.beta = ts.beta;
        if constexpr (reads(Rule::update::inputs, input::w)) x.w.value = to_float(wrow[(j0 + c) * a.w.str[3]]);
        ww[c] = Rule::update::write_gate(x, j0 + c);
      }
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    qq += __shfl_xor_sync(0xffffffffu, qq, o);
    kk += __shfl_xor_sync(0xffffffffu, kk, o);
  }
  if (lane == 0) red[0][warp] = qq, red[1][warp] = kk;
  __syncthreads();
  float qsum = 0, ksum = 0;
#pragma unroll
  for (int w = 0; w < NW; ++w) qsum += red[0][w], ksum += red[1][w];
  const float qn = src.q_normalised() ? rsqrtf(qsum + 1e-6f) : 1.f, kn = a.l2k ? rsqrtf(ksum + 1e-6f) : 1.f;
  const float alpha = traits::scalar ? expf(src.template log_alpha<Rule>(ts, bt, 0, hv, 0)) : 1.f;

  // ---- 3. decay, then r = Sᵀ e (partial over this warp's rows, summed across warps) ---------------------------------
  float rp[CPL] = {};
#pragma unroll
  for (int r = 0; r < RW; ++r) {
    const int i = r * NW + warp;
    const float d = traits::per_key ? al[i] : alpha;
    float e = 0;
    if constexpr (traits::erases) e = es[i] * ks[i] * kn;  // b_i k_i
#pragma unroll
    for (int c = 0; c < CPL; ++c) {
      if constexpr (traits::per_key || traits::scalar) s[r][c] *= d;
      if constexpr (traits::erases) rp[c] = fmaf(e, s[r][c], rp[c]);
    }
  }
  float u[CPL];
  if constexpr (traits::erases) {
#pragma unroll
    for (int c = 0; c < CPL; ++c) part_r[warp][CPL * lane + c] = rp[c];
    __syncthreads();
#pragma unroll
    for (int c = 0; c < CPL; ++c) {
      float rr = 0;
#pragma unroll
      for (int w = 0; w < NW; ++w) rr += part_r[w][CPL * lane + c];
      u[c] = ww[c] * vv[c] - rr;
    }
  } else {
#pragma unroll
    for (int c = 0; c < CPL; ++c) u[c] = ww[c] * vv[c];
  }

  // ---- 4. S ← S + k uᵀ, o = Sᵀ q; the state goes back as soon as it is final ---------------------------------------
  float op[CPL] = {};
  float* s1 = a.final_state.ptr ? a.final_state.row(seq.row, hv, 0) : nullptr;
  const index_t rs1 = a.final_state.str[2], cs1 = a.final_state.str[3];
  const bool vec1 = cs1 == 1 && rs1 % CPL == 0 && (reinterpret_cast<std::uintptr_t>(s1) & (4 * CPL - 1)) == 0;
#pragma unroll
  for (int r = 0; r < RW; ++r) {
    const int i = r * NW + warp;
    const float k = ks[i] * kn, q = qs[i] * qn;
#pragma unroll
    for (int c = 0; c < CPL; ++c) {
      s[r][c] = fmaf(k, u[c], s[r][c]);
      op[c] = fmaf(q, s[r][c], op[c]);
    }
    if (s1 && i < K && nj > 0) store_cols<CPL>(s1 + i * rs1 + j0 * cs1, cs1, vec1, nj, s[r]);
  }
#pragma unroll
  for (int c = 0; c < CPL; ++c) part_o[warp][CPL * lane + c] = op[c];
  __syncthreads();
  if (warp == 0) {
    T* orow = a.o.row(bt, 0, hv);
    T* rrow = a.residual.ptr ? a.residual.row(bt, 0, hv) : nullptr;
#pragma unroll
    for (int c = 0; c < CPL; ++c) {
      if (c >= nj) continue;
      float o = 0;
#pragma unroll
      for (int w = 0; w < NW; ++w) o += part_o[w][CPL * lane + c];
      orow[(j0 + c) * a.o.str[3]] = from_float<T>(o * a.scale);
      if (rrow) rrow[(j0 + c) * a.residual.str[3]] = from_float<T>(u[c]);
    }
  }
}

}  // namespace linea::cuda_detail
