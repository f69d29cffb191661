// linea/backend/cuda/chunk_phases/layout.hpp — the general chunk kernel's CTA: its shared-memory layout (one tile
// a line, with its shape), where the CTA works, and the element access every phase shares.
//
// Tiles are row-major; a shape (ROWS,LD) is rows × row stride in elements. CL tokens per chunk, KP key channels and
// VP value columns of this CTA; rows are padded (LDK, LDC) so that ldmatrix and 16-byte accesses of consecutive
// rows fall in different banks.
#pragma once
#include "../chunk_tiles.hpp"

namespace linea::cuda_detail {

constexpr int chunk_threads = 256, chunk_kp = 128, chunk_vp = 128;  // K and V are padded to 128

template <class Rule, class T_, class E_, pass P, int BV>
struct chunk_shape {
  using T = T_;  // input type
  using E = E_;  // operand type (tiles, products)
  using rule = Rule;
  using traits = pass_traits<Rule, P>;
  static constexpr int CL = 32;  // tokens per chunk
  static constexpr int KP = chunk_kp, VP = BV, NW = chunk_threads / 32;
  static constexpr int PE = 16 / static_cast<int>(sizeof(E));  // row padding: 16 bytes (ldmatrix, banks)
  static constexpr int LDK = KP + PE, LDC = CL + PE, LDZ = BV + 1;
  // Aᵀ rows: 16 bytes aligned for 16-bit operands (the solve reads four at a time); float operands have no room
  static constexpr int LDM = CL + (sizeof(E) == 2 ? 4 : 1);
  // per-key log decays: rows 4 words apart mod 32 banks, so 16-byte reads of 8 rows never collide
  // (not for float operands: their tiles leave no room under the 227 KB)
  static constexpr int LDG = KP + (sizeof(E) == 2 ? 4 : 0);
  // The raw chunk is staged asynchronously (cp.async) for 16-bit inputs; float inputs load it directly.
  static constexpr bool async = sizeof(T) == 2;
  // Per-key decays, 16-bit operands: the 16×16 diagonal blocks split once more at their row 7 (8×8 blocks in
  // log space, the 8×8 block below them on tensor cores); float operands have no room for the extra tile.
  static constexpr bool split8 = traits::per_key && sizeof(E) == 2;
  // Z is fp32: a tile of its own for 16-bit operands, the U tile itself when E = float (saves 16 KB).
  static constexpr bool z_in_u = std::is_same_v<E, float>;
  // raw tiles staged per chunk, at fixed indices: q 0, k 1, v 2, gk 3, b 4, w 5 (b and w need the stage to reach
  // index 5 even when the decay stages no gk)
  static constexpr int staged = !async                               ? 0
                                : traits::reads_b || traits::reads_w ? 6
                                : traits::per_key                    ? 4
                                                                     : 3;

  // ---- operand tiles (E), offsets in elements, in the order they are carved -----------------------------------
  static constexpr int pk = traits::per_key ? CL * LDK : 0, p8 = split8 ? CL * LDK : 0;
  static constexpr int s_at = 0,    // Sᵀ                                                            (VP,LDK)
      q_at = s_at + VP * LDK,       // q̂, then q̂ ⊙ Γ                                                (CL,LDK)
      k_at = q_at + CL * LDK,       // k̂                                                            (CL,LDK)
      ek_at = k_at + CL * LDK,      // erase key β k̂ or b ⊙ k̂                                       (CL,LDK)
      xg_at = ek_at + CL * LDK,     // erase key ⊙ Γ (per-key decays)                               (CL,LDK)
      of_at = xg_at + CL * LDK,     // per-key: rows < 16 k ⊙ exp(G_15 − G),                        (CL,LDK)
                                    //          rows ≥ 16 q ⊙ exp(G − G_15)
      oe_at = of_at + pk,           // per-key: rows ≥ 16 erase key ⊙ exp(G − G_15); split8: rows   (CL,LDK)
                                    //          8h..8h+7 k ⊙ exp(G_m − G) of rows 16h..16h+7, m = 16h + 7
      d8_at = oe_at + pk,           // split8, half h: rows 16h..+7 q ⊙ exp(G − G_m),               (CL,LDK)
                                    //          rows 16h+8..+15 erase key ⊙ exp(G − G_m)
      kdt_at = d8_at + p8,          // (K ⊙ exp(G_C − G))ᵀ                                          (KP,LDC)
      ust_at = kdt_at + KP * LDC,   // w ⊙ v, then U, transposed                                    (VP,LDC)
      p_at = ust_at + VP * LDC,     // P                                                            (CL,LDC)
      e_end = p_at + CL * LDC;
  // ---- fp32 tiles, offsets in floats from the end of the operand tiles --------------------------------------------
  static constexpr int z_at = 0,              // Z (16-bit operands; else Z is in the U tile)      (CL,LDZ)
      m_at = z_at + (z_in_u ? 0 : CL * LDZ),  // Aᵀ                                                 (CL,LDM)
      g_at = m_at + CL * LDM,                 // per-key log decays, cumulated                      (CL,LDG)
      gsc_at = g_at + (traits::per_key ? CL * LDG : 0),  // scalar log decays                     (CL)
      bet_at = gsc_at + CL,                   // β                                                  (CL)
      qz_at = bet_at + CL,                    // normaliser per row                                 (2·CL)
      gcum_at = qz_at + 2 * CL,               // scalar log decays, cumulated                       (CL)
      zsum_at = gcum_at + CL,                 // Σ k over the earlier chunks (normalize)            (KP)
      f_end = zsum_at + KP;
  // ---- then the raw chunk (T): q, k, v (, gk) (, b, w)                                          (staged,CL,KP)
  static constexpr std::size_t e_tiles = sizeof(E) * std::size_t(e_end), f_tiles = sizeof(float) * std::size_t(f_end);
  static constexpr std::size_t stage_bytes = sizeof(T) * std::size_t(staged) * CL * KP;
  static constexpr std::size_t bytes = e_tiles + f_tiles + stage_bytes;
  // Z and O are cut into 16×32 strips, one per warp; P and A go to the warps that have no strip.
  static constexpr int strips = (CL / 16) * (VP / 32), spare = strips % NW;
  // Two CTAs per SM when the value columns are split (registers capped at 128 per thread to fit them).
  static constexpr int min_blocks = BV < chunk_vp ? 2 : 1;

