// bench/cuda/s13_ab.cu — session 13's two per-key backward changes against the library's default kernels, on the
// same workspace, in one process (not built by CMake; for the prepared H200 call, bench/cuda/README.md "Session 13"):
//
//   passes   the state passes of kda, gdn2, gla with bf16 inputs: the 3xTF32 passes the library runs by default
//            (staged_state_passes.hpp, "old") against the 16-bit passes' PerKey form (state_passes16.hpp single-stage,
//            state_passes16_ring.hpp; LINEA_BWD_STATE16_PER_KEY's), at each width: the relative distance of h, U_new
//            (erasing), dU, dh, dS_0 (a random S_0 and dL/dS_T), and each pass timed alone
//   phase 4  per_key_grad_kernel as the library launches it by default ("old") against LINEA_BWD_PER_KEY_INTER's
//            launches (inter_grad_kernel<…, PerKey>, ut_grad_launch<false>, per_key_grad_kernel<…, Inter>) on the
//            workspace the old passes left: the distance of the workspace's dq, dk (per value head), d log α, de and
//            of the caller's dv (db, dw for gdn2), and each form timed
//
// Both forms are instantiated here directly (they are templates), so one binary built WITHOUT the switches compares
// them; `lib` (linea::backward, the switches as built) is timed beside.
//   nvcc -std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -Iinclude \
//        -isystem /usr/include/eigen3 bench/cuda/s13_ab.cu -o s13_ab
//   s13_ab            kda, gdn2, gla at 8×4096 (and 1×32768 with --long), H = 16, K = V = 128, ordinary gates
//   s13_ab --check    small odd shapes (partial chunks, K, V < 128 and not multiples of 16, a GVA group, 18 heads for
//                     the 32-column ring), ordinary and SPEC §6's extreme gates: distances only (for a sanitizer)
// One JSON line per (rule, shape). Expected: the passes' distances at the 16-bit passes' precision (≈ 2⁻¹⁶ a product:
// state14 measured ≤ 1.5e-5 for the scalar rules), phase 4's ≤ ~1e-5 (inter_grad_kernel's hi/lo bf16 products
// against 3xTF32: grad13 measured ≤ 1.9e-6 for the scalar rules), bf16 outputs ≤ ~1e-4 (rounding flips).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include <linea/cuda.hpp>

#include "ab_common.hpp"

using namespace linea;
using T = bf16;
#define CK(x) linea::cuda_detail::check((x), #x)
namespace bwd = linea::cuda_detail::bwd;

namespace {

using linea_bench::dalloc;
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
    if (kind == fill::extreme_log) x = -20.f * linea_bench::hash_uniform(i, seed + 99);
    if (kind == fill::sigmoid2) x = 2.f / (1.f + expf(-z));
    p[i] = linea::cuda_detail::from_float<T>(x);
  }
}
T* random_tensor(std::size_t n, std::uint32_t seed, fill kind) {
  T* p = dalloc<T>(n);
  fill_kernel<<<1024, 256>>>(p, std::int64_t(n), seed, kind);
  return p;
}
float* random_floats(std::size_t n, std::uint32_t seed) {
  float* p = dalloc<float>(n);
  linea_bench::fill_state<<<1024, 256>>>(p, std::int64_t(n), seed);
  return p;
}

// A device tensor kept as float32 (a snapshot to compare against).
template <class X>
__global__ void to_float(const X* p, float* out, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    out[i] = static_cast<float>(p[i]);
}
struct snapshot {
  float* p = nullptr;
  std::size_t n = 0;
};
template <class X>
snapshot keep(const X* p, std::size_t n) {
  snapshot s{dalloc<float>(n), n};
  if (p && n) to_float<<<1024, 256>>>(p, s.p, std::int64_t(n));
  return s;
}
double distance(const snapshot& a, const snapshot& b) { return relative_distance(a.p, b.p, a.n); }
void release(std::vector<snapshot>& v) {
  for (snapshot& s : v) CK(cudaFree(s.p));
  v.clear();
}

template <int N>
using ic = std::integral_constant<int, N>;

