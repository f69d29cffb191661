// tests/backend/cuda/instances/backward_phases_per_key.cu — the CUDA backward's phase launchers for per-key decays
// (gla, kda, gdn2), compiled once for linea's CUDA binaries (include/linea/backend/cuda/backward_phase_instances.hpp);
// a unit of its own beside backward_phases.cu, so that the two build in parallel.
#undef LINEA_CUDA_EXTERN_BACKWARD_PHASES  // the definitions are here
#include <linea/cuda.hpp>

LINEA_CUDA_BACKWARD_PER_KEY_PHASES()
