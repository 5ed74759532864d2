// One decision of a group of LANES envs on SIMD lanes (CPU only): the SIMD lanes path of
// midrange::step.
//
// The group's state stays in lane layout between decisions (Lanes, midrange_lanes.h). Each env
// fires on its own (begin_decision on its lane), up to frame_skip physics steps run lane-wise,
// the observations are computed lane-wise (midrange_lanes_observe.h), and each env writes the
// rest of its results on its own; an env whose match ended is reset as a State and put back in
// its lane. Bit for bit midrange::step (tests/test_env_lanes.py).
#pragma once

#include "midrange_lanes.h"
#include "midrange_lanes_observe.h"

#if defined(ARENA_HAVE_LANES)

namespace arena {
namespace midrange {

// One decision of lanes [lo, hi) of group L; the other lanes do not change. actions(l) are lane
// l's action rows and out(l) its output slice. The group `next` (the one most likely stepped
// next on this thread) is fetched into the caches meanwhile, a part per physics step: all at
// once, the requests would stall as the loads they replace do.
template <class ActionsOf, class OutOf>
inline void step_group(const Params& p, const Derived& d, Lanes& L, int lo, int hi, ActionsOf actions,
                       OutOf out, const Lanes* next = nullptr) {
  const int nf = d.num_fighters;
  L.running = simd::splat_int(0);
  for (int l = 0; l < LANES; ++l) {
    L.outcome[l] = OUTCOME_NONE;
    L.reason[l] = END_NONE;
    L.events[l] = nullptr;
  }
  for (int l = lo; l < hi; ++l) {
    double rudder[MAX_FIGHTERS], throttle[MAX_FIGHTERS];
    const EnvOut o = out(l);
    begin_decision(p, d, LaneWorld{L, l}, actions(l), o, rudder, throttle);
    L.events[l] = o.events;
    L.running[l] = -1;
    for (int i = 0; i < nf; ++i) {
      L.rudder[i][l] = rudder[i];
      L.thrust[i][l] = d.f_thrust * throttle[i];
    }
  }
  for (int i = 0; i < nf; ++i) {
    for (int l = 0; l < LANES; ++l) L.ammo[i][l] = L.missiles_left[i][l] > 0 ? -1 : 0;
  }
  mark_far_missiles(p, d, L);
  for (int k = 0; k < p.frame_skip && simd::any(L.running); ++k) {
    if (next != nullptr) prefetch_group(p, d, *next, k, p.frame_skip);
    physics_step_lanes(p, d, L);
  }
  LaneObs O;
  stage_observation(p, d, L, O);
  for (int l = lo; l < hi; ++l) {
    const EnvOut o = out(l);
    L.decisions[l] += 1;
    const bool done = write_results(p, o, L.outcome[l], L.reason[l], L.decisions[l]);
    write_observation(p, d, L, O, l, done ? o.final_obs : o.obs);
    if (done) {
      State s;
      s.rng.state = L.rng[l];
      reset(p, s);
      put_lane(p, d, s, L, l);
      observe(p, d, s, o.obs);
    }
  }
}

}  // namespace midrange
}  // namespace arena

#endif  // ARENA_HAVE_LANES
