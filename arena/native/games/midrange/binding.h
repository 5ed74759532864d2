// Midrange's own part of the pybind11 module (game_bindings.h lists it; binding_common.h says what it may
// specialise).
#pragma once

#include "binding_common.h"
#include "midrange_limits.h"

namespace arena_py {

// The core's own guard on game parameters. arena.make validates every parameter against its
// range first (arena/games/midrange/params.py); these checks refuse, for callers of arena._core itself, the
// values that would index past the fixed-size arrays of a State or overflow an int.
template <>
void check_params<MidrangeGame>(const midrange::Params& p) {
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

template <>
void extend_params<MidrangeGame>(py::class_<midrange::Params>& cls) {
  using P = midrange::Params;
  cls.def_property(
      "team_size", [](const P& p) { return py::make_tuple(p.team_size[0], p.team_size[1]); },
      [](P& p, std::pair<int, int> t) {
        p.team_size[0] = t.first;
        p.team_size[1] = t.second;
      });
}

template <>
void extend_batch<MidrangeGame>(py::class_<PyBatch<MidrangeGame>>& cls) {
  using P = midrange::Params;
  cls.def(
         "set_params",
         [](PyBatch<MidrangeGame>& b, const P& p) {
           check_params<MidrangeGame>(p);
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
void extend_module<MidrangeGame>(py::module_& m) {
  m.def("bare_fighter_loop", &bare_fighter_loop, py::arg("num_envs"), py::arg("physics_steps"));
}

}  // namespace arena_py
