// bench/cuda/add16_ab.cu — issue #14's A/B of the additive fast path's direct kernels (backward/add16_phases.hpp), in
// one process: linear_attn (additive) and simple_gla, bf16, H = HV = 16, K = V = 128, inputs as bench_cuda.cu's
// --backward (q normal, k unit rows, v, dO normal, log α = logsigmoid(normal); no L2 norm in kernel). add18: "old" is
// main fe6906c's three kernels (add16_ab_v0.hpp, bwd::v0: 128-column state tiles where (sequence, head) pairs keep ¾
// of the SMs busy, else 32, else 16), launched on the workspace the library's call laid out; "new" the library's
// linea::backward (direct path: its three kernels). Per shape:
//   fwd_ms                 linea::chunkwise (the forward, for the ratio)
//   old_ms / new_ms        old: v0's three launches; new: linea::backward — interleaved rounds, median and best;
//                          newk_ms: the library's three kernels launched as old's are (no host work)
//   v0_fwd / v0_rev / v0_grad _ms   v0's launches one at a time; fwd_<BV> / rev_<BV> _ms the library's state passes at
//                          two widths (128 and 64 columns at 8×4096; 32 and 16 at 1×32768); grad_ms its per-chunk kernel
//   d_<x>                  ‖new − old‖ / ‖old‖ of every output (dq, dk, dv, dg)
// Build (linked with the additive and simple_gla instance units, as bench/cuda/device_call.sh builds them):
//   nvcc $FLAGS -DLINEA_CUDA_EXTERN_INSTANCES -DLINEA_CUDA_EXTERN_BACKWARD_PHASES -c bench/cuda/add16_ab.cu
//   add16_ab            8×4096 and 1×32768;     add16_ab --check   small odd shapes, the library at each state-tile
//                       width (its choice, 64, 32, 16) against v0 (distances only, for the sanitizers; two under SPEC
//                       §6's extreme gates);    add16_ab --profile   simple_gla 8×4096 once, old and new (ncu)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include <linea/cuda.hpp>

#include "ab_common.hpp"
#include "add16_ab_v0.hpp"

using namespace linea;
using T = bf16;
#define CK(x) linea::cuda_detail::check((x), #x)
namespace bwd = linea::cuda_detail::bwd;

