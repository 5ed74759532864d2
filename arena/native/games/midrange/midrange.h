// Midrange air combat: beyond-visual-range missile fights on a 2-D plane.
// docs/midrange.md is the specification; arena/games/midrange/{reference,physics}.py
// is the NumPy twin of this file, operation for operation. Change both together.
//
// Everything here is host/device code: one call steps one env, so the CPU thread
// pool and the CUDA kernel run exactly the same functions.
#pragma once

#include "common.h"

namespace arena {
namespace midrange {

constexpr int MAX_TEAM = 4;
constexpr int MAX_FIGHTERS = 2 * MAX_TEAM;
constexpr int MAX_MISSILES_PER_FIGHTER = 8;
constexpr int MAX_MISSILES = MAX_FIGHTERS * MAX_MISSILES_PER_FIGHTER;
constexpr int MAX_TRACKED = 8;
constexpr int NUM_ACTION_DIMS = 3;
// Values per action dimension: rudder {-1, -.5, 0, .5, 1}, throttle {0, .5, 1}, fire {0, 1}.
constexpr int RUDDER_VALUES = 5, THROTTLE_VALUES = 3, FIRE_VALUES = 2;
constexpr int NUM_EVENTS = 8;
// EV_MISSED (owner) and EV_EVADED (target): a missile burnt out or timed out without hitting.
enum Event {
  EV_FIRED = 0,
  EV_HITS = 1,
  EV_KILLS = 2,
  EV_WAS_HIT = 3,
  EV_DIED = 4,
  EV_LEFT_ARENA = 5,
  EV_MISSED = 6,
  EV_EVADED = 7
};

// Feature layout of one observation row (see obs_dim()).
constexpr int SELF_FEATURES = 8;
constexpr int FIGHTER_FEATURES = 9;
constexpr int MISSILE_FEATURES = 7;
// Last block of a row: one flag per action value, 1 where it is legal (only "fire" ever is not).
constexpr int LEGAL_FEATURES = RUDDER_VALUES + THROTTLE_VALUES + FIRE_VALUES;
// Scales that bring features to order one.
constexpr double RANGE_SCALE = 10000.0;
constexpr double SPEED_SCALE = 1000.0;

struct Params {
  int team_size[2] = {1, 1};
  int frame_skip = 12;
  double dt = 1.0 / 60.0;
  double g = 9.8;
  double time_limit_s = 300.0;
  double arena_radius_m = 60000.0;
  // fighter
  double fighter_vt = 400.0, fighter_rmin = 1000.0, fighter_ld = 5.0;
  double fighter_thrust_g = 1.5, fighter_max_g = 9.0, spawn_speed = 300.0;
  int missiles_per_fighter = 6;
  double launch_cooldown_s = 0.5, launch_cone_deg = 60.0, launch_offset_m = 20.0;
  // missile
  double missile_vt = 400.0, missile_rmin = 1000.0, missile_ld = 2.0;
  double missile_thrust_g = 15.0, missile_burn_s = 10.0, missile_max_g = 30.0;
  double missile_min_speed = 200.0, missile_max_time_s = 60.0;
  double nav_gain = 200.0 / 3.14159265358979323846;  // u per rad/s of line-of-sight rate
  double hit_radius_m = 100.0;
  // spawn
  double spawn_distance_min_m = 20000.0, spawn_distance_max_m = 40000.0;
  double spawn_heading_jitter_deg = 30.0, formation_spacing_m = 2000.0;
  // observation: K threatening missiles and K own missiles per fighter
  int tracked_missiles = 4;
};

// Constants derived once from Params (drag coefficients, step counts).
struct Derived {
  double f_cd0, f_k, f_thrust, m_cd0, m_k, m_thrust, cos_cone, max_steps_f;
  // Missile timers accumulate tof += dt; comparing against these (a millionth of a step early)
  // makes a 10 s burn last exactly 10 s / dt steps despite rounding in the sum.
  double burn_end_s, max_time_end_s;
  double f_inv_rmin, f_turn_cap, m_inv_rmin, m_turn_cap;
  // reciprocals the observation multiplies by
  double inv_fighter_vt, inv_missiles_per_fighter, inv_launch_cooldown, inv_max_steps, inv_missile_max_time;
  int max_steps, max_team, num_fighters;
};

ARENA_HD Derived derive(const Params& p) {
  Derived d;
  d.f_cd0 = p.g / (p.fighter_vt * p.fighter_vt);
  d.f_k = 1.0 / (4.0 * d.f_cd0 * p.fighter_ld * p.fighter_ld);
  d.f_thrust = p.fighter_thrust_g * p.g;
  d.m_cd0 = p.g / (p.missile_vt * p.missile_vt);
  d.m_k = 1.0 / (4.0 * d.m_cd0 * p.missile_ld * p.missile_ld);
  d.m_thrust = p.missile_thrust_g * p.g;
  d.cos_cone = cos(p.launch_cone_deg * 3.14159265358979323846 / 180.0);
  d.f_inv_rmin = 1.0 / p.fighter_rmin;
  d.f_turn_cap = p.fighter_max_g * p.g * p.fighter_rmin;
  d.m_inv_rmin = 1.0 / p.missile_rmin;
  d.m_turn_cap = p.missile_max_g * p.g * p.missile_rmin;
  d.burn_end_s = p.missile_burn_s - 1e-6 * p.dt;
  d.max_time_end_s = p.missile_max_time_s - 1e-6 * p.dt;
  d.max_steps_f = ceil(p.time_limit_s / p.dt - 1e-9);
  d.max_steps = static_cast<int>(d.max_steps_f);
  d.inv_fighter_vt = 1.0 / p.fighter_vt;
  d.inv_missiles_per_fighter = 1.0 / p.missiles_per_fighter;  // inf for 0 missiles: 0 * inf is NaN
  d.inv_launch_cooldown = p.launch_cooldown_s > 0 ? 1.0 / p.launch_cooldown_s : 0.0;
  d.inv_max_steps = 1.0 / d.max_steps_f;
  d.inv_missile_max_time = 1.0 / p.missile_max_time_s;
  d.max_team = p.team_size[0] > p.team_size[1] ? p.team_size[0] : p.team_size[1];
  d.num_fighters = p.team_size[0] + p.team_size[1];
  return d;
}

ARENA_HD int obs_dim(const Params& p) {
  const int max_team = p.team_size[0] > p.team_size[1] ? p.team_size[0] : p.team_size[1];
  return SELF_FEATURES + FIGHTER_FEATURES * (2 * max_team - 1) +
         MISSILE_FEATURES * 2 * p.tracked_missiles + LEGAL_FEATURES;
}

struct Fighter {
  double x, y, vx, vy, cooldown;
  int32_t missiles_left, alive;
};

struct Missile {
  double x, y, vx, vy, tof;
  int32_t owner, target, active;
};

// Fighter i owns missile slots [i * missiles_per_fighter, (i + 1) * missiles_per_fighter):
// its k-th launch uses slot k, so a fighter with missiles left always has a free slot.
struct State {
  Fighter f[MAX_FIGHTERS];
  Missile m[MAX_MISSILES];
  Rng rng;
  int32_t steps;      // physics steps this episode
  int32_t decisions;  // decisions this episode
};

ARENA_HD int team_of(const Params& p, int i) { return i < p.team_size[0] ? 0 : 1; }

// ---------------------------------------------------------------- reset

ARENA_HD void reset(const Params& p, State& s) {
  const double pi = 3.14159265358979323846;
  const int n = p.team_size[0] + p.team_size[1];
  const double dist = p.spawn_distance_min_m +
                      (p.spawn_distance_max_m - p.spawn_distance_min_m) * rng_uniform(s.rng);
  const double theta = 2.0 * pi * rng_uniform(s.rng);
  const double ax = cos(theta), ay = sin(theta);  // from team 0 towards team 1
  const double lx = -ay, ly = ax;                 // lateral axis of the formations
  const double jitter = p.spawn_heading_jitter_deg * pi / 180.0;
  for (int i = 0; i < n; ++i) {
    const int team = team_of(p, i);
    const int j = team == 0 ? i : i - p.team_size[0];
    const double side = team == 0 ? -0.5 : 0.5;
    const double offset = (j - 0.5 * (p.team_size[team] - 1)) * p.formation_spacing_m;
    const double heading = theta + (team == 0 ? 0.0 : pi) + jitter * (2.0 * rng_uniform(s.rng) - 1.0);
    Fighter& f = s.f[i];
    f.x = side * dist * ax + offset * lx;
    f.y = side * dist * ay + offset * ly;
    f.vx = p.spawn_speed * cos(heading);
    f.vy = p.spawn_speed * sin(heading);
    f.cooldown = 0.0;
    f.missiles_left = p.missiles_per_fighter;
    f.alive = 1;
  }
  for (int i = n; i < MAX_FIGHTERS; ++i) {
    s.f[i] = Fighter{0, 0, 0, 0, 0, 0, 0};
  }
  for (int k = 0; k < MAX_MISSILES; ++k) s.m[k] = Missile{0, 0, 0, 0, 0, -1, -1, 0};
  s.steps = 0;
  s.decisions = 0;
}

// ---------------------------------------------------------------- physics

// One semi-implicit Euler step of a point mass (docs/midrange.md "Point-mass equations").
// u is the turn command in [-1, 1] (positive turns left). The g limit caps the control itself:
// |u_eff| <= max_g g Rmin / v^2, written here as |u| v^2 <= turn_cap (turn_cap = max_g g Rmin).
// inv_rmin = 1 / Rmin. Branch-free, so that R may be a double (one env) or a vector of lanes
// (simd.h); a body at rest (v^2 <= 1e-18) feels no force.
template <class R>
ARENA_HD void integrate(R& x, R& y, R& vx, R& vy, R u, R thrust, double cd0, double k, double inv_rmin,
                        double turn_cap, double dt) {
  const R v2 = vx * vx + vy * vy;
  const auto moving = v2 > 1e-18;
  const R v2s = vselect(moving, v2, 1.0);  // keeps 1/sqrt finite at rest
  const R inv_v = 1.0 / vsqrt(v2s);
  // Where the cap binds, |u_eff| = turn_cap / v^2; 1 / v^2 is inv_v * inv_v, which spares a division.
  const R cap = turn_cap * (inv_v * inv_v);
  const R ue = vselect(vabs(u) * v2 > turn_cap, vselect(u > 0.0, cap, -cap), u);
  const R cl = vabs(ue) * inv_rmin;
  const R a_par = thrust - (cd0 + k * cl * cl) * v2;
  const R a_perp = v2 * ue * inv_rmin;
  const R hx = vx * inv_v, hy = vy * inv_v;
  const R ax = vselect(moving, a_par * hx - a_perp * hy, 0.0);
  const R ay = vselect(moving, a_par * hy + a_perp * hx, 0.0);
  vx += ax * dt;
  vy += ay * dt;
  x += vx * dt;
  y += vy * dt;
}

// Proportional navigation of a missile at (mx, my, mvx, mvy) on a target at (tx, ty, tvx, tvy):
// u = clamp(N * lambda_dot), with the line-of-sight rate lambda_dot = (r x v_rel) / |r|^2
// computed analytically; 0 when the two coincide.
template <class R>
ARENA_HD R pn_command(R mx, R my, R mvx, R mvy, R tx, R ty, R tvx, R tvy, double nav_gain) {
  const R rx = tx - mx, ry = ty - my;
  const R wx = tvx - mvx, wy = tvy - mvy;
  const R r2 = rx * rx + ry * ry;
  const auto apart = r2 >= 1e-9;
  const R lambda_dot = (rx * wy - ry * wx) / vselect(apart, r2, 1.0);
  return vselect(apart, vclamp(nav_gain * lambda_dot, -1.0, 1.0), 0.0);
}

// Closest approach of two straight segments travelled in the same time interval.
ARENA_HD double swept_distance2(double ax0, double ay0, double ax1, double ay1, double bx0,
                                double by0, double bx1, double by1) {
  const double dx = ax0 - bx0, dy = ay0 - by0;
  const double ex = (ax1 - ax0) - (bx1 - bx0), ey = (ay1 - ay0) - (by1 - by0);
  const double ee = ex * ex + ey * ey;
  double t = 0.0;
  if (ee > 1e-12) t = clampd(-(dx * ex + dy * ey) / ee, 0.0, 1.0);
  const double cx = dx + t * ex, cy = dy + t * ey;
  return cx * cx + cy * cy;
}

// Cheap exact reject before the swept test: the closest approach within the step is at least
// |d1| - |e| (d1 the separation at the end, e the relative displacement), and
// (R + |e|)^2 <= 2 (R^2 + |e|^2), so |d1|^2 > 2 (R^2 + |e|^2) rules a hit out.
template <class R>
ARENA_HD auto may_pass_within(R ax0, R ay0, R ax1, R ay1, R bx0, R by0, R bx1, R by1, double r2) {
  const R ex = (ax1 - ax0) - (bx1 - bx0), ey = (ay1 - ay0) - (by1 - by0);
  const R dx = ax1 - bx1, dy = ay1 - by1;
  return dx * dx + dy * dy <= 2.0 * (r2 + ex * ex + ey * ey);
}

// One env's fighters and missiles as a launch reads and writes them: here a State; the SIMD
// lanes path has the same accessors for one lane of its group (midrange_lanes.h), so both run
// the one try_launch below. Over a const State (StateView) it only reads: the observation's
// legal-action flags ask the same question as the launch.
template <class S>
struct StateAccess {
  S& s;
  ARENA_HD bool alive(int i) const { return s.f[i].alive != 0; }
  ARENA_HD int32_t missiles_left(int i) const { return s.f[i].missiles_left; }
  ARENA_HD double cooldown(int i) const { return s.f[i].cooldown; }
  ARENA_HD double x(int i) const { return s.f[i].x; }
  ARENA_HD double y(int i) const { return s.f[i].y; }
  ARENA_HD double vx(int i) const { return s.f[i].vx; }
  ARENA_HD double vy(int i) const { return s.f[i].vy; }
  // Missile `slot` appears at (x, y) with velocity (vx, vy), owned by `owner`, locked on `target`;
  // the owner has one missile fewer and waits `cooldown`.
  ARENA_HD void launch(int slot, double x, double y, double vx, double vy, int owner, int target,
                       double cooldown) const {
    s.m[slot] = Missile{x, y, vx, vy, 0.0, owner, target, 1};
    s.f[owner].missiles_left -= 1;
    s.f[owner].cooldown = cooldown;
  }
};
using StateWorld = StateAccess<State>;
using StateView = StateAccess<const State>;

// The enemy fighter i would lock on if it fired now: the alive enemy with the smallest
// off-boresight angle inside the cone. -1 where a launch would do nothing: i is dead, has no
// missile left, is cooling down, or has no enemy in the cone. (hx, hy): i's heading.
template <class World>
ARENA_HD int launch_target(const Params& p, const Derived& d, const World& w, int i, double& hx, double& hy) {
  if (!w.alive(i) || w.missiles_left(i) <= 0 || w.cooldown(i) > 1e-9) return -1;
  const double fx = w.x(i), fy = w.y(i), fvx = w.vx(i), fvy = w.vy(i);
  const double v = sqrt(fvx * fvx + fvy * fvy);
  if (v < 1e-9) return -1;
  hx = fvx / v;
  hy = fvy / v;
  const int team = team_of(p, i);
  int best = -1;
  double best_cos = -2.0;
  for (int j = 0; j < d.num_fighters; ++j) {
    if (team_of(p, j) == team || !w.alive(j)) continue;
    const double rx = w.x(j) - fx, ry = w.y(j) - fy;
    const double r = sqrt(rx * rx + ry * ry);
    if (r < 1e-9) continue;
    const double c = (hx * rx + hy * ry) / r;
    if (c >= d.cos_cone && c > best_cos) {
      best_cos = c;
      best = j;
    }
  }
  return best;
}

// Launch from fighter i at its launch_target. None: nothing happens and no missile is spent.
template <class World>
ARENA_HD bool try_launch(const Params& p, const Derived& d, const World& w, int i) {
  double hx = 0.0, hy = 0.0;
  const int best = launch_target(p, d, w, i, hx, hy);
  if (best < 0) return false;
  const double fx = w.x(i), fy = w.y(i);
  const int slot = i * p.missiles_per_fighter + (p.missiles_per_fighter - w.missiles_left(i));
  w.launch(slot, fx + hx * p.launch_offset_m, fy + hy * p.launch_offset_m, w.vx(i), w.vy(i), i, best,
           p.launch_cooldown_s);
  return true;
}

// The legal-action flags of an alive fighter i (LEGAL_FEATURES of them): every rudder and
// throttle value and "no fire" are always legal; "fire" is where it would launch a missile.
template <class World>
ARENA_HD void write_legal(const Params& p, const Derived& d, const World& w, int i, float* out) {
  for (int c = 0; c < LEGAL_FEATURES - 1; ++c) out[c] = 1.0f;
  double hx = 0.0, hy = 0.0;
  out[LEGAL_FEATURES - 1] = launch_target(p, d, w, i, hx, hy) >= 0 ? 1.0f : 0.0f;
}

// Whether the match is over after a physics step, and why (docs/midrange.md "Episode end").
// alive_team: fighters alive per team; any_ammo: an alive fighter has missiles left.
ARENA_HD int8_t match_outcome(const Derived& d, const int* alive_team, bool any_ammo, bool any_missile,
                              int steps, int8_t* end_reason) {
  if (alive_team[0] == 0 && alive_team[1] == 0) {
    *end_reason = END_MUTUAL;
    return OUTCOME_DRAW;
  }
  if (alive_team[0] == 0) {
    *end_reason = END_ELIMINATION;
    return OUTCOME_TEAM1;
  }
  if (alive_team[1] == 0) {
    *end_reason = END_ELIMINATION;
    return OUTCOME_TEAM0;
  }
  if (!any_ammo && !any_missile) {
    *end_reason = END_NO_MISSILES;
    return OUTCOME_DRAW;
  }
  if (steps >= d.max_steps) {
    *end_reason = END_TIME_LIMIT;
    return OUTCOME_DRAW;
  }
  return OUTCOME_NONE;
}

// One physics step of the whole env. Returns the outcome if the match ended.
ARENA_HD int8_t physics_step(const Params& p, const Derived& d, State& s, const double* rudder,
                             const double* throttle, int32_t* events, int8_t* end_reason) {
  const int nf = d.num_fighters;
  const int nm = nf * p.missiles_per_fighter;
  double fx0[MAX_FIGHTERS], fy0[MAX_FIGHTERS];
  int alive0[MAX_FIGHTERS];
  double u_m[MAX_MISSILES];
  const double hit2 = p.hit_radius_m * p.hit_radius_m;
  // Guidance from the state at the start of the step.
  for (int k = 0; k < nm; ++k) {
    const Missile& m = s.m[k];
    const Fighter& t = s.f[m.active ? m.target : 0];
    u_m[k] = m.active ? pn_command(m.x, m.y, m.vx, m.vy, t.x, t.y, t.vx, t.vy, p.nav_gain) : 0.0;
  }
  for (int i = 0; i < nf; ++i) {
    Fighter& f = s.f[i];
    fx0[i] = f.x;
    fy0[i] = f.y;
    alive0[i] = f.alive;
    if (!f.alive) continue;
    integrate(f.x, f.y, f.vx, f.vy, rudder[i], d.f_thrust * throttle[i], d.f_cd0, d.f_k, d.f_inv_rmin,
              d.f_turn_cap, p.dt);
    f.cooldown = f.cooldown - p.dt > 0.0 ? f.cooldown - p.dt : 0.0;
  }
  for (int k = 0; k < nm; ++k) {
    Missile& m = s.m[k];
    if (!m.active) continue;
    const double mx0 = m.x, my0 = m.y;
    const double thrust = m.tof < d.burn_end_s ? d.m_thrust : 0.0;
    integrate(m.x, m.y, m.vx, m.vy, u_m[k], thrust, d.m_cd0, d.m_k, d.m_inv_rmin, d.m_turn_cap, p.dt);
    m.tof += p.dt;
    const int t = m.target;
    // Swept hit test: a target alive at the start of the step, however fast the crossing.
    if (alive0[t] && may_pass_within(mx0, my0, m.x, m.y, fx0[t], fy0[t], s.f[t].x, s.f[t].y, hit2) &&
        swept_distance2(mx0, my0, m.x, m.y, fx0[t], fy0[t], s.f[t].x, s.f[t].y) <= hit2) {
      m.active = 0;
      events[m.owner * NUM_EVENTS + EV_HITS] += 1;
      events[t * NUM_EVENTS + EV_WAS_HIT] += 1;
      if (s.f[t].alive) {
        s.f[t].alive = 0;
        events[m.owner * NUM_EVENTS + EV_KILLS] += 1;
        events[t * NUM_EVENTS + EV_DIED] += 1;
      }
      continue;
    }
    const double v2 = m.vx * m.vx + m.vy * m.vy;
    const bool burnt_out = m.tof >= d.burn_end_s;
    if (m.tof >= d.max_time_end_s ||
        (burnt_out && v2 < p.missile_min_speed * p.missile_min_speed)) {
      m.active = 0;
      events[m.owner * NUM_EVENTS + EV_MISSED] += 1;
      events[t * NUM_EVENTS + EV_EVADED] += 1;
    }
  }
  const double r2max = p.arena_radius_m * p.arena_radius_m;
  for (int i = 0; i < nf; ++i) {
    Fighter& f = s.f[i];
    if (f.alive && f.x * f.x + f.y * f.y > r2max) {
      f.alive = 0;
      events[i * NUM_EVENTS + EV_DIED] += 1;
      events[i * NUM_EVENTS + EV_LEFT_ARENA] += 1;
    }
  }
  // A missile whose target is gone has nothing to guide on: it is removed.
  bool any_missile = false;
  for (int k = 0; k < nm; ++k) {
    Missile& m = s.m[k];
    if (m.active && !s.f[m.target].alive) m.active = 0;
    any_missile = any_missile || m.active;
  }
  s.steps += 1;

  int alive_team[2] = {0, 0};
  bool any_ammo = false;
  for (int i = 0; i < nf; ++i) {
    if (!s.f[i].alive) continue;
    alive_team[team_of(p, i)] += 1;
    any_ammo = any_ammo || s.f[i].missiles_left > 0;
  }
  return match_outcome(d, alive_team, any_ammo, any_missile, s.steps, end_reason);
}

// ---------------------------------------------------------------- observation

// Observations divide by a few lengths per feature; each length is inverted once (inv_*) and
// the scales below are multiplied in, so a row costs few divisions. The NumPy reference
// computes the same products.
constexpr double INV_RANGE_SCALE = 1.0 / RANGE_SCALE;
constexpr double INV_SPEED_SCALE = 1.0 / SPEED_SCALE;

// 1 / r, or 0 for r below the 1e-9 m that counts as "same point".
ARENA_HD double inverse_length(double r) { return r < 1e-9 ? 0.0 : 1.0 / r; }

// Bearing of vector (rx, ry), of length r (inv_r = inverse_length(r)), seen from heading (hx, hy):
// sin positive to the left.
ARENA_HD void bearing(double hx, double hy, double rx, double ry, double r, double inv_r, float* out) {
  if (r < 1e-9) {
    out[0] = 0.0f;
    out[1] = 1.0f;
    return;
  }
  out[0] = static_cast<float>((hx * ry - hy * rx) * inv_r);
  out[1] = static_cast<float>((hx * rx + hy * ry) * inv_r);
}

// Unit vector of (vx, vy) of length v, or (1, 0) for a mass at rest.
ARENA_HD void unit_heading(double vx, double vy, double v, double& hx, double& hy) {
  if (v < 1e-9) {
    hx = 1.0;
    hy = 0.0;
  } else {
    const double inv_v = 1.0 / v;
    hx = vx * inv_v;
    hy = vy * inv_v;
  }
}

// Insertion sort of up to MAX_MISSILES (key, index) pairs, stable: ties keep index order.
ARENA_HD void sort_by_key(double* key, int* idx, int n) {
  for (int a = 1; a < n; ++a) {
    const double k = key[a];
    const int v = idx[a];
    int b = a - 1;
    while (b >= 0 && key[b] > k) {
      key[b + 1] = key[b];
      idx[b + 1] = idx[b];
      --b;
    }
    key[b + 1] = k;
    idx[b + 1] = v;
  }
}

// The other fighters on fighter i's side (allies) or the other side (enemies), in index
// order into idx, then sorted by key_of(j) (stable); returns how many.
template <class KeyOf>
ARENA_HD int sorted_fighters(const Params& p, const Derived& d, int i, bool enemies, KeyOf key_of, int* idx) {
  const int team = team_of(p, i);
  double key[MAX_FIGHTERS];
  int n = 0;
  for (int j = 0; j < d.num_fighters; ++j) {
    if (j == i || (team_of(p, j) != team) != enemies) continue;
    key[n] = key_of(j);
    idx[n] = j;
    ++n;
  }
  sort_by_key(key, idx, n);
  return n;
}

ARENA_HD void write_fighter(const Fighter& me, double hx, double hy, const Fighter& o, const Derived& d,
                            float* out) {
  out[0] = 1.0f;
  out[1] = o.alive ? 1.0f : 0.0f;
  if (!o.alive) return;  // the rest stays zero
  const double rx = o.x - me.x, ry = o.y - me.y;
  const double r = sqrt(rx * rx + ry * ry);
  const double inv_r = inverse_length(r);
  out[2] = static_cast<float>(r * INV_RANGE_SCALE);
  bearing(hx, hy, rx, ry, r, inv_r, out + 3);
  const double ov = sqrt(o.vx * o.vx + o.vy * o.vy);
  double ohx, ohy;
  unit_heading(o.vx, o.vy, ov, ohx, ohy);
  bearing(ohx, ohy, -rx, -ry, r, inv_r, out + 5);  // aspect: where I am as seen from its nose
  const double closing = r > 1e-9 ? -(rx * (o.vx - me.vx) + ry * (o.vy - me.vy)) * inv_r : 0.0;
  out[7] = static_cast<float>(closing * INV_SPEED_SCALE);
  out[8] = static_cast<float>(ov * d.inv_fighter_vt);
}

// Missile features: present, range, bearing sin/cos (from me), speed, closing speed, tof.
// `ref` is the fighter the range and closing speed are measured to.
ARENA_HD void write_missile(const Fighter& me, double hx, double hy, const Missile& m, const Fighter& ref,
                            const Derived& d, float* out) {
  out[0] = 1.0f;
  const double rx = ref.x - m.x, ry = ref.y - m.y;
  const double r = sqrt(rx * rx + ry * ry);
  const double inv_r = inverse_length(r);
  out[1] = static_cast<float>(r * INV_RANGE_SCALE);
  const double bx = m.x - me.x, by = m.y - me.y;
  const double b = sqrt(bx * bx + by * by);
  bearing(hx, hy, bx, by, b, &ref == &me ? inv_r : inverse_length(b), out + 2);
  out[4] = static_cast<float>(sqrt(m.vx * m.vx + m.vy * m.vy) * INV_SPEED_SCALE);
  const double closing = r > 1e-9 ? (rx * (m.vx - ref.vx) + ry * (m.vy - ref.vy)) * inv_r : 0.0;
  out[5] = static_cast<float>(closing * INV_SPEED_SCALE);
  out[6] = static_cast<float>(m.tof * d.inv_missile_max_time);
}

// Ego-centric observation of fighter i; all zeros once it is dead. Lists are sorted by squared
// range (the order of the ranges, without their square roots).
ARENA_HD void observe_fighter(const Params& p, const Derived& d, const State& s, int i, float* out) {
  const int dim = obs_dim(p);
  for (int c = 0; c < dim; ++c) out[c] = 0.0f;
  const Fighter& me = s.f[i];
  if (!me.alive) return;
  const double v = sqrt(me.vx * me.vx + me.vy * me.vy);
  double hx, hy;
  unit_heading(me.vx, me.vy, v, hx, hy);
  const double dist_c = sqrt(me.x * me.x + me.y * me.y);
  out[0] = 1.0f;
  out[1] = static_cast<float>(v * d.inv_fighter_vt);
  bearing(hx, hy, -me.x, -me.y, dist_c, inverse_length(dist_c), out + 2);
  out[4] = static_cast<float>((p.arena_radius_m - dist_c) * INV_RANGE_SCALE);
  out[5] = static_cast<float>(static_cast<double>(me.missiles_left) * d.inv_missiles_per_fighter);
  out[6] = static_cast<float>(p.launch_cooldown_s > 0 ? me.cooldown * d.inv_launch_cooldown : 0.0);
  out[7] = static_cast<float>(1.0 - static_cast<double>(s.steps) * d.inv_max_steps);

  // Enemies then allies, each alive ones by range, then the dead, then padding.
  float* block = out + SELF_FEATURES;
  for (int pass = 0; pass < 2; ++pass) {
    const bool enemies = pass == 0;
    int idx[MAX_FIGHTERS];
    const int n = sorted_fighters(p, d, i, enemies, [&](int j) {
      const double rx = s.f[j].x - me.x, ry = s.f[j].y - me.y;
      return s.f[j].alive ? rx * rx + ry * ry : 1e300;
    }, idx);
    for (int a = 0; a < n; ++a) write_fighter(me, hx, hy, s.f[idx[a]], d, block + a * FIGHTER_FEATURES);
    block += FIGHTER_FEATURES * (enemies ? d.max_team : d.max_team - 1);
  }

  // Missiles threatening me (by range to me), then my own in flight (by range to their target).
  const int nm = d.num_fighters * p.missiles_per_fighter;
  for (int pass = 0; pass < 2; ++pass) {
    const bool threats = pass == 0;
    double key[MAX_MISSILES];
    int idx[MAX_MISSILES];
    int n = 0;
    for (int k = 0; k < nm; ++k) {
      const Missile& m = s.m[k];
      if (!m.active || (threats ? m.target != i : m.owner != i)) continue;
      const Fighter& ref = threats ? me : s.f[m.target];
      const double rx = ref.x - m.x, ry = ref.y - m.y;
      key[n] = rx * rx + ry * ry;
      idx[n] = k;
      ++n;
    }
    sort_by_key(key, idx, n);
    const int shown = n < p.tracked_missiles ? n : p.tracked_missiles;
    for (int a = 0; a < shown; ++a) {
      const Missile& m = s.m[idx[a]];
      write_missile(me, hx, hy, m, threats ? me : s.f[m.target], d, block + a * MISSILE_FEATURES);
    }
    block += MISSILE_FEATURES * p.tracked_missiles;
  }
  write_legal(p, d, StateView{s}, i, block);
}

ARENA_HD void observe(const Params& p, const Derived& d, const State& s, float* obs) {
  const int dim = obs_dim(p);
  for (int i = 0; i < d.num_fighters; ++i) observe_fighter(p, d, s, i, obs + i * dim);
}

// ---------------------------------------------------------------- decision step

// A decision in three parts, so that the SIMD lanes path (midrange_lanes_step.h) runs the same
// first and last parts around its own physics loop.
// 1. Events cleared, actions turned into controls, launches.
template <class World>
ARENA_HD void begin_decision(const Params& p, const Derived& d, const World& w, const int32_t* actions,
                             EnvOut out, double* rudder, double* throttle) {
  const int nf = d.num_fighters;
  for (int i = 0; i < nf * NUM_EVENTS; ++i) out.events[i] = 0;
  for (int i = 0; i < nf; ++i) {
    const int32_t* a = actions + i * NUM_ACTION_DIMS;
    rudder[i] = 0.5 * (a[0] - 2);    // {-1, -.5, 0, .5, 1}
    throttle[i] = 0.5 * a[1];        // {0, .5, 1}
    if (a[2] == 1 && try_launch(p, d, w, i)) out.events[i * NUM_EVENTS + EV_FIRED] += 1;
  }
}

// 3a. Results written (rewards, terminal and truncation flags, outcome, and the episode length
// `decisions` if it ended). Returns whether the match ended.
ARENA_HD bool write_results(const Params& p, EnvOut out, int8_t outcome, int8_t reason, int32_t decisions) {
  *out.outcome = outcome;
  *out.end_reason = reason;
  const bool done = outcome != OUTCOME_NONE;
  *out.done = done ? 1 : 0;
  const int nf = p.team_size[0] + p.team_size[1];
  for (int i = 0; i < nf; ++i) {
    float r = 0.0f;
    if (outcome == OUTCOME_TEAM0 || outcome == OUTCOME_TEAM1) r = team_of(p, i) == outcome ? 1.0f : -1.0f;
    out.rewards[i] = r;
    out.terminals[i] = done && reason != END_TIME_LIMIT ? 1 : 0;
    out.truncations[i] = reason == END_TIME_LIMIT ? 1 : 0;
  }
  if (done) *out.episode_length = decisions;
  return done;
}

// 3. Results written; a finished env reports its final observation and is reset in place.
ARENA_HD void end_decision(const Params& p, const Derived& d, State& s, EnvOut out, int8_t outcome,
                           int8_t reason) {
  s.decisions += 1;
  if (write_results(p, out, outcome, reason, s.decisions)) {
    observe(p, d, s, out.final_obs);
    reset(p, s);
  }
  observe(p, d, s, out.obs);
}

// One decision: fire, then frame_skip physics steps (fewer if the match ends), then the results.
ARENA_HD void step(const Params& p, const Derived& d, State& s, const int32_t* actions, EnvOut out) {
  double rudder[MAX_FIGHTERS], throttle[MAX_FIGHTERS];
  begin_decision(p, d, StateWorld{s}, actions, out, rudder, throttle);
  int8_t outcome = OUTCOME_NONE;
  int8_t reason = END_NONE;
  for (int k = 0; k < p.frame_skip && outcome == OUTCOME_NONE; ++k) {
    outcome = physics_step(p, d, s, rudder, throttle, out.events, &reason);
  }
  end_decision(p, d, s, out, outcome, reason);
}

}  // namespace midrange
}  // namespace arena
