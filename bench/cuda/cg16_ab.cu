// bench/cuda/cg16_ab.cu — gd18 (issue #14): chunk_grad16_kernel (phase 4's in-chunk remainder, 16-bit inputs,
// scalar decays) as the library now has it, against main 5386113's (chunk_grad16_v0.hpp), A/B in one process. Not
// built by CMake. bf16 inputs as bench_cuda.cu's --backward (H = 16, K = V = 128, L2 norm in the kernel). For each of
// gated_delta and delta:
//   distances ‖x − x_v0‖ / ‖x_v0‖ of chunk_grad16's float32 workspace outputs (dq, dk per value head, d log α, de) and
//   of dv, each variant against v0 on the same inputs (phases 0-3 and inter_grad / ut_grad as the library runs them);
//   and of the whole backward's bf16 outputs, the library's call against the same chain with v0 in its place;
//   timed (CUDA events, interleaved rounds, best of the medians): each variant alone, and the whole backward (the
//   library's call against the same phases with v0 in chunk_grad16's place).
// Variants (template options of chunk_grad16_kernel): lib (the library's: Pairs, TileKeys, SkipZeroSteps, TransN on,
// EarlyDq, TransM off), and each with one option flipped. (gd18's call 2 ran this with TransM then on by default:
// its "lib" is this file's "transm" and its "no_transm" this file's "lib"; the same kernels.)
//   nvcc <flags> -DLINEA_CUDA_EXTERN_INSTANCES -DLINEA_CUDA_EXTERN_BACKWARD_PHASES -c bench/cuda/cg16_ab.cu (link
//   the delta, gated_delta and backward_phases instance objects)
//   cg16_ab [--long]   8×4096 (and 1×32768)      cg16_ab --check   small odd shapes, distances only (sanitizers)
//   cg16_ab --once     distances at 8×4096 gated_delta, then one launch of lib and of v0 (ncu -c 2: the first two
//                      chunk_grad16 launches are the library call's and whole_v0's)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <linea/cuda.hpp>

#include "ab_common.hpp"
#include "chunk_grad16_v0.hpp"

