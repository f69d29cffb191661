// linea/backend/cpu/ccq_tape.hpp — the CPU backward's tape of the CCQ read: the reference's read_tape
// (reference/read_adjoint.hpp, same interface and the same formulas in float64 — not bit-identical: an FMA in C's
// update, vector partial sums, dC's (dy_i / z) q_j) with its K×K loops vectorised and fused, over contiguous storage.
//
// Why: the reference tape keeps one heap-allocated ccq_statistics per token (a K×K copy and an allocation per
// forward step), and its backward walks C_t, C_{t−1} and the carried dC in six separate K×K loops, two of them
// down columns (Cᵀdy, dCᵀk). At K = 128 that made the CCQ read ~95 % of the CPU backward's time. Here
//   forward    one pass over the rows: C_t's row i = a C_{t−1}'s row i + k_i k (written into the next slot), and
//              y_i = Σ_j (C_t,ij / z − μ_i μ_j) q_j (Σ formed entry by entry, as the reference does);
//   backward   one pass over the rows of C_t, C_{t−1} and dC, every column sum (Cᵀdy, dCᵀk) an axpy into a
//              K-vector in L1 rather than a walk down a column.
// Everything stays in float64 (backward_head.hpp says why). Storage: the statistics after each step of the
// current stretch (restart to restart: one chunk) in one buffer of slots, rows padded to the lane count with zeros
// (so the vector loops have no tails), sized once for the longest stretch (reserve_steps) and reused. The
// checkpoint pass, which needs only the statistics at chunk boundaries, advances them in place (advance).
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

#include "../isa.hpp"
#include "../../read/ccq.hpp"
#include "../../reference/read_adjoint.hpp"
#include "simd.hpp"

LINEA_SIMD_WARNINGS_BEGIN
namespace linea::cpu_backend::inline LINEA_ISA {

// The statistics at a chunk boundary: C [K × Kp], m [Kp], z (padding zero).
struct ccq_checkpoint {
  std::vector<double> C, m;
  double z = 0;
};

template <class Weighting, class Arch>
class ccq_tape {
  using L = lanes<double, Arch>;
  using vec = typename L::type;
  static double sum(const vec& x) {
    if constexpr (L::size == 1) return x;
    else return xsimd::hadd(x);
  }

 public:
  using checkpoint = ccq_checkpoint;

  explicit ccq_tape(const problem& p)
      : K_(p.K), Kp_((p.K + L::size - 1) / L::size * L::size), KK_(K_ * Kp_), q_(sized(Kp_)), k_(sized(Kp_)),
        mu_(sized(Kp_)), dy_(sized(Kp_)), ct_dy_(sized(Kp_)), dct_k_(sized(Kp_)), dC_(sized(KK_)), dm_(sized(Kp_)) {
    reserve(2);
  }

  template <class A>
  void begin(const A& a, const problem&, index_t n, index_t hv) {
    steps_ = 0;
    double *C = C_at(0), *m = m_at(0);
    std::fill(C, C + KK_, 0.0);
    std::fill(m, m + Kp_, 0.0);
    z_[0] = 0;
    if (!a.ccq.C0.empty()) {
      for (index_t i = 0; i < K_; ++i) {
        m[i] = double(a.ccq.m0(n, hv, i));
        for (index_t j = 0; j < K_; ++j) C[i * Kp_ + j] = double(a.ccq.C0(n, hv, i, j));
      }
      z_[0] = double(a.ccq.z0(n, hv));
    }
    std::fill(dC_.begin(), dC_.end(), 0.0);
    std::fill(dm_.begin(), dm_.end(), 0.0);
    dz_ = 0;
  }

  checkpoint save() const {
    const double *C = C_at(steps_), *m = m_at(steps_);
    return {std::vector<double>(C, C + KK_), std::vector<double>(m, m + Kp_), z_[static_cast<std::size_t>(steps_)]};
  }
  void restart(const checkpoint& s) {  // the carried adjoints are kept
    steps_ = 0;
    std::copy(s.C.begin(), s.C.end(), C_at(0));
    std::copy(s.m.begin(), s.m.end(), m_at(0));
    z_[0] = s.z;
  }

