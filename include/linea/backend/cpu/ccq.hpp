// linea/backend/cpu/ccq.hpp — the CCQ read inside the CPU recurrent kernel (read/ccq.hpp has the mathematics).
//
// The statistic C_t = a_t C_{t−1} + k_t k_tᵀ and the products y_t = C_t q_t are themselves a linear attention
// with a scalar decay (state C, keys and values k, queries q), with the same deferred decay as the state:
// C = γ C̃, C̃ += k (k/γ)ᵀ, y = γ C̃ q; C̃ is multiplied out when γ would fall below renorm_threshold.
//
// C̃ is symmetric apart from a non-symmetric C0 (whose antisymmetric part A only decays: it is kept apart and
// read by itself, which costs nothing when C0 is symmetric or absent). So only the 16×16 blocks of C̃ on and
// above the diagonal are kept, and a block's tokens go through it in sub-blocks of 16 (square = sub = 16):
//
//   add(l, x, ...)   token l of the block: m, z, γ, μᵀq and the rows k, k/γ, q
//   finish(L, ...)   per sub-block [b, e) (cut at renormalisations), with C̃ the statistics before token b:
//                      y_l = C̃ q_l + Σ_{b≤s≤l} (k_s/γ_s)(k_sᵀ q_l)          (C̃ q: upper blocks read twice,
//                      C̃ += Σ_{b≤s<e} k_s (k_s/γ_s)ᵀ   on the upper blocks    as U q and Uᵀ q, no mirror)
//                    then per token Σ_t q_t = γ y_t / z_t − μ_t (μ_tᵀ q_t), μ_t = m_t / z_t, q̃_t = q_t − λ_t Σ_t q_t
//
// Multiply-adds per token: K² (the read) + ≈ 0.56 K² (the update of the upper blocks) + ≈ 17 K (the sub-block's
// own keys), against 2 K² for the token-by-token update and read of the full C. Each loop keeps 16 vector
// accumulators in registers (16 tokens × one column vector, or 16 rows × one token vector). Statistics in the
// state type R: float32 for float32, bf16 and fp16 inputs.
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

// The block edge of the stored triangle and the tokens per sub-block.
inline constexpr index_t ccq_square = 16;

// What one (sequence, value head) carries from block to block: C̃ (symmetric part, upper blocks of a Kp×Kp
// array), its antisymmetric part A (only from a non-symmetric C0), γ, m, z. Both in the layout M = C̃ᵀ, so that
// y = C̃ q is y_j = Σ_i q_i M_ij (the reference's row product C q, even for a non-symmetric C0).
template <class R>
struct ccq_carried {
  index_t K, Kp;
  std::vector<R> state, asym, m;
  bool has_asym = false;
  R z = 0, gamma = 1;
  ccq_carried(index_t K_, index_t Kp_) : K(K_), Kp(Kp_), state(static_cast<std::size_t>(Kp_ * Kp_)), m(Kp_) {}

  // Entry (i, j) of the symmetric part, from whichever of (i, j), (j, i) lies in an upper block.
  R sym(index_t i, index_t j) const {
    return i / ccq_square <= j / ccq_square ? state[i * Kp + j] : state[j * Kp + i];
  }

  // The initial statistics of row n (or zero): C̃ = C0, γ = 1.
  template <class A>
  void load(const A& a, index_t n, index_t hv) {
    std::fill(state.begin(), state.end(), R(0));
    std::fill(m.begin(), m.end(), R(0));
    asym.clear();
    has_asym = false;
    z = 0;
    gamma = 1;
    const auto& c = a.ccq;
    if (c.C0.empty()) return;
    for (index_t i = 0; i < K; ++i) {
      m[i] = R(c.m0(n, hv, i));
      for (index_t j = 0; j < K; ++j) {
        const R mij = R(c.C0(n, hv, j, i)), mji = R(c.C0(n, hv, i, j));  // M_ij = C0_ji
        state[i * Kp + j] = mij == mji ? mij : (mij + mji) / R(2);
        has_asym |= mij != mji;
      }
    }
    if (has_asym) {
      asym.assign(static_cast<std::size_t>(Kp * Kp), R(0));
      for (index_t i = 0; i < K; ++i)
        for (index_t j = 0; j < K; ++j) asym[i * Kp + j] = R(c.C0(n, hv, j, i)) - state[i * Kp + j];
    }
    z = R(c.z0(n, hv));
  }

