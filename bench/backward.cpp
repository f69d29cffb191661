// bench/backward.cpp — the CPU backward (linea::backward, backend/cpu/backward.hpp), every rule, with the
// counters of bench/common.hpp; the forward at the same shape is recurrent/ and chunkwise/ (bench/recurrent.cpp).
//
//   backward/<rule>/identity/f32/threads:{1,2}     B = 1, H = 16, K = V = 128, T = 4096, chunk 64: every gradient
//                                                 of the rule's inputs (dq, dk, dv, gates, dh0) from d_o and dht
//   backward/<rule>/identity/bf16/threads:1        the same with bf16 inputs and gradients
//   backward/gated_delta_rule/ccq/f32/threads:1   + the CCQ read (uniform weighting)
//   backward/{gated_delta_rule,kda}/identity/f32/threads:1/C:{16,32}   other checkpoint intervals
//
// GFLOP/s and peak_frac count a nominal 12·K·V flops per token per value head (3× the forward's nominal 4·K·V:
// the read's, the write's and the correction/decay's adjoints); the kernel does more (the forward twice: once
// for the chunk-boundary states, once per chunk to recompute them).
#include <linea/forms/backward.hpp>

#include "../tests/read/ccq_inputs.hpp"
#include "common.hpp"

namespace linea_bench {
namespace {

using namespace linea;

// Every gradient buffer of one rule at the benchmark shape, made once.
template <class Rule, class T, class S = accumulate_t<T>>
struct gradient_buffers {
  tensor<T, 4> d_o, dq, dk, dv, dgk, db, dw;
  tensor<T, 3> dg, dbeta, dlambda;
  tensor<S, 4> dht, dh0;

  explicit gradient_buffers(const testing::random_case<Rule, T>& c) {
    const auto& s = c.shape;
    d_o = tensor<T, 4>({s.B, s.T, s.HV, s.V}, T(0.01));
    dht = tensor<S, 4>({c.N, s.HV, s.K, s.V}, S(0.01));
    dq = tensor<T, 4>({s.B, s.T, s.H, s.K}), dk = dq, dv = tensor<T, 4>({s.B, s.T, s.HV, s.V});
    dh0 = dht;
    if constexpr (reads(Rule::inputs, input::g)) dg = tensor<T, 3>({s.B, s.T, s.HV});
    if constexpr (reads(Rule::inputs, input::gk)) dgk = tensor<T, 4>({s.B, s.T, s.HV, s.K});
    if constexpr (reads(Rule::inputs, input::beta)) dbeta = tensor<T, 3>({s.B, s.T, s.HV});
    if constexpr (reads(Rule::inputs, input::b)) db = tensor<T, 4>({s.B, s.T, s.HV, s.K}), dw = dv;
  }

  gradients<T, S> views(bool ccq) {
    gradients<T, S> g{.d_o = d_o, .d_final_state = dht, .dq = dq, .dk = dk, .dv = dv, .d_initial_state = dh0};
    if (dg.size()) g.dg = dg;
    if (dgk.size()) g.dgk = dgk;
    if (dbeta.size()) g.dbeta = dbeta;
    if (db.size()) g.db = db, g.dw = dw;
    if (ccq) {
      dlambda = tensor<T, 3>({d_o.extent(0), d_o.extent(1), d_o.extent(2)});
      g.dlambda = dlambda;
    }
    return g;
  }
};

template <class Rule, class T, class Read, int C = 64>
void backward_bench(benchmark::State& st, int threads) {
  const shape s;
  auto& c = inputs<Rule, T>(s);
  static gradient_buffers<Rule, T> buffers(c);
  static auto stats = testing::ccq_tensors<T>::make(c.shape, c.N, {});
  auto a = c.args();
  a.threads = threads;
  a.chunk_size = C;
  if constexpr (!Read::is_identity) stats.attach(a);
  const gradients<T> g = buffers.views(!Read::is_identity);
  timed_loop(st, double(s.B * s.T), 12.0 * s.K * s.V * s.T * s.B * s.H, threads,
             [&] { linea::backward<Rule, Read>(a, g); });
}

template <class Rule>
void register_rule() {
  const char* rule = rule_name<Rule>::value;
  for (int threads : {1, 2})
    benchmark::RegisterBenchmark(name("backward", rule, "identity", "f32", threads).c_str(),
                                 backward_bench<Rule, float, read::identity>, threads)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(name("backward", rule, "identity", "bf16", 1).c_str(),
                               backward_bench<Rule, bf16, read::identity>, 1)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
}

[[maybe_unused]] const bool registered = [] {
  all_rules::for_each([]<class Rule>() { register_rule<Rule>(); });
  // The checkpoint interval: the chunk's recomputed states, (C+1)·K·V floats, stay in L2 below C = 32.
  const auto sweep = [](auto bench, const char* rule, int C) {
    benchmark::RegisterBenchmark((name("backward", rule, "identity", "f32", 1) + "/C:" + std::to_string(C)).c_str(),
                                 bench, 1)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  };
  sweep(backward_bench<gated_delta, float, read::identity, 16>, "gated_delta_rule", 16);
  sweep(backward_bench<gated_delta, float, read::identity, 32>, "gated_delta_rule", 32);
  sweep(backward_bench<kda, float, read::identity, 16>, "kda", 16);
  benchmark::RegisterBenchmark(name("backward", "gated_delta_rule", "ccq", "f32", 1).c_str(),
                               backward_bench<gated_delta, float, read::ccq<read::uniform>>, 1)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  return true;
}();

}  // namespace
}  // namespace linea_bench
