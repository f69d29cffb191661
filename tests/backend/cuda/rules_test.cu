// tests/backend/cuda/rules_test.cu — every rule of linea's list on the GPU, every form and read, against the float64
// reference; and the additive rule with the normaliser (recurrent and chunkwise). The kernels are compiled once, in
// tests/backend/cuda/instances/ (one TU per rule); this TU only calls them.
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
