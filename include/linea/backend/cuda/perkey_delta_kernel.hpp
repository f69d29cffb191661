// linea/backend/cuda/perkey_delta_kernel.hpp — the chunkwise forward of the rules with a decay per key channel
// (gla; kda, gdn2), warp-specialised as delta_pipeline_kernel.hpp: key-side producers run a chunk ahead of the
// state-holding consumers.
//   S_t = S'_t + k_t (x_t − S'_tᵀ e_t)ᵀ,  S'_t = Diag(α_t) S_{t-1},  o_t = s S_tᵀ q_t
// with the erase key e = b ⊙ k and the write target x = w ⊙ v (kda: b = w = β; gdn2: b, w per channel; gla: e = 0,
// x = v, so T = I and U = v: the additive mode below skips A, T, E⁺ and Z).
//
// Which rules the library sends here (launch.hpp), from the H200 (bench/cuda/README.md, pk18 2026-12-04, 8×4096,
// H = 16, K = V = 128, bf16, the same process, against main 5386113's version of this kernel): gla — 0.526 ms (1.048
// before pk18; 1.490 for its 64-token kernel, perkey_chunk_kernel.hpp). kda and gdn2 computed here are bit-identical
// to main 5386113's version, within SPEC §5 of the float64 recurrence (2 × 150, 1 × 333, ordinary and extreme gates,
// in-kernel gates, gates cp.async cannot read; racecheck and memcheck clean) and now faster than the general kernel
// under ordinary gates (kda 0.912 against 1.601 ms, gdn2 0.955 against 1.640), slower under SPEC's extreme gates
// (1.737 against 1.602, 1.774 against 1.651). pk18-next sends them here (launch.hpp) with the erasing mode's
// non-finite inputs flagged (see the consumers; the CUDA suite on the H200, fin18). Where the time went before pk18
// (ncu): the producers waited on instruction fetch half of their time (the in-kernel gate's code inlined into the G
// loop's 32 rows, the gates' per-element loads and their address arithmetic), and on the gates' loads, which the
// packing waited on at once; now they are issue- and latency-bound (exponentials, shared loads), and remain the
// bottleneck (the consumers wait on `full` a third of their time). pk19 (run on the H200: bit-identical to main
// 6dca2f0's version, kda 0.925 → 0.812 ms, gdn2 0.969 → 0.873 at 8×4096; bench/cuda/README.md): phase E of a chunk
// without a wide channel forms e = b ⊙ k itself (the separate e phase, its stores, reloads and barrier gone; G goes
// to shared memory only for phase D); gdn2's w is staged by the consumers' cp.async instead of read into registers;
// DerivedFactors (the library's choice since 2026-12-04's fourth session: launch.hpp): two exponentials a row in
// phase E instead of four, a rounding apart. pko (2026-12-05, the library's choice: launch.hpp): the o and residual
// strips stored in full sectors (tiles::strip_store; the template option Store), bit-identical: at 8×4096 kda
// 0.798 → 0.782 ms, gdn2 0.870 → 0.855, gla 0.518 → 0.491 through linea::chunkwise.
//
// UT form, per chunk of CL = 32 tokens, G_r·d = Σ_{s ≤ r} log₂ α_s·d inside the chunk, C its last row (SPEC §4):
//   P_rs = Σ_d q_rd k_sd 2^(G_rd − G_sd), s ≤ r;   A_rs = Σ_d e_rd k_sd 2^(G_rd − G_sd), s < r;   T = (I + A)⁻¹
//   Z = X − E⁺ S,  U = T Z  (the write residual u),  O = s [Q⁺ S + P U],  S ← Diag(2^(G_C)) S + K_dᵀ U
//   Q⁺ = q ⊙ 2^G,  E⁺ = e ⊙ 2^G,  K_d = k ⊙ 2^(G_C − G)
// P and A on tensor cores, each block through a reference row:
//   - the 16×16 block below the diagonal through row 15 (every exponent ≤ 0);
//   - each diagonal 16-row block i through its middle row m = 16i + 8 (backward/per_key_blocks.hpp's form, pk13):
//     2^(G_r − G_s) = 2^(G_r − G_m) 2^(G_m − G_s), exponents of either sign, in bf16 operands (fp16 inputs too: the
//     factors need its range), masked to s ≤ r (P) and s < r (A) when stored. A (block, channel) whose halves decay
//     by more than 40 nats ("wide", or a G that is not finite) takes zeros there and e98ccba's form instead: rows
//     8..15 × columns 0..7 of the block through its row 7 on tensor cores (Q8, E8, K8: that channel's only), its two
//     8×8 diagonal blocks exactly in log space (phase D, perkey_exact_rows8) — only in a chunk where some channel is
//     wide (an OR over the producers' barrier). Under ordinary gates no chunk is; under SPEC's extreme gates (log α
//     in [−20, 0]) every one is. (pkf14's first version summed the whole 16-row block in log space for wide
//     channels: gla 2.06 against e98ccba's 1.14 ms at 8×4096 under extreme gates, kda 3.23 against 2.24.)
//
// Why 32 tokens: a slot of the per-key operands (Q⁺, E⁺, K_d, v, P, T) for 64 tokens is 88 KB, and two of them with
// the state and the producers' scratch do not fit in 227 KB; for 32 tokens everything fits in 217 KiB (sh::bytes:
// with the middle-row operands, the fallback's Q8 / E8 / K8, the exact sums, the wide marks and the staged gates).
// producers (4 warps; thread d = key channel d, all 32 rows): q, k copied; G, the gates (gk and gdn2's b staged by
//           cp.async a chunk ahead); the wide channels' e and exact sums (only in a chunk with one); the decayed
//           operands in place, e = b ⊙ k among them (pk19); P, A; T — for chunk c + 1 while the consumers work on
//           chunk c.
// consumers (8 warps; the state in registers, warp w key rows 16w .. + 15, all 128 value columns): v (and gdn2's w,
//           pk19) copied a chunk ahead; Z in place of v; U in place of E⁺; O; the state update; Sᵀ for the next
//           chunk.
// Slots, named barriers (full / empty) and their ids as in delta_pipeline_kernel.hpp.
#pragma once
#include "delta_pipeline_kernel.hpp"  // pipeline_barrier
#include "perkey_chunk_kernel.hpp"    // perkey_chunk_rule (launch.hpp)
#include "perkey_delta_blocks.hpp"

