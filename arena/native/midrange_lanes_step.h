// One decision of LANES envs at once on SIMD lanes (CPU only): the SIMD lanes path of
// midrange::step.
//
// Each env fires on its own (begin_decision), the group's fighters and missiles are gathered
// into lanes, up to frame_skip physics steps run lane-wise (midrange_lanes.h), the lanes are
// scattered back, the observations are computed lane-wise (midrange_lanes_observe.h), and each
// env writes the rest of its results on its own (end_decision). Bit for bit midrange::step.
#pragma once

#include "midrange_lanes.h"
#include "midrange_lanes_observe.h"

#if defined(ARENA_HAVE_LANES)

namespace arena {
namespace midrange {

// One decision of envs states[0..n), n <= LANES; out(l) is env l's output slice. The n_next
// states at `next` (the group most likely stepped next on this thread) are fetched into the
// caches meanwhile, a few per physics step: all at once, the requests would stall as the
// loads they replace do.
template <class OutOf>
inline void step_lanes(const Params& p, const Derived& d, State* states, int n, const int32_t* actions,
                       OutOf out, const State* next = nullptr, int n_next = 0) {
  const int nf = d.num_fighters;
  const int nm = nf * p.missiles_per_fighter;
  const int per_env = nf * NUM_ACTION_DIMS;
  Lanes L;
  L.running = simd::splat_int(0);
  L.steps = simd::splat_int(0);
  for (int l = 0; l < LANES; ++l) {
    // Lanes past n copy env 0's state and stay stopped: they compute but change nothing.
    const int e = l < n ? l : 0;
    State& s = states[e];
    double rudder[MAX_FIGHTERS], throttle[MAX_FIGHTERS];
    if (l < n) {
      EnvOut o = out(l);
      begin_decision(p, d, s, actions + l * per_env, o, rudder, throttle);
      L.events[l] = o.events;
      L.running[l] = -1;
    } else {
      for (int i = 0; i < nf; ++i) rudder[i] = throttle[i] = 0.0;
      L.events[l] = nullptr;
    }
    L.outcome[l] = OUTCOME_NONE;
    L.reason[l] = END_NONE;
    L.steps[l] = s.steps;
    for (int i = 0; i < nf; ++i) {
      const Fighter& f = s.f[i];
      L.fx[i][l] = f.x;
      L.fy[i][l] = f.y;
      L.fvx[i][l] = f.vx;
      L.fvy[i][l] = f.vy;
      L.cool[i][l] = f.cooldown;
      L.alive[i][l] = f.alive ? -1 : 0;
      L.ammo[i][l] = f.missiles_left > 0 ? -1 : 0;
      L.rudder[i][l] = rudder[i];
      L.thrust[i][l] = d.f_thrust * throttle[i];
    }
    for (int k = 0; k < nm; ++k) {
      const Missile& m = s.m[k];
      L.mx[k][l] = m.x;
      L.my[k][l] = m.y;
      L.mvx[k][l] = m.vx;
      L.mvy[k][l] = m.vy;
      L.tof[k][l] = m.tof;
      L.active[k][l] = m.active ? -1 : 0;
      L.target[k][l] = m.target;
    }
  }
  const int fetch_per_step = (n_next + p.frame_skip - 1) / p.frame_skip;
  for (int k = 0; k < p.frame_skip && simd::any(L.running); ++k) {
    for (int e = k * fetch_per_step; e < (k + 1) * fetch_per_step && e < n_next; ++e) {
      prefetch_state(p, d, next[e]);
    }
    physics_step_lanes(p, d, L);
  }
  LaneObs O;
  stage_observation(p, d, L, states, n, O);
  for (int l = 0; l < n; ++l) {
    State& s = states[l];
    s.steps = static_cast<int32_t>(L.steps[l]);
    for (int i = 0; i < nf; ++i) {
      Fighter& f = s.f[i];
      f.x = L.fx[i][l];
      f.y = L.fy[i][l];
      f.vx = L.fvx[i][l];
      f.vy = L.fvy[i][l];
      f.cooldown = L.cool[i][l];
      f.alive = L.alive[i][l] ? 1 : 0;
    }
    for (int k = 0; k < nm; ++k) {
      Missile& m = s.m[k];
      m.x = L.mx[k][l];
      m.y = L.my[k][l];
      m.vx = L.mvx[k][l];
      m.vy = L.mvy[k][l];
      m.tof = L.tof[k][l];
      m.active = L.active[k][l] ? 1 : 0;
    }
    const EnvOut o = out(l);
    write_observation(p, d, L, O, l, L.outcome[l] != OUTCOME_NONE ? o.final_obs : o.obs);
    end_decision(p, d, s, o, L.outcome[l], L.reason[l], /*observed=*/true);
  }
}

}  // namespace midrange
}  // namespace arena

#endif  // ARENA_HAVE_LANES
