// bench/cuda/sectors_ab.cu — pko2 (issue #15): the o strips of the scalar kernel (linear_attn, simple_gla; pass C of
// their segmented forward) and the delta kernel (delta, gated_delta: o and the residual) stored in full sectors
// (tiles::strip_store::sectors) against the old 4-byte pairs, through the library's own path (linea::chunkwise), in
// one process; and gla's 64-token kernel (perkey_chunk_kernel.hpp, which the library no longer launches) with both
// options launched directly. One rule a binary, built on its own (no extern instances: LINEA_STRIP_STORE_AB switches
// this unit's launches at run time, launch.hpp), so the five build in parallel:
//   nvcc -std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr \
//        -DLINEA_STRIP_STORE_AB -DSECTORS_AB_RULE=linea::delta -Iinclude -I<eigen3> bench/cuda/sectors_ab.cu -o ab_delta
//   ./ab_delta --check   old against new bit for bit over whole poisoned o, residual and final-state buffers, in six
//                        layouts (contiguous o + residual, head-first o, o one element off 16-byte alignment, o with
//                        column stride 2, V = 100 in rows of 104 + residual; 2×150 with an initial state: a partial
//                        last chunk), a 1×333 call without one, and a segmented call (1×700 in pieces of 128: pass C
//                        with initial states). gla: its library path (perkey_delta_kernel.hpp, which the switch
//                        leaves alone: an A/A control) and perkey_chunk_kernel launched directly with either option.
//                        A JSON line a case; rc 2 if any fails.
//   ./ab_delta           timings, bf16 H = 16 K = V = 128: 8×4096 and 1×32768 (the library's piece), old and new
//                        interleaved (9 rounds, the order alternating; each a median of 7 × 10 calls over two input
//                        sets); gla also perkey_chunk_kernel direct at 8×4096.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#ifndef LINEA_STRIP_STORE_AB
#error "build with -DLINEA_STRIP_STORE_AB"
#endif
#ifndef SECTORS_AB_RULE
#define SECTORS_AB_RULE linea::delta
#endif

#include <linea/cuda.hpp>

#include "ab_common.hpp"

using namespace linea;
using T = bf16;
using Rule = SECTORS_AB_RULE;
#define CK(x) linea::cuda_detail::check((x), #x)

namespace {

using linea_bench::fill_state;
using linea_bench::hash_uniform;
using linea_bench::normalize_rows;
enum class fill { normal, logsigmoid, sigmoid };
__global__ void fill_kernel(T* p, std::int64_t n, std::uint32_t seed, fill kind) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float z = linea_bench::hash_normal(i, seed);
    float x = z;
    if (kind == fill::logsigmoid) x = -log1pf(expf(-z));
    if (kind == fill::sigmoid) x = 1.f / (1.f + expf(-z));
    p[i] = linea::cuda_detail::from_float<T>(x);
  }
}
T* random_tensor(std::size_t n, std::uint32_t seed, fill kind) {
  T* p = nullptr;
  CK(cudaMalloc(&p, std::max<std::size_t>(n, 1) * sizeof(T)));
  fill_kernel<<<2048, 256>>>(p, static_cast<std::int64_t>(n), seed, kind);
  CK(cudaGetLastError());
  return p;
}

