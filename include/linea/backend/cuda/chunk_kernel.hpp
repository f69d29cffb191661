// linea/backend/cuda/chunk_kernel.hpp — the chunkwise forward (SPEC §4) on tensor cores.
//
// One CTA per (sequence, value head), 8 warps; the K×V state lives in registers for the whole sequence (fp32
// mma accumulators: warp w owns key rows 16w..16w+15), and each chunk of CL = 32 tokens runs five phases:
//   0. stage:  S (transposed, as the operand type E) and the chunk's q̂, k̂, erase keys, w⊙v into shared memory,
//              from a staging buffer that cp.async filled during the previous chunk
//   1. G:      in-chunk cumulative log decays (scalar or per key channel), K_d = K ⊙ exp(G_C − G), X = bK ⊙ Γ
//   2. P = (Q Kᵀ ⊙ decay) masked s ≤ r;  A = (bK Kᵀ ⊙ decay) strictly lower;  Z = W_v − X S
//   3. U = (I + A)⁻¹ Z by forward substitution, a thread per value column (the delta family's solve, on-chip);
//      meanwhile the other warps scale Q ← Q ⊙ Γ
//   4. O = s[(Q ⊙ Γ) S + P U] to memory;  S ← Diag(Γ_C) S + K_dᵀ U in registers
// All products are C = A·Btᵀ with both operands row-major along the contracted index (mma_rows: ldmatrix +
// mma.sync for bf16 / fp16, the same tiles in fp32 FMAs for float inputs).
// Per-key decays never form exp(−G): off-diagonal 16-row sub-blocks go through the row before the sub-block
// (both factors ≤ 1), diagonal sub-blocks are summed in log space (secondary chunking, SPEC §4).
#pragma once
#include "mma.hpp"
#include "source.hpp"

namespace linea::cuda_detail {

constexpr int chunk_threads = 256, chunk_kp = 128, chunk_vp = 128;  // K and V are padded to 128

template <class Rule, class T, class E, pass P>
struct chunk_shape {
  using traits = pass_traits<Rule, P>;
  static constexpr int CL = 32;                                  // tokens per chunk
  static constexpr int PE = 16 / static_cast<int>(sizeof(E));   // row padding: 16 bytes (ldmatrix, banks)
  static constexpr int LDK = chunk_kp + PE, LDC = CL + PE, LDZ = chunk_vp + 1, LDM = CL + 1;
  // The raw chunk is staged asynchronously (cp.async) for 16-bit inputs; float inputs load it directly.
  static constexpr bool async = sizeof(T) == 2;
  static constexpr int staged = async ? 3 + (traits::per_key ? 1 : 0) + (traits::channel_gates ? 2 : 0) : 0;
  // shared memory, in bytes, in the order the kernel carves it
  static constexpr std::size_t e_tiles = sizeof(E) * (std::size_t(chunk_vp) * LDK     // SopT
                                                      + 4 * std::size_t(CL) * LDK     // Qs, Ks, EK, XG
                                                      + std::size_t(chunk_kp) * LDC   // KdT
                                                      + std::size_t(chunk_vp) * LDC   // UsT
                                                      + std::size_t(CL) * LDC);       // Pe
  static constexpr std::size_t f_tiles = sizeof(float) * (std::size_t(CL) * LDZ + std::size_t(CL) * LDM +
                                                          (traits::per_key ? std::size_t(CL) * chunk_kp : 0) +
                                                          4 * CL + chunk_kp);
  static constexpr std::size_t stage_bytes = sizeof(T) * std::size_t(staged) * CL * chunk_kp;
  static constexpr std::size_t bytes = e_tiles + f_tiles + stage_bytes;
};

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const std::uint32_t s = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::); }