  // C_t = a C_{t−1} + k kᵀ, m_t = a m_{t−1} + k, z_t = a z_{t−1} + 1; y = Σ_t q; q̃ = q − λ y.
  template <class A>
  const double* forward(const A& a, index_t bt, index_t t, index_t hv, const token<double>& x, double c_rule) {
    reserve(steps_ + 2);
    padded(x);
    const index_t s = steps_;
    const double decay = std::exp(log_decay(a, bt, t, hv, c_rule));
    const double z = accumulate_m_z(decay, s, s + 1);
    const double* Cb = C_at(s);
    double *C = C_at(s + 1), *m = m_at(s + 1), *y = y_at(s), *qt = qt_at(s);
    const bool empty = z == 0.0;  // Σ = 0 where z = 0 (only a caller's z0 < 0 gets there: ccq_statistics.hpp)
    const double inv_z = inverse_key_weight(z);
    for (index_t i = 0; i < Kp_; ++i) mu_[i] = m[i] * inv_z;
    const vec a_v = L::splat(decay), inv_z_v = L::splat(inv_z);
    for (index_t i = 0; i < K_; ++i) {
      const double *rb = Cb + i * Kp_;
      double* r = C + i * Kp_;
      const vec ki = L::splat(k_[i]), mui = L::splat(mu_[i]);
      vec acc = L::splat(0.0);
      for (index_t j = 0; j < Kp_; j += L::size) {
        const vec c = L::fma(a_v, L::load(rb + j), ki * L::load(k_.data() + j));
        L::store(r + j, c);
        const vec sigma = c * inv_z_v - mui * L::load(mu_.data() + j);  // Σ_ij = C_ij / z − μ_i μ_j
        acc = L::fma(sigma, L::load(q_.data() + j), acc);
      }
      y[i] = empty ? 0.0 : sum(acc);
    }
    const double lambda = load_as<double>(a.ccq.lambda(bt, t, hv));
    for (index_t i = 0; i < K_; ++i) qt[i] = x.q[i] - lambda * y[i];
    steps_ = s + 1;
    return qt;
  }

  // The statistics' update alone, in place (the checkpoint pass needs only the statistics at chunk boundaries):
  // one pass over C's rows, no y, no q̃, no slot per step. The arithmetic of C, m, z is forward's, operation for
  // operation, so the stretches that forward later restarts from these statistics see them bit for bit.
  // Only at the start of a stretch (no step recorded since begin or restart): forward's record would be overwritten.
  template <class A>
  void advance(const A& a, index_t bt, index_t t, index_t hv, const token<double>& x, double c_rule) {
    std::copy(x.k, x.k + K_, k_.begin());
    const double decay = std::exp(log_decay(a, bt, t, hv, c_rule));
    accumulate_m_z(decay, steps_, steps_);
    double* C = C_at(steps_);
    const vec a_v = L::splat(decay);
    for (index_t i = 0; i < K_; ++i) {
      double* r = C + i * Kp_;
      const vec ki = L::splat(k_[i]);
      for (index_t j = 0; j < Kp_; j += L::size)
        L::store(r + j, L::fma(a_v, L::load(r + j), ki * L::load(k_.data() + j)));
    }
  }

  // Room for a stretch of `steps` steps, allocated once (backward_head knows its chunk size); forward still grows
  // the storage if a stretch runs longer.
  void reserve_steps(index_t steps) { reserve(steps + 1, false); }

  const double* q_tilde(index_t step, const token<double>&) const { return qt_at(step); }

