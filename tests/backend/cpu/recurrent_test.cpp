// CPU backend (SIMD kernels, threads) against the float64 reference: every rule, recurrent form, float and
// double inputs, 1 and 2 threads, every instruction set this build can run (native, AVX2, one scalar lane).
#include <doctest/doctest.h>

#include "support/rules.hpp"
#include "support/compare.hpp"
#include "support/inputs.hpp"
#include "support/tolerance.hpp"

using namespace linea;
using namespace linea::testing;

namespace {

template <class Rule, class T, class Backend>
void check_recurrent(case_shape shape, int threads) {
  auto c = random_case<Rule, T>::make(shape);
  auto ref = c.template cast<double>();
  auto a = c.args();
  a.threads = threads;
  recurrent<Rule, read::identity, Backend>(a);
  reference::recurrent<Rule>(ref.args());
  const double tol = tolerance_for<T>(shape.T);
  CHECK(all_finite(c.o));
  CHECK(relative_error(c.o, ref.o) <= tol);
  CHECK(relative_error(c.ht, ref.ht) <= tol);
  CHECK(relative_error(c.residual, ref.residual) <= tol);
}

// Shapes that exercise tails: K and V not multiples of the vector width, V wider than one tile, several
// blocks of tokens, packed sequences, head-first strides, grouped value heads, extreme decays.
const case_shape shapes[] = {
    {.B = 2, .T = 65, .H = 2, .HV = 4, .K = 32, .V = 16, .initial_state = true},
    {.B = 1, .T = 150, .H = 1, .HV = 2, .K = 20, .V = 70, .initial_state = true, .head_first = true},
    {.B = 1, .T = 0, .H = 2, .HV = 2, .K = 16, .V = 96, .seqlens = {1, 64, 65, 130}, .initial_state = true},
    {.B = 1, .T = 200, .H = 1, .HV = 1, .K = 128, .V = 128, .gates = gate_range::extreme, .beta_max = 2},
    {.B = 1, .T = 3, .H = 1, .HV = 3, .K = 7, .V = 5},
};

}  // namespace

TEST_CASE_TEMPLATE("cpu backend: recurrent matches the float64 reference (float)", Rule, LINEA_ALL_RULES) {
  for (const auto& s : shapes) {
    for (int threads : {1, 2}) {
      CAPTURE(s.K);
      CAPTURE(s.V);
      CAPTURE(s.T);
      CAPTURE(threads);
      check_recurrent<Rule, float, backend::cpu>(s, threads);
    }
    check_recurrent<Rule, float, backend::cpu_arch<backend::scalar_arch>>(s, 1);
#if XSIMD_WITH_AVX2
    check_recurrent<Rule, float, backend::cpu_arch<xsimd::avx2>>(s, 2);
#endif
  }
}

TEST_CASE_TEMPLATE("cpu backend: recurrent matches the float64 reference (double)", Rule, LINEA_ALL_RULES) {
  for (const auto& s : shapes) {
    CAPTURE(s.K);
    CAPTURE(s.V);
    CAPTURE(s.T);
    check_recurrent<Rule, double, backend::cpu>(s, 2);
  }
}

TEST_CASE_TEMPLATE("cpu backend: recurrent with 16-bit storage (bf16, fp16)", T, bf16, fp16) {
  const case_shape s{.B = 2, .T = 130, .H = 2, .HV = 4, .K = 64, .V = 48, .initial_state = true};
  check_recurrent<gla, T, backend::cpu>(s, 2);
  check_recurrent<gated_delta, T, backend::cpu>(s, 1);
  check_recurrent<kda, T, backend::cpu>(s, 2);
  check_recurrent<gdn2, T, backend::cpu>(s, 1);
  check_recurrent<additive, T, backend::cpu>(s, 1);
  check_recurrent<simple_gla, T, backend::cpu>(s, 1);
  check_recurrent<delta, T, backend::cpu>(s, 1);
}

TEST_CASE_TEMPLATE("cpu backend: chunkwise with 16-bit storage and 2 threads matches the float64 reference", T, bf16,
                   fp16) {
  const case_shape s{.B = 2, .T = 130, .H = 2, .HV = 4, .K = 64, .V = 48, .initial_state = true};
  auto run = [&](auto rule) {
    using Rule = decltype(rule);
    auto c = random_case<Rule, T>::make(s);
    auto ref = c.template cast<double>();
    auto a = c.args();
    a.threads = 2;
    chunkwise<Rule>(a);
    reference::recurrent<Rule>(ref.args());
    CHECK(relative_error(c.o, ref.o) <= tolerance_for<T>());
    CHECK(relative_error(c.ht, ref.ht) <= tolerance_for<T>());
  };
  run(gla{});
  run(gated_delta{});
  run(kda{});
  run(gdn2{});
}
