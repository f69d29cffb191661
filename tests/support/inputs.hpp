// tests/support/inputs.hpp — input recipes: random cases for any rule, drawn as SPEC.md §5 says.
//
//   auto c = random_case<linea::kda, float>::make({.B = 2, .T = 65, .H = 2, .HV = 4, .K = 32, .V = 16});
//   auto ref = c.cast<double>();           // the same values in float64, for the reference
//   linea::recurrent<linea::kda>(c.args());
//   linea::reference::recurrent<linea::kda>(ref.args());
//   relative_error(c.o, ref.o) <= tolerance_for<float>()
#pragma once
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <linea/linea.hpp>
#include <linea/tensor.hpp>

namespace linea::testing {

enum class gate_range { normal, extreme };  // logsigmoid(N(0,1)), or uniform in [−20, 0]

struct case_shape {
  index_t B = 1, T = 64, H = 2, HV = 2, K = 32, V = 16;
  std::vector<std::int64_t> seqlens;  // when given: packed sequences (B = 1, T = Σ seqlens)
  bool initial_state = false;
  bool head_first = false;  // store q, k, v, gates in [B, H, T, D] memory and pass strided views
  gate_range gates = gate_range::normal;
  double beta_max = 1;      // β = beta_max · σ(N(0,1)); 2 allows negative eigenvalues
  std::uint32_t seed = 1234;
};

// A view in logical order (b, t, h, d) over a tensor stored as [B, T, H, D] or head-first [B, H, T, D].
template <class T>
view<T, 4> logical4(tensor<std::remove_const_t<T>, 4>& x, bool head_first) {
  if (!head_first) return x.view_of();
  const index_t B = x.extent(0), H = x.extent(1), T_ = x.extent(2), D = x.extent(3);
  return strided<4>(static_cast<T*>(x.data()), {B, T_, H, D}, {H * T_ * D, D, T_ * D, 1});
}
template <class T>
view<T, 3> logical3(tensor<std::remove_const_t<T>, 3>& x, bool head_first) {
  if (!head_first) return x.view_of();
  const index_t B = x.extent(0), H = x.extent(1), T_ = x.extent(2);
  return strided<3>(static_cast<T*>(x.data()), {B, T_, H}, {H * T_, 1, T_});
}

// Whether a tensor was made at all (a T = 0 tensor has no elements but is still an input).
template <class X, int Rank>
bool allocated(const tensor<X, Rank>& x) {
  for (index_t e : x.extents())
    if (e != 0) return true;
  return false;
}

template <class Rule, class T, class S = accumulate_t<T>>
struct random_case {

  case_shape shape;
  std::vector<std::int64_t> cu_seqlens;
  index_t N = 0;
  tensor<T, 4> q, k, v, gk, b, w, o, residual;
  tensor<T, 3> g, beta;
  tensor<S, 4> h0, ht;

  // Extents in storage order: [B, T, H, D], or [B, H, T, D] head-first.
  static std::array<index_t, 4> ext4(const case_shape& s, index_t heads, index_t d) {
    return s.head_first ? std::array<index_t, 4>{s.B, heads, s.T, d} : std::array<index_t, 4>{s.B, s.T, heads, d};
  }
  static std::array<index_t, 3> ext3(const case_shape& s, index_t heads) {
    return s.head_first ? std::array<index_t, 3>{s.B, heads, s.T} : std::array<index_t, 3>{s.B, s.T, heads};
  }

