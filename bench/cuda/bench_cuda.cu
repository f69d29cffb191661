// bench/cuda/bench_cuda.cu — CUDA-event timings of linea's CUDA backend at the benchmark shapes below.
//
//   chunkwise forward, every rule, identity and CCQ read: B=8, T=4096, H=HV=16, K=V=128, bf16 in, fp32 states
//   decode step, every rule: B=256 rows, H=HV=16, K=V=128, bf16 in, fp32 state pool updated in place; and
//   gated_delta through a permuted pool, state_indices given as a host span and on the device (cuda::launch)
//   --backward: forward (chunkwise) and backward of the rules with a CUDA backward, B=8 T=4096, B=2 T=16384 and
//               B=1 T=32768 (issue #15's shapes; FlashQLA is timed at all three),
//               H=HV=16, K=V=128, bf16 in (dq, dk, dv, dg, dβ written; fewer repeats: the backward is slow);
//               LINEA_BENCH_DIRECT_AB=1 adds the backward through phase 5 against without it (backward.hpp's
//               direct_grads_ok: delta, gated_delta, gla, kda)
//
// Each figure is the median over repeats of (the time of `calls` back-to-back calls) / calls, after warm-up;
// two input sets alternate, and each call streams far more than the 60 MB L2. Prints one JSON object per line
// (bench/cuda/table.py joins them with fla's timings) and the device's measured copy bandwidth.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <linea/cuda.hpp>

#include "ab_common.hpp"

using namespace linea;
using T = bf16;

#define CK(x) linea::cuda_detail::check((x), #x)

namespace {

// Deterministic pseudo-random fills on the device (no host round trip for 100 MB tensors).
enum class fill { normal, logsigmoid, sigmoid };
__global__ void fill_kernel(T* p, std::int64_t n, std::uint32_t seed, fill kind) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float z = linea_bench::hash_normal(i, seed);  // N(0, 1)
    float x = z;
    if (kind == fill::logsigmoid) x = -log1pf(expf(-z));
    if (kind == fill::sigmoid) x = 1.f / (1.f + expf(-z));
    p[i] = linea::cuda_detail::from_float<T>(x);
  }
}

template <class X>
X* dalloc(std::size_t n) {
  X* p = nullptr;
  CK(cudaMalloc(&p, n * sizeof(X)));
  return p;
}
T* random_tensor(std::size_t n, std::uint32_t seed, fill kind) {
  T* p = dalloc<T>(n);
  fill_kernel<<<2048, 256>>>(p, static_cast<std::int64_t>(n), seed, kind);
  CK(cudaGetLastError());
  return p;
}

struct inputs {
  T *q, *k, *v, *g, *gk, *beta, *b, *w, *lam;
};
inputs make_inputs(index_t B, index_t T_, index_t H, index_t K, index_t V, std::uint32_t seed) {
  const std::size_t nk = B * T_ * H * K, nv = B * T_ * H * V, ns = B * T_ * H;
  inputs x;
  x.q = random_tensor(nk, seed + 1, fill::normal);
  x.k = random_tensor(nk, seed + 2, fill::normal);
  linea_bench::normalize_rows<<<static_cast<unsigned>((B * T_ * H + 7) / 8), 256>>>(x.k, B * T_ * H, static_cast<int>(K));
  x.v = random_tensor(nv, seed + 3, fill::normal);
  x.g = random_tensor(ns, seed + 4, fill::logsigmoid);
  x.gk = random_tensor(nk, seed + 5, fill::logsigmoid);
  x.beta = random_tensor(ns, seed + 6, fill::sigmoid);
  x.b = random_tensor(nk, seed + 7, fill::sigmoid);
  x.w = random_tensor(nv, seed + 8, fill::sigmoid);
  x.lam = random_tensor(ns, seed + 9, fill::sigmoid);
  CK(cudaDeviceSynchronize());
  return x;
}

