// tests/backend/cuda/errors_test.cu — bad arguments are rejected on the host before any launch: one table row per
// bad input (a pointer in host memory, a shape, a limit of the CUDA kernels, an input the CUDA backend does not
// take). Each must throw a linea::error naming the argument (and the shapes or limits), and the device outputs
// must still hold the poison device_case wrote into them: nothing was launched.
#include <doctest/doctest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend/cuda/consistency.hpp"
#include "support/rejection.hpp"

using namespace linea;
using namespace linea::testing;

namespace {

template <class T>
struct cuda_bad_input {
  std::string what;
  void (*check)(const cuda_bad_input&) = nullptr;  // the rule and the form that must reject it
  // Breaks the device arguments `a`; `host` are the same arguments over the case's host tensors.
  std::function<void(arguments<T, float>& a, const arguments<T, float>& host)> breaks;
  std::vector<std::string> words;
  case_shape shape;
};

// Every byte still 0xFF, as device_pool::output left it.
template <class X, int R>
bool poisoned(const tensor<X, R>& t) {
  const auto* p = reinterpret_cast<const unsigned char*>(t.data());
  for (std::size_t i = 0; i < t.size() * sizeof(X); ++i)
    if (p[i] != 0xFF) return false;
  return true;
}

template <class Rule, class Form, class T>
void cuda_rejects(const cuda_bad_input<T>& row) {
  INFO("form: ", Form::name);
  auto c = random_case<Rule, T>::make(row.shape);
  device_case<Rule, T> d{c};
  const arguments<T, float> host = c.args();
  auto a = d.args(host);
  row.breaks(a, host);
  if (!expect_error([&] { Form::template run<Rule, read::identity>(a); }, row.words)) return;
  d.back();
  CHECK(poisoned(c.o));
  CHECK(poisoned(c.residual));
  CHECK(poisoned(c.ht));
}

const case_shape small{.B = 1, .T = 8, .H = 1, .HV = 1, .K = 16, .V = 16};
const case_shape one_token{.B = 2, .T = 1, .H = 1, .HV = 1, .K = 16, .V = 16, .initial_state = true};

}  // namespace

TEST_CASE("cuda: bad arguments are rejected before any launch (float32 inputs)") {
  tensor<float, 5> checkpoints({1, 1, 1, 16, 16});  // the right shape for `small` at the default chunk size
  const std::vector<std::int32_t> idx = {0};
  const cuda_bad_input<float> table[] = {
      {.what = "v in host memory", .check = cuda_rejects<gated_delta, cuda_chunkwise>,
       .breaks = [](auto& a, const auto& host) { a.v = host.v; }, .words = {"'v'", "host memory"}, .shape = small},
      {.what = "q in host memory", .check = cuda_rejects<gated_delta, cuda_step>,
       .breaks = [](auto& a, const auto& host) { a.q = host.q; }, .words = {"'q'", "host memory"},
       .shape = one_token},
      {.what = "o in host memory", .check = cuda_rejects<delta, cuda_recurrent>,
       .breaks = [](auto& a, const auto& host) { a.o = host.o; }, .words = {"'o'", "host memory"}, .shape = small},
      {.what = "final_state in host memory", .check = cuda_rejects<kda, cuda_chunkwise>,
       .breaks = [](auto& a, const auto& host) { a.final_state = host.final_state; },
       .words = {"'final_state'", "host memory"}, .shape = small},
      {.what = "the chunkwise form's K limit", .check = cuda_rejects<delta, cuda_chunkwise>,
       .breaks = [](auto&, const auto&) {}, .words = {"K, V <= 128", "K = 160"},
       .shape = {.B = 1, .T = 4, .H = 1, .HV = 1, .K = 160, .V = 16}},
      {.what = "the chunkwise form's V limit", .check = cuda_rejects<gated_delta, cuda_chunkwise>,
       .breaks = [](auto&, const auto&) {}, .words = {"K, V <= 128", "V = 160"},
       .shape = {.B = 1, .T = 4, .H = 1, .HV = 1, .K = 16, .V = 160}},
      {.what = "the recurrent form's K limit", .check = cuda_rejects<gated_delta, cuda_recurrent>,
       .breaks = [](auto&, const auto&) {}, .words = {"K <= 256", "K = 300"},
       .shape = {.B = 1, .T = 4, .H = 1, .HV = 1, .K = 300, .V = 16}},
      {.what = "checkpoints, which the CUDA backend does not produce", .check = cuda_rejects<gated_delta, cuda_chunkwise>,
       .breaks = [&](auto& a, const auto&) { a.checkpoints = checkpoints; },
       .words = {"'checkpoints'", "CUDA backend"}, .shape = small},
      {.what = "the decode step's state_indices given to the recurrent form",
       .check = cuda_rejects<gated_delta, cuda_recurrent>,
       .breaks = [&](auto& a, const auto&) { a.state_indices = idx; }, .words = {"'state_indices'", "decode step"},
       .shape = small},
      {.what = "a chunk size the chunkwise form does not support", .check = cuda_rejects<gated_delta, cuda_chunkwise>,
       .breaks = [](auto& a, const auto&) { a.chunk_size = 48; }, .words = {"'chunk_size' = 48"}, .shape = small},
  };
  check_rejected(table);
}