  template <class A, class Sums>
  double backward(const A& a, Sums& sums, index_t bt, index_t t, index_t hv, index_t step, const token<double>& x,
                  double c_rule, const double* dqt, double* dq, double* dk) {
    padded(x);
    const double *C = C_at(step + 1), *m = m_at(step + 1);  // C_t, m_t, z_t
    const double *Cb = C_at(step), *mb = m_at(step);        // C_{t−1}, m_{t−1}, z_{t−1}
    const double z = z_[static_cast<std::size_t>(step + 1)], zb = z_[static_cast<std::size_t>(step)];
    const double* y = y_at(step);
    const double lambda = load_as<double>(a.ccq.lambda(bt, t, hv));

    // q̃ = q − λ y:  dq += dq̃,  dλ = −dq̃·y,  dy = −λ dq̃.
    double dlambda = 0;
    for (index_t i = 0; i < K_; ++i) {
      dq[i] += dqt[i];
      dlambda -= dqt[i] * y[i];
      dy_[i] = -lambda * dqt[i];
    }
    sums.dlambda(bt, t, hv) += dlambda;

    // y = Σ q = C q / z − μ (μ·q), μ = m / z (nothing before any key: z = 0), then the statistics' update
    // (C_t = a C_{t−1} + k kᵀ, ...), row by row:
    //   read    dq += Cᵀdy / z − μ (μ·dy);  dC += dy qᵀ / z;  dμ = −dy (μ·q) − (μ·dy) q;  dm += dμ / z;
    //           dz −= (dy·C q + dμ·m) / z²;
    //   update  dk_i += dm_i + (dC k)_i + (dCᵀ k)_i;  da = Σ dC ⊙ C_{t−1} + dm·m_{t−1} + dz z_{t−1};
    //           dC, dm, dz *= a.
    const bool reads = z != 0.0;
    double mu_q = 0, mu_dy = 0;
    if (reads)
      for (index_t i = 0; i < K_; ++i) mu_q += m[i] / z * q_[i], mu_dy += m[i] / z * dy_[i];
    const double c = log_decay(a, bt, t, hv, c_rule);
    const double decay = std::exp(c);
    std::fill(ct_dy_.begin(), ct_dy_.end(), 0.0);
    std::fill(dct_k_.begin(), dct_k_.end(), 0.0);
    const vec decay_v = L::splat(decay);
    double dy_Cq = 0, dmu_m = 0;
    vec da_v = L::splat(0.0);
    for (index_t i = 0; i < K_; ++i) {
      const double *r = C + i * Kp_, *rb = Cb + i * Kp_;
      double* dr = dC_.data() + i * Kp_;
      if (reads) {
        const vec dyi = L::splat(dy_[i]), dyi_z = L::splat(dy_[i] / z);
        vec cq = L::splat(0.0);
        for (index_t j = 0; j < Kp_; j += L::size) {
          const vec cij = L::load(r + j), qj = L::load(q_.data() + j);
          cq = L::fma(cij, qj, cq);                                                  // (C q)_i
          L::store(ct_dy_.data() + j, L::fma(dyi, cij, L::load(ct_dy_.data() + j)));  // Cᵀ dy
          L::store(dr + j, L::fma(dyi_z, qj, L::load(dr + j)));                       // dC += dy qᵀ / z
        }
        dy_Cq += dy_[i] * sum(cq);
        const double dmu = -(dy_[i] * mu_q + mu_dy * q_[i]);
        dm_[i] += dmu / z;
        dmu_m += dmu * m[i];
      }
      const vec ki = L::splat(k_[i]);
      vec dck = L::splat(0.0);
      for (index_t j = 0; j < Kp_; j += L::size) {
        const vec dcij = L::load(dr + j);
        dck = L::fma(dcij, L::load(k_.data() + j), dck);                               // (dC k)_i
        L::store(dct_k_.data() + j, L::fma(ki, dcij, L::load(dct_k_.data() + j)));    // dCᵀ k
        da_v = L::fma(dcij, L::load(rb + j), da_v);                                    // Σ dC ⊙ C_{t−1}
        L::store(dr + j, dcij * decay_v);
      }
      dk[i] += dm_[i] + sum(dck);
    }
    if (reads) {
      for (index_t j = 0; j < K_; ++j) dq[j] += ct_dy_[j] / z - m[j] / z * mu_dy;
      dz_ += -dy_Cq / (z * z) - dmu_m / (z * z);
    }
    double da = dz_ * zb + sum(da_v);
    for (index_t i = 0; i < K_; ++i) {
      dk[i] += dct_k_[i];
      da += dm_[i] * mb[i];
      dm_[i] *= decay;
    }
    dz_ *= decay;
    return reference::ccq_log_decay_adjoint<Weighting>(a, sums, bt, t, hv, da * decay);  // d a / d c = a
  }

  template <class Sums>
  void end(Sums& sums, index_t n, index_t hv) {
    for (index_t i = 0; i < K_; ++i) {
      sums.dm0(n, hv, i) += dm_[i];
      for (index_t j = 0; j < K_; ++j) sums.dC0(n, hv, i, j) += dC_[static_cast<std::size_t>(i * Kp_ + j)];
    }
    sums.dz0(n, hv) += dz_;
  }

