// linea/backend/cpu/ccq.hpp — the CCQ read inside the CPU recurrent kernel (read/ccq.hpp has the mathematics).
//
// The statistic C_t = a_t C_{t−1} + k_t k_tᵀ and the product y_t = C_t q_t are themselves a linear attention
// with a scalar decay: state Cᵀ (K×K), key k_t, value k_t, query q_t. So they run on the additive rules'
// register tiles (backend/cpu/tile.hpp: register_tile), with the same deferred decay as the state
// (C = γ C̃, C̃ += k (k/γ)ᵀ, y = γ C̃ᵀq; rows multiplied out when γ would fall below renorm_threshold), one
// block of tokens at a time, before the block's state tiles run:
//
//   add(l, x, ...)   token l of the block: m, z, γ and the coefficients of the statistics' tiles
//   finish(L, ...)   the tiles over the block's L tokens (2·K² FMAs per token, in registers), then per token
//                    Σ_t q_t = y_t / z_t − μ_t (μ_tᵀ q_t),  μ_t = m_t / z_t,   q̃_t = q_t − λ_t Σ_t q_t
//
// The state is Cᵀ (so that the tiles' read Σ_i q_i row_i is Σ_j C_ij q_j, the reference's row product, even for
// a non-symmetric C0). Statistics in the state type R: float32 for float32, bf16 and fp16 inputs.
#pragma once
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "../isa.hpp"
#include "../../core/arguments.hpp"
#include "../../read/ccq.hpp"
#include "simd.hpp"
#include "tile.hpp"

LINEA_SIMD_WARNINGS_BEGIN
namespace linea::cpu_backend::inline LINEA_ISA {

// What one (sequence, value head) carries from block to block: C̃ (as C̃ᵀ, Kp×Kp), γ, m, z.
template <class R>
struct ccq_carried {
  index_t K, Kp;
  std::vector<R> state, m;
  R z = 0, gamma = 1;
  ccq_carried(index_t K_, index_t Kp_) : K(K_), Kp(Kp_), state(static_cast<std::size_t>(Kp_ * Kp_)), m(Kp_) {}

  // The initial statistics of row n (or zero): C̃ᵀ = C0ᵀ, γ = 1.
  template <class A>
  void load(const A& a, index_t n, index_t hv) {
    std::fill(state.begin(), state.end(), R(0));
    std::fill(m.begin(), m.end(), R(0));
    z = 0;
    gamma = 1;
    const auto& c = a.ccq;
    if (c.C0.empty()) return;
    for (index_t i = 0; i < K; ++i) {
      m[i] = R(c.m0(n, hv, i));
      for (index_t j = 0; j < K; ++j) state[j * Kp + i] = R(c.C0(n, hv, i, j));
    }
    z = R(c.z0(n, hv));
  }

  // The final statistics (C = γ C̃) into whichever of C, m, z the caller asked for.
  template <class A>
  void store(const A& a, index_t n, index_t hv) const {
    using S = typename A::state_type;
    const auto& c = a.ccq;
    if (!c.C.empty())
      for (index_t i = 0; i < K; ++i)
        for (index_t j = 0; j < K; ++j) c.C(n, hv, i, j) = static_cast<S>(gamma * state[j * Kp + i]);
    if (!c.m.empty())
      for (index_t i = 0; i < K; ++i) c.m(n, hv, i) = static_cast<S>(m[i]);
    if (!c.z.empty()) c.z(n, hv) = static_cast<S>(z);
  }
};

// The block's work: coefficients of the statistics' tiles and the q̃ rows (shared by the heads of a kernel).
template <class Weighting, class R, class Arch, index_t Block>
class ccq_block {
  using Lv = lanes<R, Arch>;
  using vec = typename Lv::type;
  using reg_t = register_tile<R, Arch, 8, 2>;
  static constexpr index_t KR = reg_t::rows, RW = reg_t::width;

 public:
  using carried = ccq_carried<R>;
  static constexpr index_t pad = std::lcm(std::lcm(KR, RW), index_t(Lv::size));
  static constexpr R renorm_threshold = R(1e-15);

  explicit ccq_block(const problem& p)
      : K_(p.K), Kp_(padded(p.K)), kg_(buffer()), k_(buffer()), q_(buffer()), f_(buffer()),
        y_(buffer()), m_(buffer()), qt_(buffer()), z_(Block), mq_(Block), lambda_(Block), renorm_(Block),
        part_(Block * RW) {}

  static index_t padded(index_t K) { return (K + pad - 1) / pad * pad; }

