// Midrange's face to the batched runner (games.h lists it): the Game struct and, where the build
// has SIMD lanes, how a group of envs steps on them.
#pragma once

#include "common.h"
#include "lanes.h"
#include "midrange.h"
#include "midrange_lanes_step.h"

namespace arena {

struct MidrangeGame {
  using Params = midrange::Params;
  using State = midrange::State;
  struct Ctx {
    Params p;
    midrange::Derived d;
  };
  static constexpr const char* name = "midrange";
  static constexpr int action_dims = midrange::NUM_ACTION_DIMS;
  static constexpr int num_events = midrange::NUM_EVENTS;
  static constexpr IntLimit limits[] = {{"MAX_TEAM", midrange::MAX_TEAM},
                                        {"MAX_MISSILES_PER_FIGHTER", midrange::MAX_MISSILES_PER_FIGHTER},
                                        {"MAX_TRACKED", midrange::MAX_TRACKED}};
  using P = ParamField<Params>;
  // team_size is set from the env's team sizes (binding.h), not a parameter of this table
  static constexpr P params[] = {
      P::integer("frame_skip", &Params::frame_skip, 1.0, 600.0, "physics steps per decision"),
      P::real("dt", &Params::dt, 1e-4, 0.1, "physics time step, s"),
      P::real("g", &Params::g, 0.1, 100.0, "gravity, m/s^2"),
      P::real("time_limit_s", &Params::time_limit_s, 1.0, 36000.0, "game time before a draw by time limit, s"),
      P::real("arena_radius_m", &Params::arena_radius_m, 1000.0, 1e7, "a fighter outside this circle is destroyed, m"),
      P::real("fighter_vt", &Params::fighter_vt, 10.0, 5000.0, "fighter terminal velocity at 1 g of thrust, m/s"),
      P::real("fighter_rmin", &Params::fighter_rmin, 1.0, 1e6, "fighter minimum turn radius, m"),
      P::real("fighter_ld", &Params::fighter_ld, 0.1, 100.0, "fighter lift/drag ratio"),
      P::real("fighter_thrust_g", &Params::fighter_thrust_g, 0.0, 100.0, "fighter thrust at full throttle, g"),
      P::real("fighter_max_g", &Params::fighter_max_g, 0.1, 100.0, "fighter load limit, g"),
      P::real("spawn_speed", &Params::spawn_speed, 1.0, 5000.0, "fighter speed at spawn, m/s"),
      P::integer("missiles_per_fighter", &Params::missiles_per_fighter, 1.0, 8.0, "missiles each fighter carries"),
      P::real("launch_cooldown_s", &Params::launch_cooldown_s, 0.0, 3600.0, "time between two launches of one fighter, s"),
      P::real("launch_cone_deg", &Params::launch_cone_deg, 0.0, 180.0, "largest off-boresight angle of a launch target, deg"),
      P::real("launch_offset_m", &Params::launch_offset_m, 0.0, 1000.0, "a missile appears this far ahead of the shooter, m"),
      P::real("missile_vt", &Params::missile_vt, 10.0, 5000.0, "missile terminal velocity at 1 g of thrust, m/s"),
      P::real("missile_rmin", &Params::missile_rmin, 1.0, 1e6, "missile minimum turn radius, m"),
      P::real("missile_ld", &Params::missile_ld, 0.1, 100.0, "missile lift/drag ratio"),
      P::real("missile_thrust_g", &Params::missile_thrust_g, 0.0, 1000.0, "missile motor thrust, g"),
      P::real("missile_burn_s", &Params::missile_burn_s, 0.0, 3600.0, "missile motor burn time, s"),
      P::real("missile_max_g", &Params::missile_max_g, 0.1, 1000.0, "missile load limit, g"),
      P::real("missile_min_speed", &Params::missile_min_speed, 0.0, 5000.0, "a burnt-out missile slower than this dies, m/s"),
      P::real("missile_max_time_s", &Params::missile_max_time_s, 0.1, 36000.0, "missile flight time limit, s"),
      P::real("nav_gain", &Params::nav_gain, 0.0, 1e6, "proportional navigation gain, u per rad/s"),
      P::real("hit_radius_m", &Params::hit_radius_m, 0.0, 1e5, "closest approach that destroys the target, m"),
      P::real("spawn_distance_min_m", &Params::spawn_distance_min_m, 0.0, 1e7, "smallest distance between the teams at spawn, m"),
      P::real("spawn_distance_max_m", &Params::spawn_distance_max_m, 0.0, 1e7, "largest distance between the teams at spawn, m"),
      P::real("spawn_heading_jitter_deg", &Params::spawn_heading_jitter_deg, 0.0, 180.0, "spawn heading spread around the enemy, deg"),
      P::real("formation_spacing_m", &Params::formation_spacing_m, 0.0, 1e6, "lateral spacing inside a formation, m"),
      P::integer("tracked_missiles", &Params::tracked_missiles, 0.0, 8.0, "missiles per list (threats, own) in an observation"),
  };
  static Ctx make_ctx(const Params& p) { return Ctx{p, midrange::derive(p)}; }
  ARENA_HD static int agents(const Ctx& c) { return c.d.num_fighters; }
  ARENA_HD static int obs_dim(const Ctx& c) { return midrange::obs_dim(c.p); }
  ARENA_HD static int action_n(const Ctx&, int dim) { return dim == 0 ? 5 : (dim == 1 ? 3 : 2); }
  ARENA_HD static void reset(const Ctx& c, State& s) { midrange::reset(c.p, s); }
  ARENA_HD static void observe(const Ctx& c, const State& s, float* obs) {
    midrange::observe(c.p, c.d, s, obs);
  }
  ARENA_HD static void step(const Ctx& c, State& s, const int32_t* actions, EnvOut out) {
    midrange::step(c.p, c.d, s, actions, out);
  }
};

#if defined(ARENA_HAVE_LANES)
template <>
struct LaneStepper<MidrangeGame> {
  static constexpr int width = midrange::LANES;
  using Group = midrange::Lanes;
  static void put(const MidrangeGame::Ctx& c, const MidrangeGame::State& s, Group& g, int l) {
    midrange::put_lane(c.p, c.d, s, g, l);
  }
  static void get(const MidrangeGame::Ctx& c, const Group& g, int l, MidrangeGame::State& s) {
    midrange::get_lane(c.p, c.d, g, l, s);
  }
  template <class ActionsOf, class OutOf>
  static void step(const MidrangeGame::Ctx& c, Group& g, int lo, int hi, ActionsOf actions, OutOf out,
                   const Group* next) {
    midrange::step_group(c.p, c.d, g, lo, hi, actions, out, next);
  }
};
#endif

}  // namespace arena