TEST_CASE("cuda: bad arguments are rejected before any launch (bf16 inputs)") {
  const cuda_bad_input<bf16> table[] = {
      {.what = "gk with the wrong K", .check = cuda_rejects<kda, cuda_recurrent>,
       .breaks = [](auto& a, const auto&) { a.gk.ext[3] = 15; }, .words = {"'gk'", "[1, 8, 2, 15]", "[1, 8, 2, 16]"},
       .shape = {.B = 1, .T = 8, .H = 1, .HV = 2, .K = 16, .V = 16}},
      {.what = "beta in host memory", .check = cuda_rejects<gated_delta, cuda_chunkwise>,
       .breaks = [](auto& a, const auto& host) { a.beta = host.beta; }, .words = {"'beta'", "host memory"},
       .shape = small},
  };
  check_rejected(table);
}

// Memory of another GPU than the call's (the current device) is rejected like host memory: a linea::error naming the
// argument and both devices, nothing launched. Needs two GPUs; on one it says so and checks nothing.
// A caller's workspace is scratch the call overwrites while it still reads its inputs: one that shares memory with an
// argument, or with the launch's device cu_seqlens, is rejected before any launch, naming both (the forward's
// chunkwise and recurrent forms with host cu_seqlens, whose device copy goes into the workspace, and the segmented
// forward); the outputs keep their poison.
TEST_CASE("cuda: a caller's workspace overlapping an argument is rejected before any launch") {
  const case_shape packed{.H = 1, .HV = 1, .K = 16, .V = 16, .seqlens = {5, 3}, .initial_state = true};
  auto c = random_case<gated_delta, float>::make(packed);
  device_case<gated_delta, float> d{c};
  const arguments<float, float> host = c.args();
  const auto a = d.args(host);
  const std::size_t bytes = cuda::workspace_size<gated_delta, read::identity>(a);
  REQUIRE(bytes > 0);  // the host cu_seqlens' device copy
  const auto over = [&](const void* p) { return cuda::launch{.workspace = const_cast<void*>(p), .workspace_bytes = bytes}; };
  expect_error([&] { linea::chunkwise<gated_delta, read::identity, backend::cuda>(a, over(a.o.ptr)); },
               {"'workspace' of cuda::launch", "overlaps argument 'o'"});
  expect_error([&] { linea::chunkwise<gated_delta, read::identity, backend::cuda>(a, over(a.k.ptr)); },
               {"'workspace' of cuda::launch", "overlaps argument 'k'"});
  expect_error([&] { linea::recurrent<gated_delta, read::identity, backend::cuda>(a, over(a.final_state.ptr)); },
               {"overlaps argument 'final_state'"});
  expect_error([&] { linea::recurrent<gated_delta, read::identity, backend::cuda>(a, over(a.initial_state.ptr)); },
               {"overlaps argument 'initial_state'"});
  // the segmented forward (one long sequence cut into pieces of 64 tokens: its scratch in the workspace)
  auto lc = random_case<gated_delta, float>::make({.B = 1, .T = 300, .H = 1, .HV = 1, .K = 16, .V = 16});
  device_case<gated_delta, float> ld{lc};
  const auto la = ld.args(lc.args());
  const cuda::launch cut{.segment_tokens = 64};
  const std::size_t cut_bytes = cuda::workspace_size<gated_delta, read::identity>(la, cut);
  REQUIRE(cut_bytes > 0);
  expect_error([&] {
    linea::chunkwise<gated_delta, read::identity, backend::cuda>(
        la, cuda::launch{.workspace = ld.o, .workspace_bytes = cut_bytes, .segment_tokens = 64});
  }, {"'workspace' of cuda::launch", "overlaps argument 'o'"});
  // the launch's device cu_seqlens inside the workspace
  void* ws = nullptr;
  cuda_ok(cudaMalloc(&ws, bytes + 64));
  auto plain = a;
  plain.cu_seqlens = {};
  const cuda::launch dev{.workspace = ws, .workspace_bytes = bytes + 64,
                         .cu_seqlens = cuda::device_seqlens(static_cast<const std::int64_t*>(ws), 3),
                         .check_indices = true};  // (the device check's error word: scratch in the workspace)
  expect_error([&] { linea::chunkwise<gated_delta, read::identity, backend::cuda>(plain, dev); },
               {"'workspace' of cuda::launch", "cu_seqlens"});
  cuda_ok(cudaFree(ws));
  d.back(), ld.back();
  CHECK(poisoned(c.o));
  CHECK(poisoned(c.ht));
  CHECK(poisoned(lc.o));
}

