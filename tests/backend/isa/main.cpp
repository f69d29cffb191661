// The two-instruction-set test (ctest `isa_symbols`): forms.cpp compiled with -mavx2 -mfma and with -mno-avx
// in one executable. Before the instruction set was part of the symbols (backend/isa.hpp), both units called
// one copy of each form, whichever the linker kept (SIGILL on a CPU without AVX2, or lane counts that disagree
// with the caller). Checks: the units report different instruction sets, their form instantiations are
// different functions, and each unit's results match the float64 reference within SPEC §5; each unit's CCQ
// backward (gated_delta with uniform statistics and initial ones, kda with decayed statistics) matches the float64
// reference backward within SPEC §6 in every gradient, and is finite.
// tests/backend/isa/shared_symbols.cmake checks the object files for any shared SIMD symbol.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <utility>

#include "forms.hpp"
#include "read/ccq_inputs.hpp"
#include "support/compare.hpp"
#include "support/gradient_buffers.hpp"
#include "support/inputs.hpp"
#include "support/tolerance.hpp"

namespace t = linea::testing;

namespace {

// One CCQ backward case: `entry` (a unit's linea::backward<Rule, Read, cpu, float, float>) on random float inputs,
// against linea::reference::backward<Rule, Read> on their float64 twin. Prints one line; true when every gradient
// is finite and within SPEC §6.
template <class Rule, class Read>
bool ccq_backward_matches(const char* name, isa_backward entry, const t::case_shape& shape, const t::ccq_options& o) {
  auto c = t::random_case<Rule, float>::make(shape);
  auto ref = c.template cast<double>();
  auto s = t::ccq_tensors<float>::make(c.shape, c.N, o);
  auto s_ref = s.template cast<double>();
  linea::arguments<float> a = c.args();
  linea::arguments<double> a_ref = ref.args();
  s.attach(a), s_ref.attach(a_ref);

  std::mt19937 rng(shape.seed + 5);
  std::normal_distribution<double> normal(0.0, 1.0);
  linea::tensor<float, 4> d_o(c.o.extents()), dht(c.ht.extents());
  for (auto& x : d_o.values()) x = float(normal(rng));
  for (auto& x : dht.values()) x = float(normal(rng));
  linea::tensor<double, 4> d_o_ref(d_o.extents()), dht_ref(dht.extents());
  for (std::size_t i = 0; i < d_o.size(); ++i) d_o_ref.data()[i] = d_o.data()[i];
  for (std::size_t i = 0; i < dht.size(); ++i) dht_ref.data()[i] = dht.data()[i];

  const auto& sh = c.shape;
  const auto sizes = [&](auto& buffers) {  // gradient_buffers<float> and <double> each name their own sizes
    return typename std::remove_reference_t<decltype(buffers)>::sizes{c.N, sh.B, sh.T, sh.H, sh.HV, sh.K, sh.V};
  };
  const auto nan_fill = [](auto& x) {  // a gradient left unwritten fails
    for (auto& e : x.values()) e = std::remove_reference_t<decltype(e)>(std::nan(""));
  };
  t::gradient_buffers<float> out;
  t::gradient_buffers<double> truth;
  entry(a, out.make(a, d_o, dht, sizes(out), false, true, nan_fill));
  linea::reference::backward<Rule, Read>(a_ref, truth.make(a_ref, d_o_ref, dht_ref, sizes(truth), false, true, nan_fill));

  bool ok = true;
  int compared = 0;
  double worst = 0;
  out.for_each(truth, [&](const char* gradient, const auto& x, const auto& r) {
    if (x.size() == 0 && r.size() == 0) return;
    const double err = x.size() == r.size() ? t::relative_error(x, r) : std::numeric_limits<double>::infinity();
    if (!(err <= t::gradient_tolerance_for<float>()) || !t::all_finite(x)) {
      std::printf("  %s: %s off by %.1e (or not finite)\n", name, gradient, err);
      ok = false;
    }
    worst = err > worst ? err : worst;
    ++compared;
  });
  std::printf("  %s: %d gradients, worst %.1e\n", name, compared, worst);
  return ok && compared > 0;
}

}  // namespace

int main() {
  using rule = linea::gated_delta;
  auto c = t::random_case<rule, float>::make({.B = 2, .T = 100, .H = 2, .HV = 4, .K = 32, .V = 16, .initial_state = true});
  auto ref = c.cast<double>();
  linea::reference::recurrent<rule>(ref.args());

  int failures = 0;
  const auto check = [&](const char* what, bool ok) {
    std::printf("%s: %s\n", ok ? "PASS" : "FAIL", what);
    failures += ok ? 0 : 1;
  };
  const auto run = [&](const char* name, auto entry) {
    auto chunk = c, rec = c;  // separate outputs per form
    const isa_unit u = entry(chunk.args(), rec.args());
    const double ec = t::relative_error(chunk.o, ref.o), er = t::relative_error(rec.o, ref.o);
    const double sc = t::relative_error(chunk.ht, ref.ht), sr = t::relative_error(rec.ht, ref.ht);
    std::printf("%s unit (%s): chunkwise o %.1e S %.1e, recurrent o %.1e S %.1e\n", name, u.isa, ec, sc, er, sr);
    const double tol = t::tolerance_for<float>(100);
    check(name, ec <= tol && sc <= tol && er <= tol && sr <= tol);
    return u;
  };
  const isa_unit wide = run("-mavx2 -mfma", run_wide);
  const isa_unit base = run("-mno-avx", run_baseline);
  // The CCQ backward (T = 70: more than one of the backward's chunks, K = 32 on both lane counts).
  const t::case_shape shape{.B = 2, .T = 70, .H = 2, .HV = 4, .K = 32, .V = 16, .initial_state = true, .seed = 11};
  for (const auto& [name, u] : {std::pair{"-mavx2 -mfma", wide}, std::pair{"-mno-avx", base}}) {
    std::printf("%s unit (%s): CCQ backward against the float64 reference\n", name, u.isa);
    const bool gd = ccq_backward_matches<linea::gated_delta, linea::read::ccq<linea::read::uniform>>(
        "gated_delta ccq<uniform>", u.gated_delta_ccq, shape, {.initial_stats = true});
    const bool kda = ccq_backward_matches<linea::kda, linea::read::ccq<linea::read::decayed>>(
        "kda ccq<decayed>", u.kda_ccq, shape, {});
    check(name, gd && kda);
  }
  check("the two units were compiled for different instruction sets", std::strcmp(wide.isa, base.isa) != 0);
  check("linea::chunkwise is a different function in each unit", wide.chunkwise_symbol != base.chunkwise_symbol);
  check("linea::recurrent is a different function in each unit", wide.recurrent_symbol != base.recurrent_symbol);
  check("the CCQ backwards are different functions in each unit",
        wide.gated_delta_ccq != base.gated_delta_ccq && wide.kda_ccq != base.kda_ccq);
  return failures == 0 ? 0 : 1;
}
