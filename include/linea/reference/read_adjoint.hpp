// linea/reference/read_adjoint.hpp — the read policies run backward: from dq̃ to dq, dk and the read's own inputs.
//
// A tape of one (sequence, value head), used by backward.hpp:
//   begin(a, p, n, hv)                               start the sequence (initial statistics);
//   forward(a, bt, t, hv, x, c_rule) -> q̃           the forward read of token x, recorded;
//   q_tilde(step, x)                                 the recorded q̃ of the step-th token of the sequence;
//   backward(a, sums, bt, t, hv, step, x, c_rule, dq̃, dq, dk) -> d c_rule
//                                                    adds the read's part of dq, dk (of the L2-normalised q, k),
//                                                    its own gradients into sums, and returns the adjoint of
//                                                    the rule's mean log decay c_rule (decayed CCQ by default);
//                                                    steps arrive in reverse order;
//   end(sums, n, hv)                                 the gradients of the initial statistics;
//   save() -> checkpoint,  restart(checkpoint)       for a chunked backward (backend/cpu/backward_head.hpp): the
//                                                    statistics now, and a new stretch of steps from saved
//                                                    ones (steps count from the restart; the carried adjoints
//                                                    are kept), so that only chunk boundaries are stored.
// `sums` is anything with dlambda(bt, t, hv), dccq_log_decay(bt, t, hv), dC0(n, hv, i, j), dm0(n, hv, i),
// dz0(n, hv) to add to (gradient_sums, or the CPU backward's).
//
// Identity: q̃ = q. CCQ (SPEC §3, docs/math/backward.md §4): q̃ = q − λ Σ q with Σ = C/z − μμᵀ, μ = m/z, and
// C, m, z carried through the tokens — its adjoint carries dC, dm, dz backward the way the state's carries dS.
#pragma once
#include <cmath>
#include <vector>

#include "../backend/isa.hpp"
#include "../read/ccq.hpp"
#include "../read/identity.hpp"
#include "gradient_sums.hpp"

namespace linea::reference::inline LINEA_ISA {

// Where dL/dc_t goes, c_t being the statistics' log decay (read/ccq_statistics.hpp's ccq_log_decay): into
// ccq.log_decay's gradient when the caller passed c_t; else it is returned, for the rule's own log decay (the
// default c_t). The uniform weighting has no c_t: 0.
template <class Weighting, class Real, class A, class Sums>
Real ccq_log_decay_adjoint(const A& a, Sums& sums, index_t bt, index_t t, index_t hv, Real dc) {
  if constexpr (Weighting::decays) {
    if (!a.ccq.log_decay.empty()) {
      sums.dccq_log_decay(bt, t, hv) += dc;
      return 0;
    }
    return dc;
  } else {
    return 0;
  }
}

template <class Read, class Real>
class read_tape {
  static_assert(sizeof(Read) == 0, "linea::reference::backward: no adjoint for this read policy");
};

template <class Real>
class read_tape<read::identity, Real> {
 public:
  struct checkpoint {};
  explicit read_tape(const problem& p) : K_(p.K) {}
  template <class A>
  void begin(const A&, const problem&, index_t, index_t) {}
  checkpoint save() const { return {}; }
  void restart(const checkpoint&) {}
  template <class A>
  const Real* forward(const A&, index_t, index_t, index_t, const token<Real>& x, Real) { return x.q; }
  const Real* q_tilde(index_t, const token<Real>& x) const { return x.q; }
  template <class A, class Sums>
  Real backward(const A&, Sums&, index_t, index_t, index_t, index_t, const token<Real>&, Real,
                const Real* dqt, Real* dq, Real*) {
    for (index_t i = 0; i < K_; ++i) dq[i] += dqt[i];  // q̃ = q
    return 0;
  }
  template <class Sums>
  void end(Sums&, index_t, index_t) {}

 private:
  index_t K_;
};

template <class Weighting, class Real>
class read_tape<read::ccq<Weighting>, Real> {
 public:
  using checkpoint = read::ccq_statistics<Real>;

  explicit read_tape(const problem& p)
      : K_(p.K), start_(p.K), dy_(static_cast<std::size_t>(p.K)), dC_(static_cast<std::size_t>(p.K * p.K)),
        dm_(static_cast<std::size_t>(p.K)) {}

  template <class A>
  void begin(const A& a, const problem&, index_t n, index_t hv) {
    start_.load(a.ccq, n, hv);
    history_.assign(1, start_);  // history_[s] = statistics after s tokens of the sequence
    y_.clear(), qt_.clear();
    std::fill(dC_.begin(), dC_.end(), Real(0));
    std::fill(dm_.begin(), dm_.end(), Real(0));
    dz_ = 0;
  }

  checkpoint save() const { return history_.back(); }
  void restart(const checkpoint& s) {
    history_.assign(1, s);
    y_.clear(), qt_.clear();
  }

