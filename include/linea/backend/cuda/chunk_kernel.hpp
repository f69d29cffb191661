// linea/backend/cuda/chunk_kernel.hpp — the chunkwise forward (SPEC §4) on tensor cores, the general kernel: every
// rule, read, input type and layout. (The scalar-decay rules with 16-bit, aligned inputs take the 64-token
// kernels instead: scalar_chunk_kernel.hpp, delta_pipeline_kernel.hpp; launch.hpp chooses.)
//
// One CTA per (sequence, value head, tile of BV value columns: 64 when two CTAs fit an SM, else 128), 8 warps;
// the K×BV state tile lives in registers for the whole sequence (fp32 mma accumulators: warp w owns key rows
// 16w..16w+15), and each chunk of CL = 32 tokens runs five phases:
//   0. stage:  S (transposed, as the operand type E) and the chunk's q̂, k̂, erase keys, w⊙v into shared memory,
//              from a staging buffer that cp.async filled during the previous chunk
//   1. G:      in-chunk cumulative log decays (scalar or per key channel), K_d = K ⊙ exp(G_C − G), X = bK ⊙ Γ
//   2. P = (Q Kᵀ ⊙ decay) masked s ≤ r;  A = (bK Kᵀ ⊙ decay) strictly lower;  Z = W_v − X S
//   3. U = (I + A)⁻¹ Z by (right-looking) forward substitution, a thread per value column (the delta family's
//      solve, on-chip); meanwhile the other warps scale Q ← Q ⊙ Γ
//   4. O = s[(Q ⊙ Γ) S + P U] to memory;  S ← Diag(Γ_C) S + K_dᵀ U in registers
// All products are C = A·Btᵀ with both operands row-major along the contracted index (mma_rows: ldmatrix +
// mma.sync for bf16 / fp16, the same tiles in fp32 FMAs for float inputs).
// Per-key decays never form exp(−G): an off-diagonal block goes through the last row of its column block (both
// factors ≤ 1) on tensor cores — rows 16..31 × columns 0..15 through row 15, and for 16-bit operands, inside each
// 16-row half, rows 8..15 × columns 0..7 through row 7 — and the remaining diagonal blocks (8×8, or 16×16 for
// float operands) are summed in log space (secondary chunking, SPEC §4).
// Element-wise work is done four channels at a time (8- or 16-byte shared accesses): on the H200 the kernel is
// bound by issuing the work around the products, not by the products (bench/cuda/README.md).
#pragma once
#include "chunk_tiles.hpp"

