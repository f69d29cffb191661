// bench/cuda/grad_ab.cu — the CUDA backward's phase 4, the library's kernels against main c94ecb9's (grad_ab_v0.hpp),
// A/B in one process (not built by CMake; for a short device call). bf16 inputs as bench_cuda.cu's --backward
// (H = 16, K = V = 128, L2 norm in kernel); for each rule:
//   new    phases 0-5 as backward.hpp's run launches them (the library's phase 4: chunk_grad / per_key_grad);
//   old    the same launches with main c94ecb9's phase-4 kernel (v0::, grad_ab_v0_gen.sh: chunk_grad before grad13,
//          per_key_grad with kgrad12's token_block, before pk13; on the workspace the new phases 0-3 left);
// the relative distance ‖new − old‖ / ‖old‖ of every float32 workspace gradient (dq̂, dk̂ per value head, d log α,
// de) and of every bf16 output, the whole backward's time both ways (and linea::backward's), phase 4 alone both
// ways, and phases 1-3 alone (CUDA events, interleaved, best of the medians).
//   nvcc -std=c++20 -O3 -DNDEBUG -lineinfo -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr \
//        -Iinclude [-DGRAD_AB_RULE=linea::gated_delta] bench/cuda/grad_ab.cu -o grad_ab
//   grad_ab            8×4096 (and 1×32768 with --long), every rule with a CUDA backward (or GRAD_AB_RULE's) but CCQ
//   grad_ab --check    small odd shapes only (partial chunks, K, V < 128, a GVA group): distances, for a sanitizer
//   GRAD_AB_LONG_ONLY=1  with --long: 1×32768 alone
//   GRAD_AB_ONLY=<rule>  one rule by its name (gated_delta_rule, kda, …; at 8×4096 only with --once: one launch of
//                        each phase 4, for ncu)
// -DGRAD_AB_FLOAT: float32 inputs and outputs in place of bf16 (grad12's float32 A/B).
// grad13: for 16-bit inputs the library's phase 4 of scalar decays is inter_grad_kernel + chunk_grad (phases.hpp);
// "inter_ms" times the first alone; -DLINEA_BWD_INTER_TERMS=1 builds its one-product bf16 form (default 3: hi/lo).
// With -DGRAD_AB_PREP_V0 (prep9) "old" is instead main 16a7383's phase 1 for per-key decays (per_key_prep_v0.hpp: P
// and A pairwise in log space) with the library's phase 4: the distances are then new phase 1 against old, and
// "prep_old_ms" times main's phase 1 (the phase-4 columns then time the same kernel twice).
// For kda and gdn2 (either mode) it also runs main 07de2f4's phase 1 (per_key_prep_v1.hpp: A and T in tiles of their
// own, one CTA an SM; lean11 made the library's phase 1 two CTAs an SM) in the whole backward with the library's
// phase 4: "v1_vs_lib" (the library's call against it: 0 for kda and gdn2, the same arithmetic since
// lean11-onepass), and timed, interleaved with the library's phase 1, "prep_lib_ms" /
// "prep_v1_ms" and "bwd_lib1_ms" / "bwd_v1_ms" (the whole backward with either phase 1).
// For scalar decays (prep13) it also runs main c94ecb9's phase 1 (grad_ab_prep_v0.hpp: float32 tiles, 3xTF32; the
// library's phase 1 for bf16 / fp16 inputs is now chunk_prep16_kernel): "prep_vs_v0p", the distance of each phase-1
// output (G, P, T, W, U, s Pᵀ dO, Y) of the library's launch to main's on the same inputs; "lib_vs_v0p", the whole
// backward as main ran it (its phase 1, the state passes at 3xTF32; phases 0, 4, 5 the library's) against the
// library's call; timed, interleaved, phase 1
// alone ("prep16_ms" / "prep_v0p_ms") and the whole backward either way ("bwd_lib16_ms" / "bwd_v0p_ms").
// GRAD_AB_PREP16=1 skips the phase-4 timings. GRAD_AB_STATE16=1 (state14, scalar decays): the 16-bit state passes
// (state_passes16.hpp) against the 3xTF32 ones ("s16_*": distances of h, U_new, dU, dh, dS0 per width and Terms;
// "bwd16_*": the whole backward's outputs with either; timed: "s16_fwd_ms", "s16_rev_ms", "s16_bwd_ms"), in place
// of the other timings. GRAD_AB_ST17=1 (st17): the narrow passes' two-stage form (state_passes16_ring.hpp) against
// state_passes16.hpp's, in place of the other timings (below). The library's call ("lib") now runs the 16-bit passes; "new" and "old" keep the 3xTF32 ones. --check also runs each small shape under SPEC §6's extreme gates
// (log α uniform in [−20, 0], β = 2σ(z) ∈ [0, 2]: "extreme":1).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include <linea/cuda.hpp>

#include "ab_common.hpp"
#include "grad_ab_prep_v0.hpp"
#include "grad_ab_v0.hpp"
#include "per_key_prep_v1.hpp"
#ifdef GRAD_AB_PREP_V0
#include "per_key_prep_v0.hpp"
#endif

using namespace linea;
#ifdef GRAD_AB_FLOAT
using T = float;
#else
using T = bf16;
#endif
#define CK(x) linea::cuda_detail::check((x), #x)
namespace bwd = linea::cuda_detail::bwd;
using bwd::precision;

namespace {

using linea_bench::dalloc;
using linea_bench::hash_uniform;
using linea_bench::relative_distance;
using linea_bench::time_ms;

enum class fill { normal, logsigmoid, sigmoid, extreme_log, sigmoid2 };
__global__ void fill_kernel(T* p, std::int64_t n, std::uint32_t seed, fill kind) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float z = linea_bench::hash_normal(i, seed);
    float x = z;
    if (kind == fill::logsigmoid) x = -log1pf(expf(-z));
    if (kind == fill::sigmoid) x = 1.f / (1.f + expf(-z));
    if (kind == fill::extreme_log) x = -20.f * hash_uniform(i, seed + 99);
    if (kind == fill::sigmoid2) x = 2.f / (1.f + expf(-z));
    p[i] = linea::cuda_detail::from_float<T>(x);
  }
}
__global__ void fill_float_kernel(float* p, std::int64_t n, std::uint32_t seed) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    p[i] = linea_bench::hash_normal(i, seed);
}
float* random_floats(std::size_t n, std::uint32_t seed) {
  float* p = dalloc<float>(n);
  fill_float_kernel<<<1024, 256>>>(p, std::int64_t(n), seed);
  return p;
}
T* random_tensor(std::size_t n, std::uint32_t seed, fill kind) {
  T* p = dalloc<T>(n);
  fill_kernel<<<1024, 256>>>(p, std::int64_t(n), seed, kind);
  return p;
}

// An output tensor copied on the device, as float32.
template <class X>
__global__ void to_float(const X* p, float* out, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    out[i] = static_cast<float>(p[i]);
}
struct copy {
  float* p;
  std::int64_t n;
};
template <class X>
copy keep(const X* p, std::size_t n) {
  float* c = nullptr;
  CK(cudaMalloc(&c, n * sizeof(float)));
  to_float<<<1024, 256>>>(p, c, std::int64_t(n));
  return {c, std::int64_t(n)};
}
double distance(const copy& a, const copy& b) { return relative_distance(a.p, b.p, std::size_t(a.n)); }

