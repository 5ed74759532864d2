// The CUDA twin of the thread pool: states live on the GPU and one thread steps one env
// with the very same G::step as the CPU path.
//
// Outputs stay on the device. A step writes the device output buffers (device_buffers()) and copies
// nothing back; sync_host() copies the rows of a range of envs into the host (numpy) buffers when
// something on the host asks for them. Those host buffers are page-locked with cudaHostRegister on
// the first sync_host() (a pinned mirror is made only when one is asked for), so the copies are
// cudaMemcpyAsync followed by one stream synchronisation.
//
// Stream: every kernel launch and every copy runs on the legacy default stream (stream 0 of a build
// without --default-stream per-thread). torch's default CUDA stream is that same legacy stream, so
// torch work queued on it after a step (reading obs through __cuda_array_interface__) is ordered
// after the step's kernel, and a step queued after torch wrote actions reads the finished actions.
// Work on a non-default torch stream must be ordered by its caller (torch.cuda.synchronize(), or
// an event); the __cuda_array_interface__ objects say stream 1 (the legacy default stream) so that
// consumers that honour the field order themselves after it.
//
// Every device buffer starts zero-filled, as the numpy ones do, and reset() re-uploads the host's
// cleared outputs (all but final_obs, which a reset leaves as it is on the CPU path too), so rows a
// step did not finish read what the CPU path gives for them.
#pragma once

#include <cstdint>
#include <vector>

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
  // Copies the host's (numpy) output buffers, all but final_obs, into the device's: after a reset
  // cleared the host's, the rows the kernel writes only at a match end (episode length) must not
  // read on the device with values from before the reset. final_obs is left alone: a reset does
  // not change it on the CPU path either, and the host's copy may be older than the device's.
  void upload_outputs(const BatchBuffers& host_out);
  // Copies the host's observations (every row) to the device: after set_state_bytes or
  // set_world_state re-observed on the host.
  void upload_obs(const float* host_obs);
  // Steps envs [begin, end) with actions on the host (every row of the batch; this range is
  // copied up). Outputs stay on the device.
  void step(const int32_t* host_actions, int begin, int end);
  // Steps envs [begin, end) with actions already on the device: `device_actions` points to int32
  // [rows of the batch, action_dims], C order, in device memory. Their values are not checked
  // here (arena.VectorEnv.step_envs_tensor checks them). Nothing is copied.
  void step_device(const int32_t* device_actions, int begin, int end);
  // Copies the output rows of envs [begin, end) from the device into `host_out`, which must stay the
  // same buffers for the life of this batch (they are page-locked on the first call).
  void sync_host(int begin, int end, const BatchBuffers& host_out);
  // The device output buffers, laid out as the host's.
  const BatchBuffers& device_buffers() const { return dev_; }

 private:
  void free_all();
  void launch(const int32_t* device_actions, int begin, int end);
  void pin_host(const BatchBuffers& host_out);

  typename G::Ctx ctx_;
  int num_envs_;
  State* states_ = nullptr;
  int32_t* actions_ = nullptr;
  BatchBuffers dev_{};
  bool pinned_ = false;
  std::vector<void*> registered_;  // host ranges page-locked by pin_host, unregistered at the end
};

#define ARENA_CUDA_EXTERN(G, Name) extern template class CudaBatch<G>;
ARENA_GAMES(ARENA_CUDA_EXTERN)
#undef ARENA_CUDA_EXTERN

}  // namespace arena
