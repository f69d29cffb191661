// linea/backend/cpu/ccq.hpp — the CCQ read inside the CPU recurrent kernel (read/ccq.hpp has the mathematics).
//
// The statistic C_t = a_t C_{t−1} + k_t k_tᵀ and the product y_t = C_t q_t are themselves a linear attention
// with a scalar decay: state Cᵀ (K×K), key k_t, value k_t, query q_t, with the same deferred decay as the
// state (C = γ C̃, C̃ += k (k/γ)ᵀ, y = γ C̃ᵀq; rows multiplied out when γ would fall below renorm_threshold).
// They run one block of tokens at a time, before the block's state tiles, in sub-blocks of 16 tokens whose
// reads and update are register-blocked matrix products (ccq_block::sub_block has the algebra):
//
//   add(l, x, ...)   token l of the block: m, z, γ and the rows the products read (k, q, k/γ, kᵀ)
//   finish(L, ...)   the products over the block's L tokens, then per token
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

// One register-blocked product tile: C[r][cols] (+)= Σ_d X(r, d) · M[d][cols] for TR rows and NV vectors of
// columns, X(r, d) = x[r·xr + d·xd] (broadcast), M row d at m + d·ldm. Only rows r < rows are loaded/stored (the
// others are computed and dropped: their X rows must be readable). TR·NV accumulators stay in registers over
// the whole depth: one broadcast per row and NV loads per TR·NV FMAs.
template <class R, class Arch, int TR, int NV>
struct product_tile {
  using L = lanes<R, Arch>;
  using vec = typename L::type;
  static constexpr int width = NV * L::size;

  static void run(R* c, index_t ldc, int rows, bool accumulate, const R* x, index_t xr, index_t xd, const R* m,
                  index_t ldm, index_t depth) {
    vec acc[TR][NV];
    for (int r = 0; r < TR; ++r)
      for (int n = 0; n < NV; ++n)
        acc[r][n] = accumulate && r < rows ? L::load(c + r * ldc + n * L::size) : L::splat(R(0));
    for (index_t d = 0; d < depth; ++d) {
      vec mv[NV];
      for (int n = 0; n < NV; ++n) mv[n] = L::load(m + d * ldm + n * L::size);
      const R* xd_ = x + d * xd;
      for (int r = 0; r < TR; ++r) {
        const vec xv = L::splat(xd_[r * xr]);
        for (int n = 0; n < NV; ++n) acc[r][n] = L::fma(xv, mv[n], acc[r][n]);
      }
    }
    for (int r = 0; r < rows && r < TR; ++r)
      for (int n = 0; n < NV; ++n) L::store(c + r * ldc + n * L::size, acc[r][n]);
  }
};

// The block's work: the statistics over the block's tokens and the q̃ rows (shared by the heads of a kernel).
//
// The tokens go through in sub-blocks of up to SB = 16 (a renormalisation starts a new one), each as three
// register-blocked products instead of a token-by-token pass (the state G = C̃ᵀ, Kp×Kp, row i of G holds C̃_{·i}):
//   A  = Q Kᵀ, masked to s ≤ l                       the sub-block's own keys seen by its queries (SB×SB)
//   Y  = Q G + A KG                                  y_l = C̃_l q_l for every token l of the sub-block
//   G += Kᵀ KG                                       the sub-block's keys enter the statistics (KG = k/γ rows)
// (2·K² + 2·SB·K multiply-adds per token: a little more than the token-by-token tiles' 2·K², but as products
// with a long inner dimension, which run at a higher fraction of the FMA peak.)
template <class Weighting, class R, class Arch, index_t Block>
class ccq_block {
  using Lv = lanes<R, Arch>;
  using vec = typename Lv::type;
  static constexpr int NV = 2;                      // vectors of columns per product tile
  static constexpr index_t TR = 8, SB = 16;         // token rows per tile; tokens per sub-block (at most)
  static constexpr int NA = SB / Lv::size > 0 ? int(SB / Lv::size) : 1;  // vectors holding one row of A
  static_assert(SB % Lv::size == 0, "a row of A is whole vectors");
  using tile_t = product_tile<R, Arch, int(TR), NV>;
  using a_tile_t = product_tile<R, Arch, int(TR), NA>;
  static constexpr index_t CW = tile_t::width;
  static constexpr index_t rows_ = Block + SB;      // token rows of the buffers: tiles may read past the block
  static constexpr index_t ldT = Block + SB;        // row stride of the transposed keys

 public:
  using carried = ccq_carried<R>;
  static constexpr index_t pad = std::lcm(std::lcm(TR, CW), index_t(Lv::size));
  static constexpr R renorm_threshold = R(1e-15);