template <class Rule>
arguments<T, float> make_args(const inputs& x, index_t B, index_t T_, index_t H, index_t K, index_t V, T* o,
                              float* state) {
  arguments<T, float> a;
  a.q = contiguous<4>(static_cast<const T*>(x.q), {B, T_, H, K});
  a.k = contiguous<4>(static_cast<const T*>(x.k), {B, T_, H, K});
  a.v = contiguous<4>(static_cast<const T*>(x.v), {B, T_, H, V});
  if constexpr (linea::reads(Rule::inputs, linea::input::g)) a.g = contiguous<3>(static_cast<const T*>(x.g), {B, T_, H});
  if constexpr (linea::reads(Rule::inputs, linea::input::gk)) a.gk = contiguous<4>(static_cast<const T*>(x.gk), {B, T_, H, K});
  if constexpr (linea::reads(Rule::inputs, linea::input::beta)) a.beta = contiguous<3>(static_cast<const T*>(x.beta), {B, T_, H});
  if constexpr (linea::reads(Rule::inputs, linea::input::b | linea::input::w)) {
    a.b = contiguous<4>(static_cast<const T*>(x.b), {B, T_, H, K});
    a.w = contiguous<4>(static_cast<const T*>(x.w), {B, T_, H, V});
  }
  a.o = contiguous<4>(o, {B, T_, H, V});
  a.final_state = contiguous<4>(state, {B, H, K, V});
  return a;
}

// Median over `repeats` of the mean time of `calls` back-to-back calls of f(i), in ms. `host_us` receives the
// host's own time per call (enqueueing, validation): when it exceeds the device time, the host is the limit.
double host_us = 0;
// --warm-ms N: the call runs for at least N ms before it is timed, so the board is in the state of a long run.
// Without it a row is a burst of ~75 calls (~25 ms at 8×4096) after the previous row. A program that runs the call
// longer (python_overhead.py's rows) can meet another clock: on 2026-12-02 one H200 reached its 700 W limit at
// 1845–1965 MHz under linear_attn's sustained Python rows (bench/README.md, "linear_attn against bench/cuda").
double warm_ms = 0;
template <class F>
double time_ms(F&& f, int calls = 10, int repeats = 7, int warmup = 3) {
  for (int i = 0; i < warmup; ++i) f(i);
  const auto w0 = std::chrono::steady_clock::now();
  for (int i = 0; std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - w0).count() < warm_ms;
       ++i) {
    f(i);
    if (i % 8 == 7) CK(cudaDeviceSynchronize());  // the host's clock kept in step with the device's work
  }
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<double> t, h;
  for (int r = 0; r < repeats; ++r) {
    CK(cudaEventRecord(e0));
    const auto h0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) f(i);
    h.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - h0).count() / calls);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms / calls);
  }
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  std::sort(t.begin(), t.end());
  std::sort(h.begin(), h.end());
  host_us = h[h.size() / 2];
  return t[t.size() / 2];
}

// Device-to-device copy bandwidth, bytes read + written.
double copy_tbps() {
  const std::size_t n = std::size_t(1) << 31;  // 2 GiB
  char* a = dalloc<char>(n);
  char* b = dalloc<char>(n);
  CK(cudaMemset(a, 1, n));
  const double ms = time_ms([&](int) { CK(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice)); }, 5, 7, 2);
  CK(cudaFree(a));
  CK(cudaFree(b));
  return 2.0 * n / (ms * 1e-3) / 1e12;
}

// Matrix FLOPs of one chunkwise forward (chunk C = 64), per token and head: the products of SPEC §4.
template <class Rule>
double chunk_flops_per_token(double C, double K, double V) {
  const bool erases = linea::erases<Rule>;
  double f = 2 * C * K + 2 * K * V + 2 * C * V + 2 * K * V;  // Q Kᵀ, (QΓ) S, P U, state update
  if (erases) f += 2 * C * K + 2 * K * V + C * V;             // A = bK Kᵀ, Z = W − X S, the solve
  return f;
}

