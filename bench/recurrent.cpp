// bench/recurrent.cpp — every form on the CPU backend, every rule, with the counters of bench/common.hpp.
//
//   recurrent/<rule>/identity/{f32,bf16}/threads:{1,2}   B = 1, H = 16, K = V = 128, T = 4096
//   chunkwise/<rule>/identity/{f32,bf16}/threads:{1,2}   the same shape, chunk 64 (forms/chunkwise.hpp)
//   recurrent/{gla,gated_delta_rule}/ccq/f32/threads:1    + the CCQ read (uniform weighting)
//   step/<rule>/identity/f32/threads:{1,2}               one token for a batch of 64 states, in place
//   generic/<rule>/identity/f32/threads:1                the plain fused loops (backend::generic), for comparison
//   reference/<rule>/identity/f64/threads:1              the float64 oracle, for comparison (one iteration)
#include <linea/forms/chunkwise.hpp>

#include "../tests/read/ccq_inputs.hpp"
#include "common.hpp"

namespace linea_bench {
namespace {

using namespace linea;

template <class Rule, class T, class Backend>
void recurrent_bench(benchmark::State& st, int threads) {
  const shape s;
  auto& c = inputs<Rule, T>(s);
  auto a = c.args();
  a.residual = {};
  a.threads = threads;
  timed_loop(st, double(s.B * s.T), 4.0 * s.K * s.V * s.T * s.B * s.H, threads,
             [&] { recurrent<Rule, read::identity, Backend>(a); });
}

template <class Rule, class T>
void chunkwise_bench(benchmark::State& st, int threads) {
  const shape s;
  auto& c = inputs<Rule, T>(s);
  auto a = c.args();
  a.residual = {};
  a.threads = threads;
  timed_loop(st, double(s.B * s.T), 4.0 * s.K * s.V * s.T * s.B * s.H, threads, [&] { chunkwise<Rule>(a); });
}

template <class Rule>
void recurrent_ccq_bench(benchmark::State& st, int threads) {
  const shape s;
  auto& c = inputs<Rule, float>(s);
  static auto stats = testing::ccq_tensors<float>::make(c.shape, c.N, {});
  auto a = c.args();
  a.residual = {};
  a.threads = threads;
  stats.attach(a);
  a.ccq.q_tilde = {};
  timed_loop(st, double(s.B * s.T), 4.0 * s.K * s.V * s.T * s.B * s.H, threads,
             [&] { recurrent<Rule, read::ccq<read::uniform>>(a); });
}

template <class Rule>
void reference_bench(benchmark::State& st, int) {
  const shape s;
  auto& c = inputs<Rule, double>(s);
  auto a = c.args();
  a.residual = {};
  timed_loop(st, double(s.B * s.T), 4.0 * s.K * s.V * s.T * s.B * s.H, 1, [&] { reference::recurrent<Rule>(a); });
}

template <class Rule, class T>
void step_bench(benchmark::State& st, int threads) {
  const shape s;
  static auto c = testing::random_case<Rule, T>::make(
      {.B = decode_batch, .T = 1, .H = s.H, .HV = s.H, .K = s.K, .V = s.V, .initial_state = true, .seed = 9});
  auto a = c.args();
  a.residual = {};
  a.final_state = c.h0.view_of();  // in place, as a serving engine updates its state pool
  a.threads = threads;
  timed_loop(st, double(decode_batch), 4.0 * s.K * s.V * decode_batch * s.H, threads, [&] { step<Rule>(a); });
}

template <class Rule>
void register_rule() {
  const char* rule = rule_name<Rule>::value;
  auto reg = [](const std::string& n, auto fn, int threads) {
    benchmark::RegisterBenchmark(n.c_str(), fn, threads)->UseManualTime()->Unit(benchmark::kMillisecond);
  };
  for (int threads : {1, 2}) {
    reg(name("recurrent", rule, "identity", "f32", threads), recurrent_bench<Rule, float, backend::cpu>, threads);
    reg(name("recurrent", rule, "identity", "bf16", threads), recurrent_bench<Rule, bf16, backend::cpu>, threads);
  }
  for (int threads : {1, 2}) {
    reg(name("chunkwise", rule, "identity", "f32", threads), chunkwise_bench<Rule, float>, threads);
    reg(name("chunkwise", rule, "identity", "bf16", threads), chunkwise_bench<Rule, bf16>, threads);
  }
  if constexpr (std::is_same_v<Rule, gla> || std::is_same_v<Rule, gated_delta>)
    reg(name("recurrent", rule, "ccq", "f32", 1), recurrent_ccq_bench<Rule>, 1);
  for (int threads : {1, 2}) reg(name("step", rule, "identity", "f32", threads), step_bench<Rule, float>, threads);
  benchmark::RegisterBenchmark(name("generic", rule, "identity", "f32", 1).c_str(),
                               recurrent_bench<Rule, float, backend::generic>, 1)
      ->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(1);
  benchmark::RegisterBenchmark(name("reference", rule, "identity", "f64", 1).c_str(), reference_bench<Rule>, 1)
      ->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(1);
}

[[maybe_unused]] const bool registered = [] {
  all_rules::for_each([]<class Rule>() { register_rule<Rule>(); });
  return true;
}();

}  // namespace
}  // namespace linea_bench
