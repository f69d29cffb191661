// linea/backend/cpu/tile.hpp — one column tile of the state, one token: the fused pass of the CPU recurrent form.
//
// Value columns of the state evolve independently (the correction u_j and the read o_j only use column j),
// so the K×V state is cut into tiles of W = NV·lanes columns that stay in L1 (K = 128, W = 64 floats: 32 KiB)
// while a block of tokens runs through them, with u, o and r held in registers.
//
// The tile holds S̃ with S = Diag(c) S̃ (backend/cpu/recurrent.hpp explains the deferred decay), so one token
// is, per row i of the tile (kw = k/c, qr = s·c⊙q̃, e = c⊙b⊙k are per-token coefficients):
//
//   S̃_i += kw_i · u                     write
//   o   += qr_i · S̃_i                   read (write first, then read)
//   S̃_i *= f_i                          only when the next token renormalises (rare)
//   r   += e'_i · S̃_i                   the next token's recall S'ᵀ(b⊙k), fused so the tile is read once
//
// Three FMAs per state element for the delta rules, two for the additive ones: the nominal count is two.
// pair() runs two tokens per pass (the state is loaded and stored once for both; see its comment).
#pragma once
#include "../isa.hpp"
#include "simd.hpp"

LINEA_SIMD_WARNINGS_BEGIN
namespace linea::cpu_backend::inline LINEA_ISA {

template <class R, class Arch, int NV>
struct tile {
  using L = lanes<R, Arch>;
  using vec = typename L::type;
  static constexpr int lanes_per_vec = L::size;
  static constexpr int width = NV * L::size;  // value columns per tile

  // Before a block's first token: scale rows by f (when given), then r = Σ_i e_i S̃_i (when e is given) and
  // y = Σ_i e2_i S̃_i (when e2 is given: the token after, for the two-token pass).
  static void begin(R* S, index_t K, const R* f, const R* e, R* r, const R* e2, R* y) {
    if (f) {
      for (index_t i = 0; i < K; ++i) {
        const vec fi = L::splat(f[i]);
        R* row = S + i * width;
        for (int n = 0; n < NV; ++n) L::store(row + n * L::size, L::load(row + n * L::size) * fi);
      }
    }
    if (!e) return;
    vec acc[NV], acc2[NV];
    for (int n = 0; n < NV; ++n) acc[n] = acc2[n] = L::splat(R(0));
    for (index_t i = 0; i < K; ++i) {
      const vec ei = L::splat(e[i]), e2i = L::splat(e2 ? e2[i] : R(0));
      for (int n = 0; n < NV; ++n) {
        const vec x = L::load(S + i * width + n * L::size);
        acc[n] = L::fma(ei, x, acc[n]);
        acc2[n] = L::fma(e2i, x, acc2[n]);
      }
    }
    for (int n = 0; n < NV; ++n) {
      L::store(r + n * L::size, acc[n]);
      if (e2) L::store(y + n * L::size, acc2[n]);
    }
  }

  // One token over the tile (see the file comment). Recall: the next token's r (with e_next) is computed;
  // Recall2: also y = S̃ᵀ e_after (the token after next), which lets the next step be a two-token pass.
  // Scale: rows are multiplied by f_next before the recalls and the store. Read: o is computed (not by the
  // backward's checkpoint pass, which wants the states only).
  template <bool Recall, bool Recall2, bool Scale, bool Read = true>
  static void token(R* S, index_t K, const R* u, const R* kw, const R* qr, const R* f_next, const R* e_next,
                    const R* e_after, R* o, R* r, R* y) {
    vec uv[NV], ov0[NV], ov1[NV], rv[NV], yv[NV];
    for (int n = 0; n < NV; ++n) {
      uv[n] = L::load(u + n * L::size);
      ov0[n] = ov1[n] = rv[n] = yv[n] = L::splat(R(0));
    }
    auto row_step = [&](index_t i, vec* ov) {
      R* row = S + i * width;
      const vec kwi = L::splat(kw[i]);
      vec qri{}, fi{}, ei{}, ai{};
      if constexpr (Read) qri = L::splat(qr[i]);
      if constexpr (Scale) fi = L::splat(f_next[i]);
      if constexpr (Recall) ei = L::splat(e_next[i]);
      if constexpr (Recall2) ai = L::splat(e_after[i]);
      for (int n = 0; n < NV; ++n) {
        vec s = L::fma(kwi, uv[n], L::load(row + n * L::size));
        if constexpr (Read) ov[n] = L::fma(qri, s, ov[n]);
        if constexpr (Scale) s = s * fi;
        if constexpr (Recall) rv[n] = L::fma(ei, s, rv[n]);
        if constexpr (Recall2) yv[n] = L::fma(ai, s, yv[n]);
        L::store(row + n * L::size, s);
      }
    };
    index_t i = 0;
    for (; i + 1 < K; i += 2) {  // two read accumulator sets: the additive loop is 2 FMAs per element
      row_step(i, ov0);
      row_step(i + 1, ov1);
    }
    if (i < K) row_step(i, ov0);
    for (int n = 0; n < NV; ++n) {
      if constexpr (Read) L::store(o + n * L::size, ov0[n] + ov1[n]);
      if constexpr (Recall) L::store(r + n * L::size, rv[n]);
      if constexpr (Recall2) L::store(y + n * L::size, yv[n]);
    }
  }