  // Token l of the block (batch row bt, time t, value head hv): its key enters m, z (here) and C (in finish()).
  template <class A>
  void add(carried& s, const A& a, index_t l, index_t bt, index_t t, index_t hv, const token<R>& x,
           R rule_log_decay) {
    const R alpha = Weighting::decays ? std::exp(read::ccq_log_decay<Weighting, R>(a, bt, t, hv, rule_log_decay)) : R(1);
    renorm_[l] = 0;
    if constexpr (Weighting::decays) {
      const R next = s.gamma * alpha;
      if (next < renorm_threshold || !(next == next)) {  // multiply the rows out before this token
        renorm_[l] = 1;
        std::fill(row(f_, l), row(f_, l) + Kp_, next);
        s.gamma = 1;
      } else {
        s.gamma = next;
      }
    }
    R *kg = row(kg_, l), *k = row(k_, l), *q = row(q_, l), *m = row(m_, l);
    for (index_t i = 0; i < K_; ++i) k[i] = x.k[i], q[i] = x.q[i];  // padding stays zero
    // The tiles' values are kg = k/γ (one reciprocal per token); their keys and queries are k and q themselves,
    // and γ multiplies the read afterwards (finish()). The uniform weighting has γ = 1: kg is k.
    gamma_[l] = s.gamma;
    const vec va = Lv::splat(alpha), vinv = Lv::splat(R(1) / s.gamma);
    vec mq = Lv::splat(R(0));
    for (index_t i = 0; i < Kp_; i += Lv::size) {
      const vec ki = Lv::load(k + i), qi = Lv::load(q + i);
      const vec mi = Lv::fma(va, Lv::load(s.m.data() + i), ki);  // m ← a m + k
      Lv::store(s.m.data() + i, mi);
      Lv::store(m + i, mi);
      if constexpr (Weighting::decays) Lv::store(kg + i, ki * vinv);
      mq = Lv::fma(mi, qi, mq);
    }
    s.z = alpha * s.z + R(1);
    z_[l] = s.z;
    mq_[l] = sum(mq);
    lambda_[l] = load_as<R>(a.ccq.lambda(bt, t, hv));
  }

  // The statistics' tiles over tokens [0, L) of the block (C̃ += k (k/γ)ᵀ, y = γ C̃ᵀq, token by token), then
  // q̃ of each token (also into ccq.q_tilde when asked): query(l).
  template <class A>
  void finish(carried& s, const A& a, index_t L, index_t bt, index_t t0, index_t hv) {
    const R* kg = Weighting::decays ? kg_.data() : k_.data();
    for (index_t jc = 0; jc < Kp_; jc += RW) {
      for (index_t it = 0; it < Kp_; it += KR)
        reg_t::run(s.state.data() + it * Kp_ + jc, Kp_, L, k_.data() + it, q_.data() + it, Kp_, kg + jc,
                   Kp_, renorm_.data(), f_.data() + it, Kp_, part_.data(), it == 0);
      for (index_t l = 0; l < L; ++l) std::copy(part_.data() + l * RW, part_.data() + (l + 1) * RW, row(y_, l) + jc);
    }
    for (index_t l = 0; l < L; ++l) {
      // Σ q = γ y / z − μ (μᵀ q), μ = m / z;  q̃ = q − λ Σ q  (Σ = 0 where z = 0: read/ccq_statistics.hpp)
      const R inv_z = inverse_key_weight(z_[l]);
      const vec a_y = Lv::splat(-lambda_[l] * gamma_[l] * inv_z), a_m = Lv::splat(lambda_[l] * mq_[l] * inv_z * inv_z);
      const R *y = row(y_, l), *m = row(m_, l), *q = row(q_, l);
      R* qt = row(qt_, l);
      for (index_t i = 0; i < Kp_; i += Lv::size)
        Lv::store(qt + i, Lv::fma(a_m, Lv::load(m + i), Lv::fma(a_y, Lv::load(y + i), Lv::load(q + i))));
      if (!a.ccq.q_tilde.empty())
        for (index_t i = 0; i < K_; ++i) a.ccq.q_tilde(bt, t0 + l, hv, i) = store_as<typename A::input_type>(qt[i]);
    }
  }

  // q̃ of token l of the finished block (Kp entries, zero padding).
  const R* query(index_t l) const { return qt_.data() + l * Kp_; }

 private:
  std::vector<R> buffer() const { return std::vector<R>(static_cast<std::size_t>(Block * Kp_), R(0)); }
  R* row(std::vector<R>& b, index_t l) { return b.data() + l * Kp_; }
  static R sum(const vec& x) {
    alignas(64) R buf[Lv::size];
    Lv::store(buf, x);
    R acc = 0;
    for (int i = 0; i < Lv::size; ++i) acc += buf[i];
    return acc;
  }

  index_t K_, Kp_;
  std::vector<R> kg_, k_, q_, f_, y_, m_, qt_, z_, mq_, lambda_, gamma_ = std::vector<R>(Block);
  std::vector<unsigned char> renorm_;
  std::vector<R> part_;
};

}  // namespace linea::cpu_backend
LINEA_SIMD_WARNINGS_END