constexpr index_t H = 16, K = 128;
struct inputs {
  index_t B, T_, VS;  // VS: v's row length (V, or more for padded rows)
  T *q, *k, *v, *g, *gk, *beta, *o;
  float *s0, *s1;
};
inputs make_inputs(index_t B, index_t T_, std::uint32_t seed, index_t VS = 128) {
  const std::size_t nk = B * T_ * H * K, nv = B * T_ * H * VS, ns = B * T_ * H;
  inputs x{B, T_, VS};
  x.q = random_tensor(nk, seed + 1, fill::normal);
  x.k = random_tensor(nk, seed + 2, fill::normal);
  if (erases<Rule>) normalize_rows<<<static_cast<unsigned>((ns + 7) / 8), 256>>>(x.k, static_cast<std::int64_t>(ns), int(K));
  x.v = random_tensor(nv, seed + 3, fill::normal);
  x.g = random_tensor(ns, seed + 4, fill::logsigmoid);
  x.gk = random_tensor(nk, seed + 5, fill::logsigmoid);
  x.beta = random_tensor(ns, seed + 6, fill::sigmoid);
  CK(cudaMalloc(&x.o, nv * sizeof(T)));
  CK(cudaMalloc(&x.s0, B * H * K * VS * sizeof(float)));
  CK(cudaMalloc(&x.s1, B * H * K * VS * sizeof(float)));
  fill_state<<<2048, 256>>>(x.s0, std::int64_t(B * H * K * VS), seed + 9);
  CK(cudaDeviceSynchronize());
  return x;
}
void free_inputs(inputs& x) {
  for (void* p : {(void*)x.q, (void*)x.k, (void*)x.v, (void*)x.g, (void*)x.gk, (void*)x.beta, (void*)x.o, (void*)x.s0,
                  (void*)x.s1})
    CK(cudaFree(p));
}

// Contiguous [B, T, H, ·] views of x, V = 128 (the layouts' cases replace o, v, the states and the residual).
arguments<T, float> make_args(const inputs& x, bool initial_state) {
  const index_t B = x.B, T_ = x.T_, V = x.VS;
  arguments<T, float> a;
  a.q = contiguous<4>(static_cast<const T*>(x.q), {B, T_, H, K});
  a.k = contiguous<4>(static_cast<const T*>(x.k), {B, T_, H, K});
  a.v = contiguous<4>(static_cast<const T*>(x.v), {B, T_, H, V});
  if constexpr (reads(Rule::inputs, input::g)) a.g = contiguous<3>(static_cast<const T*>(x.g), {B, T_, H});
  if constexpr (reads(Rule::inputs, input::gk)) a.gk = contiguous<4>(static_cast<const T*>(x.gk), {B, T_, H, K});
  if constexpr (reads(Rule::inputs, input::beta)) a.beta = contiguous<3>(static_cast<const T*>(x.beta), {B, T_, H});
  a.o = contiguous<4>(x.o, {B, T_, H, V});
  if (initial_state) a.initial_state = contiguous<4>(static_cast<const float*>(x.s0), {B, H, K, V});
  a.final_state = contiguous<4>(x.s1, {B, H, K, V});
  return a;
}

// The library's call with the scalar / delta kernels' strips in pairs (old) or sectors (new).
void library(const arguments<T, float>& a, bool pairs, const cuda::launch& l = {}) {
  cuda_detail::strip_store_ab_pairs = pairs;
  chunkwise<Rule, read::identity, backend::cuda>(a, l);
  cuda_detail::strip_store_ab_pairs = false;
}

// gla's 64-token kernel launched directly (as perkey_delta_ab.cu's launch_other), strips in pairs or sectors.
// (A template, so that the other rules instantiate no perkey_chunk_kernel.)
template <class R = Rule>
void perkey_chunk(const cuda_detail::kernel_args<T>& k, index_t rows, bool pairs) {
  if constexpr (cuda_detail::perkey_chunk_rule<R, cuda_detail::pass::main>) {
    using namespace cuda_detail;
    using E = __nv_bfloat16;
    using sh = perkey_chunk_shape;
    using tiles::strip_store;
    constexpr auto old_kernel = perkey_chunk_kernel<R, T, E, strip_store::pairs>;
    constexpr auto new_kernel = perkey_chunk_kernel<R, T, E, strip_store::sectors>;
    const auto kernel = pairs ? old_kernel : new_kernel;
    allow_dynamic_shared<old_kernel>(sh::bytes, 0);
    allow_dynamic_shared<new_kernel>(sh::bytes, 0);
    kernel<<<dim3(unsigned(k.HV), unsigned(rows), 1u), sh::threads, sh::bytes>>>(k);
    check_launch("perkey_chunk_kernel");
  }
}
constexpr bool has_perkey_chunk = cuda_detail::perkey_chunk_rule<Rule, cuda_detail::pass::main>;

