// tests/backend/cuda/launch_options_test.cu — cuda::launch (launch_options.hpp, workspace.hpp, index_check.hpp): a
// call on a non-default stream, captured into a CUDA graph from its stream, with a caller's workspace, with
// cu_seqlens / state_indices on the device gives the same bytes as the plain call; a too-small workspace and bad
// device-side indices (with check_indices) are clear errors before anything is written; without the check a bad
// state index skips its row. Every result here is also checked against the float64 reference by the rule tests;
// these compare calls with each other, bit for bit. TEST_SUITE "launch" also runs under compute-sanitizer.
#include "backend/cuda/consistency.hpp"
#include "support/rejection.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace linea::testing {
namespace {

enum class form { recurrent, chunkwise, step };

template <class Rule, class Read, form F, class T, class S>
void call(const arguments<T, S>& a, const cuda::launch& l) {
  if constexpr (F == form::recurrent) linea::recurrent<Rule, Read, backend::cuda>(a, l);
  else if constexpr (F == form::chunkwise) linea::chunkwise<Rule, Read, backend::cuda>(a, l);
  else linea::step<Rule, Read, backend::cuda>(a, l);
}

// A device array owned by the test.
template <class X>
struct device_array {
  X* ptr = nullptr;
  std::size_t size = 0;
  explicit device_array(std::size_t n) : size(n) { cuda_ok(cudaMalloc(&ptr, std::max<std::size_t>(n, 1) * sizeof(X))); }
  explicit device_array(const std::vector<X>& host) : device_array(host.size()) {
    cuda_ok(cudaMemcpy(ptr, host.data(), host.size() * sizeof(X), cudaMemcpyHostToDevice));
  }
  device_array(const device_array&) = delete;
  device_array& operator=(const device_array&) = delete;
  ~device_array() { cudaFree(ptr); }
};

struct stream {
  cudaStream_t s = nullptr;
  stream() { cuda_ok(cudaStreamCreate(&s)); }  // blocking: the legacy default stream would order with it
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;
  ~stream() { cudaStreamDestroy(s); }
};

template <class X>
void append_bytes(std::vector<unsigned char>& out, const X* device, std::size_t n) {
  if (!device || !n) return;
  const std::size_t at = out.size();
  out.resize(at + n * sizeof(X));
  cuda_ok(cudaMemcpy(out.data() + at, device, n * sizeof(X), cudaMemcpyDeviceToHost));
}

// One random case on the device (its outputs poisoned with 0xFF bytes); run(l) calls the form and returns every
// output's bytes once the device is idle.
template <class Rule, class Read, form F, class T>
struct launch_case {
  static constexpr bool ccq = !Read::is_identity;
  random_case<Rule, T> c;
  ccq_tensors<T> s;
  device_case<Rule, T> d{c, ccq ? &s : nullptr};
  arguments<T, float> a;

  explicit launch_case(const case_shape& shape) : c(random_case<Rule, T>::make(shape)) {
    if constexpr (ccq) s = ccq_tensors<T>::make(c.shape, c.N, {.initial_stats = true});
    auto host = c.args();
    if constexpr (ccq) s.attach(host);
    a = d.args(host);
  }
  void launch(const cuda::launch& l) { call<Rule, Read, F>(a, l); }
  std::vector<unsigned char> outputs() {
    cuda_ok(cudaDeviceSynchronize());
    std::vector<unsigned char> out;
    append_bytes(out, d.o, c.o.size()), append_bytes(out, d.res, c.residual.size()), append_bytes(out, d.ht, c.ht.size());
    if constexpr (ccq) {
      append_bytes(out, d.C, s.C.size()), append_bytes(out, d.m, s.m.size()), append_bytes(out, d.z, s.z.size());
      append_bytes(out, d.qt, s.q_tilde.size());
    }
    return out;
  }
  std::vector<unsigned char> run(const cuda::launch& l) {
    launch(l);
    return outputs();
  }
};

bool all_poison(const std::vector<unsigned char>& bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](unsigned char b) { return b == 0xFF; });
}
// Not the poison: the call wrote something (a call that wrote nothing would compare equal with itself too).
bool written(const std::vector<unsigned char>& bytes) {
  return std::count(bytes.begin(), bytes.end(), static_cast<unsigned char>(0xFF)) < static_cast<std::ptrdiff_t>(bytes.size() / 2);
}

