// How a game steps several envs at once on SIMD lanes: the primary template (one env per call) that
// a game's own header specialises (games/midrange/game.h), and batched.h reads.
#pragma once

namespace arena {

// Games that can step several envs at once on SIMD lanes say how many (width), how a group
// of them is kept (Group), how an env enters and leaves its lane (put, get), and how a group
// steps.
template <class G>
struct LaneStepper {
  static constexpr int width = 1;
  struct Group {};
  static void put(const typename G::Ctx&, const typename G::State&, Group&, int) {}
  static void get(const typename G::Ctx&, const Group&, int, typename G::State&) {}
};

}  // namespace arena