template <class Rule>
void ab(index_t B, index_t T_, index_t H, index_t HV, index_t K, index_t V, bool timed, bool once, bool extreme = false) {
  constexpr bool erases = Rule::update::kind == update_kind::erase;
  constexpr bool decays = Rule::decay::kind == decay_kind::scalar;
  constexpr bool per_key = Rule::decay::kind == decay_kind::per_key;
  constexpr bool channels = bwd::channel_gated<Rule>;
  const std::size_t nk = B * T_ * H * K, nv = B * T_ * HV * V, ns = B * T_ * HV, nkv = B * T_ * HV * K;
  T *q = random_tensor(nk, 1, fill::normal), *k = random_tensor(nk, 2, fill::normal),
    *v = random_tensor(nv, 3, fill::normal), *g = random_tensor(ns, 4, extreme ? fill::extreme_log : fill::logsigmoid),
    *gk = random_tensor(nkv, 5, fill::logsigmoid), *beta = random_tensor(ns, 6, extreme ? fill::sigmoid2 : fill::sigmoid),
    *b = random_tensor(nkv, 7, fill::sigmoid), *w = random_tensor(nv, 8, fill::sigmoid),
    *d_o = random_tensor(nv, 9, fill::normal);
  arguments<T, float> a;
  a.q = contiguous<4>(static_cast<const T*>(q), {B, T_, H, K});
  a.k = contiguous<4>(static_cast<const T*>(k), {B, T_, H, K});
  a.v = contiguous<4>(static_cast<const T*>(v), {B, T_, HV, V});
  a.qk_l2norm = true;
  if constexpr (reads(Rule::inputs, input::g)) a.g = contiguous<3>(static_cast<const T*>(g), {B, T_, HV});
  if constexpr (reads(Rule::inputs, input::gk)) a.gk = contiguous<4>(static_cast<const T*>(gk), {B, T_, HV, K});
  if constexpr (reads(Rule::inputs, input::beta)) a.beta = contiguous<3>(static_cast<const T*>(beta), {B, T_, HV});
  if constexpr (reads(Rule::inputs, input::b | input::w)) {
    a.b = contiguous<4>(static_cast<const T*>(b), {B, T_, HV, K});
    a.w = contiguous<4>(static_cast<const T*>(w), {B, T_, HV, V});
  }
  T *dq = dalloc<T>(nk), *dk = dalloc<T>(nk), *dv = dalloc<T>(nv), *dg = dalloc<T>(ns), *dgk = dalloc<T>(nkv),
    *dbeta = dalloc<T>(ns), *db = dalloc<T>(nkv), *dw = dalloc<T>(nv);
  gradients<T, float> gr{.d_o = contiguous<4>(static_cast<const T*>(d_o), {B, T_, HV, V}),
                         .dq = contiguous<4>(dq, {B, T_, H, K}),
                         .dk = contiguous<4>(dk, {B, T_, H, K}),
                         .dv = contiguous<4>(dv, {B, T_, HV, V})};
  if (a.g.ptr) gr.dg = contiguous<3>(dg, {B, T_, HV});
  if (a.gk.ptr) gr.dgk = contiguous<4>(dgk, {B, T_, HV, K});
  if (a.beta.ptr) gr.dbeta = contiguous<3>(dbeta, {B, T_, HV});
  if (a.b.ptr) gr.db = contiguous<4>(db, {B, T_, HV, K}), gr.dw = contiguous<4>(dw, {B, T_, HV, V});

  const std::size_t bytes = cuda::backward_workspace_size<Rule>(a);
  unsigned char* ws = dalloc<unsigned char>(bytes);
  cuda::launch l;
  l.workspace = ws, l.workspace_bytes = bytes;
  const auto lib = [&] { linea::backward<Rule, read::identity, backend::cuda>(a, gr, l); };

  // The workspace as the library's call lays it out (backward.hpp's run), and its launches at a chosen precision.
  const problem p = reference::validate_backward<Rule, read::identity>(a, gr);
  arguments<T, float> fa = a;
  fa.o = {}, fa.final_state = {}, fa.residual = {};
  const cuda_detail::kernel_args<T> ka = cuda_detail::make_kernel_args(fa, p);
  const bwd::scratch_layout lay = bwd::layout_scratch<Rule, read::identity>(a);
  bwd::work wk = bwd::plan_work(p, lay.plan, ws);
  bwd::channel_gates cg;
  float* gate_b = reinterpret_cast<float*>(ws + lay.gates_at);  // (channel gates only)
  float* gate_w = gate_b + bwd::slot_round(std::size_t(p.B * p.T) * std::size_t(p.HV) * std::size_t(p.K));
  if constexpr (channels) cg.b = gate_b, cg.w = gate_w;
  const bwd::channel_grads<T> cd{gr.db, gr.dw};
  const std::size_t tokens = std::size_t(B * T_);
  const bwd::input_grads<T> og{gr.dq, gr.dk, gr.dg, gr.dbeta, {}, {}, gr.dgk};
  const view<const float, 4> none4{};
  const view<float, 4> none4w{};
  constexpr precision P = bwd::precision_for<T>;
  const auto prep = [&] { bwd::prep_phase<erases, per_key, channels, P, T>(wk, 0, cg); };
  constexpr precision SP = P;  // the library's state passes (3xTF32 for every input type: prep13 measured 1x slower)
  const auto fwd = [&] { bwd::state_phases<erases, per_key, SP>(wk, none4, none4, none4w, true, false, 0); };
  const auto rev = [&] { bwd::state_phases<erases, per_key, SP>(wk, none4, none4, none4w, false, true, 0); };
  const auto fwd1 = [&] { bwd::state_phases<erases, per_key, precision::tf32>(wk, none4, none4, none4w, true, false, 0); };
  const auto rev1 = [&] { bwd::state_phases<erases, per_key, precision::tf32>(wk, none4, none4, none4w, false, true, 0); };
  const auto grad_new = [&] { bwd::grad_phase<erases, decays, per_key, T, channels, P>(wk, gr.dv, 0, cg, cd); };
  const dim3 grid{unsigned(wk.chunks), unsigned(wk.HV)};
#ifdef GRAD_AB_PREP_V0
  constexpr bool prep_v0 = true;
#else
  constexpr bool prep_v0 = false;
#endif
  const auto prep_old = [&] {  // main's phase 1 for per-key decays (prep9's A/B), else the library's
#ifdef GRAD_AB_PREP_V0
    if constexpr (per_key) {
      constexpr auto kern = bwd::per_key_prep_kernel_v0<erases, channels, P>;
      constexpr std::size_t sh = bwd::per_key_prep_shape_v0<erases, channels>::bytes;
      CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(sh)));
      kern<<<grid, bwd::threads, sh>>>(wk, cg);
      CK(cudaGetLastError());
      return;
    }
