// tests/backend/cuda/device_case.hpp — a random_case (and its CCQ tensors) mirrored on the GPU: the same views, same
// strides, device pointers; results copied back into the host case for comparison with the float64 reference.
#pragma once
#include <cuda_runtime.h>

#include <memory>
#include <vector>

#include <linea/cuda.hpp>

#include "read/ccq_inputs.hpp"
#include "support/inputs.hpp"

namespace linea::testing {

inline void cuda_ok(cudaError_t e) {
  if (e != cudaSuccess) throw error(std::string("test: ") + cudaGetErrorString(e));
}

// Device copies of host tensors; views over a host tensor are re-pointed to the copy (same extents, strides).
class device_pool {
 public:
  ~device_pool() {
    for (void* p : ptrs_) cudaFree(p);
  }
  template <class X, int R>
  X* copy(const tensor<X, R>& t) {
    if (!t.size()) return nullptr;
    X* p = nullptr;
    cuda_ok(cudaMalloc(&p, t.size() * sizeof(X)));
    ptrs_.push_back(p);
    cuda_ok(cudaMemcpy(p, t.data(), t.size() * sizeof(X), cudaMemcpyHostToDevice));
    return p;
  }
  // A device copy of tensor t, filled with NaN-like poison when it is an output (every element must be written).
  template <class X, int R>
  X* output(const tensor<X, R>& t) {
    X* p = copy(t);
    if (p) cuda_ok(cudaMemset(p, 0xFF, t.size() * sizeof(X)));
    return p;
  }
  template <class V, class X>
  static V repoint(V v, X* device, const X* host) {
    if (v.ptr) v.ptr = device + (v.ptr - host);
    return v;
  }

 private:
  std::vector<void*> ptrs_;
};

template <class X, int R>
void copy_back(tensor<X, R>& t, const X* device) {
  if (device) cuda_ok(cudaMemcpy(t.data(), device, t.size() * sizeof(X), cudaMemcpyDeviceToHost));
}

// The arguments of case c (and CCQ tensors s, when given) with device pointers; `back()` copies the outputs.
template <class Rule, class T, class S = accumulate_t<T>>
struct device_case {
  random_case<Rule, T, S>& c;
  ccq_tensors<T, S>* s = nullptr;
  device_pool pool;
  T *o = nullptr, *res = nullptr, *qt = nullptr;
  S *ht = nullptr, *C = nullptr, *m = nullptr, *z = nullptr;

  arguments<T, S> args(arguments<T, S> a) {  // a: the host arguments over c (and s)
    auto rp = [&](auto v, const auto& t) {
      auto* d = pool.copy(t);
      return device_pool::repoint(v, d, t.data());
    };
    a.q = rp(a.q, c.q), a.k = rp(a.k, c.k), a.v = rp(a.v, c.v);
    if (a.g.ptr) a.g = rp(a.g, c.g);
    if (a.gk.ptr) a.gk = rp(a.gk, c.gk);
    if (a.beta.ptr) a.beta = rp(a.beta, c.beta);
    if (a.b.ptr) a.b = rp(a.b, c.b);
    if (a.w.ptr) a.w = rp(a.w, c.w);
    if (a.initial_state.ptr) a.initial_state = rp(a.initial_state, c.h0);
    o = pool.output(c.o), a.o.ptr = o;
    if (a.residual.ptr) res = pool.output(c.residual), a.residual.ptr = res;
    if (a.final_state.ptr) ht = pool.output(c.ht), a.final_state.ptr = ht;
    if (s) {
      a.ccq.lambda = rp(a.ccq.lambda, s->lambda);
      if (a.ccq.log_decay.ptr) a.ccq.log_decay = rp(a.ccq.log_decay, s->log_decay);
      if (a.ccq.C0.ptr) a.ccq.C0 = rp(a.ccq.C0, s->C0), a.ccq.m0 = rp(a.ccq.m0, s->m0), a.ccq.z0 = rp(a.ccq.z0, s->z0);
      C = pool.output(s->C), a.ccq.C.ptr = C;
      m = pool.output(s->m), a.ccq.m.ptr = m;
      z = pool.output(s->z), a.ccq.z.ptr = z;
      qt = pool.output(s->q_tilde), a.ccq.q_tilde.ptr = qt;
    }
    return a;
  }
  void back() {
    cuda_ok(cudaDeviceSynchronize());
    copy_back(c.o, o), copy_back(c.residual, res), copy_back(c.ht, ht);
    if (s) copy_back(s->C, C), copy_back(s->m, m), copy_back(s->z, z), copy_back(s->q_tilde, qt);
  }
};

}  // namespace linea::testing
