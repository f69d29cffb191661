// One unit of the two-instruction-set test (tests/backend/isa/forms.hpp): the gated delta rule's chunkwise and
// recurrent forms on the default CPU backend, compiled with whatever -m flags this copy was given.
#include "forms.hpp"

#include <linea/linea.hpp>

isa_unit LINEA_TEST_ENTRY(const linea::arguments<float>& chunk, const linea::arguments<float>& rec) {
  linea::chunkwise<linea::gated_delta>(chunk);
  linea::recurrent<linea::gated_delta>(rec);
  using A = linea::arguments<float>;
  void (*c)(const A&) = &linea::chunkwise<linea::gated_delta, linea::read::identity, linea::backend::cpu, float, float>;
  void (*r)(const A&) = &linea::recurrent<linea::gated_delta, linea::read::identity, linea::backend::cpu, float, float>;
  return {LINEA_ISA_NAME, reinterpret_cast<const void*>(c), reinterpret_cast<const void*>(r)};
}
