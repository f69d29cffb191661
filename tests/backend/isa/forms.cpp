// One unit of the two-instruction-set test (tests/backend/isa/forms.hpp): the gated delta rule's chunkwise and
// recurrent forms (and the backward) on the default CPU backend, compiled with whatever -m flags this copy was given.
#include "forms.hpp"

#include <linea/linea.hpp>

isa_unit LINEA_TEST_ENTRY(const linea::arguments<float>& chunk, const linea::arguments<float>& rec) {
  linea::chunkwise<linea::gated_delta>(chunk);
  linea::recurrent<linea::gated_delta>(rec);
  using A = linea::arguments<float>;
  using linea::backend::cpu;
  void (*c)(const A&) = &linea::chunkwise<linea::gated_delta, linea::read::identity, cpu, float, float>;
  void (*r)(const A&) = &linea::recurrent<linea::gated_delta, linea::read::identity, cpu, float, float>;
  // The identity backward is instantiated too (not called), so the symbol check covers its kernels and its sums;
  // the CCQ backwards are called by main.cpp.
  static volatile isa_backward keep = &linea::backward<linea::gated_delta, linea::read::identity, cpu, float, float>;
  (void)keep;
  const isa_backward gd = &linea::backward<linea::gated_delta, linea::read::ccq<linea::read::uniform>, cpu, float, float>;
  const isa_backward kda = &linea::backward<linea::kda, linea::read::ccq<linea::read::decayed>, cpu, float, float>;
  return {LINEA_ISA_NAME, reinterpret_cast<const void*>(c), reinterpret_cast<const void*>(r), gd, kda};
}