using namespace linea;
using T = bf16;
#define CK(x) linea::cuda_detail::check((x), #x)
namespace bwd = linea::cuda_detail::bwd;

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
  static_assert(erases, "cg16_ab: the erasing rules (delta, gated_delta)");
  const std::size_t nk = B * T_ * H * K, nv = B * T_ * HV * V, ns = B * T_ * HV;
  T *q = random_tensor(nk, 1, fill::normal), *k = random_tensor(nk, 2, fill::normal),
    *v = random_tensor(nv, 3, fill::normal), *g = random_tensor(ns, 4, extreme ? fill::extreme_log : fill::logsigmoid),
    *beta = random_tensor(ns, 6, extreme ? fill::sigmoid2 : fill::sigmoid), *d_o = random_tensor(nv, 9, fill::normal);
  arguments<T, float> a;
  a.q = contiguous<4>(static_cast<const T*>(q), {B, T_, H, K});
  a.k = contiguous<4>(static_cast<const T*>(k), {B, T_, H, K});
  a.v = contiguous<4>(static_cast<const T*>(v), {B, T_, HV, V});
  a.qk_l2norm = true;
  if constexpr (reads(Rule::inputs, input::g)) a.g = contiguous<3>(static_cast<const T*>(g), {B, T_, HV});
  a.beta = contiguous<3>(static_cast<const T*>(beta), {B, T_, HV});
  T *dq = dalloc<T>(nk), *dk = dalloc<T>(nk), *dv = dalloc<T>(nv), *dg = dalloc<T>(ns), *dbeta = dalloc<T>(ns);
  gradients<T, float> gr{.d_o = contiguous<4>(static_cast<const T*>(d_o), {B, T_, HV, V}),
                         .dq = contiguous<4>(dq, {B, T_, H, K}),
                         .dk = contiguous<4>(dk, {B, T_, H, K}),
                         .dv = contiguous<4>(dv, {B, T_, HV, V})};
  if (a.g.ptr) gr.dg = contiguous<3>(dg, {B, T_, HV});
  gr.dbeta = contiguous<3>(dbeta, {B, T_, HV});

  const std::size_t bytes = cuda::backward_workspace_size<Rule>(a);
  unsigned char* ws = dalloc<unsigned char>(bytes);
  cuda::launch l;
  l.workspace = ws, l.workspace_bytes = bytes;
  const auto lib = [&] { linea::backward<Rule, read::identity, backend::cuda>(a, gr, l); };

  // The workspace as the library's call lays it out (backward.hpp's run)
  const problem p = reference::validate_backward<Rule, read::identity>(a, gr);
  arguments<T, float> fa = a;
  fa.o = {}, fa.final_state = {}, fa.residual = {};
  const cuda_detail::kernel_args<T> ka = cuda_detail::make_kernel_args(fa, p);
  const bwd::scratch_layout lay = bwd::layout_scratch<Rule, read::identity>(a);
  const bwd::work wk = bwd::plan_work(p, lay.plan, ws);
  const std::size_t tokens = std::size_t(B * T_);
  const bwd::input_grads<T> og{gr.dq, gr.dk, gr.dg, gr.dbeta, {}, {}, {}};
  constexpr bwd::precision P = bwd::precision_for<T>;
  const dim3 grid{unsigned(wk.chunks), unsigned(wk.HV)};
  constexpr std::size_t sh = bwd::grad16_shape::bytes;
  static_assert(sh == bwd::v0cg::grad16_shape::bytes, "cg16_ab: the same shared memory both ways");

  // phase 4's kernels before chunk_grad16 (phases.hpp's grad_phase): they also restore chunk_grad16's inputs
  const auto inter16 = [&] {
    using ish = bwd::inter_shape<bwd::inter_terms>;
    const unsigned ctas = unsigned(wk.chunks * wk.HV * bwd::inter_jobs<erases>(int((K + ish::tile - 1) / ish::tile)));
    bwd::inter_grad_kernel<erases, bwd::inter_terms, decays && bwd::hdh_in_inter><<<ctas, ish::threads>>>(wk);
    bwd::ut_grad_launch<decays>(wk, 0);
  };
  const auto launch = [&](auto kern) {
    CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(sh)));
    CK(cudaFuncSetAttribute(kern, cudaFuncAttributePreferredSharedMemoryCarveout, int(cudaSharedmemCarveoutMaxShared)));
    kern<<<grid, bwd::threads, sh>>>(wk, gr.dv);
    CK(cudaGetLastError());
  };
  const auto cg_v0 = [&] { launch(bwd::v0cg::chunk_grad16_kernel<erases, decays, T>); };
  const auto cg_lib = [&] { launch(bwd::chunk_grad16_kernel<erases, decays, T>); };
  // (options: Pairs, TileKeys, EarlyDq, SkipZeroSteps, TransN, TransM; the library's: the first two, SkipZeroSteps
  // and TransN)
  const auto cg_no_pairs = [&] { launch(bwd::chunk_grad16_kernel<erases, decays, T, false, true, false, true, true, false>); };
  const auto cg_no_tilekeys = [&] { launch(bwd::chunk_grad16_kernel<erases, decays, T, true, false, false, true, true, false>); };
  const auto cg_earlydq = [&] { launch(bwd::chunk_grad16_kernel<erases, decays, T, true, true, true, true, true, false>); };
  const auto cg_no_skip = [&] { launch(bwd::chunk_grad16_kernel<erases, decays, T, true, true, false, false, true, false>); };
  const auto cg_no_transn = [&] { launch(bwd::chunk_grad16_kernel<erases, decays, T, true, true, false, true, false, false>); };
  const auto cg_transm = [&] { launch(bwd::chunk_grad16_kernel<erases, decays, T, true, true, false, true, true, true>); };
  const auto whole_v0 = [&] {  // backward.hpp's run (chunk_phases) with v0 as chunk_grad16
    bwd::inputs_kernel<Rule, T><<<unsigned(tokens), bwd::threads>>>(ka, gr.d_o, wk);
    bwd::prep_phase<erases, false, false, P, T>(wk, 0, {});
    bwd::state_phases<erases, false, P, T>(wk, a.initial_state, gr.d_final_state, gr.d_initial_state, true, true, 0);
    inter16();
    cg_v0();
    bwd::input_adjoint_kernel<T><<<unsigned(tokens), bwd::threads>>>(ka, wk, og);
    CK(cudaGetLastError());
  };

  const auto outputs = [&] {
    std::vector<copy> o;
    o.push_back(keep(wk.dq, tokens * HV * K));
    o.push_back(keep(wk.dk, tokens * HV * K));
    o.push_back(keep(wk.dlog_alpha, tokens * HV));
    o.push_back(keep(wk.derase, tokens * HV));
    o.push_back(keep(dv, nv));
    return o;
  };
  const char* names[] = {"ws_dq", "ws_dk", "ws_dlog_alpha", "ws_derase", "dv"};
  const auto finals = [&] {  // the whole backward's outputs
    std::vector<copy> o;
    o.push_back(keep(dq, nk));
    o.push_back(keep(dk, nk));
    o.push_back(keep(dv, nv));
    if (a.g.ptr) o.push_back(keep(dg, ns));
    o.push_back(keep(dbeta, ns));
    return o;
  };
  const char* final_names[] = {"dq", "dk", "dv", decays ? "dg" : "dbeta", "dbeta"};
  const auto free_all = [](std::vector<copy>& o) {
    for (const copy& c : o) CK(cudaFree(c.p));
  };
  const auto clear = [&] {  // (so that a skipped write shows)
    CK(cudaMemset(dq, 0, nk * sizeof(T)));
    CK(cudaMemset(dk, 0, nk * sizeof(T)));
    CK(cudaMemset(dv, 0, nv * sizeof(T)));
    CK(cudaMemset(dbeta, 0, ns * sizeof(T)));
    if (a.g.ptr) CK(cudaMemset(dg, 0, ns * sizeof(T)));
  };
  std::printf("{\"rule\":\"%s\",\"B\":%ld,\"T\":%ld,\"H\":%ld,\"HV\":%ld,\"K\":%ld,\"V\":%ld,\"extreme\":%d",
              rule_name<Rule>::value, long(B), long(T_), long(H), long(HV), long(K), long(V), int(extreme));
  // the whole backward: the library's call (first: it writes the chunk table into the workspace, which the chains
  // below reuse) against the chain with v0
  lib();
  CK(cudaDeviceSynchronize());
  auto f_lib = finals();
  clear();
  whole_v0();
  CK(cudaDeviceSynchronize());
  auto f_v0 = finals();
  double fw = 0;
  std::printf(",\"bwd_lib_vs_v0\":{");
  for (std::size_t i = 0; i < f_lib.size(); ++i) {
    const double d = distance(f_lib[i], f_v0[i]);
    fw = std::max(fw, std::isfinite(d) ? d : 1e30);
    std::printf("%s\"%s\":%.3g", i ? "," : "", final_names[i], d);
  }
  std::printf("},\"bwd_lib_vs_v0_worst\":%.3g", fw);
  free_all(f_v0), free_all(f_lib);
  // chunk_grad16's outputs, each variant against v0 (the workspace of the library's call: phases 0-3 done)
  inter16();
  cg_v0();
  CK(cudaDeviceSynchronize());
  auto o_v0 = outputs();
  const auto variant = [&](const char* name, auto&& cg) {
    CK(cudaMemset(dv, 0, nv * sizeof(T)));
    inter16();
    cg();
    CK(cudaDeviceSynchronize());
    auto o = outputs();
    double worst = 0;
    std::printf(",\"%s_vs_v0\":{", name);
    for (std::size_t i = 0; i < o.size(); ++i) {
      const double d = distance(o[i], o_v0[i]);
      worst = std::max(worst, std::isfinite(d) ? d : 1e30);
      std::printf("%s\"%s\":%.3g", i ? "," : "", names[i], d);
    }
    std::printf("},\"%s_vs_v0_worst\":%.3g", name, worst);
    free_all(o);
  };
  variant("v0_again", cg_v0);  // (run-to-run: shared-memory atomics' order)
  variant("lib", cg_lib);
  variant("no_pairs", cg_no_pairs);
  variant("no_tilekeys", cg_no_tilekeys);
  variant("earlydq", cg_earlydq);
  variant("no_skip", cg_no_skip);
  variant("no_transn", cg_no_transn);
  variant("transm", cg_transm);
  free_all(o_v0);
  if (once) {  // one launch each (ncu)
    inter16();
    cg_lib();
    inter16();
    cg_v0();
    CK(cudaDeviceSynchronize());
  } else if (timed) {
    inter16();
    double t[8] = {1e30, 1e30, 1e30, 1e30, 1e30, 1e30, 1e30, 1e30};
    for (int r = 0; r < 3; ++r) {
      t[0] = std::min(t[0], time_ms(cg_v0, 5, 5)), t[1] = std::min(t[1], time_ms(cg_lib, 5, 5));
      t[2] = std::min(t[2], time_ms(cg_no_pairs, 5, 5)), t[3] = std::min(t[3], time_ms(cg_no_tilekeys, 5, 5));
      t[4] = std::min(t[4], time_ms(cg_earlydq, 5, 5)), t[5] = std::min(t[5], time_ms(cg_no_skip, 5, 5));
      t[6] = std::min(t[6], time_ms(cg_no_transn, 5, 5)), t[7] = std::min(t[7], time_ms(cg_transm, 5, 5));
    }
    std::printf(",\"cg_v0_ms\":%.3f,\"cg_lib_ms\":%.3f,\"cg_no_pairs_ms\":%.3f,\"cg_no_tilekeys_ms\":%.3f,"
                "\"cg_earlydq_ms\":%.3f,\"cg_no_skip_ms\":%.3f,\"cg_no_transn_ms\":%.3f,\"cg_transm_ms\":%.3f,"
                "\"cg_speedup\":%.3f",
                t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[0] / t[1]);
    double b_v0 = 1e30, b_lib = 1e30;
    for (int r = 0; r < 3; ++r) b_v0 = std::min(b_v0, time_ms(whole_v0, 3, 3)), b_lib = std::min(b_lib, time_ms(lib, 3, 3));
    std::printf(",\"bwd_v0_ms\":%.3f,\"bwd_lib_ms\":%.3f,\"bwd_speedup\":%.3f", b_v0, b_lib, b_v0 / b_lib);
  }
  std::printf("}\n");
  std::fflush(stdout);
  for (void* x : {(void*)q, (void*)k, (void*)v, (void*)g, (void*)beta, (void*)d_o, (void*)dq, (void*)dk, (void*)dv,
                  (void*)dg, (void*)dbeta, (void*)ws})
    CK(cudaFree(x));
}

}  // namespace

