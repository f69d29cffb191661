// bench/ccq_cost.cpp — what the CCQ read costs on top of the identity read, in the chunkwise and recurrent forms.
//
//   <form>/<rule>/identity/f32/threads:1/ccq_cost      the backbone alone (same inputs as the CCQ runs)
//   <form>/<rule>/ccq/f32/threads:1/ccq_cost           + CCQ, uniform weighting
//   <form>/<rule>/ccq_decayed/f32/threads:1/ccq_cost   + CCQ, decayed weighting (rules with a decay)
// with <form> = chunkwise or recurrent
// (the suffix keeps these apart from bench/recurrent.cpp's chunkwise/<rule>/identity/f32/threads:1)
//
// Shape: B = 1, H = HV = 16, K = V = 128, T = 4096, chunk 64, float32. The ratio ccq / identity is
// the cost of CCQ (goals: chunkwise ≤ 1.3×, recurrent ≤ 1.5×). Timed in CPU time of the calling thread (the default of Google Benchmark), so
// that other processes on a shared machine do not distort the ratio.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include <linea/linea.hpp>
#include <linea/forms/chunkwise.hpp>

#include "../tests/read/ccq_inputs.hpp"
#include "../tests/support/inputs.hpp"

namespace {

using namespace linea;
using linea::testing::ccq_tensors;
using linea::testing::random_case;

constexpr index_t B = 1, T = 4096, H = 16, K = 128, V = 128;

template <class Rule>
struct ccq_bench_inputs {
  random_case<Rule, float> c = random_case<Rule, float>::make({.B = B, .T = T, .H = H, .HV = H, .K = K, .V = V, .seed = 7});
  ccq_tensors<float> s = ccq_tensors<float>::make(c.shape, c.N, {});
};

template <class Rule>
ccq_bench_inputs<Rule>& inputs() {
  static auto in = std::make_unique<ccq_bench_inputs<Rule>>();
  return *in;
}

template <class Rule, class Read, bool Recurrent>
void form_bench(benchmark::State& st) {
  auto& in = inputs<Rule>();
  auto a = in.c.args();
  a.residual = {};
  if constexpr (!Read::is_identity) {
    in.s.attach(a);
    a.ccq.q_tilde = {};  // an optional output: not part of the cost
  }
  for (auto _ : st) {
    if constexpr (Recurrent) recurrent<Rule, Read>(a);
    else chunkwise<Rule, Read>(a);
    benchmark::DoNotOptimize(in.c.o.data());
  }
  st.counters["tokens/s"] = benchmark::Counter(double(B * T) * double(st.iterations()), benchmark::Counter::kIsRate);
}

template <class Rule>
void register_rule() {
  const std::string rule = rule_name<Rule>::value;
  auto reg = [&](const char* form, const char* read, auto fn) {
    benchmark::RegisterBenchmark((std::string(form) + "/" + rule + "/" + read + "/f32/threads:1/ccq_cost").c_str(), fn)
        ->Unit(benchmark::kMillisecond)
        ->MinTime(1.0);
  };
  constexpr bool decays = linea::reads(Rule::inputs, linea::input::g | linea::input::gk);
  reg("chunkwise", "identity", form_bench<Rule, read::identity, false>);
  reg("chunkwise", "ccq", form_bench<Rule, read::ccq<read::uniform>, false>);
  if constexpr (decays) reg("chunkwise", "ccq_decayed", form_bench<Rule, read::ccq<read::decayed>, false>);
  reg("recurrent", "identity", form_bench<Rule, read::identity, true>);
  reg("recurrent", "ccq", form_bench<Rule, read::ccq<read::uniform>, true>);
  if constexpr (decays) reg("recurrent", "ccq_decayed", form_bench<Rule, read::ccq<read::decayed>, true>);
}

[[maybe_unused]] const bool registered = [] {
  all_rules::for_each([]<class Rule>() { register_rule<Rule>(); });
  return true;
}();

}  // namespace
