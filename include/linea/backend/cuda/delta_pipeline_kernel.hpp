// linea/backend/cuda/delta_pipeline_kernel.hpp — the chunkwise forward of the delta rules with a scalar (or no)
// decay, warp-specialised: key-side producers run a chunk ahead of the state-holding consumers.
//   S_t = γ_t (I − β_t k_t k_tᵀ) S_{t-1} + β_t k_t v_tᵀ,  o_t = s S_tᵀ q_t   (DeltaNet: γ = 1; Gated DeltaNet)
//
// UT form, per 64-token chunk (G_r = Σ_{s ≤ r} log₂ γ_s inside the chunk, C its last row; SPEC §4):
//   producers (4 warps), no state:   P = (Q Kᵀ) ⊙ 2^(G_r − G_s), s ≤ r;   A = Diag(β)(K Kᵀ) ⊙ 2^(G_r − G_s), s < r;
//                                    T = (I + A)⁻¹ (ut_blocks.hpp); the cp.async copies of q and k
//   consumers (8 warps), the state:  Z = Diag(β)(V − Diag(2^G) K S) in place of V (v copied a chunk ahead by them);
//                                    O₁ = Q S;   U = T Z (the write residual u), U_d = Diag(2^(G_C − G)) U;
//                                    O = s [Diag(2^G) O₁ + P U];  S ← 2^(G_C) S + Kᵀ U_d
// Why: the key-side work (P, A and the solve, whose 16×16 forward substitutions keep two warps busy while the
// others wait) has no state in it; done for chunk c + 1 while the consumers work on chunk c, it leaves the
// state's critical path with the three state products. One CTA per (value head, sequence) holds the whole
// 128-column state (64 fp32 registers per consumer thread), so P, A and T are formed once per head. Each side is a
// latency-bound stream of instructions, so every warp issues its products before the element-wise work that waits
// on them (measured on the H200: bench/cuda/README.md).
//
// Outputs = false (kernel_args::states_only, the segmented forward's passes A and M): no q, no P, no O₁ = Q S, no
// P U and no stores of o — the consumers keep Z = V − K S, U = T Z and the state update; the producers A and T. A
// template parameter, not a run-time flag: with the flag read at run time ptxas spilled in the normal path (bf16
// 0 → 8 bytes, fp16 8 → 44), so the normal instantiation stays main's code.
//
// Chunk tiles live in two slots (chunk c mod 2: q, k, v / Z, P, T, G, β); named barriers hand a slot over:
//   full[s]:  producers arrive when chunk c (slot s) is ready, consumers wait
//   empty[s]: consumers arrive when they are done with chunk c, producers wait before they copy chunk c + 2
#pragma once
#include "causal_strip.hpp"
#include "chunk_tiles.hpp"
#include "ut_blocks.hpp"

