// linea/backend/cuda/piece_state_kernel.hpp — pass A of the segmented forward (segments/plan.hpp) for the rules that
// only add (additive, simple_gla, gla: no erase, w = 1): every piece's final state from a zero state, without the
// chunk kernel's outputs. With no erase the state after a piece is one sum with no serial dependence,
//
//   B = Σ_{t ∈ piece} Diag(Π_{s = t+1}^{end} α_s) k_t v_tᵀ        (token t's own decay does not reach its own write)
//
// so a piece is cut into slabs of whole 64-token chunks that run in parallel, and the slabs' partial states are
// summed in a fixed order afterwards (deterministic, no atomics):
//   piece_state_kernel         one CTA per (64 value columns, value head, slab): the slab's state from zero, chunk by
//                              chunk on tensor cores, and the slab's total log₂ decay per key;
//   piece_state_reduce_kernel  one thread per 4 elements of (piece, value head): B = Horner over the piece's slabs,
//                              B ← Diag(2^(L_slab)) B + P_slab — skipped when every piece is one slab (then the
//                              first kernel writes B itself).
// A rule with a decay also gets pass M here when the caller asks (device_ops::piece_states with M): the piece's
// diagonal transition 2^(Σ_slabs L_slab), from the sums the kernels keep anyway — written by the reduce (or by the
// first kernel when every piece is one slab), so no launch of decay_transitions reads the gates a second time.
// The chunk step is the chunk kernels' own, with their conventions (scalar_chunk_kernel.hpp, perkey_delta_kernel.hpp):
// G_r = Σ_{s ≤ r} log₂ α_s in the chunk, each log₂ α clamped at tiles::log2_zero, C the chunk's last row;
//   S ← 2^(G_C) S + Kᵀ V_d,  V_d = Diag(2^(G_C − G)) V           (scalar decay: on the value side)
//   S ← Diag(2^(G_C)) S + K_dᵀ V,  K_d = k ⊙ 2^(G_C − G)          (per-key decay: on the key side)
//   S ← S + Kᵀ V                                                   (no decay)
// the decayed operand rounded to the 16-bit operand type (every factor ≤ 1), fp32 accumulation — so the state
// matches what the chunk kernel's pass A wrote to within its own rounding, at a fraction of its cost: no Q, no P,
// no O, and k, v read once per value tile by many more CTAs (memory speed instead of one CTA walking a whole piece).
// The per-key decay's suffix 2^(G_C − G_r) is summed from the chunk's end (no difference of prefix sums).
// In-kernel L2 norm of k (qk_l2norm) on the key tile, as the chunk kernels; the GVA key head hv / G; any g / gk
// strides and the in-kernel gate through the decay's hook (source::log_alpha).
#pragma once
#include "chunk_tiles.hpp"

