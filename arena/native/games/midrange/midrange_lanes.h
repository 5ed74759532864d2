// The midrange physics of LANES envs at once, one env per SIMD lane (CPU only).
//
// The CPU core keeps its envs in groups of LANES consecutive ones, each group's state in
// structure-of-arrays lanes (Lanes) from one decision to the next, so that no step gathers or
// scatters it (midrange_lanes_step.h); physics_step_lanes steps them with the shared equations
// of midrange.h (integrate, pn_command, may_pass_within). Control flow that differs between envs
// becomes lane masks: a missile slot is stepped where it is active, a fighter where it is
// alive, an env while its match runs. The rare per-lane events (a hit, leaving the arena, the
// end of a match) are settled lane by lane in the order the scalar physics_step settles them,
// so the results are bit for bit those of midrange::step (tests/test_env_lanes.py checks it).
#pragma once

#include "midrange.h"

#if defined(ARENA_HAVE_LANES)

namespace arena {
namespace midrange {

constexpr int LANES = simd::LANES;

// The state of LANES envs, one per lane, kept between decisions by the CPU core (a group of
// consecutive envs); only the first num_fighters / num_missiles entries are used. put_lane and
// get_lane convert one lane from and to a State, the form everything else reads.
struct Lanes {
  vdouble fx[MAX_FIGHTERS], fy[MAX_FIGHTERS], fvx[MAX_FIGHTERS], fvy[MAX_FIGHTERS], cool[MAX_FIGHTERS];
  vmask alive[MAX_FIGHTERS];
  vdouble mx[MAX_MISSILES], my[MAX_MISSILES], mvx[MAX_MISSILES], mvy[MAX_MISSILES], tof[MAX_MISSILES];
  vmask active[MAX_MISSILES], target[MAX_MISSILES];
  vmask steps;  // physics steps this episode
  int32_t missiles_left[MAX_FIGHTERS][LANES];
  int32_t owner[MAX_MISSILES][LANES];
  uint64_t rng[LANES];
  int32_t decisions[LANES];
  // Set for each decision.
  vdouble rudder[MAX_FIGHTERS], thrust[MAX_FIGHTERS];
  vmask ammo[MAX_FIGHTERS];  // missiles left (fixed within a decision)
  vmask running;             // lanes whose match is on in this decision
  bool far[MAX_MISSILES];    // slot k cannot hit in this decision (mark_far_missiles)
  int8_t outcome[LANES], reason[LANES];
  int32_t* events[LANES];
};

// Lane l of group L := env state s.
inline void put_lane(const Params& p, const Derived& d, const State& s, Lanes& L, int l) {
  for (int i = 0; i < d.num_fighters; ++i) {
    const Fighter& f = s.f[i];
    L.fx[i][l] = f.x;
    L.fy[i][l] = f.y;
    L.fvx[i][l] = f.vx;
    L.fvy[i][l] = f.vy;
    L.cool[i][l] = f.cooldown;
    L.alive[i][l] = f.alive ? -1 : 0;
    L.missiles_left[i][l] = f.missiles_left;
  }
  for (int k = 0; k < d.num_fighters * p.missiles_per_fighter; ++k) {
    const Missile& m = s.m[k];
    L.mx[k][l] = m.x;
    L.my[k][l] = m.y;
    L.mvx[k][l] = m.vx;
    L.mvy[k][l] = m.vy;
    L.tof[k][l] = m.tof;
    L.active[k][l] = m.active ? -1 : 0;
    L.target[k][l] = m.target;
    L.owner[k][l] = m.owner;
  }
  L.steps[l] = s.steps;
  L.rng[l] = s.rng.state;
  L.decisions[l] = s.decisions;
}

// Env state s := lane l of group L (the entities the game does not use are left as they are).
inline void get_lane(const Params& p, const Derived& d, const Lanes& L, int l, State& s) {
  for (int i = 0; i < d.num_fighters; ++i) {
    s.f[i] = Fighter{L.fx[i][l], L.fy[i][l], L.fvx[i][l], L.fvy[i][l], L.cool[i][l], L.missiles_left[i][l],
                     L.alive[i][l] ? 1 : 0};
  }
  for (int k = 0; k < d.num_fighters * p.missiles_per_fighter; ++k) {
    s.m[k] = Missile{L.mx[k][l], L.my[k][l], L.mvx[k][l], L.mvy[k][l], L.tof[k][l], L.owner[k][l],
                     static_cast<int32_t>(L.target[k][l]), L.active[k][l] ? 1 : 0};
  }
  s.steps = static_cast<int32_t>(L.steps[l]);
  s.rng.state = L.rng[l];
  s.decisions = L.decisions[l];
}

// Lane l of a group as a launch reads and writes it (StateAccess's accessors, midrange.h); over
// const Lanes (LaneView) it only reads, for the observation's legal-action flags.
template <class LanesT>
struct LaneAccess {
  LanesT& L;
  int l;
  bool alive(int i) const { return L.alive[i][l] != 0; }
  int32_t missiles_left(int i) const { return L.missiles_left[i][l]; }
  double cooldown(int i) const { return L.cool[i][l]; }
  double x(int i) const { return L.fx[i][l]; }
  double y(int i) const { return L.fy[i][l]; }
  double vx(int i) const { return L.fvx[i][l]; }
  double vy(int i) const { return L.fvy[i][l]; }
  void launch(int slot, double x, double y, double vx, double vy, int owner, int target, double cooldown) const {
    L.mx[slot][l] = x;
    L.my[slot][l] = y;
    L.mvx[slot][l] = vx;
    L.mvy[slot][l] = vy;
    L.tof[slot][l] = 0.0;
    L.owner[slot][l] = owner;
    L.target[slot][l] = target;
    L.active[slot][l] = -1;
    L.missiles_left[owner][l] -= 1;
    L.cool[owner][l] = cooldown;
  }
};
using LaneWorld = LaneAccess<Lanes>;
using LaneView = LaneAccess<const Lanes>;

// The value of fighter array `a` at each lane's target among the enemies [e0, e1) of a slot.
inline vdouble at_target(const vdouble* a, vmask target, int e0, int e1) {
  vdouble v = a[e0];
  for (int e = e0 + 1; e < e1; ++e) v = vselect(target == e, a[e], v);
  return v;
}

inline vmask at_target(const vmask* a, vmask target, int e0, int e1) {
  vmask v = a[e0];
  for (int e = e0 + 1; e < e1; ++e) v = target == e ? a[e] : v;
  return v;
}

// The enemies of missile slot k: the fighters of the team its owner is not on.
inline void enemies_of_slot(const Params& p, int k, int& e0, int& e1) {
  const int owner = k / p.missiles_per_fighter;
  if (team_of(p, owner) == 0) {
    e0 = p.team_size[0];
    e1 = p.team_size[0] + p.team_size[1];
  } else {
    e0 = 0;
    e1 = p.team_size[0];
  }
}

// Marks the missile slots that cannot hit anything in this decision: in every running lane
// where the slot is in flight, its target is farther than the two can close in frame_skip
// physics steps. Within a step a body's speed grows by at most (thrust + max_g g) dt (the drag
// opposes the velocity and cannot reverse it while C v dt <= 1/2, C the largest drag
// coefficient; the turn acceleration is capped at max_g g), so in n steps it covers at most
// n dt (v0 + n dt (thrust + max_g g)). The margins cover rounding. The physics skips the hit
// test of marked slots; it changes no result, only spares the work while missiles are far.
inline void mark_far_missiles(const Params& p, const Derived& d, Lanes& L) {
  const int nm = d.num_fighters * p.missiles_per_fighter;
  const double n_dt = p.frame_skip * p.dt;
  const double m_growth = n_dt * (d.m_thrust + p.missile_max_g * p.g);
  const double f_growth = n_dt * (d.f_thrust + p.fighter_max_g * p.g);
  const double m_drag = (d.m_cd0 + d.m_k * d.m_inv_rmin * d.m_inv_rmin) * p.dt;
  const double f_drag = (d.f_cd0 + d.f_k * d.f_inv_rmin * d.f_inv_rmin) * p.dt;
  for (int k = 0; k < nm; ++k) {
    const vmask m = L.active[k] & L.running;
    if (!simd::any(m)) {
      L.far[k] = true;
      continue;
    }
    int e0, e1;
    enemies_of_slot(p, k, e0, e1);
    const vmask t = L.target[k];
    const vdouble tvx = at_target(L.fvx, t, e0, e1), tvy = at_target(L.fvy, t, e0, e1);
    const vdouble vm = vsqrt(L.mvx[k] * L.mvx[k] + L.mvy[k] * L.mvy[k]) + m_growth;
    const vdouble vt = vsqrt(tvx * tvx + tvy * tvy) + f_growth;
    const vdouble reach = (vm + vt) * (n_dt * 1.001) + (p.hit_radius_m + 1.0);
    const vdouble dx = at_target(L.fx, t, e0, e1) - L.mx[k], dy = at_target(L.fy, t, e0, e1) - L.my[k];
    const vmask apart = (vm * m_drag <= 0.5) & (vt * f_drag <= 0.5) & (dx * dx + dy * dy > reach * reach);
    L.far[k] = !simd::any(m & ~apart);
  }
}

// One physics step of every running lane: midrange::physics_step, lane-wise.
inline void physics_step_lanes(const Params& p, const Derived& d, Lanes& L) {
  const int nf = d.num_fighters;
  const int nm = nf * p.missiles_per_fighter;
  const vmask live = L.running;
  const double hit2 = p.hit_radius_m * p.hit_radius_m;
  vdouble fx0[MAX_FIGHTERS], fy0[MAX_FIGHTERS], u_m[MAX_MISSILES];
  vmask alive0[MAX_FIGHTERS];
  bool slot_on[MAX_MISSILES];
  // Guidance from the state at the start of the step.
  for (int k = 0; k < nm; ++k) {
    slot_on[k] = simd::any(L.active[k] & live);
    if (!slot_on[k]) continue;
    int e0, e1;
    enemies_of_slot(p, k, e0, e1);
    const vmask t = L.target[k];
    u_m[k] = pn_command(L.mx[k], L.my[k], L.mvx[k], L.mvy[k], at_target(L.fx, t, e0, e1),
                        at_target(L.fy, t, e0, e1), at_target(L.fvx, t, e0, e1),
                        at_target(L.fvy, t, e0, e1), p.nav_gain);
  }
  for (int i = 0; i < nf; ++i) {
    fx0[i] = L.fx[i];
    fy0[i] = L.fy[i];
    alive0[i] = L.alive[i];
    const vmask m = L.alive[i] & live;
    if (!simd::any(m)) continue;
    vdouble x = L.fx[i], y = L.fy[i], vx = L.fvx[i], vy = L.fvy[i];
    integrate(x, y, vx, vy, L.rudder[i], L.thrust[i], d.f_cd0, d.f_k, d.f_inv_rmin, d.f_turn_cap, p.dt);
    L.fx[i] = vselect(m, x, L.fx[i]);
    L.fy[i] = vselect(m, y, L.fy[i]);
    L.fvx[i] = vselect(m, vx, L.fvx[i]);
    L.fvy[i] = vselect(m, vy, L.fvy[i]);
    const vdouble c = L.cool[i] - p.dt;
    L.cool[i] = vselect(m, vselect(c > 0.0, c, 0.0), L.cool[i]);
  }
  const double min_speed2 = p.missile_min_speed * p.missile_min_speed;
  for (int k = 0; k < nm; ++k) {
    if (!slot_on[k]) continue;
    const vmask m = L.active[k] & live;
    const vdouble mx0 = L.mx[k], my0 = L.my[k];
    vdouble x = mx0, y = my0, vx = L.mvx[k], vy = L.mvy[k];
    const vdouble thrust = vselect(L.tof[k] < d.burn_end_s, d.m_thrust, 0.0);
    integrate(x, y, vx, vy, u_m[k], thrust, d.m_cd0, d.m_k, d.m_inv_rmin, d.m_turn_cap, p.dt);
    L.mx[k] = vselect(m, x, mx0);
    L.my[k] = vselect(m, y, my0);
    L.mvx[k] = vselect(m, vx, L.mvx[k]);
    L.mvy[k] = vselect(m, vy, L.mvy[k]);
    L.tof[k] = vselect(m, L.tof[k] + p.dt, L.tof[k]);
    // Swept hit test on a target alive at the start of the step (none where the slot is far
    // from its target in every lane); the exact test runs only in the lanes the cheap bound
    // lets through.
    vmask hit = simd::splat_int(0);
    int e0, e1;
    enemies_of_slot(p, k, e0, e1);
    const vmask t = L.target[k];
    vdouble tx0, ty0, tx1, ty1;
    vmask near = hit;
    if (!L.far[k]) {
      tx0 = at_target(fx0, t, e0, e1);
      ty0 = at_target(fy0, t, e0, e1);
      tx1 = at_target(L.fx, t, e0, e1);
      ty1 = at_target(L.fy, t, e0, e1);
      near = m & at_target(alive0, t, e0, e1) & may_pass_within(mx0, my0, L.mx[k], L.my[k], tx0, ty0, tx1, ty1, hit2);
    }
    if (simd::any(near)) {
      const int owner = k / p.missiles_per_fighter;
      for (int l = 0; l < LANES; ++l) {
        if (!near[l] || swept_distance2(mx0[l], my0[l], L.mx[k][l], L.my[k][l], tx0[l], ty0[l], tx1[l],
                                        ty1[l]) > hit2) {
          continue;
        }
        const int tl = static_cast<int>(t[l]);
        int32_t* ev = L.events[l];
        hit[l] = -1;
        ev[owner * NUM_EVENTS + EV_HITS] += 1;
        ev[tl * NUM_EVENTS + EV_WAS_HIT] += 1;
        if (L.alive[tl][l]) {
          L.alive[tl][l] = 0;
          ev[owner * NUM_EVENTS + EV_KILLS] += 1;
          ev[tl * NUM_EVENTS + EV_DIED] += 1;
        }
      }
    }
    const vdouble v2 = L.mvx[k] * L.mvx[k] + L.mvy[k] * L.mvy[k];
    const vmask burnt_out = L.tof[k] >= d.burn_end_s;
    const vmask expired = (L.tof[k] >= d.max_time_end_s) | (burnt_out & (v2 < min_speed2));
    const vmask missed = m & expired & ~hit;
    if (simd::any(missed)) {
      const int owner = k / p.missiles_per_fighter;
      for (int l = 0; l < LANES; ++l) {
        if (!missed[l]) continue;
        L.events[l][owner * NUM_EVENTS + EV_MISSED] += 1;
        L.events[l][static_cast<int>(t[l]) * NUM_EVENTS + EV_EVADED] += 1;
      }
    }
    L.active[k] = L.active[k] & ~hit & ~missed;
  }
  const double r2max = p.arena_radius_m * p.arena_radius_m;
  for (int i = 0; i < nf; ++i) {
    const vmask out = L.alive[i] & live & (L.fx[i] * L.fx[i] + L.fy[i] * L.fy[i] > r2max);
    if (!simd::any(out)) continue;
    for (int l = 0; l < LANES; ++l) {
      if (!out[l]) continue;
      L.alive[i][l] = 0;
      L.events[l][i * NUM_EVENTS + EV_DIED] += 1;
      L.events[l][i * NUM_EVENTS + EV_LEFT_ARENA] += 1;
    }
  }
  // A missile whose target is gone has nothing to guide on: it is removed.
  vmask any_missile = simd::splat_int(0);
  for (int k = 0; k < nm; ++k) {
    if (!slot_on[k]) continue;  // no lane had it in flight, and none can have launched since
    int e0, e1;
    enemies_of_slot(p, k, e0, e1);
    const vmask gone = L.active[k] & live & ~at_target(L.alive, L.target[k], e0, e1);
    L.active[k] = L.active[k] & ~gone;
    any_missile |= L.active[k];
  }
  L.steps -= live;  // live lanes are -1

  // The end of a match, settled lane by lane where the cheap lane test says it may have come.
  vmask alive_team[2] = {simd::splat_int(0), simd::splat_int(0)};
  vmask any_ammo = simd::splat_int(0);
  for (int i = 0; i < nf; ++i) {
    alive_team[team_of(p, i)] -= L.alive[i];
    any_ammo |= L.alive[i] & L.ammo[i];
  }
  const vmask maybe_over = live & ((alive_team[0] == 0) | (alive_team[1] == 0) |
                                   ~(any_ammo | any_missile) | (L.steps >= d.max_steps));
  if (!simd::any(maybe_over)) return;
  for (int l = 0; l < LANES; ++l) {
    if (!maybe_over[l]) continue;
    const int counts[2] = {static_cast<int>(alive_team[0][l]), static_cast<int>(alive_team[1][l])};
    int8_t reason = END_NONE;
    const int8_t outcome = match_outcome(d, counts, any_ammo[l] != 0, any_missile[l] != 0,
                                         static_cast<int>(L.steps[l]), &reason);
    if (outcome == OUTCOME_NONE) continue;
    L.outcome[l] = outcome;
    L.reason[l] = reason;
    L.running[l] = 0;
  }
}

// Asks the caches for the line holding *c. In inline assembly because GCC 12 at -O3 deletes
// __builtin_prefetch from these loops.
inline void prefetch_line(const char* c) {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("prefetcht0 %0" : : "m"(*c));
#else
  __builtin_prefetch(c);
#endif
}

// Asks the caches for `bytes` bytes from `first` (each line they touch).
inline void prefetch_bytes(const void* first, int bytes) {
  const char* c = static_cast<const char*>(first);
  for (int o = 0; o < bytes; o += 64) prefetch_line(c + o);
  if (bytes > 0) prefetch_line(c + bytes - 1);  // the last line, where `first` is not line-aligned
}

// Asks the caches for part `part` of `parts` of what a decision of group G reads: the used
// entries of each of its arrays (a group is far larger than them, and the groups of a batch far
// larger than the caches). Part j holds arrays j, j + parts, ...
inline void prefetch_group(const Params& p, const Derived& d, const Lanes& G, int part, int parts) {
  const int fighters = static_cast<int>(sizeof(vdouble)) * d.num_fighters;
  const int missiles = fighters * p.missiles_per_fighter;
  const struct {
    const void* first;
    int bytes;
  } arrays[] = {{G.mx, missiles}, {G.my, missiles}, {G.mvx, missiles}, {G.mvy, missiles},
                {G.tof, missiles}, {G.active, missiles}, {G.target, missiles}, {G.fx, fighters},
                {G.fy, fighters}, {G.fvx, fighters}, {G.fvy, fighters}, {G.cool, fighters},
                {G.alive, fighters}, {G.missiles_left, static_cast<int>(sizeof(G.missiles_left[0])) * d.num_fighters},
                {&G.steps, static_cast<int>(sizeof(G.steps))}};
  const int n = static_cast<int>(sizeof(arrays) / sizeof(arrays[0]));
  for (int a = part; a < n; a += parts) prefetch_bytes(arrays[a].first, arrays[a].bytes);
}

}  // namespace midrange
}  // namespace arena

#endif  // ARENA_HAVE_LANES