  static_assert(CL == 32, "the products are laid out for two 16-row sub-chunks, the decay scan for one warp");
  static_assert(KP == 4 * 32, "the row staging gives each lane four key channels");
  static_assert(VP % 32 == 0 && VP <= chunk_vp, "value columns in 16×32 strips");
  static_assert(KP == 16 * NW, "the state: warp w holds key rows 16w .. 16w + 15");
  static_assert(chunk_threads >= KP + 32 + 32, "the decay phase: a thread per key channel, a scan warp, a clearing warp");
};

// Value columns per CTA. The K×V state splits by value columns (the delta rule's solve is column by column, and
// every key-side quantity — decays, P, A — is the same for all columns): 64 columns give two CTAs per
// (sequence, head) and two CTAs per SM when the shared memory of both fits, which hides the latency of one
// CTA's serial phases behind the other's. Rules whose tiles do not fit twice keep one CTA of 128 columns.
template <class Rule, class T, class E, pass P>
inline constexpr int chunk_bv = chunk_shape<Rule, T, E, P, 64>::bytes <= 112 * 1024 ? 64 : chunk_vp;

// The tiles of chunk_shape, carved from the dynamic shared memory.
template <class Sh>
struct chunk_smem {
  using E = typename Sh::E;
  E *SopT, *Qs, *Ks, *EK, *XG, *OF, *OE, *D8, *KdT, *UsT, *Pe;
  float *Zs, *Ms, *Gs, *gsc, *bet, *qz, *gcum, *zsum;
  typename Sh::T* stage;

  __device__ explicit chunk_smem(unsigned char* raw) {
    E* e = reinterpret_cast<E*>(raw);
    SopT = e + Sh::s_at, Qs = e + Sh::q_at, Ks = e + Sh::k_at, EK = e + Sh::ek_at, XG = e + Sh::xg_at;
    OF = e + Sh::of_at, OE = e + Sh::oe_at, D8 = e + Sh::d8_at, KdT = e + Sh::kdt_at, UsT = e + Sh::ust_at;
    Pe = e + Sh::p_at;
    float* f = reinterpret_cast<float*>(e + Sh::e_end);
    Zs = f + Sh::z_at, Ms = f + Sh::m_at, Gs = f + Sh::g_at, gsc = f + Sh::gsc_at, bet = f + Sh::bet_at;
    qz = f + Sh::qz_at, gcum = f + Sh::gcum_at, zsum = f + Sh::zsum_at;
    stage = reinterpret_cast<typename Sh::T*>(f + Sh::f_end);
  }
  // G of row r, key channel d: the cumulated log decay (base 2), per key or scalar; 0 without decay.
  __device__ float G(int r, int d) const {
    if constexpr (Sh::traits::per_key) return Gs[r * Sh::LDG + d];
    else if constexpr (Sh::traits::scalar) return gcum[r];
    else return 0.f;
  }
};

// Where a CTA works — blockIdx = (value head, sequence, tile of VP value columns) — and its tiles.
template <class Sh>
struct chunk_cta {
  using T = typename Sh::T;
  const kernel_args<T>& a;
  const source<T> src;
  const index_t K, Vd;  // key width; value width (the keys' in the stats pass)
  const index_t hv, n, jt, hk;  // value head; sequence; first value column; query / key head
  const seq_range seq;
  const int tid, warp, lane;
  const chunk_smem<Sh> sm;

  __device__ chunk_cta(const kernel_args<T>& a_, unsigned char* raw)
      : a(a_), src{a_}, K(a_.K), Vd(Sh::traits::stats ? a_.K : a_.V), hv(blockIdx.x), n(blockIdx.y),
        jt(static_cast<index_t>(blockIdx.z) * Sh::VP),
        hk(hv / a_.G),  // once: a 64-bit division is not cheap
        seq(sequence_of(a_, n)), tid(threadIdx.x), warp(tid >> 5), lane(tid & 31), sm(raw) {}
  // tokens of the chunk at c0 (CL, or fewer at the end of the sequence)
  __device__ int rows_in(index_t c0) const { return static_cast<int>(seq.t1 - c0 < Sh::CL ? seq.t1 - c0 : index_t(Sh::CL)); }
};

// ---- element access -----------------------------------------------------------------------------------------------
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

// 2^x for the decay factors (log decays are kept in base 2, so each factor is one exp2): accurate for float32
// operands (SPEC §5: 1e-5), the approximate unit for 16-bit ones.
template <class E>
__device__ __forceinline__ float exp2_for(float x) {
  if constexpr (std::is_same_v<E, float>) return exp2f(x);
  else return tiles::ex2(x);
}

}  // namespace linea::cuda_detail
