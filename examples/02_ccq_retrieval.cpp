// 02_ccq_retrieval — what the CCQ read does, on a synthetic single-needle retrieval task (in the spirit of
// S-NIAH), with no training.
//
// The task. T keys are written into the memory of a linear-attention layer: a dense low-rank "bulk" (every
// bulk key lies near one r-dimensional subspace, as the keys of trained models crowd into a few directions)
// and, at a random position, one "needle" key, a random direction. Each key carries a random unit value. Then a
// question token reads with the query q = needle key + noise. Retrieval succeeds when the output is closer to
// the needle's value than to every other stored value (values have unit norm, so this is the largest dot
// product).
//
// Why it is hard for linear attention. The read o = Sᵀ q = Σ_j (k_jᵀ q) v_j adds up every stored value with
// weight k_jᵀ q. The needle key is a random direction, so it (and the noisy query) has a component inside the
// bulk subspace, and thousands of bulk keys answer that component: their values pile up as noise that grows
// like √T and buries the needle's value. Softmax attention exponentiates the scores and is barely affected.
//
// What CCQ does. It contracts the query along the directions where the stored keys vary most, before reading:
//     q̃ = (I − λ Σ) q,    Σ = the covariance of the keys written so far (read/ccq.hpp, docs/math/ccq.md)
// Here Σ is dominated by the bulk subspace, so CCQ removes the part of q that the bulk would answer and keeps the
// part that only the needle answers. The write is untouched: the same state S serves both reads.
//
// How it is computed. For each write rule and context length, one chunkwise call writes the T tokens (CCQ
// statistics on, λ = 0: they only accumulate C, m, z) and returns the final state and statistics. Then one decode
// step answers the question for every λ at once: each batch row reads the same stored state and statistics with
// its own λ (λ = 0 is exactly the identity read). The question token writes nothing (k = 0, v = 0, no decay),
// but it is counted in the statistics' normaliser z (T + 1 instead of T: negligible).
//
// λ beyond 1: with unit keys Σ has trace ≤ 1, so λ ∈ [0, 1] is always a contraction (SPEC §3). A bulk of rank r
// puts Σ's top eigenvalues near 1/r, so the map stays a contraction up to λ ≈ r; the sweep goes that far.
//
// Run:  scripts/demo.sh   (or build target 02_ccq_retrieval and run it from the repository root; it writes
//       docs/ccq_retrieval.csv, which scripts/plot_retrieval.gp turns into docs/ccq_retrieval.png)
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <linea/linea.hpp>
#include <linea/forms/chunkwise.hpp>
#include <linea/reference/softmax.hpp>
#include <linea/tensor.hpp>

