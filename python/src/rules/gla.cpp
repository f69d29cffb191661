// The Python entry points of linea::gla (python/src/dispatch.hpp): one rule per translation unit, so that the
// extension's build runs in parallel and each unit stays small.
#include "../dispatch.hpp"

namespace linea::python {
LINEA_PYTHON_RULE(gla);
}
