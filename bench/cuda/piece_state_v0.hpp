// bench/cuda/piece_state_v0.hpp — main 430ab74's pass A of the rules that only add (segA15: piece_state_kernel.hpp
// and its reduce, one CTA per (piece, value head) walking the elements; the per-key gates loaded after the chunk's
// barrier; the driver's default carveout; six slab CTAs per SM), copied verbatim into namespace v0 so that
// segments_bench --seg16 times it against the library's in one process. Bench-only: nothing includes it but the bench.
#pragma once
#include <linea/cuda.hpp>

namespace linea::cuda_detail::v0 {


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
// rule, or every piece one slab).
template <class Rule, class T, class E>
__global__ void __launch_bounds__(piece_state_shape::threads, 3)
    piece_state_kernel(const kernel_args<T> a, const view<float, 4> out, float* log2_decay) {
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
    tiles::cp_async_wait_all();
    __syncthreads();  // this chunk's k, v are in; the last chunk's products are done with every tile
    if (more) fetch(buf ^ 1, c0 + CL, rows_in(c0 + CL));
    if (a.l2k) {
      tiles::l2norm_rows<sh::threads>(Ks, LDK, tid);
      __syncthreads();
    }

    // ---- the decay: G, the decayed operand, the state's factor ---------------------------------------------------
    if constexpr (scalar) {
      if (warp == 0) tiles::scan64(log2_alpha(c0, L, lane, 0), log2_alpha(c0, L, lane + 32, 0), Gs);
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
      // registers between the two passes
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
  if (log2_decay && jt == 0) {
    float* row = log2_decay + (slab * a.HV + hv) * a.K;
    if constexpr (per_key) {
      if (tid < Kw) row[tid] = slab_log2;
    } else {
      for (int i = tid; i < Kw; i += sh::threads) row[i] = slab_log2;
    }
  }
}

// B[piece] = Σ over the piece's slabs s (in order) of Diag(2^(Σ_{s' > s} L_s')) P[s]: Horner from the first slab.
// Grid (pieces, HV), piece_state_shape::reduce_threads threads; P [slabs, HV, K, V] and B [pieces, HV, K, V]
// contiguous; first_slab [pieces + 1] on the device; log2_decay [slabs, HV, K] or null (no decay).
// (A template only so that every unit including this header may define it.)
template <class S>
__global__ void __launch_bounds__(piece_state_shape::reduce_threads)
    piece_state_reduce_kernel(const S* P, const S* log2_decay, const std::int32_t* first_slab, S* B, index_t HV,
                              index_t K, index_t V) {
  const index_t piece = blockIdx.x, hv = blockIdx.y, KV = K * V;
  const index_t s0 = first_slab[piece], s1 = first_slab[piece + 1];
  S* b = B + (piece * HV + hv) * KV;
  for (index_t e = threadIdx.x; e < KV; e += piece_state_shape::reduce_threads) {
    const index_t i = e / V;
    S x = 0;
    for (index_t s = s0; s < s1; ++s) {
      const S f = log2_decay ? exp2f(log2_decay[(s * HV + hv) * K + i]) : S(1);
      x = f * x + P[(s * HV + hv) * KV + e];
    }
    b[e] = x;
  }
}


// device_ops with main 430ab74's piece_states (backend/cuda/segments.hpp there), on the kernels above, and its pass M
// (decay_transitions) after it.
struct pass_a_ops : device_ops {
  pass_a_ops(cudaStream_t s, scratch_source src, void* base, std::size_t bytes)
      : device_ops(s, src, base, bytes), counting_(src == scratch_source::count) {}
  // main's pass A, then (given M) main's pass M: decay_transitions, its own launch
  template <class Rule, class T>
  bool piece_states(const arguments<T, float>& x, std::span<const std::int64_t> cu, const view<float, 4>& M = {}) {
    if (!main_piece_states<Rule>(x, cu)) return false;
    if constexpr (decay_product_rule<Rule>)
      if (!M.empty()) decay_transitions<Rule>(x, M, cu);
    return true;
  }

 private:
  template <class Rule, class T>
  bool main_piece_states(const arguments<T, float>& x, std::span<const std::int64_t> cu) {
    if constexpr (!piece_state_rule<Rule> || sizeof(T) != 2) {
      return false;
    } else {
      const index_t pieces = static_cast<index_t>(cu.size()) - 1;
      if (pieces < 1 || x.k.ext[3] > tiles::KP || !tiles::rows_fit_cp_async(x.k) || !tiles::rows_fit_cp_async(x.v) ||
          !x.cu_seqlens.empty())
        return false;
      const index_t HV = x.v.ext[2], K = x.k.ext[3], V = x.v.ext[3], tiles_v = (V + piece_state_shape::BV - 1) / piece_state_shape::BV;
      const std::vector<std::int64_t> slab_cu = piece_slabs(cu, HV * tiles_v);
      const index_t slabs = static_cast<index_t>(slab_cu.size()) - 1;
      if (slabs > 65535) return false;
      std::vector<std::int32_t> first{0};
      for (index_t n = 0, s = 0; n < pieces; ++n) {
        while (s < slabs && slab_cu[s] < cu[n + 1]) ++s;
        first.push_back(static_cast<std::int32_t>(s));
      }
      const bool one_each = slabs == pieces;
      constexpr bool decays = Rule::decay::kind != decay_kind::none;
      const std::int64_t* seqlens = upload(std::span<const std::int64_t>(slab_cu));
      const std::int32_t* first_slab = one_each ? nullptr : upload(std::span<const std::int32_t>(first));
      float* P = one_each ? nullptr : alloc<float>(static_cast<std::size_t>(slabs * HV * K * V));
      float* L = one_each || !decays ? nullptr : alloc<float>(static_cast<std::size_t>(slabs * HV * K));
      if (counting_) return true;
      arguments<T, float> y = x;
      y.cu_seqlens = {}, y.initial_state = {}, y.final_state = {}, y.residual = {};
      const problem p = validate_chunkwise<Rule, read::identity>(y, slabs);
      if (HV == 0 || K == 0 || V == 0) return true;
      kernel_args<T> k = make_kernel_args(y, p);
      k.cu_seqlens = seqlens;
      const view<float, 4> out = one_each ? x.final_state : contiguous<4>(P, {slabs, HV, K, V});
      using E = typename operand_type<T>::type;
      constexpr auto kernel = piece_state_kernel<Rule, T, E>;
      allow_dynamic_shared<kernel>(piece_state_shape::bytes, current_device());
      const dim3 grid(static_cast<unsigned>(tiles_v), static_cast<unsigned>(HV), static_cast<unsigned>(slabs));
      kernel<<<grid, piece_state_shape::threads, piece_state_shape::bytes, stream()>>>(k, out, L);
      check_launch("v0::piece_state_kernel");
      if (!one_each) {
        const dim3 rgrid(static_cast<unsigned>(pieces), static_cast<unsigned>(HV));
        piece_state_reduce_kernel<float><<<rgrid, piece_state_shape::reduce_threads, 0, stream()>>>(
            P, L, first_slab, x.final_state.ptr, HV, K, V);
        check_launch("v0::piece_state_reduce_kernel");
      }
      return true;
    }
  }

  static std::vector<std::int64_t> piece_slabs(std::span<const std::int64_t> cu, index_t units) {
    constexpr index_t min_slab = 256, slab_ctas_per_sm = 6;
    index_t longest = 0;
    for (std::size_t n = 0; n + 1 < cu.size(); ++n) longest = std::max<index_t>(longest, cu[n + 1] - cu[n]);
    const index_t tokens = cu.back() - cu.front();
    const index_t ctas = slab_ctas_per_sm * multiprocessor_count(current_device());
    const index_t target = std::max<index_t>(min_slab, (tokens * std::max<index_t>(units, 1) + ctas - 1) / ctas);
    const index_t per_piece = std::max<index_t>(1, (longest + target - 1) / target);
    index_t slab = ((longest + per_piece - 1) / per_piece + 63) / 64 * 64;
    slab = std::max<index_t>(slab, 64);
    std::vector<std::int64_t> s{cu.front()};
    for (std::size_t n = 0; n + 1 < cu.size(); ++n)
      for (std::int64_t t = cu[n] + slab; ; t += slab) {
        s.push_back(std::min<std::int64_t>(t, cu[n + 1]));
        if (t >= cu[n + 1]) break;
      }
    return s;
  }
  bool counting_;
};

}  // namespace linea::cuda_detail::v0