namespace {

using linea::index_t;

// ---- the task ------------------------------------------------------------------------------------------
constexpr index_t K = 64, V = 64;      // key and value width
constexpr index_t bulk_rank = 4;       // the bulk keys lie near a 4-dimensional subspace
constexpr double bulk_noise = 0.15;    // plus isotropic noise (norm ≈ 0.15 before normalising)
constexpr double query_noise = 0.15;   // query = needle + noise (norm ≈ 0.15), normalised
constexpr index_t trials = 32;         // needles per context length (the batch of one call)
const std::vector<index_t> lengths = {256, 512, 1024, 2048, 4096, 8192, 16384};
const std::vector<double> lambdas = {0.0, 0.5, 1.0, 2.0, 4.0};  // λ = 0 is the identity read

// ---- the layers: gates held constant, so every rule sees the same keys ------------------------------------
constexpr double log_decay = -1.0 / 16384;  // gated rules: α = exp(−1/16384) per token (memory ~ the longest context)
constexpr double beta = 0.5;                // delta rules: write strength

struct batch {  // `trials` sequences of T tokens (B = trials), and the question of each
  index_t T;
  linea::tensor<float, 4> k, v;            // [B, T, 1, K], [B, T, 1, V]
  linea::tensor<float, 4> question;        // [B, 1, 1, K]
  std::vector<index_t> needle;             // position of the needle in each sequence
};

void normalise(float* x, index_t n) {
  double ss = 0;
  for (index_t i = 0; i < n; ++i) ss += double(x[i]) * x[i];
  for (index_t i = 0; i < n; ++i) x[i] = float(x[i] / std::sqrt(ss));
}

batch make_batch(index_t T, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_int_distribution<index_t> position(0, T - 1);
  batch b{T, linea::tensor<float, 4>({trials, T, 1, K}), linea::tensor<float, 4>({trials, T, 1, V}),
          linea::tensor<float, 4>({trials, 1, 1, K}), {}};
  for (index_t n = 0; n < trials; ++n) {
    // The bulk subspace of this sequence: bulk_rank orthonormal directions (Gram–Schmidt on Gaussians).
    std::vector<std::vector<double>> U(bulk_rank, std::vector<double>(K));
    for (index_t r = 0; r < bulk_rank; ++r) {
      for (auto& x : U[r]) x = normal(rng);
      for (index_t s = 0; s < r; ++s) {
        double d = 0;
        for (index_t i = 0; i < K; ++i) d += U[r][i] * U[s][i];
        for (index_t i = 0; i < K; ++i) U[r][i] -= d * U[s][i];
      }
      double ss = 0;
      for (double x : U[r]) ss += x * x;
      for (auto& x : U[r]) x /= std::sqrt(ss);
    }
    const index_t p = position(rng);
    b.needle.push_back(p);
    for (index_t t = 0; t < T; ++t) {
      float* k = &b.k(n, t, 0, 0);
      if (t == p) {  // the needle: a random direction
        for (index_t i = 0; i < K; ++i) k[i] = float(normal(rng));
      } else {       // bulk: U a + noise, a ~ N(0, I/r)
        std::vector<double> a(bulk_rank);
        for (auto& x : a) x = normal(rng) / std::sqrt(double(bulk_rank));
        for (index_t i = 0; i < K; ++i) {
          double x = bulk_noise * normal(rng) / std::sqrt(double(K));
          for (index_t r = 0; r < bulk_rank; ++r) x += U[r][i] * a[r];
          k[i] = float(x);
        }
      }
      normalise(k, K);
      float* v = &b.v(n, t, 0, 0);
      for (index_t j = 0; j < V; ++j) v[j] = float(normal(rng));
      normalise(v, V);
    }
    float* q = &b.question(n, 0, 0, 0);
    for (index_t i = 0; i < K; ++i) q[i] = b.k(n, p, 0, i) + float(query_noise * normal(rng) / std::sqrt(double(K)));
    normalise(q, K);
  }
  return b;
}

// Success: the output is nearer to the needle's value than to every other stored value of its sequence.
bool retrieved(const batch& b, index_t n, const float* o) {
  auto dist2 = [&](index_t t) {
    double d = 0;
    for (index_t j = 0; j < V; ++j) {
      const double e = double(o[j]) - b.v(n, t, 0, j);
      d += e * e;
    }
    return d;
  };
  const double to_needle = dist2(b.needle[n]);
  for (index_t t = 0; t < b.T; ++t)
    if (t != b.needle[n] && dist2(t) <= to_needle) return false;
  return true;
}

// Writes the batch with rule `Rule`, then reads every question with every λ; returns successes per λ.
template <class Rule, class Weighting>
std::vector<int> run_rule(const batch& b) {
  using Read = linea::read::ccq<Weighting>;
  const index_t T = b.T, B = trials;

  // 1. Write: one chunkwise call over the T tokens (queries are not needed: q = k, outputs discarded).
  linea::tensor<float, 3> g({B, T, 1}, float(log_decay)), betas({B, T, 1}, float(beta)), zero_lambda({B, T, 1});
  linea::tensor<float, 4> gk({B, T, 1, K}, float(log_decay)), o({B, T, 1, V});
  linea::tensor<float, 4> S({B, 1, K, V}), C({B, 1, K, K});
  linea::tensor<float, 3> m({B, 1, K});
  linea::tensor<float, 2> z({B, 1});
  linea::arguments<float> w{.q = b.k, .k = b.k, .v = b.v, .o = o, .final_state = S};
  if constexpr (linea::reads(Rule::inputs, linea::input::g)) w.g = g;
  if constexpr (linea::reads(Rule::inputs, linea::input::gk)) w.gk = gk;
  if constexpr (linea::reads(Rule::inputs, linea::input::beta)) w.beta = betas;
  w.ccq = {.lambda = zero_lambda, .C = C, .m = m, .z = z};
  linea::chunkwise<Rule, Read>(w);

  // 2. Read: one decode step, row (n, l) = question n with λ_l, reading state and statistics n (not written back).
  const index_t L = static_cast<index_t>(lambdas.size()), R = B * L;
  linea::tensor<float, 4> q({R, 1, 1, K}), k0({R, 1, 1, K}), v0({R, 1, 1, V}), gk0({R, 1, 1, K}), out({R, 1, 1, V});
  linea::tensor<float, 3> g0({R, 1, 1}), beta0({R, 1, 1}, float(beta)), lambda({R, 1, 1});
  std::vector<std::int32_t> rows(static_cast<std::size_t>(R));
  for (index_t n = 0; n < B; ++n)
    for (index_t l = 0; l < L; ++l) {
      const index_t r = n * L + l;
      rows[r] = static_cast<std::int32_t>(n);
      lambda(r, 0, 0) = float(lambdas[l]);
      for (index_t i = 0; i < K; ++i) q(r, 0, 0, i) = b.question(n, 0, 0, i);
    }
  linea::arguments<float> a{.q = q, .k = k0, .v = v0, .initial_state = S, .o = out, .state_indices = rows};
  if constexpr (linea::reads(Rule::inputs, linea::input::g)) a.g = g0;
  if constexpr (linea::reads(Rule::inputs, linea::input::gk)) a.gk = gk0;
  if constexpr (linea::reads(Rule::inputs, linea::input::beta)) a.beta = beta0;
  a.ccq = {.lambda = lambda, .C0 = C, .m0 = m, .z0 = z};
  linea::step<Rule, Read>(a);

  std::vector<int> wins(static_cast<std::size_t>(L), 0);
  for (index_t n = 0; n < B; ++n)
    for (index_t l = 0; l < L; ++l) wins[l] += retrieved(b, n, &out(n * L + l, 0, 0, 0));
  return wins;
}

// Softmax attention over the same keys and values: the reference point. Logits √K · qᵀk on these unit vectors,
// which is the usual qᵀk / √K for queries and keys of norm √K (logits within [−8, 8] at K = 64).
int run_softmax(const batch& b) {
  int wins = 0;
  for (index_t n = 0; n < trials; ++n) {
    const auto keys = linea::strided<2>(&b.k(n, 0, 0, 0), {b.T, K}, {K, 1});
    const auto values = linea::strided<2>(&b.v(n, 0, 0, 0), {b.T, V}, {V, 1});
    const auto o = linea::reference::softmax_read(&b.question(n, 0, 0, 0), keys, values, std::sqrt(double(K)));
    std::vector<float> of(o.begin(), o.end());
    wins += retrieved(b, n, of.data());
  }
  return wins;
}

struct row {
  std::string rule, read;
  double lambda;
  index_t T;
  int wins;
};

}  // namespace

