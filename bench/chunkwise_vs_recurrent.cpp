// bench/chunkwise_vs_recurrent.cpp — the chunkwise form against the recurrent form, same inputs, same outputs.
//
//   chunkwise/<rule>/identity/f32/threads:1/C:<n>   chunks of n = 16, 32, 64, 128 (forms/chunkwise.hpp)
//
// The recurrent form at this shape is bench/recurrent.cpp's recurrent/<rule>/identity/f32/threads:1, so
// `--benchmark_filter='(recurrent|chunkwise)/(gated_delta_rule|gla)/identity/f32/threads:1'` gives the comparison.
//
// Shape: B = 1, H = HV = 16, K = V = 128, T = 4096, float32, one thread, for gated_delta and gla.
// Both forms also write the final state (a prefill returns it), not the residual. Google Benchmark's CPU time of
// the calling thread is the figure to read on a shared machine.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include <linea/linea.hpp>

#include "../tests/support/inputs.hpp"

namespace {

using namespace linea;
using linea::testing::random_case;

constexpr index_t B = 1, T = 4096, H = 16, K = 128, V = 128;

template <class Rule>
random_case<Rule, float>& inputs() {
  static auto c = std::make_unique<random_case<Rule, float>>(
      random_case<Rule, float>::make({.B = B, .T = T, .H = H, .HV = H, .K = K, .V = V, .seed = 3}));
  return *c;
}

template <class Rule>
void run_form(benchmark::State& st, index_t C) {
  auto& c = inputs<Rule>();
  auto a = c.args();
  a.residual = {};
  a.threads = 1;
  a.chunk_size = C;
  for (auto _ : st) {
    chunkwise<Rule>(a);
    benchmark::DoNotOptimize(c.o.data());
    benchmark::ClobberMemory();
  }
  st.counters["tokens/s"] = benchmark::Counter(double(B * T) * double(st.iterations()), benchmark::Counter::kIsRate);
}

template <class Rule>
void register_rule() {
  const std::string tail = std::string("/") + rule_name<Rule>::value + "/identity/f32/threads:1";
  for (index_t C : {16, 32, 64, 128})
    benchmark::RegisterBenchmark(("chunkwise" + tail + "/C:" + std::to_string(C)).c_str(), run_form<Rule>, C)
        ->Unit(benchmark::kMillisecond);
}

[[maybe_unused]] const bool registered = [] {
  register_rule<gated_delta>();
  register_rule<gla>();
  return true;
}();

}  // namespace
