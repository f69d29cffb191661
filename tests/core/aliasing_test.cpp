// Aliasing (core/aliasing.hpp, docs/usage.md "Aliasing"): an output that partly overlaps an input or another output,
// or that has stride 0 over an extent > 1, is a linea::error naming both arguments, thrown before anything is written
// (every buffer involved comes back bit for bit); the exact in-place pairs o == v and final_state == initial_state
// give the float64 reference's result in every form (recurrent, chunkwise, step) on cpu, generic and reference.
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <linea/forms/chunkwise.hpp>

#include "support/compare.hpp"
#include "support/rejection.hpp"
#include "support/slice.hpp"
#include "support/tolerance.hpp"

using namespace linea;
using namespace linea::testing;

namespace {

using Rule = gated_delta;

// B = 2, T = 10, H = 2, HV = 4 (G = 2), K = 16, V = 8.
const case_shape base{.B = 2, .T = 10, .H = 2, .HV = 4, .K = 16, .V = 8, .initial_state = true};

// One aliasing row: `breaks` re-points views of valid arguments into `pool` (a buffer the row sizes itself).
struct alias_row {
  std::string what;
  std::function<void(arguments<float>&, std::vector<float>& pool)> breaks;
  std::vector<std::string> words;
  bool chunkwise_only = false;
};

template <class X>
std::vector<unsigned char> bytes(const std::vector<X>& x) {
  std::vector<unsigned char> b(x.size() * sizeof(X));
  std::memcpy(b.data(), x.data(), b.size());
  return b;
}

// Every form and backend rejects the row, and no buffer changed.
void check_alias_row(const alias_row& row) {
  INFO("aliasing: ", row.what);
  auto c = sentinel_case<Rule>(base);
  std::vector<float> pool(4096, 0.f);  // never resized: the rows' views point into it
  auto a = c.args();
  row.breaks(a, pool);
  const auto pool0 = bytes(pool), o0 = bytes(c.o.values()), h0 = bytes(c.h0.values()), ht0 = bytes(c.ht.values());
  const auto k0 = bytes(c.k.values()), res0 = bytes(c.residual.values());
  auto unchanged = [&] {
    CHECK(bytes(pool) == pool0);
    CHECK(bytes(c.o.values()) == o0);
    CHECK(bytes(c.h0.values()) == h0);
    CHECK(bytes(c.ht.values()) == ht0);
    CHECK(bytes(c.k.values()) == k0);
    CHECK(bytes(c.residual.values()) == res0);
  };
  if (!row.chunkwise_only) {
    expect_error([&] { recurrent<Rule, read::identity, backend::cpu>(a); }, row.words), unchanged();
    expect_error([&] { recurrent<Rule, read::identity, backend::generic>(a); }, row.words), unchanged();
    expect_error([&] { recurrent<Rule, read::identity, backend::reference>(a); }, row.words), unchanged();
  }
  expect_error([&] { chunkwise<Rule, read::identity, backend::cpu>(a); }, row.words), unchanged();
}

// A contiguous copy of the rank-4 view x at `offset` in pool; returns the view there.
template <class T>
view<float, 4> into_pool(std::vector<float>& pool, const view<T, 4>& x, index_t offset) {
  auto v = contiguous<4>(std::span(pool).subspan(static_cast<std::size_t>(offset)),
                         {x.extent(0), x.extent(1), x.extent(2), x.extent(3)}, "pool");
  for (index_t a = 0; a < x.extent(0); ++a)
    for (index_t b = 0; b < x.extent(1); ++b)
      for (index_t h = 0; h < x.extent(2); ++h)
        for (index_t d = 0; d < x.extent(3); ++d) v(a, b, h, d) = float(x(a, b, h, d));
  return v;
}

}  // namespace

