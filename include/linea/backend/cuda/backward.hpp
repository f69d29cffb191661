// linea/backend/cuda/backward.hpp — the CUDA backward behind linea::backward<Rule, Read, backend::cuda>(a, g):
// a chunk-parallel chunkwise backward (docs/math/backward.md §6), float32 states and workspace, in six launches:
//
//   0 inputs          per token         q̂, k̂ (L2 norm), v, d_o, log α, e, w as contiguous float32
//   1 chunk_prep      per chunk × head  G, P, and the UT transform T = (I + A)⁻¹, W, U (erasing updates);
//                                       the state-free products of phase 3, s Pᵀ dO and s (Γ ⊙ Q)ᵀ dO
//                                       (per_key_prep for per-key decays: also the decayed Kd, Qg, gL)
//   2 forward_states  per seq × head × value tile, sequential over chunks: h_c (state before each chunk), U_new
//   3 reverse_states  per seq × head × value tile, sequential over chunks (reversed): dh, dU; dS_0
//   4 chunk_grad      per chunk × head  dq̂, dk̂ (per value head), dv, d log α (reverse cumsum), dβ
//                                       (per_key_grad for per-key decays)
//   5 input_adjoint   per token         group sums, L2-norm / gate / β-activation adjoints; dA_log, ddt_bias
//                                       (not launched where it would only convert: phase 4 then writes dq, dk,
//                                       dg / dgk, dβ itself, direct_grads_ok)
//
// Only phases 2 and 3 walk the chunks in order; everything else runs over all chunks of all sequences at once.
// The rules that only add (linear_attn, simple_gla) with 16-bit inputs and the identity read replace phases 1–4 by
// three kernels with bf16 states (backward/add16_phases.hpp, issue #14), and phases 0 and 5 too where nothing needs
// them (G = 1, no L2 norm, no in-kernel gate, no normalize: those kernels read and write the caller's tensors).
// The workspace is O(chunks · HV · K · V) float32 (h and dh at every chunk), like fla's chunk backward; it is the
// caller's (cuda::launch::workspace, cuda::backward_workspace_size) or the one linea keeps per (device, stream),
// and every launch goes on cuda::launch::stream.
// The CCQ read runs phases 1–4 twice, for the rule (with the cleaned queries q̃) and for its statistics pass, around
// kernels of its own (backward/ccq_read.hpp); its workspace adds the statistics pass's and O(tokens · HV · K).
// GDN-2's channel gates b, w go through the per-key kernels (backward/channel_gates.hpp).
// Supported: the identity and CCQ reads; rules whose update is additive or erases with β, any decay kind (additive,
// simple_gla, gla, delta, gated_delta, kda), and gdn2; every forward option (g_gamma's stride-0 dg summed over
// its positions: summed_dg below) but `normalize` with the CCQ read (with the identity read: normalize_backward.hpp, around phases 1–4).
// Other rules fail to compile (static_assert), never at run time.
#pragma once
#include <algorithm>
#include <type_traits>
#include <utility>
#include <vector>

#include "../../forms/backward.hpp"
#include "../../reference/backward.hpp"
#include "backward/add16_phases.hpp"
#include "backward/ccq_read.hpp"
#include "backward/channel_gates.hpp"
#include "backward/input_adjoint_kernel.hpp"
#include "backward/inputs_kernel.hpp"
#include "backward/phases.hpp"
#include "backward/plan.hpp"
#include "launch.hpp"
#include "normalize_backward.hpp"
#include "workspace.hpp"

