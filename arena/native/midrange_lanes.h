// The midrange physics of LANES envs at once, one env per SIMD lane (CPU only).
//
// The group's fighters and missiles live in structure-of-arrays lanes (Lanes) during a
// decision (midrange_lanes_step.h); physics_step_lanes steps them with the shared equations of
// midrange.h (integrate, pn_command, may_pass_within). Control flow that differs between envs
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

// The moving parts of LANES envs; only the first num_fighters / num_missiles entries are used.
struct Lanes {
  vdouble fx[MAX_FIGHTERS], fy[MAX_FIGHTERS], fvx[MAX_FIGHTERS], fvy[MAX_FIGHTERS], cool[MAX_FIGHTERS];
  vdouble rudder[MAX_FIGHTERS], thrust[MAX_FIGHTERS];
  vmask alive[MAX_FIGHTERS], ammo[MAX_FIGHTERS];  // ammo: missiles left (fixed within a decision)
  vdouble mx[MAX_MISSILES], my[MAX_MISSILES], mvx[MAX_MISSILES], mvy[MAX_MISSILES], tof[MAX_MISSILES];
  vmask active[MAX_MISSILES], target[MAX_MISSILES];
  vmask running;  // lanes whose match is still on in this decision
  vmask steps;    // physics steps this episode
  int8_t outcome[LANES], reason[LANES];
  int32_t* events[LANES];
};

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
    // Swept hit test on a target alive at the start of the step; the exact test runs only in
    // the lanes the cheap bound lets through.
    int e0, e1;
    enemies_of_slot(p, k, e0, e1);
    const vmask t = L.target[k];
    const vdouble tx0 = at_target(fx0, t, e0, e1), ty0 = at_target(fy0, t, e0, e1);
    const vdouble tx1 = at_target(L.fx, t, e0, e1), ty1 = at_target(L.fy, t, e0, e1);
    const vmask near = m & at_target(alive0, t, e0, e1) &
                       may_pass_within(mx0, my0, L.mx[k], L.my[k], tx0, ty0, tx1, ty1, hit2);
    vmask hit = simd::splat_int(0);
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
    L.active[k] = L.active[k] & ~hit & ~(m & expired);
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

// Asks the caches for the parts of a State that a decision reads: its fighters, the missile
// slots in use and the counters. Each State lies on pages of its own, where the hardware
// prefetcher does not follow, and a batch of them is far larger than the caches.
inline void prefetch_state(const Params& p, const Derived& d, const State& s) {
  prefetch_bytes(s.f, static_cast<int>(sizeof(Fighter)) * d.num_fighters);
  prefetch_bytes(s.m, static_cast<int>(sizeof(Missile)) * d.num_fighters * p.missiles_per_fighter);
  prefetch_bytes(&s.rng, static_cast<int>(sizeof(State) - offsetof(State, rng)));
}

}  // namespace midrange
}  // namespace arena

#endif  // ARENA_HAVE_LANES
