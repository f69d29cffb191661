// linea/backend/cuda/delta_pipeline_kernel.hpp — the chunkwise forward of the delta rules with a scalar (or no)
// decay, warp-specialised: key-side producers run a chunk ahead of the state-holding consumers.
//   S_t = γ_t (I − β_t k_t k_tᵀ) S_{t-1} + β_t k_t v_tᵀ,  o_t = s S_tᵀ q_t   (DeltaNet: γ = 1; Gated DeltaNet)
//
// Same UT form as delta_chunk_kernel.hpp (per 64-token chunk, G_r = Σ_{s ≤ r} log₂ γ_s, C the last row):
//   producers (8 warps), no state:   P = (Q Kᵀ) ⊙ 2^(G_r − G_s), s ≤ r;   A = Diag(β)(K Kᵀ) ⊙ 2^(G_r − G_s), s < r;
//                                    T = (I + A)⁻¹ (ut_blocks.hpp); q and k of the next chunk by cp.async
//   consumers (8 warps), the state:  Z = Diag(β)(V − Diag(2^G) K S) in place of V (v copied a chunk ahead by them),
//                                    O₁ = Q S;   U = T Z in place of Z;
//                                    O = s [Diag(2^G) O₁ + P U];  S ← 2^(G_C) S + (K Diag(F))ᵀ U,  F_r = 2^(G_C − G_r)
// Why: in delta_chunk_kernel every warp waits through P, A and the solve of each chunk (half its time, most of it
// in two warps); here they are done for chunk c + 1 while the consumers work on chunk c, so the state's critical
// path is the three state products. One CTA per (value head, sequence) holds the whole 128-column state
// (64 fp32 registers per consumer thread), so P, A and T are formed once per head, not once per value tile.
//
// Buffers: q and k in three stages (chunk c mod 3: the producers copy chunk c + 1's while they work on chunk c,
// so its latency is hidden); v / Z / U, P, T, G, β, F in two slots (chunk c mod 2). Named barriers hand them over:
//   full[s]:  producers arrive when chunk c (slot s = c mod 2) is ready, consumers wait
//   empty[s]: consumers arrive when they are done with chunk c; producers wait before they reuse its slot (for
//             chunk c + 2) and its q / k stage (for chunk c + 3, copied during chunk c + 2)
// U overwrites Z (one barrier more) and U's row factors F scale Kᵀ's fragments in registers (no U_d tile), so
// that the third stage fits in the 227 KB of one SM.
#pragma once
#include "chunk_tiles.hpp"
#include "ut_blocks.hpp"

