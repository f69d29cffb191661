// linea/backend/cuda/decode_kernel.hpp — the decode step (one token per state row) at memory speed.
//
//   S ← Diag(α) S;   u = w ⊙ v − Sᵀ e;   S ← S + k uᵀ;   o = s Sᵀ q        (SPEC §2, e the erase key)
//
// The step reads and writes the K×V float32 state once and does ~4 flops per element: it is bound by memory
// bandwidth, so the kernel is laid out for the loads. One block of 4 warps per (state row, value head, tile of
// 32·CPL value columns); lane l owns columns CPL·l .. CPL·l + CPL − 1 (one CPL·4-byte load per key row) and warp w
// owns key rows w, w+4, w+8, ...: each load instruction of a warp reads 32·CPL·4 contiguous bytes, and every
// state load of the thread is issued before the first one is used — back to back when the tile is whole (every key
// row exists, one vector access a row: ~3 instructions a load instead of ~25, which took Gated DeltaNet through a
// permuted pool from 0.83 to 0.86 of copy bandwidth; bench/cuda/README.md, dec6). The two sums over key rows (Sᵀe and
// Sᵀq) cross warps through shared memory. Strided or unaligned states take the same path with scalar loads.
// decode_order.hpp chooses which batch row a block serves.
#pragma once
#include <type_traits>

#include "decode_order.hpp"
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

// The state tile of one block: lane l's CPL columns of key rows warp, warp + NW, ... — every load issued before
// any is used. Zero where the row has no initial state. A whole tile (every key row exists and is one vector access:
// the common case) goes out back to back, each address one add from the last; otherwise each row computes its
// address and checks its bounds (~25 instructions a row).
template <int KMAX, int CPL, int NW, class T>
__device__ __forceinline__ void load_state_tile(const kernel_args<T>& a, index_t row, index_t hv, int warp, int j0,
                                                int nj, float (&s)[KMAX / NW][CPL]) {
  const float* s0 = a.initial_state.ptr ? a.initial_state.row(row, hv, 0) : nullptr;
  const index_t rs0 = a.initial_state.str[2], cs0 = a.initial_state.str[3];
  const bool vec0 = cs0 == 1 && rs0 % CPL == 0 && (reinterpret_cast<std::uintptr_t>(s0) & (4 * CPL - 1)) == 0;
  const int K = static_cast<int>(a.K);
  if (s0 && vec0 && K == KMAX && nj >= CPL) {
    const float* p = s0 + warp * rs0 + j0;
    const index_t step = NW * rs0;
#pragma unroll
    for (int r = 0; r < KMAX / NW; ++r, p += step) load_cols<CPL>(p, 1, true, CPL, s[r]);
    return;
  }
#pragma unroll
  for (int r = 0; r < KMAX / NW; ++r) {
    const int i = r * NW + warp;
#pragma unroll
    for (int c = 0; c < CPL; ++c) s[r][c] = 0.f;
    if (s0 && i < K && nj > 0) load_cols<CPL>(s0 + i * rs0 + j0 * cs0, cs0, vec0, nj, s[r]);
  }
}

// This lane's values v_j and write gates w_j (1 where the column does not exist).
template <class Rule, int CPL, class T>
__device__ __forceinline__ void load_values(const kernel_args<T>& a, const token_scalars& ts, index_t bt, index_t hv,
                                            int j0, int nj, float (&vv)[CPL], float (&ww)[CPL]) {
  const T* vrow = a.v.row(bt, 0, hv);
  const T* wrow = reads(Rule::update::inputs, input::w) ? a.w.row(bt, 0, hv) : nullptr;
#pragma unroll
  for (int c = 0; c < CPL; ++c) {
    vv[c] = 0.f, ww[c] = 1.f;
    if (c < nj) {
      vv[c] = to_float(vrow[(j0 + c) * a.v.str[3]]);
      lane_token x;  // value lane j0 + c for the write gate's hook (w read through the row pointer)
      x.g = ts.g, x.beta = ts.beta;
      if constexpr (reads(Rule::update::inputs, input::w)) x.w.value = to_float(wrow[(j0 + c) * a.w.str[3]]);
      ww[c] = Rule::update::write_gate(x, j0 + c);
    }
  }
}

// Zero output and residual for a row whose state index is -1 (state untouched, as on the CPU).
template <int cols, int threads, class T>
__device__ __forceinline__ void skip_row(const kernel_args<T>& a, index_t bt, index_t hv, int jb, int tid) {
  const int V = static_cast<int>(a.V);
  for (int j = jb + tid; j < jb + cols && j < V; j += threads) {
    a.o(bt, 0, hv, j) = from_float<T>(0.f);
    if (a.residual.ptr) a.residual(bt, 0, hv, j) = from_float<T>(0.f);
  }
}