TEST_CASE("aliasing: partly overlapping outputs are rejected, naming both arguments, before anything is written") {
  const alias_row rows[] = {
      {.what = "o over k (a key head shared by G = 2 value heads)",
       .breaks = [](auto& a, auto& pool) {
         a.k = into_pool(pool, a.k, 0);
         a.o = into_pool(pool, view<const float, 4>(a.o), 16);  // o starts one key row into k
       },
       .words = {"'o'", "'k'", "overlaps", "[2, 10, 4, 8]", "[2, 10, 2, 16]"}},
      {.what = "final_state over initial_state, shifted by one head",
       .breaks = [](auto& a, auto& pool) {
         a.initial_state = into_pool(pool, a.initial_state, 0);
         a.final_state = into_pool(pool, view<const float, 4>(a.final_state), 16 * 8);
       },
       .words = {"'final_state'", "'initial_state'", "overlaps"}},
      {.what = "residual in the same buffer as o",
       .breaks = [](auto& a, auto& pool) {
         a.o = into_pool(pool, view<const float, 4>(a.o), 0);
         a.residual = into_pool(pool, view<const float, 4>(a.residual), 300);
       },
       .words = {"'o'", "'residual'", "overlaps"}},
      {.what = "residual exactly over o (only o == v and final_state == initial_state may coincide)",
       .breaks = [](auto& a, auto&) { a.residual = a.o; },
       .words = {"'o'", "'residual'", "overlaps"}},
      {.what = "o over v, shifted by one value row",
       .breaks = [](auto& a, auto& pool) {
         a.v = into_pool(pool, a.v, 0);
         a.o = into_pool(pool, view<const float, 4>(a.o), 8);
       },
       .words = {"'o'", "'v'", "overlaps"}},
      {.what = "o over v with the same pointer but other strides (head-first)",
       .breaks = [](auto& a, auto& pool) {
         a.v = into_pool(pool, a.v, 0);
         auto o = into_pool(pool, view<const float, 4>(a.o), 0);
         o.str[1] = 8, o.str[2] = 10 * 8;  // [B, HV, T, V] memory
         a.o = o;
       },
       .words = {"'o'", "'v'", "overlaps"}},
      {.what = "final_state over q",
       .breaks = [](auto& a, auto& pool) {
         a.q = into_pool(pool, a.q, 0);
         a.final_state = into_pool(pool, view<const float, 4>(a.final_state), 600);
       },
       .words = {"'final_state'", "'q'", "overlaps"}},
      {.what = "checkpoints over the initial state",
       .breaks = [](auto& a, auto& pool) {
         a.initial_state = into_pool(pool, a.initial_state, 0);
         a.checkpoints = strided<5>(std::span(pool).subspan(512), {2, 1, 4, 16, 8}, {512, 512, 128, 8, 1});
         a.chunk_size = 16;
       },
       .words = {"'checkpoints'", "'initial_state'", "overlaps"},
       .chunkwise_only = true},
      {.what = "o with stride 0 over T",
       .breaks = [](auto& a, auto&) { a.o.str[1] = 0; },
       .words = {"'o'", "stride 0", "axis 1"}},
      {.what = "final_state with stride 0 over the sequences",
       .breaks = [](auto& a, auto&) { a.final_state.str[0] = 0; },
       .words = {"'final_state'", "stride 0", "axis 0"}},
      {.what = "residual with stride 0 over B",
       .breaks = [](auto& a, auto&) { a.residual.str[0] = 0; },
       .words = {"'residual'", "stride 0", "axis 0"}},
      // Strides that are not 0 can still put two positions on one element: a token stride of one value row (8)
      // makes token t + 1, head h the element of token t, head h + 1. Threads wrote over each other before.
      {.what = "o whose token stride is one value row (tokens and heads share elements)",
       .breaks = [](auto& a, auto&) { a.o.str[1] = 8; },
       .words = {"'o'", "[2, 10, 4, 8]", "strides [320, 8, 8, 1]", "one element"}},
      {.what = "final_state with a row stride shorter than the row",
       .breaks = [](auto& a, auto&) { a.final_state.str[2] = 4; },
       .words = {"'final_state'", "one element", "axis 2"}},
  };
  for (const auto& row : rows) check_alias_row(row);
}