template <class Rule, class T, class E, pass P>
__global__ void __launch_bounds__(chunk_threads, 1) chunk_kernel(const kernel_args<T> a) {
  using traits = pass_traits<Rule, P>;
  using shape = chunk_shape<Rule, T, E, P>;
  constexpr int CL = shape::CL, KP = chunk_kp, VP = chunk_vp, LDK = shape::LDK, LDC = shape::LDC;
  constexpr int LDZ = shape::LDZ, LDM = shape::LDM, NW = chunk_threads / 32;
  const source<T> src{a};
  const index_t K = a.K, Vd = traits::stats ? a.K : a.V;
  const index_t hv = blockIdx.x, n = blockIdx.y;
  const seq_range seq = sequence_of(a, n);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;

  extern __shared__ __align__(16) unsigned char smem_raw[];
  E* SopT = reinterpret_cast<E*>(smem_raw);  // Sᵀ [VP][LDK]
  E* Qs = SopT + VP * LDK;                   // q̂, then q̂ ⊙ Γ [CL][LDK]
  E* Ks = Qs + CL * LDK;                     // k̂ [CL][LDK]
  E* EK = Ks + CL * LDK;                     // erase key β k̂ or b ⊙ k̂ [CL][LDK]
  E* XG = EK + CL * LDK;                     // erase key ⊙ Γ (per-key decays) [CL][LDK]
  E* KdT = XG + CL * LDK;                    // (K ⊙ exp(G_C − G))ᵀ [KP][LDC]
  E* UsT = KdT + KP * LDC;                   // w ⊙ v, then U, transposed [VP][LDC]
  E* Pe = UsT + VP * LDC;                    // P [CL][LDC]
  float* Zs = reinterpret_cast<float*>(Pe + CL * LDC);  // Z [CL][LDZ]
  float* Ms = Zs + CL * LDZ;                            // A [CL][LDM]
  float* Gs = Ms + CL * LDM;                            // per-key log decays, cumulated [CL][KP]
  float* gsc = Gs + (traits::per_key ? CL * KP : 0);    // scalar log decays, cumulated [CL]
  float* bet = gsc + CL;                                // β [CL]
  float* qz = bet + CL;                                 // normaliser per row [2·CL]
  float* zsum = qz + 2 * CL;                            // Σ k so far (normalize) [KP]
  T* stage = reinterpret_cast<T*>(zsum + KP);           // raw q, k, v (, gk) (, b, w) [staged][CL][KP]

  auto G = [&](int r, int d) -> float {
    if constexpr (traits::per_key) return Gs[r * KP + d];
    else if constexpr (traits::scalar) return gsc[r];
    else return 0.f;
  };
  auto f = [](E x) { return to_float(x); };
  auto ex = [](float x) {  // accurate exp for float32 inputs (SPEC §5: 1e-5), the fast one for 16-bit operands
    if constexpr (std::is_same_v<E, float>) return expf(x);
    else return __expf(x);
  };

  // ---- prefetch: the raw tiles of the chunk at c0 into `stage`, and its per-row scalars into registers ------------
  // Thread r < CL keeps row r's scalar gate and beta (pre_g, pre_b) until the chunk is staged.
  float pre_g = 0, pre_b = 0;
  auto prefetch = [&](index_t c0) {
    const int L = static_cast<int>(seq.t1 - c0 < CL ? seq.t1 - c0 : index_t(CL));
    if (tid < L) {
      const index_t t = c0 + tid;
      if constexpr (traits::stats) {
        float rule = 0;
        if constexpr (Rule::decay::scalar_gate) rule = src.g(seq.bt, t, hv);
        pre_g = rule;  // mean of gk is added at staging (needs the row)
        if constexpr (!Rule::decay::key_gate) pre_g = src.stats_log_decay(seq.bt, t, hv, rule);
      } else if constexpr (traits::scalar) {
        pre_g = src.g(seq.bt, t, hv);
      }
      if constexpr (traits::uses_beta) pre_b = src.beta(seq.bt, t, hv);
    }
    if constexpr (shape::async) {
      constexpr int per_row = KP * static_cast<int>(sizeof(T)) / 16;  // 16-byte pieces of a padded row
      for (int x = tid; x < shape::staged * CL * per_row; x += chunk_threads) {
        const int tile = x / (CL * per_row), r = (x / per_row) % CL, piece = x % per_row;
        const int i0 = piece * (16 / static_cast<int>(sizeof(T)));
        T* dst = stage + (tile * CL + r) * KP + i0;
        const index_t t = c0 + r;
        const index_t width = (tile == 2 || tile == 5) && !traits::stats ? Vd : K;  // v and w have V columns
        const T* row = nullptr;
        index_t inner = 1;
        if (r < L && i0 < width) {
          switch (tile) {
            case 0: row = a.q_tilde_in.ptr ? nullptr : a.q.row(seq.bt, t, hv / a.G), inner = a.q.str[3]; break;
            case 1: row = a.k.row(seq.bt, t, hv / a.G), inner = a.k.str[3]; break;
            case 2:
              if constexpr (traits::stats) row = nullptr;
              else row = a.v.row(seq.bt, t, hv), inner = a.v.str[3];
              break;
            case 3:
              if constexpr (traits::per_key) row = a.gk.row(seq.bt, t, hv), inner = a.gk.str[3];
              else if constexpr (traits::channel_gates) row = a.b.row(seq.bt, t, hv), inner = a.b.str[3];
              break;
            case 4: if constexpr (traits::channel_gates) row = a.b.row(seq.bt, t, hv), inner = a.b.str[3]; break;
            default: if constexpr (traits::channel_gates) row = a.w.row(seq.bt, t, hv), inner = a.w.str[3]; break;
          }
        }
        const bool fast = row && inner == 1 && i0 + 16 / static_cast<index_t>(sizeof(T)) <= width &&
                          (reinterpret_cast<std::uintptr_t>(row + i0) & 15) == 0;
        if (fast) {
          cp_async16(dst, row + i0);
        } else {
          for (int e = 0; e < 16 / static_cast<int>(sizeof(T)); ++e)
            dst[e] = (row && i0 + e < width) ? row[(i0 + e) * inner] : from_float<T>(0.f);
        }
      }
    }
  };

  // ---- the state, in registers: acc[nt][e] = S(16 warp + acc_row(e), 8 nt + acc_col(e)) --------------------------
  float acc[VP / 8][4];
  {
    const view<const float, 4>& s0 = traits::stats ? a.C0 : a.initial_state;
#pragma unroll
    for (int nt = 0; nt < VP / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const index_t i = 16 * warp + acc_row(e), j = 8 * nt + acc_col(e);
        acc[nt][e] = (s0.ptr && i < K && j < Vd) ? s0(seq.row, hv, i, j) : 0.f;
      }
  }
  for (int d = tid; d < KP; d += chunk_threads) zsum[d] = 0.f;
  if (seq.t0 < seq.t1) prefetch(seq.t0);

  for (index_t c0 = seq.t0; c0 < seq.t1; c0 += CL) {
    const int L = static_cast<int>(seq.t1 - c0 < CL ? seq.t1 - c0 : index_t(CL));

    // ---- 0. stage the state and the chunk ------------------------------------------------------------------
#pragma unroll
    for (int nt = 0; nt < VP / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        SopT[(8 * nt + acc_col(e)) * LDK + 16 * warp + acc_row(e)] = from_float<E>(acc[nt][e]);
    if (tid < CL) gsc[tid] = pre_g, bet[tid] = pre_b;
    if constexpr (shape::async) cp_async_wait_all();
    __syncthreads();

    for (int r = warp; r < CL; r += NW) {
      const index_t t = c0 + r;
      const bool live = r < L;
      constexpr int U = KP / 32;
      float qv[U], kv[U], qq = 0, kk = 0, gs = 0;
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int i = lane + 32 * u;
        if constexpr (shape::async) {
          qv[u] = live && !a.q_tilde_in.ptr ? to_float(stage[(0 * CL + r) * KP + i]) : 0.f;
          if (live && a.q_tilde_in.ptr && i < K) qv[u] = a.q_tilde_in(seq.bt, t, hv, i);
          kv[u] = live ? to_float(stage[(1 * CL + r) * KP + i]) : 0.f;
        } else {
          qv[u] = live && i < K ? src.q(seq.bt, t, hv, i) : 0.f;
          kv[u] = live && i < K ? src.k(seq.bt, t, hv, i) : 0.f;
        }
        qq += qv[u] * qv[u], kk += kv[u] * kv[u];
        if constexpr (traits::per_key || traits::stats_mean_gk) {
          float l = 0;
          if (live && i < K) {
            if constexpr (shape::async && traits::per_key) {
              l = to_float(stage[(3 * CL + r) * KP + i]);
              if (a.gate_active) {
                const float bias = a.dt_bias.ptr ? a.dt_bias(hv * a.K + i) : 0.f;
                l = activate_gate(l, a.A_log(hv), bias, a.has_lower_bound, a.lower_bound);
              }
            } else {
              l = src.gk(seq.bt, t, hv, i);
            }
          }
          if constexpr (traits::per_key) Gs[r * KP + i] = l;
          gs += l;
        }
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) {
        qq += __shfl_xor_sync(0xffffffffu, qq, o);
        kk += __shfl_xor_sync(0xffffffffu, kk, o);
        if constexpr (traits::stats_mean_gk) gs += __shfl_xor_sync(0xffffffffu, gs, o);
      }
      const float qn = src.q_normalised() ? rsqrtf(qq + 1e-6f) : 1.f, kn = a.l2k ? rsqrtf(kk + 1e-6f) : 1.f;
      if constexpr (traits::stats_mean_gk) {
        if (lane == 0 && live) gsc[r] = src.stats_log_decay(seq.bt, t, hv, gs / static_cast<float>(K));
      }
      if (!live && lane == 0) gsc[r] = 0.f, bet[r] = 0.f;
      const float beta = bet[r];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int i = lane + 32 * u;
        kv[u] *= kn;
        Qs[r * LDK + i] = from_float<E>(qv[u] * qn);
        Ks[r * LDK + i] = from_float<E>(kv[u]);
        if constexpr (traits::erases) {
          float e = 0;
          if constexpr (traits::channel_gates) {
            if (live && i < K) e = (shape::async ? to_float(stage[(4 * CL + r) * KP + i]) : src.b(seq.bt, t, hv, i)) * kv[u];
          } else {
            e = beta * kv[u];
          }
          EK[r * LDK + i] = from_float<E>(e);
        }
      }
#pragma unroll
      for (int u = 0; u < VP / 32; ++u) {
        const int j = lane + 32 * u;
        float x = 0;
        if constexpr (traits::stats) {
          x = kv[u];  // values are the keys (VP == KP: lane holds channel j)
        } else if (live && j < Vd) {
          x = shape::async ? to_float(stage[(2 * CL + r) * KP + j]) : src.v(seq.bt, t, hv, j);
          if constexpr (!traits::erases) {
            if (a.residual.ptr) a.residual(seq.bt, t, hv, j) = from_float<T>(x);  // u_t = v_t
          }
          if constexpr (traits::channel_gates) x *= shape::async ? to_float(stage[(5 * CL + r) * KP + j]) : src.w(seq.bt, t, hv, j);
          else if constexpr (traits::uses_beta) x *= beta;
        }
        UsT[j * LDC + r] = from_float<E>(x);
      }
    }
    __syncthreads();
    if (c0 + CL < seq.t1) prefetch(c0 + CL);  // lands while this chunk computes

    // ---- 1. cumulative log decays; K_d and X, a thread per key channel ------------------------------------------
    if (tid < KP) {
      const int d = tid;
      float run = 0;
      for (int r = 0; r < CL; ++r) {
        if constexpr (traits::per_key) {
          run = Gs[r * KP + d] += run;
          if constexpr (traits::erases) XG[r * LDK + d] = from_float<E>(f(EK[r * LDK + d]) * ex(run));
        }
      }
      float g_run[CL];
      if constexpr (traits::scalar && !traits::per_key) {
        float s = 0;
#pragma unroll
        for (int r = 0; r < CL; ++r) g_run[r] = s += gsc[r];
      }
#pragma unroll
      for (int r = 0; r < CL; ++r) {
        float gr = 0, gc = 0;
        if constexpr (traits::per_key) gr = Gs[r * KP + d], gc = Gs[(CL - 1) * KP + d];
        else if constexpr (traits::scalar) gr = g_run[r], gc = g_run[CL - 1];
        KdT[d * LDC + r] = from_float<E>(f(Ks[r * LDK + d]) * ex(gc - gr));
      }
    }
    __syncthreads();
    if constexpr (traits::scalar && !traits::per_key) {  // cumulate the scalar decays in place (all threads read above)
      if (tid == 0) {
        float s = 0;
        for (int r = 0; r < CL; ++r) gsc[r] = s += gsc[r];
      }
      __syncthreads();
    }

    // ---- 2. P, A and Z -------------------------------------------------------------------------------------------
    // One 16×8 tile of a decayed, masked product X Kᵀ (X = Q for P, the erase key for A), written by `put`.
    auto decayed_tile = [&](int r0, int s0, bool strict, const E* X, auto&& put) {
      float c[4] = {0, 0, 0, 0};
      if (s0 <= r0 + 15) {
        if constexpr (traits::per_key) {
          if (s0 / 16 == r0 / 16) {  // diagonal sub-block: exponents G_r − G_s ≤ 0, in log space
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const int r = r0 + acc_row(e), s = s0 + acc_col(e);
              if (strict ? s < r : s <= r) {
                float sum = 0;
                for (int d = 0; d < KP; ++d) sum += f(X[r * LDK + d]) * f(Ks[s * LDK + d]) * ex(G(r, d) - G(s, d));
                c[e] = sum;
              }
            }
          } else {  // through the row before the sub-block: both factors ≤ 1
            const int ref = r0 - 1;
            for (int d0 = 0; d0 < KP; d0 += 16)
              mma_k16<E>(
                  c, [&](int m, int k) { return f(X[(r0 + m) * LDK + d0 + k]) * ex(G(r0 + m, d0 + k) - G(ref, d0 + k)); },
                  [&](int k, int nn) { return f(Ks[(s0 + nn) * LDK + d0 + k]) * ex(G(ref, d0 + k) - G(s0 + nn, d0 + k)); });
          }
        } else {
          mma_rows<E>(c, X + r0 * LDK, LDK, Ks + s0 * LDK, LDK, KP / 16);
#pragma unroll
          for (int e = 0; e < 4; ++e) c[e] *= ex(G(r0 + acc_row(e), 0) - G(s0 + acc_col(e), 0));
        }
      }
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = r0 + acc_row(e), s = s0 + acc_col(e);
        put(r, s, (strict ? s < r : s <= r) ? c[e] : 0.f);
      }
    };
    constexpr int cc_tiles = (CL / 16) * (CL / 8);
    for (int id = warp; id < 2 * cc_tiles; id += NW) {
      const int tile = id % cc_tiles, r0 = 16 * (tile / (CL / 8)), s0 = 8 * (tile % (CL / 8));
      if (id < cc_tiles) {
        decayed_tile(r0, s0, false, Qs, [&](int r, int s, float x) { Pe[r * LDC + s] = from_float<E>(x); });
      } else if constexpr (traits::erases) {
        decayed_tile(r0, s0, true, EK, [&](int r, int s, float x) { Ms[r * LDM + s] = x; });
      }
    }
    if constexpr (traits::erases) {
      constexpr int cv_tiles = (CL / 16) * (VP / 8);
      const E* X = traits::per_key ? XG : EK;
      for (int id = warp; id < cv_tiles; id += NW) {
        const int r0 = 16 * (id / (VP / 8)), j0 = 8 * (id % (VP / 8));
        float c[4] = {0, 0, 0, 0};
        mma_rows<E>(c, X + r0 * LDK, LDK, SopT + j0 * LDK, LDK, KP / 16);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int r = r0 + acc_row(e), j = j0 + acc_col(e);
          float x = c[e];
          if constexpr (traits::scalar && !traits::per_key) x *= ex(G(r, 0));
          Zs[r * LDZ + j] = f(UsT[j * LDC + r]) - x;
        }
      }
    }
    __syncthreads();

    // ---- 3. the solve (delta family); Q ⊙ Γ and the normaliser meanwhile -------------------------------------------
    const int helpers_from = traits::erases ? VP : 0;  // threads below solve, the others prepare
    if (traits::erases && tid < VP) {
      const int j = tid;
      float z[CL];
#pragma unroll
      for (int r = 0; r < CL; ++r) {
        float x = Zs[r * LDZ + j];
#pragma unroll
        for (int s = 0; s < r; ++s) x -= Ms[r * LDM + s] * z[s];
        z[r] = x;
      }
#pragma unroll
      for (int r = 0; r < CL; ++r) UsT[j * LDC + r] = from_float<E>(z[r]);
      if (a.residual.ptr && j < Vd) {
#pragma unroll
        for (int r = 0; r < CL; ++r)
          if (r < L) a.residual(seq.bt, c0 + r, hv, j) = from_float<T>(z[r]);
      }
    }
    if (tid >= helpers_from) {
      const int h = tid - helpers_from, nh = chunk_threads - helpers_from;
      if (a.normalize) {  // additive rule: s q_r · (Σ_{earlier chunks} k + Σ_{s ≤ r} k_s); before Q changes
        for (int r = h; r < CL; r += nh) {
          float x = 0;
          for (int d = 0; d < KP; ++d) x += f(Qs[r * LDK + d]) * zsum[d];
          for (int s = 0; s <= r; ++s) x += f(Pe[r * LDC + s]);
          qz[r] = x * a.scale;
        }
      }
      if constexpr (traits::per_key || traits::scalar) {
        for (int x = h; x < CL * KP; x += nh) {
          const int r = x / KP, d = x % KP;
          Qs[r * LDK + d] = from_float<E>(f(Qs[r * LDK + d]) * ex(G(r, d)));
        }
      }
    }
    __syncthreads();

    // ---- 4. output, and the state update in registers --------------------------------------------------------------
    {
      constexpr int cv_tiles = (CL / 16) * (VP / 8);
      for (int id = warp; id < cv_tiles; id += NW) {
        const int r0 = 16 * (id / (VP / 8)), j0 = 8 * (id % (VP / 8));
        float c[4] = {0, 0, 0, 0};
        mma_rows<E>(c, Qs + r0 * LDK, LDK, SopT + j0 * LDK, LDK, KP / 16);
        mma_rows<E>(c, Pe + r0 * LDC, LDC, UsT + j0 * LDC, LDC, (r0 + 16) / 16);  // P is zero above the diagonal
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int r = r0 + acc_row(e), j = j0 + acc_col(e);
          if (r >= L || j >= Vd) continue;
          if constexpr (traits::stats) {
            a.y(seq.bt, c0 + r, hv, j) = c[e];
          } else {
            float o = c[e] * a.scale;
            if (a.normalize) o /= qz[r] + 1e-10f;
            a.o(seq.bt, c0 + r, hv, j) = from_float<T>(o);
          }
        }
      }
    }
    {
#pragma unroll
      for (int e = 0; e < 4; e += 2) {
        const int i = 16 * warp + acc_row(e);
        const float gamma = (traits::per_key || traits::scalar) ? ex(G(CL - 1, i)) : 1.f;
#pragma unroll
        for (int nt = 0; nt < VP / 8; ++nt) acc[nt][e] *= gamma, acc[nt][e + 1] *= gamma;
      }
#pragma unroll
      for (int nt = 0; nt < VP / 8; ++nt)
        mma_rows<E>(acc[nt], KdT + 16 * warp * LDC, LDC, UsT + 8 * nt * LDC, LDC, CL / 16);
      if (a.normalize)
        for (int d = tid; d < KP; d += chunk_threads)
          for (int r = 0; r < CL; ++r) zsum[d] += f(Ks[r * LDK + d]);
    }
    __syncthreads();
  }

  const view<float, 4>& s1 = traits::stats ? a.C : a.final_state;
  if (s1.ptr) {
#pragma unroll
    for (int nt = 0; nt < VP / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const index_t i = 16 * warp + acc_row(e), j = 8 * nt + acc_col(e);
        if (i < K && j < Vd) s1(seq.row, hv, i, j) = acc[nt][e];
      }
  }
}

}  // namespace linea::cuda_detail
