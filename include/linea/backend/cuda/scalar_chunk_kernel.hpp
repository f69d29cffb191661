// linea/backend/cuda/scalar_chunk_kernel.hpp — the chunkwise forward of the rules that only add, on tensor cores:
//   S_t = γ_t S_{t-1} + k_t v_tᵀ,  o_t = s S_tᵀ q_t      (additive: γ = 1; scalar-gated: γ_t = exp g_t)
//
// Per chunk of CL = 64 tokens, with G_r = Σ_{s ≤ r} log₂ γ_s inside the chunk and C its last row (SPEC §4):
//   P = (Q Kᵀ) ⊙ 2^(G_r − G_s) for s ≤ r, else 0
//   O = s [Diag(2^G) Q S + P V]
//   S ← 2^(G_C) S + Kᵀ V_d,   V_d = Diag(2^(G_C − G)) V        (every factor ≤ 1: no overflow)
// Nothing inside a chunk is serial (no solve), so a chunk is two phases between two barriers:
//   X: Q S and P (tensor cores); V_d
//   Y: O += P V, written out; S updated in registers; Sᵀ to shared memory for the next chunk's Q S
// One CTA per (sequence, value head, 64 value columns), 8 warps, two CTAs per SM; the 128×64 state tile lives in
// registers (fp32 mma accumulators, warp w owns key rows 16w..16w+15). q, k, v land by cp.async straight into
// the operand tiles — k and v double-buffered, q refilled during Y, when nothing reads it — and Kᵀ and V are
// read token-major through ldmatrix .trans, so no tile is rewritten or transposed on the way.
//
// It takes 16-bit inputs with 16-byte aligned rows and K ≤ 128; everything else (float inputs, other strides,
// in-kernel L2 norms, normalize, the CCQ passes) runs the general chunk kernel (chunk_kernel.hpp).
#pragma once
#include "mma.hpp"
#include "source.hpp"

namespace linea::cuda_detail {

// The rules this kernel computes: no erase, no β, no per-key decay (additive, scalar-gated), main pass.
template <class Rule, pass P>
inline constexpr bool scalar_chunk_rule = P == pass::main && !Rule::update::erases && !Rule::update::uses_beta &&
                                          !Rule::update::uses_channel_gates && !Rule::decay::key_gate;

struct scalar_chunk_shape {
  static constexpr int CL = 64, KP = 128, BV = 64, threads = 256;
  // 16-byte row pads: consecutive rows 4 banks apart, so the 8 rows of an ldmatrix phase never collide
  static constexpr int LDK = KP + 8, LDV = BV + 8, LDP = CL + 8;
  // the 16-bit tiles, in elements, in the order they are carved
  static constexpr int q_at = 0,                   // q            [CL][LDK]
      k_at = q_at + CL * LDK,                      // k, 2 buffers [2][CL][LDK]
      v_at = k_at + 2 * CL * LDK,                  // v, 2 buffers [2][CL][LDV]
      s_at = v_at + 2 * CL * LDV,                  // Sᵀ           [BV][LDK]
      p_at = s_at + BV * LDK,                      // P            [CL][LDP]
      vd_at = p_at + CL * LDP,                     // V_d          [CL][LDV]
      tiles = vd_at + CL * LDV;
  static constexpr std::size_t bytes = 2 * std::size_t(tiles) + sizeof(float) * 2 * CL;  // + G, 2 buffers
  static_assert(bytes <= 113 * 1024, "two CTAs per SM");
};

// Whether the fast kernel can read this call's q, k, v: contiguous rows, 16-byte aligned (cp.async), K ≤ 128.
template <class T>
bool scalar_chunk_fits(const kernel_args<T>& k) {
  if constexpr (sizeof(T) != 2) {
    return false;
  } else {
    auto rows16 = [](const auto& v) {
      return v.str[3] == 1 && v.str[2] % 8 == 0 && v.str[1] % 8 == 0 && v.str[0] % 8 == 0 &&
             reinterpret_cast<std::uintptr_t>(v.ptr) % 16 == 0;
    };
    return k.K <= scalar_chunk_shape::KP && !k.l2q && !k.l2k && !k.normalize && !k.q_tilde_in.ptr && rows16(k.q) &&
           rows16(k.k) && rows16(k.v);
  }
}

// 16 bytes global → shared, asynchronously; the `bytes` < 16 first ones are read and the rest filled with zeros.
__device__ __forceinline__ void cp_async16_fill(void* smem, const void* gmem, int bytes) {
  const std::uint32_t s = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(bytes));
}

