// The pybind11 module arena._core: the generic face (binding_common.h) and each game's own part
// (game_bindings.h), bound for every game of ARENA_GAMES (games.h).
#include <sstream>

#include "binding_common.h"
#include "game_bindings.h"

using namespace arena_py;

PYBIND11_MODULE(_core, m) {
  m.doc() = "arena's native core: batched two-team games stepped on a C++ thread pool";
#ifdef ARENA_WITH_CUDA
  m.attr("cuda_built") = true;
#else
  m.attr("cuda_built") = false;
#endif
  m.attr("OBS_LAYOUT_VERSION") = 1;

  py::class_<DeviceBuffer>(m, "DeviceBuffer", py::module_local())
      .def_property_readonly("__cuda_array_interface__", &DeviceBuffer::interface)
      .def_readonly("ptr", &DeviceBuffer::ptr)
      .def_property_readonly("shape", [](const DeviceBuffer& b) { return py::tuple(py::cast(b.shape)); })
      .def_readonly("typestr", &DeviceBuffer::typestr)
      .def("__repr__", [](const DeviceBuffer& b) {
        std::ostringstream out;
        out << "DeviceBuffer(ptr=0x" << std::hex << b.ptr << std::dec << ", shape=" << shape_text(b.shape)
            << ", typestr='" << b.typestr << "')";
        return out.str();
      });

  // <Name>Params and <Name>Batch for every game of ARENA_GAMES (games.h), and GAMES: their names.
  py::list games;
#define ARENA_BIND_GAME(G, Name)                                 \
  {                                                              \
    bind_params<G>(m, #Name "Params");                           \
    auto cls = bind_batch<G>(m, #Name "Batch");                  \
    extend_batch<G>(cls);                                        \
    extend_module<G>(m);                                         \
    export_limits<G>(m);                                         \
    games.append(G::name);                                       \
  }
  ARENA_GAMES(ARENA_BIND_GAME)
#undef ARENA_BIND_GAME
  m.attr("GAMES") = py::tuple(games);
  m.def("env_seed", [](uint64_t seed, uint64_t env) { return env_seed(seed, env); });
}