TEST_CASE("cuda: an argument in another GPU's memory is rejected (two GPUs)") {
  int gpus = 0;
  REQUIRE(cudaGetDeviceCount(&gpus) == cudaSuccess);
  if (gpus < 2) {
    MESSAGE("skipped: this case needs two CUDA devices, found ", gpus);
    return;
  }
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  auto c = random_case<gated_delta, float>::make(small);
  device_case<gated_delta, float> d{c};
  const arguments<float, float> host = c.args();
  const auto a = d.args(host);
  float* v1 = nullptr;  // v's values in device 1's memory
  REQUIRE(cudaSetDevice(1) == cudaSuccess);
  REQUIRE(cudaMalloc(&v1, c.v.size() * sizeof(float)) == cudaSuccess);
  REQUIRE(cudaMemcpy(v1, c.v.data(), c.v.size() * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  auto broken = a;
  broken.v.ptr = v1;
  expect_error([&] { cuda_chunkwise::run<gated_delta, read::identity>(broken); }, {"'v'", "device 1", "device 0"});
  // every argument on device 0, the call made on device 1 (q, checked first, was remembered good on device 0)
  REQUIRE(cudaSetDevice(1) == cudaSuccess);
  expect_error([&] { cuda_chunkwise::run<gated_delta, read::identity>(a); }, {"'q'", "device 0", "runs on device 1"});
  CHECK(cudaFree(v1) == cudaSuccess);
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  d.back();
  CHECK(poisoned(c.o));
  CHECK(poisoned(c.ht));
}

// The chunkwise form's K, V limit is checked before the first launch: the 16-bit CCQ path (ccq_chunked.hpp) once
// wrote the final statistics before its main pass met the limit (found by tests/backend/cuda/fuzz, seed 20261202
// case 441: gdn2, bf16, K = 48, V = 129).
TEST_CASE("cuda: the chunkwise V limit rejects a 16-bit CCQ call before its statistics are written") {
  auto c = random_case<gated_delta, bf16>::make({.B = 1, .T = 70, .H = 1, .HV = 1, .K = 48, .V = 160});
  auto s = ccq_tensors<bf16>::make(c.shape, c.N, {.initial_stats = true});
  device_case<gated_delta, bf16> d{c, &s};
  auto host = c.args();
  s.attach(host);
  const auto a = d.args(host);
  expect_error([&] { linea::chunkwise<gated_delta, read::ccq<read::decayed>, backend::cuda>(a); }, {"K, V <= 128", "V = 160"});
  d.back();
  CHECK(poisoned(c.o));
  CHECK(poisoned(c.ht));
  CHECK(poisoned(s.C));
  CHECK(poisoned(s.m));
  CHECK(poisoned(s.z));
  CHECK(poisoned(s.q_tilde));
}