TEST_CASE("aliasing: a stride-0 input (g_gamma) and two outputs side by side in one buffer are accepted") {
  auto c = random_case<Rule, float>::make(base);
  const std::vector<float> gamma{-0.1f, -0.5f, -0.02f, -1.f};  // one log decay per value head (g_gamma)
  for (index_t b = 0; b < 2; ++b)
    for (index_t t = 0; t < 10; ++t)
      for (index_t hv = 0; hv < 4; ++hv) c.g(b, t, hv) = gamma[static_cast<std::size_t>(hv)];
  auto ref = c.cast<double>();
  reference::recurrent<Rule>(ref.args());
  std::vector<float> both(2 * c.o.size());  // [2, B, T, HV, V]: o, then the residual
  auto a = c.args();
  a.g = strided<3>(std::span(gamma), {2, 10, 4}, {0, 0, 1}, "g");
  a.o = contiguous<4>(std::span(both).first(c.o.size()), {2, 10, 4, 8}, "o");
  a.residual = contiguous<4>(std::span(both).last(c.o.size()), {2, 10, 4, 8}, "residual");
  recurrent<Rule>(a);
  std::copy(both.begin(), both.begin() + static_cast<std::ptrdiff_t>(c.o.size()), c.o.data());
  std::copy(both.begin() + static_cast<std::ptrdiff_t>(c.o.size()), both.end(), c.residual.data());
  CHECK(relative_error(c.o, ref.o) <= tolerance_for<float>());
  CHECK(relative_error(c.residual, ref.residual) <= tolerance_for<float>());
}

namespace {

// The in-place pairs: o over v (same view) and final_state over initial_state, on form F; compared with the
// float64 reference run on separate buffers.
template <class R, class Run>
void check_in_place(const char* form, Run run, index_t T = 37) {
  const case_shape s{.B = 2, .T = T, .H = 2, .HV = 4, .K = 16, .V = 16, .initial_state = true, .seed = 21};
  auto c = random_case<R, float>::make(s);
  auto ref = c.template cast<double>();
  reference::recurrent<R>(ref.args());
  auto a = c.args();
  a.o = c.v.view_of(), a.final_state = c.h0.view_of(), a.residual = {};
  run(a);
  INFO(rule_name<R>::value, " ", form, " in place: o == v, final_state == initial_state");
  CHECK(relative_error(c.v, ref.o) <= tolerance_for<float>(T));
  CHECK(relative_error(c.h0, ref.ht) <= tolerance_for<float>(T));
}

template <class R, class Backend>
void check_in_place_forms(const char* backend_name) {
  INFO("backend ", backend_name);
  check_in_place<R>("recurrent", [](const auto& a) { recurrent<R, read::identity, Backend>(a); });
  if constexpr (!std::is_same_v<Backend, backend::reference>)
    check_in_place<R>("chunkwise", [](auto a) {
      a.chunk_size = 16;
      chunkwise<R, read::identity, Backend>(a);
    });
  // The decode step token by token (the reference has none: its recurrent form one token at a time).
  check_in_place<R>("step", [](const auto& a) {
    for (index_t t = 0; t < a.q.extent(1); ++t) {
      if constexpr (std::is_same_v<Backend, backend::reference>)
        recurrent<R, read::identity, Backend>(time_slice_args(a, t, t + 1));
      else
        step<R, read::identity, Backend>(time_slice_args(a, t, t + 1));
    }
  });
}

}  // namespace

TEST_CASE_TEMPLATE("aliasing: exact in-place o == v and final_state == initial_state equal the reference", R, additive,
                   simple_gla, gla, gated_delta, kda, gdn2) {
  check_in_place_forms<R, backend::cpu>("cpu");
  check_in_place_forms<R, backend::generic>("generic");
  check_in_place_forms<R, backend::reference>("reference");
}

