// linea/backend/cpu/third_party.hpp — Eigen and xsimd, included once, with GCC 12's false "'__Y' may be used
// uninitialized" warnings from its AVX-512 intrinsics silenced for their code (backend/isa.hpp says why). The
// pragma state follows source locations, so Eigen's and xsimd's templates stay silenced wherever they are
// instantiated later (as long as linea is what includes them first).
#pragma once
#include "../isa.hpp"

LINEA_SIMD_WARNINGS_BEGIN
#include <Eigen/Core>
#include <xsimd/xsimd.hpp>
LINEA_SIMD_WARNINGS_END