int failures = 0;

// Old against new bit for bit over the whole output buffers, poisoned (0xffff: NaN) before each call, so that a
// store past the view, or a missing one, shows.
enum output_layout : int { plain_with_residual, head_first, misaligned_o, column_stride_2, narrow_padded_v };
enum path : int { lib, lib_segmented, direct };
const char* layout_name(int l) {
  static const char* n[] = {"plain+residual", "head_first", "misaligned_o", "column_stride_2", "V100_in_104+residual"};
  return n[l];
}
void outputs_ab(int layout, index_t B, index_t T_, bool h0, int via) {
  const bool narrow = layout == narrow_padded_v;
  const index_t Vl = narrow ? 100 : 128, VS = narrow ? 104 : 128;
  inputs x = make_inputs(B, T_, 400 + 10 * layout + via, VS);
  arguments<T, float> a = make_args(x, h0);
  const std::size_t span = std::size_t(B) * T_ * H * VS * 2 + 8;  // room for column stride 2 and the shift
  T *o_buf = nullptr, *r_buf = nullptr;
  CK(cudaMalloc(&o_buf, span * sizeof(T))), CK(cudaMalloc(&r_buf, span * sizeof(T)));
  const std::array<index_t, 4> ext{B, T_, H, Vl}, rows{T_ * H * VS, H * VS, VS, 1};
  a.o = strided<4>(o_buf, ext, rows);
  if (layout == head_first) a.o = strided<4>(o_buf, ext, {T_ * H * VS, VS, T_ * VS, 1});
  if (layout == misaligned_o) a.o = strided<4>(o_buf + 1, ext, rows);
  if (layout == column_stride_2) a.o = strided<4>(o_buf, ext, {2 * T_ * H * VS, 2 * H * VS, 2 * VS, 2});
  if (narrow) {
    a.v = strided<4>(static_cast<const T*>(x.v), ext, rows);
    if (h0) a.initial_state = contiguous<4>(static_cast<const float*>(x.s0), {B, H, K, Vl});
    a.final_state = contiguous<4>(x.s1, {B, H, K, Vl});
  }
  const bool residual = (layout == plain_with_residual || narrow) && via != direct;  // (perkey_chunk: no residual)
  if (residual) a.residual = strided<4>(r_buf, ext, rows);
  const std::size_t ns = std::size_t(B) * H * K * Vl;
  std::string error;
  auto outputs = [&](bool pairs) {
    CK(cudaMemset(o_buf, 0xff, span * sizeof(T))), CK(cudaMemset(r_buf, 0xff, span * sizeof(T)));
    CK(cudaMemset(x.s1, 0xff, ns * sizeof(float)));
    try {
      if (via == direct) {
        const problem p = validate_chunkwise<Rule, read::identity>(a);
        perkey_chunk(cuda_detail::make_kernel_args(a, p), p.N, pairs);
      } else {
        cuda::launch l;
        if (via == lib_segmented) l.segment_tokens = 128;
        library(a, pairs, l);
      }
    } catch (const std::exception& e) {
      error = e.what();
    }
    CK(cudaDeviceSynchronize());
    std::vector<std::uint16_t> o(span), r(span);
    std::vector<std::uint32_t> s(ns);
    CK(cudaMemcpy(o.data(), o_buf, span * sizeof(T), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(r.data(), r_buf, span * sizeof(T), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(s.data(), x.s1, ns * sizeof(float), cudaMemcpyDeviceToHost));
    return std::tuple{o, r, s};
  };
  const auto [o_new, r_new, s_new] = outputs(false);
  const auto [o_old, r_old, s_old] = outputs(true);
  std::size_t unwritten = 0, o_diff = 0, r_diff = 0, s_diff = 0;
  for (index_t b = 0; b < B; ++b)
    for (index_t t = 0; t < T_; ++t)
      for (index_t h = 0; h < H; ++h)
        for (index_t j = 0; j < Vl; ++j) {
          unwritten += o_new[std::size_t(a.o.row(b, t, h) + j * a.o.str[3] - o_buf)] == 0xffff;
          if (residual) unwritten += r_new[std::size_t(a.residual.row(b, t, h) + j - r_buf)] == 0xffff;
        }
  for (std::size_t i = 0; i < span; ++i) o_diff += o_new[i] != o_old[i], r_diff += r_new[i] != r_old[i];
  for (std::size_t i = 0; i < ns; ++i) s_diff += s_new[i] != s_old[i], unwritten += s_new[i] == 0xffffffffu;
  const bool same = o_diff == 0 && r_diff == 0 && s_diff == 0;
  const bool pass = same && unwritten == 0 && error.empty();
  failures += !pass;
  static const char* via_name[] = {"library", "library_segmented_128", "perkey_chunk_kernel"};
  std::printf("{\"kind\":\"outputs_ab\",\"rule\":\"%s\",\"via\":\"%s\",\"layout\":\"%s\",\"B\":%ld,\"T\":%ld,\"V\":%ld,"
              "\"h0\":%s,\"residual\":%s,\"pass\":%s,\"new_bit_identical_old\":%s,\"o_words_differ\":%zu,"
              "\"residual_words_differ\":%zu,\"state_words_differ\":%zu,\"unwritten\":%zu,\"error\":\"%s\"}\n",
              rule_name<Rule>::value, via_name[via], layout_name(layout), long(B), long(T_), long(Vl),
              h0 ? "true" : "false", residual ? "true" : "false", pass ? "true" : "false", same ? "true" : "false",
              o_diff, r_diff, s_diff, unwritten, error.c_str());
  std::fflush(stdout);
  CK(cudaFree(o_buf)), CK(cudaFree(r_buf));
  free_inputs(x);
}

double copy_tbps() {
  const std::size_t n = std::size_t(1) << 31;
  char *a = nullptr, *b = nullptr;
  CK(cudaMalloc(&a, n)), CK(cudaMalloc(&b, n));
  CK(cudaMemset(a, 1, n));
  const double ms = linea_bench::time_calls_ms([&](int) { CK(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice)); }, 5, 7, 2);
  CK(cudaFree(a)), CK(cudaFree(b));
  return 2.0 * n / (ms * 1e-3) / 1e12;
}

// Bytes a call must move at least: q, k, v and the rule's gates read, o written, the final state written.
double min_bytes(index_t B, index_t T_) {
  const double tok = double(B) * T_ * H, V = 128;
  double bytes = tok * (2 * K + V + V) * 2 + double(B) * H * K * V * 4;
  if (reads(Rule::inputs, input::g)) bytes += tok * 2;
  if (reads(Rule::inputs, input::gk)) bytes += tok * K * 2;
  if (reads(Rule::inputs, input::beta)) bytes += tok * 2;
  return bytes;
}

// Old and new interleaved: `rounds` rounds, the order alternating, each variant a median of 7 × 10 calls over two
// input sets; prints each round and the medians.
template <class F>
void ab_rows(const char* what, index_t B, index_t T_, index_t piece, double copy, F&& call, int rounds = 9) {
  std::vector<double> t_old, t_new;
  for (int r = 0; r < rounds; ++r)
    for (int s = 0; s < 2; ++s) {
      const bool pairs = (r + s) % 2 == 0;  // round 0: old first
      const double ms = linea_bench::time_calls_ms([&](int i) { call(i, pairs); }, 10, 7, 3);
      (pairs ? t_old : t_new).push_back(ms);
    }
  auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  const double mo = med(t_old), mn = med(t_new), bytes = min_bytes(B, T_);
  std::printf("{\"kind\":\"time\",\"rule\":\"%s\",\"path\":\"%s\",\"B\":%ld,\"T\":%ld,\"piece\":%ld,\"old_ms\":%.4f,"
              "\"new_ms\":%.4f,\"old_over_new\":%.4f,\"old_min\":%.4f,\"old_max\":%.4f,\"new_min\":%.4f,\"new_max\":%.4f,"
              "\"copy_frac_old\":%.3f,\"copy_frac_new\":%.3f,\"old\":[",
              rule_name<Rule>::value, what, long(B), long(T_), long(piece), mo, mn, mo / mn,
              *std::min_element(t_old.begin(), t_old.end()), *std::max_element(t_old.begin(), t_old.end()),
              *std::min_element(t_new.begin(), t_new.end()), *std::max_element(t_new.begin(), t_new.end()),
              bytes / (mo * 1e-3) / 1e12 / copy, bytes / (mn * 1e-3) / 1e12 / copy);
  for (std::size_t i = 0; i < t_old.size(); ++i) std::printf("%s%.4f", i ? "," : "", t_old[i]);
  std::printf("],\"new\":[");
  for (std::size_t i = 0; i < t_new.size(); ++i) std::printf("%s%.4f", i ? "," : "", t_new[i]);
  std::printf("]}\n");
  std::fflush(stdout);
}

void time_at(index_t B, index_t T_, double copy) {
  inputs x[2] = {make_inputs(B, T_, 100), make_inputs(B, T_, 200)};
  const arguments<T, float> a[2] = {make_args(x[0], false), make_args(x[1], false)};
  const problem p = validate_chunkwise<Rule, read::identity>(a[0]);
  const index_t piece = cuda_detail::piece_length<Rule>(a[0], segments::sequence_starts(a[0], p), p, cuda::launch{},
                                                        cuda_detail::current_device());
  ab_rows("library", B, T_, piece, copy, [&](int i, bool pairs) { library(a[i & 1], pairs); });
  if (has_perkey_chunk && B == 8) {
    const auto k0 = cuda_detail::make_kernel_args(a[0], p), k1 = cuda_detail::make_kernel_args(a[1], p);
    ab_rows("perkey_chunk_kernel", B, T_, 0, copy, [&](int i, bool pairs) { perkey_chunk(i & 1 ? k1 : k0, B, pairs); }, 5);
  }
  free_inputs(x[0]), free_inputs(x[1]);
}

}  // namespace

