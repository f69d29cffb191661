// linea/backend/cuda/perkey_chunk_kernel.hpp — the chunkwise forward of the rules that only add, with a decay per
// key channel (gla), on tensor cores. (Since 2026-12-02 the library sends gla to perkey_delta_kernel.hpp, faster on
// the H200; this kernel stays as the A/B baseline of bench/cuda/perkey_delta_ab.cu. Its log-space diagonal blocks
// (perkey_diagonal_rows) were shared with that kernel until pkf14, which forms them through a middle row instead.)
//   S_t = Diag(α_t) S_{t-1} + k_t v_tᵀ,  o_t = s S_tᵀ q_t,   log α_t = gk_t (after the in-kernel gate)
//
// Per chunk of CL = 64 tokens, with G_r·d = Σ_{s ≤ r} log₂ α_s·d inside the chunk and C its last row (SPEC §4):
//   O = s [(Q ⊙ 2^G) S + P V],   P_rs = Σ_d q_rd k_sd 2^(G_rd − G_sd), s ≤ r
//   S ← Diag(2^(G_C)) S + (K ⊙ 2^(G_C − G))ᵀ V
// Only exponents ≤ 0 are formed (chunk/decay.hpp): 2^(−G) alone would overflow. So P is cut into blocks, each
// through a reference row between its rows and its columns (secondary chunking):
//   - 16×16 blocks below the diagonal, row block i through row 16i − 1 (the last row before it):
//       QR = q ⊙ 2^(G − G_{16i−1}) (rows of block i),  KR_i = k ⊙ 2^(G_{16i−1} − G) (rows before block i)
//   - inside each 16-row block, rows 8..15 × columns 0..7 through its row 7 (Q8, K8), on tensor cores;
//   - the eight 8×8 diagonal blocks in log space, a warp per block (lanes split the key channels).
// The log decays are clamped at tiles::log2_zero (a gate of 0 is finite: no −inf − (−inf)).
//
// One CTA of 8 warps per (value head, sequence) holds the whole 128-column state (64 fp32 registers per
// thread: warp w owns key rows 16w .. 16w + 15), so P and its operands are formed once per head. Per chunk:
//   A  G: each thread cumulates the log decays of one key channel over 32 rows (read a chunk ahead into registers);
//      the in-kernel L2 norm (qk_l2norm) on the q, k tiles
//   D  the 8×8 diagonal blocks of P in log space, from the raw q, k and G
//   E  the decayed operands, a thread per (key channel, half chunk): Q ⊙ 2^G over q and K ⊙ 2^(G_C − G) over k
//      (in place), QR, KR, Q8, K8
//   F  Q S; the blocks of P below the diagonal
//   G  O += P V, out; S updated in registers; Sᵀ for the next chunk
// k and v are double-buffered (copied a chunk ahead by cp.async), q is refilled once Q ⊙ 2^G has been read.
#pragma once
#include "chunk_phases/layout.hpp"  // load_n
#include "chunk_tiles.hpp"
#include "reduce_scatter.hpp"

