#include <doctest/doctest.h>
#include "forms/backward_case.hpp"
namespace linea::testing {
template <class Rule, class Read, class T>
void check_ccq(const case_shape& shape, const backward_options& opt) {
  backward_case<Rule, Read, T> c(shape, opt);
  reference::backward<Rule, Read, float>(c.args(), c.grads());
  c.check_against_reference();
}
TEST_CASE("CUDA backward, CCQ read: dλ and dc under extreme gates (centred statistics)") {
  using decayed = read::ccq<read::decayed>;
  const auto extreme = gate_range::extreme;
  SUBCASE("kda, T = 2, c_t given, beta_max = 2") {
    check_ccq<kda, decayed, float>({.B = 1, .T = 2, .H = 1, .HV = 1, .K = 32, .V = 63, .beta_max = 2, .seed = 770},
                                   {.scale = 1.268194, .ccq = {.explicit_log_decay = true}});
  }
  SUBCASE("gla, B = 5, T = 129, GVA, L2 norm") {
    check_ccq<gla, decayed, float>({.B = 5, .T = 129, .H = 1, .HV = 4, .K = 32, .V = 63, .gates = extreme, .seed = 822},
                                   {.qk_l2norm = true, .scale = 1.464018});
  }
  SUBCASE("kda, T = 1500, h0") {
    check_ccq<kda, decayed, float>({.B = 1, .T = 1500, .H = 2, .HV = 2, .K = 32, .V = 65, .initial_state = true,
                                    .gates = extreme, .beta_max = 2, .seed = 1041},
                                   {});
  }
  SUBCASE("gdn2, T = 1000, K = V = 128, head-first, initial statistics") {
    check_ccq<gdn2, decayed, float>({.B = 1, .T = 1000, .H = 1, .HV = 1, .K = 128, .V = 128, .head_first = true,
                                     .gates = extreme, .seed = 2735},
                                    {.ccq = {.initial_stats = true}});
  }
  SUBCASE("gla, T = 1500, K = V = 96") {
    check_ccq<gla, decayed, float>({.B = 1, .T = 1500, .H = 1, .HV = 1, .K = 96, .V = 96, .gates = extreme, .seed = 4117},
                                   {.scale = 1.594837});
  }
  SUBCASE("kda, B = 5, T = 65, HV = 8, K = 100, V = 1, beta activation, initial statistics") {
    check_ccq<kda, decayed, float>({.B = 5, .T = 65, .H = 2, .HV = 8, .K = 100, .V = 1, .gates = extreme, .seed = 2717},
                                   {.beta_act = beta_activation::two_sigmoid, .ccq = {.initial_stats = true}});
  }
  SUBCASE("kda, T = 1, K = 63, initial statistics") {
    check_ccq<kda, decayed, float>({.B = 1, .T = 1, .H = 2, .HV = 2, .K = 63, .V = 48, .gates = extreme, .seed = 77},
                                   {.ccq = {.initial_stats = true}});
  }
  SUBCASE("gated_delta, T = 127, K = 128, gates (A_log, dt_bias), c_t given") {
    check_ccq<gated_delta, decayed, float>({.B = 1, .T = 127, .H = 1, .HV = 1, .K = 128, .V = 48, .beta_max = 2, .seed = 212},
                                           {.qk_l2norm = true, .gate = true, .ccq = {.explicit_log_decay = true}});
  }
}
}