int main(int argc, char** argv) {
  bool check = false;
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--check")) check = true;
  try {
    if (check) {
      for (const int layout : {plain_with_residual, head_first, misaligned_o, column_stride_2, narrow_padded_v})
        outputs_ab(layout, 2, 150, true, lib);
      outputs_ab(plain_with_residual, 1, 333, false, lib);
      outputs_ab(plain_with_residual, 1, 700, true, lib_segmented);
      outputs_ab(head_first, 1, 700, true, lib_segmented);
      if (has_perkey_chunk) {
        for (const int layout : {plain_with_residual, head_first, misaligned_o, column_stride_2, narrow_padded_v})
          outputs_ab(layout, 2, 150, true, direct);
        outputs_ab(plain_with_residual, 1, 333, false, direct);
      }
      std::printf("{\"kind\":\"check_summary\",\"rule\":\"%s\",\"failures\":%d}\n", rule_name<Rule>::value, failures);
      return failures ? 2 : 0;
    }
    cudaDeviceProp prop{};
    CK(cudaGetDeviceProperties(&prop, 0));
    const double copy = copy_tbps();
    std::printf("{\"kind\":\"device\",\"name\":\"%s\",\"sms\":%d,\"copy_tbps\":%.3f}\n", prop.name,
                prop.multiProcessorCount, copy);
    time_at(8, 4096, copy);
    time_at(1, 32768, copy);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sectors_ab: %s\n", e.what());
    return 1;
  }
  return 0;
}