namespace linea::cuda_detail {

// The rules this kernel computes, main pass: additive update (w = 1: v is copied straight into the operand
// tiles), per-key decay read from gk alone (log α through the decay's hook).
template <class Rule, pass P>
inline constexpr bool perkey_chunk_rule = P == pass::main && std::is_same_v<typename Rule::update, update::additive> &&
                                          Rule::decay::kind == decay_kind::per_key && Rule::decay::inputs == input::gk;

struct perkey_chunk_shape {
  static constexpr int CL = tiles::CL, KP = tiles::KP, BVW = 128, threads = tiles::threads;
  static constexpr int LDK = tiles::LDK, LDV = BVW + 8, LDP = tiles::LD64, LDG = KP + 4;
  // 16-bit tiles, in elements, in the order they are carved
  static constexpr int q_at = 0,  // q, then q ⊙ 2^G                                       [CL][LDK]
      k_at = q_at + CL * LDK,     // k, then k ⊙ 2^(G_C − G); 2 buffers                      [2][CL][LDK]
      v_at = k_at + 2 * CL * LDK,  // v, 2 buffers                                           [2][CL][LDV]
      s_at = v_at + 2 * CL * LDV,  // Sᵀ                                                     [BVW][LDK]
      qr_at = s_at + BVW * LDK,    // rows 16..63: q ⊙ 2^(G − G_{16i−1})                     [48][LDK]
      kr_at = qr_at + 48 * LDK,    // KR_1 rows 0..15, KR_2 16..47, KR_3 48..95              [96][LDK]
      q8_at = kr_at + 96 * LDK,    // block i rows 8..15 at 8i: q ⊙ 2^(G − G_{16i+7})       [40][LDK] (8 spare)
      k8_at = q8_at + 40 * LDK,    // block i rows 0..7 at 8i:  k ⊙ 2^(G_{16i+7} − G)       [32][LDK]
      p_at = k8_at + 32 * LDK,     // P                                                      [CL][LDP]
      end = p_at + CL * LDP;
  // fp32 after them: G [CL][LDG], G_C [KP], the first half's sums [KP]
  static constexpr std::size_t g_offset = 2 * std::size_t(end), gc_offset = g_offset + 4 * CL * LDG,
                               tot_offset = gc_offset + 4 * KP, bytes = tot_offset + 4 * KP;
  static constexpr int kr_row(int i) { return i == 3 ? 48 : i == 2 ? 16 : 0; }  // where KR_i starts
  static_assert(g_offset % 16 == 0, "16-byte aligned fp32 tiles");
  static_assert(bytes <= 227 * 1024, "one CTA per SM");
};

// one entry of P, in the operand type
template <class E>
__device__ __forceinline__ void put_p(E* p, float x) {
  *p = from_float<E>(x);
}

// Phase D, one warp: rows 2·Q, 2·Q + 1 of the 8×8 diagonal block at row and column b0 of P, in log space.
// Each lane sums its four key channels for the 16 entries (0 above the diagonal); a reduce-scatter over lane bits
// 3..0 and one exchange across bit 4 leave lanes l and l + 16 the whole sum of entry l % 16 = (row 2·Q + l % 16 / 8,
// column l % 8) — 16 independent shuffles rather than a chain of five per entry.
template <int Q, class E>
__device__ __forceinline__ float perkey_diagonal_rows(const E* Qs, const E* Ks, const float* G, int b0, int lane) {
  constexpr int LDK = perkey_chunk_shape::LDK, LDG = perkey_chunk_shape::LDG;
  const int dc = 4 * lane;
  float x[16];
#pragma unroll
  for (int e = 0; e < 16; ++e) x[e] = 0.f;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int r = b0 + 2 * Q + i;
    float qv[4], gr[4];
    load_n<4>(Qs + r * LDK + dc, qv);
    load_n<4>(G + r * LDG + dc, gr);
#pragma unroll
    for (int j = 0; j <= 2 * Q + i; ++j) {
      float kv[4], gs[4];
      load_n<4>(Ks + (b0 + j) * LDK + dc, kv);
      load_n<4>(G + (b0 + j) * LDG + dc, gs);
#pragma unroll
      for (int u = 0; u < 4; ++u) x[8 * i + j] = fmaf(qv[u] * kv[u], tiles::ex2(gr[u] - gs[u]), x[8 * i + j]);
    }
  }
  reduce_scatter_step<8>(x, lane);
  reduce_scatter_step<4>(x, lane);
  reduce_scatter_step<2>(x, lane);
  reduce_scatter_step<1>(x, lane);
  return x[0] + __shfl_xor_sync(0xffffffffu, x[0], 16);
}

