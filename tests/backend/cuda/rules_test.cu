// tests/backend/cuda/rules_test.cu — every rule of linea's list on the GPU, every form and read, against the float64
// reference; and the additive rule with the normaliser (recurrent and chunkwise, general and 64-token kernels). The
// kernels are compiled once, in tests/backend/cuda/instances/ (one TU per rule); this TU only calls them.
#include "backend/cuda/consistency.hpp"

using namespace linea;
using namespace linea::testing;

LINEA_CUDA_CONSISTENCY(additive)
LINEA_CUDA_CONSISTENCY(simple_gla)
LINEA_CUDA_CONSISTENCY(gla)
LINEA_CUDA_CONSISTENCY(delta)
LINEA_CUDA_CONSISTENCY(gated_delta)
LINEA_CUDA_CONSISTENCY(kda)
LINEA_CUDA_CONSISTENCY(gdn2)

TEST_CASE("cuda: additive rule with the normaliser, recurrent and chunkwise") {
  auto c = random_case<additive, float>::make({.B = 2, .T = 100, .H = 2, .HV = 2, .K = 32, .V = 32, .seed = 3});
  auto ref = c.cast<double>();
  auto ra = ref.args();
  ra.normalize = true;
  reference::recurrent<additive>(ra);
  for (int form = 0; form < 2; ++form) {
    device_case<additive, float> d{c};
    auto a = d.args(c.args());
    a.normalize = true;
    if (form == 0) linea::recurrent<additive, read::identity, backend::cuda>(a);
    else linea::chunkwise<additive, read::identity, backend::cuda>(a);
    d.back();
    INFO("form " << form << " error " << relative_error(c.o, ref.o));
    CHECK(relative_error(c.o, ref.o) <= tolerance_for<float>());
  }
}

// The normaliser on the 64-token kernel (scalar_chunk_kernel.hpp takes bf16 / fp16 aligned rows): positive q, k (a
// feature map's, which normalize expects), a tail chunk, packed sequences over several chunks, GVA, the in-kernel
// L2 norm; the output and final state against the reference on the same rounded inputs.
TEST_CASE("cuda: additive rule with the normaliser on the 64-token kernel (bf16, fp16)") {
  struct norm_case {
    case_shape shape;
    bool l2;
  };
  const norm_case cases[] = {
      {{.B = 2, .T = 150, .H = 2, .HV = 4, .K = 64, .V = 64, .initial_state = true, .seed = 61}, false},
      {{.H = 1, .HV = 2, .K = 128, .V = 128, .seqlens = {200, 0, 63, 129}, .seed = 62}, true},
      {{.B = 1, .T = 100, .H = 2, .HV = 2, .K = 72, .V = 104, .seed = 63}, false},
  };
  const auto run = [&]<class T>(const norm_case& nc) {
    auto c = random_case<additive, T>::make(nc.shape);
    for (auto& x : c.q.values()) x = T(std::abs(double(x)) + 0.1);
    for (auto& x : c.k.values()) x = T(std::abs(double(x)) + 0.1);
    auto ref = c.template cast<double>();
    auto ra = ref.args();
    ra.normalize = true, ra.qk_l2norm = nc.l2;
    reference::recurrent<additive>(ra);
    device_case<additive, T> d{c};
    auto a = d.args(c.args());
    a.normalize = true, a.qk_l2norm = nc.l2;
    linea::chunkwise<additive, read::identity, backend::cuda>(a);
    d.back();
    INFO(std::string(type_name<T>()) << " " << describe_shape(nc.shape) << std::string(nc.l2 ? " l2" : "") << " o error "
                        << relative_error(c.o, ref.o) << " state error " << relative_error(c.ht, ref.ht));
    CHECK(relative_error(c.o, ref.o) <= tolerance_for<T>(c.shape.T));
    CHECK(relative_error(c.ht, ref.ht) <= tolerance_for<T>(c.shape.T));
  };
  for (const norm_case& nc : cases) run.template operator()<bf16>(nc), run.template operator()<fp16>(nc);
}