// V = 64 and qk_l2norm (q and k normalised in the kernel) as options; the inputs are made for V = 128 (a V = 64
// run reads the first 64 columns of each value row: strides of 128).
template <class Rule, class Read>
void bench_chunkwise(const inputs* sets, double copy, index_t V = 128, bool l2norm = false) {
  const index_t B = 8, T_ = 4096, H = 16, K = 128;
  T* o = dalloc<T>(B * T_ * H * V);
  float* state = dalloc<float>(B * H * K * V);
  float *C = nullptr, *m = nullptr, *z = nullptr;
  arguments<T, float> a[2] = {make_args<Rule>(sets[0], B, T_, H, K, V, o, state),
                              make_args<Rule>(sets[1], B, T_, H, K, V, o, state)};
  for (int s = 0; s < 2; ++s) {
    a[s].qk_l2norm = l2norm;
    if (V != 128) {
      a[s].v = strided<4>(static_cast<const T*>(sets[s].v), {B, T_, H, V}, {T_ * H * 128, H * 128, 128, 1});
      if (a[s].w.ptr) a[s].w = strided<4>(static_cast<const T*>(sets[s].w), {B, T_, H, V}, {T_ * H * 128, H * 128, 128, 1});
    }
  }
  constexpr bool ccq = !Read::is_identity;
  if constexpr (ccq) {
    C = dalloc<float>(B * H * K * K), m = dalloc<float>(B * H * K), z = dalloc<float>(B * H);
    for (int s = 0; s < 2; ++s) {
      a[s].ccq.lambda = contiguous<3>(static_cast<const T*>(sets[s].lam), {B, T_, H});
      a[s].ccq.C = contiguous<4>(C, {B, H, K, K});
      a[s].ccq.m = contiguous<3>(m, {B, H, K});
      a[s].ccq.z = contiguous<2>(z, {B, H});
    }
  }
  const double ms = time_ms([&](int i) { linea::chunkwise<Rule, Read, backend::cuda>(a[i & 1]); });
  // Bytes: every input read once, o and the final state written once.
  const double tok = double(B) * T_ * H;
  double bytes = tok * (2 * K + V + V) * 2 + double(B) * H * K * V * 4;
  if (linea::reads(Rule::inputs, linea::input::g)) bytes += tok * 2;
  if (linea::reads(Rule::inputs, linea::input::gk)) bytes += tok * K * 2;
  if (linea::reads(Rule::inputs, linea::input::beta)) bytes += tok * 2;
  if (linea::reads(Rule::inputs, linea::input::b | linea::input::w)) bytes += tok * (K + V) * 2;
  double flops = tok * chunk_flops_per_token<Rule>(64, K, V);
  if (ccq) flops += tok * chunk_flops_per_token<additive>(64, K, K), bytes += tok * 2 + double(B) * H * K * K * 4;
  std::printf(
      "{\"kind\":\"chunkwise\",\"rule\":\"%s\",\"read\":\"%s\",\"V\":%ld,\"qk_l2norm\":%s,\"ms\":%.4f,\"tbps\":%.3f,"
      "\"copy_frac\":%.3f,\"tflops\":%.1f,\"host_us\":%.1f}\n",
      rule_name<Rule>::value, ccq ? "ccq" : "identity", long(V), l2norm ? "true" : "false", ms, bytes / (ms * 1e-3) / 1e12,
      bytes / (ms * 1e-3) / 1e12 / copy, flops / (ms * 1e-3) / 1e12, host_us);
  std::fflush(stdout);
  CK(cudaFree(o));
  CK(cudaFree(state));
  if (C) CK(cudaFree(C)), CK(cudaFree(m)), CK(cudaFree(z));
}

// How the decode step gets its state rows: row b = state b, or a permutation given as a host span (copied into
// the workspace every call) or as a device array (cuda::launch::state_indices: nothing copied); device_in_order:
// indices b -> b on the device, which separates the cost of the indices from that of a permuted pool.
// device_swap: rows b and b ^ 1 swap states (a permutation that keeps the rows of neighbouring blocks neighbours);
// device_pairs: pairs of rows permuted as `device` permutes rows, the two rows of a pair kept in order (at B = 256,
// H = 16, K = V = 128 a row is 1 MB: each pair of rows fills one 2 MB page of cudaMalloc's).
enum class indices { none, host, device, device_in_order, device_swap, device_pairs };
const char* indices_name(indices i) {
  const char* names[] = {"none", "host", "device", "device_in_order", "device_swap", "device_pairs"};
  return names[static_cast<int>(i)];
}