const case_shape pipeline{.B = 2, .T = 150, .H = 2, .HV = 4, .K = 64, .V = 64, .initial_state = true, .seed = 31};
const case_shape varlen{.H = 1, .HV = 2, .K = 32, .V = 48, .seqlens = {37, 0, 90, 5}, .initial_state = true, .seed = 32};
const case_shape rows{.B = 5, .T = 1, .H = 2, .HV = 4, .K = 64, .V = 48, .initial_state = true, .seed = 33};
const std::vector<std::int32_t> pool_rows = {3, -1, 0, 4, 1};  // a permutation of the pool, one row skipped

// The plain call and the call with `l` on the same case give the same bytes.
template <class Rule, class Read, form F, class T>
void same_as_plain_call(const case_shape& shape, const cuda::launch& l, const char* what) {
  INFO(what << ": " << rule_name<Rule>::value << " " << type_name<T>() << (Read::is_identity ? " identity" : " ccq"));
  launch_case<Rule, Read, F, T> x(shape);
  const auto plain = x.run({});
  CHECK(written(plain));
  CHECK(x.run(l) == plain);
}

// The plain call (default stream, cached workspace) and the call with `l` on a stream of its own with a caller's
// workspace of exactly cuda::workspace_size bytes (none when that is 0) give the same bytes.
template <class Rule, class Read, form F, class T>
void same_on_stream_with_workspace(launch_case<Rule, Read, F, T>& x, cuda::launch l, const char* what) {
  INFO(what << ": " << rule_name<Rule>::value << " " << type_name<T>() << (Read::is_identity ? " identity" : " ccq"));
  const auto plain = x.run(l);
  CHECK(written(plain));
  stream s;
  l.stream = s.s;
  const std::size_t bytes = cuda::workspace_size<Rule, Read>(x.a, l);
  device_array<unsigned char> ws(bytes);
  if (bytes) l.workspace = ws.ptr, l.workspace_bytes = bytes;
  CHECK(x.run(l) == plain);
}
template <class Rule, class Read, form F, class T>
void same_on_stream_with_workspace(const case_shape& shape, const cuda::launch& l, const char* what) {
  launch_case<Rule, Read, F, T> x(shape);
  same_on_stream_with_workspace(x, l, what);
}

// Long rows cut into pieces of 128 tokens (segment_tokens): passes A and M, the combine and pass C.
const case_shape long_rows{.B = 2, .T = 700, .H = 1, .HV = 2, .K = 64, .V = 64, .initial_state = true, .seed = 34};

}  // namespace