// Warp 0 sums the warps' partial outputs, o_j = scale · f · Σ_w part_o[w][j], and writes o (and the residual u).
template <int CPL, int NW, int cols, class T>
__device__ __forceinline__ void write_outputs(const kernel_args<T>& a, index_t bt, index_t hv, int lane, int j0, int nj,
                                              const float (&part_o)[NW][cols], const float (&u)[CPL], float f) {
  T* orow = a.o.row(bt, 0, hv);
  T* rrow = a.residual.ptr ? a.residual.row(bt, 0, hv) : nullptr;
#pragma unroll
  for (int c = 0; c < CPL; ++c) {
    if (c >= nj) continue;
    float o = 0;
#pragma unroll
    for (int w = 0; w < NW; ++w) o += part_o[w][CPL * lane + c];
    orow[(j0 + c) * a.o.str[3]] = from_float<T>(o * f);
    if (rrow) rrow[(j0 + c) * a.residual.str[3]] = from_float<T>(u[c]);
  }
}

// Lean (one barrier fewer for the erasing rules): the token's key vectors are not staged in shared memory; lane r
// of warp w holds key row r·NW + w (q, k, the erase gate, the per-key decay) and the warp broadcasts them by
// shuffles. The erase sum Sᵀ(b ⊙ k) is formed with the unnormalised k and scaled by ‖k‖⁻¹ after the one barrier
// that also crosses the norms' sums; the q norm scales the output sum. So a block has two barriers, the erase
// sum's and the output's, whatever the rule (three before for the erasing rules). MinBlocks: blocks an SM must hold
// (registers capped to fit them; the more bytes in flight, the closer to copy bandwidth).
template <class Rule, class T, int KMAX, int CPL, int NW = decode_threads / 32, bool Lean = false, int MinBlocks = 1,
          decode_walk Walk = decode_walk::pool>
__global__ void __launch_bounds__(32 * NW, MinBlocks) decode_kernel(const kernel_args<T> a) {
  using traits = pass_traits<Rule, pass::main>;
  static_assert(KMAX % NW == 0, "decode_kernel: every warp owns the same number of key rows");
  constexpr int threads = 32 * NW, RW = KMAX / NW, cols = 32 * CPL;
  static_assert(!Lean || RW <= 32, "decode_kernel: a lean warp's lanes hold its key rows");
  const source<T> src{a};
  const int K = static_cast<int>(a.K), V = static_cast<int>(a.V);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const index_t hv = blockIdx.y;
  index_t n = blockIdx.z;
  if constexpr (Walk == decode_walk::pool) {
    __shared__ pool_walk_shared<NW> walk;
    if (a.state_indices) n = pool_order_row<NW>(a.state_indices, a.N, static_cast<int>(gridDim.z), static_cast<int>(n), tid, walk);
  }
  const int jb = static_cast<int>(blockIdx.x) * cols, j0 = jb + CPL * lane;
  const int nj = V - j0;  // this lane's columns that exist (≥ CPL: all)
  const seq_range seq = sequence_of(a, n);
  const index_t bt = seq.bt;
  if (seq.row < 0) return skip_row<cols, threads>(a, bt, hv, jb, tid);

  __shared__ float qs[Lean ? 1 : KMAX], ks[Lean ? 1 : KMAX], es[Lean ? 1 : KMAX], al[Lean ? 1 : KMAX];
  __shared__ __align__(16) float part_r[NW][cols], part_o[NW][cols];
  __shared__ float red[2][NW];

  // ---- 1. the state tile: all loads in flight before any is used -------------------------------------------------
  float s[RW][CPL];
  load_state_tile<KMAX, CPL, NW>(a, seq.row, hv, warp, j0, nj, s);

  // ---- 2. the token: q, k, gates (shared memory, or a lane per key row); this lane's v (and w) in registers ---------
  // Row pointers once: a view's index costs a 64-bit multiply-add per dimension.
  const T* qrow = a.q.row(bt, 0, hv / a.G);
  const T* krow = a.k.row(bt, 0, hv / a.G);
  const float* qtrow = a.q_tilde_in.ptr ? a.q_tilde_in.row(bt, 0, hv) : nullptr;
  // The token's scalar inputs (g, β): every thread loads them (one broadcast load per warp), so each lane's hooks
  // have them without a barrier.
  const token_scalars ts = src.template scalars<Rule::inputs>(bt, 0, hv);
  auto key_row = [&](int i, float& qi, float& ki, float& li, float& bi) {  // key row i < K of the token
    qi = qtrow ? qtrow[i * a.q_tilde_in.str[3]] : to_float(qrow[i * a.q.str[3]]);
    ki = to_float(krow[i * a.k.str[3]]);
    if constexpr (traits::per_key) li = src.template log_alpha<Rule>(ts, bt, 0, hv, i);
    if constexpr (traits::erases) bi = src.template erase_gate<Rule>(ts, bt, 0, hv, i);
  };
  float qq = 0, kk = 0;
  float lq = 0, lk = 0, la = 1, le = 0;  // Lean: this lane's key row lane·NW + warp (q, k, α_i, b_i k_i)
  if constexpr (Lean) {
    const int i = lane * NW + warp;
    if (lane < RW && i < K) {
      float li = 0, bi = 0;
      key_row(i, lq, lk, li, bi);
      la = traits::per_key ? expf(li) : 1.f, le = bi * lk;
    }
    qq = lq * lq, kk = lk * lk;
  } else {
    for (int i = tid; i < KMAX; i += threads) {
      float qi = 0, ki = 0, li = 0, bi = 0;
      if (i < K) key_row(i, qi, ki, li, bi);
      qs[i] = qi, ks[i] = ki, al[i] = traits::per_key ? expf(li) : 1.f, es[i] = bi;  // es: the erase gate b_i
      qq += qi * qi, kk += ki * ki;
    }
  }
  float vv[CPL], ww[CPL];
  load_values<Rule, CPL>(a, ts, bt, hv, j0, nj, vv, ww);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    qq += __shfl_xor_sync(0xffffffffu, qq, o);
    kk += __shfl_xor_sync(0xffffffffu, kk, o);
  }
  if (lane == 0) red[0][warp] = qq, red[1][warp] = kk;
  const float alpha = traits::scalar ? expf(src.template log_alpha<Rule>(ts, bt, 0, hv, 0)) : 1.f;
  auto norms = [&](float& qn, float& kn) {  // after a barrier: ‖q‖⁻¹, ‖k‖⁻¹ where asked for, else 1
    float qsum = 0, ksum = 0;
#pragma unroll
    for (int w = 0; w < NW; ++w) qsum += red[0][w], ksum += red[1][w];
    qn = src.q_normalised() ? rsqrtf(qsum + 1e-6f) : 1.f, kn = a.l2k ? rsqrtf(ksum + 1e-6f) : 1.f;
  };
  float qn = 1, kn = 1;
  if constexpr (!Lean) {
    __syncthreads();
    norms(qn, kn);
  }

  // ---- 3. decay, then r = Sᵀ e (partial over this warp's rows, summed across warps) ---------------------------------
  float rp[CPL] = {};