template <class Rule>
void bench_decode(const inputs* sets, double copy, indices mode) {
  const index_t B = 256, H = 16, K = 128, V = 128;
  T* o = dalloc<T>(B * H * V);
  float* pool = dalloc<float>(B * H * K * V);
  CK(cudaMemset(pool, 0, B * H * K * V * sizeof(float)));
  std::vector<std::int32_t> idx(B);
  for (index_t b = 0; b < B; ++b)
    idx[b] = static_cast<std::int32_t>(mode == indices::device_in_order ? b : (b * 37) % B);  // a permutation
  std::int32_t* device_idx = dalloc<std::int32_t>(B);
  CK(cudaMemcpy(device_idx, idx.data(), B * sizeof(std::int32_t), cudaMemcpyHostToDevice));
  arguments<T, float> a[2];
  for (int s = 0; s < 2; ++s) {
    a[s] = make_args<Rule>(sets[s], B, 1, H, K, V, o, pool);
    a[s].initial_state = contiguous<4>(static_cast<const float*>(pool), {B, H, K, V});  // in place
    if (mode == indices::host) a[s].state_indices = idx;
  }
  cuda::launch l;
  if (mode == indices::device || mode == indices::device_in_order) l.state_indices = {device_idx, static_cast<std::size_t>(B)};
  const double ms = time_ms([&](int i) { linea::step<Rule, read::identity, backend::cuda>(a[i & 1], l); }, 20, 9, 5);
  const double bytes = 2.0 * B * H * K * V * 4;  // the state pool read and written; token inputs are < 1%
  std::printf(
      "{\"kind\":\"decode\",\"rule\":\"%s\",\"indices\":\"%s\",\"ms\":%.4f,\"tbps\":%.3f,\"copy_frac\":%.3f,"
      "\"host_us\":%.1f}\n",
      rule_name<Rule>::value, indices_name(mode), ms, bytes / (ms * 1e-3) / 1e12, bytes / (ms * 1e-3) / 1e12 / copy,
      host_us);
  std::fflush(stdout);
  CK(cudaFree(o));
  CK(cudaFree(pool));
  CK(cudaFree(device_idx));
}

// The decode kernels, launched directly (`launch(k, rows)`; the library's choice is in launch.hpp), row b = state b
// or through a device-side permutation.
template <class Rule, class Launch>
void bench_decode_variant(const char* variant, const inputs* sets, double copy, indices mode, Launch&& launch) {
  const index_t B = 256, H = 16, K = 128, V = 128;
  T* o = dalloc<T>(B * H * V);
  float* pool = dalloc<float>(B * H * K * V);
  CK(cudaMemset(pool, 0, B * H * K * V * sizeof(float)));
  std::vector<std::int32_t> idx(B);
  for (index_t b = 0; b < B; ++b)
    idx[b] = static_cast<std::int32_t>(mode == indices::device        ? (b * 37) % B
                                       : mode == indices::device_swap  ? b ^ 1
                                       : mode == indices::device_pairs ? (b / 2 * 37) % (B / 2) * 2 + b % 2
                                                                       : b);
  std::int32_t* device_idx = dalloc<std::int32_t>(B);
  CK(cudaMemcpy(device_idx, idx.data(), B * sizeof(std::int32_t), cudaMemcpyHostToDevice));
  problem p;
  p.B = B, p.T = 1, p.H = H, p.HV = H, p.K = K, p.V = V, p.N = B, p.group = 1, p.scale = 1.0 / std::sqrt(double(K));
  cuda_detail::kernel_args<T> k[2];
  for (int s = 0; s < 2; ++s) {
    auto a = make_args<Rule>(sets[s], B, 1, H, K, V, o, pool);
    a.initial_state = contiguous<4>(static_cast<const float*>(pool), {B, H, K, V});
    k[s] = cuda_detail::make_kernel_args(a, p);
    if (mode != indices::none) k[s].state_indices = device_idx;
  }
  const double ms = time_ms([&](int i) { launch(k[i & 1], B); }, 20, 9, 5);
  const double bytes = 2.0 * B * H * K * V * 4;
  std::printf("{\"kind\":\"decode_variant\",\"rule\":\"%s\",\"variant\":\"%s\",\"indices\":\"%s\",\"ms\":%.4f,"
              "\"copy_frac\":%.3f}\n",
              rule_name<Rule>::value, variant, indices_name(mode), ms, bytes / (ms * 1e-3) / 1e12 / copy);
  std::fflush(stdout);
  CK(cudaFree(o));
  CK(cudaFree(pool));
  CK(cudaFree(device_idx));
}
// Every rule, row b = state b, through the permuted pool (device-side indices: issue #13's case), in order, with
// neighbours swapped and with pairs of rows permuted: the library's decode kernel launched directly, and the library's step (linea::step) beside it
// through the permuted pool. (The fourth session's pipelined kernel — the next tile staged in shared memory while a
// persistent block works on the current one — and a refactored copy of decode_kernel were measured here at dec5's
// commit 362d0c4: bench/cuda/README.md, 2026-12-02, dec5.)
void decode_variants(const inputs* sets, double copy) {
  const cuda_detail::exec x{};
  for (indices m : {indices::none, indices::device, indices::device_in_order, indices::device_swap, indices::device_pairs}) {
    all_rules::for_each([&]<class Rule>() {
      bench_decode_variant<Rule>("decode_kernel", sets, copy, m,
                                 [&](const auto& k, index_t B) { cuda_detail::launch_decode_k<Rule, T, 128>(k, B, x); });
      if (m == indices::device) bench_decode<Rule>(sets, copy, indices::device);
    });
  }
}

