// bench/fma_peak.cpp — the machine's FMA peak, measured by this binary in the same run as the kernels.
//
// 16 independent accumulators (enough to cover the FMA latency × the 2 FMA ports of a modern core), each
// acc = acc · x + y at the widest vector width the compiler targets; everything stays in registers.
// Reported as the benchmarks peak/fma/f32/threads:{1,2} (GFLOP/s); peak_frac of every other benchmark
// divides by threads × the one-thread figure.
#include <time.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <linea/backend/cpu/simd.hpp>

#include "common.hpp"

namespace linea_bench {
namespace {

using arch = linea::cpu_backend::native_arch_t;
using L = linea::cpu_backend::lanes<float, arch>;

double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// Runs `rounds` × 16 FMAs per accumulator; returns GFLOP/s (per wall second; per CPU second in *cpu).
double fma_loop(long rounds, double* cpu = nullptr) {
  using vec = typename L::type;
  constexpr int acc_count = 16;
  vec acc[acc_count];
  for (int a = 0; a < acc_count; ++a) acc[a] = L::splat(1.0f + 1e-3f * a);
  const vec x = L::splat(0.999999f), y = L::splat(1e-7f);
  const double c0 = thread_cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  for (long r = 0; r < rounds; ++r) {
#pragma GCC unroll 16
    for (int a = 0; a < acc_count; ++a) acc[a] = L::fma(acc[a], x, y);
  }
  const auto t1 = std::chrono::steady_clock::now();
  const double c1 = thread_cpu_seconds();
  float sink = 0;
  for (int a = 0; a < acc_count; ++a) {
    alignas(64) float buf[L::size];
    L::store(buf, acc[a]);
    sink += buf[0];
  }
  benchmark::DoNotOptimize(sink);
  const double s = std::chrono::duration<double>(t1 - t0).count();
  const double flops = 2.0 * L::size * acc_count * static_cast<double>(rounds);
  if (cpu) *cpu = flops / (c1 - c0) / 1e9;
  return flops / s / 1e9;
}

double best_of(int runs, int threads) {
  double best = 0;
  for (int r = 0; r < runs; ++r) {
    std::vector<double> per(static_cast<std::size_t>(threads));
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back([&, t] { per[static_cast<std::size_t>(t)] = fma_loop(4'000'000); });
    per[0] = fma_loop(4'000'000);
    for (auto& t : pool) t.join();
    double sum = 0;
    for (double g : per) sum += g;
    best = std::max(best, sum);
  }
  return best;
}

}  // namespace

double fma_peak_gflops() {
  static const double peak = best_of(7, 1);
  return peak;
}

double fma_peak_gflops_threads(int threads) { return best_of(5, threads); }

double fma_peak_gflops_cpu() {
  static const double peak = [] {
    double best = 0, cpu = 0;
    for (int r = 0; r < 7; ++r) {
      fma_loop(4'000'000, &cpu);
      best = std::max(best, cpu);
    }
    return best;
  }();
  return peak;
}

namespace {
void peak_bench(benchmark::State& st, int threads) {
  double g = 0;
  for (auto _ : st) g = threads == 1 ? fma_peak_gflops() : fma_peak_gflops_threads(threads);
  st.counters["GFLOP/s"] = g;
  st.counters["peak_frac"] = g / (threads * fma_peak_gflops());
  st.counters["GFLOP/s_cpu"] = fma_peak_gflops_cpu();
  st.counters["lanes"] = L::size;
}
[[maybe_unused]] const bool registered = [] {
  for (int threads : {1, 2})
    benchmark::RegisterBenchmark(("peak/fma/f32/threads:" + std::to_string(threads)).c_str(), peak_bench, threads)
        ->Iterations(1);
  return true;
}();
}  // namespace

}  // namespace linea_bench
