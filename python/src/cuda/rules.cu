// python/src/cuda/rules.cu — the CUDA entry points of every rule for the Python module (cuda/entry.cuh), in one
// unit. The forms and backwards come compiled from linea's instance library (-DLINEA_CUDA_EXTERN_INSTANCES), so
// what is left per rule is host-side dispatch: one unit pays nvcc's fixed cost per unit (~10 s: parsing linea
// and the CPU forms twice, host and device) once instead of once per rule.
#include "entry.cuh"

static_assert(linea::all_rules::size == 7, "a rule joined LINEA_RULES: add its line here");
LINEA_PYTHON_CUDA_RULE(additive);
LINEA_PYTHON_CUDA_RULE(simple_gla);
LINEA_PYTHON_CUDA_RULE(gla);
LINEA_PYTHON_CUDA_RULE(delta);
LINEA_PYTHON_CUDA_RULE(gated_delta);
LINEA_PYTHON_CUDA_RULE(kda);
LINEA_PYTHON_CUDA_RULE(gdn2);
