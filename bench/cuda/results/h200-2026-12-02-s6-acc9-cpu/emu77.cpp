// scratch (acc9): fuzz seed 20261206 case 77 (kda, CCQ decayed, T = 1, no h0, no dL/dS_T): the per-key grad kernel's
// diagonal dP term in dG, q̃_d (N k_d) − k_d (N q̃_d), emulated in float32, against the float64 reference's dgk
#include "fz_host.hpp"
using namespace linea;
using namespace linea::cuda_fuzz;
int main(int argc, char** argv) {
  const long seed = std::strtol(argv[1], nullptr, 10), idx = std::strtol(argv[2], nullptr, 10);
  const plan p = make_plan(seed, idx);
  std::printf("%s\n", p.describe().c_str());
  using Rule = kda;
  using Read = read::ccq<read::decayed>;
  fuzz_inputs<Rule, float> in(p);
  auto& c = in.c;
  rng_t rng(p.shape.seed * 13ull + 5);
  std::normal_distribution<double> normal(0.0, 1.0);
  tensor<float, 4> d_o(c.o.extents());
  tensor<float, 4> dht(p.ht ? c.ht.extents() : std::array<index_t, 4>{});
  for (auto& x : d_o.values()) x = float(normal(rng));
  for (auto& x : dht.values()) x = float(normal(rng));
  tensor<double, 4> d_o64(d_o.extents());
  for (std::size_t i = 0; i < d_o.size(); ++i) d_o64.data()[i] = double(d_o.data()[i]);
  grad_buffers<double, double> want;
  auto ra = in.ref.args();
  in.apply(p, ra, in.sref, in.gamma_ref);
  auto gr = want.make(p, ra, contiguous<4>(static_cast<const double*>(d_o64.data()), d_o64.extents()), view<const double, 4>{}, c.N, c.shape);
  reference::backward<Rule, Read>(ra, gr);
  auto fa = in.ref.args();  // the forward, for q̃
  in.apply(p, fa, in.sref, in.gamma_ref);
  reference::recurrent<Rule, Read>(fa);
  const auto& sh = c.shape;
  const index_t HV = sh.HV, K = sh.K, V = sh.V, G = HV / sh.H;
  const double s = p.scale ? p.scale : 1.0 / std::sqrt(double(K));
  double nn = 0, rn = 0;
  for (index_t hv = 0; hv < HV; ++hv) {
    const index_t h = hv / G;
    float N = 0;  // s dO·u, u = β v (T = 1, S_0 = 0)
    for (index_t j = 0; j < V; ++j) N += float(d_o(0, 0, hv, j)) * (float(c.beta(0, 0, hv)) * float(c.v(0, 0, hv, j)));
    N *= float(s);
    for (index_t d = 0; d < K; ++d) {
      const float q = float(in.sref.q_tilde(0, 0, hv, d)), k = float(c.k(0, 0, h, d));
      const float noise = q * (N * k) - k * (N * q);
      nn += double(noise) * noise;
      rn += want.dgk(0, 0, hv, d) * want.dgk(0, 0, hv, d);
    }
  }
  std::printf("float32 diagonal term left in dG: %.3g; reference |dgk| %.3g; relative %.3g (SPEC 1e-4)\n", std::sqrt(nn),
              std::sqrt(rn), std::sqrt(nn / rn));
}