namespace {

using linea_bench::dalloc;
using linea_bench::relative_distance;
using linea_bench::time_ms;

enum class fill { normal, logsigmoid, extreme };  // extreme: log α uniform in [−20, 0] (SPEC §6)
__global__ void fill_kernel(T* p, std::int64_t n, std::uint32_t seed, fill kind) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float z = linea_bench::hash_normal(i, seed);
    const float x = kind == fill::logsigmoid ? -log1pf(expf(-z)) : kind == fill::extreme ? -20.f * linea_bench::hash_uniform(i, seed) : z;
    p[i] = linea::cuda_detail::from_float<T>(x);
  }
}
__global__ void unit_rows(T* p, std::int64_t rows, int D) {  // one warp a row
  const std::int64_t r = blockIdx.x * static_cast<std::int64_t>(blockDim.x / 32) + threadIdx.x / 32;
  if (r >= rows) return;
  float ss = 0;
  for (int i = threadIdx.x % 32; i < D; i += 32) ss += float(p[r * D + i]) * float(p[r * D + i]);
  for (int o = 16; o; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  for (int i = threadIdx.x % 32; i < D; i += 32) p[r * D + i] = linea::cuda_detail::from_float<T>(float(p[r * D + i]) * rsqrtf(ss));
}
T* random_tensor(std::size_t n, std::uint32_t seed, fill kind) {
  T* p = dalloc<T>(n);
  fill_kernel<<<2048, 256>>>(p, std::int64_t(n), seed, kind);
  CK(cudaGetLastError());
  return p;
}
double distance(const T* a, const T* b, std::size_t n) { return relative_distance(a, b, n); }

template <class Rule>
void ab(index_t B, index_t T_, index_t H, index_t K, index_t V, bool timed, bool extreme = false) {
  constexpr bool decays = Rule::decay::kind == decay_kind::scalar;
  const std::size_t nk = B * T_ * H * K, nv = B * T_ * H * V, ns = B * T_ * H;
  T *q = random_tensor(nk, 1, fill::normal), *k = random_tensor(nk, 2, fill::normal),
    *v = random_tensor(nv, 3, fill::normal), *g = random_tensor(ns, 4, extreme ? fill::extreme : fill::logsigmoid),
    *d_o = random_tensor(nv, 9, fill::normal);
  unit_rows<<<unsigned((B * T_ * H + 7) / 8), 256>>>(k, B * T_ * H, int(K));
  T* o = dalloc<T>(nv);
  float* state = dalloc<float>(B * H * K * V);
  arguments<T, float> a;
  a.q = contiguous<4>(static_cast<const T*>(q), {B, T_, H, K});
  a.k = contiguous<4>(static_cast<const T*>(k), {B, T_, H, K});
  a.v = contiguous<4>(static_cast<const T*>(v), {B, T_, H, V});
  if constexpr (decays) a.g = contiguous<3>(static_cast<const T*>(g), {B, T_, H});
  a.o = contiguous<4>(o, {B, T_, H, V});
  a.final_state = contiguous<4>(state, {B, H, K, V});
  const double fwd = timed ? time_ms([&] { linea::chunkwise<Rule, read::identity, backend::cuda>(a); }, 5, 5) : 0;
  a.o = {}, a.final_state = {};

  // two sets of outputs: old, new
  T* out[2][4];
  for (auto& s : out) s[0] = dalloc<T>(nk), s[1] = dalloc<T>(nk), s[2] = dalloc<T>(nv), s[3] = dalloc<T>(ns);
  const auto grads = [&](int s) {
    gradients<T, float> gr{.d_o = contiguous<4>(static_cast<const T*>(d_o), {B, T_, H, V}),
                           .dq = contiguous<4>(out[s][0], {B, T_, H, K}),
                           .dk = contiguous<4>(out[s][1], {B, T_, H, K}),
                           .dv = contiguous<4>(out[s][2], {B, T_, H, V})};
    if (a.g.ptr) gr.dg = contiguous<3>(out[s][3], {B, T_, H});
    return gr;
  };
  const gradients<T, float> g_old = grads(0), g_new = grads(1);
  const std::size_t bytes = cuda::backward_workspace_size<Rule>(a);
  unsigned char* ws = dalloc<unsigned char>(bytes);
  cuda::launch l;
  l.workspace = ws, l.workspace_bytes = bytes;
  const auto run_new = [&] { linea::backward<Rule, read::identity, backend::cuda>(a, g_new, l); };
  run_new();  // (lays out the workspace: its chunk table)
  CK(cudaDeviceSynchronize());
  const problem p = reference::validate_backward<Rule, read::identity>(a, g_new);
  const bwd::scratch_layout lay = bwd::layout_scratch<Rule, read::identity>(a);
  const bwd::work wk = bwd::plan_work(p, lay.plan, ws);
  const bwd::add16_states st = bwd::add16_states_of(wk);
  const bwd::v0::add16_states st0 = bwd::v0::add16_states_of(wk);
  const bwd::add16_io<T> io_old = bwd::add16_direct_io<decays>(a, g_old), io_new = bwd::add16_direct_io<decays>(a, g_new);
  const view<const float, 4> none{};
  const view<float, 4> none_w{};
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const auto busy = [&](index_t bv) { return 4 * B * H * ((V + bv - 1) / bv) >= 3 * sms; };
  const int bv0 = busy(128) ? 128 : busy(32) ? 32 : 16;  // main's choice (add16_phases.hpp at fe6906c)
  const auto v0_states = [&](bool reverse) {
    const auto go = [&](auto bvc, auto rc) {
      constexpr int BV = decltype(bvc)::value;
      constexpr bool R = decltype(rc)::value;
      constexpr auto kern = bwd::v0::add16_state_kernel<BV, R, decays, T>;
      constexpr std::size_t sb = bwd::v0::add16_state_shape<BV>::bytes;
      CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(sb)));
      kern<<<dim3{unsigned((V + BV - 1) / BV), unsigned(wk.HV), unsigned(wk.N)}, bwd::threads, sb>>>(wk, io_old, none,
                                                                                                     none_w, st0);
    };
    using F = std::false_type;
    using Tr = std::true_type;
    if (bv0 == 128) reverse ? go(std::integral_constant<int, 128>{}, Tr{}) : go(std::integral_constant<int, 128>{}, F{});
    else if (bv0 == 32) reverse ? go(std::integral_constant<int, 32>{}, Tr{}) : go(std::integral_constant<int, 32>{}, F{});
    else reverse ? go(std::integral_constant<int, 16>{}, Tr{}) : go(std::integral_constant<int, 16>{}, F{});
  };
  const auto v0_grad = [&] {
    constexpr auto kern = bwd::v0::add16_grad_kernel<decays, T, T>;
    CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bwd::v0::add16_grad_shape::bytes)));
    kern<<<dim3{unsigned(wk.chunks), unsigned(wk.HV)}, bwd::threads, bwd::v0::add16_grad_shape::bytes>>>(wk, io_old, st0,
                                                                                                       g_old.dv);
  };
  const auto run_old = [&] { v0_states(false), v0_states(true), v0_grad(); };
  // the library's state passes at a width; its per-chunk kernel
  const auto new_states = [&](int bv, bool reverse) {
    const auto go = [&](auto bvc) {
      constexpr int BV = decltype(bvc)::value;
      reverse ? bwd::add16_state_launch<BV, true, decays>(wk, io_new, none, none_w, st, {}, 0)
              : bwd::add16_state_launch<BV, false, decays>(wk, io_new, none, none_w, st, {}, 0);
    };
    if (bv == 128) go(std::integral_constant<int, 128>{});
    else if (bv == 64) go(std::integral_constant<int, 64>{});
    else if (bv == 32) go(std::integral_constant<int, 32>{});
    else go(std::integral_constant<int, 16>{});
  };
  const auto new_grad = [&] {
    constexpr auto kern = bwd::add16_grad_kernel<decays, T, T>;
    CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bwd::add16_grad_shape::bytes)));
    kern<<<dim3{unsigned(wk.chunks), unsigned(wk.HV)}, bwd::threads, bwd::add16_grad_shape::bytes>>>(wk, io_new, st, g_new.dv);
  };
  const int bv_lib = bwd::add16_state_columns ? bwd::add16_state_columns : busy(64) ? 64 : busy(32) ? 32 : 16;
  const auto run_newk = [&] { new_states(bv_lib, false), new_states(bv_lib, true), new_grad(); };
  const std::size_t n[4] = {nk, nk, nv, ns};
  const auto distances = [&](double (&d)[4]) {
    run_old();
    run_new();
    CK(cudaDeviceSynchronize());
    for (int i = 0; i < 4; ++i) d[i] = i == 3 && !decays ? 0 : distance(out[1][i], out[0][i], n[i]);
  };
  double d[4];
  distances(d);
  std::printf("{\"kind\":\"add16_ab\",\"rule\":\"%s\",\"B\":%ld,\"T\":%ld,\"H\":%ld,\"K\":%ld,\"V\":%ld,"
              "\"extreme\":%d,\"old_columns\":%d,\"new_columns\":%d,\"d_dq\":%.3e,\"d_dk\":%.3e,\"d_dv\":%.3e,\"d_dg\":%.3e",
              rule_name<Rule>::value, long(B), long(T_), long(H), long(K), long(V), int(extreme), bv0, bv_lib, d[0], d[1],
              d[2], d[3]);
  if (!timed) {  // the library at each forced width against v0 (the sanitizers run every width's kernels)
    for (const int c : {64, 32, 16}) {
      bwd::add16_state_columns = c;
      distances(d);
      std::printf(",\"d%d\":[%.3e,%.3e,%.3e,%.3e]", c, d[0], d[1], d[2], d[3]);
    }
    bwd::add16_state_columns = 0;
  }
  if (timed) {
    std::vector<double> to, tn, tk;
    for (int r = 0; r < 5; ++r)
      to.push_back(time_ms(run_old, 2, 3)), tn.push_back(time_ms(run_new, 2, 3)), tk.push_back(time_ms(run_newk, 2, 3));
    std::sort(to.begin(), to.end()), std::sort(tn.begin(), tn.end()), std::sort(tk.begin(), tk.end());
    const double of = time_ms([&] { v0_states(false); }, 3, 5), orv = time_ms([&] { v0_states(true); }, 3, 5),
                 og = time_ms(v0_grad, 3, 5), ng = time_ms(new_grad, 3, 5);
    const int w1 = B * H >= 64 ? 128 : 32, w2 = B * H >= 64 ? 64 : 16;
    const double f1 = time_ms([&] { new_states(w1, false); }, 3, 5), r1 = time_ms([&] { new_states(w1, true); }, 3, 5);
    const double f2 = time_ms([&] { new_states(w2, false); }, 3, 5), r2 = time_ms([&] { new_states(w2, true); }, 3, 5);
    CK(cudaGetLastError());
    std::printf(",\"fwd_ms\":%.4f,\"old_ms\":%.4f,\"new_ms\":%.4f,\"newk_ms\":%.4f,\"old_best_ms\":%.4f,"
                "\"new_best_ms\":%.4f,\"v0_fwd_ms\":%.4f,\"v0_rev_ms\":%.4f,\"v0_grad_ms\":%.4f,\"grad_ms\":%.4f,"
                "\"fwd_%d_ms\":%.4f,\"rev_%d_ms\":%.4f,\"fwd_%d_ms\":%.4f,\"rev_%d_ms\":%.4f,"
                "\"new_over_fwd\":%.2f,\"speedup\":%.2f,\"fwd_plus_new_ms\":%.4f",
                fwd, to[2], tn[2], tk[2], to[0], tn[0], of, orv, og, ng, w1, f1, w1, r1, w2, f2, w2, r2, tn[2] / fwd,
                to[2] / tn[2], fwd + tn[2]);
  }
  std::printf("}\n");
  std::fflush(stdout);
  CK(cudaDeviceSynchronize());
  for (void* x : {static_cast<void*>(q), static_cast<void*>(k), static_cast<void*>(v), static_cast<void*>(g),
                  static_cast<void*>(d_o), static_cast<void*>(o), static_cast<void*>(state), static_cast<void*>(ws)})
    CK(cudaFree(x));
  for (auto& s : out)
    for (T* x : s) CK(cudaFree(x));
}

}  // namespace

