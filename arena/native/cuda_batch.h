// The CUDA twin of the thread pool: states live on the GPU and one thread steps one env
// with the very same G::step as the CPU path. Outputs are copied back into the numpy buffers.
// Every device buffer starts zero-filled, as the numpy ones do, and reset() re-uploads the host's
// cleared outputs, so rows a step did not finish read what the CPU path gives for them.
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
  // Copies every output buffer of the host (numpy) into the device's: after a reset cleared the
  // host's, the rows the kernel writes only at a match end (episode length, final observation)
  // must not come back from the device with values from before the reset.
  void upload_outputs(const BatchBuffers& host_out);
  // Steps envs [begin, end) and copies their rows of every output buffer back to `host_out`.
  void step(const int32_t* host_actions, int begin, int end, const BatchBuffers& host_out);

 private:
  void free_all();

  typename G::Ctx ctx_;
  int num_envs_;
  State* states_ = nullptr;
  int32_t* actions_ = nullptr;
  BatchBuffers dev_{};
};

extern template class CudaBatch<MidrangeGame>;
extern template class CudaBatch<RpswGame>;

}  // namespace arena
