// tests/backend/cuda/fuzz/cuda_fuzz_inputs.hpp — the inputs of one planned CUDA fuzz case (cuda_fuzz_plan.hpp), in
// the case's input type and as their float64 twin, and the plan's options applied to arguments over them. No CUDA:
// the CPU probe (cpu_fuzz_probe.cpp) rebuilds a case's inputs from its seed and index with it.
#pragma once
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <linea/linea.hpp>

#include "backend/cuda/fuzz/cuda_fuzz_plan.hpp"
#include "read/ccq_inputs.hpp"
#include "support/inputs.hpp"

namespace linea::cuda_fuzz {

using testing::ccq_tensors;
using testing::random_case;

// The inputs of a plan, in input type T and their float64 twin.
template <class Rule, class T>
struct fuzz_inputs {
  random_case<Rule, T> c;
  random_case<Rule, double> ref;
  ccq_tensors<T> s;
  ccq_tensors<double> sref;
  tensor<T, 1> gamma;
  tensor<double, 1> gamma_ref;
  std::vector<float> A_log, dt_bias;

  explicit fuzz_inputs(const plan& p) : c(random_case<Rule, T>::make(p.shape)) {
    rng_t rng(p.shape.seed * 31ull + 7);
    std::normal_distribution<double> normal(0.0, 1.0);
    std::uniform_real_distribution<double> unit(0.5, 2.0);
    const index_t HV = c.shape.HV, K = c.shape.K;
    if (p.l2) {  // rows of any length: the kernel normalises them
      for (auto& x : c.q.values()) x = T(double(x) * unit(rng));
      for (auto& x : c.k.values()) x = T(double(x) * unit(rng));
    }
    if (p.normalize) {  // positive q, k: the normaliser s·q·z stays away from 0, as fla's tests draw them
      for (auto& x : c.q.values()) x = T(std::abs(double(x)) + 0.1);
      for (auto& x : c.k.values()) x = T(std::abs(double(x)) + 0.1);
    }
    if (p.gate) {  // logits
      for (auto& x : c.g.values()) x = T(normal(rng));
      for (auto& x : c.gk.values()) x = T(normal(rng));
      for (index_t hv = 0; hv < HV; ++hv) A_log.push_back(float(0.5 * normal(rng)));
      for (index_t i = 0; i < (testing::allocated(c.gk) ? HV * K : HV); ++i) dt_bias.push_back(float(0.5 * normal(rng)));
    }
    if (p.beta_act != beta_activation::none)
      for (auto& x : c.beta.values()) x = T(normal(rng));
    if (p.neg_inf) {  // a few gates of exactly 0
      auto& gv = c.g.size() ? c.g.values() : c.gk.values();
      if (!gv.empty())
        for (std::size_t j = 0, n = std::max<std::size_t>(1, gv.size() / 40); j < n; ++j)
          gv[std::uniform_int_distribution<std::size_t>(0, gv.size() - 1)(rng)] = T(-std::numeric_limits<double>::infinity());
    }
    if (p.g_gamma) {
      gamma = tensor<T, 1>({HV});
      for (auto& x : gamma.values()) x = T(p.gate ? normal(rng) : -std::log1p(std::exp(-normal(rng))));
    }
    ref = c.template cast<double>();
    gamma_ref = tensor<double, 1>({gamma.size() ? HV : 0});
    for (std::size_t i = 0; i < gamma.size(); ++i) gamma_ref.data()[i] = double(gamma.data()[i]);
    if (p.read != read_kind::identity) {
      s = ccq_tensors<T>::make(c.shape, c.N, p.ccq);
      sref = s.template cast<double>();
      if (c.shape.T == 0) {  // cast() leaves tensors of no elements unmade (not given); T = 0 still gives them
        const index_t B = c.shape.B;
        sref.lambda = tensor<double, 3>({B, 0, HV}), sref.q_tilde = tensor<double, 4>({B, 0, HV, K});
        if (p.ccq.explicit_log_decay) sref.log_decay = tensor<double, 3>({B, 0, HV});
      }
    }
  }

  // The options of plan p on arguments over this case (host or reference).
  template <class U, class SU, class CT>
  void apply(const plan& p, arguments<U, SU>& a, CT& stats, tensor<U, 1>& gam) {
    if (p.read != read_kind::identity) stats.attach(a);
    if (p.g_gamma)
      a.g = strided<3>(static_cast<const U*>(gam.data()), {c.shape.B, c.shape.T, c.shape.HV}, {0, 0, 1});
    a.qk_l2norm = p.l2;
    a.beta_act = p.beta_act;
    a.normalize = p.normalize;
    if (p.scale) a.scale = p.scale;
    a.chunk_size = p.chunk;
    if (p.gate) {
      a.gate.A_log = contiguous<1>(static_cast<const float*>(A_log.data()), {index_t(A_log.size())});
      a.gate.dt_bias = contiguous<1>(static_cast<const float*>(dt_bias.data()), {index_t(dt_bias.size())});
      if (p.lower_bound) a.gate.lower_bound = -5.0f;
    }
  }
};

}  // namespace linea::cuda_fuzz