template <class Rule, class T, class E>
__global__ void __launch_bounds__(scalar_chunk_shape::threads, 2) scalar_chunk_kernel(const kernel_args<T> a) {
  using sh = scalar_chunk_shape;
  constexpr int CL = sh::CL, KP = sh::KP, BV = sh::BV, LDK = sh::LDK, LDV = sh::LDV, LDP = sh::LDP;
  constexpr bool decays = Rule::decay::scalar_gate;
  constexpr float log2e = 1.4426950408889634f;
  const source<T> src{a};
  const index_t hv = blockIdx.x, n = blockIdx.y, jt = static_cast<index_t>(blockIdx.z) * BV;
  const seq_range seq = sequence_of(a, n);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int Kw = static_cast<int>(a.K), Vw = static_cast<int>(a.V - jt < BV ? a.V - jt : index_t(BV));

  extern __shared__ __align__(16) unsigned char smem_raw[];
  E* tiles = reinterpret_cast<E*>(smem_raw);
  E *Qs = tiles + sh::q_at, *ST = tiles + sh::s_at, *Pe = tiles + sh::p_at, *Vd = tiles + sh::vd_at;
  float* Gbuf = reinterpret_cast<float*>(tiles + sh::tiles);  // [2][CL]

  auto ex2 = [](float x) {  // 2^x (16-bit operands: the approximate unit is accurate enough)
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
  };

  // ---- loads: row pointers once (64-bit math), then one cp.async per 16-byte piece --------------------------------
  const T* q0 = a.q.ptr + seq.bt * a.q.str[0] + (hv / a.G) * a.q.str[2];
  const T* k0 = a.k.ptr + seq.bt * a.k.str[0] + (hv / a.G) * a.k.str[2];
  const T* v0 = a.v.ptr + seq.bt * a.v.str[0] + hv * a.v.str[2] + jt;
  // rows c0 .. c0 + L − 1 of a [.][width] source into a [CL][ld] tile (PR pieces of 8 per row); zeros elsewhere
  auto fetch = [&](E* dst, const T* base, index_t stride, index_t c0, int L, int width, int ld, int PR) {
    for (int p = tid; p < CL * PR; p += sh::threads) {
      const int r = p / PR, c = 8 * (p % PR);
      const int w = width - c, bytes = r < L && w > 0 ? 2 * (w < 8 ? w : 8) : 0;
      cp_async16_fill(dst + r * ld + c, bytes ? base + (c0 + r) * stride + c : base, bytes);
    }
  };
  auto Kbuf = [&](int b) { return tiles + sh::k_at + b * CL * LDK; };
  auto Vbuf = [&](int b) { return tiles + sh::v_at + b * CL * LDV; };
  auto rows_in = [&](index_t c0) { return static_cast<int>(seq.t1 - c0 < CL ? seq.t1 - c0 : index_t(CL)); };
  // warp 0: the chunk's cumulative log₂ decays G (lanes hold rows l and l + 32), into buffer `dst`
  auto raw_g = [&](index_t c0, int L, int r) { return r < L ? src.g(seq.bt, c0 + r, hv) * log2e : 0.f; };
  auto scan_g = [&](float x0, float x1, float* dst) {
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const float y0 = __shfl_up_sync(0xffffffffu, x0, o), y1 = __shfl_up_sync(0xffffffffu, x1, o);
      if (lane >= o) x0 += y0, x1 += y1;
    }
    dst[lane] = x0;
    dst[lane + 32] = x1 + __shfl_sync(0xffffffffu, x0, 31);
  };

  // ---- the state: acc[nt][e] = S(16 warp + acc_row(e), jt + 8 nt + acc_col(e)) -------------------------------------
  float acc[BV / 8][4];
