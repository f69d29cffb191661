// scratch: float32 (uncentred) reference backward vs float64, on fuzz cases
#include "fz_host.hpp"
using namespace linea;
using namespace linea::cuda_fuzz;

template <class Rule, class Read>
void run(const plan& p) {
  fuzz_inputs<Rule, float> in(p);
  auto& c = in.c;
  rng_t rng(p.shape.seed * 13ull + 5);
  std::normal_distribution<double> normal(0.0, 1.0);
  tensor<float, 4> d_o(c.o.extents());
  tensor<float, 4> dht(p.ht ? c.ht.extents() : std::array<index_t, 4>{});
  for (auto& x : d_o.values()) x = float(normal(rng));
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
  reference::backward<Rule, Read>(ra, gr);
  auto ha = c.args();
  in.apply(p, ha, in.s, in.gamma);
  ha.final_state = {}, ha.residual = {};
  grad_buffers<float, float> got;
  auto hg = got.make(p, ha, contiguous<4>(static_cast<const float*>(d_o.data()), d_o.extents()), dht_view, c.N, c.shape);
  reference::backward<Rule, Read, float>(ha, hg);
  std::printf("case %ld %s\n", p.index, p.describe().c_str());
  grad_buffers<double, double> orig;
  auto go = orig.make(p, ra, contiguous<4>(static_cast<const double*>(d_o64.data()), d_o64.extents()), dht64_view, c.N, c.shape);
  { FILE* f = std::fopen(("/tmp/ccqw/want_" + std::to_string(p.seed) + "_" + std::to_string(p.index)).c_str(), "rb");
    orig.for_each(orig, [&](const char*, auto& t, const auto&) { if (std::fread(t.data(), sizeof(double), t.size(), f) != t.size()) std::printf("short read\n"); });
    std::fclose(f); }
  double worst64 = 0, worst32 = 0; std::string w32;
  want.for_each(orig, [&](const char* name, const auto& t, const auto& w) {
    if (!(t.size() || w.size())) return;
    verdict v; compare(v, name, t, w, 1e-4); worst64 = std::max(worst64, v.worst * 1e-4);
  });
  got.for_each(orig, [&](const char* name, const auto& t, const auto& w) {
    if (!(t.size() || w.size())) return;
    verdict v; compare(v, name, t, w, 1e-4);
    char b[96]; std::snprintf(b, sizeof b, " %s %.2e", name, v.worst * 1e-4); w32 += b;
    worst32 = std::max(worst32, v.worst * 1e-4);
  });
  std::printf("   centred float64 vs reference: worst rel %.2e;  centred float32: worst %.2e |%s\n", worst64, worst32, w32.c_str());
}

int main(int argc, char** argv) {
  const long seed = std::strtol(argv[1], nullptr, 10);
  std::vector<long> idx;
  if (std::string(argv[2]) == "range") {
    for (long i = std::strtol(argv[3], nullptr, 10); i < std::strtol(argv[4], nullptr, 10); ++i) {
      const plan p = make_plan(seed, i);
      if (p.form == form_kind::backward && p.read != read_kind::identity && p.expect.empty() && p.shape.T > 0) idx.push_back(i);
    }
  } else for (int i = 2; i < argc; ++i) idx.push_back(std::strtol(argv[i], nullptr, 10));
  for (long ii : idx) {
    const plan p = make_plan(seed, ii);
    int r = 0;
    all_rules::for_each([&]<class Rule>() {
      if (r++ != p.rule) return;
      if (p.read == read_kind::decayed) run<Rule, read::ccq<read::decayed>>(p);
      else if (p.read == read_kind::uniform) run<Rule, read::ccq<read::uniform>>(p);
    });
  }
}
