// linea/read/ccq.hpp — the CCQ read: q̃_t = (I − λ_t Σ_t) q_t,  o_t = S_tᵀ (s · q̃_t)   (SPEC §3, docs/math/ccq.md).
//
//   linea::arguments<float> a{.q = q, .k = k, .v = v, .g = g, .beta = beta,
//                             .ccq = {.lambda = lam, .C = C, .m = m, .z = z}, .o = o};
//   linea::recurrent<linea::gated_delta, linea::read::ccq<linea::read::decayed>>(a);
//
// Σ_t is the Hessian at q = 0 of the softmax log-partition log Σ_{j≤t} w_tj exp(k_jᵀ q): the (weighted) running
// covariance of the keys written so far. It is built from three carried statistics per (sequence, value head),
//     C_t = a_t C_{t-1} + k_t k_tᵀ,   m_t = a_t m_{t-1} + k_t,   z_t = a_t z_{t-1} + 1,
//     Σ_t = C_t / z_t − (m_t / z_t)(m_t / z_t)ᵀ,
// with a_t = 1 (uniform weighting) or a_t = exp(c_t) (decayed weighting; c_t = ccq.log_decay, or by default the
// rule's own log decay: g, the mean of gk over K, or 0). The keys are the written keys (after the in-kernel L2
// norm) and include the current token, so Σ_1 = 0 and q̃_1 = q_1. The write path never sees any of this.
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "../core/arguments.hpp"
#include "../core/error.hpp"
#include "../core/validate.hpp"
#include "../backend/isa.hpp"
#include "../rules/token.hpp"
#include "ccq_statistics.hpp"

namespace linea::read {

// The chunkwise form's CCQ reader needs Eigen; it is defined in read/ccq_chunk.hpp, which the chunkwise form
// includes (chunk/kernel.hpp), so that this header (and <linea/reference.hpp>) needs only the standard library.
inline namespace LINEA_ISA {
template <class Weighting, class R>
class ccq_chunk_reader;
}  // namespace LINEA_ISA

template <class Weighting = uniform>
struct ccq;
template <class Read>
inline constexpr bool is_ccq = false;
template <class Weighting>
inline constexpr bool is_ccq<ccq<Weighting>> = true;

template <class Weighting>
struct ccq {
  static constexpr bool is_identity = false;
  using weighting = Weighting;

  template <class T, class S>
  static void validate(const arguments<T, S>& a, const problem& p) {
    using namespace detail;
    const auto& c = a.ccq;
    expect_given(c.lambda, "ccq.lambda", "the CCQ read needs λ per token and value head [B, T, HV]");
    expect_shape(c.lambda, "ccq.lambda", "[B, T, HV]", {p.B, p.T, p.HV});
    if constexpr (Weighting::decays) {
      if (!c.log_decay.empty()) expect_shape(c.log_decay, "ccq.log_decay", "[B, T, HV]", {p.B, p.T, p.HV});
    } else {
      expect_absent(c.log_decay, "ccq.log_decay",
                    "the uniform weighting keeps every key (a_t = 1); use read::ccq<read::decayed> to decay them");
    }
    // Initial statistics come as a set: C0 without m0 (or z0) would describe no covariance.
    const bool any0 = !c.C0.empty() || !c.m0.empty() || !c.z0.empty();
    if (any0) {
      const std::string why = "the initial statistics C0, m0, z0 are given together or not at all";
      expect_given(c.C0, "ccq.C0", why);
      expect_given(c.m0, "ccq.m0", why);
      expect_given(c.z0, "ccq.z0", why);
      expect_shape(c.C0, "ccq.C0", "[N, HV, K, K]", {p.N, p.HV, p.K, p.K});
      expect_shape(c.m0, "ccq.m0", "[N, HV, K]", {p.N, p.HV, p.K});
      expect_shape(c.z0, "ccq.z0", "[N, HV]", {p.N, p.HV});
    }
    if (!c.C.empty()) expect_shape(c.C, "ccq.C", "[N, HV, K, K]", {p.N, p.HV, p.K, p.K});
    if (!c.m.empty()) expect_shape(c.m, "ccq.m", "[N, HV, K]", {p.N, p.HV, p.K});
    if (!c.z.empty()) expect_shape(c.z, "ccq.z", "[N, HV]", {p.N, p.HV});
    if (!c.q_tilde.empty()) expect_shape(c.q_tilde, "ccq.q_tilde", "[B, T, HV, K]", {p.B, p.T, p.HV, p.K});
  }

  // The token-by-token read (reference, recurrent form, decode step). n indexes the statistics exactly as it
  // indexes the state: the sequence, or the state-pool row in the decode step.
  template <class R>
  struct carried {
    explicit carried(const problem& p) : stats(p.K), sigma_q(static_cast<std::size_t>(p.K)), qt(static_cast<std::size_t>(p.K)) {}

    template <class A>
    void begin(const A& a, const problem&, index_t n, index_t hv) {
      stats.load(a.ccq, n, hv);
    }

    template <class A>
    const R* query(const A& a, const problem& p, index_t bt, index_t t, index_t hv, const token<R>& x,
                   R rule_log_decay) {
      // 1. accumulate the written key into C, m, z
      stats.accumulate(x.k, std::exp(ccq_log_decay<Weighting, R>(a, bt, t, hv, rule_log_decay)));
      // 2. Σ_t q_t, with Σ_t = C_t / z_t − μ_t μ_tᵀ formed entry by entry (ccq_statistics.hpp)
      stats.covariance_times(x.q, sigma_q.data());
      // 3. q̃_t = q_t − λ_t Σ_t q_t
      const R lambda = load_as<R>(a.ccq.lambda(bt, t, hv));
      for (index_t i = 0; i < p.K; ++i) qt[i] = x.q[i] - lambda * sigma_q[i];
      if (!a.ccq.q_tilde.empty())
        for (index_t i = 0; i < p.K; ++i) a.ccq.q_tilde(bt, t, hv, i) = store_as<typename A::input_type>(qt[i]);
      return qt.data();
    }

    template <class A>
    void end(const A& a, const problem&, index_t n, index_t hv) {
      stats.store(a.ccq, n, hv);
    }

    ccq_statistics<R> stats;
    std::vector<R> sigma_q, qt;
  };

  // The chunkwise form's read, one chunk at a time: Σq as a linear-attention read with values := keys
  // (read/ccq_chunk.hpp).
  template <class R>
  using chunk_carried = ccq_chunk_reader<Weighting, R>;
};

}  // namespace linea::read
