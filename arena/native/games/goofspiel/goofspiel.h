// Goofspiel: the simultaneous-move bidding card game (docs/games.md).
// Each player holds the cards 1..N; a deck of N prize cards is turned up one at a time, both
// players bid a card from their hand at once, the higher bid takes the prize's points (a tie
// discards it) and both bids are spent. After N rounds the player with more points wins.
// Action d (0-based) bids the card worth d + 1; only cards still in the hand are legal, and the
// observation's first N values are that hand (the legal-action mask). The prize deck is turned
// up highest first (`descending`) or drawn uniformly from the cards left (`random`, one draw per
// round from the env's generator, as OpenSpiel's chance node does).
#pragma once

#include "common.h"

namespace arena {
namespace goofspiel {

constexpr int MAX_CARDS = 30;  // a hand is a bitmask; obs and actions are sized by num_cards
constexpr int NUM_ACTION_DIMS = 1;
constexpr int NUM_EVENTS = 3;
enum Event { EV_PRIZE_WON = 0, EV_PRIZE_LOST = 1, EV_PRIZE_TIED = 2 };
enum PointsOrder : int32_t { ORDER_DESCENDING = 0, ORDER_RANDOM = 1 };

struct Params {
  int num_cards = 13;
  int points_order = ORDER_DESCENDING;
};

struct State {
  int32_t round;        // bids made so far, 0..num_cards
  int32_t prize;        // the prize card up for bidding (0-based value), -1 after the last round
  uint32_t hand[2];     // bit c: card c + 1 is still in player i's hand
  uint32_t prizes_left; // bit c: prize card c + 1 is still in the deck (not yet turned up)
  int32_t points[2];    // points won so far
  Rng rng;
};

ARENA_HD int obs_dim(const Params& p) { return 4 * p.num_cards + 3; }
ARENA_HD int total_points(const Params& p) { return p.num_cards * (p.num_cards + 1) / 2; }

ARENA_HD int popcount32(uint32_t x) {
  int n = 0;
  for (; x; x &= x - 1) ++n;
  return n;
}

// Turns up the next prize card: the highest left, or the k-th lowest left with k uniform.
ARENA_HD void draw_prize(const Params& p, State& s) {
  if (s.prizes_left == 0) {
    s.prize = -1;
    return;
  }
  int card = -1;
  if (p.points_order == ORDER_RANDOM) {
    const int left = popcount32(s.prizes_left);
    int k = static_cast<int>(rng_uniform(s.rng) * left);
    if (k >= left) k = left - 1;
    for (int c = 0; c < p.num_cards; ++c) {
      if (!(s.prizes_left >> c & 1u)) continue;
      if (k-- == 0) {
        card = c;
        break;
      }
    }
  } else {
    for (int c = p.num_cards - 1; c >= 0; --c) {
      if (s.prizes_left >> c & 1u) {
        card = c;
        break;
      }
    }
  }
  s.prize = card;
  s.prizes_left &= ~(1u << card);
}

ARENA_HD void reset(const Params& p, State& s) {
  const uint32_t all = p.num_cards >= 32 ? 0xFFFFFFFFu : ((1u << p.num_cards) - 1u);
  s.round = 0;
  s.hand[0] = s.hand[1] = all;
  s.prizes_left = all;
  s.points[0] = s.points[1] = 0;
  draw_prize(p, s);
}

// Observation of player i (N = num_cards): [0, N) own hand, [N, 2N) the opponent's hand,
// [2N, 3N) the prize up (one-hot; zeros once the game is over), [3N, 4N) the prizes still in the
// deck, then own points and the opponent's / total points, and rounds played / N.
ARENA_HD void observe(const Params& p, const State& s, float* obs) {
  const int n = p.num_cards, dim = obs_dim(p);
  const float total = static_cast<float>(total_points(p));
  for (int i = 0; i < 2; ++i) {
    float* o = obs + i * dim;
    for (int c = 0; c < dim; ++c) o[c] = 0.0f;
    for (int c = 0; c < n; ++c) {
      o[c] = static_cast<float>(s.hand[i] >> c & 1u);
      o[n + c] = static_cast<float>(s.hand[1 - i] >> c & 1u);
      o[3 * n + c] = static_cast<float>(s.prizes_left >> c & 1u);
    }
    if (s.prize >= 0) o[2 * n + s.prize] = 1.0f;
    o[4 * n] = static_cast<float>(s.points[i]) / total;
    o[4 * n + 1] = static_cast<float>(s.points[1 - i]) / total;
    o[4 * n + 2] = static_cast<float>(s.round) / n;
  }
}

// Whether player i may bid action a (its card is still in the hand), read from the observation
// row the player acts on: what the Python boundary checks before a step.
ARENA_HD bool legal(const Params& p, const float* obs_row, const int32_t* action) {
  return action[0] >= 0 && action[0] < p.num_cards && obs_row[action[0]] > 0.5f;
}

// The parameters' allowed ranges (the Python spec checks them first, with the same bounds).
inline const char* check(const Params& p) {
  if (p.num_cards < 1 || p.num_cards > MAX_CARDS) return "num_cards is out of range: allowed 1..30";
  if (p.points_order != ORDER_DESCENDING && p.points_order != ORDER_RANDOM)
    return "points_order is out of range: allowed 0 (descending) or 1 (random)";
  return nullptr;
}

ARENA_HD void step(const Params& p, State& s, const int32_t* actions, EnvOut out) {
  const int b0 = actions[0], b1 = actions[1];  // legal by the boundary's check
  s.hand[0] &= ~(1u << b0);
  s.hand[1] &= ~(1u << b1);
  const int value = s.prize + 1;
  for (int i = 0; i < 2 * NUM_EVENTS; ++i) out.events[i] = 0;
  if (b0 > b1) {
    s.points[0] += value;
    out.events[EV_PRIZE_WON] = 1;
    out.events[NUM_EVENTS + EV_PRIZE_LOST] = 1;
  } else if (b1 > b0) {
    s.points[1] += value;
    out.events[EV_PRIZE_LOST] = 1;
    out.events[NUM_EVENTS + EV_PRIZE_WON] = 1;
  } else {
    out.events[EV_PRIZE_TIED] = 1;
    out.events[NUM_EVENTS + EV_PRIZE_TIED] = 1;
  }
  s.round += 1;
  const bool done = s.round >= p.num_cards;
  if (done) {
    s.prize = -1;
  } else {
    draw_prize(p, s);
  }
  write_rounds_result(out, done, s.points[0] - s.points[1], s.round);
  if (done) {
    observe(p, s, out.final_obs);
    reset(p, s);
  }
  observe(p, s, out.obs);
}

}  // namespace goofspiel

struct GoofspielGame {
  using Params = goofspiel::Params;
  using State = goofspiel::State;
  struct Ctx {
    Params p;
  };
  static constexpr const char* name = "goofspiel";
  static constexpr int action_dims = goofspiel::NUM_ACTION_DIMS;
  static constexpr int num_events = goofspiel::NUM_EVENTS;
  static constexpr bool has_action_mask = true;
  static constexpr IntLimit limits[] = {{"MAX_CARDS", goofspiel::MAX_CARDS}};
  using P = ParamField<Params>;
  static constexpr P params[] = {
      P::integer("num_cards", &Params::num_cards, 1.0, goofspiel::MAX_CARDS, "cards in each hand and in the prize deck"),
      P::choice("points_order", &Params::points_order, "descending|random",
                "prize cards turned up highest first, or at random")};
  static Ctx make_ctx(const Params& p) { return Ctx{p}; }
  ARENA_HD static int agents(const Ctx&) { return 2; }
  ARENA_HD static int obs_dim(const Ctx& c) { return goofspiel::obs_dim(c.p); }
  ARENA_HD static int action_n(const Ctx& c, int) { return c.p.num_cards; }
  ARENA_HD static void reset(const Ctx& c, State& s) { goofspiel::reset(c.p, s); }
  ARENA_HD static void observe(const Ctx& c, const State& s, float* obs) { goofspiel::observe(c.p, s, obs); }
  ARENA_HD static void step(const Ctx& c, State& s, const int32_t* actions, EnvOut out) {
    goofspiel::step(c.p, s, actions, out);
  }
  static bool legal(const Ctx& c, const float* obs_row, const int32_t* action) {
    return goofspiel::legal(c.p, obs_row, action);
  }
};

}  // namespace arena
