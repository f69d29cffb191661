// 01_quickstart — every write rule of linea, run on the same random input, checked against the float64
// reference.
//
// What it teaches, in the numbered steps below:
//   1. inputs are plain arrays; linea sees them through non-owning views in fla's layout [B, T, H, D];
//   2. one arguments struct, filled with designated initialisers, describes a call;
//   3. a rule is a template argument: linea::recurrent<linea::kda>(a) runs KDA in the recurrent form;
//   4. the float64 reference takes the very same arguments (in double) and is the truth;
//   5. the relative error ‖o − o_ref‖ / ‖o_ref‖ must stay within SPEC §5 (1e-5 for float32 inputs).
//
// Build and run:  scripts/demo.sh   (or: cmake --build build --target 01_quickstart && build/examples/01_quickstart)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

#include <linea/linea.hpp>
#include <linea/tensor.hpp>

namespace {

// The problem size: 2 sequences of 512 tokens, 2 key heads, 4 value heads (GVA: two value heads share
// one query/key head), key width 64, value width 32.
constexpr linea::index_t B = 2, T = 512, H = 2, HV = 4, K = 64, V = 32;

template <class X>
double norm(const X& x) {
  double s = 0;
  for (std::size_t i = 0; i < x.size(); ++i) s += double(x.data()[i]) * double(x.data()[i]);
  return std::sqrt(s);
}

// The inputs of one problem in one scalar type. Every rule reads q, k, v; the others only what it needs.
template <class F>
struct inputs {
  linea::tensor<F, 4> q{{B, T, H, K}}, k{{B, T, H, K}}, v{{B, T, HV, V}};
  linea::tensor<F, 3> g{{B, T, HV}}, beta{{B, T, HV}};     // scalar log decay, delta strength
  linea::tensor<F, 4> gk{{B, T, HV, K}};                   // per-key log decay
  linea::tensor<F, 4> b{{B, T, HV, K}}, w{{B, T, HV, V}};  // GDN-2 erase and write gates
  linea::tensor<F, 4> o{{B, T, HV, V}};                    // the output

  template <class U>
  void copy_from(const inputs<U>& x) {
    auto cp = [](const auto& from, auto& to) {
      for (std::size_t i = 0; i < from.size(); ++i) to.data()[i] = F(from.data()[i]);
    };
    cp(x.q, q), cp(x.k, k), cp(x.v, v), cp(x.g, g), cp(x.beta, beta), cp(x.gk, gk), cp(x.b, b), cp(x.w, w);
  }
};

// 1. Random inputs, drawn as SPEC §5 draws them: unit-norm keys, log decays logsigmoid(N(0,1)),
//    beta = sigmoid(N(0,1)). Stored as float32, as a model would hand them over.
inputs<float> random_inputs(unsigned seed) {
  inputs<float> x;
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  auto sigmoid = [](double z) { return 1.0 / (1.0 + std::exp(-z)); };
  for (auto& e : x.q.values()) e = float(normal(rng));
  for (auto& e : x.v.values()) e = float(normal(rng));
  for (std::size_t r = 0; r < x.k.size(); r += K) {  // each key row of length K gets unit L2 norm
    double ss = 0;
    for (linea::index_t i = 0; i < K; ++i) ss += (x.k.data()[r + i] = float(normal(rng))) * x.k.data()[r + i];
    for (linea::index_t i = 0; i < K; ++i) x.k.data()[r + i] = float(x.k.data()[r + i] / std::sqrt(ss));
  }
  for (auto& e : x.g.values()) e = float(std::log(sigmoid(normal(rng))));
  for (auto& e : x.gk.values()) e = float(std::log(sigmoid(normal(rng))));
  for (auto& e : x.beta.values()) e = float(sigmoid(normal(rng)));
  for (auto& e : x.b.values()) e = float(sigmoid(normal(rng)));
  for (auto& e : x.w.values()) e = float(sigmoid(normal(rng)));
  return x;
}

// 2. The arguments of one call. Designated initialisers name each input; a view left empty means "not
//    given". Each rule takes exactly the gates it uses (validate() throws a linea::error otherwise), so
//    the gates are added according to the rule's traits. The final state S_T [N, HV, K, V] is returned
//    into `ht` (states are float32 for float inputs, float64 for double inputs).
template <class Rule, class F, class S>
linea::arguments<F> arguments_for(inputs<F>& x, linea::tensor<S, 4>& ht) {
  linea::arguments<F> a{.q = x.q, .k = x.k, .v = x.v, .o = x.o, .final_state = ht};
  if constexpr (linea::reads(Rule::inputs, linea::input::g)) a.g = x.g;              // simple_gla, gated_delta
  if constexpr (linea::reads(Rule::inputs, linea::input::gk)) a.gk = x.gk;               // gla, kda, gdn2
  if constexpr (linea::reads(Rule::inputs, linea::input::beta)) a.beta = x.beta;         // delta, gated_delta, kda
  if constexpr (linea::reads(Rule::inputs, linea::input::b | linea::input::w)) a.b = x.b, a.w = x.w;  // gdn2
  return a;
}

// 3.–5. One rule: the recurrent form on float32, the reference on the same values in float64, compared.
template <class Rule>
bool run(const char* title, const inputs<float>& random) {
  inputs<float> x32 = random;
  inputs<double> x64;
  x64.copy_from(random);
  linea::tensor<float, 4> ht32({B, HV, K, V});
  linea::tensor<double, 4> ht64({B, HV, K, V});

  // 3. The recurrent form: token by token over every sequence and value head, on the CPU.
  //    (Timed as the best of three calls, so that the first call's cold caches do not count.)
  double ms = 1e300;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    linea::recurrent<Rule>(arguments_for<Rule>(x32, ht32));
    const auto t1 = std::chrono::steady_clock::now();
    ms = std::min(ms, std::chrono::duration<double, std::milli>(t1 - t0).count());
  }

