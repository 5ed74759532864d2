// N envs of one game, stepped together on a thread pool (or, in a CUDA build, a GPU).
// Pure C++: the buffers are raw pointers into memory that numpy owns (see bindings.cpp).
#pragma once

#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "games.h"
#include "lanes.h"
#include "thread_pool.h"

#ifdef ARENA_WITH_CUDA
#include "cuda_batch.h"
#endif

namespace arena {

template <class G>
class Batched {
 public:
  using Ctx = typename G::Ctx;
  using State = typename G::State;

  // simd: step groups of envs on SIMD lanes where the game and the build allow it (the
  // results are the same bits either way; false keeps one env per call, as on CUDA).
  Batched(const Ctx& ctx, int num_envs, int num_threads, const std::string& device, bool simd = true)
      : ctx_(ctx), num_envs_(num_envs), states_(num_envs), pool_(num_threads),
        lanes_(simd && device == "cpu" ? LaneStepper<G>::width : 1) {
    // On SIMD lanes the envs live in groups of lanes_ consecutive ones, in lane layout; states_
    // is then a copy made on demand (states()), written back by upload() and dropped by
    // release_states().
    if (lanes_ > 1) groups_.resize((num_envs + lanes_ - 1) / lanes_);
    if (device == "cuda") {
#ifdef ARENA_WITH_CUDA
      cuda_ = std::make_unique<CudaBatch<G>>(ctx, num_envs);
#else
      throw std::runtime_error(
          "device='cuda' was asked for, but this arena build has no CUDA support; rebuild with "
          "ARENA_CUDA=ON pip install . (needs nvcc), or use device='cpu'");
#endif
    } else if (device != "cpu") {
      throw std::invalid_argument("device must be 'cpu' or 'cuda', got '" + device + "'");
    }
  }

  const Ctx& ctx() const { return ctx_; }
  // New parameters for every env (matches in flight continue under them; spawn settings apply
  // from each env's next reset). The caller guarantees the layout (agents, obs_dim) is unchanged
  // and that no step is running.
  void set_ctx(const Ctx& ctx) {
    ctx_ = ctx;
#ifdef ARENA_WITH_CUDA
    if (cuda_) cuda_->set_ctx(ctx);
#endif
  }
  int num_envs() const { return num_envs_; }
  int agents() const { return G::agents(ctx_); }
  int obs_dim() const { return G::obs_dim(ctx_); }
  int num_threads() const { return pool_.size(); }
  // Envs stepped per call on the CPU: the SIMD width, or 1.
  int lanes() const { return on_cuda() ? 1 : lanes_; }
  bool on_cuda() const {
#ifdef ARENA_WITH_CUDA
    return cuda_ != nullptr;
#else
    return false;
#endif
  }

  // Reseeds env e with seeds[e] and starts a new match in it.
  void reset(const uint64_t* seeds, const BatchBuffers& out) {
    states_.resize(num_envs_);
    for (int e = 0; e < num_envs_; ++e) {
      states_[e].rng.state = mix64(seeds[e]);
      G::reset(ctx_, states_[e]);
      EnvOut o = env_slice(out, e, agents(), obs_dim(), G::num_events);
      G::observe(ctx_, states_[e], o.obs);
      clear(o);
    }
    upload();
#ifdef ARENA_WITH_CUDA
    if (cuda_) cuda_->upload_outputs(out);  // the device's copies of the outputs cleared too (not final_obs)
#endif
    release_states();
  }

  // One decision for envs [begin, end). `actions` holds every row; only this range is read.
  // Calls from several threads are serialised: the pool runs one parallel-for at a time (two at
  // once never finish), and on SIMD lanes two ranges may share a group.
  void step(const int32_t* actions, int begin, int end, const BatchBuffers& out) {
    std::lock_guard<std::mutex> lock(step_mutex_);
#ifdef ARENA_WITH_CUDA
    if (cuda_) {  // outputs stay on the device: sync_host() copies them into `out`
      cuda_->step(actions, begin, end);
      return;
    }
#endif
    const int agents_ = agents(), dim = obs_dim();
    if constexpr (LaneStepper<G>::width > 1) {
      if (lanes_ > 1) {
        // Group g holds envs [g * lanes_, (g + 1) * lanes_); its lanes in [begin, end) step.
        // Which thread takes a group changes no result.
        const int g0 = begin / lanes_, g1 = (end + lanes_ - 1) / lanes_;
        pool_.parallel_for(g0, g1, [&](int g) {
          const int first = g * lanes_;
          const int lo = begin > first ? begin - first : 0;
          const int hi = end - first < lanes_ ? end - first : lanes_;
          // The next group is most often this thread's next one: it is fetched meanwhile.
          LaneStepper<G>::step(
              ctx_, groups_[g], lo, hi,
              [&](int l) { return actions + static_cast<long>(first + l) * agents_ * G::action_dims; },
              [&](int l) { return env_slice(out, first + l, agents_, dim, G::num_events); },
              g + 1 < g1 ? &groups_[g + 1] : nullptr);
        });
        return;
      }
    }
    pool_.parallel_for(begin, end, [&](int e) {
      G::step(ctx_, states_[e], actions + static_cast<long>(e) * agents_ * G::action_dims,
              env_slice(out, e, agents_, dim, G::num_events));
    });
  }

