// Rpsw's own part of the pybind11 module (game_bindings.h lists it; binding_common.h says what it may
// specialise).
#pragma once

#include "binding_common.h"

namespace arena_py {

template <>
void check_params<RpswGame>(const rpsw::Params& p) {
  if (p.rounds < 1) {
    throw py::value_error("rounds=" + std::to_string(p.rounds) + " is out of range: allowed at least 1");
  }
}

py::dict rpsw_world_state(PyBatch<RpswGame>& b) {
  auto& states = b.batch_.states();
  const int E = b.batch_.num_envs();
  py::array_t<int32_t> round({E}), score({E}), last({E, 2});
  for (int e = 0; e < E; ++e) {
    round.mutable_data()[e] = states[e].round;
    score.mutable_data()[e] = states[e].score;
    last.mutable_data()[2 * e] = states[e].last[0];
    last.mutable_data()[2 * e + 1] = states[e].last[1];
  }
  py::dict d;
  d["round"] = round;
  d["score"] = score;
  d["last_throw"] = last;
  b.batch_.release_states();
  return d;
}

template <>
void extend_batch<RpswGame>(py::class_<PyBatch<RpswGame>>& cls) {
  cls.def("world_state", &rpsw_world_state);
}

}  // namespace arena_py
