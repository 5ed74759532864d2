// Rock-paper-scissors-well: the tiny two-player game for fast trainer and league tests.
// A match is `rounds` simultaneous throws; the player with more round wins takes the match.
// Well beats rock and scissors and loses to paper, so rock is dominated and the uniform
// random bot is exploitable: a learner that stops throwing rock and favours paper/well
// beats it. The observation shows both last throws, so a patterned bot is beatable too.
#pragma once

#include "common.h"

namespace arena {
namespace rpsw {

constexpr int NUM_THROWS = 4;  // rock, paper, scissors, well
constexpr int NUM_ACTION_DIMS = 1;
constexpr int NUM_EVENTS = 3;
enum Event { EV_ROUND_WON = 0, EV_ROUND_LOST = 1, EV_ROUND_DRAWN = 2 };
constexpr int OBS_DIM = 2 * NUM_THROWS + 3;

struct Params {
  int rounds = 9;
};

struct State {
  int32_t round;
  int32_t score;  // rounds won by player 0 minus rounds won by player 1
  int32_t last[2];  // last throw of each player, -1 before the first round
  Rng rng;  // unused by the rules; kept so every game has a seeded generator
};

// +1 when throw a beats throw b, -1 when b beats a, 0 otherwise.
ARENA_HD int payoff(int a, int b) {
  // rows: rock, paper, scissors, well
  const int table[NUM_THROWS][NUM_THROWS] = {
      {0, -1, 1, -1}, {1, 0, -1, 1}, {-1, 1, 0, -1}, {1, -1, 1, 0}};
  return table[a][b];
}

ARENA_HD void reset(const Params&, State& s) {
  s.round = 0;
  s.score = 0;
  s.last[0] = -1;
  s.last[1] = -1;
}

// Observation of player i: opponent's last throw (one-hot), own last throw (one-hot),
// fraction of the match played, own score lead / rounds, first-round flag.
ARENA_HD void observe(const Params& p, const State& s, float* obs) {
  for (int i = 0; i < 2; ++i) {
    float* o = obs + i * OBS_DIM;
    for (int c = 0; c < OBS_DIM; ++c) o[c] = 0.0f;
    const int opp = s.last[1 - i], own = s.last[i];
    if (opp >= 0) o[opp] = 1.0f;
    if (own >= 0) o[NUM_THROWS + own] = 1.0f;
    o[2 * NUM_THROWS] = static_cast<float>(s.round) / p.rounds;
    o[2 * NUM_THROWS + 1] = static_cast<float>(i == 0 ? s.score : -s.score) / p.rounds;
    o[2 * NUM_THROWS + 2] = s.round == 0 ? 1.0f : 0.0f;
  }
}

ARENA_HD void step(const Params& p, State& s, const int32_t* actions, EnvOut out) {
  const int a = actions[0], b = actions[1];
  const int r = payoff(a, b);
  s.score += r;
  s.last[0] = a;
  s.last[1] = b;
  s.round += 1;
  for (int i = 0; i < 2 * NUM_EVENTS; ++i) out.events[i] = 0;
  const int ev0 = r > 0 ? EV_ROUND_WON : (r < 0 ? EV_ROUND_LOST : EV_ROUND_DRAWN);
  const int ev1 = r > 0 ? EV_ROUND_LOST : (r < 0 ? EV_ROUND_WON : EV_ROUND_DRAWN);
  out.events[ev0] = 1;
  out.events[NUM_EVENTS + ev1] = 1;
  const bool done = s.round >= p.rounds;
  write_rounds_result(out, done, s.score, s.round);
  if (done) {
    observe(p, s, out.final_obs);
    reset(p, s);
  }
  observe(p, s, out.obs);
}

}  // namespace rpsw

// Rpsw's face to the batched runner (games.h lists it).
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
  static constexpr ParamField<Params> params[] = {
      ParamField<Params>::integer("rounds", &Params::rounds, 1.0, 10000.0, "throws per match")};
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

}  // namespace arena