TEST_CASE("aliasing: two gradient views of the reference backward must not overlap") {
  auto c = random_case<Rule, double>::make(base);
  auto a = c.args();
  tensor<double, 4> d_o({2, 10, 4, 8}, 1.0);
  std::vector<double> pool(2 * 10 * 2 * 16 + 16, 7.0);
  gradients<double> g{.d_o = d_o};
  g.dq = contiguous<4>(std::span(pool).first(640), {2, 10, 2, 16}, "dq");
  g.dk = contiguous<4>(std::span(pool).subspan(16, 640), {2, 10, 2, 16}, "dk");
  const std::vector<double> before = pool;
  expect_error([&] { reference::backward<Rule>(a, g); }, {"'dq'", "'dk'", "overlaps"});
  CHECK(pool == before);
}

// A caller's scratch buffer (the CUDA backend's cuda::launch::workspace) is overwritten while a call still reads its
// inputs and before it writes its outputs: detail::expect_scratch_apart rejects one that shares a byte with any
// argument — an input, an output, and with the gradients given, d_o and a gradient — naming both; a disjoint, null
// or empty one passes.
TEST_CASE("aliasing: a caller's scratch buffer may share memory with no argument") {
  auto c = random_case<Rule, float>::make(base);
  const arguments<float> a = c.args();
  std::vector<unsigned char> apart(256);
  CHECK_NOTHROW(detail::expect_scratch_apart(apart.data(), apart.size(), "'scratch'", a));
  CHECK_NOTHROW(detail::expect_scratch_apart(nullptr, 64, "'scratch'", a));
  CHECK_NOTHROW(detail::expect_scratch_apart(a.q.ptr, 0, "'scratch'", a));
  expect_error([&] { detail::expect_scratch_apart(a.k.ptr + 3, 64, "'scratch'", a); }, {"'scratch'", "'k'", "overlaps"});
  expect_error([&] { detail::expect_scratch_apart(a.beta.ptr, 4, "'scratch'", a); }, {"'scratch'", "'beta'"});
  expect_error([&] { detail::expect_scratch_apart(a.o.ptr + a.o.size() - 1, 64, "'scratch'", a); }, {"'o'"});
  expect_error([&] { detail::expect_scratch_apart(a.final_state.ptr, 1, "'scratch'", a); }, {"'final_state'"});
  // one byte before q ends just where q begins: apart
  CHECK_NOTHROW(detail::expect_scratch_apart(reinterpret_cast<const unsigned char*>(a.q.ptr) - 64, 64, "'scratch'", a));
  tensor<float, 4> d_o({2, 10, 4, 8}, 1.0f), dq({2, 10, 2, 16});
  gradients<float> g{.d_o = d_o, .dq = dq};
  CHECK_NOTHROW(detail::expect_scratch_apart(dq.data() + 5, 16, "'scratch'", a));  // without the gradients
  expect_error([&] { detail::expect_scratch_apart(dq.data() + 5, 16, "'scratch'", a, &g); }, {"'scratch'", "'dq'"});
  expect_error([&] { detail::expect_scratch_apart(d_o.data(), 16, "'scratch'", a, &g); }, {"'d_o'"});
}

// An exact in-place pair is the same elements in the same order whatever stride an axis of extent 1 carries (a
// framework's view at B = 1 may report any); a different stride over a longer axis is another layout.
TEST_CASE("aliasing: an axis of extent 1 does not tell two views apart") {
  std::vector<float> buffer(40);
  const auto x = strided<4>(std::span(buffer), {1, 5, 2, 4}, {40, 8, 4, 1}, "x");
  const auto y = strided<4>(std::span(buffer), {1, 5, 2, 4}, {7, 8, 4, 1}, "y");
  const auto z = strided<4>(std::span(buffer), {1, 5, 2, 4}, {40, 8, 1, 2}, "z");
  CHECK(detail::same_elements(x, y));
  CHECK_FALSE(detail::same_elements(x, z));
}