int main(int argc, char** argv) {
  const bool check = argc > 1 && !std::strcmp(argv[1], "--check");
  const bool profile = argc > 1 && !std::strcmp(argv[1], "--profile");
  try {
    if (profile) {  // one old and one new backward of simple_gla 8×4096 (for ncu -k regex:add16), then the library
                    // at each forced width
      ab<simple_gla>(8, 4096, 16, 128, 128, false);
      return 0;
    }
    if (check) {
      ab<additive>(2, 150, 2, 48, 40, false);
      ab<simple_gla>(2, 150, 2, 48, 40, false);
      ab<simple_gla>(40, 70, 4, 128, 128, false);
      ab<simple_gla>(1, 300, 2, 32, 32, false, true);
      ab<simple_gla>(2, 1000, 4, 128, 128, false, true);
      ab<additive>(3, 700, 2, 100, 72, false);
      return 0;
    }
    for (const auto& [B, T_] : {std::pair<index_t, index_t>{8, 4096}, {1, 32768}}) {
      ab<additive>(B, T_, 16, 128, 128, true);
      ab<simple_gla>(B, T_, 16, 128, 128, true);
    }
  } catch (const std::exception& e) {
    std::printf("{\"kind\":\"error\",\"what\":\"%s\"}\n", e.what());
    return 1;
  }
  return 0;
}
