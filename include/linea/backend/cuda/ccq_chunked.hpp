// linea/backend/cuda/ccq_chunked.hpp — the CCQ read of the chunkwise form with 16-bit inputs, on the 64-token kernels:
//
//   1. ccq_chunk_kernel (Δ per chunk; c_t, and k̂ / q̂ per value head where the passes need them)
//   2. ccq_carry_kernel (m, z at each chunk's start; the final m, z)
//   3. the stats pass: simple_gla's 64-token kernel with q̂, values := keys := k̂, log decay c_t (zeros when uniform),
//      state C (C_0 in, C out), output Y_t = C_t q̂_t in the input type
//   4. ccq_chunk_kernel<Final> (q̃ in the input type, and the optional q_tilde output)
//   5. the main pass on the rule's own kernel, reading q̃ as its q (no L2 norm) — the identity read's kernel.
//
// With grouped value heads (HV > H) the read is per value head: q̂ and k̂ are written per value head and both passes
// run with G = 1. Everything lives in the call's CCQ workspace (workspace.hpp: two [B, T, HV, K] float32 tensors,
// here holding four 16-bit tensors, c_t and the chunk sums); a call they do not fit, or whose rows the 64-token
// kernel cannot read, takes the general path (call.hpp).
#pragma once
#include "ccq_chunk_kernel.hpp"
#include "chunk_tiles.hpp"
#include "launch.hpp"

#include <cstdint>

#include "../../rules/simple_gla.hpp"

namespace linea::cuda_detail {

template <class Rule, class T>
bool run_ccq_chunked(const arguments<T, float>& a, const problem& p, const kernel_args<T>& k, index_t rows,
                     const workspace_layout& w, const call_workspace& ws, const exec& x, bool decays) {
  if constexpr (sizeof(T) != 2 || !supported_input<T>) {
    return false;
  } else {
    if (p.K > tiles::KP || p.K % 8 != 0 || rows == 0 || p.HV == 0 || p.T == 0) return false;
    const std::size_t n = static_cast<std::size_t>(p.B * p.T * p.HV * p.K), half = n * sizeof(T);
    const bool varlen = k.cu_seqlens || k.cu_seqlens32;
    const index_t cps = (p.T + ccq_chunk_len - 1) / ccq_chunk_len;
    const index_t slots = varlen ? cps + p.N : p.B * cps;
    // the second float32 tensor: k̂ | c_t | chunk sums | chunk starts
    const auto round = [](std::size_t b) { return (b + 255) / 256 * 256; };
    const std::size_t c_at = round(half), st_at = c_at + round(static_cast<std::size_t>(p.B * p.T * p.HV) * sizeof(T));
    const std::size_t starts_at = st_at + round(static_cast<std::size_t>(slots * p.HV * (p.K + 2)) * sizeof(float));
    if (starts_at + static_cast<std::size_t>(p.N + 1) * sizeof(int) > 2 * half) return false;
    auto* R1 = ws.template at<unsigned char>(w.ccq_y);
    auto* R2 = ws.template at<unsigned char>(w.ccq_q);

    ccq_chunk_args<T> c{};
    c.a = k;
    c.a.ccq_log_decay = a.ccq.log_decay, c.a.ccq_decays = decays;
    c.lambda = a.ccq.lambda, c.m0 = a.ccq.m0, c.z0 = a.ccq.z0, c.m = a.ccq.m, c.z = a.ccq.z, c.q_tilde_out = a.ccq.q_tilde;
    c.y = reinterpret_cast<const T*>(R1);
    c.qt = reinterpret_cast<T*>(R1 + half);
    c.expand_q = p.group > 1;
    c.kexp = p.group > 1 || k.l2k ? reinterpret_cast<T*>(R2) : nullptr;
    c.c = reinterpret_cast<T*>(R2 + c_at);
    c.st = reinterpret_cast<float*>(R2 + st_at);
    c.starts = varlen ? reinterpret_cast<int*>(R2 + starts_at) : nullptr;
    c.cps = cps, c.slots = slots;
    const auto whole_rows = [](const auto& v) {  // 16-byte row accesses (ccq_chunk_kernel.hpp)
      return v.ptr != nullptr && tiles::rows_fit_cp_async(v);
    };
    c.whole_q = whole_rows(k.q), c.whole_k = whole_rows(k.k), c.whole_out = whole_rows(a.ccq.q_tilde);

    const auto tensor = [&](const T* ptr) { return contiguous<4>(ptr, {p.B, p.T, p.HV, p.K}); };
    // the stats pass: simple_gla with q̂, k = v = k̂, g = c_t, state C; Y out
    kernel_args<T> s = k;
    s.G = 1, s.H = p.HV, s.V = p.K, s.scale = 1;
    if (c.expand_q) s.q = tensor(c.qt), s.l2q = false;
    if (c.kexp) s.k = tensor(c.kexp);
    s.v = s.k, s.l2k = false;
    s.g = contiguous<3>(static_cast<const T*>(c.c), {p.B, p.T, p.HV});
    s.gk = {}, s.b = {}, s.w = {}, s.beta = {}, s.A_log = {}, s.dt_bias = {};
    s.gate_active = false, s.has_lower_bound = false;
    s.o = contiguous<4>(reinterpret_cast<T*>(R1), {p.B, p.T, p.HV, p.K}), s.residual = {};
    s.initial_state = a.ccq.C0, s.final_state = a.ccq.C;
    s.q_tilde_in = {}, s.ccq_log_decay = {}, s.C0 = {}, s.C = {}, s.y = {};
    // the main pass: q̃ as q; with grouped value heads, k̂ per value head
    kernel_args<T> m = k;
    m.q = tensor(c.qt), m.l2q = false;
    if (p.group > 1) m.k = tensor(c.kexp), m.l2k = false, m.G = 1, m.H = p.HV;
    if (!tiles::inputs_fit(s)) return false;

    if (slots * p.HV > 0x7fffffff) return false;  // one linear grid (ccq_chunk_kernel)
    const dim3 chunks(static_cast<unsigned>(slots * p.HV));
    const std::size_t smem = sizeof(float) * ccq_chunk_len * static_cast<std::size_t>(p.K);
    if (varlen) {
      ccq_chunk_starts_kernel<T><<<1, 32, 0, x.stream>>>(k, c.starts);
      check_launch("ccq_chunk_starts_kernel");
    }
    ccq_chunk_kernel<Rule, T, false><<<chunks, ccq_chunk_threads, smem, x.stream>>>(c);
    check_launch("ccq_chunk_kernel");
    ccq_carry_kernel<T><<<dim3(static_cast<unsigned>(p.HV), static_cast<unsigned>(rows)), ccq_chunk_threads, 0, x.stream>>>(c);
    check_launch("ccq_carry_kernel");
    launch_chunk64<simple_gla, T, typename operand_type<T>::type>(s, rows, x);
    ccq_chunk_kernel<Rule, T, true><<<chunks, ccq_chunk_threads, smem, x.stream>>>(c);
    check_launch("ccq_chunk_kernel");
    launch_chunk<Rule, T, pass::main>(m, rows, x);
    return true;
  }
}

}  // namespace linea::cuda_detail