namespace linea::cuda_detail {

// The rules this kernel computes, main pass: an erasing update with a per-key decay read from gk alone (not sent
// here by the library: see above), ...
template <class Rule, pass P>
inline constexpr bool perkey_delta_rule = P == pass::main && Rule::update::kind == update_kind::erase &&
                                          Rule::decay::kind == decay_kind::per_key && Rule::decay::inputs == input::gk;
// ... and the additive per-key rule (gla: e = 0, T = I, U = v; launch.hpp's perkey_chunk_rule).
template <class Rule, pass P>
inline constexpr bool perkey_pipeline_rule = perkey_delta_rule<Rule, P> ||
                                             (P == pass::main && std::is_same_v<typename Rule::update, update::additive> &&
                                              Rule::decay::kind == decay_kind::per_key && Rule::decay::inputs == input::gk);

// Whether the update's gates are one number a token (kda's β) rather than one a channel (gdn2's b, w).
template <class Rule>
inline constexpr bool token_gates = !reads(Rule::update::inputs, input::b) && !reads(Rule::update::inputs, input::w);

struct perkey_delta_shape {
  static constexpr int CL = 32, KP = tiles::KP, BVW = 128;  // tokens per chunk, padded K, value columns
  static constexpr int LDK = tiles::LDK, LDV = BVW + 8, LDC = CL + 8, LDG = KP + 4, LDX = tiles::ut_scratch_ld;
  static constexpr int consumers = 256, producers = 128, threads = consumers + producers;
  // 16-bit tiles, in elements: a slot (one chunk), then the consumers' and the producers' own
  static constexpr int q_at = 0,  // q, then Q⁺                                   [CL][LDK]
      k_at = q_at + CL * LDK,     // k, then K_d                                  [CL][LDK]
      e_at = k_at + CL * LDK,     // e, then E⁺, then U                           [CL][LDK]
      v_at = e_at + CL * LDK,     // v, then Z                                    [CL][LDV]
      p_at = v_at + CL * LDV,     // P                                            [CL][LDC]
      t_at = p_at + CL * LDC,     // T                                            [CL][LDC]
      slot = t_at + CL * LDC;
  static constexpr int s_at = 2 * slot,  // Sᵀ                                     [BVW][LDK]
      qr_at = s_at + BVW * LDK,          // rows 16..31: q ⊙ 2^(G − G_15)          [16][LDK]
      er_at = qr_at + 16 * LDK,          // rows 16..31: e ⊙ 2^(G − G_15)          [16][LDK]
      kr_at = er_at + 16 * LDK,          // rows 0..15:  k ⊙ 2^(G_15 − G)          [16][LDK]
      qm_at = kr_at + 16 * LDK,          // block i's rows: q ⊙ 2^(G − G_{16i+8}), bf16 (0: wide)   [CL][LDK]
      em_at = qm_at + CL * LDK,          // the same for e                                           [CL][LDK]
      km_at = em_at + CL * LDK,          // block i's rows: k ⊙ 2^(G_{16i+8} − G), bf16 (0: wide)   [CL][LDK]
      // the wide channels' fallback (0 elsewhere; written only in a chunk with a wide channel):
      q8_at = km_at + CL * LDK,          // block i rows 8..15 at 8i: q ⊙ 2^(G − G_{16i+7})   [24][LDK] (8 spare)
      e8_at = q8_at + 24 * LDK,          // the same for e                                   [24][LDK] (8 spare)
      k8_at = e8_at + 24 * LDK,          // block i rows 0..7 at 8i: k ⊙ 2^(G_{16i+7} − G)   [16][LDK]
      a_at = k8_at + 16 * LDK,           // A_10: rows 16..31 × columns 0..15      [16][LDX]
      x_at = a_at + 16 * LDX,            // T_10's scratch                         [16][LDX]
      // the next chunk's gates, staged a chunk ahead by cp.async (pk18: read into registers, their loads were
      // waited on at once and their address arithmetic filled the instruction cache):
      gk_at = x_at + 16 * LDX,           // gk                                     [CL][LDK]
      bs_at = gk_at + CL * LDK,          // gdn2's b                               [CL][LDK]
      // gdn2's write gates w, staged a chunk ahead by the consumers (pk19; read into registers before, their
      // address arithmetic took the issue slots the producers share)
      ws_at = bs_at + CL * LDK,          // w                                      [CL][LDV]
      end = ws_at + CL * LDV;
  // fp32 after them: G [CL][LDG], A's diagonal blocks [2][16][17], P's exact diagonal sums [2][16][17] and the wide
  // marks [2][KP] (producers); per slot G_C [KP] and the write gates x [CL] (token gates); the erase gates [CL]
  // (producers, token gates)
  static constexpr std::size_t g_offset = 2 * std::size_t(end), ad_offset = g_offset + 4 * CL * LDG,
                               pd_offset = ad_offset + 4 * 2 * 16 * 17, wide_offset = pd_offset + 4 * 2 * 16 * 17,
                               sf_offset = wide_offset + 4 * 2 * KP, slot_floats = KP + CL,
                               eg_offset = sf_offset + 4 * 2 * slot_floats, flag_offset = eg_offset + 4 * CL,
                               bytes = flag_offset + 4 * 6;  // flags: int [2][3], per slot the producers' (k,
                                                             // e, gates: erasing mode), v's and gdn2's w's
  // A diagonal block's channel is "wide" where either half of the block decays by more than this (log₂; 40 nats,
  // backward/per_key_blocks.hpp's diag_span): its factors 2^(±(G − G_mid)) would pass e^±40.
  static constexpr float diag_span = 40.f * 1.4426950408889634f;
  static_assert(g_offset % 16 == 0 && pd_offset % 16 == 0 && wide_offset % 16 == 0 && sf_offset % 16 == 0,
                "16-byte aligned fp32 tiles");
  static_assert(bytes <= 227 * 1024, "one CTA per SM");
};

// ================= producers: chunk c's operands into slot c mod 2, a chunk ahead of the consumers =================
template <class Rule, class T, class E, bool DerivedFactors>
__device__ __forceinline__ void perkey_delta_producers(const kernel_args<T>& a, const tiles::site<T, 128>& cta,
                                                       unsigned char* smem_raw, int chunks) {
  using sh = perkey_delta_shape;
  namespace bar = pipeline_barrier;
  using tiles::ex2;
  using DE = __nv_bfloat16;  // the diagonal blocks' factorised operands: factors up to e^±40 need bf16's range
  constexpr int CL = sh::CL, LDK = sh::LDK, LDC = sh::LDC, LDG = sh::LDG, LDX = sh::LDX;
  const seq_range& seq = cta.seq;
  const index_t hv = cta.hv;
  const int ptid = threadIdx.x - sh::consumers, pw = ptid >> 5, lane = threadIdx.x & 31;
  const int d = ptid;  // this thread's key channel
  const bool has_d = d < cta.Kw;
  E* base = reinterpret_cast<E*>(smem_raw);
  auto tile = [&](int c, int at) { return base + (c & 1) * sh::slot + at; };
  float* slotf0 = reinterpret_cast<float*>(smem_raw + sh::sf_offset);
  float* G = reinterpret_cast<float*>(smem_raw + sh::g_offset);
  float* Ad = reinterpret_cast<float*>(smem_raw + sh::ad_offset);
  float* Pd = reinterpret_cast<float*>(smem_raw + sh::pd_offset);
  float* wide_mark = reinterpret_cast<float*>(smem_raw + sh::wide_offset);
  float* eg = reinterpret_cast<float*>(smem_raw + sh::eg_offset);
  int* flags = reinterpret_cast<int*>(smem_raw + sh::flag_offset);  // [slot][0: producers, 1: v, 2: gdn2's w]
  E *QR = base + sh::qr_at, *ER = base + sh::er_at, *KR = base + sh::kr_at, *A10 = base + sh::a_at, *X = base + sh::x_at;
  DE *QM = reinterpret_cast<DE*>(base + sh::qm_at), *EM = reinterpret_cast<DE*>(base + sh::em_at);
  DE* KM = reinterpret_cast<DE*>(base + sh::km_at);
  E *Q8 = base + sh::q8_at, *E8 = base + sh::e8_at, *K8 = base + sh::k8_at;
  const source<T> src{a};
  using U = typename Rule::update;
  constexpr bool erasing = erases<Rule>;
  constexpr bool lane_gates = erasing && !token_gates<Rule>;  // gdn2: b per key channel, read a chunk ahead too
  static_assert(!lane_gates || (!reads(U::inputs, input::beta) && !reads(U::inputs, input::g)),
                "per-channel gates from their own lanes only (the staged b below)");

  // The gates a chunk ahead: gk (and gdn2's b) of the next chunk's 32 rows staged in shared memory by cp.async
  // (pk18; a layout cp.async cannot read is copied element by element instead, a thread per channel), waited for
  // before this chunk's last producer barrier; with token gates, lane r's erase and write gates of row r in
  // registers. (Until pk18 gk and b were read into registers: each load was waited on at once by the packing, and
  // their 64-bit address arithmetic — ~1900 instructions a chunk — and the in-kernel gate's code inlined into the
  // G loop's 32 rows made the producers wait on instruction fetch half of their time: bench/cuda/README.md, pk18.)
  E *GKs = base + sh::gk_at, *Bs = base + sh::bs_at;
  auto rows_async = [](const auto& v) {  // tiles::rows_fit_cp_async, on the device
    return v.str[3] == 1 && v.str[2] % 8 == 0 && v.str[1] % 8 == 0 && v.str[0] % 8 == 0 &&
           reinterpret_cast<std::uintptr_t>(v.ptr) % 16 == 0;
  };
  const T* gk_head = a.gk.ptr + seq.bt * a.gk.str[0] + hv * a.gk.str[2];
  const T* b_head = lane_gates ? a.b.ptr + seq.bt * a.b.str[0] + hv * a.b.str[2] : nullptr;
  const bool gk_async = rows_async(a.gk), b_async = lane_gates && rows_async(a.b);
  auto stage = [&](E* dst, const T* head, const index_t (&str)[4], bool async, index_t c0, int L) {
    if (async) {
      tiles::fetch_rows<sh::KP / 8, sh::producers, sh::CL>(dst, LDK, head, str[1], c0, L, cta.Kw, ptid);
    } else {
#pragma unroll 1
      for (int i = 0; i < CL; ++i)
        dst[i * LDK + d] = from_float<E>(has_d && i < L ? to_float(head[(c0 + i) * str[1] + d * str[3]]) : 0.f);
    }
  };
  float next_b = 0, next_w = 0;
  auto read_token_gates = [&](index_t c0, int L) {
    if constexpr (erasing && token_gates<Rule>) {
      if (ptid < CL) {
        const bool in = ptid < L;
        const token_scalars s = in ? src.template scalars<U::inputs>(seq.bt, c0 + ptid, hv) : token_scalars{};
        next_b = in ? src.template erase_gate<Rule>(s, seq.bt, c0 + ptid, hv, 0) : 0.f;
        next_w = in ? src.template write_gate<Rule>(s, seq.bt, c0 + ptid, hv, 0) : 0.f;
      }
    }
  };
  for (int x = ptid; x < 8 * LDK; x += sh::producers) Q8[16 * LDK + x] = E8[16 * LDK + x] = from_float<E>(0.f);  // spares
  if (chunks > 0) {
    const int L0 = cta.rows_in(seq.t0);
    read_token_gates(seq.t0, L0);
    stage(GKs, gk_head, a.gk.str, gk_async, seq.t0, L0);
    if constexpr (lane_gates) stage(Bs, b_head, a.b.str, b_async, seq.t0, L0);
    tiles::cp_async_wait_all();
    bar::sync(bar::producers, sh::producers);  // the first chunk's gates in
  }

  for (int c = 0; c < chunks; ++c) {
    const index_t c0 = seq.t0 + static_cast<index_t>(c) * CL;
    const int L = cta.rows_in(c0);
    const bool more = c + 1 < chunks;
    const int Ln = more ? cta.rows_in(c0 + CL) : 0;
    if (c >= 2) bar::sync(bar::empty + (c & 1), sh::threads);  // the consumers are done with chunk c − 2
    E *Qs = tile(c, sh::q_at), *Ks = tile(c, sh::k_at), *Es = tile(c, sh::e_at), *Ps = tile(c, sh::p_at);
    E* Ts = tile(c, sh::t_at);
    float* slotf = slotf0 + (c & 1) * sh::slot_floats;  // G_C, then the write gates
    tiles::fetch_rows<sh::KP / 8, sh::producers, sh::CL>(Qs, LDK, cta.q0, a.q.str[1], c0, L, cta.Kw, ptid);
    tiles::fetch_rows<sh::KP / 8, sh::producers, sh::CL>(Ks, LDK, cta.k0, a.k.str[1], c0, L, cta.Kw, ptid);

    // ---- G: this channel's cumulative log₂ α over the chunk (clamped: a gate of 0 stays finite); its wide marks --
    // (two loops, so that the in-kernel gate's code lies outside the ordinary path; rows past L and channels past K
    // add a selected 0)
    float g[CL];
    {
      auto log2_decay = [&](float x) {
        lane_token t;
        t.gk.value = x;
        return tiles::clamped_log2_decay(Rule::decay::log_alpha(t, d) * tiles::log2e);
      };
      float run = 0;
      if (a.gate_active && has_d) {  // (not past K: dt_bias has K entries a head)
#pragma unroll
        for (int i = 0; i < CL; ++i) {
          const float x = gate_from_logit(to_float(GKs[i * LDK + d]), a.A_log, a.dt_bias, a.has_lower_bound,
                                          a.lower_bound, hv, hv * a.K + d);
          const float l = log2_decay(x);
          g[i] = run += has_d && i < L ? l : 0.f;
        }
      } else {
#pragma unroll
        for (int i = 0; i < CL; ++i) {
          const float l = log2_decay(to_float(GKs[i * LDK + d]));
          g[i] = run += has_d && i < L ? l : 0.f;
        }
      }
      slotf[d] = g[CL - 1];  // (G itself goes to shared memory only for phase D)
    }
    // Block i's channel d is wide where a factor through its middle row would pass e^±40 (or G is not finite).
    bool wide[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const float lo = g[16 * i], mid = g[16 * i + 8], hi = g[16 * i + 15];
      wide[i] = !(lo - mid <= sh::diag_span && mid - hi <= sh::diag_span);
      wide_mark[i * sh::KP + d] = wide[i] ? 1.f : 0.f;
    }
    // Erasing mode: a chunk whose k, gates or G hold an inf or NaN is flagged (the consumers' T Z and P U, and
    // fill_t10 below, then keep a poisoned row from reaching earlier rows; G is a running sum, so its last row
    // carries any non-finite gate — a gate of 0 is clamped, finite). gla needs none: P is formed with exact zeros
    // above its diagonal, and U is v (flagged by the consumers).
    int* pflag = flags + 3 * (c & 1);
    if constexpr (erasing && token_gates<Rule>) {
      if (ptid < CL) {
        eg[ptid] = next_b, slotf[sh::KP + ptid] = next_w;
        if (!(isfinite(next_b) && isfinite(next_w))) raise_chunk_flag(pflag, c);
      }
    }
    if constexpr (erasing) {
      if (!isfinite(g[CL - 1])) raise_chunk_flag(pflag, c);
    }
    if (more) read_token_gates(c0 + CL, Ln);  // lands during the chunk
    tiles::cp_async_wait_all();
    if constexpr (erasing) {
      if (fetched_rows_nonfinite<sh::KP / 8, sh::producers, CL>(Ks, LDK, ptid)) raise_chunk_flag(pflag, c);
    }
    // q, k, the gates, the marks in; whether any channel of this chunk is wide (the same in every producer)
    const bool any_wide = barrier_or(bar::producers, sh::producers, wide[0] || wide[1]);
    if (more) stage(GKs, gk_head, a.gk.str, gk_async, c0 + CL, Ln);  // every read of this chunk's gk was before
    tiles::cp_async_commit();  // (a group of its own: F's end waits for it, not for gdn2's b below)
    if (a.l2q || a.l2k) {
      if (a.l2q) tiles::l2norm_rows<sh::producers, sh::CL>(Qs, LDK, ptid);
      if (a.l2k) tiles::l2norm_rows<sh::producers, sh::CL>(Ks, LDK, ptid);
      bar::sync(bar::producers, sh::producers);
    }

    // The erase key e = b ⊙ k of row r, this channel (kda: the token's β, staged in eg; gdn2: its own b, staged in
    // Bs), rounded to E as when it went through the Es tile: phase E forms it from the k it has loaded unless a
    // channel of this chunk is wide (pk19; until then a phase of its own stored e, and E reloaded it after a barrier).
    auto erase_key = [&](int r, float k, bool& b_bad) {
      float b;
      if constexpr (token_gates<Rule>) {
        b = eg[r];
      } else {  // (b is 0 past the rows)
        lane_token t;
        t.b.value = to_float(Bs[r * LDK + d]);
        b = U::erase_gate(t, d);
        b_bad = b_bad || !isfinite(b);
      }
      return to_float(from_float<E>(b * k));
    };

    // ---- D: only when a channel is wide, the wide channels' 8×8 diagonal blocks of P (and A) exactly in log space,
    // into Pd (and Ad) at their places in the 16-row blocks (rows 8..15 × columns 0..7 of each go through row 7 on
    // tensor cores, in F). Jobs (block 8j, P or A): erasing — warp pw: j = pw, then P and A; gla — warp pw: j = pw, P.
    // Its lanes read G and e across channels: only here do they go to shared memory (pk19).
    if (any_wide) {
#pragma unroll
      for (int i = 0; i < CL; ++i) G[i * LDG + d] = g[i];
      if constexpr (erasing) {
        bool b_bad = false;  // gdn2: a non-finite b of this channel
#pragma unroll 4
        for (int r = 0; r < CL; ++r) Es[r * LDK + d] = from_float<E>(erase_key(r, to_float(Ks[r * LDK + d]), b_bad));
        if (b_bad) raise_chunk_flag(pflag, c);
      }
      bar::sync(bar::producers, sh::producers);  // G, e in
      // the wide channels' rows 8..15 × 0..7 of each block through its row 7 (exponents ≤ 0), this channel's raw
      // q, k, e (its own column: E overwrites it after the barrier below); out of E's loop, so that ordinary gates
      // run E without a branch a row (pk18)
#pragma unroll
      for (int r = 0; r < CL; ++r) {
        const int ib = r / 16, rho = r % 16;
        const bool w = wide[ib];
        const float gv = g[r], g7 = g[16 * ib + 7];
        if (rho < 8) {
          K8[(8 * ib + rho) * LDK + d] = from_float<E>(w ? to_float(Ks[r * LDK + d]) * ex2(g7 - gv) : 0.f);
        } else {
          const float f = w ? ex2(gv - g7) : 0.f;
          Q8[(8 * ib + rho - 8) * LDK + d] = from_float<E>(w ? to_float(Qs[r * LDK + d]) * f : 0.f);
          if constexpr (erasing) E8[(8 * ib + rho - 8) * LDK + d] = from_float<E>(w ? to_float(Es[r * LDK + d]) * f : 0.f);
        }
      }
      const int j = pw, ib = j >> 1, o = 8 * (j & 1), b0 = 8 * j;
#pragma unroll 1
      for (int m = 0; m < (erasing ? 2 : 1); ++m) {
        const bool is_a = m == 1;
        const E* Xs = is_a ? Es : Qs;
        float* out = (is_a ? Ad : Pd) + ib * 16 * 17;
#pragma unroll 1
        for (int Q = 0; Q < 4; ++Q) {
          const float x = perkey_exact_rows8<E, LDK, LDG>(Xs, Ks, G, wide_mark + ib * sh::KP, b0, Q, lane);
          if (lane < 16) out[(o + 2 * Q + lane / 8) * 17 + o + lane % 8] = x;
        }
      }
      bar::sync(bar::producers, sh::producers);  // every read of the raw q, k, e done
    }

    // ---- E: the decayed operands, channel d of every row; Q⁺, E⁺, K_d in place --------------------------------------
    // Each element takes two exponentials for its references (G_15 or the chunk's end, and its block's middle row)
    // and shares a per-channel one for the rest: rows 0..15 form 2^(G_C − G) as 2^(G_15 − G) 2^(G_C − G_15), rows
    // 16..31 form 2^G as 2^G_15 2^(G − G_15) — each a product of two factors ≤ 1, so nothing overflows.
    // An ordinary chunk (no channel wide) forms e here, and with DerivedFactors takes two exponentials a row, both
    // through the block's middle row m (fr = 2^(G − G_m), fs = 2^(G_m − G)), the other factors from them and a
    // per-channel one: rows 0..15 2^(G_15 − G) = fs 2^(G_15 − G_8), 2^G = fr 2^G_8; rows 16..31 2^(G − G_15) =
    // fr 2^(G_24 − G_15), 2^(G_C − G) = fs 2^(G_C − G_24). No channel is wide, so fr, fs lie in [2^−58, 2^58], and
    // each per-channel factor in [2^−122, 1] (a row's log₂ decay is clamped at −64; 2^G_8 ≥ 2^(−64 − 58)): every
    // factor is a normal float, each product a rounding or two from the direct exponential (not bit-identical to
    // the four-exponential form; pk19: within 2.8e-5 of it on the H200, the library's choice: launch.hpp).
    auto phase_e = [&](auto ordinary_tag) {
      constexpr bool ordinary = decltype(ordinary_tag)::value, derived = ordinary && DerivedFactors;
      const float g15 = g[15], gC = g[CL - 1];
      const float to_end = ex2(gC - g15), to_15 = ex2(g15);
      [[maybe_unused]] float c0 = 0.f, u0 = 0.f, c1 = 0.f, d1 = 0.f;
      if constexpr (derived) c0 = ex2(g15 - g[8]), u0 = ex2(g[8]), c1 = ex2(g[24] - g15), d1 = ex2(gC - g[24]);
      [[maybe_unused]] bool b_bad = false;  // gdn2: a non-finite b of this channel (ordinary chunks: read here)
#pragma unroll
      for (int r = 0; r < CL; ++r) {
        const int ib = r / 16;
        const float gv = g[r], gm = g[16 * ib + 8];
        const float q = to_float(Qs[r * LDK + d]), k = to_float(Ks[r * LDK + d]);
        [[maybe_unused]] float e = 0.f;
        if constexpr (erasing) e = ordinary ? erase_key(r, k, b_bad) : to_float(Es[r * LDK + d]);
        // through the block's middle row: exponents of either sign, bounded by diag_span unless the channel is wide
        const float fr = ex2(gv - gm), fs = ex2(gm - gv);
        float up, down;  // 2^G, 2^(G_C − G)
        if (ib == 0) {
          const float f = derived ? fs * c0 : ex2(g15 - gv);
          up = derived ? fr * u0 : ex2(gv), down = f * to_end;
          KR[r * LDK + d] = from_float<E>(k * f);
        } else {
          const float f = derived ? fr * c1 : ex2(gv - g15);
          up = to_15 * f, down = derived ? fs * d1 : ex2(gC - gv);
          QR[(r - 16) * LDK + d] = from_float<E>(q * f);
          if constexpr (erasing) ER[(r - 16) * LDK + d] = from_float<E>(e * f);
        }
        Qs[r * LDK + d] = from_float<E>(q * up);
        if constexpr (erasing) Es[r * LDK + d] = from_float<E>(e * up);
        Ks[r * LDK + d] = from_float<E>(k * down);
        const bool w = !ordinary && wide[ib];
        QM[r * LDK + d] = from_float<DE>(w ? 0.f : q * fr);
        if constexpr (erasing) EM[r * LDK + d] = from_float<DE>(w ? 0.f : e * fr);
        KM[r * LDK + d] = from_float<DE>(w ? 0.f : k * fs);
      }
      if constexpr (erasing && !token_gates<Rule>) {
        if (ordinary && b_bad) raise_chunk_flag(pflag, c);
      }
    };
    if (any_wide) phase_e(std::false_type{});
    else phase_e(std::true_type{});
    bar::sync(bar::producers, sh::producers);  // operands in
    if constexpr (lane_gates) {  // every read of this chunk's b was before (phase E, or D's e)
      if (more) stage(Bs, b_head, a.b.str, b_async, c0 + CL, Ln);
      tiles::cp_async_commit();  // waited for with the next chunk's q and k, before its barrier_or (read in its E)
    }

    // ---- F: the blocks of P and A on tensor cores: below the diagonal (rows 16..31 × columns 0..15, through row 15)
    // and the two diagonal 16-row blocks through their middle rows, masked to s ≤ r (P) and s < r (A), plus the
    // wide channels' exact sums (D). Jobs: erasing — warp 0 P_10 and P_00, warp 1 A_10 and A_00, warp 2 P_11,
    // warp 3 A_11; gla — warp 0 P_10, warp 1 P_00, warp 2 P_11.
    {
      auto below = [&](bool is_a) {
        float x[2][4] = {};
        mma_strip<E, 2>(x, is_a ? ER : QR, LDK, KR, LDK, sh::KP / 16);
#pragma unroll
        for (int t = 0; t < 2; ++t)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            E* at = is_a ? A10 + acc_row(2 * h) * LDX + 8 * t + acc_col(0) : Ps + (16 + acc_row(2 * h)) * LDC + 8 * t + acc_col(0);
            *reinterpret_cast<std::uint32_t*>(at) = pack2<E>(x[t][2 * h], x[t][2 * h + 1]);
          }
      };
      auto diagonal = [&](bool is_a, int ib) {
        float x[2][4] = {};
        mma_strip<DE, 2>(x, (is_a ? EM : QM) + 16 * ib * LDK, LDK, KM + 16 * ib * LDK, LDK, sh::KP / 16);
        float* exact = (is_a ? Ad : Pd) + ib * 16 * 17;
        if (any_wide) {  // the wide channels' rows 8..15 × columns 0..7: this lane's (8 + acc_row(0), acc_col(0..1))
          float y[4] = {};
          mma_tile<E>(y, (is_a ? E8 : Q8) + 8 * ib * LDK, LDK, K8 + 8 * ib * LDK, LDK, sh::KP / 16);
          x[0][2] += y[0], x[0][3] += y[1];
        }
#pragma unroll
        for (int t = 0; t < 2; ++t)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int r = acc_row(2 * h), s = 8 * t + acc_col(0);
            float v[2];
#pragma unroll
            for (int u = 0; u < 2; ++u) {
              const bool in = is_a ? s + u < r : s + u <= r;
              const bool sub = (r >> 3) == ((s + u) >> 3);  // an 8×8 diagonal block: D's exact sums
              v[u] = in ? x[t][2 * h + u] + (any_wide && sub ? exact[r * 17 + s + u] : 0.f) : 0.f;
            }
            if (is_a) exact[r * 17 + s] = v[0], exact[r * 17 + s + 1] = v[1];
            else *reinterpret_cast<std::uint32_t*>(Ps + (16 * ib + r) * LDC + 16 * ib + s) = pack2<E>(v[0], v[1]);
          }
      };
      if constexpr (erasing) {
        if (pw < 2) below(pw == 1), diagonal(pw == 1, 0);
        else diagonal(pw == 3, 1);
      } else {
        if (pw == 0) below(false);
        else if (pw < 3) diagonal(false, pw - 1);
      }
    }
    // this thread's pieces of the next chunk's gk (gdn2's b, the newest group, may still be in flight)
    if constexpr (lane_gates) tiles::cp_async_wait_groups<1>();
    else tiles::cp_async_wait_all();
    bar::sync(bar::producers, sh::producers);  // P, A_10 and A's diagonal blocks in; the next chunk's gates in
    if constexpr (erasing) {
      if (pw == 0) tiles::invert_diagonal_blocks(Ad, Ts, LDC, 0);
      bar::sync(bar::producers, sh::producers);
      if (pw == 0) tiles::fill_t10(A10, LDX, Ts, LDC, X, pflag[0] == c);  // (raised before the barriers above)
      bar::sync(bar::producers, sh::producers);  // (racecheck: see delta_pipeline_kernel.hpp)
    }
    bar::arrive(bar::full + (c & 1), sh::threads);  // chunk c is ready
  }
}