namespace linea::cuda_detail {

struct delta_pipeline_shape {
  static constexpr int CL = tiles::CL, KP = tiles::KP, BVW = 128;  // tokens per chunk, padded K, value columns
  static constexpr int LDK = tiles::LDK, LDV = BVW + 8, LDT = tiles::LD64, LDX = tiles::ut_scratch_ld;
  static constexpr int consumers = 256, producers = 256, threads = consumers + producers;
  // registers per thread after setmaxnreg (sm_90a): the consumers hold the state, 256 · (104 + 152) = 64 K
  static constexpr int producer_regs = 104, consumer_regs = 152;
  // 16-bit tiles, in elements
  static constexpr int qk_stage = 2 * CL * LDK;  // q [CL][LDK], then k [CL][LDK]; three stages from 0
  static constexpr int v_at = 3 * qk_stage,      // a slot: v, then Z, then U   [CL][LDV]
      p_at = v_at + CL * LDV,                    //         P                   [CL][LDT]
      t_at = p_at + CL * LDT,                    //         T                   [CL][LDT]
      slot = t_at + CL * LDT - v_at;             // two slots from v_at
  static constexpr int s_at = v_at + 2 * slot,   // Sᵀ (consumers)              [BVW][LDK]
      a_at = s_at + BVW * LDK,                   // A (producers)               [CL][LDT]
      x_at = a_at + CL * LDT,                    // block-column scratch        [3][16][LDX]
      end = x_at + 3 * 16 * LDX;
  static constexpr std::size_t ad_offset = 2 * std::size_t(end);         // A's diagonal blocks, fp32 [4][16][17]
  static constexpr std::size_t gb_offset = ad_offset + 4 * 16 * 17 * 4;  // G, β, F per slot, fp32 [2][3][CL]
  static constexpr std::size_t bytes = gb_offset + 2 * 3 * CL * sizeof(float);
  static_assert(ad_offset % 16 == 0 && gb_offset % 16 == 0, "16-byte aligned tiles");
  static_assert(bytes <= 227 * 1024, "one CTA per SM");
};

namespace pipeline_barrier {  // named barrier ids (0 is __syncthreads)
constexpr int consumers = 1, producers = 2, full = 3, empty = 5;  // full / empty: + slot
__device__ __forceinline__ void sync(int id, int count) { asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory"); }
__device__ __forceinline__ void arrive(int id, int count) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
}  // namespace pipeline_barrier

template <class Rule, class T, class E>
__global__ void __launch_bounds__(delta_pipeline_shape::threads, 1) delta_pipeline_kernel(const kernel_args<T> a) {
  using sh = delta_pipeline_shape;
  namespace bar = pipeline_barrier;
  using tiles::ex2;
  constexpr int CL = sh::CL, KP = sh::KP, LDK = sh::LDK, LDV = sh::LDV, LDT = sh::LDT;
  constexpr bool decays = Rule::decay::scalar_gate;
  const tiles::site<T, sh::BVW> cta{a};
  const seq_range& seq = cta.seq;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int chunks = static_cast<int>((seq.t1 - seq.t0 + CL - 1) / CL);

  extern __shared__ __align__(16) unsigned char smem_raw[];
  E* base = reinterpret_cast<E*>(smem_raw);
  auto q_of = [&](int c) { return base + (c % 3) * sh::qk_stage; };  // chunk c's q; its k at + CL · LDK
  auto in_slot = [&](int c, int at) { return base + (c & 1) * sh::slot + at; };
  auto gbf = [&](int c) { return reinterpret_cast<float*>(smem_raw + sh::gb_offset) + 3 * CL * (c & 1); };  // G, β, F
  float* Ad = reinterpret_cast<float*>(smem_raw + sh::ad_offset);
  E* ST = base + sh::s_at;

  if (warp >= sh::consumers / 32) {
    // ================= producers: q, k copied a chunk ahead; P, A, T a chunk ahead of the consumers =================
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(sh::producer_regs));
#endif
    const int pw = warp - sh::consumers / 32, ptid = tid - sh::consumers;
    E *As = base + sh::a_at, *X = base + sh::x_at + pw * 16 * sh::LDX;
    const source<T> src{a};
    auto fetch_qk = [&](int c) {  // one cp.async group
      const index_t c0 = seq.t0 + static_cast<index_t>(c) * CL;
      const int L = cta.rows_in(c0);
      cta.template fetch_q<sh::producers>(q_of(c), a, c0, L, ptid);
      cta.template fetch_k<sh::producers>(q_of(c) + CL * LDK, a, c0, L, ptid);
      tiles::cp_async_commit();
    };
    float gb[4] = {};  // warp 0: log₂ γ and β of rows lane, lane + 32 of the next chunk, read a chunk ahead
    auto load_gb = [&](int c) {
      const index_t c0 = seq.t0 + static_cast<index_t>(c) * CL;
      const int L = cta.rows_in(c0);
      if constexpr (decays) {
        gb[0] = lane < L ? src.g(seq.bt, c0 + lane, cta.hv) * tiles::log2e : 0.f;
        gb[1] = lane + 32 < L ? src.g(seq.bt, c0 + lane + 32, cta.hv) * tiles::log2e : 0.f;
      }
      gb[2] = lane < L ? src.beta(seq.bt, c0 + lane, cta.hv) : 0.f;
      gb[3] = lane + 32 < L ? src.beta(seq.bt, c0 + lane + 32, cta.hv) : 0.f;
    };
    if (chunks > 0) {
      fetch_qk(0);
      if (pw == 0) load_gb(0);
    }
    for (int c = 0; c < chunks; ++c) {
      const int s = c & 1;
      const bool next = c + 1 < chunks;
      if (c >= 2) bar::sync(bar::empty + s, sh::threads);  // consumers done with chunk c − 2: slot s, stage (c + 1) mod 3
      if (next) fetch_qk(c + 1);
      float* G = gbf(c);
      if (pw == 0) {  // G (the in-chunk scan), β, F = 2^(G_C − G); then the next chunk's g and β, landing meanwhile
        tiles::scan64(gb[0], gb[1], G);
        G[CL + lane] = gb[2], G[CL + lane + 32] = gb[3];
        __syncwarp();
        G[2 * CL + lane] = decays ? ex2(G[CL - 1] - G[lane]) : 1.f;
        G[2 * CL + lane + 32] = decays ? ex2(G[CL - 1] - G[lane + 32]) : 1.f;
        if (next) load_gb(c + 1);
      }
      if (next) tiles::cp_async_wait<1>();  // this thread's pieces of chunk c's q and k (chunk c + 1's in flight)
      else tiles::cp_async_wait<0>();
      bar::sync(bar::producers, sh::producers);  // everyone's, and G, β, F; chunk c − 1's solve is done with A
      const E *Qs = q_of(c), *Ks = q_of(c) + CL * LDK;
      E *Ps = in_slot(c, sh::p_at), *Ts = in_slot(c, sh::t_at);

      // P (warps 0..3) or A (warps 4..7) in 16-row strips of the blocks on or below the diagonal (ten 16×16
      // blocks): warp j = pw mod 4 takes rows 48..63 columns 0..31 (j = 0) or 32..63 (j = 1), rows 32..47 (j = 2),
      // rows 16..31 and 0..15 (j = 3): at most three blocks each.
      const bool is_a = pw >= 4;
      const E* Xs = is_a ? Ks : Qs;
      auto strip = [&](auto nt_tag, int rb, int col0) {
        constexpr int NT = decltype(nt_tag)::value;
        const int r0 = 16 * rb;
        float x[NT][4] = {};
        mma_strip<E, NT, false, false>(x, Xs + r0 * LDK, LDK, Ks + col0 * LDK, LDK, KP / 16);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = r0 + acc_row(2 * h);
          [[maybe_unused]] const float gr = decays ? G[r] : 0.f;
          const float mul = is_a ? G[CL + r] : 1.f;
#pragma unroll
          for (int t = 0; t < NT; ++t) {
            const int s0 = col0 + 8 * t + acc_col(0);
            float d0 = mul, d1 = mul;
            if constexpr (decays) d0 *= ex2(gr - G[s0]), d1 *= ex2(gr - G[s0 + 1]);
            // selects: what is masked may be inf
            const int lim = is_a ? r - 1 : r;
            const float v0 = s0 <= lim ? x[t][2 * h] * d0 : 0.f, v1 = s0 + 1 <= lim ? x[t][2 * h + 1] * d1 : 0.f;
            *reinterpret_cast<std::uint32_t*>((is_a ? As : Ps) + r * LDT + s0) = pack2<E>(v0, v1);
            if (is_a && s0 >= r0) {  // the diagonal block, in fp32 for the substitution
              float* d = Ad + r * 17 + s0 - r0;  // [block rb][r − r0][s0 − r0]
              d[0] = v0, d[1] = v1;
            }
          }
        }
      };
      using four = std::integral_constant<int, 4>;
      switch (pw & 3) {
        case 0: strip(four{}, 3, 0); break;
        case 1: strip(four{}, 3, 32); break;
        case 2: strip(std::integral_constant<int, 6>{}, 2, 0); break;
        default: strip(four{}, 1, 0), strip(std::integral_constant<int, 2>{}, 0, 0);
      }
      bar::sync(bar::producers, sh::producers);  // P, A and A's diagonal blocks in
      if (pw < 2) tiles::invert_diagonal_blocks(Ad, Ts, LDT, pw);
      bar::sync(bar::producers, sh::producers);
      if (pw < 3) tiles::fill_block_column(As, Ts, LDT, X, pw);
      // (bar.arrive alone would order the writes above for the consumers — it synchronises with their bar.sync —
      // but compute-sanitizer's racecheck does not model it: the producers' own barrier first keeps it clean.)
      bar::sync(bar::producers, sh::producers);
      bar::arrive(bar::full + s, sh::threads);     // chunk c is ready
    }
  } else {
    // ================= consumers: the state, its three products, the outputs =================
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(sh::consumer_regs));
#endif
    float acc[sh::BVW / 8][4];  // S: key rows 16·warp .. + 15, all 128 value columns
    tiles::load_state(acc, a.initial_state, seq.row, cta.hv, cta.jt, a.K, a.V);
    tiles::store_state_t(ST, LDK, acc);
    // Warp w: rows r0 .. r0 + 15 of Z, U and O, value columns c0w .. c0w + 63.
    const int rb = warp >> 1, r0 = 16 * rb, c0w = 64 * (warp & 1);
    // v is the consumers' own input: they copy chunk c + 1's while they work on chunk c
    if (chunks > 0) cta.template fetch_v<sh::consumers>(in_slot(0, sh::v_at), a, seq.t0, cta.rows_in(seq.t0), tid);
    for (int c = 0; c < chunks; ++c) {
      const int s = c & 1;
      const index_t c0 = seq.t0 + static_cast<index_t>(c) * CL;
      const int L = cta.rows_in(c0);
      const E *Qs = q_of(c), *Ks = q_of(c) + CL * LDK, *Ps = in_slot(c, sh::p_at), *Ts = in_slot(c, sh::t_at);
      E* Zs = in_slot(c, sh::v_at);  // v, then Z, then U
      const float* G = gbf(c);        // G, then β at + CL, F at + 2 CL
      tiles::cp_async_wait_all();             // this thread's pieces of v
      bar::sync(bar::full + s, sh::threads);  // chunk c ready, its v in; every consumer done with chunk c − 1
      if (c + 1 < chunks)                     // into chunk c − 1's slot, last read before the barrier above
        cta.template fetch_v<sh::consumers>(in_slot(c + 1, sh::v_at), a, c0 + CL, cta.rows_in(c0 + CL), tid);

      // ---- X: Z = Diag(β) (V − Diag(2^G) K S) in place of V; O₁ = Q S ----------------------------------------------
      {
        float z[8][4] = {};
        mma_strip<E, 8, false, false>(z, Ks + r0 * LDK, LDK, ST + c0w * LDK, LDK, KP / 16);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = r0 + acc_row(2 * h);
          const float beta = G[CL + r], f = decays ? ex2(G[r]) : 1.f;
#pragma unroll
          for (int t = 0; t < 8; ++t) {
            E* at = Zs + r * LDV + c0w + 8 * t + acc_col(0);  // this lane's own two values: in place is safe
            const float v0 = to_float(at[0]), v1 = to_float(at[1]);
            *reinterpret_cast<std::uint32_t*>(at) = pack2<E>(beta * (v0 - f * z[t][2 * h]), beta * (v1 - f * z[t][2 * h + 1]));
          }
        }
      }
      float o[8][4] = {};
      mma_strip<E, 8, false, false>(o, Qs + r0 * LDK, LDK, ST + c0w * LDK, LDK, KP / 16);
      bar::sync(bar::consumers, sh::consumers);  // Z in; every read of Sᵀ done