namespace linea::cuda_detail {

constexpr int chunk_threads = 256, chunk_kp = 128, chunk_vp = 128;  // K and V are padded to 128

template <class Rule, class T, class E, pass P, int BV>
struct chunk_shape {
  using traits = pass_traits<Rule, P>;
  static constexpr int CL = 32;                                  // tokens per chunk
  static constexpr int PE = 16 / static_cast<int>(sizeof(E));   // row padding: 16 bytes (ldmatrix, banks)
  static constexpr int LDK = chunk_kp + PE, LDC = CL + PE, LDZ = BV + 1;
  // Aᵀ rows: 16 bytes aligned for 16-bit operands (the solve reads four at a time); float operands have no room
  static constexpr int LDM = CL + (sizeof(E) == 2 ? 4 : 1);
  // per-key log decays [CL][LDG]: rows 4 words apart mod 32 banks, so 16-byte reads of 8 rows never collide
  // (not for float operands: their tiles leave no room under the 227 KB)
  static constexpr int LDG = chunk_kp + (sizeof(E) == 2 ? 4 : 0);
  // The raw chunk is staged asynchronously (cp.async) for 16-bit inputs; float inputs load it directly.
  static constexpr bool async = sizeof(T) == 2;
  // Per-key decays, 16-bit operands: the 16×16 diagonal blocks split once more at their row 7 (8×8 blocks in
  // log space, the 8×8 block below them on tensor cores); float operands have no room for the extra tile.
  static constexpr bool split8 = traits::per_key && sizeof(E) == 2;
  static constexpr int staged = async ? 3 + (traits::per_key ? 1 : 0) + (traits::channel_gates ? 2 : 0) : 0;
  // shared memory, in bytes, in the order the kernel carves it
  static constexpr std::size_t e_tiles = sizeof(E) * (std::size_t(BV) * LDK           // SopT
                                                      + (traits::per_key ? (split8 ? 7 : 6) : 4) * std::size_t(CL) * LDK  // Qs Ks EK XG (OF OE D8)
                                                      + std::size_t(chunk_kp) * LDC   // KdT
                                                      + std::size_t(BV) * LDC         // UsT
                                                      + std::size_t(CL) * LDC);       // Pe
  // Z is fp32: a tile of its own for 16-bit operands, the U tile itself when E = float (saves 16 KB).
  static constexpr bool z_in_u = std::is_same_v<E, float>;
  static constexpr std::size_t f_tiles = sizeof(float) * ((z_in_u ? 0 : std::size_t(CL) * LDZ) + std::size_t(CL) * LDM +
                                                          (traits::per_key ? std::size_t(CL) * LDG : 0) +
                                                          5 * CL + chunk_kp);
  static constexpr std::size_t stage_bytes = sizeof(T) * std::size_t(staged) * CL * chunk_kp;
  static constexpr std::size_t bytes = e_tiles + f_tiles + stage_bytes;
  // Two CTAs per SM when the value columns are split (registers capped at 128 per thread to fit them).
  static constexpr int min_blocks = BV < chunk_vp ? 2 : 1;
};

// Value columns per CTA. The K×V state splits by value columns (the delta rule's solve is column by column, and
// every key-side quantity — decays, P, A — is the same for all columns): 64 columns give two CTAs per
// (sequence, head) and two CTAs per SM when the shared memory of both fits, which hides the latency of one
// CTA's serial phases behind the other's. Rules whose tiles do not fit twice keep one CTA of 128 columns.
template <class Rule, class T, class E, pass P>
inline constexpr int chunk_bv = chunk_shape<Rule, T, E, P, 64>::bytes <= 112 * 1024 ? 64 : chunk_vp;


// N consecutive elements (N · sizeof(X) bytes, aligned to that) as one shared or global access, in float.
template <int N, class X>
struct packed {
  static_assert(N == 1 || N == 2 || N == 4, "packed: 1, 2 or 4 elements");
  static constexpr int bytes = N * static_cast<int>(sizeof(X));
  using word = std::conditional_t<bytes == 16, uint4, std::conditional_t<bytes == 8, uint2, std::conditional_t<bytes == 4, unsigned, unsigned short>>>;
};
template <int N, class X>
__device__ __forceinline__ void load_n(const X* p, float (&v)[N]) {
  using W = typename packed<N, X>::word;
  const W w = *reinterpret_cast<const W*>(p);
  X e[N];
  memcpy(e, &w, sizeof(W));
#pragma unroll
  for (int c = 0; c < N; ++c) v[c] = to_float(e[c]);
}
template <int N, class X>
__device__ __forceinline__ void store_n(X* p, const float (&v)[N]) {
  using W = typename packed<N, X>::word;
  X e[N];
#pragma unroll
  for (int c = 0; c < N; ++c) e[c] = from_float<X>(v[c]);
  W w;
  memcpy(&w, e, sizeof(W));
  *reinterpret_cast<W*>(p) = w;
}

template <class Rule, class T, class E, pass P, int BV>
__global__ void __launch_bounds__(chunk_threads, (chunk_shape<Rule, T, E, P, BV>::min_blocks))
    chunk_kernel(const kernel_args<T> a) {
  using traits = pass_traits<Rule, P>;
  using shape = chunk_shape<Rule, T, E, P, BV>;
  // VP: the value columns of this CTA, global columns jt .. jt + VP − 1
  constexpr int CL = shape::CL, KP = chunk_kp, VP = BV, LDK = shape::LDK, LDC = shape::LDC;
  constexpr int LDZ = shape::LDZ, LDM = shape::LDM, LDG = shape::LDG, NW = chunk_threads / 32;
  const source<T> src{a};
  const index_t K = a.K, Vd = traits::stats ? a.K : a.V;
  const index_t hv = blockIdx.x, n = blockIdx.y, jt = static_cast<index_t>(blockIdx.z) * VP;
  const index_t hk = hv / a.G;  // the query / key head (once: a 64-bit division is not cheap)
  const seq_range seq = sequence_of(a, n);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;

  extern __shared__ __align__(16) unsigned char smem_raw[];
  E* SopT = reinterpret_cast<E*>(smem_raw);  // Sᵀ [VP][LDK]
  E* Qs = SopT + VP * LDK;                   // q̂, then q̂ ⊙ Γ [CL][LDK]
  E* Ks = Qs + CL * LDK;                     // k̂ [CL][LDK]
  E* EK = Ks + CL * LDK;                     // erase key β k̂ or b ⊙ k̂ [CL][LDK]
  E* XG = EK + CL * LDK;                     // erase key ⊙ Γ (per-key decays) [CL][LDK]
  E* OF = XG + CL * LDK;                     // per-key: rows < 16 k ⊙ exp(G_15 − G), rows ≥ 16 q ⊙ exp(G − G_15)
  E* OE = OF + (traits::per_key ? CL * LDK : 0);  // per-key: rows ≥ 16 erase key ⊙ exp(G − G_15); split8: rows
                                                   // 8h..8h+7 k ⊙ exp(G_m − G) of rows 16h..16h+7
  E* D8 = OE + (traits::per_key ? CL * LDK : 0);   // split8, half h: rows 16h..+7 q ⊙ exp(G − G_m), rows
                                                   // 16h+8..+15 erase key ⊙ exp(G − G_m), m = 16h + 7
  E* KdT = D8 + (shape::split8 ? CL * LDK : 0);    // (K ⊙ exp(G_C − G))ᵀ [KP][LDC]
  E* UsT = KdT + KP * LDC;                   // w ⊙ v, then U, transposed [VP][LDC]
  E* Pe = UsT + VP * LDC;                    // P [CL][LDC]
  float* Zs = reinterpret_cast<float*>(Pe + CL * LDC);  // Z [CL][LDZ] (16-bit operands; else Z is in UsT)
  float* Ms = Zs + (shape::z_in_u ? 0 : CL * LDZ);      // Aᵀ [CL][LDM]
  float* Gs = Ms + CL * LDM;                            // per-key log decays, cumulated [CL][LDG]
  float* gsc = Gs + (traits::per_key ? CL * LDG : 0);   // scalar log decays [CL] (cumulated: gcum)
  float* bet = gsc + CL;                                // β [CL]
  float* qz = bet + CL;                                 // normaliser per row [2·CL]
  float* gcum = qz + 2 * CL;                            // scalar log decays, cumulated [CL]
  float* zsum = gcum + CL;                              // Σ k so far (normalize) [KP]
  T* stage = reinterpret_cast<T*>(zsum + KP);           // raw q, k, v (, gk) (, b, w) [staged][CL][KP]

  // Log decays are kept in base 2 (G · log2 e), so every decay factor is one exp2.
  auto G = [&](int r, int d) -> float {
    if constexpr (traits::per_key) return Gs[r * LDG + d];
    else if constexpr (traits::scalar) return gcum[r];
    else return 0.f;
  };
  auto f = [](E x) { return to_float(x); };
  auto ex = [](float x) {  // 2^x: accurate for float32 inputs (SPEC §5: 1e-5), ex2.approx for 16-bit operands
    if constexpr (std::is_same_v<E, float>) {
      return exp2f(x);
    } else {
      float y;
      asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
      return y;
    }
  };
  constexpr float log2e = 1.4426950408889634f;

  // ---- prefetch: the raw tiles of the chunk at c0 into `stage`, and its per-row scalars into registers ------------
  // Thread r < CL keeps row r's scalar gate and beta (pre_g, pre_b) until the chunk is staged.
  float pre_g = 0, pre_b = 0;
  auto prefetch = [&](index_t c0) {
    const int L = static_cast<int>(seq.t1 - c0 < CL ? seq.t1 - c0 : index_t(CL));
    pre_g = 0.f, pre_b = 0.f;  // rows past the end: zero decay and zero beta
    if (tid < L) {
      const index_t t = c0 + tid;
      if constexpr (traits::stats) {
        float rule = 0;
        if constexpr (traits::rule_scalar) rule = src.template token_log_alpha<Rule>(seq.bt, t, hv);
        pre_g = rule;  // mean of gk is added at staging (needs the row)
        if constexpr (Rule::decay::kind != decay_kind::per_key) pre_g = src.stats_log_decay(seq.bt, t, hv, rule);
      } else if constexpr (traits::scalar) {
        pre_g = src.g(seq.bt, t, hv);
      }
      if constexpr (traits::uses_beta) pre_b = src.beta(seq.bt, t, hv);
    }
    if constexpr (shape::async) {
      // Thread tid copies 16-byte piece tid % per_row of rows tid / per_row + passes·k of every tile: the row
      // pointer is one multiply-add per row, and zeros fill what lies past the sequence or the width.
      constexpr int EPP = 16 / static_cast<int>(sizeof(T)), per_row = KP / EPP, passes = chunk_threads / per_row;
      const int i0 = (tid % per_row) * EPP, r_first = tid / per_row;
      auto stage_tile = [&](const view<const T, 4>& v, index_t head, int tile, bool value_tile) {
        if (value_tile && i0 >= VP) return;
        const index_t width = value_tile ? Vd - jt : K, inner = v.str[3];
        const T* base = v.ptr + seq.bt * v.str[0] + head * v.str[2] + (value_tile ? jt : 0) * inner;
        const bool whole = inner == 1 && i0 + EPP <= width && (v.str[1] * static_cast<index_t>(sizeof(T))) % 16 == 0 &&
                           (reinterpret_cast<std::uintptr_t>(base) & 15) == 0;
        const T* row = base + (c0 + r_first) * v.str[1];
        const index_t step = passes * v.str[1];
#pragma unroll
        for (int k = 0; k < CL / passes; ++k, row += step) {
          const int r = r_first + k * passes;
          T* dst = stage + (tile * CL + r) * KP + i0;
          if (r < L && whole) {
            tiles::cp_async16_fill(dst, row + i0, 16);
          } else {
            for (int e = 0; e < EPP; ++e) dst[e] = (r < L && i0 + e < width) ? row[(i0 + e) * inner] : from_float<T>(0.f);
          }
        }
      };
      if (!a.q_tilde_in.ptr) stage_tile(a.q, hk, 0, false);  // CCQ main pass: q̃ is read in place of q
      stage_tile(a.k, hk, 1, false);
      if constexpr (!traits::stats) stage_tile(a.v, hv, 2, true);  // the stats pass's values are its keys
      if constexpr (traits::per_key) stage_tile(a.gk, hv, 3, false);
      if constexpr (traits::channel_gates) stage_tile(a.b, hv, 4, false), stage_tile(a.w, hv, 5, true);
    }
  };

  // ---- the state, in registers: acc[nt][e] = S(16 warp + acc_row(e), 8 nt + acc_col(e)) --------------------------
  float acc[VP / 8][4];
  tiles::load_state(acc, traits::stats ? a.C0 : a.initial_state, seq.row, hv, jt, K, Vd);
  for (int d = tid; d < KP; d += chunk_threads) zsum[d] = 0.f;
  if (seq.t0 < seq.t1) prefetch(seq.t0);

  for (index_t c0 = seq.t0; c0 < seq.t1; c0 += CL) {
    const int L = static_cast<int>(seq.t1 - c0 < CL ? seq.t1 - c0 : index_t(CL));

    // ---- 0. stage the state and the chunk ------------------------------------------------------------------
    if constexpr (std::is_same_v<E, float>) {
#pragma unroll
      for (int nt = 0; nt < VP / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) SopT[(8 * nt + acc_col(e)) * LDK + 16 * warp + acc_row(e)] = acc[nt][e];
    } else {
      tiles::store_state_t(SopT, LDK, acc);  // stmatrix.trans on sm_90
    }
    if (tid < CL) gsc[tid] = pre_g * log2e, bet[tid] = pre_b;
    if constexpr (shape::async) tiles::cp_async_wait_all();
    __syncthreads();

    // One warp per row; lane l holds key channels 4l .. 4l+3 (8-byte shared loads and stores).
    static_assert(KP == 4 * 32, "the row staging gives each lane four key channels");
    constexpr int VPL = VP / 32;  // value columns per lane
    for (int r = warp; r < CL; r += NW) {
      const index_t t = c0 + r;
      const bool live = r < L;
      const int i0 = 4 * lane, j0 = VPL * lane;
      float qv[4], kv[4], lg[4] = {}, bv[4] = {}, qq = 0, kk = 0, gs = 0;
      if constexpr (shape::async) {  // the stage is zero past the sequence and past K
        if (a.q_tilde_in.ptr) {  // CCQ main pass: the cleaned queries, float, read in place of q
          const float* row = a.q_tilde_in.row(seq.bt, t, hv);
          const index_t inner = a.q_tilde_in.str[3];
#pragma unroll
          for (int u = 0; u < 4; ++u) qv[u] = live && i0 + u < K ? row[(i0 + u) * inner] : 0.f;
        } else {
          load_n<4>(stage + (0 * CL + r) * KP + i0, qv);
        }
        load_n<4>(stage + (1 * CL + r) * KP + i0, kv);
        if constexpr (traits::per_key) load_n<4>(stage + (3 * CL + r) * KP + i0, lg);
        if constexpr (traits::channel_gates) load_n<4>(stage + (4 * CL + r) * KP + i0, bv);
      }
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int i = i0 + u;
        const bool in = live && i < K;
        if constexpr (!shape::async) {
          qv[u] = in ? src.q(seq.bt, t, hv, i) : 0.f;
          kv[u] = in ? src.k(seq.bt, t, hv, i) : 0.f;
          if constexpr (traits::channel_gates) bv[u] = in ? src.b(seq.bt, t, hv, i) : 0.f;
        }
        qq += qv[u] * qv[u], kk += kv[u] * kv[u];
        if constexpr (traits::per_key || traits::stats_mean_gk) {
          float l = 0;
          if (in) {
            if constexpr (shape::async && traits::per_key) {
              l = lg[u];
              if (a.gate_active) {
                const float bias = a.dt_bias.ptr ? a.dt_bias(hv * a.K + i) : 0.f;
                l = activate_gate(l, a.A_log(hv), bias, a.has_lower_bound, a.lower_bound);
              }
            } else {
              l = src.gk(seq.bt, t, hv, i);
            }
          }
          lg[u] = l * log2e;
          gs += l;
        }
      }
      if constexpr (traits::per_key) store_n<4>(Gs + r * LDG + i0, lg);
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) {
        qq += __shfl_xor_sync(0xffffffffu, qq, o);
        kk += __shfl_xor_sync(0xffffffffu, kk, o);
        if constexpr (traits::stats_mean_gk) gs += __shfl_xor_sync(0xffffffffu, gs, o);
      }
      const float qn = src.q_normalised() ? rsqrtf(qq + 1e-6f) : 1.f, kn = a.l2k ? rsqrtf(kk + 1e-6f) : 1.f;
      if constexpr (traits::stats_mean_gk) {
        if (lane == 0 && live) gsc[r] = src.stats_log_decay(seq.bt, t, hv, gs / static_cast<float>(K)) * log2e;
      }
      const float beta = bet[r];
      float ev[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        kv[u] *= kn, qv[u] *= qn;
        ev[u] = (traits::channel_gates ? bv[u] : beta) * kv[u];
      }
      store_n<4>(Qs + r * LDK + i0, qv);
      store_n<4>(Ks + r * LDK + i0, kv);
      if constexpr (traits::erases) store_n<4>(EK + r * LDK + i0, ev);
      // the values (w ⊙ v or β v), this CTA's columns jt + j0 ..; transposed into UsT
      float x[VPL] = {};
      if constexpr (traits::stats) {
        __syncwarp();  // the values are this row's keys, written just above
#pragma unroll
        for (int c = 0; c < VPL; ++c) x[c] = f(Ks[r * LDK + jt + j0 + c]);
      } else {
        float wv[VPL];
        if constexpr (shape::async) {
          load_n<VPL>(stage + (2 * CL + r) * KP + j0, x);
          if constexpr (traits::channel_gates) load_n<VPL>(stage + (5 * CL + r) * KP + j0, wv);
        } else {
#pragma unroll
          for (int c = 0; c < VPL; ++c) {
            const bool in = live && jt + j0 + c < Vd;
            x[c] = in ? src.v(seq.bt, t, hv, jt + j0 + c) : 0.f;
            if constexpr (traits::channel_gates) wv[c] = in ? src.w(seq.bt, t, hv, jt + j0 + c) : 0.f;
          }
        }
#pragma unroll
        for (int c = 0; c < VPL; ++c) {
          if constexpr (!traits::erases) {
            if (a.residual.ptr && live && jt + j0 + c < Vd) a.residual(seq.bt, t, hv, jt + j0 + c) = from_float<T>(x[c]);  // u_t = v_t
          }
          if constexpr (traits::channel_gates) x[c] *= wv[c];
          else if constexpr (traits::uses_beta) x[c] *= beta;
        }
      }
#pragma unroll
      for (int c = 0; c < VPL; ++c) UsT[(j0 + c) * LDC + r] = from_float<E>(x[c]);
    }
    __syncthreads();
    if (c0 + CL < seq.t1) prefetch(c0 + CL);  // lands while this chunk computes