  // The final statistics (C = γ C̃, C_ij = γ M_ji) into whichever of C, m, z the caller asked for.
  template <class A>
  void store(const A& a, index_t n, index_t hv) const {
    using S = typename A::state_type;
    const auto& c = a.ccq;
    if (!c.C.empty())
      for (index_t i = 0; i < K; ++i)
        for (index_t j = 0; j < K; ++j)
          c.C(n, hv, i, j) = static_cast<S>(gamma * (has_asym ? sym(j, i) + asym[j * Kp + i] : sym(j, i)));
    if (!c.m.empty())
      for (index_t i = 0; i < K; ++i) c.m(n, hv, i) = static_cast<S>(m[i]);
    if (!c.z.empty()) c.z(n, hv) = static_cast<S>(z);
  }

  // C̃ ← f C̃ (a renormalisation: γ was reset to 1 and f is the product it had reached).
  void scale(R f) {
    for (R& x : state) x *= f;
    for (R& x : asym) x *= f;
  }
};

// The block's work: m, z, γ and the rows k, k/γ, q per token (add), the statistics' sub-blocks and the q̃ rows
// (finish); one per kernel, shared by its heads.
template <class Weighting, class R, class Arch, index_t Block>
class ccq_block {
  using Lv = lanes<R, Arch>;
  using vec = typename Lv::type;
  static constexpr index_t SQ = ccq_square, SUB = ccq_square;  // block edge, tokens per sub-block
  static constexpr int NV = static_cast<int>(SQ / Lv::size);   // vectors per block row (or per token column)
  static_assert(SQ % Lv::size == 0, "a block row is whole vectors");

 public:
  using carried = ccq_carried<R>;
  static constexpr index_t pad = std::lcm(SQ, index_t(Lv::size));
  static constexpr R renorm_threshold = R(1e-15);

  // Rows: the block's tokens, and SUB more so that a sub-block's register loops may run over 16 rows from
  // any token of the block (the rows past its end are read and their results discarded).
  explicit ccq_block(const problem& p)
      : K_(p.K), Kp_(padded(p.K)), kg_(buffer()), k_(buffer()), q_(buffer()), y_(buffer()), m_(buffer()),
        qt_(buffer()), qT_(static_cast<std::size_t>(Kp_ * SUB)), dT_(SUB * SUB), z_(Block), mq_(Block), lambda_(Block),
        gamma_(Block), f_(Block), renorm_(Block) {}

  static index_t padded(index_t K) { return (K + pad - 1) / pad * pad; }

  // Token l of the block (batch row bt, time t, value head hv): its key enters m, z (here) and C (in finish()).
  template <class A>
  void add(carried& s, const A& a, index_t l, index_t bt, index_t t, index_t hv, const token<R>& x,
           R rule_log_decay) {
    const R alpha = Weighting::decays ? std::exp(read::ccq_log_decay<Weighting, R>(a, bt, t, hv, rule_log_decay)) : R(1);
    renorm_[l] = 0;
    if constexpr (Weighting::decays) {
      const R next = s.gamma * alpha;
      if (next < renorm_threshold || !(next == next)) {  // multiply C̃ out before this token
        renorm_[l] = 1;
        f_[l] = next;
        s.gamma = 1;
      } else {
        s.gamma = next;
      }
    }
    R *kg = row(kg_, l), *k = row(k_, l), *q = row(q_, l), *m = row(m_, l);
    for (index_t i = 0; i < K_; ++i) k[i] = x.k[i], q[i] = x.q[i];  // padding stays zero
    // The values of the statistics are kg = k/γ (one reciprocal per token); their keys and queries are k and q
    // themselves, and γ multiplies the read afterwards (finish()). The uniform weighting has γ = 1: kg is k.
    gamma_[l] = s.gamma;
    const vec va = Lv::splat(alpha), vinv = Lv::splat(R(1) / s.gamma);
    vec mq = Lv::splat(R(0));
    for (index_t i = 0; i < Kp_; i += Lv::size) {
      const vec ki = Lv::load(k + i), qi = Lv::load(q + i);
      const vec mi = Lv::fma(va, Lv::load(s.m.data() + i), ki);  // m ← a m + k
      Lv::store(s.m.data() + i, mi);
      Lv::store(m + i, mi);
      Lv::store(kg + i, Weighting::decays ? ki * vinv : ki);
      mq = Lv::fma(mi, qi, mq);
    }
    s.z = alpha * s.z + R(1);
    z_[l] = s.z;
    mq_[l] = sum(mq);
    lambda_[l] = load_as<R>(a.ccq.lambda(bt, t, hv));
  }

