// The generic part of the pybind11 face of the core (bindings.cpp defines the module): numpy owns
// every buffer, C++ writes into it in place, and the GIL is released while envs step. A game's own
// binding (games/<name>/binding.h, listed in game_bindings.h) specialises check_params,
// extend_params, extend_batch and extend_module for its Game struct.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "batched.h"
#include "games.h"

namespace arena_py {

namespace py = pybind11;
using namespace arena;

template <class T>
T* data_of(py::array& a) {
  return static_cast<T*>(a.mutable_data());
}

template <class T>
py::array_t<T> zeros(std::vector<py::ssize_t> shape) {
#ifdef ARENA_WITH_CUDA
  // Page-aligned and a whole number of pages: a CUDA batch page-locks its host buffers with
  // cudaHostRegister (CudaBatch::sync_host), which cannot lock two buffers that share a page.
  constexpr size_t page = 4096;
  size_t count = 1;
  for (py::ssize_t n : shape) count *= static_cast<size_t>(n);
  const size_t bytes = ((count * sizeof(T) + page - 1) / page + 1) * page;
  void* mem = std::aligned_alloc(page, bytes);
  if (mem == nullptr) throw std::bad_alloc();
  std::memset(mem, 0, bytes);
  py::capsule owner(mem, [](void* p) { std::free(p); });
  return py::array_t<T>(shape, static_cast<T*>(mem), owner);
#else
  py::array_t<T> a(shape);
  std::fill(a.mutable_data(), a.mutable_data() + a.size(), T(0));
  return a;
#endif
}

// A device buffer of a CUDA batch, seen by torch, CuPy or Numba through __cuda_array_interface__
// (version 3). It holds a reference to its batch, which owns the memory: a tensor made from it with
// torch.as_tensor keeps the batch alive.
struct DeviceBuffer {
  py::object owner;
  uintptr_t ptr;
  std::vector<py::ssize_t> shape;
  std::string typestr;

  py::dict interface() const {
    py::dict d;
    d["shape"] = py::tuple(py::cast(shape));
    d["typestr"] = typestr;
    d["data"] = py::make_tuple(ptr, false);
    d["version"] = 3;
    d["strides"] = py::none();  // C order
    // Every kernel and copy of the batch runs on the legacy default stream (cuda_batch.h).
    d["stream"] = 1;
    return d;
  }
};


// The core's own guard on a game's parameters (a game's binding.h specialises it): arena.make
// validates every parameter against its range first; these checks refuse, for callers of
// arena._core itself, the values that would index past the fixed-size arrays of a State or
// overflow an int.
template <class G>
void check_params(const typename G::Params&) {}

template <class G>
const typename G::Params& checked(const typename G::Params& p) {
  check_params<G>(p);
  return p;
}

int checked_num_envs(int num_envs) {
  if (num_envs < 1) {
    throw py::value_error("num_envs=" + std::to_string(num_envs) + " is out of range: allowed at least 1");
  }
  return num_envs;
}

// Games whose actions can be illegal in a state (a card no longer in the hand) say so with
// has_action_mask and a legal(ctx, obs_row, action_row) test on the row's observation.
template <class G, class = void>
struct HasActionMask : std::false_type {};
template <class G>
struct HasActionMask<G, std::void_t<decltype(G::has_action_mask)>> : std::bool_constant<G::has_action_mask> {};

// The Python object: a Batched<G> plus the numpy arrays it writes into.
template <class G>
class PyBatch {
 public:
  PyBatch(const typename G::Params& p, int num_envs, int num_threads, const std::string& device, bool simd)
      : batch_(G::make_ctx(checked<G>(p)), checked_num_envs(num_envs), num_threads, device, simd) {
    const py::ssize_t rows = static_cast<py::ssize_t>(num_envs) * batch_.agents();
    const py::ssize_t dim = batch_.obs_dim();
    obs = zeros<float>({rows, dim});
    final_obs = zeros<float>({rows, dim});
    rewards = zeros<float>({rows});
    terminals = zeros<bool>({rows});
    truncations = zeros<bool>({rows});
    events = zeros<int32_t>({rows, G::num_events});
    outcome = zeros<int8_t>({num_envs});
    end_reason = zeros<int8_t>({num_envs});
    episode_length = zeros<int32_t>({num_envs});
    done = zeros<bool>({num_envs});
    actions = zeros<int32_t>({rows, G::action_dims});
  }

