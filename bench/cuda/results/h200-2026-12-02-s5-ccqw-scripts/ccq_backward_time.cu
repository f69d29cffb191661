// The CUDA CCQ backward's time (decayed weighting, float32 inputs, c_t the rule's) with CUDA events after warm-up:
// built twice on the device, against the headers before and after the centred statistics (ccqw, 2026-12-02), so
// that the two lines compare one change. Not part of any build.
//   nvcc -std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -I<include>
//        -I<tests> -I<deps> -I<deps>/eigen3 ccq_backward_time.cu -o t && ./t
#include <cstdio>

#include <linea/backend/cuda/mirror.hpp>
#include <linea/cuda.hpp>

#include "read/ccq_inputs.hpp"
#include "support/gradient_buffers.hpp"
#include "support/inputs.hpp"

using namespace linea;
using namespace linea::testing;

template <class Rule>
void time_one(index_t B, index_t T_, index_t H, index_t K, index_t V) {
  using Read = read::ccq<read::decayed>;
  const case_shape shape{.B = B, .T = T_, .H = H, .HV = H, .K = K, .V = V, .initial_state = true, .seed = 5};
  auto c = random_case<Rule, float>::make(shape);
  auto s = ccq_tensors<float>::make(c.shape, c.N, {.initial_stats = true});
  auto a = c.args();
  s.attach(a);
  a.final_state = {}, a.residual = {}, a.o = {};
  a.ccq.C = {}, a.ccq.m = {}, a.ccq.z = {}, a.ccq.q_tilde = {};
  tensor<float, 4> d_o(c.o.extents());
  for (auto& x : d_o.values()) x = 0.5f;
  gradient_buffers<float, float> gb;
  auto g = gb.make(a, contiguous<4>(static_cast<const float*>(d_o.data()), d_o.extents()), view<const float, 4>{},
                   {c.N, B, T_, H, H, K, V}, false, true, [](auto&) {});
  cuda::mirror<float, float> m(a);
  cuda::gradient_mirror<float, float> gm(g);
  for (int i = 0; i < 3; ++i) linea::backward<Rule, Read, backend::cuda>(m.device, gm.device);
  cudaDeviceSynchronize();
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0), cudaEventCreate(&e1);
  double best = 1e30;
  for (int r = 0; r < 5; ++r) {
    cudaEventRecord(e0);
    for (int i = 0; i < 5; ++i) linea::backward<Rule, Read, backend::cuda>(m.device, gm.device);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    best = std::min(best, double(ms) / 5);
  }
  std::printf("ccq_backward_time %s decayed f32 B=%ld T=%ld H=%ld K=%ld V=%ld: %.3f ms (%s)\n", rule_name<Rule>::value,
              long(B), long(T_), long(H), long(K), long(V), best, cudaGetErrorString(cudaGetLastError()));
}

int main() {
  time_one<gated_delta>(2, 4096, 8, 128, 128);
  time_one<kda>(2, 4096, 8, 128, 128);
  time_one<kda>(8, 1024, 4, 64, 64);
}