  static random_case make(case_shape s) {
    random_case c;
    if (!s.seqlens.empty()) {
      s.B = 1;
      c.cu_seqlens = {0};
      for (auto L : s.seqlens) c.cu_seqlens.push_back(c.cu_seqlens.back() + L);
      s.T = c.cu_seqlens.back();
    }
    c.shape = s;
    c.N = s.seqlens.empty() ? s.B : static_cast<index_t>(s.seqlens.size());
    std::mt19937 rng(s.seed);
    std::normal_distribution<double> normal(0.0, 1.0);
    std::uniform_real_distribution<double> uniform(-20.0, 0.0);
    auto sig = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
    auto log_decay = [&] { return s.gates == gate_range::extreme ? uniform(rng) : std::log(sig(normal(rng))); };

    c.q = tensor<T, 4>(ext4(s, s.H, s.K));
    c.k = tensor<T, 4>(ext4(s, s.H, s.K));
    c.v = tensor<T, 4>(ext4(s, s.HV, s.V));
    for (auto& x : c.q.values()) x = T(normal(rng));
    for (auto& x : c.v.values()) x = T(normal(rng));
    // Keys: unit L2 rows (rows are contiguous in both storage orders).
    for (std::size_t r = 0; r < c.k.size(); r += static_cast<std::size_t>(s.K)) {
      std::vector<double> row(static_cast<std::size_t>(s.K));
      double ss = 0;
      for (auto& x : row) {
        x = normal(rng);
        ss += x * x;
      }
      for (index_t i = 0; i < s.K; ++i) c.k.data()[r + i] = T(row[i] / std::sqrt(ss));
    }
    if constexpr (linea::reads(Rule::inputs, linea::input::g)) {
      c.g = tensor<T, 3>(ext3(s, s.HV));
      for (auto& x : c.g.values()) x = T(log_decay());
    }
    if constexpr (linea::reads(Rule::inputs, linea::input::gk)) {
      c.gk = tensor<T, 4>(ext4(s, s.HV, s.K));
      for (auto& x : c.gk.values()) x = T(log_decay());
    }
    if constexpr (linea::reads(Rule::inputs, linea::input::beta)) {
      c.beta = tensor<T, 3>(ext3(s, s.HV));
      for (auto& x : c.beta.values()) x = T(s.beta_max * sig(normal(rng)));
    }
    if constexpr (linea::reads(Rule::inputs, linea::input::b | linea::input::w)) {
      c.b = tensor<T, 4>(ext4(s, s.HV, s.K));
      c.w = tensor<T, 4>(ext4(s, s.HV, s.V));
      for (auto& x : c.b.values()) x = T(s.beta_max * sig(normal(rng)));
      for (auto& x : c.w.values()) x = T(sig(normal(rng)));
    }
    if (s.initial_state) {
      c.h0 = tensor<S, 4>({c.N, s.HV, s.K, s.V});
      for (auto& x : c.h0.values()) x = S(normal(rng));
    }
    c.o = tensor<T, 4>({s.B, s.T, s.HV, s.V});
    c.residual = tensor<T, 4>({s.B, s.T, s.HV, s.V});
    c.ht = tensor<S, 4>({c.N, s.HV, s.K, s.V});
    return c;
  }

  // The arguments over this case's tensors: every input, o, final state and residual.
  arguments<T, S> args() {
    const bool hf = shape.head_first;
    arguments<T, S> a;
    a.q = logical4<const T>(q, hf);
    a.k = logical4<const T>(k, hf);
    a.v = logical4<const T>(v, hf);
    if (allocated(g)) a.g = logical3<const T>(g, hf);
    if (allocated(gk)) a.gk = logical4<const T>(gk, hf);
    if (allocated(beta)) a.beta = logical3<const T>(beta, hf);
    if (allocated(b)) a.b = logical4<const T>(b, hf);
    if (allocated(w)) a.w = logical4<const T>(w, hf);
    if (allocated(h0)) a.initial_state = h0;
    a.cu_seqlens = cu_seqlens;
    a.o = o;
    a.final_state = ht;
    a.residual = residual;
    return a;
  }

  // The same values in another type (float64 for the reference).
  template <class U, class SU = accumulate_t<U>>
  random_case<Rule, U, SU> cast() const {
    random_case<Rule, U, SU> c;
    c.shape = shape, c.cu_seqlens = cu_seqlens, c.N = N;
    auto conv = [](const auto& from, auto& to) {
      using To = std::remove_reference_t<decltype(to)>;
      if (!allocated(from)) return;
      to = To(from.extents());
      for (std::size_t i = 0; i < from.size(); ++i)
        to.data()[i] = static_cast<typename std::remove_reference_t<decltype(to.values())>::value_type>(
            static_cast<double>(from.data()[i]));
    };
    conv(q, c.q), conv(k, c.k), conv(v, c.v), conv(gk, c.gk), conv(b, c.b), conv(w, c.w);
    conv(o, c.o), conv(residual, c.residual), conv(g, c.g), conv(beta, c.beta), conv(h0, c.h0), conv(ht, c.ht);
    return c;
  }
};

// "B=2 T=65 H=2 HV=4 K=32 V=16 h0 head-first": how test messages name a case shape.
inline std::string describe_shape(const case_shape& s) {
  std::string d = "B=" + std::to_string(s.B) + " T=" + std::to_string(s.T) + " H=" + std::to_string(s.H) +
                  " HV=" + std::to_string(s.HV) + " K=" + std::to_string(s.K) + " V=" + std::to_string(s.V);
  if (!s.seqlens.empty()) {
    d += " seqlens={";
    for (auto L : s.seqlens) d += std::to_string(L) + ",";
    d.back() = '}';
  }
  if (s.initial_state) d += " h0";
  if (s.head_first) d += " head-first";
  if (s.gates == gate_range::extreme) d += " extreme-gates";
  if (s.beta_max != 1) d += " beta_max=" + std::to_string(s.beta_max);
  return d;
}

// `p` moved `bytes` bytes on: a pointer off its element's alignment, as numpy makes at a byte offset. The
// validation tests hand it to a call that must refuse it before reading or writing through it.
template <class X>
X* misaligned(X* p, std::uintptr_t bytes) {
  return reinterpret_cast<X*>(reinterpret_cast<std::uintptr_t>(p) + bytes);
}

}  // namespace linea::testing