  BatchBuffers buffers() {
    return BatchBuffers{data_of<float>(obs),       data_of<float>(final_obs),
                        data_of<float>(rewards),   reinterpret_cast<uint8_t*>(terminals.mutable_data()),
                        reinterpret_cast<uint8_t*>(truncations.mutable_data()),
                        data_of<int32_t>(events),  data_of<int8_t>(outcome),
                        data_of<int8_t>(end_reason), data_of<int32_t>(episode_length),
                        reinterpret_cast<uint8_t*>(done.mutable_data())};
  }

  void reset(uint64_t seed) {
    std::vector<uint64_t> seeds(batch_.num_envs());
    for (int e = 0; e < batch_.num_envs(); ++e) seeds[e] = env_seed(seed, e);
    batch_.reset(seeds.data(), buffers());
  }

  void reset_envs(py::array_t<uint64_t, py::array::c_style | py::array::forcecast> seeds) {
    if (seeds.ndim() != 1 || seeds.shape(0) != batch_.num_envs()) {
      std::ostringstream msg;
      msg << "seeds must have shape (" << batch_.num_envs() << ",), got ndim " << seeds.ndim();
      throw py::value_error(msg.str());
    }
    batch_.reset(seeds.data(), buffers());
  }

  // Steps envs [begin, end) with the int32 actions in `acts` (shape [rows, action_dims]).
  void step(py::array_t<int32_t, py::array::c_style> acts, int begin, int end) {
    const int agents = batch_.agents();
    const py::ssize_t rows = static_cast<py::ssize_t>(batch_.num_envs()) * agents;
    if (acts.ndim() != 2 || acts.shape(0) != rows || acts.shape(1) != G::action_dims) {
      std::ostringstream msg;
      msg << "actions must have shape (" << rows << ", " << G::action_dims << ")";
      throw py::value_error(msg.str());
    }
    if (begin < 0 || end > batch_.num_envs() || begin > end) {
      std::ostringstream msg;
      msg << "env range [" << begin << ", " << end << ") is outside [0, " << batch_.num_envs() << ")";
      throw py::value_error(msg.str());
    }
    const int32_t* a = acts.data();
    const py::ssize_t first = static_cast<py::ssize_t>(begin) * agents * G::action_dims;
    const py::ssize_t last = static_cast<py::ssize_t>(end) * agents * G::action_dims;
    // A branch-free pass finds whether any value is out of range (as unsigned, a negative one is
    // too large); only then is the first bad one looked for, to name it.
    uint32_t limit[G::action_dims];
    for (int d = 0; d < G::action_dims; ++d) limit[d] = static_cast<uint32_t>(G::action_n(batch_.ctx(), d));
    bool bad = false;
    for (py::ssize_t i = first; i < last; i += G::action_dims) {
      for (int d = 0; d < G::action_dims; ++d) bad |= static_cast<uint32_t>(a[i + d]) >= limit[d];
    }
    if (bad) {
      for (py::ssize_t i = first; i < last; ++i) {
        const int d = static_cast<int>(i % G::action_dims);
        if (static_cast<uint32_t>(a[i]) < limit[d]) continue;
        std::ostringstream msg;
        msg << "action " << a[i] << " at row " << i / G::action_dims << ", dimension " << d
            << " is out of range: allowed 0.." << limit[d] - 1;
        throw py::value_error(msg.str());
      }
    }
    if constexpr (HasActionMask<G>::value) check_legal(a, begin, end);
    BatchBuffers out = buffers();
    py::gil_scoped_release release;
    batch_.step(a, begin, end, out);
  }

  // Refuses an illegal action of envs [begin, end), naming it and the legal ones of its row.
  void check_legal(const int32_t* a, int begin, int end) {
    const long agents = batch_.agents(), dim = batch_.obs_dim();
    const float* o = static_cast<const float*>(obs.data());
    for (long row = begin * agents; row < end * agents; ++row) {
      const int32_t* act = a + row * G::action_dims;
      if (G::legal(batch_.ctx(), o + row * dim, act)) continue;
      std::ostringstream msg;
      msg << "action " << act[0] << " at row " << row << " (env " << row / agents << ", agent " << row % agents
          << ") is illegal in its state: allowed";
      std::vector<int32_t> candidate(act, act + G::action_dims);
      for (int v = 0; v < G::action_n(batch_.ctx(), 0); ++v) {
        candidate[0] = v;
        if (G::legal(batch_.ctx(), o + row * dim, candidate.data())) msg << " " << v;
      }
      throw py::value_error(msg.str());
    }
  }

