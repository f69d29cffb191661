// tape11: dumps every gradient of the CPU backward (CCQ read) as raw bytes, for a before/after bit comparison.
#define DOCTEST_CONFIG_IMPLEMENT
#include <cstdio>
#include "forms/backward_case.hpp"

using namespace linea;
using namespace linea::testing;

static std::FILE* out;
template <class X>
void put(const X& x) {
  if (x.size()) std::fwrite(x.data(), sizeof(*x.data()), x.size(), out);
}
template <class Rule, class Read, class T>
void run(const case_shape& shape, const backward_options& opt) {
  backward_case<Rule, Read, T> c(shape, opt);
  linea::backward<Rule, Read, backend::cpu>(c.args(), c.grads());
  const auto& o = c.out();
  put(o.dq), put(o.dk), put(o.dv), put(o.dgk), put(o.db), put(o.dw), put(o.dg), put(o.dbeta), put(o.dlambda);
  put(o.dccq_log_decay), put(o.dgamma), put(o.dh0), put(o.dC0), put(o.dm0), put(o.dz0), put(o.dA_log), put(o.ddt_bias);
}
template <class Rule, class T>
void rule(const case_shape& s) {
  using dec = read::ccq<read::decayed>;
  using uni = read::ccq<read::uniform>;
  run<Rule, dec, T>(s, {.chunk_size = 16});
  run<Rule, dec, T>(s, {.chunk_size = 16, .ccq = {.initial_stats = true}});
  run<Rule, dec, T>(s, {.chunk_size = 8, .ccq = {.initial_stats = true, .explicit_log_decay = true, .skewed_C0 = true}});
  run<Rule, dec, T>(s, {.chunk_size = 64, .threads = 2, .ccq = {.initial_stats = true}});
  run<Rule, uni, T>(s, {.chunk_size = 16, .ccq = {.initial_stats = true}});
}
int main(int, char** argv) {
  out = std::fopen(argv[1], "wb");
  const case_shape plain{.B = 2, .T = 70, .H = 2, .HV = 4, .K = 32, .V = 16, .initial_state = true, .seed = 7};
  const case_shape packed{.B = 1, .T = 0, .H = 2, .HV = 2, .K = 20, .V = 12, .seqlens = {17, 1, 40, 33}, .initial_state = true, .seed = 8};
  const case_shape big{.B = 1, .T = 150, .H = 1, .HV = 1, .K = 128, .V = 64, .seed = 9};
  for (const auto& s : {plain, packed, big}) {
    rule<gated_delta, double>(s), rule<gated_delta, float>(s);
    rule<kda, double>(s), rule<kda, float>(s);
  }
  std::fclose(out);
  std::puts("done");
}
