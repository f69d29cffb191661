// tests/backend/cuda/instances/backward_phases.cu — the CUDA backward's phase launchers for scalar and no decay (and
// every rule's CCQ statistics pass), compiled once for linea's CUDA binaries rather than in every rule's unit
// (include/linea/backend/cuda/backward_phase_instances.hpp).
#undef LINEA_CUDA_EXTERN_BACKWARD_PHASES  // the definitions are here
#include <linea/cuda.hpp>

LINEA_CUDA_BACKWARD_CHUNK_PHASES()