 private:
  // c_t as read::ccq_log_decay gives it, here so that no symbol outside the ISA namespace is called (backend/isa.hpp).
  template <class A>
  static double log_decay(const A& a, index_t bt, index_t t, index_t hv, double rule_log_decay) {
    if constexpr (!Weighting::decays) return 0.0;
    else return a.ccq.log_decay.empty() ? rule_log_decay : load_as<double>(a.ccq.log_decay(bt, t, hv));
  }
  // m and z of slot `to` from slot `from` (the same slot: in place) and the token's key in k_:
  // m = a m + k, z = a z + 1. Returns z. forward and advance both update them here, so that the statistics the
  // checkpoint pass leaves are forward's bit for bit.
  double accumulate_m_z(double decay, index_t from, index_t to) {
    const double* m_from = m_at(from);
    double* m = m_at(to);
    for (index_t i = 0; i < Kp_; ++i) m[i] = decay * m_from[i] + k_[i];
    double& z = z_[static_cast<std::size_t>(to)];
    z = decay * z_[static_cast<std::size_t>(from)] + 1.0;
    return z;
  }
  static std::vector<double> sized(index_t n) { return std::vector<double>(static_cast<std::size_t>(n), 0.0); }
  // Room for `slots` statistics (and slots − 1 steps' y, q̃); grows, keeping what is stored, only on a longer stretch:
  // to exactly `slots` when asked for a known length, else by doubling (forward, one step at a time).
  void reserve(index_t slots, bool doubling = true) {
    if (slots <= slots_) return;
    if (doubling) slots = std::max(slots, 2 * slots_);
    Cs_.resize(static_cast<std::size_t>(slots * KK_), 0.0);
    ms_.resize(static_cast<std::size_t>(slots * Kp_), 0.0);
    z_.resize(static_cast<std::size_t>(slots), 0.0);
    ys_.resize(static_cast<std::size_t>(slots * Kp_), 0.0);
    qts_.resize(static_cast<std::size_t>(slots * Kp_), 0.0);
    slots_ = slots;
  }
  // The token's q and k, zero past K.
  void padded(const token<double>& x) {
    std::copy(x.q, x.q + K_, q_.begin());
    std::copy(x.k, x.k + K_, k_.begin());
  }
  double* C_at(index_t s) { return Cs_.data() + s * KK_; }
  const double* C_at(index_t s) const { return Cs_.data() + s * KK_; }
  double* m_at(index_t s) { return ms_.data() + s * Kp_; }
  const double* m_at(index_t s) const { return ms_.data() + s * Kp_; }
  double* y_at(index_t s) { return ys_.data() + s * Kp_; }
  double* qt_at(index_t s) { return qts_.data() + s * Kp_; }
  const double* qt_at(index_t s) const { return qts_.data() + s * Kp_; }

  index_t K_, Kp_, KK_;  // K, K padded to the lane count, one C (K rows of Kp)
  index_t slots_ = 0, steps_ = 0;
  std::vector<double> Cs_, ms_, z_;  // statistics after 0, 1, … steps of the stretch [slots, K, Kp], [slots, Kp]
  std::vector<double> ys_, qts_;     // Σ_t q_t and q̃_t of every step [slots, Kp]
  std::vector<double> q_, k_, mu_;   // the token's q, k (padded), μ_t
  std::vector<double> dy_, ct_dy_, dct_k_;  // one step's dL/dy, Cᵀdy, dCᵀk
  std::vector<double> dC_, dm_;             // adjoints of the statistics, carried backward [K, Kp], [Kp]
  double dz_ = 0;
};

// The tape backward_head runs: this one for CCQ, the reference's for every other read (identity: nothing to do).
template <class Read, class Arch>
struct read_tape_of {
  using type = reference::read_tape<Read, double>;
};
template <class Weighting, class Arch>
struct read_tape_of<read::ccq<Weighting>, Arch> {
  using type = ccq_tape<Weighting, Arch>;
};

}  // namespace linea::cpu_backend
LINEA_SIMD_WARNINGS_END
