// The uniform face every game shows to the batched runner (CPU pool and CUDA kernel):
// a context (parameters plus derived constants), a per-env state, and reset/step/observe.
#pragma once

#include "common.h"
// Each game lives in its room, games/<name>/ (its header(s), its binding.h): one include each.
#include "games/goofspiel/goofspiel.h"
#include "games/midrange/game.h"
#include "games/rpsw/rpsw.h"

namespace arena {

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