#pragma unroll
  for (int r = 0; r < RW; ++r) {
    const int i = r * NW + warp;
    float d = alpha, e = 0;
    if constexpr (Lean) {
      if constexpr (traits::per_key) d = __shfl_sync(0xffffffffu, la, r);
      if constexpr (traits::erases) e = __shfl_sync(0xffffffffu, le, r);  // b_i k_i; ‖k‖⁻¹ after the barrier
    } else {
      if constexpr (traits::per_key) d = al[i];
      if constexpr (traits::erases) e = es[i] * ks[i] * kn;  // b_i k̂_i
    }
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
  }
  if (Lean || traits::erases) __syncthreads();
  if constexpr (Lean) norms(qn, kn);
#pragma unroll
  for (int c = 0; c < CPL; ++c) {
    float rr = 0;
    if constexpr (traits::erases) {
#pragma unroll
      for (int w = 0; w < NW; ++w) rr += part_r[w][CPL * lane + c];
      if constexpr (Lean) rr *= kn;
    }
    u[c] = ww[c] * vv[c] - rr;
  }

  // ---- 4. S ← S + k uᵀ, o = Sᵀ q; the state goes back as soon as it is final ---------------------------------------
  float op[CPL] = {};
  float* s1 = a.final_state.ptr ? a.final_state.row(seq.row, hv, 0) : nullptr;
  const index_t rs1 = a.final_state.str[2], cs1 = a.final_state.str[3];
  const bool vec1 = cs1 == 1 && rs1 % CPL == 0 && (reinterpret_cast<std::uintptr_t>(s1) & (4 * CPL - 1)) == 0;
  auto update_rows = [&](auto whole) {  // whole: every key row exists and is one vector store (as load_state_tile)
    float* p1 = decltype(whole)::value ? s1 + warp * rs1 + j0 : nullptr;
    const index_t step1 = NW * rs1;
#pragma unroll
    for (int r = 0; r < RW; ++r) {
      const int i = r * NW + warp;
      float k, q;
      if constexpr (Lean) k = __shfl_sync(0xffffffffu, lk, r) * kn, q = __shfl_sync(0xffffffffu, lq, r);
      else k = ks[i] * kn, q = qs[i] * qn;
#pragma unroll
      for (int c = 0; c < CPL; ++c) {
        s[r][c] = fmaf(k, u[c], s[r][c]);
        op[c] = fmaf(q, s[r][c], op[c]);
      }
      if constexpr (decltype(whole)::value) store_cols<CPL>(p1, 1, true, CPL, s[r]), p1 += step1;
      else if (s1 && i < K && nj > 0) store_cols<CPL>(s1 + i * rs1 + j0 * cs1, cs1, vec1, nj, s[r]);
    }
  };
  if (s1 && vec1 && K == KMAX && nj >= CPL) update_rows(std::true_type{});
  else update_rows(std::false_type{});
#pragma unroll
  for (int c = 0; c < CPL; ++c) part_o[warp][CPL * lane + c] = op[c];
  __syncthreads();
  if (warp == 0) write_outputs<CPL, NW, cols>(a, bt, hv, lane, j0, nj, part_o, u, a.scale * (Lean ? qn : 1.f));
}

}  // namespace linea::cuda_detail