      // ---- U = T Z (T is zero past the diagonal block), in place of Z; the residual ----------------------------------
      {
        float u[8][4] = {};
        mma_strip<E, 8, false, true>(u, Ts + r0 * LDT, LDT, Zs + c0w, LDV, rb + 1);
        bar::sync(bar::consumers, sh::consumers);  // every read of Z done
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int t = 0; t < 8; ++t)
            *reinterpret_cast<std::uint32_t*>(Zs + (r0 + acc_row(2 * h)) * LDV + c0w + 8 * t + acc_col(0)) =
                pack2<E>(u[t][2 * h], u[t][2 * h + 1]);
        if (a.residual.ptr) tiles::store_strip(a.residual, seq.bt, c0, cta.hv, cta.jt, r0, c0w, L, cta.Vw, u, 1.f);
      }
      bar::sync(bar::consumers, sh::consumers);  // U in

      // ---- Y: O = Diag(2^G) O₁ + P U, out; S ← 2^(G_C) S + (K Diag(F))ᵀ U; Sᵀ for the next chunk --------------------
      if constexpr (decays) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float f = ex2(G[r0 + acc_row(2 * h)]);
#pragma unroll
          for (int t = 0; t < 8; ++t) o[t][2 * h] *= f, o[t][2 * h + 1] *= f;
        }
      }
      mma_strip<E, 8, false, true>(o, Ps + r0 * LDT, LDT, Zs + c0w, LDV, rb + 1);  // P is zero past the diagonal
      tiles::store_strip(a.o, seq.bt, c0, cta.hv, cta.jt, r0, c0w, L, cta.Vw, o, a.scale);
      if constexpr (decays) {
        const float f = ex2(G[CL - 1]);
#pragma unroll
        for (int nt = 0; nt < sh::BVW / 8; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[nt][e] *= f;
      }
      mma_strip<E, sh::BVW / 8, true, true, decays>(acc, Ks + 16 * warp, LDK, Zs, LDV, CL / 16, G + 2 * CL);
      tiles::store_state_t(ST, LDK, acc);  // every read of Sᵀ was before the first barrier of this chunk
      if (c + 2 < chunks) bar::arrive(bar::empty + s, sh::threads);  // slot s and chunk c's q / k stage are free
    }
    tiles::save_state(acc, a.final_state, seq.row, cta.hv, cta.jt, a.K, a.V);
  }
}

}  // namespace linea::cuda_detail
