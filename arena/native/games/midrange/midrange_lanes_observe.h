// The midrange observation of LANES envs at once (CPU only), for the SIMD lanes path.
//
// midrange::observe_fighter computes, for every fighter, features of every other fighter and
// of the missiles in flight around it, one env at a time: about a hundred square roots and
// divisions per env and decision, each waiting for the last. Here those features are computed
// lane-wise, once per (viewer, other) fighter pair and once per missile slot for its two
// viewers (its target, which sees it as a threat, and its owner), and staged as floats. Then
// each env sorts its lists and copies the staged features into its rows. The operations are
// those of observe_fighter, in the same order, so the rows are bit for bit the same
// (tests/test_env_lanes.py).
#pragma once

#include <cstring>

#include "midrange_lanes.h"

#if defined(ARENA_HAVE_LANES)

namespace arena {
namespace midrange {

typedef float vfloat __attribute__((vector_size(4 * simd::LANES)));
typedef int32_t vmask32 __attribute__((vector_size(4 * simd::LANES)));  // a lane mask for vfloat

inline vfloat to_float(vdouble x) { return __builtin_convertvector(x, vfloat); }

// A staged feature: lane l holds env l's value.
struct Staged {
  vfloat f[MISSILE_FEATURES > FIGHTER_FEATURES ? MISSILE_FEATURES : FIGHTER_FEATURES];
};

// A list of missiles with at most this many candidate slots is ordered lane-wise (|C|^2
// vector compares); longer ones (threat lists from three or more enemies) are sorted per env.
constexpr int MAX_RANKED = 12;

// The candidate slots [k0, k1) of fighter i's list of threats (the enemies' missiles, those
// aimed at i) or of its own missiles.
inline void missile_list(const Params& p, int i, bool threats, int& k0, int& k1) {
  const int mpf = p.missiles_per_fighter;
  if (!threats) {
    k0 = i * mpf;
    k1 = (i + 1) * mpf;
  } else if (team_of(p, i) == 0) {
    k0 = p.team_size[0] * mpf;
    k1 = (p.team_size[0] + p.team_size[1]) * mpf;
  } else {
    k0 = 0;
    k1 = p.team_size[0] * mpf;
  }
}

// The features of LANES envs, ready to be copied into rows. Pairs are indexed viewer * nf + other.
struct LaneObs {
  vfloat self[MAX_FIGHTERS][SELF_FEATURES];
  Staged pair[MAX_FIGHTERS * MAX_FIGHTERS];
  vdouble pair_key[MAX_FIGHTERS * MAX_FIGHTERS];
  Staged threat[MAX_MISSILES];  // missile k as its target sees it
  Staged own[MAX_MISSILES];     // missile k as its owner sees it
  vdouble missile_key[MAX_MISSILES];
  // rank[i][list][k - k0]: the place of slot k in fighter i's list (0: threats, 1: own), or
  // tracked_missiles and more where it is not shown; shown[i][list]: bit k - k0 set where slot
  // k is shown. Only for lists of at most MAX_RANKED.
  vmask rank[MAX_FIGHTERS][2][MAX_RANKED];
  vmask shown[MAX_FIGHTERS][2];
};

// Lane-wise inverse_length: 1 / r, or 0 below 1e-9.
inline vdouble inverse_length_lanes(vdouble r) {
  const vmask same = r < 1e-9;
  return vselect(same, 0.0, 1.0 / vselect(same, 1.0, r));
}

// Lane-wise bearing(): sin and cos of vector (rx, ry) of length r seen from heading (hx, hy).
inline void bearing_lanes(vdouble hx, vdouble hy, vdouble rx, vdouble ry, vdouble r, vdouble inv_r,
                          vfloat* out) {
  const vmask same = r < 1e-9;
  out[0] = to_float(vselect(same, simd::splat(0.0), (hx * ry - hy * rx) * inv_r));
  out[1] = to_float(vselect(same, simd::splat(1.0), (hx * rx + hy * ry) * inv_r));
}

// The lane-wise part of observe(): every feature of every lane's env, staged in O.
inline void stage_observation(const Params& p, const Derived& d, const Lanes& L, LaneObs& O) {
  const int nf = d.num_fighters;
  const int nm = nf * p.missiles_per_fighter;
  vdouble hx[MAX_FIGHTERS], hy[MAX_FIGHTERS], speed[MAX_FIGHTERS];
  vdouble steps;
  for (int l = 0; l < LANES; ++l) steps[l] = static_cast<double>(L.steps[l]);
  for (int i = 0; i < nf; ++i) {
    const vdouble vx = L.fvx[i], vy = L.fvy[i];
    const vdouble v = vsqrt(vx * vx + vy * vy);
    const vmask still = v < 1e-9;
    const vdouble inv_v = 1.0 / vselect(still, 1.0, v);
    hx[i] = vselect(still, 1.0, vx * inv_v);
    hy[i] = vselect(still, simd::splat(0.0), vy * inv_v);
    speed[i] = v;
    // Own state.
    vdouble left;
    for (int l = 0; l < LANES; ++l) left[l] = L.missiles_left[i][l];
    const vdouble x = L.fx[i], y = L.fy[i];
    const vdouble dist_c = vsqrt(x * x + y * y);
    vfloat* s = O.self[i];
    s[0] = to_float(simd::splat(1.0));
    s[1] = to_float(v * d.inv_fighter_vt);
    bearing_lanes(hx[i], hy[i], -x, -y, dist_c, inverse_length_lanes(dist_c), s + 2);
    s[4] = to_float((p.arena_radius_m - dist_c) * INV_RANGE_SCALE);
    s[5] = to_float(left * d.inv_missiles_per_fighter);
    s[6] = to_float(p.launch_cooldown_s > 0 ? L.cool[i] * d.inv_launch_cooldown : simd::splat(0.0));
    s[7] = to_float(1.0 - steps * d.inv_max_steps);
  }
  // Every other fighter as fighter i sees it (write_fighter).
  for (int i = 0; i < nf; ++i) {
    for (int j = 0; j < nf; ++j) {
      if (j == i) continue;
      const vmask alive = L.alive[j];
      const vdouble rx = L.fx[j] - L.fx[i], ry = L.fy[j] - L.fy[i];
      const vdouble r2 = rx * rx + ry * ry;
      O.pair_key[i * nf + j] = vselect(alive, r2, 1e300);
      const vdouble r = vsqrt(r2);
      const vdouble inv_r = inverse_length_lanes(r);
      vfloat* out = O.pair[i * nf + j].f;
      const vfloat zero = to_float(simd::splat(0.0));
      out[0] = to_float(simd::splat(1.0));
      out[1] = to_float(vselect(alive, 1.0, 0.0));
      out[2] = to_float(r * INV_RANGE_SCALE);
      bearing_lanes(hx[i], hy[i], rx, ry, r, inv_r, out + 3);
      bearing_lanes(hx[j], hy[j], -rx, -ry, r, inv_r, out + 5);
      const vdouble closing =
          vselect(r > 1e-9, -(rx * (L.fvx[j] - L.fvx[i]) + ry * (L.fvy[j] - L.fvy[i])) * inv_r, 0.0);
      out[7] = to_float(closing * INV_SPEED_SCALE);
      out[8] = to_float(speed[j] * d.inv_fighter_vt);
      // A dead fighter shows present and not alive; the rest stays zero.
      const vmask32 dead = __builtin_convertvector(~alive, vmask32);
      for (int c = 2; c < FIGHTER_FEATURES; ++c) out[c] = dead ? zero : out[c];
    }
  }
  // Every missile in flight, as its target and as its owner see it (write_missile).
  for (int k = 0; k < nm; ++k) {
    if (!simd::any(L.active[k])) {
      O.missile_key[k] = simd::splat(0.0);  // read, never counted, by write_observation
      continue;
    }
    int e0, e1;
    enemies_of_slot(p, k, e0, e1);
    const int owner = k / p.missiles_per_fighter;
    const vmask t = L.target[k];
    const vdouble tx = at_target(L.fx, t, e0, e1), ty = at_target(L.fy, t, e0, e1);
    const vdouble tvx = at_target(L.fvx, t, e0, e1), tvy = at_target(L.fvy, t, e0, e1);
    const vdouble mx = L.mx[k], my = L.my[k], mvx = L.mvx[k], mvy = L.mvy[k];
    const vdouble rx = tx - mx, ry = ty - my;
    const vdouble r2 = rx * rx + ry * ry;
    O.missile_key[k] = r2;
    const vdouble r = vsqrt(r2);
    const vdouble inv_r = inverse_length_lanes(r);
    const vfloat range = to_float(r * INV_RANGE_SCALE);
    const vfloat spd = to_float(vsqrt(mvx * mvx + mvy * mvy) * INV_SPEED_SCALE);
    const vdouble closing = vselect(r > 1e-9, (rx * (mvx - tvx) + ry * (mvy - tvy)) * inv_r, 0.0);
    const vfloat clos = to_float(closing * INV_SPEED_SCALE);
    const vfloat tof = to_float(L.tof[k] * d.inv_missile_max_time);
    vfloat* th = O.threat[k].f;
    vfloat* ow = O.own[k].f;
    th[0] = ow[0] = to_float(simd::splat(1.0));
    th[1] = ow[1] = range;
    th[4] = ow[4] = spd;
    th[5] = ow[5] = clos;
    th[6] = ow[6] = tof;
    // Seen from its target the offset m - target is -r exactly, and of length r.
    bearing_lanes(at_target(hx, t, e0, e1), at_target(hy, t, e0, e1), mx - tx, my - ty, r, inv_r, th + 2);
    const vdouble bx = mx - L.fx[owner], by = my - L.fy[owner];
    const vdouble b = vsqrt(bx * bx + by * by);
    bearing_lanes(hx[owner], hy[owner], bx, by, b, inverse_length_lanes(b), ow + 2);
  }
  // The order of short missile lists: a slot's place is the number of listed slots before it
  // by range, ties by slot (the stable sort of observe_fighter), counted in every lane at once.
  for (int i = 0; i < nf; ++i) {
    for (int list = 0; list < 2; ++list) {
      int k0, k1;
      missile_list(p, i, list == 0, k0, k1);
      if (k1 - k0 > MAX_RANKED) continue;
      vmask listed[MAX_RANKED];
      for (int a = k0; a < k1; ++a) {
        listed[a - k0] = list == 0 ? L.active[a] & (L.target[a] == i) : L.active[a];
      }
      for (int a = k0; a < k1; ++a) {
        const vdouble key = O.missile_key[a];
        vmask before = simd::splat_int(0);  // minus the count: true lanes are -1
        for (int b = k0; b < a; ++b) before += listed[b - k0] & (O.missile_key[b] <= key);
        for (int b = a + 1; b < k1; ++b) before += listed[b - k0] & (O.missile_key[b] < key);
        O.rank[i][list][a - k0] = listed[a - k0] ? -before : simd::splat_int(p.tracked_missiles);
      }
      vmask shown = simd::splat_int(0);
      for (int a = k0; a < k1; ++a) {
        shown |= (O.rank[i][list][a - k0] < p.tracked_missiles) & simd::splat_int(int64_t{1} << (a - k0));
      }
      O.shown[i][list] = shown;
    }
  }
}

// Copies the first `count` staged features of lane l into out.
inline void copy_lane(const Staged& s, int l, int count, float* out) {
  for (int c = 0; c < count; ++c) out[c] = s.f[c][l];
}

// The rows of lane l's env (observe() for it), from the staged features.
inline void write_observation(const Params& p, const Derived& d, const Lanes& L, const LaneObs& O, int l,
                              float* rows) {
  const int nf = d.num_fighters;
  const int dim = obs_dim(p);
  std::memset(rows, 0, sizeof(float) * static_cast<size_t>(dim) * nf);
  for (int i = 0; i < nf; ++i) {
    if (!L.alive[i][l]) continue;  // a dead fighter's row is all zeros
    float* out = rows + i * dim;
    for (int c = 0; c < SELF_FEATURES; ++c) out[c] = O.self[i][c][l];
    float* block = out + SELF_FEATURES;
    for (int pass = 0; pass < 2; ++pass) {
      const bool enemies = pass == 0;
      int idx[MAX_FIGHTERS];
      const int n = sorted_fighters(p, d, i, enemies, [&](int j) { return O.pair_key[i * nf + j][l]; }, idx);
      for (int a = 0; a < n; ++a) copy_lane(O.pair[i * nf + idx[a]], l, FIGHTER_FEATURES, block + a * FIGHTER_FEATURES);
      block += FIGHTER_FEATURES * (enemies ? d.max_team : d.max_team - 1);
    }
    // Threats: the enemies' missiles in flight at me. Own: mine in flight. Each by range to
    // its target. Short lists are placed by their lane-wise ranks: the shown slots are marked
    // lane-wise (a bit each), then visited one by one. Longer ones are gathered without branching
    // on which slots are in flight, and sorted.
    for (int pass = 0; pass < 2; ++pass) {
      const bool threats = pass == 0;
      const Staged* staged = threats ? O.threat : O.own;
      int k0, k1;
      missile_list(p, i, threats, k0, k1);
      if (k1 - k0 <= MAX_RANKED) {
        const vmask* rank = O.rank[i][pass];
        for (uint64_t shown = static_cast<uint64_t>(O.shown[i][pass][l]); shown != 0; shown &= shown - 1) {
          const int a = __builtin_ctzll(shown);
          copy_lane(staged[k0 + a], l, MISSILE_FEATURES, block + rank[a][l] * MISSILE_FEATURES);
        }
        block += MISSILE_FEATURES * p.tracked_missiles;
        continue;
      }
      double key[MAX_MISSILES];
      int idx[MAX_MISSILES];
      int n = 0;
      for (int k = k0; k < k1; ++k) {
        key[n] = O.missile_key[k][l];
        idx[n] = k;
        n += L.active[k][l] && (!threats || L.target[k][l] == i);
      }
      sort_by_key(key, idx, n);
      const int shown = n < p.tracked_missiles ? n : p.tracked_missiles;
      for (int a = 0; a < shown; ++a) {
        copy_lane(staged[idx[a]], l, MISSILE_FEATURES, block + a * MISSILE_FEATURES);
      }
      block += MISSILE_FEATURES * p.tracked_missiles;
    }
    write_legal(p, d, LaneView{L, l}, i, block);
  }
}

}  // namespace midrange
}  // namespace arena

#endif  // ARENA_HAVE_LANES
