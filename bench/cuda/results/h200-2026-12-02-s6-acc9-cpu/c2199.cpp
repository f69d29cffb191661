// scratch (acc9): fuzz case -> float64 reference vs CPU backend (same inputs); conditioning of the summed gate grads
#include "fz_host.hpp"
using namespace linea;
using namespace linea::cuda_fuzz;

template <class X, int R>
double rel(const tensor<X, R>& got, const tensor<double, R>& want) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double x = double(got.data()[i]), r = want.data()[i];
    num += (x - r) * (x - r), den += r * r;
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

template <class Rule, class T>
void run(const plan& p) {
  fuzz_inputs<Rule, T> in(p);
  auto& c = in.c;
  rng_t rng(p.shape.seed * 13ull + 5);
  std::normal_distribution<double> normal(0.0, 1.0);
  tensor<T, 4> d_o(c.o.extents());
  tensor<float, 4> dht(p.ht ? c.ht.extents() : std::array<index_t, 4>{});
  for (auto& x : d_o.values()) x = T(normal(rng));
  for (auto& x : dht.values()) x = float(normal(rng));
  tensor<double, 4> d_o64(d_o.extents()), dht64(dht.extents());
  for (std::size_t i = 0; i < d_o.size(); ++i) d_o64.data()[i] = double(d_o.data()[i]);
  for (std::size_t i = 0; i < dht.size(); ++i) dht64.data()[i] = double(dht.data()[i]);
  const auto dht_view = p.ht ? contiguous<4>(static_cast<const float*>(dht.data()), dht.extents()) : view<const float, 4>{};
  const auto dht64_view = p.ht ? contiguous<4>(static_cast<const double*>(dht64.data()), dht64.extents()) : view<const double, 4>{};
  grad_buffers<double, double> want;
  auto ra = in.ref.args();
  in.apply(p, ra, in.sref, in.gamma_ref);
  auto gr = want.make(p, ra, contiguous<4>(static_cast<const double*>(d_o64.data()), d_o64.extents()), dht64_view, c.N, c.shape);
  reference::backward<Rule, read::identity>(ra, gr);
  auto ha = c.args();
  in.apply(p, ha, in.s, in.gamma);
  ha.final_state = {}, ha.residual = {};
  grad_buffers<T, float> got;
  auto hg = got.make(p, ha, contiguous<4>(static_cast<const T*>(d_o.data()), d_o.extents()), dht_view, c.N, c.shape);
  linea::backward<Rule, read::identity, backend::cpu>(ha, hg);
  std::printf("case %ld %s\n", p.index, p.describe().c_str());
  got.for_each(want, [&](const char* name, const auto& t, const auto& w) {
    if (!(t.size() || w.size())) return;
    std::printf("  cpu %-16s rel %.3g\n", name, rel(t, w));
  });
  // conditioning of dt_bias's sum: terms = d(logit)_t (want.dg), per value head
  const auto& dg = want.dg;
  const index_t B = c.shape.B, T_ = c.shape.T, HV = c.shape.HV;
  if (dg.size()) {
    for (index_t hv = 0; hv < HV; ++hv) {
      double s = 0, a = 0;
      for (index_t b = 0; b < B; ++b) for (index_t t = 0; t < T_; ++t) { const double x = dg(b, t, hv); s += x; a += std::abs(x); }
      std::printf("  hv %ld: sum dg = %.6g, sum |dg| = %.6g, conditioning %.3g; ddt_bias want %.6g cpu %.6g\n", long(hv), s, a,
                  a / std::abs(s), want.ddt_bias.size() ? want.ddt_bias.data()[hv] : 0.0,
                  got.ddt_bias.size() ? double(got.ddt_bias.data()[hv]) : 0.0);
    }
    // the exact per-token terms rounded to float32, then added in float32 in token order (what float32 atomics do,
    // in some order) and in float64
    {
      float s32 = 0;
      double s64 = 0;
      for (std::size_t i = 0; i < dg.size(); ++i) s32 += float(dg.data()[i]), s64 += double(float(dg.data()[i]));
      const double w = want.ddt_bias.data()[0];
      std::printf("  exact terms as float32: summed in float32 rel %.3g, in float64 rel %.3g\n", std::abs(s32 - w) / std::abs(w),
                  std::abs(s64 - w) / std::abs(w));
    }
    // per-token dg error of the CPU (bf16 output) and the error the sum would see from it
    double se = 0;
    for (std::size_t i = 0; i < dg.size(); ++i) se += double(got.dg.data()[i]) - dg.data()[i];
    std::printf("  sum of per-token CPU dg errors (bf16-stored): %.4g\n", se);
  }
}

int main(int argc, char** argv) {
  const long seed = std::strtol(argv[1], nullptr, 10);
  for (int i = 2; i < argc; ++i) {
    const plan p = make_plan(seed, std::strtol(argv[i], nullptr, 10));
    int r = 0;
    all_rules::for_each([&]<class Rule>() {
      if (r++ != p.rule) return;
      if (p.read != read_kind::identity) return;
      if (p.type == dtype::bf16) run<Rule, bf16>(p);
      else if (p.type == dtype::f32) run<Rule, float>(p);
    });
  }
}