template <class Rule>
void ab(const char* label, index_t B, index_t T_, index_t H, index_t HV, index_t K, index_t V, bool extreme,
        bool timed) {
  constexpr bool erases = Rule::update::kind == update_kind::erase;
  constexpr bool channels = bwd::channel_gated<Rule>;
  static_assert(Rule::decay::kind == decay_kind::per_key, "s13_ab: the per-key rules");
  constexpr auto P = bwd::precision_for<T>;
  const std::size_t nk = B * T_ * H * K, nv = B * T_ * HV * V, ns = B * T_ * HV, nkv = B * T_ * HV * K;
  T *q = random_tensor(nk, 1, fill::normal), *k = random_tensor(nk, 2, fill::normal),
    *v = random_tensor(nv, 3, fill::normal), *gk = random_tensor(nkv, 5, extreme ? fill::extreme_log : fill::logsigmoid),
    *beta = random_tensor(ns, 6, extreme ? fill::sigmoid2 : fill::sigmoid), *b = random_tensor(nkv, 7, fill::sigmoid),
    *w = random_tensor(nv, 8, fill::sigmoid), *d_o = random_tensor(nv, 9, fill::normal);
  arguments<T, float> a;
  a.q = contiguous<4>(static_cast<const T*>(q), {B, T_, H, K});
  a.k = contiguous<4>(static_cast<const T*>(k), {B, T_, H, K});
  a.v = contiguous<4>(static_cast<const T*>(v), {B, T_, HV, V});
  a.qk_l2norm = true;
  a.gk = contiguous<4>(static_cast<const T*>(gk), {B, T_, HV, K});
  if constexpr (reads(Rule::inputs, input::beta)) a.beta = contiguous<3>(static_cast<const T*>(beta), {B, T_, HV});
  if constexpr (reads(Rule::inputs, input::b | input::w)) {
    a.b = contiguous<4>(static_cast<const T*>(b), {B, T_, HV, K});
    a.w = contiguous<4>(static_cast<const T*>(w), {B, T_, HV, V});
  }
  T *dq = dalloc<T>(nk), *dk = dalloc<T>(nk), *dv = dalloc<T>(nv), *dgk = dalloc<T>(nkv), *dbeta = dalloc<T>(ns),
    *db = dalloc<T>(nkv), *dw = dalloc<T>(nv);
  gradients<T, float> gr{.d_o = contiguous<4>(static_cast<const T*>(d_o), {B, T_, HV, V}),
                         .dq = contiguous<4>(dq, {B, T_, H, K}),
                         .dk = contiguous<4>(dk, {B, T_, H, K}),
                         .dv = contiguous<4>(dv, {B, T_, HV, V}),
                         .dgk = contiguous<4>(dgk, {B, T_, HV, K})};
  if (a.beta.ptr) gr.dbeta = contiguous<3>(dbeta, {B, T_, HV});
  if (a.b.ptr) gr.db = contiguous<4>(db, {B, T_, HV, K}), gr.dw = contiguous<4>(dw, {B, T_, HV, V});

  // The library's workspace and plan (with the switches as built: the hand-over scratch below is allocated here
  // either way), its chunk tables copied in as backward.hpp's run does.
  const std::size_t bytes = cuda::backward_workspace_size<Rule>(a, gr);
  unsigned char* ws = dalloc<unsigned char>(bytes);
  cuda::launch l;
  l.workspace = ws, l.workspace_bytes = bytes;
  const problem p = reference::validate_backward<Rule, read::identity>(a, gr);
  arguments<T, float> fa = a;
  fa.o = {}, fa.final_state = {}, fa.residual = {};
  const cuda_detail::kernel_args<T> ka = cuda_detail::make_kernel_args(fa, p);
  const bwd::scratch_layout lay = bwd::layout_scratch<Rule, read::identity>(a, &gr);
  bwd::work wk = bwd::plan_work(p, lay.plan, ws);
  if (!lay.plan.chunks.empty())
    CK(cudaMemcpy(ws + lay.plan.chunk_at, lay.plan.chunks.data(), lay.plan.chunks.size() * sizeof(bwd::chunk_info),
                  cudaMemcpyHostToDevice));
  if (!lay.plan.seqs.empty())
    CK(cudaMemcpy(ws + lay.plan.seq_at, lay.plan.seqs.data(), lay.plan.seqs.size() * sizeof(bwd::seq_chunks),
                  cudaMemcpyHostToDevice));
  const std::size_t pc = std::size_t(wk.chunks) * std::size_t(HV), tokens = std::size_t(B * T_);
  // phase 4's hand-over scratch (plan.hpp carves it only with LINEA_BWD_PER_KEY_INTER)
  if (!wk.dP_inter) {
    wk.dW_inter = dalloc<float>(pc * bwd::CL * K), wk.dP_inter = dalloc<float>(pc * bwd::CL * bwd::CL);
    if (erases) wk.dBv_inter = dalloc<float>(pc * bwd::CL * V), wk.M_inter = dalloc<float>(pc * bwd::CL * bwd::CL);
  }
  bwd::channel_gates cg;
  if constexpr (channels) {
    float* gate_b = reinterpret_cast<float*>(ws + lay.gates_at);
    float* gate_w = gate_b + bwd::slot_round(tokens * std::size_t(HV) * std::size_t(K));
    cg.b = gate_b, cg.w = gate_w;
  }
  const bwd::channel_grads<T> cd{gr.db, gr.dw};
  const auto phases01 = [&] {
    bwd::inputs_kernel<Rule, T><<<unsigned(tokens), bwd::threads>>>(ka, gr.d_o, wk);
    if constexpr (channels)
      bwd::channel_gates_kernel<T><<<unsigned(tokens), bwd::threads>>>(a.b, a.w, wk, const_cast<float*>(cg.b),
                                                                         const_cast<float*>(cg.w));
    bwd::prep_phase<erases, true, channels, P, T>(wk, 0, cg);
    CK(cudaGetLastError());
  };

  std::printf("{\"label\":\"%s\",\"rule\":\"%s\",\"B\":%ld,\"T\":%ld,\"H\":%ld,\"HV\":%ld,\"K\":%ld,\"V\":%ld,"
              "\"extreme\":%d",
              label, rule_name<Rule>::value, long(B), long(T_), long(H), long(HV), long(K), long(V), int(extreme));

  // ---- the state passes ----------------------------------------------------------------------------------------
  const std::size_t nst = std::size_t(wk.N) * std::size_t(HV) * std::size_t(K) * std::size_t(V);
  float *s0 = random_floats(nst, 41), *dst = random_floats(nst, 42), *ds0 = dalloc<float>(nst);
  const view<const float, 4> S0v = contiguous<4>(static_cast<const float*>(s0), {wk.N, HV, K, V}),
                             dSTv = contiguous<4>(static_cast<const float*>(dst), {wk.N, HV, K, V});
  const view<float, 4> dS0v = contiguous<4>(ds0, {wk.N, HV, K, V});
  const auto old_f = [&] { bwd::state_phases<erases, true, P>(wk, S0v, dSTv, dS0v, true, false, 0); };
  const auto old_r = [&] { bwd::state_phases<erases, true, P>(wk, S0v, dSTv, dS0v, false, true, 0); };
  constexpr int terms = bwd::state16_terms;
  const auto single_f = [&](auto bv) {
    return [&] { bwd::forward_pass<bwd::state16_form<decltype(bv)::value, erases, terms, true>>(wk, S0v, 0); };
  };
  const auto single_r = [&](auto bv) {
    return [&] { bwd::reverse_pass<bwd::state16_form<decltype(bv)::value, erases, terms, true>>(wk, dSTv, dS0v, 0); };
  };
  const auto ring_f = [&](auto bv) {
    return [&] { bwd::forward_pass<bwd::state16_ring_form<decltype(bv)::value, erases, terms, true, true>>(wk, S0v, 0); };
  };
  const auto ring_r = [&](auto bv) {
    return [&] {
      bwd::reverse_pass<bwd::state16_ring_form<decltype(bv)::value, erases, terms, true, true>>(wk, dSTv, dS0v, 0);
    };
  };
  const char* names[] = {"h", "U_new", "dU", "dh", "dS0"};
  const auto states = [&] {
    std::vector<snapshot> o;
    o.push_back(keep(wk.h, pc * K * V));
    o.push_back(keep(erases ? wk.U_new : nullptr, erases ? pc * bwd::CL * V : 0));
    o.push_back(keep(wk.dU, pc * bwd::CL * V));
    o.push_back(keep(wk.dh, pc * K * V));
    o.push_back(keep(ds0, nst));
    return o;
  };
  const auto run_states = [&](auto fw, auto rv) {
    CK(cudaMemset(wk.h, 0, pc * K * V * sizeof(float)));
    CK(cudaMemset(ds0, 0, nst * sizeof(float)));
    phases01();  // (phase 1 again: the reverse pass overwrites its s Pᵀ dO and Y)
    fw();
    rv();
    CK(cudaDeviceSynchronize());
    return states();
  };
  std::vector<snapshot> ref = run_states(old_f, old_r);
  double worst = 0;
  const auto compare = [&](const char* name, auto fw, auto rv) {
    std::vector<snapshot> s = run_states(fw, rv);
    std::printf(",\"passes_%s\":{", name);
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (i == 1 && !erases) continue;
      const double d = distance(s[i], ref[i]);
      worst = std::max(worst, std::isfinite(d) ? d : 1e30);
      std::printf("%s\"%s\":%.3g", i ? "," : "", names[i], d);
    }
    std::printf("}");
    release(s);
  };
  compare("single128", single_f(ic<128>{}), single_r(ic<128>{}));
  compare("ring16", ring_f(ic<16>{}), ring_r(ic<16>{}));
  compare("ring32", ring_f(ic<32>{}), ring_r(ic<32>{}));
  if constexpr (!erases) compare("single16_32", single_f(ic<16>{}), single_r(ic<32>{}));
  std::printf(",\"passes_worst\":%.3g", worst);
  release(ref);

  // ---- phase 4 (on the workspace of the old passes, without S_0 / dL/dS_T: as the library's call here) ------------
  const view<const float, 4> none{};
  const view<float, 4> none_w{};
  CK(cudaMemset(wk.h, 0, pc * K * V * sizeof(float)));
  phases01();
  bwd::state_phases<erases, true, P>(wk, none, none, none_w, true, true, 0);
  const dim3 grid{unsigned(wk.chunks), unsigned(HV)};
  const auto grad_old = [&] {  // per_key_grad_kernel as the library launches it by default
    constexpr auto kern = bwd::per_key_grad_kernel<erases, T, channels, false, P>;
    constexpr std::size_t sh = bwd::per_key_grad_shape<erases>::bytes;
    CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(sh)));
    kern<<<grid, bwd::threads, sh>>>(wk, gr.dv, cg, cd, {});
    CK(cudaGetLastError());
  };
  const auto grad_inter = [&] {  // LINEA_BWD_PER_KEY_INTER's launches (phases.hpp's grad_phase)
    using ish = bwd::inter_shape<bwd::inter_terms>;
    const unsigned ctas = unsigned(pc * std::size_t(bwd::inter_jobs<erases>(int((K + ish::tile - 1) / ish::tile))));
    bwd::inter_grad_kernel<erases, bwd::inter_terms, false, true><<<ctas, ish::threads>>>(wk);
    if constexpr (erases) bwd::ut_grad_launch<false>(wk, 0);
    constexpr auto kern = bwd::per_key_grad_kernel<erases, T, channels, false, P, true>;
    constexpr std::size_t sh = bwd::per_key_grad_shape<erases>::bytes;
    CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(sh)));
    kern<<<grid, bwd::threads, sh>>>(wk, gr.dv, cg, cd, {});
    CK(cudaGetLastError());
  };
  const char* gnames[] = {"dq", "dk", "dlog_alpha", "de", "dv", "db", "dw"};
  const auto grads = [&] {
    CK(cudaDeviceSynchronize());
    std::vector<snapshot> o;
    o.push_back(keep(wk.dq, tokens * HV * K));
    o.push_back(keep(wk.dk, tokens * HV * K));
    o.push_back(keep(wk.dlog_alpha_k, tokens * HV * K));
    o.push_back(keep(erases && !channels ? wk.derase : nullptr, erases && !channels ? tokens * HV : 0));
    o.push_back(keep(dv, nv));
    o.push_back(keep(channels ? db : nullptr, channels ? nkv : 0));
    o.push_back(keep(channels ? dw : nullptr, channels ? nv : 0));
    return o;
  };
  const auto poison = [&] {  // every output NaN first: an element the new form leaves unwritten shows
    CK(cudaMemset(wk.dq, 0xff, tokens * HV * K * sizeof(float)));
    CK(cudaMemset(wk.dk, 0xff, tokens * HV * K * sizeof(float)));
    CK(cudaMemset(wk.dlog_alpha_k, 0xff, tokens * HV * K * sizeof(float)));
    CK(cudaMemset(dv, 0xff, nv * sizeof(T)));
  };
  poison();
  grad_old();
  std::vector<snapshot> g_old = grads();
  poison();
  grad_inter();
  std::vector<snapshot> g_new = grads();
  std::printf(",\"grad_inter\":{");
  double gworst = 0;
  bool first = true;
  for (std::size_t i = 0; i < g_old.size(); ++i) {
    if (!g_old[i].n) continue;
    const double d = distance(g_new[i], g_old[i]);
    gworst = std::max(gworst, std::isfinite(d) ? d : 1e30);
    std::printf("%s\"%s\":%.3g", first ? "" : ",", gnames[i], d);
    first = false;
  }
  std::printf("},\"grad_worst\":%.3g", gworst);
  release(g_old), release(g_new);

  if (timed) {  // interleaved: each pass form, phase 4 both ways, and the library's whole call
    const auto lib = [&] { linea::backward<Rule, read::identity, backend::cuda>(a, gr, l); };
    double t[12] = {};
    for (int round = 0; round < 3; ++round) {
      const double x[12] = {time_ms(old_f, 5, 5),         time_ms(single_f(ic<128>{}), 5, 5),
                            time_ms(ring_f(ic<16>{}), 5, 5), time_ms(ring_f(ic<32>{}), 5, 5),
                            time_ms(old_r, 5, 5),         time_ms(single_r(ic<128>{}), 5, 5),
                            time_ms(ring_r(ic<16>{}), 5, 5), time_ms(ring_r(ic<32>{}), 5, 5),
                            time_ms(grad_old, 5, 5),      time_ms(grad_inter, 5, 5),
                            time_ms(lib, 3, 5),           0};
      for (int i = 0; i < 11; ++i) t[i] = round == 0 ? x[i] : std::min(t[i], x[i]);
    }
    std::printf(",\"fwd_ms\":{\"old\":%.3f,\"single128\":%.3f,\"ring16\":%.3f,\"ring32\":%.3f},"
                "\"rev_ms\":{\"old\":%.3f,\"single128\":%.3f,\"ring16\":%.3f,\"ring32\":%.3f},"
                "\"grad_ms\":{\"old\":%.3f,\"inter\":%.3f},\"lib_ms\":%.3f",
                t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], t[10]);
  }
  std::printf("}\n");
  std::fflush(stdout);
  for (void* x : {static_cast<void*>(q), static_cast<void*>(k), static_cast<void*>(v), static_cast<void*>(gk),
                  static_cast<void*>(beta), static_cast<void*>(b), static_cast<void*>(w), static_cast<void*>(d_o),
                  static_cast<void*>(dq), static_cast<void*>(dk), static_cast<void*>(dv), static_cast<void*>(dgk),
                  static_cast<void*>(dbeta), static_cast<void*>(db), static_cast<void*>(dw), static_cast<void*>(ws),
                  static_cast<void*>(s0), static_cast<void*>(dst), static_cast<void*>(ds0)})
    CK(cudaFree(x));
}

template <class Rule>
void shapes(bool check, bool long_too) {
  if (check) {
    for (const bool extreme : {false, true}) {
      ab<Rule>("2x150 K64 V96 GVA", 2, 150, 1, 2, 64, 96, extreme, false);
      ab<Rule>("3x127 K37 V45", 3, 127, 1, 1, 37, 45, extreme, false);
      ab<Rule>("9x300 K128 V128 (18 heads)", 9, 300, 1, 2, 128, 128, extreme, false);
      ab<Rule>("1x130 K128 V128", 1, 130, 1, 1, 128, 128, extreme, false);
    }
    return;
  }
  ab<Rule>("8x4096", 8, 4096, 16, 16, 128, 128, false, true);
  if (long_too) ab<Rule>("1x32768", 1, 32768, 16, 16, 128, 128, false, true);
}

}  // namespace

int main(int argc, char** argv) {
  bool check = false, long_too = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--check")) check = true;
    if (!std::strcmp(argv[i], "--long")) long_too = true;
  }
  try {
    shapes<kda>(check, long_too);
    shapes<gdn2>(check, long_too);
    shapes<gla>(check, long_too);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "s13_ab: %s\n", e.what());
    return 1;
  }
  return 0;
}