// Forward (chunkwise) then backward (dq, dk, dv and the gate gradients, from dL/do) at one shape.
template <class Rule>
void bench_backward(index_t B, index_t T_) {
  const index_t H = 16, K = 128, V = 128;
  const inputs x = make_inputs(B, T_, H, K, V, 500);
  T* o = dalloc<T>(B * T_ * H * V);
  float* state = dalloc<float>(B * H * K * V);
  arguments<T, float> a = make_args<Rule>(x, B, T_, H, K, V, o, state);
  const double fwd = time_ms([&](int) { linea::chunkwise<Rule, read::identity, backend::cuda>(a); }, 10, 5, 2);
  T* d_o = random_tensor(B * T_ * H * V, 600, fill::normal);
  T *dq = dalloc<T>(B * T_ * H * K), *dk = dalloc<T>(B * T_ * H * K), *dv = dalloc<T>(B * T_ * H * V);
  T *dg = dalloc<T>(B * T_ * H), *dbeta = dalloc<T>(B * T_ * H);
  gradients<T, float> g{.d_o = contiguous<4>(static_cast<const T*>(d_o), {B, T_, H, V}),
                        .dq = contiguous<4>(dq, {B, T_, H, K}),
                        .dk = contiguous<4>(dk, {B, T_, H, K}),
                        .dv = contiguous<4>(dv, {B, T_, H, V})};
  if (a.g.ptr) g.dg = contiguous<3>(dg, {B, T_, H});
  T* dgk = a.gk.ptr ? dalloc<T>(B * T_ * H * K) : nullptr;
  if (a.gk.ptr) g.dgk = contiguous<4>(dgk, {B, T_, H, K});
  if (a.beta.ptr) g.dbeta = contiguous<3>(dbeta, {B, T_, H});
  T* db = a.b.ptr ? dalloc<T>(B * T_ * H * K) : nullptr;  // (gdn2's channel gates)
  T* dw = a.w.ptr ? dalloc<T>(B * T_ * H * V) : nullptr;
  if (db) g.db = contiguous<4>(db, {B, T_, H, K});
  if (dw) g.dw = contiguous<4>(dw, {B, T_, H, V});
  a.o = {}, a.final_state = {};
  const double bwd = time_ms([&](int) { linea::backward<Rule, read::identity, backend::cuda>(a, g); }, 2, 3, 1);
  std::printf("{\"kind\":\"backward\",\"rule\":\"%s\",\"B\":%ld,\"T\":%ld,\"fwd_ms\":%.4f,\"bwd_ms\":%.4f,"
              "\"fwd_bwd_ms\":%.4f,\"bwd_over_fwd\":%.1f}\n",
              rule_name<Rule>::value, long(B), long(T_), fwd, bwd, fwd + bwd, bwd / fwd);
  std::fflush(stdout);
  // LINEA_BENCH_DIRECT_AB set: dq, dk, dg / dgk, dβ written by phase 4 (the library's default where direct_grads_ok)
  // against through phase 5 (direct_grads_enabled off), the same process, three interleaved rounds
  if (std::getenv("LINEA_BENCH_DIRECT_AB") && cuda_detail::bwd::direct_grads_ok<Rule, read::identity>(a)) {
    for (int round = 0; round < 3; ++round)
      for (const bool direct : {false, true}) {
        cuda_detail::bwd::direct_grads_enabled = direct;
        const double ms = time_ms([&](int) { linea::backward<Rule, read::identity, backend::cuda>(a, g); }, 2, 3, 1);
        std::printf("{\"kind\":\"direct_ab\",\"rule\":\"%s\",\"B\":%ld,\"T\":%ld,\"round\":%d,\"direct\":%d,"
                    "\"bwd_ms\":%.4f}\n",
                    rule_name<Rule>::value, long(B), long(T_), round, int(direct), ms);
        std::fflush(stdout);
      }
    cuda_detail::bwd::direct_grads_enabled = true;
  }
  for (T* p : {dgk, db, dw})
    if (p) CK(cudaFree(p));
  for (void* p : {static_cast<void*>(o), static_cast<void*>(state), static_cast<void*>(d_o), static_cast<void*>(dq),
                  static_cast<void*>(dk), static_cast<void*>(dv), static_cast<void*>(dg), static_cast<void*>(dbeta),
                  static_cast<void*>(x.q), static_cast<void*>(x.k), static_cast<void*>(x.v), static_cast<void*>(x.g),
                  static_cast<void*>(x.gk), static_cast<void*>(x.beta), static_cast<void*>(x.b), static_cast<void*>(x.w),
                  static_cast<void*>(x.lam)})
    CK(cudaFree(p));
}
// LINEA_BENCH_BACKWARD=<rule>:<B> (e.g. gated_delta_rule:8) runs that one only: one call for a profiler.
void all_backward() {
  const char* only = std::getenv("LINEA_BENCH_BACKWARD");
  const auto one = [&]<class Rule>(index_t B, index_t T_) {
    if (!only || std::string(rule_name<Rule>::value) + ":" + std::to_string(B) == only) bench_backward<Rule>(B, T_);
  };
  for (const auto& [B, T_] : {std::pair<index_t, index_t>{8, 4096}, {2, 16384}, {1, 32768}}) {
    one.template operator()<gated_delta>(B, T_);
    one.template operator()<delta>(B, T_);
    one.template operator()<simple_gla>(B, T_);
    one.template operator()<additive>(B, T_);
    one.template operator()<kda>(B, T_);
    one.template operator()<gdn2>(B, T_);
    one.template operator()<gla>(B, T_);
  }
}

