// linea/linea.hpp — everything: write rules, read policies, forms, the backward, the float64 reference (forward
// and backward).
//
//   #include <linea/linea.hpp>
//   linea::arguments<float> a{.q = q, .k = k, .v = v, .g = g, .beta = beta, .o = o};
//   linea::recurrent<linea::gated_delta>(a);
#pragma once

#include "config.hpp"
#include "core/arguments.hpp"
#include "core/error.hpp"
#include "core/gradients.hpp"
#include "core/relative_error.hpp"
#include "core/validate.hpp"
#include "core/view.hpp"
#include "tensor.hpp"  // linea::tensor, the owning tensor of the tests and examples

#include "rules/list.hpp"

#include "read/identity.hpp"
#include "read/ccq.hpp"

#include "reference/backward.hpp"
#include "reference/recurrence.hpp"

#include "forms/backward.hpp"
#include "forms/chunkwise.hpp"
#include "forms/recurrent.hpp"
#include "forms/step.hpp"