  // Forward, as read/ccq.hpp: accumulate k into C, m, z; y = Σ q; q̃ = q − λ y.
  template <class A>
  const Real* forward(const A& a, index_t bt, index_t t, index_t hv, const token<Real>& x, Real c_rule) {
    read::ccq_statistics<Real> s = history_.back();
    s.accumulate(x.k, std::exp(read::ccq_log_decay<Weighting, Real>(a, bt, t, hv, c_rule)));
    const std::size_t at = y_.size();
    y_.resize(at + K_), qt_.resize(at + K_);
    s.covariance_times(x.q, y_.data() + at);
    const Real lambda = load_as<Real>(a.ccq.lambda(bt, t, hv));
    for (index_t i = 0; i < K_; ++i) qt_[at + i] = x.q[i] - lambda * y_[at + i];
    history_.push_back(std::move(s));
    return qt_.data() + at;
  }

  const Real* q_tilde(index_t step, const token<Real>&) const { return qt_.data() + step * K_; }

  template <class A, class Sums>
  Real backward(const A& a, Sums& sums, index_t bt, index_t t, index_t hv, index_t step,
                const token<Real>& x, Real c_rule, const Real* dqt, Real* dq, Real* dk) {
    const read::ccq_statistics<Real>& now = history_[step + 1];  // C_t, m_t, z_t
    const read::ccq_statistics<Real>& before = history_[step];   // C_{t−1}, m_{t−1}, z_{t−1}
    const Real* q = x.q;
    const Real* y = y_.data() + step * K_;
    const Real lambda = load_as<Real>(a.ccq.lambda(bt, t, hv));

    // q̃ = q − λ y:  dq += dq̃,  dλ = −dq̃·y,  dy = −λ dq̃.
    std::vector<Real>& dy = dy_;
    Real dlambda = 0;
    for (index_t i = 0; i < K_; ++i) {
      dq[i] += dqt[i];
      dlambda -= dqt[i] * y[i];
      dy[i] = -lambda * dqt[i];
    }
    sums.dlambda(bt, t, hv) += dlambda;

    // y = Σ q = C q / z − μ (μ·q),  μ = m / z   (Σ = 0, a constant, before any key: z = 0).
    if (now.z != Real(0)) {
      const Real z = now.z;
      Real mu_q = 0, mu_dy = 0, dy_Cq = 0;
      for (index_t i = 0; i < K_; ++i) {
        mu_q += now.m[i] / z * q[i];
        mu_dy += now.m[i] / z * dy[i];
        Real Cq = 0;
        for (index_t j = 0; j < K_; ++j) Cq += now.c(i, j) * q[j];
        dy_Cq += dy[i] * Cq;
      }
      for (index_t j = 0; j < K_; ++j) {
        Real Ct_dy = 0;  // (Cᵀ dy)_j
        for (index_t i = 0; i < K_; ++i) Ct_dy += now.c(i, j) * dy[i];
        dq[j] += Ct_dy / z - now.m[j] / z * mu_dy;  // dq += Cᵀdy / z − μ (μ·dy)
      }
      Real dmu_m = 0;
      for (index_t i = 0; i < K_; ++i) {
        for (index_t j = 0; j < K_; ++j) dC_[i * K_ + j] += dy[i] * q[j] / z;  // dC += dy qᵀ / z
        const Real dmu = -(dy[i] * mu_q + mu_dy * q[i]);                        // dμ = −dy (μ·q) − (μ·dy) q
        dm_[i] += dmu / z;                                                      // μ = m / z
        dmu_m += dmu * now.m[i];
      }
      dz_ += -dy_Cq / (z * z) - dmu_m / (z * z);
    }

    // C_t = a C_{t−1} + k kᵀ,  m_t = a m_{t−1} + k,  z_t = a z_{t−1} + 1,  a = exp(c_t).
    const Real c = read::ccq_log_decay<Weighting, Real>(a, bt, t, hv, c_rule);
    const Real decay = std::exp(c);
    Real da = dz_ * before.z;
    for (index_t i = 0; i < K_; ++i) {
      Real dki = dm_[i];
      for (index_t j = 0; j < K_; ++j) {
        dki += (dC_[i * K_ + j] + dC_[j * K_ + i]) * x.k[j];
        da += dC_[i * K_ + j] * before.c(i, j);
      }
      dk[i] += dki;
      da += dm_[i] * before.m[i];
    }
    for (Real& e : dC_) e *= decay;
    for (Real& e : dm_) e *= decay;
    dz_ *= decay;
    return ccq_log_decay_adjoint<Weighting>(a, sums, bt, t, hv, da * decay);  // d a / d c = a
  }

  template <class Sums>
  void end(Sums& sums, index_t n, index_t hv) {
    for (index_t i = 0; i < K_; ++i) {
      sums.dm0(n, hv, i) += dm_[i];
      for (index_t j = 0; j < K_; ++j) sums.dC0(n, hv, i, j) += dC_[i * K_ + j];
    }
    sums.dz0(n, hv) += dz_;
  }

 private:
  index_t K_;
  read::ccq_statistics<Real> start_;
  std::vector<read::ccq_statistics<Real>> history_;
  std::vector<Real> y_, qt_;  // Σ_t q_t and q̃_t of every step, K each
  std::vector<Real> dy_;       // one step's dL/dy (scratch)
  std::vector<Real> dC_, dm_;  // adjoints of the statistics, carried backward
  Real dz_ = 0;
};

}  // namespace linea::reference