namespace linea::cuda_detail {

// The rules this kernel computes, main pass: the delta update (b = w = β, one number a token: the kernel scales
// K and V by the one erase gate) with any decay of kind none or scalar (log α through the decay's hook).
// Other erasing updates take the general chunk kernel.
template <class Rule, pass P>
inline constexpr bool delta_chunk_rule = P == pass::main && std::is_same_v<typename Rule::update, update::delta> &&
                                         Rule::decay::kind != decay_kind::per_key;

struct delta_pipeline_shape {
  static constexpr int CL = tiles::CL, KP = tiles::KP, BVW = 128;  // tokens per chunk, padded K, value columns
  static constexpr int LDK = tiles::LDK, LDV = BVW + 8, LDT = tiles::LD64, LDX = tiles::ut_scratch_ld;
  static constexpr int consumers = 256, producers = 128, threads = consumers + producers;
  // 16-bit tiles, in elements: a slot (one chunk), then the consumers' and the producers' own
  static constexpr int q_at = 0,  // q                                 [CL][LDK]
      k_at = q_at + CL * LDK,     // k                                 [CL][LDK]
      v_at = k_at + CL * LDK,     // v, then Z                         [CL][LDV]
      p_at = v_at + CL * LDV,     // P                                 [CL][LDT]
      t_at = p_at + CL * LDT,     // T                                 [CL][LDT]
      slot = t_at + CL * LDT;
  static constexpr int s_at = 2 * slot,  // Sᵀ                        [BVW][LDK]
      u_at = s_at + BVW * LDK,           // U                         [CL][LDV]
      ud_at = u_at + CL * LDV,           // U_d                       [CL][LDV]
      a_at = ud_at + CL * LDV,           // A (producers)             [CL][LDT]
      x_at = a_at + CL * LDT,            // block-column scratch      [3][16][LDX]
      end = x_at + 3 * 16 * LDX;
  static constexpr std::size_t ad_offset = 2 * std::size_t(end);         // A's diagonal blocks, fp32 [4][16][17]
  static constexpr std::size_t gb_offset = ad_offset + 4 * 16 * 17 * 4;  // G, β per slot, fp32 [2][2][CL]
  // the chunk flags (causal_strip.hpp's raise_chunk_flag), int [2][2]: per slot, the producers' (k, g, β), the
  // consumers' (v)
  static constexpr std::size_t flag_offset = gb_offset + 4 * CL * sizeof(float);
  static constexpr std::size_t bytes = flag_offset + 4 * sizeof(int);
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

// Store: how the o and residual strips go to global memory (tiles::strip_store; pko2, issue #15).
template <class Rule, class T, class E, bool Outputs = true, tiles::strip_store Store = tiles::strip_store::sectors>
__global__ void __launch_bounds__(delta_pipeline_shape::threads, 1) delta_pipeline_kernel(const kernel_args<T> a) {
  using sh = delta_pipeline_shape;
  namespace bar = pipeline_barrier;
  using tiles::ex2;
  constexpr int CL = sh::CL, KP = sh::KP, LDK = sh::LDK, LDV = sh::LDV, LDT = sh::LDT;
  constexpr bool decays = Rule::decay::kind == decay_kind::scalar;
  const tiles::site<T, sh::BVW> cta{a};
  const seq_range& seq = cta.seq;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int chunks = static_cast<int>((seq.t1 - seq.t0 + CL - 1) / CL);
  constexpr bool outputs = Outputs;  // else the final state alone (passes A and M of the segmented forward)

  extern __shared__ __align__(16) unsigned char smem_raw[];
  E* base = reinterpret_cast<E*>(smem_raw);
  auto tile = [&](int c, int at) { return base + (c & 1) * sh::slot + at; };  // chunk c's tile
  auto gbf = [&](int c) { return reinterpret_cast<float*>(smem_raw + sh::gb_offset) + 2 * CL * (c & 1); };  // G, β
  float* Ad = reinterpret_cast<float*>(smem_raw + sh::ad_offset);
  E *ST = base + sh::s_at, *Us = base + sh::u_at, *Ud = base + sh::ud_at;
  // A chunk whose k, v, g or β holds an inf or NaN is flagged while they land in shared memory; only a flagged chunk
  // computes U = T Z and O again with the diagonal blocks of T Z and P U summed over s ≤ r alone (causal_strip.hpp),
  // and keeps T's rows before s exact (fill_block_column), so that a non-finite input at token s reaches no output
  // before s, as in the recurrence. (q poisons its own row only.) Finite inputs run main's products unchanged and
  // pay a few shared loads a thread and a compare a chunk. (The exact products in place of the plain ones, behind
  // a branch, cost 4.5-6.7% on the H200; recomputing after them, below, keeps the fast path's schedule.)
  int* flags = reinterpret_cast<int*>(smem_raw + sh::flag_offset);  // [slot][0: producers, 1: consumers]
  if (tid < 4) flags[tid] = -1;
  __syncthreads();

  if (warp >= sh::consumers / 32) {
    // ================= producers: q and k, then P, A, T of each chunk, a chunk ahead of the consumers =================
    const int pw = warp - sh::consumers / 32, ptid = tid - sh::consumers;
    E *As = base + sh::a_at, *X = base + sh::x_at + pw * 16 * sh::LDX;
    const source<T> src{a};
    float gb[4] = {};  // warp 0: log₂ γ and β of rows lane, lane + 32 of the next chunk, read a chunk ahead
    auto load_gb = [&](int c) {
      const index_t c0 = seq.t0 + static_cast<index_t>(c) * CL;
      const int L = cta.rows_in(c0);
      if constexpr (decays) {
        gb[0] = lane < L ? tiles::clamped_log2_decay(src.template token_log_alpha<Rule>(seq.bt, c0 + lane, cta.hv) * tiles::log2e) : 0.f;
        gb[1] = lane + 32 < L ? tiles::clamped_log2_decay(src.template token_log_alpha<Rule>(seq.bt, c0 + lane + 32, cta.hv) * tiles::log2e) : 0.f;
      }
      gb[2] = lane < L ? src.template token_erase_gate<Rule>(seq.bt, c0 + lane, cta.hv) : 0.f;
      gb[3] = lane + 32 < L ? src.template token_erase_gate<Rule>(seq.bt, c0 + lane + 32, cta.hv) : 0.f;
    };
    if (chunks > 0 && pw == 0) load_gb(0);
    for (int c = 0; c < chunks; ++c) {
      const index_t c0 = seq.t0 + static_cast<index_t>(c) * CL;
      const int L = cta.rows_in(c0);
      if (c >= 2) bar::sync(bar::empty + (c & 1), sh::threads);  // the consumers are done with chunk c − 2
      E *Qs = tile(c, sh::q_at), *Ks = tile(c, sh::k_at), *Ps = tile(c, sh::p_at), *Ts = tile(c, sh::t_at);
      if (outputs) cta.template fetch_q<sh::producers>(Qs, a, c0, L, ptid);
      cta.template fetch_k<sh::producers>(Ks, a, c0, L, ptid);
      float* G = gbf(c);
      int* flag = flags + 2 * (c & 1);
      if (pw == 0) {  // G (the in-chunk scan) and β; then the next chunk's g and β, landing meanwhile
        if (!isfinite(gb[0] + gb[1] + gb[2] + gb[3])) raise_chunk_flag(flag, c);  // (a clamped gate of 0 is finite)
        tiles::scan64(gb[0], gb[1], G);
        G[CL + lane] = gb[2], G[CL + lane + 32] = gb[3];
        if (c + 1 < chunks) load_gb(c + 1);
      }
      tiles::cp_async_wait_all();                // this thread's pieces of q and k
      if (fetched_rows_nonfinite<KP / 8, sh::producers, CL>(Ks, LDK, ptid)) raise_chunk_flag(flag, c);
      bar::sync(bar::producers, sh::producers);  // everyone's, G and β, the flag; chunk c − 1's solve is done with A
      if ((a.l2q && outputs) || a.l2k) {  // the in-kernel L2 norm, on the tiles in place (the consumers read them normalised)
        if (a.l2q && outputs) tiles::l2norm_rows<sh::producers>(Qs, LDK, ptid);
        if (a.l2k) tiles::l2norm_rows<sh::producers>(Ks, LDK, ptid);
        bar::sync(bar::producers, sh::producers);
      }

      // P (warps 0, 1) or A (warps 2, 3), by row blocks of 16: warp parity 0 takes rows 48..63 and 0..15,
      // parity 1 rows 32..47 and 16..31 (ten 16×16 blocks on or below the diagonal each way).
      const bool is_a = pw >= 2;
      const E* Xs = is_a ? Ks : Qs;
      // a warp's two strips: both products first, then their element-wise work (which overlaps the second's latency)
      auto product = [&](auto& x, int rb) {
        constexpr int NT = std::extent_v<std::remove_reference_t<decltype(x)>>;
        mma_strip<E, NT, false, false>(x, Xs + 16 * rb * LDK, LDK, Ks, LDK, KP / 16);
      };
      auto finish = [&](const auto& x, int rb) {
        constexpr int NT = std::extent_v<std::remove_reference_t<decltype(x)>>;
        const int r0 = 16 * rb;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = r0 + acc_row(2 * h);
          [[maybe_unused]] const float gr = decays ? G[r] : 0.f;
          const float mul = is_a ? G[CL + r] : 1.f;
#pragma unroll
          for (int t = 0; t < NT; ++t) {
            const int s0 = 8 * t + acc_col(0);
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
      if (is_a || outputs) {  // (states only: no P)
        if ((pw & 1) == 0) {
          float x3[8][4] = {}, x0[2][4] = {};
          product(x3, 3), product(x0, 0), finish(x3, 3), finish(x0, 0);
        } else {
          float x2[6][4] = {}, x1[4][4] = {};
          product(x2, 2), product(x1, 1), finish(x2, 2), finish(x1, 1);
        }
      }
      bar::sync(bar::producers, sh::producers);  // P, A and A's diagonal blocks in
      if (pw < 2) tiles::invert_diagonal_blocks(Ad, Ts, LDT, pw);
      bar::sync(bar::producers, sh::producers);
      if (pw < 3) tiles::fill_block_column(As, Ts, LDT, X, pw, flag[0] == c);
      // (bar.arrive alone would order the writes above for the consumers — it synchronises with their bar.sync —
      // but compute-sanitizer's racecheck does not model it: the producers' own barrier first keeps it clean.)
      bar::sync(bar::producers, sh::producers);
      bar::arrive(bar::full + (c & 1), sh::threads);  // chunk c is ready
    }
  } else {
    // ================= consumers: the state, its three products, the outputs =================
    float acc[sh::BVW / 8][4];  // S: key rows 16·warp .. + 15, all 128 value columns
    tiles::load_state(acc, a.initial_state, seq.row, cta.hv, cta.jt, a.K, a.V);
    tiles::store_state_t(ST, LDK, acc);
    // Warp w: rows r0 .. r0 + 15 of Z, U and O, value columns c0w .. c0w + 63.
    const int rb = warp >> 1, r0 = 16 * rb, c0w = 64 * (warp & 1);
    // v is the consumers' own input: they copy chunk c + 1's while they work on chunk c (no producer time on it)
    if (chunks > 0) cta.template fetch_v<sh::consumers>(tile(0, sh::v_at), a, seq.t0, cta.rows_in(seq.t0), tid);
    for (int c = 0; c < chunks; ++c) {
      const int s = c & 1;
      const index_t c0 = seq.t0 + static_cast<index_t>(c) * CL;
      const int L = cta.rows_in(c0);
      const E *Qs = tile(c, sh::q_at), *Ks = tile(c, sh::k_at), *Ps = tile(c, sh::p_at), *Ts = tile(c, sh::t_at);
      E* Zs = tile(c, sh::v_at);
      const float* G = gbf(c);  // G, then β at + CL
      tiles::cp_async_wait_all();             // this thread's pieces of v
      if (fetched_rows_nonfinite<sh::BVW / 8, sh::consumers, CL>(Zs, LDV, tid)) raise_chunk_flag(flags + 2 * s + 1, c);
      bar::sync(bar::full + s, sh::threads);  // chunk c ready, its v in; every consumer done with chunk c − 1
      const bool nonfinite = flags[2 * s] == c || flags[2 * s + 1] == c;  // this chunk's flags, raised before it
      if (c + 1 < chunks)                     // into chunk c − 1's Z, last read before the barrier above
        cta.template fetch_v<sh::consumers>(tile(c + 1, sh::v_at), a, c0 + CL, cta.rows_in(c0 + CL), tid);

      // ---- X: Z = Diag(β) (V − Diag(2^G) K S) in place of V; O₁ = Q S ----------------------------------------------
      float o[8][4] = {};
      {
        float z[8][4] = {};
        mma_strip<E, 8, false, false>(z, Ks + r0 * LDK, LDK, ST + c0w * LDK, LDK, KP / 16);
        if (outputs) mma_strip<E, 8, false, false>(o, Qs + r0 * LDK, LDK, ST + c0w * LDK, LDK, KP / 16);  // Z's work overlaps it
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
      bar::sync(bar::consumers, sh::consumers);  // Z in; every read of Sᵀ done

      // ---- U = T Z (T is zero past the diagonal block); U_d; the residual ---------------------------------------------
      {
        float u[8][4] = {};
        mma_strip<E, 8, false, true>(u, Ts + r0 * LDT, LDT, Zs + c0w, LDV, rb + 1);
        if (nonfinite) {  // a flagged chunk: U again, its diagonal block over s ≤ r only (the fast path is main's)
#pragma unroll
          for (int t = 0; t < 8; ++t) u[t][0] = u[t][1] = u[t][2] = u[t][3] = 0.f;
          causal_strip<E, 8, true, false>(u, Ts + r0 * LDT, LDT, Zs + c0w, LDV, rb + 1, true);
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = r0 + acc_row(2 * h);
          const float f = decays ? ex2(G[CL - 1] - G[r]) : 1.f;
#pragma unroll
          for (int t = 0; t < 8; ++t) {
            const int j = c0w + 8 * t + acc_col(0);
            *reinterpret_cast<std::uint32_t*>(Us + r * LDV + j) = pack2<E>(u[t][2 * h], u[t][2 * h + 1]);
            *reinterpret_cast<std::uint32_t*>(Ud + r * LDV + j) = pack2<E>(f * u[t][2 * h], f * u[t][2 * h + 1]);
          }
        }
        if (a.residual.ptr && outputs) tiles::store_strip<Store>(a.residual, seq.bt, c0, cta.hv, cta.jt, r0, c0w, L, cta.Vw, u, 1.f);
      }
      bar::sync(bar::consumers, sh::consumers);  // U, U_d in

      // ---- Y: O = Diag(2^G) O₁ + P U, out; S ← 2^(G_C) S + Kᵀ U_d; Sᵀ for the next chunk ---------------------------
      auto scale_rows_by_decay = [&](float (&x)[8][4]) {  // O₁ ← Diag(2^G) O₁ (this lane's rows)
        if constexpr (decays) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const float f = ex2(G[r0 + acc_row(2 * h)]);
#pragma unroll
            for (int t = 0; t < 8; ++t) x[t][2 * h] *= f, x[t][2 * h + 1] *= f;
          }
        }
      };
      if (outputs) {
        scale_rows_by_decay(o);
        mma_strip<E, 8, false, true>(o, Ps + r0 * LDT, LDT, Us + c0w, LDV, rb + 1);  // P is zero past the diagonal
      }
      if constexpr (decays) {
        const float f = ex2(G[CL - 1]);
#pragma unroll
        for (int nt = 0; nt < sh::BVW / 8; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[nt][e] *= f;
      }
      mma_strip<E, sh::BVW / 8, true, true>(acc, Ks + 16 * warp, LDK, Ud, LDV, CL / 16);
      if (nonfinite && outputs) {  // a flagged chunk: O again (Sᵀ is still the chunk's), P U's diagonal block over s ≤ r only
#pragma unroll
        for (int t = 0; t < 8; ++t) o[t][0] = o[t][1] = o[t][2] = o[t][3] = 0.f;
        mma_strip<E, 8, false, false>(o, Qs + r0 * LDK, LDK, ST + c0w * LDK, LDK, KP / 16);
        scale_rows_by_decay(o);
        causal_strip<E, 8, true, false>(o, Ps + r0 * LDT, LDT, Us + c0w, LDV, rb + 1, true);
        bar::sync(bar::consumers, sh::consumers);  // every warp's reads of Sᵀ done before any rewrites it (below)
      }
      if (outputs) tiles::store_strip<Store>(a.o, seq.bt, c0, cta.hv, cta.jt, r0, c0w, L, cta.Vw, o, a.scale);  // under the products
      tiles::store_state_t(ST, LDK, acc);  // every read of Sᵀ was before the first barrier of this chunk
      if (c + 2 < chunks) bar::arrive(bar::empty + s, sh::threads);  // slot s is free for chunk c + 2
    }
    tiles::save_state(acc, a.final_state, seq.row, cta.hv, cta.jt, a.K, a.V);
  }
}

}  // namespace linea::cuda_detail
