// pybind11 face of the core: numpy owns every buffer, C++ writes into it in place,
// and the GIL is released while envs step.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <sstream>
#include <string>

#include "batched.h"
#include "games.h"

namespace py = pybind11;
using namespace arena;

namespace {

template <class T>
T* data_of(py::array& a) {
  return static_cast<T*>(a.mutable_data());
}

template <class T>
py::array_t<T> zeros(std::vector<py::ssize_t> shape) {
  py::array_t<T> a(shape);
  std::fill(a.mutable_data(), a.mutable_data() + a.size(), T(0));
  return a;
}

// The Python object: a Batched<G> plus the numpy arrays it writes into.
template <class G>
class PyBatch {
 public:
  PyBatch(const typename G::Params& p, int num_envs, int num_threads, const std::string& device, bool simd)
      : batch_(G::make_ctx(p), num_envs, num_threads, device, simd) {
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
    BatchBuffers out = buffers();
    py::gil_scoped_release release;
    batch_.step(a, begin, end, out);
  }

  Batched<G> batch_;
  py::array obs, final_obs, rewards, terminals, truncations, events, outcome, end_reason, episode_length, done,
      actions;
};

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
      .def("step", &B::step, py::arg("actions"), py::arg("begin"), py::arg("end"))
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

template <class T>
py::array_t<T, py::array::c_style | py::array::forcecast> field(const py::dict& d, const char* key,
                                                                  std::vector<py::ssize_t> shape) {
  if (!d.contains(key)) throw py::value_error(std::string("world state is missing '") + key + "'");
  auto a = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(d[key]);
  if (!a) throw py::value_error(std::string("world state field '") + key + "' is not numeric");
  bool ok = a.ndim() == static_cast<py::ssize_t>(shape.size());
  for (size_t i = 0; ok && i < shape.size(); ++i) ok = a.shape(i) == shape[i];
  if (!ok) throw py::value_error(std::string("world state field '") + key + "' has the wrong shape");
  return a;
}

// Replaces the state of every env (all fields of world_state() are required) and re-observes.
void midrange_set_world_state(PyBatch<MidrangeGame>& b, const py::dict& d) {
  auto& states = b.batch_.states();
  const auto& ctx = b.batch_.ctx();
  const int E = b.batch_.num_envs();
  const int F = ctx.d.num_fighters;
  const int M = F * ctx.p.missiles_per_fighter;
  auto fx = field<double>(d, "fighter_x", {E, F}), fy = field<double>(d, "fighter_y", {E, F});
  auto fvx = field<double>(d, "fighter_vx", {E, F}), fvy = field<double>(d, "fighter_vy", {E, F});
  auto fcd = field<double>(d, "fighter_cooldown", {E, F});
  auto fmis = field<int32_t>(d, "fighter_missiles", {E, F});
  auto falive = field<bool>(d, "fighter_alive", {E, F});
  auto mx = field<double>(d, "missile_x", {E, M}), my = field<double>(d, "missile_y", {E, M});
  auto mvx = field<double>(d, "missile_vx", {E, M}), mvy = field<double>(d, "missile_vy", {E, M});
  auto mtof = field<double>(d, "missile_tof", {E, M});
  auto mowner = field<int32_t>(d, "missile_owner", {E, M}), mtarget = field<int32_t>(d, "missile_target", {E, M});
  auto mactive = field<bool>(d, "missile_active", {E, M});
  auto steps = field<int32_t>(d, "physics_steps", {E}), decisions = field<int32_t>(d, "decisions", {E});
  for (int e = 0; e < E; ++e) {
    auto& s = states[e];
    for (int i = 0; i < F; ++i) {
      const long k = static_cast<long>(e) * F + i;
      const int32_t mis = fmis.data()[k];
      if (mis < 0 || mis > ctx.p.missiles_per_fighter)
        throw py::value_error("fighter_missiles must lie in 0..missiles_per_fighter");
      s.f[i] = midrange::Fighter{fx.data()[k], fy.data()[k], fvx.data()[k], fvy.data()[k],
                                 fcd.data()[k], mis, falive.data()[k] ? 1 : 0};
    }
    for (int j = 0; j < M; ++j) {
      const long k = static_cast<long>(e) * M + j;
      const bool active = mactive.data()[k];
      const int32_t owner = mowner.data()[k], target = mtarget.data()[k];
      if (active && (owner < 0 || owner >= F || target < 0 || target >= F))
        throw py::value_error("an active missile needs owner and target in 0..num_fighters-1");
      if (active && j / ctx.p.missiles_per_fighter != owner)
        throw py::value_error("missile slot " + std::to_string(j) + " belongs to fighter " +
                              std::to_string(j / ctx.p.missiles_per_fighter) + ", not to owner " +
                              std::to_string(owner));
      if (active && midrange::team_of(ctx.p, owner) == midrange::team_of(ctx.p, target))
        throw py::value_error("missile slot " + std::to_string(j) + " targets its own team");
      s.m[j] = midrange::Missile{mx.data()[k], my.data()[k], mvx.data()[k], mvy.data()[k], mtof.data()[k],
                                 owner, target, active ? 1 : 0};
    }
    s.steps = steps.data()[e];
    s.decisions = decisions.data()[e];
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

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "arena's native core: batched two-team games stepped on a C++ thread pool";
#ifdef ARENA_WITH_CUDA
  m.attr("cuda_built") = true;
#else
  m.attr("cuda_built") = false;
#endif
  m.attr("OBS_LAYOUT_VERSION") = 1;

  using P = midrange::Params;
  py::class_<P>(m, "MidrangeParams", py::module_local())
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
  py::class_<rpsw::Params>(m, "RpswParams", py::module_local()).def(py::init<>()).def_readwrite("rounds", &rpsw::Params::rounds);

  m.attr("MIDRANGE_MAX_TEAM") = midrange::MAX_TEAM;
  m.attr("MIDRANGE_MAX_MISSILES_PER_FIGHTER") = midrange::MAX_MISSILES_PER_FIGHTER;
  m.attr("MIDRANGE_MAX_TRACKED") = midrange::MAX_TRACKED;

  bind_batch<MidrangeGame>(m, "MidrangeBatch")
      .def(
          "set_params",
          [](PyBatch<MidrangeGame>& b, const P& p) {
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
  bind_batch<RpswGame>(m, "RpswBatch").def("world_state", &rpsw_world_state);
  m.def("env_seed", [](uint64_t seed, uint64_t env) { return env_seed(seed, env); });
  m.def("bare_fighter_loop", &bare_fighter_loop, py::arg("num_envs"), py::arg("physics_steps"));
}