  explicit ccq_block(const problem& p)
      : K_(p.K), Kp_(padded(p.K)), kg_(buffer()), k_(buffer()), q_(buffer()), f_(Block),
        y_(buffer()), m_(buffer()), qt_(buffer()), kT_(static_cast<std::size_t>(Kp_ * ldT), R(0)),
        a_(static_cast<std::size_t>(SB * SB), R(0)), z_(Block), mq_(Block), lambda_(Block), renorm_(Block) {}

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
        f_[l] = next;
        s.gamma = 1;
      } else {
        s.gamma = next;
      }
    }
    R *kg = row(kg_, l), *k = row(k_, l), *q = row(q_, l), *m = row(m_, l);
    for (index_t i = 0; i < K_; ++i) k[i] = x.k[i], q[i] = x.q[i], kT_[i * ldT + l] = x.k[i];  // padding stays zero
    // The products' values are kg = k/γ (one reciprocal per token); their keys and queries are k and q
    // themselves, and γ multiplies the read afterwards (finish()). The uniform weighting has γ = 1: kg is k.
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

  // The statistics over tokens [0, L) of the block, sub-block by sub-block (y = C̃ q, C̃ += k (k/γ)ᵀ), then
  // q̃ of each token (also into ccq.q_tilde when asked): query(l).
  template <class A>
  void finish(carried& s, const A& a, index_t L, index_t bt, index_t t0, index_t hv) {
    for (index_t l0 = 0; l0 < L;) {
      index_t n = 1;
      while (n < SB && l0 + n < L && !renorm_[l0 + n]) ++n;
      sub_block(s, l0, n);
      l0 += n;
    }
    for (index_t l = 0; l < L; ++l) {
      // Σ q = γ y / z − μ (μᵀ q), μ = m / z;  q̃ = q − λ Σ q
      const R inv_z = R(1) / z_[l];
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
  // Tokens [l0, l0 + n) of the block, n ≤ SB, no renormalisation after l0: y rows, then the update of G.
  void sub_block(carried& s, index_t l0, index_t n) {
    R* G = s.state.data();
    if (renorm_[l0]) {  // C̃ ← γ α C̃ before token l0 (γ restarts at 1)
      const vec f = Lv::splat(f_[l0]);
      for (index_t i = 0; i < Kp_ * Kp_; i += Lv::size) Lv::store(G + i, Lv::load(G + i) * f);
    }
    const R* kg = (Weighting::decays ? kg_.data() : k_.data()) + l0 * Kp_;
    const R* q = q_.data() + l0 * Kp_;
    // A[l][s] = k_s · q_l for s ≤ l, else 0 (the query sees its own key and the earlier ones)
    for (index_t r0 = 0; r0 < n; r0 += TR)
      a_tile_t::run(a_.data() + r0 * SB, SB, int(std::min(TR, n - r0)), false, q + r0 * Kp_, Kp_, 1,
                    kT_.data() + l0, ldT, Kp_);
    for (index_t l = 0; l < n; ++l)
      for (index_t c = l + 1; c < SB; ++c) a_[l * SB + c] = R(0);
    // Y = Q G + A KG, one column tile at a time (its rows of G stay in L1 for both row tiles)
    for (index_t jc = 0; jc < Kp_; jc += CW)
      for (index_t r0 = 0; r0 < n; r0 += TR) {
        const int rows = int(std::min(TR, n - r0));
        R* y = y_.data() + (l0 + r0) * Kp_ + jc;
        tile_t::run(y, Kp_, rows, false, q + r0 * Kp_, Kp_, 1, G + jc, Kp_, Kp_);
        tile_t::run(y, Kp_, rows, true, a_.data() + r0 * SB, SB, 1, kg + jc, Kp_, n);
      }
    // G[i][·] += Σ_s k_s,i kg_s
    const R* k = k_.data() + l0 * Kp_;
    for (index_t i0 = 0; i0 < Kp_; i0 += TR)
      for (index_t jc = 0; jc < Kp_; jc += CW)
        tile_t::run(G + i0 * Kp_ + jc, Kp_, int(TR), true, k + i0, 1, Kp_, kg + jc, Kp_, n);
  }

  std::vector<R> buffer() const { return std::vector<R>(static_cast<std::size_t>(rows_ * Kp_), R(0)); }
  R* row(std::vector<R>& b, index_t l) { return b.data() + l * Kp_; }
  static R sum(const vec& x) {
    alignas(64) R buf[Lv::size];
    Lv::store(buf, x);
    R acc = 0;
    for (int i = 0; i < Lv::size; ++i) acc += buf[i];
    return acc;
  }

  index_t K_, Kp_;
  std::vector<R> kg_, k_, q_, f_, y_, m_, qt_, kT_, a_, z_, mq_, lambda_, gamma_ = std::vector<R>(Block);
  std::vector<unsigned char> renorm_;
};

}  // namespace linea::cpu_backend
LINEA_SIMD_WARNINGS_END