  // On a CUDA batch: steps envs [begin, end) with int32 actions [rows, action_dims] already in
  // device memory (see CudaBatch::step_device). Throws on a CPU batch.
  void step_device(const int32_t* device_actions, int begin, int end) {
    std::lock_guard<std::mutex> lock(step_mutex_);
#ifdef ARENA_WITH_CUDA
    if (cuda_) {
      cuda_->step_device(device_actions, begin, end);
      return;
    }
#endif
    (void)device_actions, (void)begin, (void)end;
    throw std::runtime_error(not_on_cuda("step_device (device actions)"));
  }

  // Copies the outputs of envs [begin, end) from the device into `out` (the host buffers); nothing
  // to do on the CPU, where `out` is where the envs write.
  void sync_host(int begin, int end, const BatchBuffers& out) {
#ifdef ARENA_WITH_CUDA
    if (cuda_) {
      std::lock_guard<std::mutex> lock(step_mutex_);
      cuda_->sync_host(begin, end, out);
    }
#endif
    (void)begin, (void)end, (void)out;
  }

  // The device output buffers of a CUDA batch; throws on a CPU batch.
  BatchBuffers device_buffers() const {
#ifdef ARENA_WITH_CUDA
    if (cuda_) return cuda_->device_buffers();
#endif
    throw std::runtime_error(not_on_cuda("device buffers"));
  }

  static std::string not_on_cuda(const std::string& what) {
    return what + ": only a batch made with device='cuda' has them; this batch runs on the CPU, where the "
                  "outputs are the numpy buffers (obs, rewards, ...) and actions go to step()";
  }

  // Host copies of the states, for world_state() and tests; upload() after editing, and
  // release_states() when done with them.
  std::vector<State>& states() {
    states_.resize(num_envs_);
    download();
    return states_;
  }
  // On SIMD lanes, frees the host copies (the groups hold the envs); elsewhere they are the envs.
  void release_states() {
    if (lanes_ > 1) std::vector<State>().swap(states_);
  }
  void upload() {
#ifdef ARENA_WITH_CUDA
    if (cuda_) cuda_->upload(states_.data());
#endif
    if (lanes_ > 1) {
      // The lanes past the last env repeat env 0 of their group: they compute and never step.
      for (size_t g = 0; g < groups_.size(); ++g) {
        for (int l = 0; l < lanes_; ++l) {
          const int e = static_cast<int>(g) * lanes_ + l;
          LaneStepper<G>::put(ctx_, states_[e < num_envs_ ? e : static_cast<int>(g) * lanes_], groups_[g], l);
        }
      }
    }
  }
  // Observes every env into out.obs (and, on a CUDA batch, uploads it: the device's obs too).
  void observe_all(const BatchBuffers& out) {
    for (int e = 0; e < num_envs_; ++e) {
      G::observe(ctx_, states_[e], env_slice(out, e, agents(), obs_dim(), G::num_events).obs);
    }
#ifdef ARENA_WITH_CUDA
    if (cuda_) cuda_->upload_obs(out.obs);
#endif
  }

 private:
  void download() {
#ifdef ARENA_WITH_CUDA
    if (cuda_) cuda_->download(states_.data());
#endif
    if (lanes_ > 1) {
      for (int e = 0; e < num_envs_; ++e) LaneStepper<G>::get(ctx_, groups_[e / lanes_], e % lanes_, states_[e]);
    }
  }
  void clear(EnvOut& o) {
    for (int i = 0; i < agents(); ++i) {
      o.rewards[i] = 0.0f;
      o.terminals[i] = 0;
      o.truncations[i] = 0;
      for (int k = 0; k < G::num_events; ++k) o.events[i * G::num_events + k] = 0;
    }
    *o.outcome = OUTCOME_NONE;
    *o.end_reason = END_NONE;
    *o.episode_length = 0;
    *o.done = 0;
  }

  Ctx ctx_;
  int num_envs_;
  std::vector<State> states_;
  ThreadPool pool_;
  int lanes_;
  std::vector<typename LaneStepper<G>::Group> groups_;  // envs on SIMD lanes (lanes_ > 1)
  std::mutex step_mutex_;
#ifdef ARENA_WITH_CUDA
  std::unique_ptr<CudaBatch<G>> cuda_;
#endif
};

}  // namespace arena