TEST_SUITE("launch") {

TEST_CASE("cuda::launch: a call on a non-default stream gives the default stream's bytes") {
  stream s;
  const cuda::launch on{.stream = s.s};
  using D = read::ccq<read::decayed>;
  same_as_plain_call<gated_delta, read::identity, form::chunkwise, bf16>(pipeline, on, "64-token delta kernel");
  same_as_plain_call<simple_gla, read::identity, form::chunkwise, bf16>(pipeline, on, "64-token scalar kernel");
  same_as_plain_call<kda, D, form::chunkwise, float>(varlen, on, "general kernel, CCQ, host cu_seqlens");
  same_as_plain_call<additive, read::identity, form::recurrent, fp16>(varlen, on, "recurrent");
  same_as_plain_call<gated_delta, D, form::step, float>(rows, on, "decode step, CCQ");
}

// Every kernel with a stream and a caller's workspace in use (compute-sanitizer runs this suite).
TEST_CASE("cuda::launch: every kernel on a stream of its own with a caller's workspace") {
  using D = read::ccq<read::decayed>;
  same_on_stream_with_workspace<simple_gla, read::identity, form::chunkwise, bf16>(pipeline, {}, "64-token scalar kernel");
  same_on_stream_with_workspace<gated_delta, read::identity, form::chunkwise, bf16>(pipeline, {}, "64-token delta kernel");
  same_on_stream_with_workspace<gla, read::identity, form::chunkwise, bf16>(pipeline, {}, "64-token per-key kernel");
  same_on_stream_with_workspace<gdn2, read::identity, form::chunkwise, bf16>(pipeline, {}, "general kernel, 16-bit");
  same_on_stream_with_workspace<kda, D, form::chunkwise, float>(varlen, {}, "general kernel, CCQ, host cu_seqlens");
  same_on_stream_with_workspace<additive, read::identity, form::recurrent, fp16>(varlen, {}, "recurrent");
  same_on_stream_with_workspace<gated_delta, D, form::step, float>(rows, {}, "decode step, CCQ");
  same_on_stream_with_workspace<gated_delta, read::identity, form::chunkwise, bf16>(long_rows, {.segment_tokens = 128},
                                                                                   "segmented chunkwise");
  {  // the decode kernel through a permuted pool: host span (copied into the workspace), then device-side, checked
    launch_case<gated_delta, read::identity, form::step, bf16> x(rows);
    x.a.state_indices = pool_rows;
    same_on_stream_with_workspace(x, {}, "decode step, host state_indices");
    device_array<std::int32_t> idx(pool_rows);
    x.a.state_indices = {};
    same_on_stream_with_workspace(x, {.state_indices = {idx.ptr, idx.size}, .check_indices = true},
                                  "decode step, device state_indices, checked");
  }
}

// A decode row that names no state (state_indices = −1) writes zeros to every output row it was given, the CCQ
// read's q̃ too (ccq_query_kernel left it unwritten before: here the 0xFF poison, a NaN).
TEST_CASE("cuda::step, CCQ: a skipped row zeroes its q_tilde as its o") {
  launch_case<gated_delta, read::ccq<read::decayed>, form::step, float> x(rows);
  x.a.state_indices = pool_rows;  // row 1 is skipped
  x.launch({});
  cuda_ok(cudaDeviceSynchronize());
  std::vector<float> qt(x.s.q_tilde.size()), o(x.c.o.size());
  cuda_ok(cudaMemcpy(qt.data(), x.d.qt, qt.size() * sizeof(float), cudaMemcpyDeviceToHost));
  cuda_ok(cudaMemcpy(o.data(), x.d.o, o.size() * sizeof(float), cudaMemcpyDeviceToHost));
  const std::size_t qrow = static_cast<std::size_t>(rows.HV * rows.K), orow = static_cast<std::size_t>(rows.HV * rows.V);
  CHECK(std::all_of(qt.begin() + qrow, qt.begin() + 2 * qrow, [](float e) { return e == 0.f; }));
  CHECK(std::all_of(o.begin() + orow, o.begin() + 2 * orow, [](float e) { return e == 0.f; }));
  CHECK(std::all_of(qt.begin(), qt.begin() + qrow, [](float e) { return std::isfinite(e); }));  // row 0 computed
  CHECK(std::any_of(qt.begin(), qt.begin() + qrow, [](float e) { return e != 0.f; }));
}

// The segmented forward's scratch is carved from the call's workspace and counted by workspace_size: a caller's
// workspace gives the cached one's bytes, too small a one is a clear error before anything is written.
TEST_CASE("cuda::launch: the segmented forward's scratch in a caller's workspace") {
  const cuda::launch cut{.segment_tokens = 128};
  launch_case<gated_delta, read::identity, form::chunkwise, bf16> x(long_rows);
  const auto cached = x.run(cut);
  CHECK(written(cached));
  const std::size_t bytes = cuda::workspace_size<gated_delta, read::identity>(x.a, cut);
  // at least two states per piece (6 pieces a row, 2 rows; [HV, K, V] float32): the pieces' ends and starts
  CHECK(bytes >= 2 * 12 * sizeof(float) * 2 * 64 * 64);
  CHECK(cuda::workspace_size<gated_delta, read::identity>(x.a, {.segment_tokens = 0}) == 0);  // never cut
  device_array<unsigned char> ws(bytes);
  CHECK(x.run({.workspace = ws.ptr, .workspace_bytes = bytes, .segment_tokens = 128}) == cached);
  launch_case<gated_delta, read::identity, form::chunkwise, bf16> y(long_rows);
  expect_error([&] { y.launch({.workspace = ws.ptr, .workspace_bytes = bytes - 1, .segment_tokens = 128}); },
               {"'workspace'", std::to_string(bytes - 1) + " bytes", "needs " + std::to_string(bytes), "workspace_size"});
  CHECK(all_poison(y.outputs()));
}

TEST_CASE("cuda::launch: a whole call is captured from its stream into a CUDA graph") {
  // Capture fails on any work sent elsewhere (the legacy default stream orders with this blocking stream) and on
  // any wait for the device; the graph then replays the call.
  using D = read::ccq<read::decayed>;
  launch_case<kda, D, form::chunkwise, float> x(varlen);
  const auto plain = x.run({});
  stream s;
  device_array<std::int64_t> cu(x.c.cu_seqlens);
  x.a.cu_seqlens = {};
  cuda::launch l{.stream = s.s, .cu_seqlens = {cu.ptr, cu.size}};
  const std::size_t bytes = cuda::workspace_size<kda, D>(x.a, l);
  device_array<unsigned char> ws(bytes);
  l.workspace = ws.ptr, l.workspace_bytes = bytes;
  x.launch(l);  // warm-up: pointer checks remembered, shared-memory attributes set
  cuda_ok(cudaStreamSynchronize(s.s));
  cudaGraph_t graph = nullptr;
  cuda_ok(cudaStreamBeginCapture(s.s, cudaStreamCaptureModeRelaxed));
  x.launch(l);
  cuda_ok(cudaStreamEndCapture(s.s, &graph));
  std::size_t nodes = 0;
  cuda_ok(cudaGraphGetNodes(graph, nullptr, &nodes));
  CHECK(nodes >= 3);  // statistics pass, cleaned queries, main pass
  cudaGraphExec_t exec = nullptr;
  cuda_ok(cudaGraphInstantiate(&exec, graph, 0));
  cuda_ok(cudaMemset(x.d.o, 0xFF, x.c.o.size() * sizeof(float)));
  cuda_ok(cudaGraphLaunch(exec, s.s));
  cuda_ok(cudaStreamSynchronize(s.s));
  CHECK(x.outputs() == plain);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

TEST_CASE("cuda::launch: a caller's workspace gives the cached workspace's bytes; workspace_size") {
  using U = read::ccq<read::uniform>;
  launch_case<gated_delta, U, form::chunkwise, bf16> x(varlen);
  const auto cached = x.run({});
  CHECK(written(cached));
  const std::size_t bytes = cuda::workspace_size<gated_delta, U>(x.a);
  const std::size_t scratch = 2 * sizeof(float) * static_cast<std::size_t>(x.c.shape.T * 2 * 32);  // Y and q̃ [1, T, HV, K]
  CHECK(bytes >= scratch + x.c.cu_seqlens.size() * sizeof(std::int64_t));
  device_array<unsigned char> ws(bytes);
  CHECK(x.run({.workspace = ws.ptr, .workspace_bytes = bytes}) == cached);
  // The identity read with no host index arrays needs no workspace at all.
  launch_case<gated_delta, read::identity, form::chunkwise, bf16> y(pipeline);
  CHECK(cuda::workspace_size<gated_delta, read::identity>(y.a) == 0);
  CHECK(cuda::workspace_size<gated_delta, read::identity>(x.a) > 0);  // host cu_seqlens: copied into it
  // Released cached workspaces come back on the next call.
  cuda::release_workspaces();
  CHECK(x.run({}) == cached);
}

TEST_CASE("cuda::launch: too small a workspace is a clear error before anything is written") {
  using D = read::ccq<read::decayed>;
  launch_case<kda, D, form::chunkwise, float> x(varlen);
  const std::size_t bytes = cuda::workspace_size<kda, D>(x.a);
  device_array<unsigned char> ws(bytes);
  expect_error([&] { x.launch({.workspace = ws.ptr, .workspace_bytes = bytes - 1}); },
               {"'workspace'", std::to_string(bytes - 1) + " bytes", "needs " + std::to_string(bytes), "workspace_size"});
  CHECK(all_poison(x.outputs()));
}

TEST_CASE("cuda::launch: device-side state_indices and cu_seqlens give the host spans' bytes") {
  SUBCASE("decode step over a state pool") {
    launch_case<gated_delta, read::identity, form::step, bf16> x(rows);
    x.a.state_indices = pool_rows;  // the host span
    const auto from_host = x.run({});
    CHECK(written(from_host));
    device_array<std::int32_t> idx(pool_rows);
    x.a.state_indices = {};
    CHECK(x.run({.state_indices = {idx.ptr, idx.size}}) == from_host);
    CHECK(x.run({.state_indices = {idx.ptr, idx.size}, .check_indices = true}) == from_host);
  }
  SUBCASE("packed sequences, int64 and int32, chunkwise and recurrent") {
    launch_case<gated_delta, read::identity, form::chunkwise, float> x(varlen);
    const auto from_host = x.run({});
    CHECK(written(from_host));
    const std::vector<std::int32_t> cu32(x.c.cu_seqlens.begin(), x.c.cu_seqlens.end());
    device_array<std::int64_t> cu64(x.c.cu_seqlens);
    device_array<std::int32_t> cu32d(cu32);
    x.a.cu_seqlens = {};
    CHECK(x.run({.cu_seqlens = {cu64.ptr, cu64.size}}) == from_host);
    CHECK(x.run({.cu_seqlens = {cu32d.ptr, cu32d.size}, .check_indices = true}) == from_host);
    launch_case<kda, read::identity, form::recurrent, bf16> r(varlen);
    const auto r_host = r.run({});
    r.a.cu_seqlens = {};
    CHECK(r.run({.cu_seqlens = {cu32d.ptr, cu32d.size}}) == r_host);
  }
}

TEST_CASE("cuda::launch: bad device-side indices") {
  launch_case<gated_delta, read::identity, form::step, float> x(rows);  // a pool of N = 5 states
  auto reject = [&](const std::vector<std::int32_t>& bad, const std::vector<std::string>& words) {
    device_array<std::int32_t> idx(bad);
    expect_error([&] { x.launch({.state_indices = {idx.ptr, idx.size}, .check_indices = true}); }, words);
    CHECK(all_poison(x.outputs()));
  };
  SUBCASE("checked: out of range") { reject({0, 1, 5, 2, 3}, {"'state_indices[2]'", "outside [-1, N)", "N = 5"}); }
  SUBCASE("checked: below -1") { reject({0, -2, 1, 2, 3}, {"'state_indices[1]'", "outside [-1, N)"}); }
  SUBCASE("checked: one state for two rows that write it") {
    reject({0, 1, 2, 1, 3}, {"'state_indices[3]'", "another batch row"});
  }
  SUBCASE("checked: the count is the host's to check") {
    device_array<std::int32_t> idx(std::vector<std::int32_t>{0, 1, 2});
    expect_error([&] { x.launch({.state_indices = {idx.ptr, idx.size}}); }, {"'state_indices'", "3 entries", "B = 5"});
  }
  SUBCASE("checked: cu_seqlens") {
    launch_case<gated_delta, read::identity, form::chunkwise, float> y(varlen);
    std::vector<std::int64_t> bad = y.c.cu_seqlens;
    bad[2] = bad[1] - 1;  // decreases
    device_array<std::int64_t> cu(bad);
    y.a.cu_seqlens = {};
    expect_error([&] { y.launch({.cu_seqlens = {cu.ptr, cu.size}, .check_indices = true}); },
                 {"'cu_seqlens[2]'", "non-decreasing"});
    CHECK(all_poison(y.outputs()));
  }
  SUBCASE("unchecked: an index outside [-1, N) skips its row") {
    device_array<std::int32_t> idx(std::vector<std::int32_t>{3, 99, 0, 4, -7});
    x.launch({.state_indices = {idx.ptr, idx.size}});
    cuda_ok(cudaDeviceSynchronize());
    tensor<float, 4> o(x.c.o.extents());
    tensor<float, 4> pool(x.c.ht.extents());
    copy_back(o, x.d.o), copy_back(pool, x.d.ht);
    const std::size_t row = static_cast<std::size_t>(4 * 48), state = static_cast<std::size_t>(4 * 64 * 48);
    for (std::size_t b : {std::size_t(1), std::size_t(4)})
      for (std::size_t e = 0; e < row; ++e) REQUIRE(o.data()[b * row + e] == 0.f);
    for (std::size_t n : {std::size_t(1), std::size_t(2)}) {  // states no valid row names: untouched
      const auto* p = reinterpret_cast<const unsigned char*>(pool.data() + n * state);
      CHECK(std::all_of(p, p + state * sizeof(float), [](unsigned char b) { return b == 0xFF; }));
    }
  }
}

}  // TEST_SUITE("launch")

}  // namespace linea::testing