  // The statistics over tokens [0, L) of the block, sub-block by sub-block (a renormalisation starts a new one),
  // then q̃ of each token (also into ccq.q_tilde when asked): query(l).
  template <class A>
  void finish(carried& s, const A& a, index_t L, index_t bt, index_t t0, index_t hv) {
    for (index_t b = 0; b < L;) {
      if (renorm_[b]) s.scale(f_[b]);
      index_t e = b + 1;
      while (e < L && e - b < SUB && !renorm_[e]) ++e;
      sub_block(s, b, e);
      b = e;
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
  // Tokens [b, e) (e − b ≤ SUB, no renormalisation after b): y_l = C̃ q_l + the sub-block's own keys up to l,
  // then C̃ += the sub-block's keys. U = the stored upper blocks of C̃ (M layout).
  // (The loops below address rows at multiples of Kp: a compile-time Kp (128, the common K) lets every row
  // be one base register plus a constant offset instead of a register per row.)
  void sub_block(carried& s, index_t b, index_t e) {
    if (Kp_ == 128) sub_block_k<128>(s, b, e);
    else sub_block_k<0>(s, b, e);
  }

  template <index_t KpC>
  void sub_block_k(carried& s, index_t b, index_t e) {
    const index_t n = e - b, Kp = KpC ? KpC : Kp_;
    for (index_t j = 0; j < Kp; ++j)  // the queries transposed, zero past e: qT[j][l] = q_{b+l, j}
      for (index_t l = 0; l < SUB; ++l) qT_[j * SUB + l] = l < n ? q_[(b + l) * Kp + j] : R(0);
    own_dots<KpC>(b, n);
    read_direct<KpC>(s, b, n);
    read_transposed<KpC>(s, b, n);
    if (s.has_asym) read_asym(s, b, e);
    update<KpC>(s, b, e);
  }

  // d[s][l] = k_{b+s}ᵀ q_{b+l} for s ≤ l (zero above), s < n: one token vector per key row in registers.
  template <index_t KpC>
  void own_dots(index_t b, index_t n) {
    const index_t Kp = KpC ? KpC : Kp_;
    vec acc[SUB][NV];
    for (index_t t = 0; t < SUB; ++t)
      for (int v = 0; v < NV; ++v) acc[t][v] = Lv::splat(R(0));
    const R* k = k_.data() + b * Kp;
    for (index_t j = 0; j < Kp; ++j) {
      vec qj[NV];
      for (int v = 0; v < NV; ++v) qj[v] = Lv::load(qT_.data() + j * SUB + v * Lv::size);
      for (index_t t = 0; t < SUB; ++t) {
        const vec kj = Lv::splat(k[t * Kp + j]);
        for (int v = 0; v < NV; ++v) acc[t][v] = Lv::fma(kj, qj[v], acc[t][v]);
      }
    }
    for (index_t t = 0; t < SUB; ++t) {
      R* d = dT_.data() + t * SUB;
      for (int v = 0; v < NV; ++v) Lv::store(d + v * Lv::size, acc[t][v]);
      for (index_t l = 0; l < SUB; ++l)
        if (t >= n || l < t) d[l] = R(0);
    }
  }

  // y_l[J] = Σ_{i < end of J} q_l,i U_i,J + Σ_{s ≤ l} d[s][l] kg_{b+s}[J]: the upper blocks of column block J
  // (the diagonal block whole) and the sub-block's own keys, 16 tokens × one column block in registers (tokens
  // past n are computed and dropped).
  template <index_t KpC>
  void read_direct(const carried& s, index_t b, index_t n) {
    const index_t Kp = KpC ? KpC : Kp_;
    const R* U = s.state.data();
    const R* kg = kg_.data() + b * Kp;
    for (index_t c0 = 0; c0 < Kp; c0 += SQ) {
      vec acc[SUB][NV];
      for (index_t l = 0; l < SUB; ++l)
        for (int v = 0; v < NV; ++v) acc[l][v] = Lv::splat(R(0));
      for (index_t i = 0; i < c0 + SQ; ++i) {
        vec u[NV];
        for (int v = 0; v < NV; ++v) u[v] = Lv::load(U + i * Kp + c0 + v * Lv::size);
        for (index_t l = 0; l < SUB; ++l) {
          const vec qi = Lv::splat(qT_[i * SUB + l]);  // one cache line per i
          for (int v = 0; v < NV; ++v) acc[l][v] = Lv::fma(qi, u[v], acc[l][v]);
        }
      }
      for (index_t t = 0; t < n; ++t) {
        vec g[NV];
        for (int v = 0; v < NV; ++v) g[v] = Lv::load(kg + t * Kp + c0 + v * Lv::size);
        for (index_t l = 0; l < SUB; ++l) {
          const vec dl = Lv::splat(dT_[t * SUB + l]);
          for (int v = 0; v < NV; ++v) acc[l][v] = Lv::fma(dl, g[v], acc[l][v]);
        }
      }
      for (index_t l = 0; l < n; ++l)
        for (int v = 0; v < NV; ++v) Lv::store(row(y_, b + l) + c0 + v * Lv::size, acc[l][v]);
    }
  }

  // y_l[I] += Σ_{j past block I} U_I,j q_l,j: the strictly upper blocks of row block I read as their transpose,
  // 16 rows × one vector of tokens in registers.
  template <index_t KpC>
  void read_transposed(const carried& s, index_t b, index_t n) {
    const index_t Kp = KpC ? KpC : Kp_;
    const R* U = s.state.data();
    for (index_t r0 = 0; r0 + SQ < Kp; r0 += SQ) {
      vec acc[SQ][NV];
      for (index_t i = 0; i < SQ; ++i)
        for (int v = 0; v < NV; ++v) acc[i][v] = Lv::splat(R(0));
      const R* Ur = U + r0 * Kp;
      for (index_t j = r0 + SQ; j < Kp; ++j) {
        vec qj[NV];
        for (int v = 0; v < NV; ++v) qj[v] = Lv::load(qT_.data() + j * SUB + v * Lv::size);
        for (index_t i = 0; i < SQ; ++i) {
          const vec uij = Lv::splat(Ur[i * Kp + j]);
          for (int v = 0; v < NV; ++v) acc[i][v] = Lv::fma(uij, qj[v], acc[i][v]);
        }
      }
      alignas(64) R tok[SUB];
      for (index_t i = 0; i < SQ; ++i) {
        for (int v = 0; v < NV; ++v) Lv::store(tok + v * Lv::size, acc[i][v]);
        for (index_t l = 0; l < n; ++l) y_[(b + l) * Kp + r0 + i] += tok[l];
      }
    }
  }

  // A non-symmetric C0's antisymmetric part: y_l += Σ_i q_l,i A_i,·, token by token.
  void read_asym(const carried& s, index_t b, index_t e) {
    for (index_t l = b; l < e; ++l) {
      R* y = row(y_, l);
      for (index_t i = 0; i < K_; ++i) {
        const vec qi = Lv::splat(q_[l * Kp_ + i]);
        for (index_t j = 0; j < Kp_; j += Lv::size)
          Lv::store(y + j, Lv::fma(qi, Lv::load(s.asym.data() + i * Kp_ + j), Lv::load(y + j)));
      }
    }
  }

  // C̃ += Σ_s k_s kg_sᵀ on the upper blocks (the diagonal blocks whole: k kgᵀ is symmetric), one block's
  // 16 rows × one column block in registers over the sub-block's tokens.
  template <index_t KpC>
  void update(carried& s, index_t b, index_t e) {
    const index_t Kp = KpC ? KpC : Kp_;
    R* U = s.state.data();
    for (index_t r0 = 0; r0 < Kp; r0 += SQ)
      for (index_t c0 = r0; c0 < Kp; c0 += SQ) {
        vec acc[SQ][NV];
        R* Ub = U + r0 * Kp + c0;
        for (index_t i = 0; i < SQ; ++i)
          for (int v = 0; v < NV; ++v) acc[i][v] = Lv::load(Ub + i * Kp + v * Lv::size);
        for (index_t t = b; t < e; ++t) {
          vec g[NV];
          for (int v = 0; v < NV; ++v) g[v] = Lv::load(kg_.data() + t * Kp + c0 + v * Lv::size);
          const R* k = k_.data() + t * Kp + r0;
          for (index_t i = 0; i < SQ; ++i) {
            const vec ki = Lv::splat(k[i]);
            for (int v = 0; v < NV; ++v) acc[i][v] = Lv::fma(ki, g[v], acc[i][v]);
          }
        }
        for (index_t i = 0; i < SQ; ++i)
          for (int v = 0; v < NV; ++v) Lv::store(Ub + i * Kp + v * Lv::size, acc[i][v]);
      }
  }

  std::vector<R> buffer() const { return std::vector<R>(static_cast<std::size_t>((Block + SUB) * Kp_), R(0)); }
  R* row(std::vector<R>& b, index_t l) { return b.data() + l * Kp_; }
  static R sum(const vec& x) {
    alignas(64) R buf[Lv::size];
    Lv::store(buf, x);
    R acc = 0;
    for (int i = 0; i < Lv::size; ++i) acc += buf[i];
    return acc;
  }

  index_t K_, Kp_;
  std::vector<R> kg_, k_, q_, y_, m_, qt_, qT_, dT_, z_, mq_, lambda_, gamma_, f_;
  std::vector<unsigned char> renorm_;
};

}  // namespace linea::cpu_backend
LINEA_SIMD_WARNINGS_END