#endif
    prep();
  };
  const auto grad_old = [&] {  // main's phase 4 as main's phases.hpp launched it (prep9's A/B: the library's)
    if constexpr (prep_v0) {
      grad_new();
      return;
    }
    if constexpr (per_key) {
      constexpr auto kern = bwd::v0::per_key_grad_kernel<erases, T, channels, false, P>;
      constexpr std::size_t sh = bwd::v0::per_key_grad_shape<erases>::bytes;
      CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(sh)));
      kern<<<grid, bwd::threads, sh>>>(wk, gr.dv, cg, cd);
    } else {
      constexpr auto kern = bwd::v0::chunk_grad_kernel<erases, decays, T, !erases, P>;
      constexpr std::size_t sh = bwd::v0::grad_shape<erases>::bytes;
      CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(sh)));
      kern<<<grid, bwd::threads, sh>>>(wk, gr.dv);
    }
    CK(cudaGetLastError());
  };
  // intra14: main e98ccba's phase 4 for 16-bit inputs and scalar decays (inter_grad_kernel, ut_grad_kernel's launches,
  // then chunk_grad_kernel's Inter path, one CTA an SM), against the library's (chunk_grad16_kernel in its place)
  constexpr bool has_main16 = !per_key && bwd::inter_grad_for<T>;
  const auto chunk_main16 = [&] {
    if constexpr (has_main16) {
      constexpr auto kern = bwd::chunk_grad_kernel<erases, decays, T, false, P, true>;
      constexpr std::size_t sh = bwd::grad_shape<erases>::bytes;
      CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(sh)));
      kern<<<grid, bwd::threads, sh>>>(wk, gr.dv);
      CK(cudaGetLastError());
    }
  };
  // (carveout: the library's launch asks for the largest shared-memory carveout; -1 = the driver's default, for the A/B)
  const auto chunk_new16_at = [&](int carveout) {
    if constexpr (has_main16) {
      constexpr auto kern = bwd::chunk_grad16_kernel<erases, decays, T>;
      constexpr std::size_t sh = bwd::grad16_shape::bytes;
      CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(sh)));
      CK(cudaFuncSetAttribute(kern, cudaFuncAttributePreferredSharedMemoryCarveout, carveout));
      kern<<<grid, bwd::threads, sh>>>(wk, gr.dv);
      CK(cudaGetLastError());
    }
  };
  const auto chunk_new16 = [&] { chunk_new16_at(int(cudaSharedmemCarveoutMaxShared)); };
  const auto chunk_new16_default = [&] { chunk_new16_at(-1); };
  const auto inter16 = [&] {  // phase 4's launches before chunk_grad (phases.hpp's grad_phase)
    if constexpr (has_main16) {
      using ish = bwd::inter_shape<bwd::inter_terms>;
      const unsigned ctas = unsigned(wk.chunks * wk.HV * bwd::inter_jobs<erases>(int((K + ish::tile - 1) / ish::tile)));
      bwd::inter_grad_kernel<erases, bwd::inter_terms, decays && bwd::hdh_in_inter><<<ctas, ish::threads>>>(wk);
      if constexpr (erases) bwd::ut_grad_launch<decays>(wk, 0);
    }
  };
  const auto grad_main16 = [&] {
    inter16();
    chunk_main16();
  };
  constexpr bool has_v1 = per_key && erases;  // kda, gdn2
  const auto prep_v1 = [&] {  // main 07de2f4's phase 1 (per_key_prep_v1.hpp)
    if constexpr (has_v1) {
      constexpr auto kern = bwd::per_key_prep_kernel_v1<true, channels, P>;
      constexpr std::size_t sh = bwd::per_key_prep_shape_v1<true, channels>::bytes;
      CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(sh)));
      kern<<<grid, bwd::threads, sh>>>(wk, cg);
      CK(cudaGetLastError());
    }
  };
  constexpr bool has_v0p = !per_key;  // scalar decays: main c94ecb9's phase 1 (grad_ab_prep_v0.hpp)
  const auto prep_v0p = [&] {
    if constexpr (has_v0p) {
      constexpr auto kern = bwd::v0p::chunk_prep_kernel<erases, precision::tf32x3>;
      constexpr std::size_t sh = bwd::v0p::prep_shape<erases>::bytes;
      CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(sh)));
      kern<<<grid, bwd::threads, sh>>>(wk);
      CK(cudaGetLastError());
    }
  };
  const auto whole_v0p = [&] {  // backward.hpp's run as main c94ecb9 had it: its phase 1, state passes at 3xTF32
    // (prep13's call 1 ran the library's state passes at one TF32 mma for 16-bit inputs; they are 3xTF32 again)
    bwd::inputs_kernel<Rule, T><<<unsigned(tokens), bwd::threads>>>(ka, gr.d_o, wk);
    prep_v0p();
    bwd::state_phases<erases, per_key, P>(wk, a.initial_state, gr.d_final_state, gr.d_initial_state, true, true, 0);
    grad_new();
    bwd::input_adjoint_kernel<T><<<unsigned(tokens), bwd::threads>>>(ka, wk, og);
    CK(cudaGetLastError());
  };
  const auto whole_v1 = [&] {  // backward.hpp's run with main's phase 1 and the library's phase 4
    bwd::inputs_kernel<Rule, T><<<unsigned(tokens), bwd::threads>>>(ka, gr.d_o, wk);
    if constexpr (channels) {
      bwd::channel_gates_kernel<T><<<unsigned(tokens), bwd::threads>>>(a.b, a.w, wk, gate_b, gate_w);
    }
    prep_v1();
    bwd::state_phases<erases, per_key, SP>(wk, a.initial_state, gr.d_final_state, gr.d_initial_state, true, true, 0);
    grad_new();
    bwd::input_adjoint_kernel<T><<<unsigned(tokens), bwd::threads>>>(ka, wk, og);
    CK(cudaGetLastError());
  };
  const auto whole = [&](auto&& grad) {  // backward.hpp's run, phases 0-5 (the old phase 1 with the old phase 4)
    bwd::inputs_kernel<Rule, T><<<unsigned(tokens), bwd::threads>>>(ka, gr.d_o, wk);
    if constexpr (channels) {
      bwd::channel_gates_kernel<T><<<unsigned(tokens), bwd::threads>>>(a.b, a.w, wk, gate_b, gate_w);
    }
    if constexpr (std::is_same_v<std::decay_t<decltype(grad)>, std::decay_t<decltype(grad_old)>>) prep_old();
    else prep();
    bwd::state_phases<erases, per_key, SP>(wk, a.initial_state, gr.d_final_state, gr.d_initial_state, true, true, 0);
    grad();
    bwd::input_adjoint_kernel<T><<<unsigned(tokens), bwd::threads>>>(ka, wk, og);
    CK(cudaGetLastError());
  };

  // Outputs: the float32 workspace gradients, then the bf16 outputs.
  const auto outputs = [&] {
    std::vector<copy> o;
    o.push_back(keep(wk.dq, tokens * HV * K));
    o.push_back(keep(wk.dk, tokens * HV * K));
    o.push_back(per_key ? keep(wk.dlog_alpha_k, tokens * HV * K) : keep(wk.dlog_alpha, tokens * HV));
    if (erases && !channels) o.push_back(keep(wk.derase, tokens * HV));
    o.push_back(keep(dq, nk));
    o.push_back(keep(dk, nk));
    o.push_back(keep(dv, nv));
    if (a.g.ptr) o.push_back(keep(dg, ns));
    if (a.gk.ptr) o.push_back(keep(dgk, nkv));
    if (a.beta.ptr) o.push_back(keep(dbeta, ns));
    if (channels) o.push_back(keep(db, nkv)), o.push_back(keep(dw, nv));
    return o;
  };
  std::vector<const char*> names = {"ws_dq", "ws_dk", per_key ? "ws_dlog_alpha_k" : "ws_dlog_alpha"};
  if (erases && !channels) names.push_back("ws_derase");
  for (const char* n : {"dq", "dk", "dv"}) names.push_back(n);
  if (a.g.ptr) names.push_back("dg");
  if (a.gk.ptr) names.push_back("dgk");
  if (a.beta.ptr) names.push_back("dbeta");
  if (channels) names.push_back("db"), names.push_back("dw");

  const auto clear = [&] {  // (so that a skipped write shows)
    CK(cudaMemset(wk.dq, 0, tokens * HV * K * sizeof(float)));
    CK(cudaMemset(wk.dk, 0, tokens * HV * K * sizeof(float)));
    CK(cudaMemset(dq, 0, nk * sizeof(T)));
    CK(cudaMemset(dk, 0, nk * sizeof(T)));
    CK(cudaMemset(dv, 0, nv * sizeof(T)));
  };
  lib();  // (first: the library's call writes the chunk table into the workspace, which whole() then reuses)
  CK(cudaDeviceSynchronize());
  clear();
  whole(grad_old);
  CK(cudaDeviceSynchronize());
  const auto o_old = outputs();
  clear();
  whole(grad_new);
  CK(cudaDeviceSynchronize());
  const auto o_new = outputs();
  lib();  // the library's own call: the same numbers as `new` expected
  CK(cudaDeviceSynchronize());
  const auto o_lib = outputs();
  std::printf("{\"rule\":\"%s\",\"B\":%ld,\"T\":%ld,\"H\":%ld,\"HV\":%ld,\"K\":%ld,\"V\":%ld,\"extreme\":%d",
              rule_name<Rule>::value, long(B), long(T_), long(H), long(HV), long(K), long(V), int(extreme));
  double worst = 0, lib_worst = 0;
  for (std::size_t i = 0; i < o_new.size(); ++i) {
    const double d = distance(o_new[i], o_old[i]);
    worst = std::max(worst, std::isfinite(d) ? d : 1e30);
    std::printf(",\"%s\":%.3g", names[i], d);
    const double e = distance(o_lib[i], o_new[i]);
    lib_worst = std::max(lib_worst, std::isfinite(e) ? e : 1e30);
  }
  std::printf(",\"worst_new_vs_old\":%.3g,\"lib_vs_new\":%.3g", worst, lib_worst);
  if constexpr (has_main16) {  // intra14: the library's phase 4 against main e98ccba's, same inputs
    clear();
    whole(grad_main16);
    CK(cudaDeviceSynchronize());
    const auto o_m = outputs();
    double mw = 0;
    std::printf(",\"new_vs_main16\":{");
    for (std::size_t i = 0; i < o_new.size(); ++i) {
      const double d = distance(o_new[i], o_m[i]);
      mw = std::max(mw, std::isfinite(d) ? d : 1e30);
      std::printf("%s\"%s\":%.3g", i ? "," : "", names[i], d);
    }
    std::printf("},\"new_vs_main16_worst\":%.3g", mw);
    double ow = 0;
    for (std::size_t i = 0; i < o_old.size(); ++i) {
      const double d = distance(o_m[i], o_old[i]);
      ow = std::max(ow, std::isfinite(d) ? d : 1e30);
    }
    std::printf(",\"main16_vs_old_worst\":%.3g", ow);
    for (const copy& c : o_m) CK(cudaFree(c.p));
  }
  if constexpr (has_v1) {  // the library's call against main's phase 1 (T's workspace cleared: A passes through it)
    clear();
    CK(cudaMemset(wk.Tinv, 0, std::size_t(wk.chunks * wk.HV) * bwd::CL * bwd::CL * sizeof(float)));
    whole_v1();
    CK(cudaDeviceSynchronize());
    const auto o_v1 = outputs();
    double v1_worst = 0;
    std::printf(",\"v1_vs_lib\":{");
    for (std::size_t i = 0; i < o_lib.size(); ++i) {
      const double d = distance(o_lib[i], o_v1[i]);
      v1_worst = std::max(v1_worst, std::isfinite(d) ? d : 1e30);
      std::printf("%s\"%s\":%.3g", i ? "," : "", names[i], d);
    }
    std::printf("},\"v1_vs_lib_worst\":%.3g", v1_worst);
    for (const copy& c : o_v1) CK(cudaFree(c.p));
  }
  if constexpr (has_v0p) {
    // phase 1's outputs, main's launch against the library's (phase 0 as the library's call left it)
    const std::size_t pc = std::size_t(wk.chunks * wk.HV);
    const auto prep_outputs = [&] {
      std::vector<copy> o;
      o.push_back(keep(wk.Gc, pc * bwd::CL));
      o.push_back(keep(wk.P, pc * bwd::CL * bwd::CL));
      o.push_back(keep(wk.dU, pc * bwd::CL * V));
      o.push_back(keep(wk.dh, pc * K * V));
      if (erases) {
        o.push_back(keep(wk.Tinv, pc * bwd::CL * bwd::CL));
        o.push_back(keep(wk.W, pc * bwd::CL * K));
        o.push_back(keep(wk.U, pc * bwd::CL * V));
      }
      return o;
    };
    const char* prep_names[] = {"G", "P", "sPtdO", "Y", "T", "W", "U"};
    prep_v0p();
    CK(cudaDeviceSynchronize());
    const auto p_old = prep_outputs();
    prep();
    CK(cudaDeviceSynchronize());
    const auto p_new = prep_outputs();
    std::printf(",\"prep_vs_v0p\":{");
    double pw = 0;
    for (std::size_t i = 0; i < p_new.size(); ++i) {
      const double d = distance(p_new[i], p_old[i]);
      pw = std::max(pw, std::isfinite(d) ? d : 1e30);
      std::printf("%s\"%s\":%.3g", i ? "," : "", prep_names[i], d);
    }
    std::printf("},\"prep_vs_v0p_worst\":%.3g", pw);
    clear();
    whole_v0p();
    CK(cudaDeviceSynchronize());
    const auto o_v0p = outputs();
    double gw = 0;
    std::printf(",\"lib_vs_v0p\":{");
    for (std::size_t i = 0; i < o_lib.size(); ++i) {
      const double d = distance(o_lib[i], o_v0p[i]);
      gw = std::max(gw, std::isfinite(d) ? d : 1e30);
      std::printf("%s\"%s\":%.3g", i ? "," : "", names[i], d);
    }
    std::printf("},\"lib_vs_v0p_worst\":%.3g", gw);
    for (const auto* o : {&p_old, &p_new, &o_v0p})
      for (const copy& c : *o) CK(cudaFree(c.p));
  }
  for (const auto* o : {&o_old, &o_new, &o_lib})
    for (const copy& c : *o) CK(cudaFree(c.p));
  // GRAD_AB_CG16=1 (intra14): of the timings only phase 4's (grad_new / grad_old, inter_grad, ut_grad, chunk_grad's part
  // both ways) and the whole backward's (new, old, the library's)
  const bool cg_only = std::getenv("GRAD_AB_CG16") != nullptr;
  if (timed && !once && has_v0p && !cg_only && !std::getenv("GRAD_AB_STATE16") && !std::getenv("GRAD_AB_ST17")) {  // phase 1, main's against the library's, and the whole backward either way
    double p16 = 1e30, p0 = 1e30, b16 = 1e30, b0 = 1e30;
    for (int r = 0; r < 5; ++r) p16 = std::min(p16, time_ms(prep, 5, 3)), p0 = std::min(p0, time_ms(prep_v0p, 5, 3));
    for (int r = 0; r < 3; ++r) b16 = std::min(b16, time_ms(lib, 2, 3)), b0 = std::min(b0, time_ms(whole_v0p, 2, 3));
    std::printf(",\"prep16_ms\":%.3f,\"prep_v0p_ms\":%.3f,\"prep_speedup\":%.3f,\"bwd_lib16_ms\":%.3f,"
                "\"bwd_v0p_ms\":%.3f,\"bwd_speedup16\":%.3f",
                p16, p0, p0 / p16, b16, b0, b0 / b16);
  }
  if (!once && std::getenv("GRAD_AB_TILES")) {  // the state passes at each value-tile width (phases.hpp)
    const auto f = [&](auto bv) { return [&, bv] { bwd::forward_pass<bwd::staged_form<decltype(bv)::value, erases, per_key, SP>>(wk, none4, 0); }; };
    const auto r = [&](auto bv) { return [&, bv] { bwd::reverse_pass<bwd::staged_form<decltype(bv)::value, erases, per_key, SP>>(wk, none4, none4w, 0); }; };
    using c16 = std::integral_constant<int, 16>;
    using c32 = std::integral_constant<int, 32>;
    using c64 = std::integral_constant<int, 64>;
    using c128 = std::integral_constant<int, 128>;
    // Every width's h, U_new, dU, dh against the library's choice (phase 1 again before each reverse pass: it reads
    // phase 1's s Pᵀ dO and Y from the slots it overwrites with dU and dh).
    const std::size_t pc = std::size_t(wk.chunks * wk.HV);
    const auto states = [&] {
      std::vector<copy> o;
      o.push_back(keep(wk.h, pc * K * V));
      if (erases) o.push_back(keep(wk.U_new, pc * bwd::CL * V));
      o.push_back(keep(wk.dU, pc * bwd::CL * V));
      o.push_back(keep(wk.dh, pc * K * V));
      return o;
    };
    const auto run_with = [&](auto fw, auto rv) {
      prep();
      fw();
      rv();
      CK(cudaDeviceSynchronize());
      return states();
    };
    const auto s_lib = run_with(fwd, rev);
    const auto s16 = run_with(f(c16{}), r(c16{})), s32 = run_with(f(c32{}), r(c32{})),
               s64 = run_with(f(c64{}), r(c64{})), s128 = run_with(f(c128{}), r(c64{}));
    double dw = 0;
    for (const auto* sv : {&s16, &s32, &s64, &s128})
      for (std::size_t i = 0; i < s_lib.size(); ++i) {
        const double d = distance((*sv)[i], s_lib[i]);
        dw = std::max(dw, std::isfinite(d) ? d : 1e30);
      }
    std::printf(",\"tiles_vs_lib_worst\":%.3g", dw);
    for (const auto* sv : {&s_lib, &s16, &s32, &s64, &s128})
      for (const copy& c : *sv) CK(cudaFree(c.p));
  }
  if (timed && !once && std::getenv("GRAD_AB_TILES")) {
    const auto f = [&](auto bv) { return [&, bv] { bwd::forward_pass<bwd::staged_form<decltype(bv)::value, erases, per_key, SP>>(wk, none4, 0); }; };
    const auto r = [&](auto bv) { return [&, bv] { bwd::reverse_pass<bwd::staged_form<decltype(bv)::value, erases, per_key, SP>>(wk, none4, none4w, 0); }; };
    using c16 = std::integral_constant<int, 16>;
    using c32 = std::integral_constant<int, 32>;
    using c64 = std::integral_constant<int, 64>;
    using c128 = std::integral_constant<int, 128>;
    double t[7];
    for (double& x : t) x = 1e30;
    for (int rep = 0; rep < 3; ++rep) {  // interleaved
      t[0] = std::min(t[0], time_ms(f(c16{}), 3, 3)), t[1] = std::min(t[1], time_ms(f(c32{}), 3, 3));
      t[2] = std::min(t[2], time_ms(f(c64{}), 3, 3)), t[3] = std::min(t[3], time_ms(f(c128{}), 3, 3));
      t[4] = std::min(t[4], time_ms(r(c16{}), 3, 3)), t[5] = std::min(t[5], time_ms(r(c32{}), 3, 3));
      t[6] = std::min(t[6], time_ms(r(c64{}), 3, 3));
    }
    std::printf(",\"fwd_bv_ms\":{\"16\":%.3f,\"32\":%.3f,\"64\":%.3f,\"128\":%.3f},"
                "\"rev_bv_ms\":{\"16\":%.3f,\"32\":%.3f,\"64\":%.3f}",
                t[0], t[1], t[2], t[3], t[4], t[5], t[6]);
  }
  // state14: the state passes for 16-bit inputs (state_passes16.hpp: bf16 m16n8k16, Terms products a step) against
  // today's 3xTF32 passes ("old", state_phases with In = float), same inputs, with a random S0 and dST (so that dS0
  // is compared too): the distance of h, U_new, dU, dh, dS0 for each variant (Terms 3 at 16 / 32 / 64 / 128 value
  // columns and at the library's choice; Terms 1 and 2 at 16 and 128); the whole backward's outputs with Terms 1,
  // 2, 3 (library widths) against the whole backward with the old passes; timed (--long too): each pass alone,
  // interleaved, and the whole backward either way. GRAD_AB_STATE16=1 runs it and skips the other timings.
  const bool state16 = std::getenv("GRAD_AB_STATE16") != nullptr;
  if constexpr (!per_key && sizeof(T) == 2) {
    if (state16 && !once) {
      const std::size_t pc = std::size_t(wk.chunks * wk.HV), nst = std::size_t(wk.N * HV * K * V);
      float *s0 = random_floats(nst, 41), *dst = random_floats(nst, 42), *ds0 = dalloc<float>(nst);
      const view<const float, 4> S0v = contiguous<4>(static_cast<const float*>(s0), {wk.N, HV, K, V}),
                                 dSTv = contiguous<4>(static_cast<const float*>(dst), {wk.N, HV, K, V});
      const view<float, 4> dS0v = contiguous<4>(ds0, {wk.N, HV, K, V});
      const auto old_f = [&] { bwd::state_phases<erases, false, SP>(wk, S0v, dSTv, dS0v, true, false, 0); };
      const auto old_r = [&] { bwd::state_phases<erases, false, SP>(wk, S0v, dSTv, dS0v, false, true, 0); };
      const auto lib_f = [&] { bwd::state_phases<erases, false, SP, T>(wk, S0v, dSTv, dS0v, true, false, 0); };
      const auto lib_r = [&] { bwd::state_phases<erases, false, SP, T>(wk, S0v, dSTv, dS0v, false, true, 0); };
      const auto nf = [&](auto bv, auto terms) {
        return [&, bv, terms] { bwd::forward_pass<bwd::state16_form<decltype(bv)::value, erases, decltype(terms)::value>>(wk, S0v, 0); };
      };
      const auto nr = [&](auto bv, auto terms) {
        return [&, bv, terms] {
          bwd::reverse_pass<bwd::state16_form<decltype(bv)::value, erases, decltype(terms)::value>>(wk, dSTv, dS0v, 0);
        };
      };
      using c16 = std::integral_constant<int, 16>;
      using c32 = std::integral_constant<int, 32>;
      using c64 = std::integral_constant<int, 64>;
      using c128 = std::integral_constant<int, 128>;
      using t1 = std::integral_constant<int, 1>;
      using t2 = std::integral_constant<int, 2>;
      using t3 = std::integral_constant<int, 3>;
      const char* snames[] = {"h", "U_new", "dU", "dh", "dS0"};
      const auto states = [&] {
        std::vector<copy> o;
        o.push_back(keep(wk.h, pc * K * V));
        o.push_back(erases ? keep(wk.U_new, pc * bwd::CL * V) : keep(wk.h, 1));
        o.push_back(keep(wk.dU, pc * bwd::CL * V));
        o.push_back(keep(wk.dh, pc * K * V));
        o.push_back(keep(ds0, nst));
        return o;
      };
      const auto run_states = [&](auto fw, auto rv) {
        CK(cudaMemset(wk.h, 0, pc * K * V * sizeof(float)));
        CK(cudaMemset(ds0, 0, nst * sizeof(float)));
        prep();  // (phase 1 again: the reverse pass overwrites its s Pᵀ dO and Y)
        fw();
        rv();
        CK(cudaDeviceSynchronize());
        return states();
      };
      const auto s_old = run_states(old_f, old_r);
      double sw = 0;
      const auto compare = [&](const char* name, auto fw, auto rv) {
        const auto sv = run_states(fw, rv);
        std::printf(",\"s16_%s\":{", name);
        for (std::size_t i = 0; i < sv.size(); ++i) {
          const double d = distance(sv[i], s_old[i]);
          if (i != 1 || erases) sw = std::max(sw, std::isfinite(d) ? d : 1e30);
          std::printf("%s\"%s\":%.3g", i ? "," : "", snames[i], d);
        }
        std::printf("}");
        for (const copy& c : sv) CK(cudaFree(c.p));
      };
      compare("lib", lib_f, lib_r);
      compare("t3_16", nf(c16{}, t3{}), nr(c16{}, t3{}));
      compare("t3_32", nf(c32{}, t3{}), nr(c32{}, t3{}));
      compare("t3_64", nf(c64{}, t3{}), nr(c64{}, t3{}));
      compare("t3_128", nf(c128{}, t3{}), nr(c128{}, t3{}));
      compare("t2_16", nf(c16{}, t2{}), nr(c16{}, t2{}));
      compare("t2_128", nf(c128{}, t2{}), nr(c128{}, t2{}));
      compare("t1_16", nf(c16{}, t1{}), nr(c16{}, t1{}));
      compare("t1_128", nf(c128{}, t1{}), nr(c128{}, t1{}));
      std::printf(",\"s16_states_worst\":%.3g", sw);
      for (const copy& c : s_old) CK(cudaFree(c.p));
      // the whole backward (phases 0-5) with the old passes, and with the new ones at Terms 1, 2, 3
      int dev = 0, sms = 0;
      CK(cudaGetDevice(&dev));
      CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
      const bool wide = 4 * std::size_t(wk.N * HV) * std::size_t((V + 127) / 128) >= 3 * std::size_t(sms);
      const auto whole_states = [&](auto fw, auto rv) {
        bwd::inputs_kernel<Rule, T><<<unsigned(tokens), bwd::threads>>>(ka, gr.d_o, wk);
        prep();
        fw();
        rv();
        grad_new();
        bwd::input_adjoint_kernel<T><<<unsigned(tokens), bwd::threads>>>(ka, wk, og);
        CK(cudaGetLastError());
      };
      const auto f_t2 = [&] { wide ? nf(c128{}, t2{})() : nf(c16{}, t2{})(); };
      const auto f_t1 = [&] { wide ? nf(c128{}, t1{})() : nf(c16{}, t1{})(); };
      const auto r_t2 = [&] { wide ? nr(c128{}, t2{})() : nr(c16{}, t2{})(); };
      const auto r_t1 = [&] { wide ? nr(c128{}, t1{})() : nr(c16{}, t1{})(); };
      const auto w_old = [&] { whole_states(old_f, old_r); };
      const auto w_t3 = [&] { whole_states(lib_f, lib_r); };
      const auto w_t2 = [&] { whole_states(f_t2, r_t2); };
      const auto w_t1 = [&] { whole_states(f_t1, r_t1); };
      clear();
      w_old();
      CK(cudaDeviceSynchronize());
      const auto o_base = outputs();
      const auto compare_whole = [&](const char* name, auto wf) {
        clear();
        wf();
        CK(cudaDeviceSynchronize());
        const auto ov = outputs();
        double ww = 0;
        std::printf(",\"bwd16_%s\":{", name);
        for (std::size_t i = 0; i < ov.size(); ++i) {
          const double d = distance(ov[i], o_base[i]);
          ww = std::max(ww, std::isfinite(d) ? d : 1e30);
          std::printf("%s\"%s\":%.3g", i ? "," : "", names[i], d);
        }
        std::printf(",\"worst\":%.3g}", ww);
        for (const copy& c : ov) CK(cudaFree(c.p));
      };
      compare_whole("t3", w_t3);
      compare_whole("t2", w_t2);
      compare_whole("t1", w_t1);
      for (const copy& c : o_base) CK(cudaFree(c.p));
      if (timed) {
        double tf[7], tr[7], tb[4];
        for (double& x : tf) x = 1e30;
        for (double& x : tr) x = 1e30;
        for (double& x : tb) x = 1e30;
        const auto best = [](double& x, double y) { x = std::min(x, y); };
        for (int rep = 0; rep < 3; ++rep) {  // interleaved
          best(tf[0], time_ms(old_f, 3, 3)), best(tf[1], time_ms(nf(c16{}, t3{}), 3, 3));
          best(tf[2], time_ms(nf(c32{}, t3{}), 3, 3)), best(tf[3], time_ms(nf(c64{}, t3{}), 3, 3));
          best(tf[4], time_ms(nf(c128{}, t3{}), 3, 3));
          best(tf[5], time_ms(f_t2, 3, 3));
          best(tf[6], time_ms(f_t1, 3, 3));
          best(tr[0], time_ms(old_r, 3, 3)), best(tr[1], time_ms(nr(c16{}, t3{}), 3, 3));
          best(tr[2], time_ms(nr(c32{}, t3{}), 3, 3)), best(tr[3], time_ms(nr(c64{}, t3{}), 3, 3));
          best(tr[4], time_ms(nr(c128{}, t3{}), 3, 3));
          best(tr[5], time_ms(r_t2, 3, 3));
          best(tr[6], time_ms(r_t1, 3, 3));
        }
        for (int rep = 0; rep < 3; ++rep) {
          best(tb[0], time_ms(w_old, 2, 3)), best(tb[1], time_ms(w_t3, 2, 3));
          best(tb[2], time_ms(w_t2, 2, 3)), best(tb[3], time_ms(w_t1, 2, 3));
        }
        std::printf(",\"s16_fwd_ms\":{\"old\":%.3f,\"t3_16\":%.3f,\"t3_32\":%.3f,\"t3_64\":%.3f,\"t3_128\":%.3f,"
                    "\"t2_lib\":%.3f,\"t1_lib\":%.3f}",
                    tf[0], tf[1], tf[2], tf[3], tf[4], tf[5], tf[6]);
        std::printf(",\"s16_rev_ms\":{\"old\":%.3f,\"t3_16\":%.3f,\"t3_32\":%.3f,\"t3_64\":%.3f,\"t3_128\":%.3f,"
                    "\"t2_lib\":%.3f,\"t1_lib\":%.3f}",
                    tr[0], tr[1], tr[2], tr[3], tr[4], tr[5], tr[6]);
        std::printf(",\"s16_bwd_ms\":{\"old\":%.3f,\"t3\":%.3f,\"t2\":%.3f,\"t1\":%.3f},\"s16_wide\":%d", tb[0],
                    tb[1], tb[2], tb[3], int(wide));
      }
      for (float* x : {s0, dst, ds0}) CK(cudaFree(x));
    }
  }
  // st17 (issue #14): GRAD_AB_ST17=1 — state_passes16_ring.hpp's narrow passes (two stages: a chunk's operands a
  // whole chunk ahead) against state_passes16.hpp's at the same widths (the same arithmetic: distance 0 expected,
  // "st17_ring_vs_s16") and, like GRAD_AB_STATE16, everything against the 3xTF32 passes ("st17_<variant>"); the whole
  // backward's outputs with the library's passes (now) against state14's choice (single-stage: 128 columns where
  // wide, else forward 16, reverse 32; "st17_bwd_lib_vs_s14"); timed (interleaved, best of three medians): each pass
  // alone at each width, both forms, and the whole backward (phases 0-5) with either choice.
  const bool st17 = std::getenv("GRAD_AB_ST17") != nullptr;
  if constexpr (!per_key && sizeof(T) == 2) {
    if (st17 && !once) {
      const std::size_t pc = std::size_t(wk.chunks * wk.HV), nst = std::size_t(wk.N * HV * K * V);
      float *s0 = random_floats(nst, 41), *dst = random_floats(nst, 42), *ds0 = dalloc<float>(nst);
      const view<const float, 4> S0v = contiguous<4>(static_cast<const float*>(s0), {wk.N, HV, K, V}),
                                 dSTv = contiguous<4>(static_cast<const float*>(dst), {wk.N, HV, K, V});
      const view<float, 4> dS0v = contiguous<4>(ds0, {wk.N, HV, K, V});
      const auto x_f = [&] { bwd::state_phases<erases, false, SP>(wk, S0v, dSTv, dS0v, true, false, 0); };
      const auto x_r = [&] { bwd::state_phases<erases, false, SP>(wk, S0v, dSTv, dS0v, false, true, 0); };
      const auto lib_f = [&] { bwd::state_phases<erases, false, SP, T>(wk, S0v, dSTv, dS0v, true, false, 0); };
      const auto lib_r = [&] { bwd::state_phases<erases, false, SP, T>(wk, S0v, dSTv, dS0v, false, true, 0); };
      const auto s_f = [&](auto bv) { return [&, bv] { bwd::forward_pass<bwd::state16_form<decltype(bv)::value, erases>>(wk, S0v, 0); }; };
      const auto s_r = [&](auto bv) {
        return [&, bv] { bwd::reverse_pass<bwd::state16_form<decltype(bv)::value, erases>>(wk, dSTv, dS0v, 0); };
      };
      const auto r_f = [&](auto bv) {
        return [&, bv] { bwd::forward_pass<bwd::state16_ring_form<decltype(bv)::value, erases>>(wk, S0v, 0); };
      };
      const auto r_r = [&](auto bv) {
        return [&, bv] { bwd::reverse_pass<bwd::state16_ring_form<decltype(bv)::value, erases>>(wk, dSTv, dS0v, 0); };
      };
      // (call 1's ring kernels: async_tile's copies, one-float h / dh / Y accesses; Lean = false)
      const auto v_f = [&](auto bv) {
        return [&, bv] { bwd::forward_pass<bwd::state16_ring_form<decltype(bv)::value, erases, bwd::state16_terms, false>>(wk, S0v, 0); };
      };
      const auto v_r = [&](auto bv) {
        return [&, bv] {
          bwd::reverse_pass<bwd::state16_ring_form<decltype(bv)::value, erases, bwd::state16_terms, false>>(wk, dSTv, dS0v, 0);
        };
      };
      using c16 = std::integral_constant<int, 16>;
      using c32 = std::integral_constant<int, 32>;
      using c128 = std::integral_constant<int, 128>;
      int dev = 0, sms = 0;
      CK(cudaGetDevice(&dev));
      CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
      const bool wide = 4 * std::size_t(wk.N * HV) * std::size_t((V + 127) / 128) >= 3 * std::size_t(sms);
      const auto s14_f = [&] { wide ? s_f(c128{})() : s_f(c16{})(); };  // state14's choice
      const auto s14_r = [&] {  // (with kone16's first-chunk dS_0, as state_phases runs it)
        wide ? s_r(c128{})() : s_r(c32{})();
        if constexpr (erases) bwd::first_chunk_adjoint_phase(wk, dS0v, 0);
      };
      const char* snames[] = {"h", "U_new", "dU", "dh", "dS0"};
      const auto states = [&] {
        std::vector<copy> o;
        o.push_back(keep(wk.h, pc * K * V));
        o.push_back(erases ? keep(wk.U_new, pc * bwd::CL * V) : keep(wk.h, 1));
        o.push_back(keep(wk.dU, pc * bwd::CL * V));
        o.push_back(keep(wk.dh, pc * K * V));
        o.push_back(keep(ds0, nst));
        return o;
      };
      const auto run_states = [&](auto fw, auto rv) {
        CK(cudaMemset(wk.h, 0, pc * K * V * sizeof(float)));
        CK(cudaMemset(wk.dU, 0, pc * bwd::CL * V * sizeof(float)));
        CK(cudaMemset(ds0, 0, nst * sizeof(float)));
        if (erases) CK(cudaMemset(wk.U_new, 0, pc * bwd::CL * V * sizeof(float)));
        prep();  // (phase 1 again: the reverse pass overwrites its s Pᵀ dO and Y)
        fw();
        rv();
        CK(cudaDeviceSynchronize());
        return states();
      };
      const auto s_x = run_states(x_f, x_r);
      const auto s_16 = run_states(s_f(c16{}), s_r(c16{}));
      const auto s_32 = run_states(s_f(c32{}), s_r(c32{}));
      double sw = 0, rw = 0;
      const auto compare = [&](const char* name, const std::vector<copy>& sv, const std::vector<copy>& base, double& worst) {
        std::printf(",\"st17_%s\":{", name);
        for (std::size_t i = 0; i < sv.size(); ++i) {
          const double d = distance(sv[i], base[i]);
          if (i != 1 || erases) worst = std::max(worst, std::isfinite(d) ? d : 1e30);
          std::printf("%s\"%s\":%.3g", i ? "," : "", snames[i], d);
        }
        std::printf("}");
      };
      const auto free_all = [](const std::vector<copy>& v) {
        for (const copy& c : v) CK(cudaFree(c.p));
      };
      {
        const auto v = run_states(lib_f, lib_r);
        compare("lib", v, s_x, sw);
        free_all(v);
      }
      compare("s16_16", s_16, s_x, sw);
      compare("s16_32", s_32, s_x, sw);
      {
        const auto v = run_states(r_f(c16{}), r_r(c16{}));
        compare("ring16", v, s_x, sw);
        compare("ring16_vs_s16", v, s_16, rw);
        free_all(v);
      }
      {
        const auto v = run_states(r_f(c32{}), r_r(c32{}));
        compare("ring32", v, s_x, sw);
        compare("ring32_vs_s16", v, s_32, rw);
        free_all(v);
      }
      {
        const auto v = run_states(v_f(c16{}), v_r(c16{}));
        compare("ring16_v1_vs_s16", v, s_16, rw);
        free_all(v);
      }
      {
        const auto v = run_states(v_f(c32{}), v_r(c32{}));
        compare("ring32_v1_vs_s16", v, s_32, rw);
        free_all(v);
      }
      std::printf(",\"st17_states_worst\":%.3g,\"st17_ring_vs_s16_worst\":%.3g", sw, rw);
      for (const auto* v : {&s_x, &s_16, &s_32}) free_all(*v);
      // the whole backward (phases 0-5) with state14's choice of passes, and with the library's
      const auto whole_states = [&](auto fw, auto rv) {
        bwd::inputs_kernel<Rule, T><<<unsigned(tokens), bwd::threads>>>(ka, gr.d_o, wk);
        prep();
        fw();
        rv();
        grad_new();
        bwd::input_adjoint_kernel<T><<<unsigned(tokens), bwd::threads>>>(ka, wk, og);
        CK(cudaGetLastError());
      };
      const auto w_s14 = [&] { whole_states(s14_f, s14_r); };
      const auto w_lib = [&] { whole_states(lib_f, lib_r); };
      const auto w_mix = [&] { whole_states(s14_f, lib_r); };  // state14's forward, the library's reverse
      clear();
      w_s14();
      CK(cudaDeviceSynchronize());
      const auto o_s14 = outputs();
      clear();
      w_lib();
      CK(cudaDeviceSynchronize());
      const auto o_l = outputs();
      double ww = 0;
      std::printf(",\"st17_bwd_lib_vs_s14\":{");
      for (std::size_t i = 0; i < o_l.size(); ++i) {
        const double d = distance(o_l[i], o_s14[i]);
        ww = std::max(ww, std::isfinite(d) ? d : 1e30);
        std::printf("%s\"%s\":%.3g", i ? "," : "", names[i], d);
      }
      std::printf(",\"worst\":%.3g}", ww);
      free_all(o_s14);
      free_all(o_l);
      if (timed) {
        double tf[8], tr[8], tb[3];
        for (double& x : tf) x = 1e30;
        for (double& x : tr) x = 1e30;
        for (double& x : tb) x = 1e30;
        const auto best = [](double& x, double y) { x = std::min(x, y); };
        for (int rep = 0; rep < 3; ++rep) {  // interleaved
          best(tf[0], time_ms(s_f(c16{}), 3, 3)), best(tf[1], time_ms(r_f(c16{}), 3, 3));
          best(tf[2], time_ms(v_f(c16{}), 3, 3));
          best(tf[3], time_ms(s_f(c32{}), 3, 3)), best(tf[4], time_ms(r_f(c32{}), 3, 3));
          best(tf[5], time_ms(v_f(c32{}), 3, 3));
          best(tf[6], time_ms(s_f(c128{}), 3, 3)), best(tf[7], time_ms(lib_f, 3, 3));
          best(tr[0], time_ms(s_r(c16{}), 3, 3)), best(tr[1], time_ms(r_r(c16{}), 3, 3));
          best(tr[2], time_ms(v_r(c16{}), 3, 3));
          best(tr[3], time_ms(s_r(c32{}), 3, 3)), best(tr[4], time_ms(r_r(c32{}), 3, 3));
          best(tr[5], time_ms(v_r(c32{}), 3, 3));
          best(tr[6], time_ms(s_r(c128{}), 3, 3)), best(tr[7], time_ms(lib_r, 3, 3));
        }
        for (int rep = 0; rep < 3; ++rep)
          best(tb[0], time_ms(w_s14, 2, 3)), best(tb[1], time_ms(w_lib, 2, 3)), best(tb[2], time_ms(w_mix, 2, 3));
        const char* fmt = "\"s16_16\":%.3f,\"ring16\":%.3f,\"ring16_v1\":%.3f,\"s16_32\":%.3f,\"ring32\":%.3f,"
                          "\"ring32_v1\":%.3f,\"s16_128\":%.3f,\"lib\":%.3f}";
        std::printf(",\"st17_fwd_ms\":{");
        std::printf(fmt, tf[0], tf[1], tf[2], tf[3], tf[4], tf[5], tf[6], tf[7]);
        std::printf(",\"st17_rev_ms\":{");
        std::printf(fmt, tr[0], tr[1], tr[2], tr[3], tr[4], tr[5], tr[6], tr[7]);
        std::printf(",\"st17_bwd_ms\":{\"s14\":%.3f,\"lib\":%.3f,\"s14_fwd_lib_rev\":%.3f},\"st17_wide\":%d", tb[0],
                    tb[1], tb[2], int(wide));
      }
      for (float* x : {s0, dst, ds0}) CK(cudaFree(x));
    }
  }
  const bool prep_only = std::getenv("GRAD_AB_PREP16") != nullptr;
  if (state16 || st17) {
  } else if (timed && !once && prep_only) {  // the state passes at the library's precision and at one TF32 mma, interleaved
    double f1 = 1e30, f3 = 1e30, r1 = 1e30, r3 = 1e30;
    for (int r = 0; r < 3; ++r) {
      f1 = std::min(f1, time_ms(fwd1, 3, 3)), f3 = std::min(f3, time_ms(fwd, 3, 3));
      r1 = std::min(r1, time_ms(rev1, 3, 3)), r3 = std::min(r3, time_ms(rev, 3, 3));
    }
    std::printf(",\"fwd_ms\":%.3f,\"fwd_1x_ms\":%.3f,\"rev_ms\":%.3f,\"rev_1x_ms\":%.3f", f3, f1, r3, r1);
  } else if (timed && !once) {
    double t_new = 1e30, t_old = 1e30, t_lib = 1e30;
    for (int r = 0; r < 3; ++r) {  // interleaved: the spread between runs
      t_new = std::min(t_new, time_ms([&] { whole(grad_new); }, 2, 3));
      t_old = std::min(t_old, time_ms([&] { whole(grad_old); }, 2, 3));
      t_lib = std::min(t_lib, time_ms(lib, 2, 3));
    }
    std::printf(",\"bwd_new_ms\":%.3f,\"bwd_old_ms\":%.3f,\"bwd_lib_ms\":%.3f,\"bwd_speedup\":%.3f", t_new, t_old,
                t_lib, t_old / t_new);
    double g_new = 1e30, g_old = 1e30;
    for (int r = 0; r < 3; ++r) g_new = std::min(g_new, time_ms(grad_new, 3, 3)), g_old = std::min(g_old, time_ms(grad_old, 3, 3));
    std::printf(",\"grad_new_ms\":%.3f,\"grad_old_ms\":%.3f,\"grad_speedup\":%.3f", g_new, g_old, g_old / g_new);
    if constexpr (!per_key && bwd::inter_grad_for<T>) {  // grad13: phase 4's inter-chunk kernel alone
      using ish = bwd::inter_shape<bwd::inter_terms>;
      const unsigned ctas = unsigned(wk.chunks * wk.HV * bwd::inter_jobs<erases>(int((K + ish::tile - 1) / ish::tile)));
      const auto inter = [&] {
        bwd::inter_grad_kernel<erases, bwd::inter_terms, decays && bwd::hdh_in_inter><<<ctas, ish::threads>>>(wk);
      };
      std::printf(",\"inter_ms\":%.3f,\"inter_terms\":%d", time_ms(inter, 3, 3), bwd::inter_terms);
      if constexpr (erases) {  // grad13b: the UT transform's adjoints alone (dBk in place: values not meaningful here)
        const auto ut = [&] { bwd::ut_grad_launch<decays>(wk, 0); };
        std::printf(",\"ut_ms\":%.3f", time_ms(ut, 3, 3));
      }
    }
    if constexpr (has_main16) {  // intra14: chunk_grad's part alone, main's against the library's, and phase 4 both ways
      // (each reruns on its own dq / dk: the times, not the values, matter here; the inputs first restored)
      inter16();
      double c_m = 1e30, c_n = 1e30, c_d = 1e30, p_m = 1e30, p_n = 1e30;
      for (int r = 0; r < 3; ++r) {
        c_m = std::min(c_m, time_ms(chunk_main16, 3, 3)), c_n = std::min(c_n, time_ms(chunk_new16, 3, 3));
        c_d = std::min(c_d, time_ms(chunk_new16_default, 3, 3));
        p_m = std::min(p_m, time_ms(grad_main16, 3, 3)), p_n = std::min(p_n, time_ms(grad_new, 3, 3));
      }
      int ctas = 0;
      CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas, bwd::chunk_grad16_kernel<erases, decays, T>, bwd::threads,
                                                       bwd::grad16_shape::bytes));
      std::printf(",\"cg_main16_ms\":%.3f,\"cg16_ms\":%.3f,\"cg_speedup\":%.3f,\"cg16_default_carveout_ms\":%.3f,"
                  "\"cg16_ctas_per_sm\":%d,\"grad_main16_ms\":%.3f,\"grad_lib16_ms\":%.3f,\"grad16_speedup\":%.3f",
                  c_m, c_n, c_m / c_n, c_d, ctas, p_m, p_n, p_m / p_n);
    }
    // phases 1-3 alone (2 and 3 rerun on their own results: the times, not the values, matter here)
    if (!cg_only) std::printf(",\"prep_ms\":%.3f,\"fwd_ms\":%.3f,\"rev_ms\":%.3f", time_ms(prep, 3, 3), time_ms(fwd, 3, 3),
                time_ms(rev, 3, 3));
    if constexpr (prep_v0) {
      double p_new = 1e30, p_old = 1e30;
      for (int r = 0; r < 3; ++r) p_new = std::min(p_new, time_ms(prep, 3, 3)), p_old = std::min(p_old, time_ms(prep_old, 3, 3));
      std::printf(",\"prep_new_ms\":%.3f,\"prep_old_ms\":%.3f", p_new, p_old);
    }
    if constexpr (has_v1) {
      double p1 = 1e30, pb = 1e30, w1 = 1e30, wb = 1e30;
      for (int r = 0; r < 3; ++r) p1 = std::min(p1, time_ms(prep_v1, 3, 3)), pb = std::min(pb, time_ms(prep, 3, 3));
      for (int r = 0; r < 3; ++r) {
        w1 = std::min(w1, time_ms(whole_v1, 2, 3));
        wb = std::min(wb, time_ms([&] { whole(grad_new); }, 2, 3));
      }
      std::printf(",\"prep_lib_ms\":%.3f,\"prep_v1_ms\":%.3f,\"bwd_lib1_ms\":%.3f,\"bwd_v1_ms\":%.3f", pb, p1, wb,
                  w1);
    }
  } else if (once) {  // one launch of each phase 4 (ncu)
    grad_new();
    grad_old();
    CK(cudaDeviceSynchronize());
  }
  std::printf("}\n");
  std::fflush(stdout);
  for (void* x : {(void*)q, (void*)k, (void*)v, (void*)g, (void*)gk, (void*)beta, (void*)b, (void*)w, (void*)d_o,
                  (void*)dq, (void*)dk, (void*)dv, (void*)dg, (void*)dgk, (void*)dbeta, (void*)db, (void*)dw, (void*)ws})
    CK(cudaFree(x));
}

