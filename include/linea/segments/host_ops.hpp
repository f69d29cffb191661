// linea/segments/host_ops.hpp — the operations of the segmented forward and of context parallelism on the host
// (backend::cpu, backend::generic): scratch buffers, the chunkwise form, and the three state operations — fill with
// I, copy rows, combine chains (plan.hpp). backend/cuda/segments.hpp has the same operations on the device.
#pragma once
#include <memory>
#include <span>
#include <vector>

#include "../forms/chunkwise.hpp"
#include "plan.hpp"

namespace linea::segments {

// The sizes of a state row [HV, K, V] and of its transition [HV, K, KM]: KM = K (erasing rules), 1 (a decay: the
// diagonal of M), 0 (the additive rule: M = I, nothing stored).
struct state_dims {
  index_t HV = 0, K = 0, V = 0, KM = 0;
  LINEA_HD index_t state() const { return HV * K * V; }
  LINEA_HD index_t transition() const { return HV * K * KM; }
};

// Whether a rule's transition is a diagonal: a decay (scalar or per key) and no erase — M = Diag(Π_t α_t), KM = 1.
template <class Rule>
inline constexpr bool diagonal_transition = !erases<Rule> && Rule::decay::kind != decay_kind::none;

// The columns of a rule's transition (state_dims::KM).
template <class Rule>
index_t transition_columns(index_t K) {
  if constexpr (erases<Rule>) return K;
  else if constexpr (diagonal_transition<Rule>) return 1;
  else return 0;
}

// S ← M S + B for one state row (all value heads): M is [HV, K, KM] as state_dims says.
template <class S>
void apply_link(S* state, const S* M, const S* B, const state_dims& d, std::vector<S>& tmp) {
  tmp.assign(static_cast<std::size_t>(d.K * d.V), S(0));
  for (index_t h = 0; h < d.HV; ++h) {
    S* x = state + h * d.K * d.V;
    const S* b = B ? B + h * d.K * d.V : nullptr;  // no B: the product of transitions alone
    if (d.KM == d.K) {
      const S* m = M + h * d.K * d.K;
      for (index_t i = 0; i < d.K; ++i) {
        S* t = tmp.data() + i * d.V;
        for (index_t j = 0; j < d.V; ++j) t[j] = b ? b[i * d.V + j] : S(0);
        for (index_t l = 0; l < d.K; ++l) {
          const S mil = m[i * d.K + l];
          for (index_t j = 0; j < d.V; ++j) t[j] += mil * x[l * d.V + j];
        }
      }
      std::copy(tmp.begin(), tmp.end(), x);
    } else {
      for (index_t i = 0; i < d.K; ++i) {
        const S a = d.KM == 1 ? M[h * d.K + i] : S(1);
        for (index_t j = 0; j < d.V; ++j) x[i * d.V + j] = a * x[i * d.V + j] + (b ? b[i * d.V + j] : S(0));
      }
    }
  }
}

template <class S>
void combine_chains(const S* from, S* to, const S* M, const S* B, const state_dims& d, std::span<const chain> chains) {
  std::vector<S> state(static_cast<std::size_t>(d.state())), tmp;
  for (const chain& c : chains) {
    if (c.start >= 0) std::copy(from + c.start * d.state(), from + (c.start + 1) * d.state(), state.begin());
    else std::fill(state.begin(), state.end(), S(0));
    for (index_t j = 0; j < c.links; ++j) {
      const index_t row = c.link + j * c.link_step;
      apply_link(state.data(), M ? M + row * d.transition() : nullptr, B ? B + row * d.state() : nullptr, d, tmp);
      if (c.every_prefix) std::copy(state.begin(), state.end(), to + (c.out + j * c.out_step) * d.state());
    }
    if (!c.every_prefix) std::copy(state.begin(), state.end(), to + c.out * d.state());
  }
}

// The host backends' operations. Scratch lives as long as this object; alloc's is uninitialised on the device
// (zeros() is zero everywhere).
template <class Backend>
class host_ops {
 public:
  explicit host_ops(int threads = 1, index_t piece = 0) : threads_(threads), piece_(piece) {}

  // Pass M of a diagonal transition takes the general path here (the rule with v = 0 from S_0 = 1, forward.hpp's
  // transition_pass): the host chunkwise form with V = 1 costs little next to pass A, and it keeps one path to test
  // the CUDA backend's decay sums (backend/cuda/decay_product_kernel.hpp) against.
  static constexpr bool sums_log_decays = false;
  // Pass A runs the host chunkwise form from zero (the CUDA backend reduces the pieces' states instead: forward.hpp's
  // piece_states).
  static constexpr bool reduces_piece_states = false;

  // The piece length a context-parallel rank cuts its shard into (0: not cut).
  template <class Rule, class T, class S>
  index_t piece_for(const arguments<T, S>&, const std::vector<std::int64_t>&, const problem&) const {
    return piece_;
  }

  template <class X>
  X* alloc(std::size_t n) {
    auto buf = std::make_unique<X[]>(n ? n : 1);  // value-initialised: zeros
    X* p = buf.get();
    buffers_.push_back(std::shared_ptr<void>(buf.release(), [](void* q) { delete[] static_cast<X*>(q); }));
    return p;
  }
  template <class X>
  X* zeros(std::size_t n) {
    return alloc<X>(n);
  }

  // The chunkwise form over `a`, with `cu` as its cu_seqlens when given. (states_only is a hint the host form does
  // not take: it writes o.)
  static constexpr bool states_only_passes = false;
  template <class Rule, class T, class S>
  void forward(arguments<T, S> a, std::span<const std::int64_t> cu, bool /*states_only*/ = false) {
    if (!cu.empty()) a.cu_seqlens = cu;
    a.threads = threads_;
    linea::chunkwise<Rule, read::identity, Backend>(a);
  }

  // dst(n, h, i, j) = 1 where i = j, or everywhere when dst has one column; else 0.
  template <class S>
  void fill_identity(const view<S, 4>& dst) {
    for (index_t n = 0; n < dst.ext[0]; ++n)
      for (index_t h = 0; h < dst.ext[1]; ++h)
        for (index_t i = 0; i < dst.ext[2]; ++i)
          for (index_t j = 0; j < dst.ext[3]; ++j) dst(n, h, i, j) = (i == j || dst.ext[3] == 1) ? S(1) : S(0);
  }

  // Row r of dst ← row map[r] of src (zero where map[r] < 0 or src is empty).
  template <class S>
  void copy_states(const view<S, 4>& dst, const view<const S, 4>& src, std::span<const std::int32_t> map) {
    for (index_t r = 0; r < dst.ext[0]; ++r)
      for (index_t h = 0; h < dst.ext[1]; ++h)
        for (index_t i = 0; i < dst.ext[2]; ++i)
          for (index_t j = 0; j < dst.ext[3]; ++j)
            dst(r, h, i, j) = (map[r] >= 0 && !src.empty()) ? src(map[r], h, i, j) : S(0);
  }

  template <class S>
  void combine(const S* from, S* to, const S* M, const S* B, const state_dims& d, std::span<const chain> chains) {
    combine_chains(from, to, M, B, d, chains);
  }

 private:
  int threads_;
  index_t piece_;
  std::vector<std::shared_ptr<void>> buffers_;
};

}  // namespace linea::segments