namespace linea {
namespace cuda_detail::bwd {

// GDN-2's update: erase key b ⊙ k, written value w ⊙ v (channel_gates.hpp).
template <class Rule>
inline constexpr bool channel_gated =
    Rule::update::kind == update_kind::erase && Rule::update::inputs == (input::b | input::w);

// The rules phases 1–4 compute: any decay kind, and an update that only adds or erases with the one per-token
// strength β (e = w = β); or, with a per-key decay, erases with channel gates b, w (GDN-2).
template <class Rule>
inline constexpr bool supported_rule =
    (Rule::decay::kind == decay_kind::none || Rule::decay::kind == decay_kind::scalar ||
     Rule::decay::kind == decay_kind::per_key) &&
    ((Rule::update::kind == update_kind::additive && Rule::update::inputs == input::none) ||
     (Rule::update::kind == update_kind::erase && Rule::update::inputs == input::beta) ||
     (channel_gated<Rule> && Rule::decay::kind == decay_kind::per_key));

template <class T, class S>
void expect_backward_device(const gradients<T, S>& g) {
  linea::detail::for_each_upstream(g, [](const auto& x, const char* name) { expect_device(x.ptr, name); });
  linea::detail::for_each_gradient(g, [](const auto& x, const char* name, const char*) { expect_device(x.ptr, name); });
}

// The whole scratch: the rule's plan; for the CCQ read the statistics pass's and its own tensors; for channel
// gates b, w as float32 ([tokens, HV, K] and [tokens, HV, V]); for in-kernel gates the float64 accumulators of
// dA_log [HV] and ddt_bias [HV] or [HV·K] (input_adjoint_kernel.hpp); for a summed dg (summed_dg) its float64
// sums, one per element of the view cut to its targets.
// Whether phase 4 writes the caller's dq, dk, dg / dgk, dβ itself (backward/direct_grads.hpp), so that phase 5 is
// not launched: where phase 5 would only convert them — one value head a key head, no in-kernel L2 norm, gate or β
// activation, no normalize, the identity read, the decay given (g or gk) — and phase 4 is one of the two kernels that
// can: chunk_grad16_kernel (delta, gated_delta with 16-bit inputs) and per_key_grad_kernel (gla, kda; not gdn2's
// channel gates). (The A/B switch: LINEA_BWD_DIRECT_GRADS_OFF.) Host only.
inline bool direct_grads_enabled = std::getenv("LINEA_BWD_DIRECT_GRADS_OFF") == nullptr;
template <class Rule, class Read, class T>
bool direct_grads_ok(const arguments<T, float>& a) {
  using D = typename Rule::decay;
  using U = typename Rule::update;
  constexpr bool erases_with_beta = U::kind == update_kind::erase && U::inputs == input::beta;
  constexpr bool scalar_erase16 = erases_with_beta && inter_grad_for<T> &&
                                  (D::kind == decay_kind::none || D::kind == decay_kind::scalar);
  constexpr bool per_key = D::kind == decay_kind::per_key &&
                           (erases_with_beta || (U::kind == update_kind::additive && U::inputs == input::none));
  if constexpr (!Read::is_identity || !(scalar_erase16 || per_key)) {
    return false;
  } else {
    const bool decay_given = D::kind == decay_kind::none || (D::kind == decay_kind::scalar ? bool(a.g.ptr) : bool(a.gk.ptr));
    return direct_grads_enabled && a.q.extent(2) == a.v.extent(2) && !a.qk_l2norm && !a.gate.active() &&
           a.beta_act == beta_activation::none && !a.normalize && decay_given;
  }
}

// A dg summed over positions — g_gamma's (stride 0 over B and T), or any dg with stride 0 over B and / or T whose
// other positions have elements of their own: the backward adds each element's positions in float64 (as dA_log's,
// input_adjoint_kernel.hpp) and stores the sums. Other shared elements (over heads, or interleaved strides) are
// refused by backward_impl. Host only.
template <class T>
view<T, 3> summed_dg_targets(view<T, 3> dg) {  // the view with its stride-0 position axes cut to one position
  for (int r = 0; r < 2; ++r)
    if (dg.str[r] == 0) dg.ext[r] = dg.ext[r] > 0 ? 1 : 0;
  return dg;
}
template <class T>
bool summed_dg(const view<T, 3>& dg) {
  if (linea::detail::bytes_of(dg).empty() || linea::detail::shared_element_axis(dg) < 0) return false;
  return linea::detail::shared_element_axis(summed_dg_targets(dg)) < 0;
}

struct scratch_layout {
  backward_plan plan;
  bool direct = false;  // the additive fast path on the caller's tensors (add16_io.hpp): no phase 0 or 5
  ccq_plan ccq;
  std::size_t gates_at = 0, norm_at = 0, sums_at = 0, sums = 0, bytes = 0;
  std::size_t dg_sum_at = 0, dg_sums = 0;  // a summed dg's float64 accumulators (summed_dg)
  // the additive fast path's pieces of long sequences (add16_pieces.hpp): the table, then E, S_in, Σ log α
  std::vector<add16_piece> pieces;
  std::size_t pieces_at = 0, piece_floats_at = 0;
};

// g: the call's gradients, or null (cuda::backward_workspace_size without them): then the additive fast path is
// counted through phases 0 and 5, the larger of its two forms.
template <class Rule, class Read, class T, class S>
scratch_layout layout_scratch(const arguments<T, S>& a, const gradients<T, S>* g = nullptr) {
  scratch_layout s;
  slots use = slots::all;
  if constexpr (Read::is_identity && add16_rule<Rule, T> && std::is_same_v<S, float>)
    if (add16_enabled) {
      const index_t H = a.q.extent(2), group = H > 0 ? a.v.extent(2) / H : 1;
      s.direct = g && add16_direct_enabled && !summed_dg(g->dg) &&
                 add16_direct_ok<Rule::decay::kind == decay_kind::scalar>(a, *g, group);
      use = s.direct ? slots::add16_direct : slots::add16_io;
    }
  s.plan = plan_backward(a, Rule::decay::kind == decay_kind::per_key, Rule::update::kind == update_kind::erase, use);
  s.bytes = s.plan.bytes;
  if constexpr (!Read::is_identity) s.ccq = plan_ccq(a, s.plan), s.bytes = s.ccq.bytes;
  if constexpr (channel_gated<Rule>) {
    const std::size_t rows = std::size_t(s.plan.tokens) * std::size_t(s.plan.HV);
    s.gates_at = slot_align(s.bytes);
    if (rows) s.bytes = s.gates_at + sizeof(float) * (slot_round(rows * std::size_t(s.plan.K)) + rows * std::size_t(s.plan.V));
  }
  if (a.normalize)
    s.norm_at = slot_align(s.bytes), s.bytes = s.norm_at + sizeof(float) * normalizer_floats(s.plan);
  if (a.gate.active()) {
    const std::size_t HV = std::size_t(s.plan.HV), K = std::size_t(s.plan.K);
    s.sums = HV + (s.plan.per_key ? HV * K : HV);
    s.sums_at = slot_align(s.bytes), s.bytes = s.sums_at + sizeof(double) * s.sums;
  }
  if constexpr (reads(Rule::inputs, input::g)) {
    // with g: the summed dg's elements; without: enough for any dg these shapes allow (stride 0 over B or over T)
    const std::size_t B = std::size_t(a.q.extent(0)), T_ = std::size_t(a.q.extent(1)), HV = std::size_t(s.plan.HV);
    if (g ? summed_dg(g->dg) : B * T_ > 0) {
      const view<T, 3> x = g ? summed_dg_targets(g->dg) : view<T, 3>{};
      s.dg_sums = g ? std::size_t(x.extent(0) * x.extent(1) * x.extent(2)) : std::max(B, T_) * HV;
      s.dg_sum_at = slot_align(s.bytes), s.bytes = s.dg_sum_at + sizeof(double) * s.dg_sums;
    }
  }
  if constexpr (Read::is_identity && add16_rule<Rule, T>) {
    int device = 0;
    LINEA_CUDA_CHECK(cudaGetDevice(&device));
    s.pieces = add16_plan_pieces(s.plan.seqs, s.plan.HV, s.plan.V, std::size_t(multiprocessor_count(device)));
    if (!s.pieces.empty()) {
      const std::size_t n = s.pieces.size() * std::size_t(s.plan.HV);
      s.pieces_at = slot_align(s.bytes), s.bytes = s.pieces_at + sizeof(add16_piece) * s.pieces.size();
      s.piece_floats_at = slot_align(s.bytes);
      s.bytes = s.piece_floats_at + sizeof(float) * (2 * slot_round(n * std::size_t(s.plan.K) * std::size_t(s.plan.V)) + n);
    }
  }
  return s;
}

template <class Rule, class Read, class T>
void run(const arguments<T, float>& a, const gradients<T, float>& g, const problem& p, const cuda::launch& l) {
  constexpr bool erases = Rule::update::kind == update_kind::erase;
  constexpr bool decays = Rule::decay::kind == decay_kind::scalar;
  constexpr bool per_key = Rule::decay::kind == decay_kind::per_key;
  if (!l.cu_seqlens.empty() || !l.state_indices.empty())
    throw error("the CUDA backward takes cu_seqlens as a host span (arguments::cu_seqlens), not on the device: it "
                "builds its chunk table on the host");

  arguments<T, float> fa = a;
  fa.o = {}, fa.final_state = {}, fa.residual = {};  // the backward writes none of the forward's outputs
  fa.cu_seqlens = {};  // the kernels read tokens by (row, position) through the chunk table, never by sequence
  const kernel_args<T> k = make_kernel_args(fa, p);
  expect_backward_device(g);
  const cudaStream_t st = l.stream;

  const scratch_layout layout = layout_scratch<Rule, Read>(a, &g);
  const backward_plan& plan = layout.plan;
  // the caller's workspace (checked: size, 16-byte alignment) or the cached one of (device, stream), whose lock it
  // holds until the launches are enqueued
  int device = 0;
  LINEA_CUDA_CHECK(cudaGetDevice(&device));
  expect_workspace_apart(l, layout.bytes, a, &g);
  const call_workspace scratch(layout.bytes, l, device, "linea::cuda::backward_workspace_size");
  const std::size_t tokens = std::size_t(plan.tokens), NC = plan.chunks.size();
  const work w = plan_work(p, plan, scratch.base);
  // the chunk tables (pageable host memory: the copy is staged before cudaMemcpyAsync returns, so the plan may go
  // out of scope)
  if (NC) LINEA_CUDA_CHECK(cudaMemcpyAsync(scratch.base + plan.chunk_at, plan.chunks.data(), NC * sizeof(chunk_info),
                                           cudaMemcpyHostToDevice, st));
  if (!plan.seqs.empty())
    LINEA_CUDA_CHECK(cudaMemcpyAsync(scratch.base + plan.seq_at, plan.seqs.data(), plan.seqs.size() * sizeof(seq_chunks),
                                     cudaMemcpyHostToDevice, st));

  // The additive fast path reads the caller's q, k, v, dO, g and writes its dq, dk, dg itself where nothing needs
  // phases 0 and 5 (add16_io.hpp): neither is launched then.
  const bool direct = layout.direct;
  if (tokens && !direct) {
    inputs_kernel<Rule, T><<<unsigned(tokens), threads, 0, st>>>(k, g.d_o, w);
    check_launch("backward inputs_kernel");
  }
  normalizer_work nw;
  if (a.normalize) nw = normalize_before(w, plan, scratch.base + layout.norm_at, st);  // d_o ← d_o / den
  constexpr bool channels = channel_gated<Rule>;
  channel_gates cg;
  const channel_grads<T> cd{g.db, g.dw};
  if constexpr (channels)
    if (tokens) {
      float* b = reinterpret_cast<float*>(scratch.base + layout.gates_at);
      float* wv = b + slot_round(tokens * std::size_t(p.HV) * std::size_t(p.K));  // (each slot_bytes aligned: plan.hpp)
      channel_gates_kernel<T><<<unsigned(tokens), threads, 0, st>>>(a.b, a.w, w, b, wv);
      check_launch("backward channel_gates_kernel");
      cg.b = b, cg.w = wv;
    }
  // phase 4 writes dq, dk, dg / dgk, dβ where phase 5 would only convert them (no phase 5 then)
  const bool dg_summed = summed_dg(g.dg);  // (then neither fast path writes dg: phase 5 sums it)
  const bool direct_out = direct_grads_ok<Rule, Read>(a) && !dg_summed;
  if constexpr (Read::is_identity) {
    const auto general = [&] {
      direct_grads<T> out;
      if (direct_out) out = {g.dq, g.dk, g.dg, g.dbeta, g.dgk, true};
      chunk_phases<erases, decays, per_key, channels>(w, a.initial_state, g.d_final_state, g.d_initial_state, g.dv, st,
                                                      cg, cd, out);
    };
    if constexpr (add16_rule<Rule, T>) {  // linear_attn, simple_gla with 16-bit inputs (add16_phases.hpp)
      add16_pieces pc;  // the pieces of long sequences: their table copied, E and S_in carved (add16_pieces.hpp)
      if (!layout.pieces.empty()) {
        const std::size_t n = layout.pieces.size() * std::size_t(p.HV), kv = n * std::size_t(p.K) * std::size_t(p.V);
        LINEA_CUDA_CHECK(cudaMemcpyAsync(scratch.base + layout.pieces_at, layout.pieces.data(),
                                         layout.pieces.size() * sizeof(add16_piece), cudaMemcpyHostToDevice, st));
        pc.piece = reinterpret_cast<const add16_piece*>(scratch.base + layout.pieces_at);
        pc.count = index_t(layout.pieces.size());
        pc.end = reinterpret_cast<float*>(scratch.base + layout.piece_floats_at);
        pc.in = pc.end + slot_round(kv), pc.log_decay = pc.in + slot_round(kv);
      }
      if (direct)
        add16_phases<decays>(w, add16_direct_io<decays>(a, g), a.initial_state, g.d_final_state, g.d_initial_state,
                             g.dv, pc, st);
      else if (add16_enabled)
        add16_phases<decays>(w, add16_workspace_io(w), a.initial_state, g.d_final_state, g.d_initial_state, g.dv, pc,
                             st);
      else general();
    } else {
      general();
    }
  } else
    ccq_phases<Rule, Read>(a, g, w, layout.ccq, scratch.base, st, cg, cd);
  if (a.normalize) normalize_after(w, plan, nw, st);  // the normaliser's dq̂, dk̂ terms
  input_grads<T> o{g.dq, g.dk, dg_summed ? view<T, 3>{} : g.dg, g.dbeta, g.dA_log, g.ddt_bias, g.dgk};
  if (dg_summed) {
    o.sum_dg = reinterpret_cast<double*>(scratch.base + layout.dg_sum_at);
    o.dg_keeps_b = g.dg.stride(0) != 0 && g.dg.extent(0) > 1, o.dg_keeps_t = g.dg.stride(1) != 0 && g.dg.extent(1) > 1;
    LINEA_CUDA_CHECK(cudaMemsetAsync(o.sum_dg, 0, sizeof(double) * layout.dg_sums, st));
  }
  if (layout.sums) {  // dA_log, ddt_bias: added over tokens in float64, zeroed first
    auto* sums = reinterpret_cast<double*>(scratch.base + layout.sums_at);
    LINEA_CUDA_CHECK(cudaMemsetAsync(sums, 0, sizeof(double) * layout.sums, st));
    o.sum_A_log = sums, o.sum_dt_bias = sums + p.HV;
  }
  if (tokens && !direct && !direct_out) {
    input_adjoint_kernel<T><<<unsigned(tokens), threads, 0, st>>>(k, w, o);
    check_launch("backward input_adjoint_kernel");
  }
  if (dg_summed) {
    summed_store_kernel<T><<<unsigned(std::min<std::size_t>((layout.dg_sums + threads - 1) / threads, 1024)), threads, 0,
                             st>>>(summed_dg_targets(g.dg), o.sum_dg);
    check_launch("backward summed_store_kernel (dg)");
  }
  const std::pair<view<float, 1>, const double*> sums[] = {{o.dA_log, o.sum_A_log}, {o.ddt_bias, o.sum_dt_bias}};
  for (const auto& [x, sum] : sums)
    if (x.ptr) {
      sums_kernel<><<<1, threads, 0, st>>>(x, sum);
      check_launch("backward sums_kernel");
    }
}

}  // namespace cuda_detail::bwd

namespace detail {

template <>
struct backward_impl<backend::cuda> {
  template <class Rule, class Read, class T, class S>
  static void run(const arguments<T, S>& a, const gradients<T, S>& g, const cuda::launch& l = {}) {
    static_assert(std::is_same_v<Read, read::identity> || read::is_ccq<Read>,
                  "linea::backward on backend::cuda: the identity and CCQ reads have a CUDA backward, not this read");
    static_assert(cuda_detail::bwd::supported_rule<Rule>,
                  "linea::backward on backend::cuda: additive, simple_gla, gla, delta, gated_delta, kda and gdn2 have "
                  "a CUDA backward (an update that adds, erases with beta, or erases with channel gates b, w under a "
                  "per-key decay); not this rule");
    static_assert(std::is_same_v<S, float>, "the CUDA backend keeps states in float32");
    static_assert(cuda_detail::supported_input<T>, "the CUDA backend takes float, bf16 or fp16 inputs");
    const problem p = reference::validate_backward<Rule, Read>(a, g);
    if (p.K > cuda_detail::bwd::max_kv || p.V > cuda_detail::bwd::max_kv)
      throw error("the CUDA backward supports K, V <= 128, but K = " + std::to_string(p.K) + ", V = " + std::to_string(p.V));
    if (a.normalize && !std::is_same_v<Read, read::identity>)
      throw error("argument 'normalize' is not supported with the CCQ read by the CUDA backward");
    // The summed gradients the other backends accept with stride 0 (g_gamma's dg, a dβ or dλ broadcast over
    // positions: core/gradients.hpp) are stored here position by position, so a shared element would keep one
    // position's value, not the sum: rejected. (A stride 0 over an extent of 1, or in a view of no elements,
    // broadcasts nothing: contiguous views at B = 1 or T = 0 have one.)
    constexpr const char* summed = "a summed gradient (a broadcast dbeta or dlambda, a dg shared across heads) is not "
                                   "supported by the CUDA backward yet, which stores it position by position: pass one "
                                   "element per position and sum them";
    // (a dg with stride 0 over B and / or T — g_gamma's — is summed: cuda_detail::bwd::summed_dg)
    if (!cuda_detail::bwd::summed_dg(g.dg)) detail::expect_distinct_elements(g.dg, "dg", summed);
    detail::expect_distinct_elements(g.dbeta, "dbeta", summed);
    detail::expect_distinct_elements(g.dlambda, "dlambda", summed);
    detail::expect_distinct_elements(g.dccq_log_decay, "dccq_log_decay", summed);
    detail::expect_distinct_elements(g.dC0, "dC0", summed), detail::expect_distinct_elements(g.dm0, "dm0", summed);
    detail::expect_distinct_elements(g.dz0, "dz0", summed);
    // In place over A_log or dt_bias: the input-adjoint kernel reads those parameters while other blocks add into
    // dA_log, ddt_bias (zeroed first), so the pair the other backends allow is rejected here.
    if (g.dA_log.ptr && static_cast<const void*>(g.dA_log.ptr) == static_cast<const void*>(a.gate.A_log.ptr))
      throw error("gradient 'dA_log' in place over 'gate.A_log' is not supported by the CUDA backward: pass a buffer "
                  "of its own");
    if (g.ddt_bias.ptr && static_cast<const void*>(g.ddt_bias.ptr) == static_cast<const void*>(a.gate.dt_bias.ptr))
      throw error("gradient 'ddt_bias' in place over 'gate.dt_bias' is not supported by the CUDA backward: pass a "
                  "buffer of its own");
    // No tokens and nothing per sequence or gate parameter to write (core/empty_call.hpp): no launch at all.
    if (detail::backward_writes_no_state_gradient(g, p) && g.dA_log.empty() && g.ddt_bias.empty()) return;
    cuda_detail::bwd::run<Rule, Read>(a, g, p, l);
  }
};

}  // namespace detail
// The backward with the CUDA backend's launch options: every launch and copy on l.stream, the scratch in
// l.workspace (>= linea::cuda::backward_workspace_size bytes) or, when null, in the workspace linea keeps per
// (device, stream). cu_seqlens must be a host span (the chunk table is built on the host).
template <write_rule_policy Rule, read_policy Read = read::identity, class Backend = backend::cuda, class T, class S>
  requires std::same_as<Backend, backend::cuda>
void backward(const arguments<T, S>& a, const gradients<T, S>& g, const cuda::launch& l) {
  detail::backward_impl<backend::cuda>::template run<Rule, Read>(a, g, l);
}

namespace cuda {
// Bytes of workspace linea::backward<Rule, Read, backend::cuda>(a, g, l) needs: the chunk table and the float32
// tensors of backward/work.hpp (for the CCQ read also backward/ccq_read.hpp's; for linear_attn and simple_gla with
// 16-bit inputs only the bf16 chunk states and, unless the call reads and writes the caller's tensors directly, the
// float32 inputs and dq, dk: backward/plan.hpp). With the call's gradients g the size is exact; without them it is
// enough for any gradients of these shapes (the additive fast path counted through phases 0 and 5). Reads only
// extents, strides and host cu_seqlens.
template <class Rule, class Read = read::identity, class T, class S>
std::size_t backward_workspace_size(const arguments<T, S>& a, const launch& = {}) {
  return cuda_detail::bwd::layout_scratch<Rule, Read>(a).bytes;
}
template <class Rule, class Read = read::identity, class T, class S>
std::size_t backward_workspace_size(const arguments<T, S>& a, const gradients<T, S>& g, const launch& = {}) {
  return cuda_detail::bwd::layout_scratch<Rule, Read>(a, &g).bytes;
}
}  // namespace cuda
}  // namespace linea