  void check_range(int begin, int end) {
    if (begin < 0 || end > batch_.num_envs() || begin > end) {
      std::ostringstream msg;
      msg << "env range [" << begin << ", " << end << ") is outside [0, " << batch_.num_envs()
          << "): allowed 0 <= begin <= end <= " << batch_.num_envs();
      throw py::value_error(msg.str());
    }
  }

  // Steps envs [begin, end) of a CUDA batch with int32 actions [rows, action_dims] (C order) at
  // device address `actions_ptr`; the values are not checked (VectorEnv.step_envs_tensor does).
  void step_device(uintptr_t actions_ptr, int begin, int end) {
    check_range(begin, end);
    if (!batch_.on_cuda()) throw std::runtime_error(Batched<G>::not_on_cuda("step_device (device actions)"));
    if (actions_ptr == 0) throw py::value_error("actions_ptr=0 is not a device address");
    py::gil_scoped_release release;
    batch_.step_device(reinterpret_cast<const int32_t*>(actions_ptr), begin, end);
  }

  // Copies the outputs of envs [begin, end) (end -1: every env) from the device into the numpy
  // buffers; does nothing on a CPU batch.
  void sync_host(int begin, int end) {
    if (end == -1) end = batch_.num_envs();
    check_range(begin, end);
    BatchBuffers out = buffers();
    py::gil_scoped_release release;
    batch_.sync_host(begin, end, out);
  }