    // ---- 1. cumulative log decays; K_d, X and the per-key off-diagonal operands, a thread per key channel --------
    if (tid < KP) {
      const int d = tid;
      float g_run[CL];
      float run = 0;
#pragma unroll
      for (int r = 0; r < CL; ++r) {
        if constexpr (traits::per_key) run = Gs[r * LDG + d] += run;
        else if constexpr (traits::scalar) run += gsc[r];
        g_run[r] = run;
      }
      float kd[2];  // K_d of rows r − 1 and r: stored as one pair (a transposed tile, half the store requests)
#pragma unroll
      for (int r = 0; r < CL; ++r) {
        const float k = f(Ks[r * LDK + d]);
        kd[r & 1] = k * ex(g_run[CL - 1] - g_run[r]);
        if (r & 1) store_n<2>(KdT + d * LDC + r - 1, kd);
        if constexpr (traits::per_key) {
          const float e = traits::erases ? f(EK[r * LDK + d]) : 0.f;
          if constexpr (traits::erases) XG[r * LDK + d] = from_float<E>(e * ex(g_run[r]));
          // off-diagonal sub-block (rows 16..31 × columns 0..15) through row 15: both factors ≤ 1
          if (r < 16) {
            OF[r * LDK + d] = from_float<E>(k * ex(g_run[15] - g_run[r]));
          } else {
            OF[r * LDK + d] = from_float<E>(f(Qs[r * LDK + d]) * ex(g_run[r] - g_run[15]));
            if constexpr (traits::erases) OE[r * LDK + d] = from_float<E>(e * ex(g_run[r] - g_run[15]));
          }
          if constexpr (shape::split8) {  // inside half h: rows 8..15 against columns 0..7, through row m = 16h + 7
            const int h = r / 16, m = 16 * h + 7, rl = r % 16;
            if (rl < 8) {
              OE[(8 * h + rl) * LDK + d] = from_float<E>(k * ex(g_run[m] - g_run[r]));
            } else {
              D8[(16 * h + rl - 8) * LDK + d] = from_float<E>(f(Qs[r * LDK + d]) * ex(g_run[r] - g_run[m]));
              if constexpr (traits::erases) D8[(16 * h + rl) * LDK + d] = from_float<E>(e * ex(g_run[r] - g_run[m]));
            }
          }
        }
      }
    } else if (tid < KP + 32) {  // one warp: inclusive scan of the scalar log decays
      if constexpr (traits::scalar && !traits::per_key) {
        float x = gsc[lane];
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
          const float y = __shfl_up_sync(0xffffffffu, x, o);
          if (lane >= o) x += y;
        }
        gcum[lane] = x;
      }
    } else {  // the rest: clear P and A (phase 2 writes only their nonzero entries)
      for (int x = tid - KP - 32; x < CL * LDC; x += chunk_threads - KP - 32) Pe[x] = from_float<E>(0.f);
      if constexpr (traits::erases)
        for (int x = tid - KP - 32; x < CL * LDM; x += chunk_threads - KP - 32) Ms[x] = 0.f;
    }
    __syncthreads();

    // ---- 2. P, A and Z -------------------------------------------------------------------------------------------
    static_assert(CL == 32, "phase 2 is laid out for two 16-row sub-chunks");
    // Z (and later O) is cut into 16×32 strips, one per warp; P and A go to the warps that have no strip.
    constexpr int strips = (CL / 16) * (VP / 32), spare = strips % NW;
    const int pa_warp = (warp - spare + NW) % NW;
    {
      // Z = W_v − X S
      if constexpr (traits::erases) {
       for (int job = warp; job < strips; job += NW) {
        const int r0 = 16 * (job / (VP / 32)), j0 = 32 * (job % (VP / 32));
        float c[4][4] = {};
        mma_rows4<E>(c, (traits::per_key ? XG : EK) + r0 * LDK, LDK, SopT + j0 * LDK, LDK, KP / 16);
#pragma unroll
        for (int t = 0; t < 4; ++t)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int r = r0 + acc_row(e), j = j0 + 8 * t + acc_col(e);
            float x = c[t][e];
            if constexpr (!traits::per_key && traits::scalar) x *= ex(G(r, 0));
            if constexpr (shape::z_in_u) UsT[j * LDC + r] = f(UsT[j * LDC + r]) - x;
            else Zs[r * LDZ + j] = f(UsT[j * LDC + r]) - x;
          }
       }
      }
      if constexpr (!traits::per_key) {
        // P = Q Kᵀ and A = bK Kᵀ, decays as a row/column factor (G_r − G_s ≤ 0 on and below the diagonal).
        constexpr int jobs = traits::erases ? 4 : 2;  // (P | A) × two row blocks, 16×32 each
        for (int job = pa_warp; job < jobs; job += NW) {
          const bool is_a = job >= 2;
          const int r0 = 16 * (job % 2);
          float c[4][4] = {};
          mma_rows4<E>(c, (is_a ? EK : Qs) + r0 * LDK, LDK, Ks, LDK, KP / 16);
#pragma unroll
          for (int t = 0; t < 4; ++t)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const int r = r0 + acc_row(e), s = 8 * t + acc_col(e);
              if (is_a ? s < r : s <= r) {
                const float x = c[t][e] * ex(G(r, 0) - G(s, 0));
                if (is_a) Ms[s * LDM + r] = x;  // A is kept transposed (the solve reads its columns)
                else Pe[r * LDC + s] = from_float<E>(x);
              }
            }
        }
      } else {
        // Off-diagonal sub-block (rows 16..31, columns 0..15) on tensor cores, through row 15.
        if (pa_warp < (traits::erases ? 2 : 1)) {
          const bool is_a = pa_warp == 1;
          float c[2][4] = {};
#pragma unroll
          for (int t = 0; t < 2; ++t) mma_rows<E>(c[t], (is_a ? OE : OF) + 16 * LDK, LDK, OF + 8 * t * LDK, LDK, KP / 16);
#pragma unroll
          for (int t = 0; t < 2; ++t)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const int r = 16 + acc_row(e), s = 8 * t + acc_col(e);
              if (is_a) Ms[s * LDM + r] = c[t][e];
              else Pe[r * LDC + s] = from_float<E>(c[t][e]);
            }
        }
        if constexpr (shape::split8) {  // the 8×8 blocks below the 8×8 diagonal: P in rows 0..7, A in rows 8..15
          if (pa_warp >= 2 && pa_warp < 4) {
            const int h = pa_warp - 2;
            float c[4] = {};
            mma_rows<E>(c, D8 + 16 * h * LDK, LDK, OE + 8 * h * LDK, LDK, KP / 16);
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const int row = acc_row(e), s = 16 * h + acc_col(e);
              if (row < 8) Pe[(16 * h + 8 + row) * LDC + s] = from_float<E>(c[e]);
              else if (traits::erases) Ms[s * LDM + 16 * h + row] = c[e];  // row 8 + i of the tile is A's row 16h + 8 + i
            }
          }
        }
        // Diagonal blocks (DB×DB) in log space: the entries s ≤ r (P) or s < r (A) of each, spread over all warps so
        // that no lane idles on the masked half.
        constexpr int DB = shape::split8 ? 8 : 16, nP = DB * (DB + 1) / 2, nA = DB * (DB - 1) / 2;  // entries per block
        constexpr int total = (CL / DB) * (nP + (traits::erases ? nA : 0));
        for (int x = tid; x < total; x += chunk_threads) {
          const bool is_a = x >= (CL / DB) * nP;
          const int y = is_a ? x - (CL / DB) * nP : x, block = is_a ? y / nA : y / nP, idx = is_a ? y % nA : y % nP;
          // idx → (row, column) within the triangle, with or without the diagonal
          int rr = static_cast<int>((sqrtf(8.f * idx + 1.f) - 1.f) * 0.5f);
          if (is_a) rr = static_cast<int>((sqrtf(8.f * idx + 1.f) + 1.f) * 0.5f);
          int base = is_a ? rr * (rr - 1) / 2 : rr * (rr + 1) / 2;
          while (base > idx) --rr, base = is_a ? rr * (rr - 1) / 2 : rr * (rr + 1) / 2;
          while ((is_a ? (rr + 1) * rr / 2 : (rr + 1) * (rr + 2) / 2) <= idx)
            ++rr, base = is_a ? rr * (rr - 1) / 2 : rr * (rr + 1) / 2;
          const int r = DB * block + rr, sc = DB * block + (idx - base);
          const E* X = is_a ? EK : Qs;
          float sum = 0;
          // four channels per step: 8-byte operand and 16-byte decay reads (padded rows: no bank conflicts)
          for (int d = 0; d < KP; d += 4) {
            float xv[4], kv[4], gr[4], gs[4];
            load_n<4>(X + r * LDK + d, xv);
            load_n<4>(Ks + sc * LDK + d, kv);
            load_n<4>(Gs + r * LDG + d, gr);
            load_n<4>(Gs + sc * LDG + d, gs);
#pragma unroll
            for (int u = 0; u < 4; ++u) sum = fmaf(xv[u] * kv[u], ex(gr[u] - gs[u]), sum);
          }
          if (is_a) Ms[sc * LDM + r] = sum;
          else Pe[r * LDC + sc] = from_float<E>(sum);
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
      for (int r = 0; r < CL; ++r) z[r] = shape::z_in_u ? f(UsT[j * LDC + r]) : Zs[r * LDZ + j];
      // Right-looking substitution: once z_s is final it leaves every later row at once. The 31 − s updates
      // of a step are independent, so the dependent chain is 31 FMAs long instead of 496 (row by row).
#pragma unroll
      for (int s = 0; s < CL - 1; ++s)
#pragma unroll
        for (int r4 = (s + 1) / 4; r4 < CL / 4; ++r4) {  // Aᵀ(s, 4 r4 ..): one 16-byte broadcast read
          float m[4];
          if constexpr (LDM % 4 == 0) {
            load_n<4>(Ms + s * LDM + 4 * r4, m);
          } else {
#pragma unroll
            for (int u = 0; u < 4; ++u) m[u] = Ms[s * LDM + 4 * r4 + u];
          }
#pragma unroll
          for (int u = 0; u < 4; ++u)
            if (4 * r4 + u > s) z[4 * r4 + u] = fmaf(-m[u], z[s], z[4 * r4 + u]);
        }
#pragma unroll
      for (int r = 0; r < CL; ++r) UsT[j * LDC + r] = from_float<E>(z[r]);
      if (a.residual.ptr && jt + j < Vd) {
#pragma unroll
        for (int r = 0; r < CL; ++r)
          if (r < L) a.residual(seq.bt, c0 + r, hv, jt + j) = from_float<T>(z[r]);
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
      if constexpr (traits::per_key || traits::scalar) {  // four channels at a time
        for (int x = h; x < CL * KP / 4; x += nh) {
          const int r = x / (KP / 4), d = 4 * (x % (KP / 4));
          float qv[4], gv[4];
          load_n<4>(Qs + r * LDK + d, qv);
          if constexpr (traits::per_key) load_n<4>(Gs + r * LDG + d, gv);
#pragma unroll
          for (int u = 0; u < 4; ++u) qv[u] *= ex(traits::per_key ? gv[u] : gcum[r]);
          store_n<4>(Qs + r * LDK + d, qv);
        }
      }
    }
    __syncthreads();

    // ---- 4. output, and the state update in registers --------------------------------------------------------------
    for (int job = warp; job < strips; job += NW) {
      const int r0 = 16 * (job / (VP / 32)), j0 = 32 * (job % (VP / 32));  // one 16×32 strip of O per warp
      float c[4][4] = {};
      mma_rows4<E>(c, Qs + r0 * LDK, LDK, SopT + j0 * LDK, LDK, KP / 16);
      mma_rows4<E>(c, Pe + r0 * LDC, LDC, UsT + j0 * LDC, LDC, (r0 + 16) / 16);  // P is zero above the diagonal
      // This lane's outputs: rows r0 + g and r0 + g + 8, column pairs jt + j0 + 8t + 2q (+1).
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = r0 + acc_row(2 * h);
        if (r >= L) continue;
        const float mul = traits::stats ? 1.f : a.normalize ? a.scale / (qz[r] + 1e-10f) : a.scale;
        if constexpr (traits::stats) {
          float* row = a.y.row(seq.bt, c0 + r, hv);
#pragma unroll
          for (int t = 0; t < 4; ++t)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const index_t j = jt + j0 + 8 * t + acc_col(e);
              if (j < Vd) row[j * a.y.str[3]] = c[t][2 * h + e];
            }
        } else {
          T* row = a.o.row(seq.bt, c0 + r, hv);
          const index_t inner = a.o.str[3];
#pragma unroll
          for (int t = 0; t < 4; ++t) {
            const index_t j = jt + j0 + 8 * t + acc_col(0);
            const float o0 = c[t][2 * h] * mul, o1 = c[t][2 * h + 1] * mul;
            if (sizeof(T) == 2 && inner == 1 && j + 1 < Vd && (reinterpret_cast<std::uintptr_t>(row + j) & 3) == 0) {
              store_n<2>(row + j, {o0, o1});  // one 4-byte store
            } else {
              if (j < Vd) row[j * inner] = from_float<T>(o0);
              if (j + 1 < Vd) row[(j + 1) * inner] = from_float<T>(o1);
            }
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
      for (int q4 = 0; q4 < VP / 32; ++q4)
        mma_rows4<E>(*reinterpret_cast<float(*)[4][4]>(&acc[4 * q4][0]), KdT + 16 * warp * LDC, LDC,
                     UsT + 32 * q4 * LDC, LDC, CL / 16);
      if (a.normalize)
        for (int d = tid; d < KP; d += chunk_threads)
          for (int r = 0; r < CL; ++r) zsum[d] += f(Ks[r * LDK + d]);
    }
    __syncthreads();
  }

  tiles::save_state(acc, traits::stats ? a.C : a.final_state, seq.row, hv, jt, K, Vd);
}

}  // namespace linea::cuda_detail