  // Two tokens t, t+1 in one pass (no renormalisation at t+1 .. t+3): the state is loaded and stored once
  // for both, and the recalls of t+2 (r, with e2) and t+3 (y, with e3) come from the state after t+1.
  //   A_i = S̃_i + kw_t,i u_t;  o_t += qr_t,i A_i;  B_i = A_i + kw_t+1,i u_t+1;  o_t+1 += qr_t+1,i B_i
  template <bool Recall, bool Recall2, bool Read = true>
  static void pair(R* S, index_t K, const R* u0, const R* u1, const R* kw0, const R* qr0, const R* kw1,
                   const R* qr1, const R* e2, const R* e3, R* o0, R* o1, R* r, R* y) {
    vec ua[NV], ub[NV], oa[NV], ob[NV], rv[NV], yv[NV];
    for (int n = 0; n < NV; ++n) {
      ua[n] = L::load(u0 + n * L::size);
      ub[n] = L::load(u1 + n * L::size);
      oa[n] = ob[n] = rv[n] = yv[n] = L::splat(R(0));
    }
    for (index_t i = 0; i < K; ++i) {
      R* row = S + i * width;
      const vec k0 = L::splat(kw0[i]), k1 = L::splat(kw1[i]);
      vec q0{}, q1{}, ei{}, ai{};
      if constexpr (Read) q0 = L::splat(qr0[i]), q1 = L::splat(qr1[i]);
      if constexpr (Recall) ei = L::splat(e2[i]);
      if constexpr (Recall2) ai = L::splat(e3[i]);
      for (int n = 0; n < NV; ++n) {
        vec s = L::fma(k0, ua[n], L::load(row + n * L::size));
        if constexpr (Read) oa[n] = L::fma(q0, s, oa[n]);
        s = L::fma(k1, ub[n], s);
        if constexpr (Read) ob[n] = L::fma(q1, s, ob[n]);
        if constexpr (Recall) rv[n] = L::fma(ei, s, rv[n]);
        if constexpr (Recall2) yv[n] = L::fma(ai, s, yv[n]);
        L::store(row + n * L::size, s);
      }
    }
    for (int n = 0; n < NV; ++n) {
      if constexpr (Read) L::store(o0 + n * L::size, oa[n]), L::store(o1 + n * L::size, ob[n]);
      if constexpr (Recall) L::store(r + n * L::size, rv[n]);
      if constexpr (Recall2) L::store(y + n * L::size, yv[n]);
    }
  }
};

}  // namespace linea::cpu_backend

namespace linea::cpu_backend::inline LINEA_ISA {

// The additive rules (additive, simple_gla, gla: u = w ⊙ v is known before the state is read) need no recall,
// so nothing couples the key rows within a token: a KR × NV-vector block of S̃ stays in registers for a whole
// block of tokens, and each token costs 2·KR·NV FMAs, KR·2 broadcasts and NV loads/stores of a partial read
// (the state is loaded and stored once per block instead of once per token).
//
//   per token t:  S̃_i *= f_i (only when t renormalises);  S̃_i += kw_i · u;  o_part += qr_i · S̃_i
template <class R, class Arch, int KR, int NV>
struct register_tile {
  using L = lanes<R, Arch>;
  using vec = typename L::type;
  static constexpr int rows = KR, width = NV * L::size;

  // S: KR rows of `width` columns with row stride ldS. kw, qr: token t's coefficients of these rows at
  // kw + t·ldc, qr + t·ldc. u: row t at u + t·ldu. renorm/f: per token flag and factors at f + t·ldf.
  // o: [tokens][width] partial reads, overwritten when `first`, else accumulated (not touched without `Read`).
  template <bool Read = true>
  static void run(R* S, index_t ldS, index_t tokens, const R* kw, const R* qr, index_t ldc, const R* u,
                  index_t ldu, const unsigned char* renorm, const R* f, index_t ldf, R* o, bool first) {
    vec s[KR][NV];
    for (int i = 0; i < KR; ++i)
      for (int n = 0; n < NV; ++n) s[i][n] = L::load(S + i * ldS + n * L::size);
    for (index_t t = 0; t < tokens; ++t) {
      if (renorm[t]) {
        for (int i = 0; i < KR; ++i) {
          const vec fi = L::splat(f[t * ldf + i]);
          for (int n = 0; n < NV; ++n) s[i][n] = s[i][n] * fi;
        }
      }
      const R* kt = kw + t * ldc;
      [[maybe_unused]] const R* qt = qr + t * ldc;
      vec uv[NV], acc0[NV], acc1[NV];
      for (int n = 0; n < NV; ++n) {
        uv[n] = L::load(u + t * ldu + n * L::size);
        acc0[n] = acc1[n] = L::splat(R(0));
      }
      for (int i = 0; i < KR; i += 2) {
        const vec k0 = L::splat(kt[i]);
        for (int n = 0; n < NV; ++n) s[i][n] = L::fma(k0, uv[n], s[i][n]);
        if constexpr (Read) {
          const vec q0 = L::splat(qt[i]);
          for (int n = 0; n < NV; ++n) acc0[n] = L::fma(q0, s[i][n], acc0[n]);
        }
        if (i + 1 < KR) {
          const vec k1 = L::splat(kt[i + 1]);
          for (int n = 0; n < NV; ++n) s[i + 1][n] = L::fma(k1, uv[n], s[i + 1][n]);
          if constexpr (Read) {
            const vec q1 = L::splat(qt[i + 1]);
            for (int n = 0; n < NV; ++n) acc1[n] = L::fma(q1, s[i + 1][n], acc1[n]);
          }
        }
      }
      if constexpr (!Read) continue;
      R* ot = o + t * width;
      for (int n = 0; n < NV; ++n) {
        const vec part = acc0[n] + acc1[n];
        L::store(ot + n * L::size, first ? part : part + L::load(ot + n * L::size));
      }
    }
    for (int i = 0; i < KR; ++i)
      for (int n = 0; n < NV; ++n) L::store(S + i * ldS + n * L::size, s[i][n]);
  }
};

}  // namespace linea::cpu_backend
LINEA_SIMD_WARNINGS_END