int main(int argc, char** argv) {
  bool check = false, once = false, long_too = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--check")) check = true;
    if (!std::strcmp(argv[i], "--once")) once = true;
    if (!std::strcmp(argv[i], "--long")) long_too = true;
  }
  try {
    if (once) {
      ab<gated_delta>(8, 4096, 16, 16, 128, 128, false, true);
      return 0;
    }
    const auto each = [&]<class Rule>() {
      if (check) {
        ab<Rule>(2, 150, 2, 4, 64, 96, false, false);   // partial last chunk, K, V < 128, GVA
        ab<Rule>(1, 130, 1, 1, 128, 128, false, false);  // a 2-token last chunk
        ab<Rule>(1, 100, 1, 1, 37, 45, false, false);    // K, V odd: no float2 pairs
        ab<Rule>(3, 127, 1, 1, 64, 64, false, false);    // 381 tokens: 4-byte aligned workspace slots
        ab<Rule>(2, 150, 2, 4, 64, 96, false, false, true);  // SPEC §6's extreme gates, β ≤ 2
        ab<Rule>(1, 100, 1, 1, 37, 45, false, false, true);
        ab<Rule>(2, 90, 1, 2, 100, 72, false, false);
        return;
      }
      ab<Rule>(8, 4096, 16, 16, 128, 128, true, false);
      if (long_too) ab<Rule>(1, 32768, 16, 16, 128, 128, true, false);
    };
    each.template operator()<gated_delta>();
    each.template operator()<delta>();
  } catch (const std::exception& e) {
    std::printf("error: %s\n", e.what());
    return 1;
  }
  return 0;
}
