// linea/backend/cuda/mirror.hpp — host arguments (and gradients) mirrored on the device, for verification and tools:
//
//   linea::cuda::mirror m(host_args);              // inputs copied, outputs allocated (with their host contents)
//   linea::chunkwise<Rule, Read, linea::backend::cuda>(m.device);
//   m.copy_back();                                 // outputs (o, states, residual, CCQ outputs) back to the host
//
//   linea::cuda::gradient_mirror gm(host_grads);   // d_o, d_final_state copied; every gradient output allocated
//   linea::backward<Rule, Read, linea::backend::cuda>(m.device, gm.device);
//   gm.copy_back();                                // the gradients back to the host
//
// Every view keeps its extents and strides; the memory span it covers is copied. Strides must be non-negative.
#pragma once
#include "check.hpp"

#include <functional>
#include <vector>

#include "../../core/arguments.hpp"
#include "../../core/gradients.hpp"

namespace linea::cuda {

// Device copies of host views: in() copies a view's span to the device, out() also remembers to copy it back.
class device_copies {
 public:
  device_copies() = default;
  device_copies(const device_copies&) = delete;
  device_copies& operator=(const device_copies&) = delete;
  ~device_copies() {
    for (void* p : allocations_) (void)cudaFree(p);
  }

  // Waits for the device, then copies every output view back to the host memory it came from.
  void copy_back() {
    LINEA_CUDA_CHECK(cudaDeviceSynchronize());
    for (auto& f : backs_) f();
  }

 protected:
  template <class V>
  void in(V& v) {
    const std::size_t n = span(v);
    if (n) v.ptr = alloc_copy(v, n);
  }
  template <class V>
  void out(V& v) {
    const std::size_t n = span(v);
    if (!n) return;
    auto* host = v.ptr;
    auto* dev = alloc_copy(v, n);
    v.ptr = dev;
    backs_.push_back([host, dev, n] {
      LINEA_CUDA_CHECK(cudaMemcpy(host, dev, n * sizeof(*dev), cudaMemcpyDeviceToHost));
    });
  }

 private:
  template <class V>
  static std::size_t span(const V& v) {
    if (v.empty()) return 0;
    std::size_t n = 1;
    for (int r = 0; r < V::rank; ++r) {
      if (v.ext[r] == 0) return 0;
      n += static_cast<std::size_t>((v.ext[r] - 1) * v.str[r]);
    }
    return n;
  }
  template <class V>
  auto* alloc_copy(const V& v, std::size_t n) {
    using E = std::remove_const_t<typename V::element_type>;
    E* p = nullptr;
    LINEA_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(E)));
    allocations_.push_back(p);
    LINEA_CUDA_CHECK(cudaMemcpy(p, v.ptr, n * sizeof(E), cudaMemcpyHostToDevice));
    return p;
  }

  std::vector<void*> allocations_;
  std::vector<std::function<void()>> backs_;
};

template <class T, class S>
class mirror : public device_copies {
 public:
  arguments<T, S> device;

  explicit mirror(const arguments<T, S>& host) : device(host) {
    auto& d = device;
    in(d.q), in(d.k), in(d.v), in(d.g), in(d.gk), in(d.beta), in(d.b), in(d.w), in(d.initial_state);
    in(d.gate.A_log), in(d.gate.dt_bias);
    in(d.ccq.lambda), in(d.ccq.log_decay), in(d.ccq.C0), in(d.ccq.m0), in(d.ccq.z0);
    out(d.o), out(d.residual), out(d.final_state), out(d.checkpoints);
    out(d.ccq.C), out(d.ccq.m), out(d.ccq.z), out(d.ccq.q_tilde);
  }
};

template <class T, class S>
class gradient_mirror : public device_copies {
 public:
  gradients<T, S> device;

  explicit gradient_mirror(const gradients<T, S>& host) : device(host) {
    auto& d = device;
    in(d.d_o), in(d.d_final_state);
    out(d.dq), out(d.dk), out(d.dv), out(d.dg), out(d.dgk), out(d.dbeta), out(d.db), out(d.dw);
    out(d.d_initial_state), out(d.dlambda), out(d.dccq_log_decay), out(d.dC0), out(d.dm0), out(d.dz0);
    out(d.dA_log), out(d.ddt_bias);
  }
};

}  // namespace linea::cuda
