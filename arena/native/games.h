// The uniform face every game shows to the batched runner (CPU pool and CUDA kernel):
// a context (parameters plus derived constants), a per-env state, and reset/step/observe.
#pragma once

#include "common.h"
#include "goofspiel.h"
#include "midrange.h"
#include "rpsw.h"

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

struct RpswGame {
  using Params = rpsw::Params;
  using State = rpsw::State;
  struct Ctx {
    Params p;
  };
  static constexpr const char* name = "rpsw";
  static constexpr int action_dims = rpsw::NUM_ACTION_DIMS;
  static constexpr int num_events = rpsw::NUM_EVENTS;
  static constexpr IntLimit limits[] = {{"NUM_THROWS", rpsw::NUM_THROWS}, {"OBS_DIM", rpsw::OBS_DIM}};
  static Ctx make_ctx(const Params& p) { return Ctx{p}; }
  ARENA_HD static int agents(const Ctx&) { return 2; }
  ARENA_HD static int obs_dim(const Ctx&) { return rpsw::OBS_DIM; }
  ARENA_HD static int action_n(const Ctx&, int) { return rpsw::NUM_THROWS; }
  ARENA_HD static void reset(const Ctx& c, State& s) { rpsw::reset(c.p, s); }
  ARENA_HD static void observe(const Ctx& c, const State& s, float* obs) { rpsw::observe(c.p, s, obs); }
  ARENA_HD static void step(const Ctx& c, State& s, const int32_t* actions, EnvOut out) {
    rpsw::step(c.p, s, actions, out);
  }
};

// Every game of the core, one line each: X(<its Game struct>, <its Python class prefix>). The
// bindings, the CUDA instantiations and the core's exported game list are generated from it; the
// Python side (arena/games/) has one spec per name.
#define ARENA_GAMES(X)           \
  X(MidrangeGame, Midrange)      \
  X(RpswGame, Rpsw)              \
  X(GoofspielGame, Goofspiel)

// The slice of the batch buffers that belongs to env e.
struct BatchBuffers {
  float* obs;
  float* final_obs;
  float* rewards;
  uint8_t* terminals;
  uint8_t* truncations;
  int32_t* events;
  int8_t* outcome;
  int8_t* end_reason;
  int32_t* episode_length;
  uint8_t* done;
};

ARENA_HD EnvOut env_slice(const BatchBuffers& b, int e, int agents, int obs_dim, int num_events) {
  const long row = static_cast<long>(e) * agents;
  return EnvOut{b.obs + row * obs_dim,      b.final_obs + row * obs_dim, b.rewards + row,
                b.terminals + row,          b.truncations + row,         b.events + row * num_events,
                b.outcome + e,              b.end_reason + e,            b.episode_length + e,
                b.done + e};
}

}  // namespace arena
