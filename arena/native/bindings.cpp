// pybind11 face of the core: numpy owns every buffer, C++ writes into it in place,
// and the GIL is released while envs step.
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
#include "midrange_limits.h"

namespace py = pybind11;
using namespace arena;

namespace {

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

// The core's own guard on game parameters. arena.make validates every parameter against its
// range first (arena/envs/params.py); these checks refuse, for callers of arena._core itself, the
// values that would index past the fixed-size arrays of a State or overflow an int.
void check_params(const midrange::Params& p) {
  std::ostringstream msg;
  if (p.team_size[0] < 1 || p.team_size[0] > midrange::MAX_TEAM || p.team_size[1] < 1 ||
      p.team_size[1] > midrange::MAX_TEAM) {
    msg << "team_size=(" << p.team_size[0] << ", " << p.team_size[1]
        << ") is out of range: allowed two integers in [1, " << midrange::MAX_TEAM << "]";
  } else if (p.missiles_per_fighter < 1 || p.missiles_per_fighter > midrange::MAX_MISSILES_PER_FIGHTER) {
    msg << "missiles_per_fighter=" << p.missiles_per_fighter << " is out of range: allowed [1, "
        << midrange::MAX_MISSILES_PER_FIGHTER << "]";
  } else if (p.tracked_missiles < 0 || p.tracked_missiles > midrange::MAX_TRACKED) {
    msg << "tracked_missiles=" << p.tracked_missiles << " is out of range: allowed [0, " << midrange::MAX_TRACKED
        << "]";
  } else if (p.frame_skip < 1) {
    msg << "frame_skip=" << p.frame_skip << " is out of range: allowed at least 1";
  } else if (!(p.dt > 0.0) || !(p.time_limit_s / p.dt <= 2147483647.0) || !(p.time_limit_s > 0.0)) {
    msg << "time_limit_s=" << p.time_limit_s << " and dt=" << p.dt
        << " are out of range: allowed positive values with time_limit_s / dt at most 2^31 - 1 physics steps";
  } else {
    return;
  }
  throw py::value_error(msg.str());
}

void check_params(const rpsw::Params& p) {
  if (p.rounds < 1) {
    throw py::value_error("rounds=" + std::to_string(p.rounds) + " is out of range: allowed at least 1");
  }
}

void check_params(const goofspiel::Params& p) {
  if (const char* err = goofspiel::check(p)) throw py::value_error(err);
}

template <class P>
const P& checked(const P& p) {
  check_params(p);
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
      : batch_(G::make_ctx(checked(p)), checked_num_envs(num_envs), num_threads, device, simd) {
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

// ---- midrange world state: raw positions, velocities and flags, for rendering and tests

py::dict midrange_world_state(PyBatch<MidrangeGame>& b) {
  auto& states = b.batch_.states();
  const int E = b.batch_.num_envs();
  const int F = b.batch_.ctx().d.num_fighters;
  const int M = F * b.batch_.ctx().p.missiles_per_fighter;
  py::array_t<double> fx({E, F}), fy({E, F}), fvx({E, F}), fvy({E, F}), fcd({E, F});
  py::array_t<int32_t> fmis({E, F});
  py::array_t<bool> falive({E, F});
  py::array_t<double> mx({E, M}), my({E, M}), mvx({E, M}), mvy({E, M}), mtof({E, M});
  py::array_t<int32_t> mowner({E, M}), mtarget({E, M});
  py::array_t<bool> mactive({E, M});
  py::array_t<int32_t> steps({E}), decisions({E});
  for (int e = 0; e < E; ++e) {
    const auto& s = states[e];
    for (int i = 0; i < F; ++i) {
      const long k = static_cast<long>(e) * F + i;
      fx.mutable_data()[k] = s.f[i].x;
      fy.mutable_data()[k] = s.f[i].y;
      fvx.mutable_data()[k] = s.f[i].vx;
      fvy.mutable_data()[k] = s.f[i].vy;
      fcd.mutable_data()[k] = s.f[i].cooldown;
      fmis.mutable_data()[k] = s.f[i].missiles_left;
      falive.mutable_data()[k] = s.f[i].alive != 0;
    }
    for (int j = 0; j < M; ++j) {
      const long k = static_cast<long>(e) * M + j;
      mx.mutable_data()[k] = s.m[j].x;
      my.mutable_data()[k] = s.m[j].y;
      mvx.mutable_data()[k] = s.m[j].vx;
      mvy.mutable_data()[k] = s.m[j].vy;
      mtof.mutable_data()[k] = s.m[j].tof;
      mowner.mutable_data()[k] = s.m[j].owner;
      mtarget.mutable_data()[k] = s.m[j].target;
      mactive.mutable_data()[k] = s.m[j].active != 0;
    }
    steps.mutable_data()[e] = s.steps;
    decisions.mutable_data()[e] = s.decisions;
  }
  py::dict d;
  d["fighter_x"] = fx; d["fighter_y"] = fy; d["fighter_vx"] = fvx; d["fighter_vy"] = fvy;
  d["fighter_cooldown"] = fcd; d["fighter_missiles"] = fmis; d["fighter_alive"] = falive;
  d["missile_x"] = mx; d["missile_y"] = my; d["missile_vx"] = mvx; d["missile_vy"] = mvy;
  d["missile_tof"] = mtof; d["missile_owner"] = mowner; d["missile_target"] = mtarget;
  d["missile_active"] = mactive; d["physics_steps"] = steps; d["decisions"] = decisions;
  b.batch_.release_states();
  return d;
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

// The fastest a body may be set to: above it one physics step of drag could reverse its velocity
// (see midrange::drag_speed_limit).
void check_speeds(const Doubles& vx, const Doubles& vy, double limit, const char* what) {
  for (py::ssize_t i = 0; i < vx.size(); ++i) {
    const double v = std::sqrt(vx.data()[i] * vx.data()[i] + vy.data()[i] * vy.data()[i]);
    if (v <= limit) continue;
    std::ostringstream msg;
    msg.precision(10);
    msg << "world state fields '" << what << "_vx', '" << what << "_vy' give a speed of " << v
        << " m/s at index (" << i / vx.shape(1) << ", " << i % vx.shape(1) << "): allowed up to " << limit
        << " m/s with these parameters (faster, one physics step of drag could reverse the velocity)";
    throw py::value_error(msg.str());
  }
}

// Replaces the state of every env (all fields of world_state() are required; no others) and
// re-observes. Nothing changes unless every field passes its checks.
void midrange_set_world_state(PyBatch<MidrangeGame>& b, const py::dict& d) {
  static const char* const keys[] = {
      "fighter_x",   "fighter_y",  "fighter_vx",  "fighter_vy",     "fighter_cooldown", "fighter_missiles",
      "fighter_alive", "missile_x", "missile_y",  "missile_vx",     "missile_vy",       "missile_tof",
      "missile_owner", "missile_target", "missile_active", "physics_steps", "decisions"};
  for (auto item : d) {
    const std::string key = py::str(item.first).cast<std::string>();
    if (std::find(std::begin(keys), std::end(keys), key) == std::end(keys)) {
      std::string allowed;
      for (const char* k : keys) allowed += std::string(allowed.empty() ? "" : ", ") + k;
      throw py::value_error("world state has unknown field '" + key + "': allowed " + allowed);
    }
  }
  const auto& ctx = b.batch_.ctx();
  const auto& p = ctx.p;
  const int E = b.batch_.num_envs();
  const int F = ctx.d.num_fighters;
  const int M = F * p.missiles_per_fighter;
  const std::vector<py::ssize_t> ef{E, F}, em{E, M}, e1{E};
  const midrange::SpeedLimits limits = midrange::speed_limits(p, ctx.d);
  const FieldLimits pos{-midrange::MAX_POSITION_M, midrange::MAX_POSITION_M, false, " m"};
  const FieldLimits fvel{-limits.fighter, limits.fighter, false, " m/s (the fighter speed limit of these parameters)"};
  const FieldLimits mvel{-limits.missile, limits.missile, false, " m/s (the missile speed limit of these parameters)"};
  const FieldLimits timer{0.0, midrange::MAX_TIMER_S, false, " s"};
  const FieldLimits flag{0.0, 1.0, true, ""};
  const FieldLimits index{-1.0, F - 1.0, true, " (-1 or a fighter)"};
  // Counters past the time limit only end the match at the next step; the bound keeps their
  // increments from overflowing.
  const FieldLimits count{0.0, 2147483646.0, true, ""};
  auto fx = checked_field(d, "fighter_x", ef, pos), fy = checked_field(d, "fighter_y", ef, pos);
  auto fvx = checked_field(d, "fighter_vx", ef, fvel), fvy = checked_field(d, "fighter_vy", ef, fvel);
  auto fcd = checked_field(d, "fighter_cooldown", ef, timer);
  const FieldLimits missiles{0.0, static_cast<double>(p.missiles_per_fighter), true, " (missiles_per_fighter)"};
  auto fmis = checked_field(d, "fighter_missiles", ef, missiles);
  auto falive = checked_field(d, "fighter_alive", ef, flag);
  auto mx = checked_field(d, "missile_x", em, pos), my = checked_field(d, "missile_y", em, pos);
  auto mvx = checked_field(d, "missile_vx", em, mvel), mvy = checked_field(d, "missile_vy", em, mvel);
  auto mtof = checked_field(d, "missile_tof", em, timer);
  auto mowner = checked_field(d, "missile_owner", em, index), mtarget = checked_field(d, "missile_target", em, index);
  auto mactive = checked_field(d, "missile_active", em, flag);
  auto steps = checked_field(d, "physics_steps", e1, count), decisions = checked_field(d, "decisions", e1, count);
  check_speeds(fvx, fvy, limits.fighter, "fighter");
  check_speeds(mvx, mvy, limits.missile, "missile");
  for (int e = 0; e < E; ++e) {
    for (int j = 0; j < M; ++j) {
      const long k = static_cast<long>(e) * M + j;
      if (mactive.data()[k] == 0.0) continue;
      const int owner = static_cast<int>(mowner.data()[k]), target = static_cast<int>(mtarget.data()[k]);
      const std::string where = "missile_active[" + std::to_string(e) + ", " + std::to_string(j) + "]: ";
      if (owner < 0 || target < 0)
        throw py::value_error(where + "an active missile needs missile_owner and missile_target in 0.." +
                              std::to_string(F - 1));
      if (j / p.missiles_per_fighter != owner)
        throw py::value_error(where + "missile slot " + std::to_string(j) + " belongs to fighter " +
                              std::to_string(j / p.missiles_per_fighter) + ", not to missile_owner " +
                              std::to_string(owner));
      if (midrange::team_of(p, owner) == midrange::team_of(p, target))
        throw py::value_error(where + "missile_target " + std::to_string(target) + " is on the team of its owner");
    }
  }
  auto& states = b.batch_.states();
  for (int e = 0; e < E; ++e) {
    auto& s = states[e];
    for (int i = 0; i < F; ++i) {
      const long k = static_cast<long>(e) * F + i;
      s.f[i] = midrange::Fighter{fx.data()[k], fy.data()[k], fvx.data()[k], fvy.data()[k], fcd.data()[k],
                                 static_cast<int32_t>(fmis.data()[k]), falive.data()[k] != 0.0 ? 1 : 0};
    }
    for (int j = 0; j < M; ++j) {
      const long k = static_cast<long>(e) * M + j;
      s.m[j] = midrange::Missile{mx.data()[k],  my.data()[k],  mvx.data()[k], mvy.data()[k], mtof.data()[k],
                                 static_cast<int32_t>(mowner.data()[k]), static_cast<int32_t>(mtarget.data()[k]),
                                 mactive.data()[k] != 0.0 ? 1 : 0};
    }
    s.steps = static_cast<int32_t>(steps.data()[e]);
    s.decisions = static_cast<int32_t>(decisions.data()[e]);
  }
  b.batch_.upload();
  b.batch_.observe_all(b.buffers());
  b.batch_.release_states();
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

// A bare loop of the fighter equations (no missiles, no observations, no threads):
// the anchor the benchmark compares the full game against. Returns physics steps done.
double bare_fighter_loop(int num_envs, int physics_steps) {
  std::vector<double> x(2 * num_envs, 0.0), y(2 * num_envs, 0.0), vx(2 * num_envs, 300.0),
      vy(2 * num_envs, 0.0);
  const MidrangeGame::Ctx ctx = MidrangeGame::make_ctx(midrange::Params{});
  {
    py::gil_scoped_release release;
    for (int t = 0; t < physics_steps; ++t) {
      for (int i = 0; i < 2 * num_envs; ++i) {
        const double u = (i & 1) ? 0.5 : -0.25;
        midrange::integrate(x[i], y[i], vx[i], vy[i], u, ctx.d.f_thrust, ctx.d.f_cd0, ctx.d.f_k, ctx.d.f_inv_rmin,
                            ctx.d.f_turn_cap, ctx.p.dt);
      }
    }
  }
  double sink = 0.0;
  for (double v : x) sink += v;
  return sink;  // keeps the loop from being optimised away
}

// ---- each game's limits (Game::limits) as module attributes <GAME>_<NAME>

template <class G>
void export_limits(py::module_& m) {
  std::string prefix = G::name;
  for (char& ch : prefix) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  for (const IntLimit& limit : G::limits) m.attr((prefix + "_" + limit.name).c_str()) = limit.value;
}

// ---- each game's Params class: generic from the game's int_params table, else its own binding

template <class G>
void bind_params(py::module_& m, const char* name) {
  using P = typename G::Params;
  py::class_<P> cls(m, name, py::module_local());
  cls.def(py::init<>());
  for (const IntParam<P>& param : G::int_params) {
    const auto field = param.field;
    cls.def_property(
        param.name, [field](const P& p) { return p.*field; }, [field](P& p, int v) { p.*field = v; });
  }
}

template <>
void bind_params<MidrangeGame>(py::module_& m, const char* name) {
  using P = midrange::Params;
  py::class_<P>(m, name, py::module_local())
      .def(py::init<>())
      .def_property(
          "team_size", [](const P& p) { return py::make_tuple(p.team_size[0], p.team_size[1]); },
          [](P& p, std::pair<int, int> t) {
            p.team_size[0] = t.first;
            p.team_size[1] = t.second;
          })
#define ARENA_FIELD(name) .def_readwrite(#name, &P::name)
      ARENA_FIELD(frame_skip) ARENA_FIELD(dt) ARENA_FIELD(g) ARENA_FIELD(time_limit_s) ARENA_FIELD(arena_radius_m)
      ARENA_FIELD(fighter_vt) ARENA_FIELD(fighter_rmin) ARENA_FIELD(fighter_ld) ARENA_FIELD(fighter_thrust_g)
      ARENA_FIELD(fighter_max_g) ARENA_FIELD(spawn_speed) ARENA_FIELD(missiles_per_fighter)
      ARENA_FIELD(launch_cooldown_s) ARENA_FIELD(launch_cone_deg) ARENA_FIELD(launch_offset_m)
      ARENA_FIELD(missile_vt) ARENA_FIELD(missile_rmin) ARENA_FIELD(missile_ld) ARENA_FIELD(missile_thrust_g)
      ARENA_FIELD(missile_burn_s) ARENA_FIELD(missile_max_g) ARENA_FIELD(missile_min_speed)
      ARENA_FIELD(missile_max_time_s) ARENA_FIELD(nav_gain) ARENA_FIELD(hit_radius_m)
      ARENA_FIELD(spawn_distance_min_m) ARENA_FIELD(spawn_distance_max_m) ARENA_FIELD(spawn_heading_jitter_deg)
      ARENA_FIELD(formation_spacing_m) ARENA_FIELD(tracked_missiles)
#undef ARENA_FIELD
      ;
}

template <>
void bind_params<RpswGame>(py::module_& m, const char* name) {
  py::class_<rpsw::Params>(m, name, py::module_local()).def(py::init<>()).def_readwrite("rounds", &rpsw::Params::rounds);
}

// ---- what a game's batch offers beyond the common face (world states, live parameters)

template <class G>
void extend_batch(py::class_<PyBatch<G>>&) {}

template <>
void extend_batch<MidrangeGame>(py::class_<PyBatch<MidrangeGame>>& cls) {
  using P = midrange::Params;
  cls.def(
         "set_params",
         [](PyBatch<MidrangeGame>& b, const P& p) {
           check_params(p);
           const P& old = b.batch_.ctx().p;
           if (p.team_size[0] != old.team_size[0] || p.team_size[1] != old.team_size[1] ||
               p.missiles_per_fighter != old.missiles_per_fighter || p.tracked_missiles != old.tracked_missiles)
             throw py::value_error(
                 "team_size, missiles_per_fighter and tracked_missiles shape the buffers and cannot change");
           b.batch_.set_ctx(MidrangeGame::make_ctx(p));
         },
         py::arg("params"))
      .def("world_state", &midrange_world_state)
      .def("set_world_state", &midrange_set_world_state, py::arg("state"));
}

template <>
void extend_batch<RpswGame>(py::class_<PyBatch<RpswGame>>& cls) {
  cls.def("world_state", &rpsw_world_state);
}

}  // namespace

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
    export_limits<G>(m);                                         \
    games.append(G::name);                                       \
  }
  ARENA_GAMES(ARENA_BIND_GAME)
#undef ARENA_BIND_GAME
  m.attr("GAMES") = py::tuple(games);
  m.def("env_seed", [](uint64_t seed, uint64_t env) { return env_seed(seed, env); });
  m.def("bare_fighter_loop", &bare_fighter_loop, py::arg("num_envs"), py::arg("physics_steps"));
}
