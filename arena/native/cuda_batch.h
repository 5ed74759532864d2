// The CUDA twin of the thread pool: states live on the GPU and one thread steps one env
// with the very same G::step as the CPU path. Outputs are copied back into the numpy buffers.
#pragma once

#include <cstdint>

#include "games.h"

namespace arena {

template <class G>
class CudaBatch {
 public:
  using State = typename G::State;
  // Throws std::runtime_error naming the CUDA error when no usable GPU is present.
  CudaBatch(const typename G::Ctx& ctx, int num_envs);
  ~CudaBatch();
  CudaBatch(const CudaBatch&) = delete;
  CudaBatch& operator=(const CudaBatch&) = delete;

  void set_ctx(const typename G::Ctx& ctx) { ctx_ = ctx; }
  void upload(const State* host_states);
  void download(State* host_states);
  void step(const int32_t* host_actions, int begin, int end, const BatchBuffers& host_out);

 private:
  typename G::Ctx ctx_;
  int num_envs_;
  State* states_ = nullptr;
  int32_t* actions_ = nullptr;
  BatchBuffers dev_{};
};

extern template class CudaBatch<MidrangeGame>;
extern template class CudaBatch<RpswGame>;

}  // namespace arena
