// Bounds of the inputs on which the midrange physics stays finite: the world-state ranges that
// bindings.cpp checks in set_world_state, and the speeds at which one physics step is stable for
// given parameters. arena/games/midrange/params.py (check_midrange_consistency) checks game parameters
// against the same speed limits; change both together.
#pragma once

#include "midrange.h"

namespace arena {
namespace midrange {

constexpr double MAX_POSITION_M = 1e9;  // any coordinate, 100 times the largest arena radius
constexpr double MAX_TIMER_S = 1e6;     // fighter cooldowns and missile times of flight

// Semi-implicit Euler cannot reverse a body's velocity in one physics step while C v dt <= 1/2,
// C the largest drag coefficient (parasitic plus induced at full command, cd0 + k / Rmin^2): the
// bound mark_far_missiles relies on too. Faster, the drag overshoots and the speed can diverge.
inline double drag_speed_limit(double cd0, double k, double inv_rmin, double dt) {
  return 0.5 / ((cd0 + k * inv_rmin * inv_rmin) * dt);
}

struct SpeedLimits {
  double fighter, missile;
};

// A fighter may fly no faster than a missile may: its missiles leave with its velocity.
inline SpeedLimits speed_limits(const Params& p, const Derived& d) {
  const double m = drag_speed_limit(d.m_cd0, d.m_k, d.m_inv_rmin, p.dt);
  const double f = drag_speed_limit(d.f_cd0, d.f_k, d.f_inv_rmin, p.dt);
  return SpeedLimits{f < m ? f : m, m};
}

}  // namespace midrange
}  // namespace arena
