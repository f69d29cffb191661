// linea/backend/cuda/backward.hpp — the CUDA backward behind linea::backward<Rule, Read, backend::cuda>(a, g):
// a chunk-parallel chunkwise backward (docs/math/backward.md §6), float32 states and workspace, in six launches:
//
//   0 inputs          per token         q̂, k̂ (L2 norm), v, d_o, log α, e, w as contiguous float32
//   1 chunk_prep      per chunk × head  G, P, and the UT transform T = (I + A)⁻¹, W, U (erasing updates)
//                                       (per_key_prep for per-key decays: also the decayed Kd, Qg, gL)
//   2 forward_states  per seq × head × value tile, sequential over chunks: h_c (state before each chunk), U_new
//   3 reverse_states  per seq × head × value tile, sequential over chunks (reversed): dh, dU; dS_0
//   4 chunk_grad      per chunk × head  dq̂, dk̂ (per value head), dv, d log α (reverse cumsum), dβ
//                                       (per_key_grad for per-key decays)
//   5 input_adjoint   per token         group sums, L2-norm / gate / β-activation adjoints; dA_log, ddt_bias
//
// Only phases 2 and 3 walk the chunks in order; everything else runs over all chunks of all sequences at once.
// The workspace is O(chunks · HV · K · V) float32 (h and dh at every chunk), like fla's chunk backward.
// Supported: the identity read; rules whose update is additive or erases with β, any decay kind (additive,
// simple_gla, gla, delta, gated_delta, kda); every forward option but `normalize` and g_gamma's stride-0 dg.
// Other rules and the CCQ read fail to compile (static_assert), never at run time.
#pragma once
#include <algorithm>
#include <type_traits>
#include <vector>

#include "../../forms/backward.hpp"
#include "../../reference/backward.hpp"
#include "backward/chunk_grad_kernel.hpp"
#include "backward/chunk_prep_kernel.hpp"
#include "backward/input_adjoint_kernel.hpp"
#include "backward/inputs_kernel.hpp"
#include "backward/per_key_grad_kernel.hpp"
#include "backward/state_passes.hpp"
#include "launch.hpp"

