// bench/cuda/add16_ab.cu — issue #14's A/B of the additive fast path (backward/add16_phases.hpp), in one process:
// linear_attn (additive) and simple_gla, bf16, H = HV = 16, K = V = 128, inputs as bench_cuda.cu's --backward
// (q normal, k unit rows, v, dO normal, log α = logsigmoid(normal); no L2 norm in kernel); per shape:
//   fwd_ms                 linea::chunkwise (the forward, for the ratio)
//   old_ms / new_ms        linea::backward with the fast path through phases 0 and 5 (add16_direct_enabled false:
//                          addbwd16's path) / reading and writing the caller's tensors (true: io17's direct path),
//                          interleaved rounds, median and best; gen_ms: phases 1–4 (add16_enabled false), once
//   p0 / fwd / rev / grad / p5 _ms   the old path's launches one at a time (phase 0, the two state passes, the
//                          per-chunk kernel, phase 5), as backward.hpp's run makes them; dfwd / drev / dgrad _ms the
//                          direct path's three
//   d_<x>                  ‖new − old‖ / ‖old‖ of every output (dq, dk, dv, dg)
// Build (linked with the additive and simple_gla instance units, as bench/cuda/device_call.sh builds them):
//   nvcc $FLAGS -DLINEA_CUDA_EXTERN_INSTANCES -DLINEA_CUDA_EXTERN_BACKWARD_PHASES -c bench/cuda/add16_ab.cu
//   add16_ab            8×4096 and 1×32768;     add16_ab --check   small odd shapes (distances only, for sanitizers;
//                       two under SPEC §6's extreme gates);    add16_ab --profile   simple_gla 8×4096 once (ncu)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
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
  const auto run_gen = [&] {
    bwd::add16_enabled = false, linea::backward<Rule, read::identity, backend::cuda>(a, g_old, l);
    bwd::add16_enabled = true;
  };
  const auto run_old = [&] {
    bwd::add16_direct_enabled = false, linea::backward<Rule, read::identity, backend::cuda>(a, g_old, l);
  };
  const auto run_new = [&] {
    bwd::add16_direct_enabled = true, linea::backward<Rule, read::identity, backend::cuda>(a, g_new, l);
  };
  run_old();
  run_new();
  CK(cudaDeviceSynchronize());
  const std::size_t n[4] = {nk, nk, nv, ns};
  double d[4];
  for (int i = 0; i < 4; ++i) d[i] = i == 3 && !decays ? 0 : distance(out[1][i], out[0][i], n[i]);
  std::printf("{\"kind\":\"add16_ab\",\"rule\":\"%s\",\"B\":%ld,\"T\":%ld,\"H\":%ld,\"K\":%ld,\"V\":%ld,"
              "\"extreme\":%d,\"d_dq\":%.3e,\"d_dk\":%.3e,\"d_dv\":%.3e,\"d_dg\":%.3e",
              rule_name<Rule>::value, long(B), long(T_), long(H), long(K), long(V), int(extreme), d[0], d[1], d[2], d[3]);
  if (timed) {
    std::vector<double> to, tn;
    for (int r = 0; r < 5; ++r) to.push_back(time_ms(run_old, 2, 3)), tn.push_back(time_ms(run_new, 2, 3));
    std::sort(to.begin(), to.end()), std::sort(tn.begin(), tn.end());
    const double gen = time_ms(run_gen, 1, 3);
    run_new();
    // the new path's launches one at a time, on the workspace the library's call laid out (its chunk table)
    const problem p = reference::validate_backward<Rule, read::identity>(a, g_new);
    const cuda_detail::kernel_args<T> ka = cuda_detail::make_kernel_args(a, p);
    const bwd::scratch_layout lay = bwd::layout_scratch<Rule, read::identity>(a);
    const bwd::work wk = bwd::plan_work(p, lay.plan, ws);
    const bwd::add16_states st = bwd::add16_states_of(wk);
    const bwd::add16_io<float> io_ws = bwd::add16_workspace_io(wk);
    const bwd::add16_io<T> io_direct = bwd::add16_direct_io<decays>(a, g_new);
    const unsigned tokens = unsigned(B * T_);
    const bwd::input_grads<T> og{g_new.dq, g_new.dk, g_new.dg, {}, {}, {}, {}};
    const view<const float, 4> none{};
    const view<float, 4> none_w{};
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const bool wide = 4 * B * H >= 3 * sms;  // add16_phases' choice: 128 columns, else 16 (32 between: not here)
    const auto states = [&](bool reverse, const auto& io) {
      if (wide) reverse ? bwd::add16_state_launch<128, true, decays>(wk, io, none, none_w, st, 0)
                        : bwd::add16_state_launch<128, false, decays>(wk, io, none, none_w, st, 0);
      else reverse ? bwd::add16_state_launch<16, true, decays>(wk, io, none, none_w, st, 0)
                   : bwd::add16_state_launch<16, false, decays>(wk, io, none, none_w, st, 0);
    };
    const auto grad = [&](const auto& io) {
      using X = typename std::remove_cvref_t<decltype(io.dq)>::element;
      constexpr auto kern = bwd::add16_grad_kernel<decays, T, X>;
      CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bwd::add16_grad_shape::bytes)));
      kern<<<dim3{unsigned(wk.chunks), unsigned(wk.HV)}, bwd::threads, bwd::add16_grad_shape::bytes>>>(wk, io, st, g_new.dv);
    };
    const double p0 = time_ms([&] { bwd::inputs_kernel<Rule, T><<<tokens, bwd::threads>>>(ka, g_new.d_o, wk); }, 3, 5);
    const double sf = time_ms([&] { states(false, io_ws); }, 3, 5), sr = time_ms([&] { states(true, io_ws); }, 3, 5);
    const double gk = time_ms([&] { grad(io_ws); }, 3, 5);
    const double dsf = time_ms([&] { states(false, io_direct); }, 3, 5);
    const double dsr = time_ms([&] { states(true, io_direct); }, 3, 5);
    const double dgk = time_ms([&] { grad(io_direct); }, 3, 5);
    const double p5 = time_ms([&] { bwd::input_adjoint_kernel<T><<<tokens, bwd::threads>>>(ka, wk, og); }, 3, 5);
    CK(cudaGetLastError());
    std::printf(",\"fwd_ms\":%.4f,\"old_ms\":%.4f,\"new_ms\":%.4f,\"old_best_ms\":%.4f,\"new_best_ms\":%.4f,"
                "\"p0_ms\":%.4f,\"fwd_states_ms\":%.4f,\"rev_states_ms\":%.4f,\"grad_ms\":%.4f,\"p5_ms\":%.4f,"
                "\"dfwd_states_ms\":%.4f,\"drev_states_ms\":%.4f,\"dgrad_ms\":%.4f,\"gen_ms\":%.4f,"
                "\"new_over_fwd\":%.2f,\"speedup\":%.2f,\"fwd_plus_new_ms\":%.4f",
                fwd, to[2], tn[2], to[0], tn[0], p0, sf, sr, gk, p5, dsf, dsr, dgk, gen, tn[2] / fwd, to[2] / tn[2],
                fwd + tn[2]);
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
    if (profile) {  // one old and one new backward of simple_gla 8×4096 (for ncu -k regex:add16)
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