// Every rule of linea's list (rules/list.hpp).
void all_chunkwise(const inputs* sets, double copy, bool ccq) {
  all_rules::for_each([&]<class Rule>() { bench_chunkwise<Rule, read::identity>(sets, copy); });
  if (ccq) all_rules::for_each([&]<class Rule>() { bench_chunkwise<Rule, read::ccq<read::uniform>>(sets, copy); });
}
void all_decode(const inputs* sets, double copy) {
  all_rules::for_each([&]<class Rule>() { bench_decode<Rule>(sets, copy, indices::none); });
}

}  // namespace

int main(int argc, char** argv) {
  bool ccq = true, chunk = true, decode = true, once = false, backward_only = false, variants = false, narrow = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--no-ccq")) ccq = false;
    if (!std::strcmp(argv[i], "--decode-only")) chunk = false;
    if (!std::strcmp(argv[i], "--chunk-only")) decode = false;
    if (!std::strcmp(argv[i], "--profile")) once = true;
    if (!std::strcmp(argv[i], "--decode-variants")) variants = true;  // the decode kernel through five index modes only
    if (!std::strcmp(argv[i], "--v128-only")) narrow = true;  // chunkwise: V = 128 only (no V = 64, no qk_l2norm rows)
    if (!std::strcmp(argv[i], "--warm-ms") && i + 1 < argc) warm_ms = std::atof(argv[++i]);  // time_ms above
    if (!std::strcmp(argv[i], "--backward")) backward_only = true;  // forward + backward only  // one gated_delta chunkwise call and one decode step, for ncu
  }
  try {
    cudaDeviceProp prop{};
    CK(cudaGetDeviceProperties(&prop, 0));
    const double copy = copy_tbps();
    std::printf("{\"kind\":\"device\",\"name\":\"%s\",\"sms\":%d,\"copy_tbps\":%.3f,\"warm_ms\":%g}\n", prop.name,
                prop.multiProcessorCount, copy, warm_ms);
    std::fflush(stdout);
    if (variants) {
      const inputs sets[2] = {make_inputs(256, 1, 16, 128, 128, 300), make_inputs(256, 1, 16, 128, 128, 400)};
      for (int round = 0; round < 3; ++round) {  // three rounds, interleaved: the spread between runs; copy each round
        const double c = round == 0 ? copy : copy_tbps();
        std::printf("{\"kind\":\"round\",\"round\":%d,\"copy_tbps\":%.3f}\n", round, c);
        decode_variants(sets, c);
      }
      return 0;
    }
    if (backward_only) {
      all_backward();
      return 0;
    }
    if (once) {
      const inputs sets[2] = {make_inputs(8, 4096, 16, 128, 128, 100), make_inputs(8, 4096, 16, 128, 128, 200)};
      const index_t B = 8, T_ = 4096, H = 16, K = 128, V = 128;
      T* o = dalloc<T>(B * T_ * H * V);
      float* state = dalloc<float>(B * H * K * V);
      auto a = make_args<gated_delta>(sets[0], B, T_, H, K, V, o, state);
      linea::chunkwise<gated_delta, read::identity, backend::cuda>(a);
      auto b = make_args<kda>(sets[0], B, T_, H, K, V, o, state);
      linea::chunkwise<kda, read::identity, backend::cuda>(b);
      CK(cudaDeviceSynchronize());
      const inputs d[2] = {make_inputs(256, 1, 16, 128, 128, 300), make_inputs(256, 1, 16, 128, 128, 400)};
      float* pool = dalloc<float>(256 * H * K * V);
      auto s = make_args<gated_delta>(d[0], 256, 1, H, K, V, o, pool);
      s.initial_state = contiguous<4>(static_cast<const float*>(pool), {256, H, K, V});
      linea::step<gated_delta, read::identity, backend::cuda>(s);
      CK(cudaDeviceSynchronize());
      return 0;
    }
    if (chunk) {
      const inputs sets[2] = {make_inputs(8, 4096, 16, 128, 128, 100), make_inputs(8, 4096, 16, 128, 128, 200)};
      all_chunkwise(sets, copy, ccq);
      // V = 64, and q, k normalised in the kernel (use_qk_l2norm_in_kernel)
      if (!narrow) all_rules::for_each([&]<class Rule>() { bench_chunkwise<Rule, read::identity>(sets, copy, 64); });
      if (!narrow) all_rules::for_each([&]<class Rule>() { bench_chunkwise<Rule, read::identity>(sets, copy, 128, true); });
    }
    if (decode) {
      const inputs sets[2] = {make_inputs(256, 1, 16, 128, 128, 300), make_inputs(256, 1, 16, 128, 128, 400)};
      all_decode(sets, copy);
      bench_decode<gated_delta>(sets, copy, indices::host);
      bench_decode<gated_delta>(sets, copy, indices::device);
      bench_decode<gated_delta>(sets, copy, indices::device_in_order);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cuda: %s\n", e.what());
    return 1;
  }
  return 0;
}