  // 4. The float64 reference: the same call shape, every formula of SPEC §2 visible in its source
  //    (include/linea/reference/recurrence.hpp). Use it to check your own kernels the same way.
  linea::reference::recurrent<Rule>(arguments_for<Rule>(x64, ht64));

  // 5. Compare. SPEC §5 promises ≤ 1e-5 for float32 inputs up to T = 4096.
  // linea::relative_error: ‖x − ref‖₂ / ‖ref‖₂ over two views of one shape (core/relative_error.hpp).
  const double err_o = linea::relative_error(x32.o.view_of(), x64.o.view_of());
  const double err_s = linea::relative_error(ht32.view_of(), ht64.view_of());
  const bool ok = err_o <= 1e-5 && err_s <= 1e-5;
  std::printf("%-28s %-18s %5lld %10.4f %11.2e %11.2e %9.2f  %s\n", title, linea::rule_name<Rule>::value,
              static_cast<long long>(T), norm(x32.o), err_o, err_s, ms, ok ? "ok" : "OUT OF BOUND");
  return ok;
}

}  // namespace

int main() {
  const inputs<float> random = random_inputs(2024);
  std::printf("linea quickstart: B=%lld T=%lld H=%lld HV=%lld K=%lld V=%lld, float32 inputs, recurrent form (CPU)\n\n",
              static_cast<long long>(B), static_cast<long long>(T), static_cast<long long>(H),
              static_cast<long long>(HV), static_cast<long long>(K), static_cast<long long>(V));
  std::printf("%-28s %-18s %5s %10s %11s %11s %9s\n", "rule", "fla name", "T", "|o|", "rel.err o", "rel.err S_T",
              "time ms");
  // The seven write rules of SPEC §2: one decay (none / scalar / per key) × one update (additive / delta / GDN-2).
  bool ok = true;
  ok &= run<linea::additive>("additive (linear attention)", random);
  ok &= run<linea::simple_gla>("scalar-gated (RetNet/Mamba2)", random);
  ok &= run<linea::gla>("gated, per channel (GLA)", random);
  ok &= run<linea::delta>("delta (DeltaNet)", random);
  ok &= run<linea::gated_delta>("gated delta (Gated DeltaNet)", random);
  ok &= run<linea::kda>("KDA (Kimi Delta Attention)", random);
  ok &= run<linea::gdn2>("Gated DeltaNet-2", random);
  std::printf("\nrel.err: ||x - x_ref|| / ||x_ref|| against the float64 reference; SPEC §5 bound 1e-5 for float32.\n");
  return ok ? 0 : 1;
}