#pragma unroll
  for (int nt = 0; nt < BV / 8; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const index_t i = 16 * warp + acc_row(e), j = jt + 8 * nt + acc_col(e);
      acc[nt][e] = (a.initial_state.ptr && i < a.K && j < a.V) ? a.initial_state(seq.row, hv, i, j) : 0.f;
    }
  // Sᵀ as the operand type (Q S reads it as B = [value column][key]); stmatrix.trans on sm_90
  auto store_state = [&] {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#pragma unroll
    for (int nt = 0; nt < BV / 8; nt += 2) {
      const int m = lane >> 3;
      E* row = ST + (8 * (nt + m / 2) + (lane & 7)) * LDK + 16 * warp + 8 * (m % 2);
      stmatrix_x4_trans(row, pack2<E>(acc[nt][0], acc[nt][1]), pack2<E>(acc[nt][2], acc[nt][3]),
                        pack2<E>(acc[nt + 1][0], acc[nt + 1][1]), pack2<E>(acc[nt + 1][2], acc[nt + 1][3]));
    }
#else
#pragma unroll
    for (int nt = 0; nt < BV / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) ST[(8 * nt + acc_col(e)) * LDK + 16 * warp + acc_row(e)] = from_float<E>(acc[nt][e]);
#endif
  };

  if (seq.t0 < seq.t1) {
    const int L = rows_in(seq.t0);
    fetch(Qs, q0, a.q.str[1], seq.t0, L, Kw, LDK, KP / 8);
    fetch(Kbuf(0), k0, a.k.str[1], seq.t0, L, Kw, LDK, KP / 8);
    fetch(Vbuf(0), v0, a.v.str[1], seq.t0, L, Vw, LDV, BV / 8);
    if (decays && warp == 0) scan_g(raw_g(seq.t0, L, lane), raw_g(seq.t0, L, lane + 32), Gbuf);
  }
  store_state();

  // Warp w: rows r0 .. r0 + 15 of P and O, columns c0w .. c0w + 31 (tokens of P, value columns of O).
  const int r0 = 16 * (warp >> 1), c0w = 32 * (warp & 1);
  int buf = 0;
  for (index_t c0 = seq.t0; c0 < seq.t1; c0 += CL, buf ^= 1) {
    const int L = rows_in(c0);
    const bool more = c0 + CL < seq.t1;
    const int Ln = more ? rows_in(c0 + CL) : 0;
    const E *Ks = Kbuf(buf), *Vs = Vbuf(buf);
    const float* Gc = Gbuf + buf * CL;
    asm volatile("cp.async.wait_all;\n" ::);
    __syncthreads();  // this chunk's q, k, v, G and the state's Sᵀ are in; last chunk's P, V_d are read
    if (more) {       // the next chunk's k, v and G: land during this chunk
      fetch(Kbuf(buf ^ 1), k0, a.k.str[1], c0 + CL, Ln, Kw, LDK, KP / 8);
      fetch(Vbuf(buf ^ 1), v0, a.v.str[1], c0 + CL, Ln, Vw, LDV, BV / 8);
    }
    float gn0 = 0, gn1 = 0;
    if (decays && warp == 0 && more) gn0 = raw_g(c0 + CL, Ln, lane), gn1 = raw_g(c0 + CL, Ln, lane + 32);

    // ---- X: Q S and P; V_d -------------------------------------------------------------------------------------
    float o[4][4] = {};
    mma_strip<E, 4, false, false>(o, Qs + r0 * LDK, LDK, ST + c0w * LDK, LDK, KP / 16);
    if (c0w <= r0 + 15) {  // P strips with entries on or below the diagonal (the others are never read)
      float p[4][4] = {};
      mma_strip<E, 4, false, false>(p, Qs + r0 * LDK, LDK, Ks + c0w * LDK, LDK, KP / 16);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = r0 + acc_row(2 * h);
        const float gr = decays ? Gc[r] : 0.f;
#pragma unroll
        for (int t = 0; t < 4; ++t) {
          const int s = c0w + 8 * t + acc_col(0);
          float x0 = p[t][2 * h], x1 = p[t][2 * h + 1];
          if constexpr (decays) x0 *= ex2(gr - Gc[s]), x1 *= ex2(gr - Gc[s + 1]);
          x0 = s <= r ? x0 : 0.f, x1 = s + 1 <= r ? x1 : 0.f;  // a select: what is masked may be inf
          *reinterpret_cast<std::uint32_t*>(Pe + r * LDP + s) = pack2<E>(x0, x1);
        }
      }
    }
    {  // thread: 16 values of row tid / 4 — V_d = 2^(G_C − G_r) v_r, and the residual u_r = v_r when asked for
      const int r = tid >> 2, c = 16 * (tid & 3);
      uint4 raw[2];
      raw[0] = *reinterpret_cast<const uint4*>(Vs + r * LDV + c);
      raw[1] = *reinterpret_cast<const uint4*>(Vs + r * LDV + c + 8);
      if constexpr (decays) {
        const float f = ex2(Gc[CL - 1] - Gc[r]);
        E* e = reinterpret_cast<E*>(raw);
#pragma unroll
        for (int u = 0; u < 16; ++u) e[u] = from_float<E>(to_float(e[u]) * f);
        *reinterpret_cast<uint4*>(Vd + r * LDV + c) = raw[0];
        *reinterpret_cast<uint4*>(Vd + r * LDV + c + 8) = raw[1];
        raw[0] = *reinterpret_cast<const uint4*>(Vs + r * LDV + c);
        raw[1] = *reinterpret_cast<const uint4*>(Vs + r * LDV + c + 8);
      }
      if (a.residual.ptr && r < L) {
        T* row = a.residual.row(seq.bt, c0 + r, hv);
        const index_t inner = a.residual.str[3];
        const T* x = reinterpret_cast<const T*>(raw);
        for (int u = 0; u < 16; ++u)
          if (c + u < Vw) row[(jt + c + u) * inner] = x[u];
      }
    }
    __syncthreads();  // P, V_d in; every read of q and Sᵀ done
    if (more) fetch(Qs, q0, a.q.str[1], c0 + CL, Ln, Kw, LDK, KP / 8);

    // ---- Y: O += P V, out; S ← 2^(G_C) S + Kᵀ V_d; Sᵀ for the next chunk ---------------------------------------------
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if constexpr (decays) {
        const float f = ex2(Gc[r0 + acc_row(2 * h)]);
#pragma unroll
        for (int t = 0; t < 4; ++t) o[t][2 * h] *= f, o[t][2 * h + 1] *= f;
      }
    }
    mma_strip<E, 4, false, true>(o, Pe + r0 * LDP, LDP, Vs + c0w, LDV, r0 / 16 + 1);  // P is zero past the diagonal
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = r0 + acc_row(2 * h);
      if (r >= L) continue;
      T* row = a.o.row(seq.bt, c0 + r, hv);
      const index_t inner = a.o.str[3];
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        const int j = c0w + 8 * t + acc_col(0);
        const float o0 = o[t][2 * h] * a.scale, o1 = o[t][2 * h + 1] * a.scale;
        if (inner == 1 && j + 1 < Vw && (reinterpret_cast<std::uintptr_t>(row + jt + j) & 3) == 0) {
          const T pair[2] = {from_float<T>(o0), from_float<T>(o1)};  // one 4-byte store
          std::uint32_t w;
          memcpy(&w, pair, sizeof w);
          *reinterpret_cast<std::uint32_t*>(row + jt + j) = w;
        } else {
          if (j < Vw) row[(jt + j) * inner] = from_float<T>(o0);
          if (j + 1 < Vw) row[(jt + j + 1) * inner] = from_float<T>(o1);
        }
      }
    }
    if constexpr (decays) {
      const float f = ex2(Gc[CL - 1]);
#pragma unroll
      for (int nt = 0; nt < BV / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[nt][e] *= f;
    }
    mma_strip<E, BV / 8, true, true>(acc, Ks + 16 * warp, LDK, decays ? Vd : Vs, LDV, CL / 16);
    store_state();  // no warp reads Sᵀ until the next chunk's first barrier
    if (decays && warp == 0 && more) scan_g(gn0, gn1, Gbuf + (buf ^ 1) * CL);
  }

  if (a.final_state.ptr) {
#pragma unroll
    for (int nt = 0; nt < BV / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const index_t i = 16 * warp + acc_row(e), j = jt + 8 * nt + acc_col(e);
        if (i < a.K && j < a.V) a.final_state(seq.row, hv, i, j) = acc[nt][e];
      }
  }
}

}  // namespace linea::cuda_detail