  // The numpy buffers are declared before the batch, so that the batch (which page-locks them on a
  // CUDA batch, and unlocks them when it goes) is destroyed first.
  py::array obs, final_obs, rewards, terminals, truncations, events, outcome, end_reason, episode_length, done,
      actions;
  Batched<G> batch_;
};

template <class G>
py::dict device_buffers(py::object self) {
  PyBatch<G>& b = self.cast<PyBatch<G>&>();
  const BatchBuffers d = b.batch_.device_buffers();  // throws on a CPU batch
  const py::ssize_t envs = b.batch_.num_envs();
  const py::ssize_t rows = envs * b.batch_.agents(), dim = b.batch_.obs_dim();
  auto buffer = [&](const void* ptr, std::vector<py::ssize_t> shape, const char* typestr) {
    return DeviceBuffer{self, reinterpret_cast<uintptr_t>(ptr), std::move(shape), typestr};
  };
  py::dict out;
  out["obs"] = buffer(d.obs, {rows, dim}, "<f4");
  out["final_obs"] = buffer(d.final_obs, {rows, dim}, "<f4");
  out["rewards"] = buffer(d.rewards, {rows}, "<f4");
  out["terminals"] = buffer(d.terminals, {rows}, "|b1");
  out["truncations"] = buffer(d.truncations, {rows}, "|b1");
  out["events"] = buffer(d.events, {rows, G::num_events}, "<i4");
  out["outcome"] = buffer(d.outcome, {envs}, "|i1");
  out["end_reason"] = buffer(d.end_reason, {envs}, "|i1");
  out["episode_length"] = buffer(d.episode_length, {envs}, "<i4");
  out["done"] = buffer(d.done, {envs}, "|b1");
  return out;
}

template <class G>
py::class_<PyBatch<G>> bind_batch(py::module_& m, const char* name) {
  using B = PyBatch<G>;
  return py::class_<B>(m, name, py::module_local())
      .def(py::init<const typename G::Params&, int, int, const std::string&, bool>(), py::arg("params"),
           py::arg("num_envs"), py::arg("num_threads"), py::arg("device") = "cpu", py::arg("simd") = true)
      .def_property_readonly("lanes", [](B& b) { return b.batch_.lanes(); },
                             "envs stepped per call on SIMD lanes (1: one env at a time)")
      .def("reset", &B::reset, py::arg("seed"))
      .def("reset_envs", &B::reset_envs, py::arg("seeds"))
      // The whole state of every env (world, counters, spawn generator) as the bytes of this build's
      // State structs: what a checkpoint needs to continue matches in flight exactly.
      .def_property_readonly_static("state_size", [](py::object) { return sizeof(typename G::State); })
      .def("state_bytes",
           [](B& b) {
             auto& s = b.batch_.states();
             py::bytes out(reinterpret_cast<const char*>(s.data()), s.size() * sizeof(typename G::State));
             b.batch_.release_states();
             return out;
           })
      .def(
          "set_state_bytes",
          [](B& b, const py::bytes& data) {
            const std::string raw = data;
            const size_t want = static_cast<size_t>(b.batch_.num_envs()) * sizeof(typename G::State);
            if (raw.size() != want)
              throw py::value_error("env state of " + std::to_string(raw.size()) + " bytes: this batch needs " +
                                    std::to_string(want) + " (" + std::to_string(b.batch_.num_envs()) +
                                    " envs of " + std::to_string(sizeof(typename G::State)) + " bytes)");
            auto& s = b.batch_.states();
            std::memcpy(static_cast<void*>(s.data()), raw.data(), raw.size());
            b.batch_.upload();
            b.batch_.observe_all(b.buffers());
            b.batch_.release_states();
          },
          py::arg("data"))
      .def("step", &B::step, py::arg("actions"), py::arg("begin"), py::arg("end"),
           "Steps envs [begin, end). On a CUDA batch the outputs stay on the device: sync_host() "
           "copies them into the numpy buffers.")
      .def("step_device", &B::step_device, py::arg("actions_ptr"), py::arg("begin"), py::arg("end"),
           "CUDA batch only: steps envs [begin, end) with int32 actions [rows, action_dims], C order, at "
           "device address actions_ptr (values unchecked), on the legacy default stream.")
      .def("sync_host", &B::sync_host, py::arg("begin") = 0, py::arg("end") = -1,
           "Copies the outputs of envs [begin, end) (end -1: all) from the device into the numpy buffers "
           "(page-locked on first use); nothing to do on a CPU batch.")
      .def("device_buffers", &device_buffers<G>,
           "CUDA batch only: name -> DeviceBuffer (__cuda_array_interface__) of each output buffer.")
      .def_property_readonly("num_envs", [](B& b) { return b.batch_.num_envs(); })
      .def_property_readonly("agents_per_env", [](B& b) { return b.batch_.agents(); })
      .def_property_readonly("obs_dim", [](B& b) { return b.batch_.obs_dim(); })
      .def_property_readonly("num_threads", [](B& b) { return b.batch_.num_threads(); })
      .def_property_readonly("on_cuda", [](B& b) { return b.batch_.on_cuda(); })
      .def_property_readonly("action_nvec",
                             [](B& b) {
                               std::vector<int> n;
                               for (int d = 0; d < G::action_dims; ++d) n.push_back(G::action_n(b.batch_.ctx(), d));
                               return n;
                             })
      .def_readonly("obs", &B::obs)
      .def_readonly("final_obs", &B::final_obs)
      .def_readonly("rewards", &B::rewards)
      .def_readonly("terminals", &B::terminals)
      .def_readonly("truncations", &B::truncations)
      .def_readonly("events", &B::events)
      .def_readonly("outcome", &B::outcome)
      .def_readonly("end_reason", &B::end_reason)
      .def_readonly("episode_length", &B::episode_length)
      .def_readonly("done", &B::done)
      .def_readonly("actions", &B::actions);
}

// ---- midrange set_world_state: every field checked before any env changes

std::string shape_text(const std::vector<py::ssize_t>& shape) {
  std::ostringstream out;
  out << "(";
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << (shape.size() == 1 ? ",)" : ")");
  return out.str();
}

// What a world-state field may hold: values in [lo, hi], integers only where `integral`.
struct FieldLimits {
  double lo, hi;
  bool integral;
  const char* unit;  // appended to the allowed range in messages ("" for none)
};

using Doubles = py::array_t<double, py::array::c_style | py::array::forcecast>;

// World-state field `key` of `d` as doubles in C order, after checks that name the field: present,
// an array (or nested sequences) of real numbers (of integers for integral fields; bools count as
// 0 and 1), of exactly `shape`, every value finite and inside `lim`. Any such dtype and any memory
// layout (Fortran order, strides, negative strides) is taken.
Doubles checked_field(const py::dict& d, const char* key, const std::vector<py::ssize_t>& shape,
                      const FieldLimits& lim) {
  const std::string name = std::string("world state field '") + key + "'";
  if (!d.contains(key)) throw py::value_error(std::string("world state is missing '") + key + "'");
  py::array raw = py::array::ensure(d[key]);
  if (!raw) throw py::value_error(name + " is not an array of numbers");
  const char kind = raw.dtype().kind();
  const std::string kinds = lim.integral ? "biu" : "biuf";
  if (kinds.find(kind) == std::string::npos) {
    throw py::value_error(name + " has dtype " + py::str(raw.dtype()).cast<std::string>() + ": allowed " +
                          (lim.integral ? "integers or bools" : "real numbers (bool, int, uint or float)"));
  }
  std::vector<py::ssize_t> got(raw.shape(), raw.shape() + raw.ndim());
  if (got != shape) throw py::value_error(name + " has shape " + shape_text(got) + ": allowed " + shape_text(shape));
  Doubles a = Doubles::ensure(raw);
  if (!a) throw py::value_error(name + " could not be read as numbers");
  const double* v = a.data();
  for (py::ssize_t i = 0; i < a.size(); ++i) {
    const double x = v[i];
    if (x >= lim.lo && x <= lim.hi && (!lim.integral || x == std::floor(x))) continue;  // NaN fails
    std::vector<py::ssize_t> at(shape.size());
    for (py::ssize_t r = i, k = static_cast<py::ssize_t>(shape.size()) - 1; k >= 0; --k) {
      at[k] = r % shape[k];
      r /= shape[k];
    }
    std::ostringstream msg;
    msg.precision(10);
    msg << name << " holds " << x << " at index " << shape_text(at) << ": allowed "
        << (lim.integral ? "integers" : "finite values") << " in [" << lim.lo << ", " << lim.hi << "]" << lim.unit;
    throw py::value_error(msg.str());
  }
  return a;
}

// ---- each game's limits (Game::limits) as module attributes <GAME>_<NAME>

template <class G>
void export_limits(py::module_& m) {
  std::string prefix = G::name;
  for (char& ch : prefix) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  for (const IntLimit& limit : G::limits) m.attr((prefix + "_" + limit.name).c_str()) = limit.value;
}

// ---- each game's Params class, from the game's params table

// What a game adds to its Params class beyond its table (midrange: the team sizes).
template <class G>
void extend_params(py::class_<typename G::Params>&) {}

// The names of a choice's values, "a|b|c" split.
inline py::tuple choice_names(const char* names) {
  py::list out;
  std::string rest(names);
  for (std::size_t bar; (bar = rest.find('|')) != std::string::npos; rest.erase(0, bar + 1)) out.append(rest.substr(0, bar));
  out.append(rest);
  return py::tuple(out);
}

// <Name>Params: every field of the game's table (Game::params) as a read-write attribute, and the
// table itself as the class attribute TABLE (one dict per parameter: name, kind "int", "float" or
// "choice", default, low, high, doc, choices), which the Python side builds its parameter table from.
template <class G>
void bind_params(py::module_& m, const char* name) {
  using P = typename G::Params;
  py::class_<P> cls(m, name, py::module_local());
  cls.def(py::init<>());
  const P defaults{};
  py::list table;
  for (const ParamField<P>& param : G::params) {
    py::dict row;
    row["name"] = param.name;
    row["low"] = param.low;
    row["high"] = param.high;
    row["doc"] = param.doc;
    if (param.int_field != nullptr) {
      const auto field = param.int_field;
      cls.def_property(
          param.name, [field](const P& p) { return p.*field; }, [field](P& p, int v) { p.*field = v; });
      row["kind"] = param.choices != nullptr ? "choice" : "int";
      row["default"] = defaults.*field;
      row["choices"] = param.choices != nullptr ? choice_names(param.choices) : py::tuple();
    } else {
      const auto field = param.real_field;
      cls.def_property(
          param.name, [field](const P& p) { return p.*field; }, [field](P& p, double v) { p.*field = v; });
      row["kind"] = "float";
      row["default"] = defaults.*field;
      row["choices"] = py::tuple();
    }
    table.append(row);
  }
  cls.attr("TABLE") = py::tuple(table);
  extend_params<G>(cls);
}

// ---- what a game's batch offers beyond the common face (world states, live parameters)

template <class G>
void extend_batch(py::class_<PyBatch<G>>&) {}

// ---- what a game adds to the module itself (functions of its own, e.g. benchmark anchors)

template <class G>
void extend_module(py::module_&) {}

}  // namespace arena_py