namespace linea::cuda_detail {

// The rules whose pass A this computes: the plain additive update (w = 1, no erase) with any decay the chunk
// kernels know (none, scalar, per key).
template <class Rule>
inline constexpr bool piece_state_rule = std::is_same_v<typename Rule::update, update::additive> &&
                                         (Rule::decay::kind == decay_kind::none || Rule::decay::kind == decay_kind::scalar ||
                                          Rule::decay::kind == decay_kind::per_key);

struct piece_state_shape {
  static constexpr int CL = tiles::CL, KP = tiles::KP, BV = tiles::BV, LDK = tiles::LDK, LDV = tiles::LD64;
  static constexpr int threads = tiles::threads;  // 8 warps: warp w owns key rows 16w .. 16w + 15 of the state tile
  // the 16-bit tiles, in elements, in the order they are carved
  static constexpr int k_at = 0,        // k, 2 buffers [2][CL][LDK]
      v_at = k_at + 2 * CL * LDK,       // v, 2 buffers [2][CL][LDV]
      d_at = v_at + 2 * CL * LDV,       // the decayed operand: V_d [CL][LDV] or K_d [CL][LDK]
      end = d_at + CL * LDK;
  // + floats: the scalar decay's G [CL]; the per-key decay's half-chunk sums [2][KP] and chunk totals [KP]
  static constexpr int g_at = 0, half_at = CL, total_at = half_at + 2 * KP, floats = total_at + KP;
  static constexpr std::size_t bytes = 2 * std::size_t(end) + sizeof(float) * floats;
  static_assert(bytes <= 75 * 1024, "three CTAs per SM");
  static constexpr int reduce_threads = 256;
};

// Preconditions (device_ops::piece_states): a's sequences are the slabs (cu_seqlens on the device, tokens of one
// packed row, bt = 0), 16-bit q / k / v rows as tiles::inputs_fit, K ≤ 128; grid ((V + 63) / 64, HV, slabs),
// piece_state_shape::threads threads, piece_state_shape::bytes of dynamic shared memory. `out` is [slabs, HV, K, V]
// (row = slab); `log2_decay` [slabs, HV, K] (the slab's Σ clamped log₂ α per key) or null (not needed: the additive
// rule, or every piece one slab); `transition` [slabs, HV, K] (the slab's diagonal transition 2^(Σ clamped log₂ α):
// pass M when every piece is one slab) or null.
template <class Rule, class T, class E>
__global__ void __launch_bounds__(piece_state_shape::threads, 3)
    piece_state_kernel(const kernel_args<T> a, const view<float, 4> out, float* log2_decay, float* transition) {
  using sh = piece_state_shape;
  using tiles::ex2;
  constexpr int CL = sh::CL, KP = sh::KP, BV = sh::BV, LDK = sh::LDK, LDV = sh::LDV;
  using D = typename Rule::decay;
  constexpr bool scalar = D::kind == decay_kind::scalar, per_key = D::kind == decay_kind::per_key;
  const source<T> src{a};
  const index_t jt = static_cast<index_t>(blockIdx.x) * BV, hv = blockIdx.y, slab = blockIdx.z;
  const seq_range seq = sequence_of(a, slab);
  const int Kw = static_cast<int>(a.K), Vw = static_cast<int>(a.V - jt < BV ? a.V - jt : index_t(BV));
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const T* k0 = a.k.ptr + seq.bt * a.k.str[0] + (hv / a.G) * a.k.str[2];
  const T* v0 = a.v.ptr + seq.bt * a.v.str[0] + hv * a.v.str[2] + jt;

  extern __shared__ __align__(16) unsigned char smem_raw[];
  E* base = reinterpret_cast<E*>(smem_raw);
  E* Dt = base + sh::d_at;
  float* F = reinterpret_cast<float*>(base + sh::end);
  float *Gs = F + sh::g_at, *Half = F + sh::half_at, *Total = F + sh::total_at;
  auto Kbuf = [&](int b) { return base + sh::k_at + b * CL * LDK; };
  auto Vbuf = [&](int b) { return base + sh::v_at + b * CL * LDV; };
  auto rows_in = [&](index_t c0) { return static_cast<int>(seq.t1 - c0 < CL ? seq.t1 - c0 : index_t(CL)); };
  auto fetch = [&](int b, index_t c0, int L) {
    tiles::fetch_rows<KP / 8>(Kbuf(b), LDK, k0, a.k.str[1], c0, L, Kw, tid);
    tiles::fetch_rows<BV / 8>(Vbuf(b), LDV, v0, a.v.str[1], c0, L, Vw, tid);
  };
  // clamped log₂ α of key i at token row r of the chunk at c0 (0 past the slab: α = 1)
  auto log2_alpha = [&](index_t c0, int L, int r, index_t i) {
    if (r >= L) return 0.f;
    return tiles::clamped_log2_decay(src.template log_alpha<Rule>(src.template scalars<D::inputs>(seq.bt, c0 + r, hv), seq.bt, c0 + r, hv, i) * tiles::log2e);
  };

  float acc[BV / 8][4] = {};
  float slab_log2 = 0;  // Σ clamped log₂ α over the slab: the scalar's (every thread), key d's (per key, tid < KP)
  if (seq.t0 < seq.t1) fetch(0, seq.t0, rows_in(seq.t0));
  int buf = 0;
  for (index_t c0 = seq.t0; c0 < seq.t1; c0 += CL, buf ^= 1) {
    const int L = rows_in(c0);
    const bool more = c0 + CL < seq.t1;
    E *Ks = Kbuf(buf), *Vs = Vbuf(buf);
    // a scalar decay's gates (warp 0: rows lane, lane + 32) into registers before the barrier: their latency overlaps
    // the wait for k and v. (A per-key decay's 32 a thread spilled there: 228 bytes at 80 registers, 84 at 128.)
    float g0 = 0, g1 = 0;
    if constexpr (scalar)
      if (warp == 0) g0 = log2_alpha(c0, L, lane, 0), g1 = log2_alpha(c0, L, lane + 32, 0);
    tiles::cp_async_wait_all();
    __syncthreads();  // this chunk's k, v are in; the last chunk's products are done with every tile
    if (more) fetch(buf ^ 1, c0 + CL, rows_in(c0 + CL));
    if (a.l2k) {
      tiles::l2norm_rows<sh::threads>(Ks, LDK, tid);
      __syncthreads();
    }

    // ---- the decay: G, the decayed operand, the state's factor ---------------------------------------------------
    if constexpr (scalar) {
      if (warp == 0) tiles::scan64(g0, g1, Gs);
      __syncthreads();
      const float gC = Gs[CL - 1];
      {  // thread: 16 values of row tid / 4
        const int r = tid >> 2, c = 16 * (tid & 3);
        const float f = ex2(gC - Gs[r]);
        uint4 d[2];
        d[0] = *reinterpret_cast<const uint4*>(Vs + r * LDV + c);
        d[1] = *reinterpret_cast<const uint4*>(Vs + r * LDV + c + 8);
        E* e = reinterpret_cast<E*>(d);
#pragma unroll
        for (int u = 0; u < 16; ++u) e[u] = from_float<E>(to_float(e[u]) * f);
        *reinterpret_cast<uint4*>(Dt + r * LDV + c) = d[0];
        *reinterpret_cast<uint4*>(Dt + r * LDV + c + 8) = d[1];
      }
      const float f = ex2(gC);
#pragma unroll
      for (int nt = 0; nt < BV / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[nt][e] *= f;
      slab_log2 += gC;
    } else if constexpr (per_key) {
      // thread: key d over rows 32h .. 32h + 31 (h = 0, 1); the suffix from the chunk's end, the rows' logs in
      // registers between the two passes. (seg16 read the gates a chunk ahead as raw 16-bit inputs instead, as
      // perkey_chunk_kernel.hpp does: the array went to local memory — ncu counted 20.7 M local requests — and passes A + M
      // took 1.50 ms against 1.00 for this loop with pass M's own launch, gla 1×32768; bench/cuda/README.md, seg16.)
      const int d = tid % KP, h = tid / KP;
      float l[32];
#pragma unroll
      for (int u = 0; u < 32; ++u) l[u] = d < Kw ? log2_alpha(c0, L, 32 * h + u, d) : 0.f;
      float s = 0;
#pragma unroll
      for (int u = 0; u < 32; ++u) s += l[u];
      Half[h * KP + d] = s;
      __syncthreads();
      float suffix = h == 0 ? Half[KP + d] : 0.f;  // Σ log₂ α over the rows after this thread's
#pragma unroll
      for (int u = 31; u >= 0; --u) {
        const int r = 32 * h + u;
        Dt[r * LDK + d] = from_float<E>(to_float(Ks[r * LDK + d]) * ex2(suffix));
        suffix += l[u];
      }
      if (h == 0) {
        Total[d] = suffix;  // the chunk's Σ log₂ α of key d
        slab_log2 += suffix;
      }
      __syncthreads();
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float f = ex2(Total[16 * warp + acc_row(e)]);
#pragma unroll
        for (int nt = 0; nt < BV / 8; ++nt) acc[nt][e] *= f;
      }
    }
    if constexpr (scalar) __syncthreads();  // V_d is in (per key: K_d came in before the totals' barrier)

    // ---- S ← (decayed S) + Kᵀ V with the decayed side ---------------------------------------------------------------
    mma_strip<E, BV / 8, true, true>(acc, (per_key ? Dt : Ks) + 16 * warp, LDK, scalar ? Dt : Vs, LDV, CL / 16);
  }
  tiles::save_state(acc, out, slab, hv, jt, a.K, a.V);
  if (jt == 0) {
    const index_t at = (slab * a.HV + hv) * a.K;
    const float m = transition ? exp2f(slab_log2) : 0.f;
    if constexpr (per_key) {
      if (tid < Kw) {
        if (log2_decay) log2_decay[at + tid] = slab_log2;
        if (transition) transition[at + tid] = m;
      }
    } else {
      for (int i = tid; i < Kw; i += sh::threads) {
        if (log2_decay) log2_decay[at + i] = slab_log2;
        if (transition) transition[at + i] = m;
      }
    }
  }
}

// B[piece] = Σ over the piece's slabs s (in order) of Diag(2^(Σ_{s' > s} L_s')) P[s]: Horner from the first slab.
// One thread per 4 neighbouring elements of a row (`wide`: V % 4 == 0 and B 16-byte aligned; else per element), grid
// (⌈K·V / (4·reduce_threads)⌉, pieces, HV): every load of a thread is independent of the others, so the slabs' rows
// stream in together. P [slabs, HV, K, V] (16-byte aligned) and B [pieces, HV, K, V] contiguous; first_slab
// [pieces + 1] on the device; log2_decay [slabs, HV, K] or null (no decay). `transition` [pieces, HV, K] or null:
// pass M of a diagonal transition, 2^(Σ_s L_s) per key — written by the thread that starts the key's row.
// (A template only so that every unit including this header may define it.)
template <class S>
__global__ void __launch_bounds__(piece_state_shape::reduce_threads)
    piece_state_reduce_kernel(const S* __restrict__ P, const S* __restrict__ log2_decay,
                              const std::int32_t* __restrict__ first_slab, S* __restrict__ B, S* __restrict__ transition,
                              index_t HV, index_t K, index_t V, bool wide) {
  const index_t piece = blockIdx.y, hv = blockIdx.z, KV = K * V;
  const index_t e = (static_cast<index_t>(blockIdx.x) * piece_state_shape::reduce_threads + threadIdx.x) * (wide ? 4 : 1);
  if (e >= KV) return;
  const index_t i = e / V, s0 = first_slab[piece], s1 = first_slab[piece + 1];
  S* b = B + (piece * HV + hv) * KV + e;
  float total = 0;  // Σ_s L_s of key i
  if (wide) {
    float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 4
    for (index_t s = s0; s < s1; ++s) {
      const float l = log2_decay ? log2_decay[(s * HV + hv) * K + i] : 0.f, f = exp2f(l);
      const float4 p = *reinterpret_cast<const float4*>(P + (s * HV + hv) * KV + e);
      x.x = f * x.x + p.x, x.y = f * x.y + p.y, x.z = f * x.z + p.z, x.w = f * x.w + p.w;
      total += l;
    }
    *reinterpret_cast<float4*>(b) = x;
  } else {
    S x = 0;
#pragma unroll 4
    for (index_t s = s0; s < s1; ++s) {
      const float l = log2_decay ? log2_decay[(s * HV + hv) * K + i] : 0.f;
      x = exp2f(l) * x + P[(s * HV + hv) * KV + e];
      total += l;
    }
    *b = x;
  }
  if (transition && e == i * V) transition[(piece * HV + hv) * K + i] = exp2f(total);
}

}  // namespace linea::cuda_detail