int main(int argc, char** argv) {
  const std::string csv_path = argc > 1 ? argv[1] : "docs/ccq_retrieval.csv";
  const auto start = std::chrono::steady_clock::now();
  std::vector<row> rows;
  for (index_t T : lengths) {
    const batch b = make_batch(T, static_cast<std::uint32_t>(1000 + T));
    auto add = [&](const char* rule, const std::vector<int>& wins) {
      for (std::size_t l = 0; l < lambdas.size(); ++l)
        rows.push_back({rule, lambdas[l] == 0 ? "identity" : "ccq", lambdas[l], T, wins[l]});
    };
    add("additive", run_rule<linea::additive, linea::read::uniform>(b));
    add("gla", run_rule<linea::gla, linea::read::decayed>(b));
    add("delta", run_rule<linea::delta, linea::read::uniform>(b));
    add("gated_delta", run_rule<linea::gated_delta, linea::read::decayed>(b));
    rows.push_back({"softmax", "softmax", 0, T, run_softmax(b)});
    std::fprintf(stderr, "T = %5lld done (%.1f s)\n", static_cast<long long>(T),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }

  // The table: success rate (of `trials` needles) per rule and read, one column per context length.
  std::printf("Single-needle retrieval, K = %lld, bulk rank %lld, %lld needles per length: success rate\n",
              static_cast<long long>(K), static_cast<long long>(bulk_rank), static_cast<long long>(trials));
  std::printf("%-12s %-12s", "rule", "read");
  for (index_t T : lengths) std::printf(" %7lld", static_cast<long long>(T));
  std::printf("\n");
  auto print_line = [&](const std::string& rule, const std::string& label, double lambda) {
    std::printf("%-12s %-12s", rule.c_str(), label.c_str());
    for (index_t T : lengths)
      for (const row& r : rows)
        if (r.rule == rule && r.T == T && r.lambda == lambda) std::printf(" %7.2f", double(r.wins) / trials);
    std::printf("\n");
  };
  for (const char* rule : {"additive", "gla", "delta", "gated_delta"})
    for (double lambda : lambdas) {
      char label[32];
      std::snprintf(label, sizeof label, lambda == 0 ? "identity" : "ccq l=%.1f", lambda);
      print_line(rule, label, lambda);
    }
  print_line("softmax", "softmax", 0);

  std::FILE* f = std::fopen(csv_path.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "cannot write %s (run from the repository root, or pass a path)\n", csv_path.c_str());
    return 1;
  }
  std::fprintf(f, "rule,read,lambda,T,trials,successes,rate\n");
  for (const row& r : rows)
    std::fprintf(f, "%s,%s,%g,%lld,%lld,%d,%g\n", r.rule.c_str(), r.read.c_str(), r.lambda,
                 static_cast<long long>(r.T), static_cast<long long>(trials), r.wins, double(r.wins) / trials);
  std::fclose(f);
  std::fprintf(stderr, "wrote %s in %.1f s\n", csv_path.c_str(),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return 0;
}