// ================= consumers: the state, its products, the outputs =================
// Store: how the o and residual strips go to global memory (tiles::strip_store; pko).
template <class Rule, class T, class E, tiles::strip_store Store>
__device__ __forceinline__ void perkey_delta_consumers(const kernel_args<T>& a, const tiles::site<T, 128>& cta,
                                                       unsigned char* smem_raw, int chunks) {
  using sh = perkey_delta_shape;
  namespace bar = pipeline_barrier;
  using tiles::ex2;
  constexpr int CL = sh::CL, KP = sh::KP, LDK = sh::LDK, LDV = sh::LDV, LDC = sh::LDC;
  const seq_range& seq = cta.seq;
  const int tid = threadIdx.x, warp = tid >> 5;
  E* base = reinterpret_cast<E*>(smem_raw);
  auto tile = [&](int c, int at) { return base + (c & 1) * sh::slot + at; };
  const float* slotf0 = reinterpret_cast<const float*>(smem_raw + sh::sf_offset);
  int* flags = reinterpret_cast<int*>(smem_raw + sh::flag_offset);  // set to −1 by the kernel
  E* ST = base + sh::s_at;
  [[maybe_unused]] const source<T> src{a};
  using U = typename Rule::update;
  constexpr bool erasing = erases<Rule>;

  float acc[sh::BVW / 8][4];  // S: key rows 16·warp .. + 15, all 128 value columns
  tiles::load_state(acc, a.initial_state, seq.row, cta.hv, cta.jt, a.K, a.V);
  tiles::store_state_t(ST, LDK, acc);
  // Warp w: rows r0 .. r0 + 15 of Z, U and O, value columns c0w .. c0w + 31.
  const int rb = warp >> 2, r0 = 16 * rb, c0w = 32 * (warp & 3);
  auto fetch_v = [&](int c) {
    const index_t c0 = seq.t0 + static_cast<index_t>(c) * CL;
    tiles::fetch_rows<sh::BVW / 8, sh::consumers, sh::CL>(tile(c, sh::v_at), LDV, cta.v0, a.v.str[1], c0, cta.rows_in(c0),
                                                    cta.Vw, tid);
  };
  // gla's residual (u = v) is copied from global memory (L2-hot: v was fetched a chunk ago), not from the v tile.
  // Read from the tile, it drew racecheck hazards (3 on main with a residual, 24 with the NaN pipeline case, none
  // without a residual): the tile's loads (LDS.U16 at +0x9840..+0x9de0 of the gla bf16 kernel, as CI builds it)
  // against the producers' cp.async of rows 0..15 of q or k of the chunk after next (LDGSTS at +0x16890 /
  // +0x168c0, right after their `bar.sync empty`; nvdisasm -g of the same build). By the layout those writes land in
  // another tile of the slot than v, and they are ordered after the loads by the consumers' `bar.arrive empty` at
  // the end of the chunk; we did not find a real race (the hazards' addresses were not captured). The copy from
  // global memory leaves no shared load on that path, at one batch of global loads a chunk (pairs of columns, 8 a
  // thread, all issued before the stores). Not yet run on the H200 (bench/cuda/README.md, hyg4).
  // A chunk whose v holds an inf or NaN is flagged as v lands; only a flagged chunk sums the diagonal blocks of its
  // masked products (T Z, P U) over s ≤ r alone (causal_strip.hpp), so that a NaN or inf v at token s reaches no
  // output before s. For gla that is every input that could (P is formed with exact zeros above its diagonal, so a
  // non-finite q, k or gk reaches rows ≥ s and the state only). The erasing mode also flags a chunk whose k, gates
  // or G hold one (the producers, before `full`; fill_t10 then stores T_11's operand without them) or whose w does
  // (gdn2: these consumers, before the barrier after Z) — pk18-next, not yet run on the H200.
  auto tiles_nonfinite_v = [&](const E* Vs) { return fetched_rows_nonfinite<sh::BVW / 8, sh::consumers, CL>(Vs, LDV, tid); };
  // gdn2's write gates w (one a value column), the next chunk's staged in shared memory (Ws) by cp.async after the
  // barrier that ends phase X (every read of this chunk's there), waited for with v before `full` (pk19; until then
  // read into registers, 16 loads a thread with their 64-bit address arithmetic: ~1700 instructions a warp a chunk
  // on the issue slots the producers share — bench/cuda/README.md, pk18). A layout cp.async cannot read is copied
  // element by element instead (same places). Zeros past the rows and the tile's columns.
  constexpr bool lane_gates = erasing && !token_gates<Rule>;
  T* Ws = reinterpret_cast<T*>(base + sh::ws_at);
  auto stage_w = [&](int c) {
    if constexpr (lane_gates) {
      const index_t c0 = seq.t0 + static_cast<index_t>(c) * CL;
      const int L = cta.rows_in(c0);
      const T* head = a.w.ptr + seq.bt * a.w.str[0] + cta.hv * a.w.str[2] + cta.jt * a.w.str[3];
      const bool async = a.w.str[3] == 1 && a.w.str[2] % 8 == 0 && a.w.str[1] % 8 == 0 && a.w.str[0] % 8 == 0 &&
                         reinterpret_cast<std::uintptr_t>(a.w.ptr) % 16 == 0;  // (tiles::rows_fit_cp_async)
      if (async) {
        tiles::fetch_rows<sh::BVW / 8, sh::consumers, sh::CL>(Ws, LDV, head, a.w.str[1], c0, L, cta.Vw, tid);
      } else {
        const T zero = from_float<T>(0.f);
#pragma unroll 1
        for (int x = tid; x < CL * sh::BVW; x += sh::consumers) {
          const int r = x / sh::BVW, j = x % sh::BVW;
          Ws[r * LDV + j] = r < L && j < cta.Vw ? head[(c0 + r) * a.w.str[1] + j * a.w.str[3]] : zero;
        }
      }
    }
  };
  if (chunks > 0) fetch_v(0), stage_w(0);
  for (int c = 0; c < chunks; ++c) {
    const int s = c & 1;
    const index_t c0 = seq.t0 + static_cast<index_t>(c) * CL;
    const int L = cta.rows_in(c0);
    const E *Qs = tile(c, sh::q_at), *Ks = tile(c, sh::k_at), *Ps = tile(c, sh::p_at), *Ts = tile(c, sh::t_at);
    E *Es = tile(c, sh::e_at), *Zs = tile(c, sh::v_at);
    E* Us = erasing ? Es : Zs;  // U in place of E⁺ (read before the first barrier below); v itself without an erase
    constexpr int LDU = erasing ? LDK : LDV;
    const float* slotf = slotf0 + s * sh::slot_floats;
    tiles::cp_async_wait_all();             // this thread's pieces of v
    if (tiles_nonfinite_v(Zs)) raise_chunk_flag(flags + 3 * s + 1, c);
    bar::sync(bar::full + s, sh::threads);  // chunk c ready, its v in; every consumer done with chunk c − 1
    bool nonfinite = flags[3 * s] == c || flags[3 * s + 1] == c;  // chunk c's v (or k, e, gates) hold an inf or NaN
    if (c + 1 < chunks) fetch_v(c + 1);     // into chunk c − 1's Z, last read before the barrier above

    // ---- X: Z = X − E⁺ S in place of v; O₁ = Q⁺ S ------------------------------------------------------------------
    float o[4][4] = {};
    if constexpr (!erasing) {
      mma_strip<E, 4, false, false>(o, Qs + r0 * LDK, LDK, ST + c0w * LDK, LDK, KP / 16);
      if (a.residual.ptr) {  // u = v (w = 1): copied from global v bit for bit (see above), pairs of columns,
        // each batch's loads issued before its stores (which may alias them as far as the compiler knows)
        constexpr int pairs = sh::BVW / 2, batch = 8;
        const index_t rs = a.residual.str[3];
        for (int x0 = tid; x0 < L * pairs; x0 += batch * sh::consumers) {
          std::uint32_t w[batch];
#pragma unroll
          for (int i = 0; i < batch; ++i) {
            const int x = x0 + i * sh::consumers, r = x / pairs, j = 2 * (x % pairs);
            const T* p = cta.v0 + (c0 + r) * a.v.str[1] + j;  // 4-byte aligned: v's rows are 16-byte aligned here
            w[i] = x >= L * pairs || j >= cta.Vw ? 0u
                   : j + 1 < cta.Vw           ? *reinterpret_cast<const std::uint32_t*>(p)
                                              : static_cast<std::uint32_t>(half_bits(p[0]));
          }
#pragma unroll
          for (int i = 0; i < batch; ++i) {
            const int x = x0 + i * sh::consumers, r = x / pairs, j = 2 * (x % pairs);
            if (x >= L * pairs || j >= cta.Vw) continue;
            T* out = a.residual.row(seq.bt, c0 + r, cta.hv) + (cta.jt + j) * rs;
            out[0] = half_from_bits<T>(static_cast<std::uint16_t>(w[i]));
            if (j + 1 < cta.Vw) out[rs] = half_from_bits<T>(static_cast<std::uint16_t>(w[i] >> 16));
          }
        }
      }
    } else {
      float z[4][4] = {};
      bool w_bad = false;  // gdn2: a non-finite w in this thread's part of Z
      mma_strip<E, 4, false, false>(z, Es + r0 * LDK, LDK, ST + c0w * LDK, LDK, KP / 16);
      mma_strip<E, 4, false, false>(o, Qs + r0 * LDK, LDK, ST + c0w * LDK, LDK, KP / 16);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = r0 + acc_row(2 * h);
#pragma unroll
        for (int t = 0; t < 4; ++t) {
          const int j = c0w + 8 * t + acc_col(0);
          float w0, w1;
          if constexpr (token_gates<Rule>) {
            w0 = w1 = slotf[KP + r];
          } else {  // (0 past the rows and columns: read so)
            lane_token x0, x1;
            const std::uint32_t wp = *reinterpret_cast<const std::uint32_t*>(Ws + r * LDV + j);  // (j even)
            x0.w.value = to_float(half_from_bits<T>(static_cast<std::uint16_t>(wp)));
            x1.w.value = to_float(half_from_bits<T>(static_cast<std::uint16_t>(wp >> 16)));
            w0 = U::write_gate(x0, cta.jt + j), w1 = U::write_gate(x1, cta.jt + j + 1);
            w_bad = w_bad || !(isfinite(w0) && isfinite(w1));
          }
          E* at = Zs + r * LDV + j;  // this lane's own two values: in place is safe
          const float v0 = to_float(at[0]), v1 = to_float(at[1]);
          *reinterpret_cast<std::uint32_t*>(at) = pack2<E>(w0 * v0 - z[t][2 * h], w1 * v1 - z[t][2 * h + 1]);
        }
      }
      if (w_bad) raise_chunk_flag(flags + 3 * s + 2, c);
    }
    bar::sync(bar::consumers, sh::consumers);  // Z in; every read of Sᵀ and E⁺ done (and of gdn2's w)
    if (c + 1 < chunks) stage_w(c + 1);        // lands during the rest of the chunk
    if constexpr (erasing && !token_gates<Rule>) nonfinite = nonfinite || flags[3 * s + 2] == c;  // (raised before it)

    // ---- U = T Z (T is zero past the diagonal block) in place of E⁺; the residual ------------------------------------
    if constexpr (erasing) {
      float u[4][4] = {};
      causal_strip<E, 4, true>(u, Ts + r0 * LDC, LDC, Zs + c0w, LDV, rb + 1, nonfinite);
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int t = 0; t < 4; ++t)
          *reinterpret_cast<std::uint32_t*>(Us + (r0 + acc_row(2 * h)) * LDK + c0w + 8 * t + acc_col(0)) =
              pack2<E>(u[t][2 * h], u[t][2 * h + 1]);
      if (a.residual.ptr) tiles::store_strip<Store>(a.residual, seq.bt, c0, cta.hv, cta.jt, r0, c0w, L, cta.Vw, u, 1.f);
      bar::sync(bar::consumers, sh::consumers);  // U in
    }

    // ---- Y: O = O₁ + P U, out; S ← Diag(2^(G_C)) S + K_dᵀ U; Sᵀ for the next chunk -------------------------------------
    causal_strip<E, 4, true>(o, Ps + r0 * LDC, LDC, Us + c0w, LDU, rb + 1, nonfinite);  // P: zero past the diagonal
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float f = ex2(slotf[16 * warp + acc_row(2 * h)]);
#pragma unroll
      for (int nt = 0; nt < sh::BVW / 8; ++nt) acc[nt][2 * h] *= f, acc[nt][2 * h + 1] *= f;
    }
    mma_strip<E, sh::BVW / 8, true, true>(acc, Ks + 16 * warp, LDK, Us, LDU, CL / 16);
    tiles::store_strip<Store>(a.o, seq.bt, c0, cta.hv, cta.jt, r0, c0w, L, cta.Vw, o, a.scale);  // under the products
    tiles::store_state_t(ST, LDK, acc);  // every read of Sᵀ was before the first barrier of this chunk
    if (c + 2 < chunks) bar::arrive(bar::empty + s, sh::threads);  // slot s is free for chunk c + 2
  }
  tiles::save_state(acc, a.final_state, seq.row, cta.hv, cta.jt, a.K, a.V);
}

