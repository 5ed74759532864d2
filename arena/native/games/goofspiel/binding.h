// Goofspiel's own part of the pybind11 module (game_bindings.h lists it; binding_common.h says what it may
// specialise).
#pragma once

#include "binding_common.h"

namespace arena_py {

template <>
void check_params<GoofspielGame>(const goofspiel::Params& p) {
  if (const char* err = goofspiel::check(p)) throw py::value_error(err);
}

}  // namespace arena_py
