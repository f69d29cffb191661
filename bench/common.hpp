// bench/common.hpp — shared pieces of linea_bench: the machine's FMA peak (measured in this run), the
// benchmark shape, cached inputs, and the counters every benchmark reports.
//
// Names: <form>/<rule>/<read>/<dtype>/threads:<n>. Counters: tokens/s, GFLOP/s on the nominal 4·K·V flops
// per token per value head, and peak_frac = GFLOP/s / (threads × the one-core FMA peak measured below).
#pragma once
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <time.h>

#include <linea/linea.hpp>

#include "../tests/support/inputs.hpp"

namespace linea_bench {

// The benchmark shape: B = 1, H = HV = 16, K = V = 128, T = 4096; the decode step runs a batch of 64 states.
struct shape {
  linea::index_t B = 1, T = 4096, H = 16, K = 128, V = 128;
};
inline constexpr linea::index_t decode_batch = 64;

// One core's FMA peak in GFLOP/s: a register-resident loop of independent FMAs at the widest vector width the
// compiler targets, best of several runs (the machine is shared: the best run is the least disturbed).
double fma_peak_gflops();
// The same loop on n threads at once (what n cores deliver together).
double fma_peak_gflops_threads(int threads);
// The one-core peak per second of CPU time (thread CPU clock): insensitive to time-sharing on a busy machine.
double fma_peak_gflops_cpu();

inline double process_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// tokens/s, GFLOP/s (nominal 4·K·V per token per value head) and peak_frac, from the summed iteration time.
// peak_frac_cpu: the same per second of process CPU time over the CPU-time peak (how well the cycles we were
// given are used; equals peak_frac on a quiet machine).
inline void report(benchmark::State& st, double seconds, double cpu_seconds, double tokens_per_iter,
                   double flops_per_iter, int threads) {
  const double iters = static_cast<double>(st.iterations());
  const double gflops = flops_per_iter * iters / seconds / 1e9;
  st.counters["tokens/s"] = tokens_per_iter * iters / seconds;
  st.counters["GFLOP/s"] = gflops;
  st.counters["peak_frac"] = gflops / (threads * fma_peak_gflops());
  st.counters["peak_frac_cpu"] = flops_per_iter * iters / cpu_seconds / 1e9 / fma_peak_gflops_cpu();
}

// Times fn() per iteration with a steady clock (benchmarks use UseManualTime) and reports the counters.
template <class Fn>
void timed_loop(benchmark::State& st, double tokens_per_iter, double flops_per_iter, int threads, Fn fn) {
  fma_peak_gflops(), fma_peak_gflops_cpu();  // measured before the first timed kernel
  double total = 0, cpu_total = 0;
  for (auto _ : st) {
    const double c0 = process_cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    const auto t1 = std::chrono::steady_clock::now();
    cpu_total += process_cpu_seconds() - c0;
    const double s = std::chrono::duration<double>(t1 - t0).count();
    st.SetIterationTime(s);
    total += s;
  }
  report(st, total, cpu_total, tokens_per_iter, flops_per_iter, threads);
}

// Random inputs of the benchmark shape for one rule and storage type, made once and kept for the run.
template <class Rule, class T>
linea::testing::random_case<Rule, T>& inputs(const shape& s = {}) {
  static std::unique_ptr<linea::testing::random_case<Rule, T>> c;
  if (!c)
    c = std::make_unique<linea::testing::random_case<Rule, T>>(linea::testing::random_case<Rule, T>::make(
        {.B = s.B, .T = s.T, .H = s.H, .HV = s.H, .K = s.K, .V = s.V, .seed = 7}));
  return *c;
}

inline std::string name(const char* form, const char* rule, const char* read, const char* dtype, int threads) {
  return std::string(form) + "/" + rule + "/" + read + "/" + dtype + "/threads:" + std::to_string(threads);
}

}  // namespace linea_bench
