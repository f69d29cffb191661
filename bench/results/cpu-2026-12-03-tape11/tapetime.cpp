// tape11: the checkpoint pass's tape work alone (K = 128, 4096 tokens, restart every 64): forward vs advance.
#define DOCTEST_CONFIG_IMPLEMENT
#include <chrono>
#include <cstdio>
#include "forms/backward_case.hpp"
using namespace linea;
using namespace linea::testing;
int main() {
  const case_shape s{.B = 1, .T = 4096, .H = 1, .HV = 1, .K = 128, .V = 16, .seed = 3};
  backward_case<gated_delta, read::ccq<read::decayed>, float> c(s, {.chunk_size = 64});
  const auto a = c.args();
  const problem p{.B = 1, .T = 4096, .H = 1, .HV = 1, .K = 128, .V = 16, .N = 1};
  cpu_backend::ccq_tape<read::decayed, cpu_backend::native_arch_t> tape(p);
  tape.reserve_steps(64);
  std::vector<double> q(128), k(128);
  double sink = 0;
  auto pass = [&](bool adv) {
    tape.begin(a, p, 0, 0);
    const auto t0 = std::chrono::steady_clock::now();
    for (index_t t = 0; t < 4096; ++t) {
      if (t % 64 == 0) tape.restart(tape.save());
      for (index_t i = 0; i < 128; ++i) q[i] = a.q(0, t, 0, i), k[i] = a.k(0, t, 0, i);
      token<double> x;
      x.q = q.data(), x.k = k.data();
      if (adv) tape.advance(a, 0, t, 0, x, -0.05);
      else sink += tape.forward(a, 0, t, 0, x, -0.05)[0];
    }
    sink += tape.save().z;
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  for (int r = 0; r < 7; ++r) std::printf("forward %.1f ms  advance %.1f ms\n", pass(false), pass(true));
  std::printf("(sink %g)\n", sink);
}