namespace linea {
namespace cuda_detail::bwd {

// The rules phases 1–4 compute: any decay kind, and an update that only adds or erases with the one per-token
// strength β (e = w = β).
template <class Rule>
inline constexpr bool supported_rule =
    (Rule::decay::kind == decay_kind::none || Rule::decay::kind == decay_kind::scalar ||
     Rule::decay::kind == decay_kind::per_key) &&
    ((Rule::update::kind == update_kind::additive && Rule::update::inputs == input::none) ||
     (Rule::update::kind == update_kind::erase && Rule::update::inputs == input::beta));

// Every chunk of every sequence (chunks never cross a sequence boundary), and each sequence's range of chunks.
template <class T, class S>
void chunk_table(const arguments<T, S>& a, const problem& p, std::vector<chunk_info>& chunks, std::vector<seq_chunks>& seqs) {
  for (index_t n = 0; n < p.N; ++n) {
    const sequence s = sequence_of(a, p, n);
    seqs.push_back({index_t(chunks.size()), (s.length() + CL - 1) / CL});
    for (index_t t0 = s.t_begin; t0 < s.t_end; t0 += CL)
      chunks.push_back({s.batch, t0, int(std::min<index_t>(CL, s.t_end - t0)), int(n)});
  }
}

template <class T, class S>
void expect_backward_device(const gradients<T, S>& g) {
  expect_device(g.d_o.ptr, "d_o"), expect_device(g.d_final_state.ptr, "d_final_state");
  expect_device(g.dq.ptr, "dq"), expect_device(g.dk.ptr, "dk"), expect_device(g.dv.ptr, "dv");
  expect_device(g.dg.ptr, "dg"), expect_device(g.dgk.ptr, "dgk"), expect_device(g.dbeta.ptr, "dbeta");
  expect_device(g.d_initial_state.ptr, "d_initial_state"), expect_device(g.dA_log.ptr, "dA_log");
  expect_device(g.ddt_bias.ptr, "ddt_bias");
}

template <class Rule, class T>
void run(const arguments<T, float>& a, const gradients<T, float>& g, const problem& p) {
  constexpr bool erases = Rule::update::kind == update_kind::erase;
  constexpr bool decays = Rule::decay::kind == decay_kind::scalar;
  constexpr bool per_key = Rule::decay::kind == decay_kind::per_key;

  host_copies hold;
  arguments<T, float> fa = a;
  fa.o = {}, fa.final_state = {}, fa.residual = {};  // the backward writes none of the forward's outputs
  const kernel_args<T> k = make_kernel_args(fa, p, hold);
  expect_backward_device(g);

  std::vector<chunk_info> chunks;
  std::vector<seq_chunks> seqs;
  chunk_table(a, p, chunks, seqs);
  const std::size_t tokens = std::size_t(p.B * p.T), NC = chunks.size(), HV = std::size_t(p.HV),
                    K = std::size_t(p.K), V = std::size_t(p.V), H = std::size_t(p.H);
  device_buffer<chunk_info> chunk_d(NC);
  device_buffer<seq_chunks> seq_d(seqs.size());
  if (NC) chunk_d.upload(chunks.data(), NC);
  if (!seqs.empty()) seq_d.upload(seqs.data(), seqs.size());

  // The float32 workspace (layouts in backward/work.hpp).
  const std::size_t per_chunk = NC * HV;
  device_buffer<float> ws(tokens * (2 * H * K + 2 * HV * V + 3 * HV + 2 * HV * K + 2 * HV) +
                          per_chunk * (CL + 2 * CL * CL + CL * K + 3 * CL * V + 2 * K * V));
  float* at = ws.get();
  const auto carve = [&](std::size_t n) {
    float* x = at;
    at += n;
    return x;
  };
  work w;
  w.T = p.T, w.H = p.H, w.HV = p.HV, w.K = p.K, w.V = p.V, w.G = p.group, w.N = p.N, w.chunks = index_t(NC);
  w.scale = float(p.scale), w.chunk = chunk_d.get(), w.seqs = seq_d.get();
  w.q = carve(tokens * H * K), w.k = carve(tokens * H * K), w.v = carve(tokens * HV * V), w.d_o = carve(tokens * HV * V);
  w.log_alpha = carve(tokens * HV), w.erase = carve(tokens * HV), w.write = carve(tokens * HV);
  w.dq = carve(tokens * HV * K), w.dk = carve(tokens * HV * K), w.dlog_alpha = carve(tokens * HV), w.derase = carve(tokens * HV);
  w.Gc = carve(per_chunk * CL), w.P = carve(per_chunk * CL * CL), w.Tinv = carve(per_chunk * CL * CL);
  w.W = carve(per_chunk * CL * K), w.U = carve(per_chunk * CL * V), w.U_new = carve(per_chunk * CL * V);
  w.dU = carve(per_chunk * CL * V), w.h = carve(per_chunk * K * V), w.dh = carve(per_chunk * K * V);
  device_buffer<float> ws_key(per_key ? tokens * 2 * HV * K + per_chunk * (3 * CL * K + K) : 0);
  if constexpr (per_key) {
    at = ws_key.get();
    w.log_alpha_k = carve(tokens * HV * K), w.dlog_alpha_k = carve(tokens * HV * K);
    w.Gk = carve(per_chunk * CL * K), w.Kd = carve(per_chunk * CL * K), w.Qg = carve(per_chunk * CL * K);
    w.gL = carve(per_chunk * K);
  }

  if (tokens) {
    inputs_kernel<Rule, T><<<unsigned(tokens), threads>>>(k, g.d_o, w);
    check_launch("backward inputs_kernel");
  }
  if (NC) {
    if constexpr (per_key) {
      constexpr auto prep = per_key_prep_kernel<erases>;
      allow_dynamic_shared<prep, per_key_prep_shape::bytes>();
      prep<<<dim3(unsigned(NC), unsigned(HV)), threads, per_key_prep_shape::bytes>>>(w);
      check_launch("backward per_key_prep_kernel");
    } else {
      constexpr auto prep = chunk_prep_kernel<erases>;
      allow_dynamic_shared<prep, prep_shape::bytes>();
      prep<<<dim3(unsigned(NC), unsigned(HV)), threads, prep_shape::bytes>>>(w);
      check_launch("backward chunk_prep_kernel");
    }
  }
  const dim3 state_grid(unsigned((V + state_shape::BV - 1) / state_shape::BV), unsigned(HV), unsigned(p.N));
  if (p.N) {
    constexpr auto fwd = forward_states_kernel<erases, per_key>;
    constexpr auto rev = reverse_states_kernel<erases, per_key>;
    allow_dynamic_shared<fwd, state_shape::bytes>();
    allow_dynamic_shared<rev, state_shape::bytes>();
    fwd<<<state_grid, threads, state_shape::bytes>>>(w, a.initial_state);
    check_launch("backward forward_states_kernel");
    rev<<<state_grid, threads, state_shape::bytes>>>(w, g.d_final_state, g.d_initial_state);
    check_launch("backward reverse_states_kernel");
  }
  if (NC) {
    if constexpr (per_key) {
      constexpr auto grad = per_key_grad_kernel<erases, T>;
      allow_dynamic_shared<grad, per_key_grad_shape::bytes>();
      grad<<<dim3(unsigned(NC), unsigned(HV)), threads, per_key_grad_shape::bytes>>>(w, g.dv);
      check_launch("backward per_key_grad_kernel");
    } else {
      constexpr auto grad = chunk_grad_kernel<erases, decays, T>;
      allow_dynamic_shared<grad, grad_shape::bytes>();
      grad<<<dim3(unsigned(NC), unsigned(HV)), threads, grad_shape::bytes>>>(w, g.dv);
      check_launch("backward chunk_grad_kernel");
    }
  }
  const input_grads<T> o{g.dq, g.dk, g.dg, g.dbeta, g.dA_log, g.ddt_bias, g.dgk};
  const view<float, 1> sums[] = {o.dA_log, o.ddt_bias};  // added into over tokens: zeroed first
  for (const view<float, 1>& x : sums)
    if (x.ptr) {
      zero_kernel<<<1, threads>>>(x);
      check_launch("backward zero_kernel");
    }
  if (tokens) {
    input_adjoint_kernel<T><<<unsigned(tokens), threads>>>(k, w, o);
    check_launch("backward input_adjoint_kernel");
  }
}

}  // namespace cuda_detail::bwd

namespace detail {

template <>
struct backward_impl<backend::cuda> {
  template <class Rule, class Read, class T, class S>
  static void run(const arguments<T, S>& a, const gradients<T, S>& g) {
    static_assert(std::is_same_v<Read, read::identity>,
                  "linea::backward on backend::cuda: the CCQ read has no CUDA backward yet (use backend::reference "
                  "or the CPU backend)");
    static_assert(cuda_detail::bwd::supported_rule<Rule>,
                  "linea::backward on backend::cuda: only additive, simple_gla, gla, delta, gated_delta and kda (an "
                  "update that adds or erases with beta) have a CUDA backward yet; channel gates b, w (gdn2) do not");
    static_assert(std::is_same_v<S, float>, "the CUDA backend keeps states in float32");
    static_assert(cuda_detail::supported_input<T>, "the CUDA backend takes float, bf16 or fp16 inputs");
    const problem p = reference::validate_backward<Rule, Read>(a, g);
    if (p.K > cuda_detail::bwd::max_kv || p.V > cuda_detail::bwd::max_kv)
      throw error("the CUDA backward supports K, V <= 128, but K = " + std::to_string(p.K) + ", V = " + std::to_string(p.V));
    if (a.normalize) throw error("argument 'normalize' is not supported by the CUDA backward yet");
    if (!g.dg.empty() && (g.dg.stride(0) == 0 || g.dg.stride(1) == 0))
      throw error("gradient 'dg' with stride 0 over batch or time (g_gamma) is not supported by the CUDA backward yet");
    cuda_detail::bwd::run<Rule>(a, g, p);
  }
};

}  // namespace detail
}  // namespace linea
