// linea/backend/cuda/chunk_phases/gather.hpp — a chunk's inputs into the operand tiles (the device side of
// chunk/gather.hpp), in two steps so that the global reads of chunk c + 1 land while chunk c computes:
//   prefetch_chunk   the raw q, k, v (, gk, b, w) rows into the stage by cp.async (16-bit inputs), and each row's
//                    scalar gate and β into a register of thread r
//   load_chunk       from the stage (or, for float inputs, straight from memory): q̂, k̂ (L2 norms in the kernel),
//                    the erase key, per-key log decays, and the values w ⊙ v or β v, transposed
#pragma once
#include "layout.hpp"

namespace linea::cuda_detail::chunk_phases {

// Row tid's log α (a scalar decay's hook, or the stats pass's c_t) and β, held in registers from the prefetch
// until the chunk is staged (threads tid < CL).
struct row_scalars {
  float g = 0, b = 0;
};

// The per-lane hooks below see each row's β (in shared memory) but not its raw g: a decay of kind per_key, or an
// update, that read g would need another row array.
template <class Rule>
inline constexpr bool lane_hooks_see_their_inputs =
    !reads(Rule::update::inputs, input::g) &&
    !(Rule::decay::kind == decay_kind::per_key && reads(Rule::decay::inputs, input::g | input::beta));

// One lane of row r for the policies' hooks: β and this lane's element of a row input.
__device__ __forceinline__ lane_token row_lane(float beta) {
  lane_token x;
  x.beta = beta;
  return x;
}

template <class Sh>
__device__ __forceinline__ void prefetch_chunk(const chunk_cta<Sh>& cx, index_t c0, row_scalars& pre) {
  using traits = typename Sh::traits;
  using T = typename Sh::T;
  constexpr int CL = Sh::CL, KP = Sh::KP, VP = Sh::VP;
  const auto& a = cx.a;
  const auto& seq = cx.seq;
  const int tid = cx.tid;
  const int L = cx.rows_in(c0);
  using Rule = typename Sh::rule;
  pre.g = 0.f, pre.b = 0.f;  // rows past the end: zero decay and zero beta
  if (tid < L) {
    const index_t t = c0 + tid;
    // the stats pass needs only the rule's decay (its default c_t)
    const token_scalars ts = cx.src.template scalars<traits::stats ? Rule::decay::inputs : Rule::inputs>(seq.bt, t, cx.hv);
    if constexpr (traits::stats) {
      float rule = 0;
      if constexpr (traits::stats_rule_g) rule = cx.src.template log_alpha<Rule>(ts, seq.bt, t, cx.hv, 0);
      pre.g = rule;  // mean of gk is added at staging (needs the row)
      if constexpr (!traits::stats_mean_gk) pre.g = cx.src.stats_log_decay(seq.bt, t, cx.hv, rule);
    } else if constexpr (traits::scalar) {
      pre.g = cx.src.template log_alpha<Rule>(ts, seq.bt, t, cx.hv, 0);
    }
    pre.b = ts.beta;
  }
  if constexpr (Sh::async) {
    // Thread tid copies 16-byte piece tid % per_row of rows tid / per_row + passes·k of every tile: the row
    // pointer is one multiply-add per row, and zeros fill what lies past the sequence or the width.
    constexpr int EPP = 16 / static_cast<int>(sizeof(T)), per_row = KP / EPP, passes = chunk_threads / per_row;
    const int i0 = (tid % per_row) * EPP, r_first = tid / per_row;
    T* stage = cx.sm.stage;
    const index_t jt = cx.jt;
    auto stage_tile = [&](const view<const T, 4>& v, index_t head, int tile, bool value_tile) {
      if (value_tile && i0 >= VP) return;
      const index_t width = value_tile ? cx.Vd - jt : cx.K, inner = v.str[3];
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
    if (!a.q_tilde_in.ptr) stage_tile(a.q, cx.hk, 0, false);  // CCQ main pass: q̃ is read in place of q
    stage_tile(a.k, cx.hk, 1, false);
    if constexpr (!traits::stats) stage_tile(a.v, cx.hv, 2, true);  // the stats pass's values are its keys
    if constexpr (traits::per_key) stage_tile(a.gk, cx.hv, 3, false);
    if constexpr (traits::reads_b) stage_tile(a.b, cx.hv, 4, false);
    if constexpr (traits::reads_w) stage_tile(a.w, cx.hv, 5, true);
  }
}

// The state tile Sᵀ in the operand type (the chunk's products read it), and the prefetched row scalars; then the
// chunk's cp.async copies are waited for. A barrier follows.
template <class Sh, int NT>
__device__ __forceinline__ void stage_state(const chunk_cta<Sh>& cx, const float (&acc)[NT][4], const row_scalars& pre) {
  constexpr float log2e = tiles::log2e;
  tiles::store_state_t(cx.sm.SopT, Sh::LDK, acc);  // stmatrix.trans on sm_90 for 16-bit operands
  if (cx.tid < Sh::CL) cx.sm.gsc[cx.tid] = tiles::clamped_log2_decay(pre.g * log2e), cx.sm.bet[cx.tid] = pre.b;
  if constexpr (Sh::async) tiles::cp_async_wait_all();
}

// One warp per row; lane l holds key channels 4l .. 4l+3 (8-byte shared loads and stores).
template <class Sh>
__device__ __forceinline__ void load_chunk(const chunk_cta<Sh>& cx, index_t c0, int L) {
  using traits = typename Sh::traits;
  using Rule = typename Sh::rule;
  using T = typename Sh::T;
  using E = typename Sh::E;
  static_assert(lane_hooks_see_their_inputs<Rule>,
                "linea: the CUDA chunk kernel gives per-lane hooks β but not g; this rule's policies read g per lane");
  constexpr int CL = Sh::CL, KP = Sh::KP, VP = Sh::VP, LDK = Sh::LDK, LDC = Sh::LDC, LDG = Sh::LDG, NW = Sh::NW;
  constexpr float log2e = tiles::log2e;
  const auto& a = cx.a;
  const auto& src = cx.src;
  const auto& seq = cx.seq;
  const auto& sm = cx.sm;
  const index_t K = cx.K, Vd = cx.Vd, hv = cx.hv, jt = cx.jt;
  const int warp = cx.warp, lane = cx.lane;
  T* stage = sm.stage;
  constexpr int VPL = VP / 32;  // value columns per lane
  for (int r = warp; r < CL; r += NW) {
    const index_t t = c0 + r;
    const bool live = r < L;
    const int i0 = 4 * lane, j0 = VPL * lane;
    float qv[4], kv[4], lg[4] = {}, bv[4] = {}, qq = 0, kk = 0, gs = 0;
    if constexpr (Sh::async) {  // the stage is zero past the sequence and past K
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
      if constexpr (traits::reads_b) load_n<4>(stage + (4 * CL + r) * KP + i0, bv);
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int i = i0 + u;
      const bool in = live && i < K;
      if constexpr (!Sh::async) {
        qv[u] = in ? src.q(seq.bt, t, hv, i) : 0.f;
        kv[u] = in ? src.k(seq.bt, t, hv, i) : 0.f;
        if constexpr (traits::reads_b) bv[u] = in ? src.b(seq.bt, t, hv, i) : 0.f;
      }
      qq += qv[u] * qv[u], kk += kv[u] * kv[u];
      if constexpr (traits::per_key || traits::stats_mean_gk) {
        float l = 0;
        if (in) {
          if constexpr (Sh::async && traits::per_key) {
            l = lg[u];  // the staged raw gate: the in-kernel gate, then the decay's hook
            if (a.gate_active) l = gate_from_logit(l, a.A_log, a.dt_bias, a.has_lower_bound, a.lower_bound, hv, hv * a.K + i);
            lane_token x = row_lane(sm.bet[r]);
            x.gk.value = l;
            l = Rule::decay::log_alpha(x, i);
          } else {
            l = src.template log_alpha<Rule>(token_scalars{0.f, sm.bet[r]}, seq.bt, t, hv, i);
          }
        }
        lg[u] = tiles::clamped_log2_decay(l * log2e);
        gs += l;
      }
    }
    if constexpr (traits::per_key) store_n<4>(sm.Gs + r * LDG + i0, lg);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      qq += __shfl_xor_sync(0xffffffffu, qq, o);
      kk += __shfl_xor_sync(0xffffffffu, kk, o);
      if constexpr (traits::stats_mean_gk) gs += __shfl_xor_sync(0xffffffffu, gs, o);
    }
    const float qn = src.q_normalised() ? rsqrtf(qq + 1e-6f) : 1.f, kn = a.l2k ? rsqrtf(kk + 1e-6f) : 1.f;
    if constexpr (traits::stats_mean_gk) {
      if (lane == 0 && live) sm.gsc[r] = tiles::clamped_log2_decay(src.stats_log_decay(seq.bt, t, hv, gs / static_cast<float>(K)) * log2e);
    }
    const float beta = sm.bet[r];
    float ev[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      kv[u] *= kn, qv[u] *= qn;
      lane_token x = row_lane(beta);
      x.b.value = bv[u];
      ev[u] = Rule::update::erase_gate(x, i0 + u) * kv[u];  // the erase key b ⊙ k (the update's hook)
    }
    store_n<4>(sm.Qs + r * LDK + i0, qv);
    store_n<4>(sm.Ks + r * LDK + i0, kv);
    if constexpr (traits::erases) store_n<4>(sm.EK + r * LDK + i0, ev);
    // the values (w ⊙ v or β v), this CTA's columns jt + j0 ..; transposed into UsT
    float x[VPL] = {};
    if constexpr (traits::stats) {
      __syncwarp();  // the values are this row's keys, written just above
#pragma unroll
      for (int c = 0; c < VPL; ++c) x[c] = to_float(sm.Ks[r * LDK + jt + j0 + c]);
    } else {
      float wv[VPL];
      if constexpr (Sh::async) {
        load_n<VPL>(stage + (2 * CL + r) * KP + j0, x);
        if constexpr (traits::reads_w) load_n<VPL>(stage + (5 * CL + r) * KP + j0, wv);
      } else {
#pragma unroll
        for (int c = 0; c < VPL; ++c) {
          const bool in = live && jt + j0 + c < Vd;
          x[c] = in ? src.v(seq.bt, t, hv, jt + j0 + c) : 0.f;
          if constexpr (traits::reads_w) wv[c] = in ? src.w(seq.bt, t, hv, jt + j0 + c) : 0.f;
        }
      }
#pragma unroll
      for (int c = 0; c < VPL; ++c) {
        lane_token xw = row_lane(beta);
        if constexpr (traits::reads_w) xw.w.value = wv[c];
        x[c] = Rule::update::write_gate(xw, jt + j0 + c) * x[c];  // the write target w ⊙ v (the update's hook)
        if constexpr (!traits::erases) {
          if (a.residual.ptr && live && jt + j0 + c < Vd) a.residual(seq.bt, t, hv, jt + j0 + c) = from_float<T>(x[c]);  // u_t = w ⊙ v
        }
      }
    }
#pragma unroll
    for (int c = 0; c < VPL; ++c) sm.UsT[(j0 + c) * LDC + r] = from_float<E>(x[c]);
  }
}

}  // namespace linea::cuda_detail::chunk_phases
