// tests/read/ccq_inputs.hpp — CCQ inputs and outputs beside a random_case: λ, the statistics' log decay,
// initial statistics, and the output tensors (final C, m, z and q̃).
//
//   auto c = random_case<kda, float>::make({...});
//   auto s = ccq_tensors<float>::make(c.shape, c.N, {.initial_stats = true});
//   auto a = c.args();  s.attach(a);
//   recurrent<kda, read::ccq<read::decayed>>(a);
#pragma once
#include <algorithm>
#include <cmath>
#include <optional>
#include <random>

#include "../support/inputs.hpp"

namespace linea::testing {

struct ccq_options {
  bool initial_stats = false;      // C0, m0, z0 of a weighted set of earlier keys
  bool explicit_log_decay = false; // pass ccq.log_decay (decayed weighting only) instead of the rule's default
  bool skewed_C0 = false;          // with initial_stats: C0 plus an antisymmetric part (read as the row product C q)
  bool empty_initial_stats = false;  // with initial_stats: C0 = 0, m0 = 0, z0 = 0 given (the statistics of no key)
  std::optional<double> z0;        // with initial_stats: every z0 set to this. −1 (uniform weighting) makes z_1 = 0,
                                   // −2 makes z_2 = 0: a vanishing normaliser, where the read takes Σ_t = 0
                                   // (read/ccq_statistics.hpp)
  double lambda_max = 1;           // λ = lambda_max · U(0, 1)
  std::uint32_t seed = 99;
};

template <class T, class S = accumulate_t<T>>
struct ccq_tensors {
  tensor<T, 3> lambda, log_decay;
  tensor<S, 4> C0, C;
  tensor<S, 3> m0, m;
  tensor<S, 2> z0, z;
  tensor<T, 4> q_tilde;

  static ccq_tensors make(const case_shape& s, index_t N, const ccq_options& opt = {}) {
    ccq_tensors c;
    std::mt19937 rng(opt.seed);
    std::normal_distribution<double> normal(0.0, 1.0);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    c.lambda = tensor<T, 3>({s.B, s.T, s.HV});
    for (auto& x : c.lambda.values()) x = T(opt.lambda_max * unit(rng));
    if (opt.explicit_log_decay) {
      c.log_decay = tensor<T, 3>({s.B, s.T, s.HV});
      for (auto& x : c.log_decay.values()) x = T(-std::log1p(std::exp(-normal(rng))));  // logsigmoid(N(0,1))
    }
    if (opt.initial_stats) {  // statistics of 12 earlier unit keys with weights in (0, 1]: Σ_0 is a covariance
      c.C0 = tensor<S, 4>({N, s.HV, s.K, s.K});
      c.m0 = tensor<S, 3>({N, s.HV, s.K});
      c.z0 = tensor<S, 2>({N, s.HV});
      std::vector<double> key(static_cast<std::size_t>(s.K));
      for (index_t n = 0; n < N; ++n)
        for (index_t hv = 0; hv < s.HV; ++hv)
          for (int j = 0; j < 12; ++j) {
            double ss = 0;
            for (auto& x : key) {
              x = normal(rng);
              ss += x * x;
            }
            for (auto& x : key) x /= std::sqrt(ss);
            const double w = 1.0 - unit(rng);
            c.z0(n, hv) += S(w);
            for (index_t i = 0; i < s.K; ++i) {
              c.m0(n, hv, i) += S(w * key[i]);
              for (index_t k = 0; k < s.K; ++k) c.C0(n, hv, i, k) += S(w * key[i] * key[k]);
            }
          }
      if (opt.skewed_C0)
        for (index_t n = 0; n < N; ++n)
          for (index_t hv = 0; hv < s.HV; ++hv)
            for (index_t i = 0; i < s.K; ++i)
              for (index_t k = i + 1; k < s.K; ++k) {
                const S d = S(0.05 * normal(rng));
                c.C0(n, hv, i, k) += d;
                c.C0(n, hv, k, i) -= d;
              }
      if (opt.empty_initial_stats)
        for (std::vector<S>* x : {&c.C0.values(), &c.m0.values(), &c.z0.values()}) std::fill(x->begin(), x->end(), S(0));
      if (opt.z0)
        for (S& x : c.z0.values()) x = S(*opt.z0);
    }
    c.C = tensor<S, 4>({N, s.HV, s.K, s.K});
    c.m = tensor<S, 3>({N, s.HV, s.K});
    c.z = tensor<S, 2>({N, s.HV});
    c.q_tilde = tensor<T, 4>({s.B, s.T, s.HV, s.K});
    return c;
  }

  void attach(arguments<T, S>& a) {
    a.ccq.lambda = lambda;
    if (allocated(log_decay)) a.ccq.log_decay = log_decay;
    if (C0.size()) a.ccq.C0 = C0, a.ccq.m0 = m0, a.ccq.z0 = z0;
    a.ccq.C = C, a.ccq.m = m, a.ccq.z = z;
    a.ccq.q_tilde = q_tilde;
  }

  template <class U, class SU = accumulate_t<U>>
  ccq_tensors<U, SU> cast() const {
    ccq_tensors<U, SU> c;
    auto conv = [](const auto& from, auto& to) {
      using To = std::remove_reference_t<decltype(to)>;
      if (!allocated(from)) return;  // a T = 0 tensor (extents, no elements) is still given
      to = To(from.extents());
      for (std::size_t i = 0; i < from.size(); ++i)
        to.data()[i] = static_cast<typename std::remove_reference_t<decltype(to.values())>::value_type>(
            static_cast<double>(from.data()[i]));
    };
    conv(lambda, c.lambda), conv(log_decay, c.log_decay), conv(C0, c.C0), conv(m0, c.m0), conv(z0, c.z0);
    conv(C, c.C), conv(m, c.m), conv(z, c.z), conv(q_tilde, c.q_tilde);
    return c;
  }
};

}  // namespace linea::testing