// Store: how the o strip goes to global memory (tiles::strip_store; pko2, issue #15: sectors bit-identical to pairs,
// 1.504 → 1.473 ms at 8×4096 launched directly).
template <class Rule, class T, class E, tiles::strip_store Store = tiles::strip_store::sectors>
__global__ void __launch_bounds__(perkey_chunk_shape::threads, 1) perkey_chunk_kernel(const kernel_args<T> a) {
  using sh = perkey_chunk_shape;
  using tiles::ex2;
  constexpr int CL = sh::CL, KP = sh::KP, BVW = sh::BVW, LDK = sh::LDK, LDV = sh::LDV, LDP = sh::LDP, LDG = sh::LDG;
  static_assert(sh::threads == 2 * KP, "phase A and E: a thread per (key channel, half chunk)");
  const tiles::site<T, BVW> cta{a};
  const seq_range& seq = cta.seq;
  const index_t hv = cta.hv;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int d = tid % KP, half = tid / KP;  // phases A, E: key channel d, rows 32·half .. + 31

  extern __shared__ __align__(16) unsigned char smem_raw[];
  E* base = reinterpret_cast<E*>(smem_raw);
  E *Qs = base + sh::q_at, *ST = base + sh::s_at, *QR = base + sh::qr_at, *KR = base + sh::kr_at;
  E *Q8 = base + sh::q8_at, *K8 = base + sh::k8_at, *Pe = base + sh::p_at;
  float* G = reinterpret_cast<float*>(smem_raw + sh::g_offset);
  float* Gc = reinterpret_cast<float*>(smem_raw + sh::gc_offset);
  float* tot = reinterpret_cast<float*>(smem_raw + sh::tot_offset);
  auto Kbuf = [&](int b) { return base + sh::k_at + b * CL * LDK; };
  auto Vbuf = [&](int b) { return base + sh::v_at + b * CL * LDV; };

  // The log decays of this thread's 32 rows of a chunk, read a chunk ahead: raw inputs first (no wait), the gate
  // and the cumulation when they are needed.
  const bool has_d = d < cta.Kw;
  const T* gk0 = a.gk.ptr + seq.bt * a.gk.str[0] + hv * a.gk.str[2] + d * a.gk.str[3];
  std::uint32_t raw[16];  // two 16-bit inputs a register (rows 2i, 2i + 1)
  auto read_gk = [&](index_t c0, int L) {
    const T* p = gk0 + (c0 + 32 * half) * a.gk.str[1];
    const T zero = from_float<T>(0.f);
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const T lo = has_d && 32 * half + 2 * i < L ? p[2 * i * a.gk.str[1]] : zero;
      const T hi = has_d && 32 * half + 2 * i + 1 < L ? p[(2 * i + 1) * a.gk.str[1]] : zero;
      raw[i] = static_cast<std::uint32_t>(half_bits(lo)) | static_cast<std::uint32_t>(half_bits(hi)) << 16;
    }
  };
  float g[32];  // cumulative log₂ α over this thread's rows (before the first half's sum is added)
  auto scan_gk = [&](int L) {
    float run = 0;
#pragma unroll
    for (int i = 0; i < 32; ++i) {
      float l = 0;
      if (has_d && 32 * half + i < L) {  // (channels past K have no gate bias to read)
        float x = to_float(half_from_bits<T>(static_cast<std::uint16_t>(raw[i / 2] >> (16 * (i % 2)))));
        if (a.gate_active) x = gate_from_logit(x, a.A_log, a.dt_bias, a.has_lower_bound, a.lower_bound, hv, hv * a.K + d);
        lane_token t;
        t.gk.value = x;
        l = tiles::clamped_log2_decay(Rule::decay::log_alpha(t, d) * tiles::log2e);
      }
      g[i] = run += l;
    }
    if (half == 0) tot[d] = run;
  };

  for (int x = tid; x < 8 * LDK; x += sh::threads) Q8[32 * LDK + x] = from_float<E>(0.f);  // the spare rows
  float acc[BVW / 8][4];  // S: key rows 16·warp .. + 15, all 128 value columns
  tiles::load_state(acc, a.initial_state, seq.row, hv, cta.jt, a.K, a.V);
  if (seq.t0 < seq.t1) {
    const int L = cta.rows_in(seq.t0);
    cta.fetch_q(Qs, a, seq.t0, L), cta.fetch_k(Kbuf(0), a, seq.t0, L), cta.fetch_v(Vbuf(0), a, seq.t0, L);
    read_gk(seq.t0, L);
    scan_gk(L);
  }
  tiles::store_state_t(ST, LDK, acc);

  const int rb = warp >> 1, r0 = 16 * rb, c0w = 64 * (warp & 1);  // warp's rows of O and its value columns
  int buf = 0;
  for (index_t c0 = seq.t0; c0 < seq.t1; c0 += CL, buf ^= 1) {
    const int L = cta.rows_in(c0);
    const bool more = c0 + CL < seq.t1;
    const int Ln = more ? cta.rows_in(c0 + CL) : 0;
    E *Ks = Kbuf(buf), *Vs = Vbuf(buf);
    tiles::cp_async_wait_all();
    __syncthreads();  // this chunk's q, k, v, the first half's sums and Sᵀ in; the last chunk is done with k, v
    if (more) cta.fetch_k(Kbuf(buf ^ 1), a, c0 + CL, Ln), cta.fetch_v(Vbuf(buf ^ 1), a, c0 + CL, Ln);

    // ---- A: G --------------------------------------------------------------------------------------------------
    {
      const float add = half ? tot[d] : 0.f;
#pragma unroll
      for (int i = 0; i < 32; ++i) G[(32 * half + i) * LDG + d] = g[i] + add;
      if (half) Gc[d] = g[31] + add;
    }
    if (a.l2q) tiles::l2norm_rows<sh::threads>(Qs, LDK, tid);  // the in-kernel L2 norm, on the tiles in place
    if (a.l2k) tiles::l2norm_rows<sh::threads>(Ks, LDK, tid);
    if (more) read_gk(c0 + CL, Ln);  // lands during the chunk
    __syncthreads();  // G in; q, k normalised

    // ---- D: the 8×8 diagonal blocks of P in log space; zeros above them ----------------------------------------------
    {
      const int b0 = 8 * warp;
      const int e = lane % 16, i = e / 8, j = e % 8;  // lanes l and l + 16 hold entry l % 16 of two rows
      E* row = Pe + (b0 + i) * LDP + b0 + j;
      const bool writes = lane < 16;
      float x = perkey_diagonal_rows<0>(Qs, Ks, G, b0, lane);
      if (writes) put_p(row, x);
      x = perkey_diagonal_rows<1>(Qs, Ks, G, b0, lane);
      if (writes) put_p(row + 2 * LDP, x);
      x = perkey_diagonal_rows<2>(Qs, Ks, G, b0, lane);
      if (writes) put_p(row + 4 * LDP, x);
      x = perkey_diagonal_rows<3>(Qs, Ks, G, b0, lane);
      if (writes) put_p(row + 6 * LDP, x);
      if ((warp & 1) == 0)  // first half of a 16-row block: the 8×8 block right of the diagonal is zero
        for (int e = lane; e < 64; e += 32) put_p(Pe + (b0 + e / 8) * LDP + b0 + 8 + e % 8, 0.f);
    }
    if (a.residual.ptr) {  // u = v (w = 1)
      for (int x = tid; x < L * BVW; x += sh::threads) {
        const int r = x / BVW, j = x % BVW;
        if (j < cta.Vw) a.residual.row(seq.bt, c0 + r, hv)[(cta.jt + j) * a.residual.str[3]] = from_float<T>(to_float(Vs[r * LDV + j]));
      }
    }
    __syncthreads();  // every read of the raw q, k done

    // ---- E: the decayed operands --------------------------------------------------------------------------------
    // This thread: key channel d of row blocks 2·half and 2·half + 1. Each factor 2^(x − y) with x ≤ y is one exp2
    // or a product of such factors (every one ≤ 1: no overflow), so a row costs three exp2 (its row-block and
    // 8×8 references; q ⊙ 2^G) rather than one per operand.
    {
      auto gat = [&](int r) { return G[r * LDG + d]; };
      const float gC = gat(CL - 1), g15 = gat(15), g31 = gat(31), g47 = gat(47);
      const float d1 = ex2(g31 - g15), d2 = ex2(g47 - g31);  // KR_1 → KR_2 → KR_3 factors
#pragma unroll
      for (int b = 0; b < 2; ++b) {
        const int ib = 2 * half + b;
        const float gm = gat(16 * ib + 7), ge = gat(16 * ib + 15);  // the 8×8 reference row; the block's last row
        const float gp = ib == 1 ? g15 : ib == 2 ? g31 : g47;       // the row before the block (ib ≥ 1)
        const float c_mp = ib >= 1 ? ex2(gm - gp) : 0.f, c_em = ex2(ge - gm), c_Ce = ex2(gC - ge);
#pragma unroll 4
        for (int rho = 0; rho < 16; ++rho) {
          const int r = 16 * ib + rho;
          const float gv = gat(r);
          const float q = to_float(Qs[r * LDK + d]), k = to_float(Ks[r * LDK + d]);
          float fe;  // 2^(G_e − G_r), e the block's last row
          if (rho < 8) {
            const float em = ex2(gm - gv);
            K8[(8 * ib + rho) * LDK + d] = from_float<E>(k * em);
            if (ib >= 1) QR[(r - 16) * LDK + d] = from_float<E>(q * ex2(gv - gp));
            fe = em * c_em;
          } else {
            const float em = ex2(gv - gm);
            Q8[(8 * ib + rho - 8) * LDK + d] = from_float<E>(q * em);
            if (ib >= 1) QR[(r - 16) * LDK + d] = from_float<E>(q * em * c_mp);
            fe = ex2(ge - gv);
          }
          Qs[r * LDK + d] = from_float<E>(q * ex2(gv));
          Ks[r * LDK + d] = from_float<E>(k * fe * c_Ce);
          // KR_j for the blocks j after this one (rows before block j, through row 16j − 1): 2^(G_{16j−1} − G_r)
          float f = fe;
          if (ib < 1) KR[(sh::kr_row(1) + r) * LDK + d] = from_float<E>(k * f), f *= d1;
          if (ib < 2) KR[(sh::kr_row(2) + r) * LDK + d] = from_float<E>(k * f), f *= d2;
          if (ib < 3) KR[(sh::kr_row(3) + r) * LDK + d] = from_float<E>(k * f);
        }
      }
    }
    __syncthreads();  // operands in

    // ---- F: the blocks of P below the diagonal; Q S -------------------------------------------------------------------
    // (row block 3's 48 columns are split over warps 0 and 7, so that no warp has more than 32 products here)
    auto put_strip = [&](const auto& p, int rows, int cols) {  // rows of block rows / 16, from column `cols`
      constexpr int NT = std::extent_v<std::remove_reference_t<decltype(p)>>;
#pragma unroll
      for (int t = 0; t < NT; ++t)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          *reinterpret_cast<std::uint32_t*>(Pe + (rows + acc_row(2 * h)) * LDP + cols + 8 * t + acc_col(0)) =
              pack2<E>(p[t][2 * h], p[t][2 * h + 1]);
    };
    if (warp == 0) {
      float p[4][4] = {};
      mma_strip<E, 4>(p, QR + 32 * LDK, LDK, KR + sh::kr_row(3) * LDK, LDK, KP / 16);
      put_strip(p, 48, 0);
    } else if (warp == 7) {
      float p[2][4] = {};
      mma_strip<E, 2>(p, QR + 32 * LDK, LDK, KR + (sh::kr_row(3) + 32) * LDK, LDK, KP / 16);
      put_strip(p, 48, 32);
    } else if (warp == 1) {
      float p[4][4] = {};
      mma_strip<E, 4>(p, QR + 16 * LDK, LDK, KR + sh::kr_row(2) * LDK, LDK, KP / 16);
      put_strip(p, 32, 0);
    } else if (warp == 2) {
      float p[2][4] = {};
      mma_strip<E, 2>(p, QR, LDK, KR + sh::kr_row(1) * LDK, LDK, KP / 16);
      put_strip(p, 16, 0);
    } else {  // warps 3..6, block ib = warp − 3: rows 8..15 × columns 0..7 (the tile's rows 0..7)
      const int ib = warp - 3;
      float c[4] = {};
      mma_tile<E>(c, Q8 + 8 * ib * LDK, LDK, K8 + 8 * ib * LDK, LDK, KP / 16);
      *reinterpret_cast<std::uint32_t*>(Pe + (16 * ib + 8 + acc_row(0)) * LDP + 16 * ib + acc_col(0)) = pack2<E>(c[0], c[1]);
    }
    float o[8][4] = {};
    mma_strip<E, 8>(o, Qs + r0 * LDK, LDK, ST + c0w * LDK, LDK, KP / 16);
    __syncthreads();  // P in; every read of q ⊙ 2^G and Sᵀ done
    if (more) cta.fetch_q(Qs, a, c0 + CL, Ln);

    // ---- G: O += P V, out; S ← Diag(2^(G_C)) S + K_dᵀ V; Sᵀ for the next chunk -------------------------------------
    mma_strip<E, 8, false, true>(o, Pe + r0 * LDP, LDP, Vs + c0w, LDV, rb + 1);  // P is zero past the diagonal
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float f = ex2(Gc[16 * warp + acc_row(2 * h)]);
#pragma unroll
      for (int nt = 0; nt < BVW / 8; ++nt) acc[nt][2 * h] *= f, acc[nt][2 * h + 1] *= f;
    }
    mma_strip<E, BVW / 8, true, true>(acc, Ks + 16 * warp, LDK, Vs, LDV, CL / 16);
    tiles::store_strip<Store>(a.o, seq.bt, c0, hv, cta.jt, r0, c0w, L, cta.Vw, o, a.scale);  // under the products
    tiles::store_state_t(ST, LDK, acc);  // every read of Sᵀ was before the last barrier
    if (more) scan_gk(Ln);  // tot: its last reader was phase A
  }
  tiles::save_state(acc, a.final_state, seq.row, hv, cta.jt, a.K, a.V);
}

}  // namespace linea::cuda_detail