// One CTA per (value head, sequence, 128 value columns).
// DerivedFactors (pk19): phase E of an ordinary chunk takes two exponentials a row instead of four (see there).
// Store (pko): the o and residual strips as the accumulators lie (pairs) or in full sectors (tiles::strip_store).
template <class Rule, class T, class E, bool DerivedFactors = false, tiles::strip_store Store = tiles::strip_store::pairs>
__global__ void __launch_bounds__(perkey_delta_shape::threads, 1) perkey_delta_kernel(const kernel_args<T> a) {
  using sh = perkey_delta_shape;
  static_assert(sh::producers == sh::KP, "producers: a thread per key channel");
  static_assert(sizeof(E) == 2, "16-bit operands (tensor cores)");
  const tiles::site<T, sh::BVW> cta{a};
  const int chunks = static_cast<int>((cta.seq.t1 - cta.seq.t0 + sh::CL - 1) / sh::CL);
  extern __shared__ __align__(16) unsigned char smem_raw[];
  if (threadIdx.x < 6) reinterpret_cast<int*>(smem_raw + sh::flag_offset)[threadIdx.x] = -1;  // no chunk flagged
  __syncthreads();
  if (threadIdx.x >= sh::consumers) perkey_delta_producers<Rule, T, E, DerivedFactors>(a, cta, smem_raw, chunks);
  else perkey_delta_consumers<Rule, T, E, Store>(a, cta, smem_raw, chunks);
}

}  // namespace linea::cuda_detail
