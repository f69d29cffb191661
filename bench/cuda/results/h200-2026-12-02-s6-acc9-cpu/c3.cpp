// scratch (acc9): the fuzz harness's backward judgement (run_backward's compare part) with the CPU backend in
// place of CUDA: normalize dq at T = 1 / K = 1 judged against its terms' scale
#include "fz_host.hpp"
using namespace linea;
using namespace linea::cuda_fuzz;

template <class Rule, class T>
void run(const plan& p) {
  using Read = read::identity;
  verdict v;
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
  {
    auto ra = in.ref.args();
    in.apply(p, ra, in.sref, in.gamma_ref);
    auto gr = want.make(p, ra, contiguous<4>(static_cast<const double*>(d_o64.data()), d_o64.extents()), dht64_view, c.N, c.shape);
    reference::backward<Rule, Read>(ra, gr);
  }
  auto ha = c.args();
  in.apply(p, ha, in.s, in.gamma);
  ha.final_state = {}, ha.residual = {};
  grad_buffers<T, float> got;
  auto hg = got.make(p, ha, contiguous<4>(static_cast<const T*>(d_o.data()), d_o.extents()), dht_view, c.N, c.shape);
  linea::backward<Rule, Read, backend::cpu>(ha, hg);
  const double tol = testing::gradient_tolerance_for<T>();
  double dq_scale = -1;
  if (normalize_dq_vanishes(p, c.shape)) {
    auto ra = in.ref.args();
    in.apply(p, ra, in.sref, in.gamma_ref);
    reference::recurrent<Rule, Read>(ra);
    dq_scale = normalize_dq_term_scale(p, in.ref, d_o64);
  }
  double dqn = 0;
  for (auto x : want.dq.values()) dqn += x * x;
  std::printf("case %ld %s\n  vanishes %d, |dq_ref| %.3g, terms' scale %.3g\n", p.index, p.describe().c_str(),
              int(dq_scale >= 0), std::sqrt(dqn), dq_scale);
  got.for_each(want, [&](const char* name, const auto& t, const auto& w) {
    if (!(t.size() || w.size())) return;
    verdict one;
    if (dq_scale >= 0 && std::string(name) == "dq") compare_to_scale(one, name, t, w, dq_scale, tol);
    else compare(one, name, t, w, tol);
    std::printf("  %-16s err/tol %.3g %s\n", name, one.worst, one.failure.c_str());
  });
}

int main(int argc, char** argv) {
  const long seed = std::strtol(argv[1], nullptr, 10);
  for (int i = 2; i < argc; ++i) {
    const plan p = make_plan(seed, std::strtol(argv[i], nullptr, 10));
    if (p.rule != 0 || p.form != form_kind::backward) { std::printf("case %s: not an additive backward\n", argv[i]); continue; }
    if (p.type == dtype::bf16) run<additive, bf16>(p);
    else if (p.type == dtype::f32) run<additive, float>(p);
    else run<additive, fp16>(p);
  }
}
