// One unit of the two-instruction-set test (tests/backend/isa/forms.hpp): the gated delta rule's chunkwise and
// recurrent forms (and the backward) on the default CPU backend, compiled with whatever -m flags this copy was given.
#include "forms.hpp"

#include <linea/linea.hpp>

isa_unit LINEA_TEST_ENTRY(const linea::arguments<float>& chunk, const linea::arguments<float>& rec) {
  linea::chunkwise<linea::gated_delta>(chunk);
  linea::recurrent<linea::gated_delta>(rec);
  using A = linea::arguments<float>;
  void (*c)(const A&) = &linea::chunkwise<linea::gated_delta, linea::read::identity, linea::backend::cpu, float, float>;
  void (*r)(const A&) = &linea::recurrent<linea::gated_delta, linea::read::identity, linea::backend::cpu, float, float>;
  // The backward is instantiated too (not called), so the symbol check covers its kernels and its sums.
  void (*b)(const A&, const linea::gradients<float>&) =
      &linea::backward<linea::gated_delta, linea::read::identity, linea::backend::cpu, float, float>;
  static void (*volatile keep)(const A&, const linea::gradients<float>&) = b;
  (void)keep;
  return {LINEA_ISA_NAME, reinterpret_cast<const void*>(c), reinterpret_cast<const void*>(r)};
}