template <class F>
void each_rule(F&& f) {
#ifdef GRAD_AB_RULE
  f.template operator()<GRAD_AB_RULE>();
#else
  f.template operator()<gated_delta>();
  f.template operator()<delta>();
  f.template operator()<simple_gla>();
  f.template operator()<additive>();
  f.template operator()<kda>();
  f.template operator()<gla>();
  f.template operator()<gdn2>();
#endif
}

}  // namespace

int main(int argc, char** argv) {
  bool check = false, once = false, long_too = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--check")) check = true;
    if (!std::strcmp(argv[i], "--once")) once = true;
    if (!std::strcmp(argv[i], "--long")) long_too = true;
  }
  const char* only = std::getenv("GRAD_AB_ONLY");
  try {
    each_rule([&]<class Rule>() {
      if (only && std::string(rule_name<Rule>::value) != only) return;
      if (check) {
        ab<Rule>(2, 150, 2, 4, 64, 96, false, false);   // partial last chunk, K, V < 128, GVA (2 value heads a key head)
        ab<Rule>(1, 130, 1, 1, 128, 128, false, false);  // a 2-token last chunk
        ab<Rule>(1, 100, 1, 1, 37, 45, false, false);    // K, V not multiples of 4: block_gemm_ring's 4-byte copies
        ab<Rule>(2, 150, 2, 4, 64, 96, false, false, true);  // the same under SPEC §6's extreme gates, β ≤ 2
        ab<Rule>(1, 130, 1, 1, 128, 128, false, false, true);
        ab<Rule>(1, 100, 1, 1, 37, 45, false, false, true);
        ab<Rule>(2, 90, 1, 2, 100, 72, false, false);    // grad13: a partial second key tile of inter_grad_kernel
        return;
      }
      if (!std::getenv("GRAD_AB_LONG_ONLY")) ab<Rule>(8, 4096, 16, 16, 128, 128, true, once);  // (st17: ncu at 1×32768)
      if (!once && long_too) ab<Rule>(1, 32768, 16, 16, 128, 128, true, false);
    });
  } catch (const std::exception& e) {
    std::printf("error: %s\n", e.what());
    return 1;
  }
  return 0;
}
