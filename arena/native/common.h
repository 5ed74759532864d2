// Shared host/device helpers for arena's games: the seeded generator and the
// per-env output slice every game writes into. No globals, nothing stateful.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define ARENA_HD __host__ __device__ inline
#else
#define ARENA_HD inline
#endif

namespace arena {

// splitmix64: tiny, fast, and trivially reimplemented by the NumPy reference.
ARENA_HD uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

struct Rng {
  uint64_t state;
};

ARENA_HD uint64_t rng_next(Rng& r) {
  r.state += 0x9E3779B97F4A7C15ULL;
  return mix64(r.state);
}

// Uniform double in [0, 1) from the top 53 bits.
ARENA_HD double rng_uniform(Rng& r) {
  return static_cast<double>(rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

// The generator state of env `env` for a run seeded with `seed`: independent of
// how envs are split over threads, so results are identical for any thread count.
ARENA_HD uint64_t env_seed(uint64_t seed, uint64_t env) {
  return mix64(seed + 0x9E3779B97F4A7C15ULL * (env + 1));
}

// How a match ended, per env. Values are part of the Python API (arena.envs.Outcome).
enum Outcome : int8_t { OUTCOME_NONE = -1, OUTCOME_TEAM0 = 0, OUTCOME_TEAM1 = 1, OUTCOME_DRAW = 2 };

// Why a match ended (arena.envs.EndReason).
enum EndReason : int8_t {
  END_NONE = 0,
  END_ELIMINATION = 1,   // one team has no fighters left
  END_MUTUAL = 2,        // both teams destroyed in the same physics step
  END_NO_MISSILES = 3,   // nobody can shoot any more
  END_TIME_LIMIT = 4,    // truncation
  END_ROUNDS = 5,        // fixed-length games (rpsw)
};

// Where one env writes its results for one decision. Row-major slices of the
// numpy buffers owned by the Python side; rows of this env only.
struct EnvOut {
  float* obs;            // [agents, obs_dim]
  float* final_obs;      // [agents, obs_dim], written only when the episode ended
  float* rewards;        // [agents]
  uint8_t* terminals;    // [agents]
  uint8_t* truncations;  // [agents]
  int32_t* events;       // [agents, num_events]
  int8_t* outcome;       // this env's outcome (OUTCOME_NONE while running)
  int8_t* end_reason;
  int32_t* episode_length;  // decisions, written when the episode ended
  uint8_t* done;            // 1 when the episode ended at this decision
};

// The results of one decision of a 1v1 game that ends after a number of rounds (rpsw, goofspiel),
// won by the player ahead (lead: player 0's score minus player 1's): the outcome, the end reason,
// the done flag, the +1/-1 outcome reward and the flags of both rows, and the episode length when it
// ended. The game then writes final_obs, resets and observes.
ARENA_HD void write_rounds_result(EnvOut out, bool done, int32_t lead, int32_t rounds) {
  int8_t outcome = OUTCOME_NONE;
  if (done) outcome = lead > 0 ? OUTCOME_TEAM0 : (lead < 0 ? OUTCOME_TEAM1 : OUTCOME_DRAW);
  *out.outcome = outcome;
  *out.end_reason = done ? END_ROUNDS : END_NONE;
  *out.done = done ? 1 : 0;
  for (int i = 0; i < 2; ++i) {
    float rew = 0.0f;
    if (outcome == OUTCOME_TEAM0 || outcome == OUTCOME_TEAM1) rew = outcome == i ? 1.0f : -1.0f;
    out.rewards[i] = rew;
    out.terminals[i] = done ? 1 : 0;
    out.truncations[i] = 0;
  }
  if (done) *out.episode_length = rounds;
}

// A named integer limit of a game (Game::limits), exported by the core as <GAME>_<NAME>, e.g.
// GOOFSPIEL_MAX_CARDS: the Python side reads limits there, never from a copy.
struct IntLimit {
  const char* name;
  int value;
};

// A parameter of a game, declared once: games list theirs (Game::params); the core binds each as a
// read-write attribute of the game's Params class and exports the table (Params.TABLE: name, kind,
// default, range, doc, choices; the default is the Params field's own initialiser), from which the
// Python side builds the game's parameter table (arena.games.spec.core_param_table).
template <class P>
struct ParamField {
  const char* name;
  int P::*int_field;      // an integer (or a choice) ...
  double P::*real_field;  // ... or a real number
  double low, high;       // the closed allowed range (unused for a choice)
  const char* doc;
  const char* choices;  // a choice: the names of its values, "a|b|c" (the field holds the index)

  static constexpr ParamField integer(const char* n, int P::*f, double lo, double hi, const char* d) {
    return ParamField{n, f, nullptr, lo, hi, d, nullptr};
  }
  static constexpr ParamField real(const char* n, double P::*f, double lo, double hi, const char* d) {
    return ParamField{n, nullptr, f, lo, hi, d, nullptr};
  }
  static constexpr ParamField choice(const char* n, int P::*f, const char* names, const char* d) {
    return ParamField{n, f, nullptr, 0.0, 0.0, d, names};
  }
};

ARENA_HD double clampd(double x, double lo, double hi) { return x < lo ? lo : (x > hi ? hi : x); }

// Scalar forms of the lane operations (simd.h has the vector forms). Step code written with
// them runs one env per call here (CPU scalar path, CUDA kernel) and W envs per call on SIMD
// lanes, with the same IEEE operations in the same order, so every path gives the same bits.
ARENA_HD double vselect(bool m, double a, double b) { return m ? a : b; }
ARENA_HD double vsqrt(double x) { return sqrt(x); }
ARENA_HD double vabs(double x) { return fabs(x); }
ARENA_HD double vclamp(double x, double lo, double hi) { return clampd(x, lo, hi); }

}  // namespace arena

// The vector forms, for the CPU lanes path (GCC and Clang vector extensions).
#if !defined(__CUDACC__) && defined(__GNUC__)
#define ARENA_HAVE_LANES 1
#include "simd.h"
#endif
