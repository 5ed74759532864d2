// Kernels that run the shared host/device step code (games.h) one env per GPU thread.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "cuda_batch.h"

namespace arena {
namespace {

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    throw std::runtime_error(std::string("arena CUDA: ") + what + " failed: " + cudaGetErrorString(err));
  }
}

template <class G>
__global__ void step_kernel(typename G::Ctx ctx, typename G::State* states, const int32_t* actions,
                            BatchBuffers out, int begin, int end) {
  const int e = begin + blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= end) return;
  const int agents = G::agents(ctx);
  G::step(ctx, states[e], actions + static_cast<long>(e) * agents * G::action_dims,
          env_slice(out, e, agents, G::obs_dim(ctx), G::num_events));
}

// A device buffer of `count` T, zero-filled: rows the kernel has not written (the final observation
// and episode length of an env that never finished) read as the CPU path's zero-filled buffers do.
template <class T>
T* device_alloc(size_t count) {
  void* p = nullptr;
  const size_t bytes = count * sizeof(T) + 1;  // never 0 bytes
  check(cudaMalloc(&p, bytes), "cudaMalloc");
  const cudaError_t err = cudaMemset(p, 0, bytes);
  if (err != cudaSuccess) {
    cudaFree(p);
    check(err, "cudaMemset");
  }
  return static_cast<T*>(p);
}

template <class T>
void copy_rows(T* dst, const T* src, long first, long count, cudaMemcpyKind kind) {
  if (count > 0) check(cudaMemcpy(dst + first, src + first, count * sizeof(T), kind), "cudaMemcpy");
}

// Asynchronous on the legacy default stream (the caller synchronises it once for all copies).
template <class T>
void copy_rows_async(T* dst, const T* src, long first, long count, cudaMemcpyKind kind) {
  if (count > 0) {
    check(cudaMemcpyAsync(dst + first, src + first, count * sizeof(T), kind, cudaStreamLegacy),
          "cudaMemcpyAsync");
  }
}

}  // namespace

template <class G>
CudaBatch<G>::CudaBatch(const typename G::Ctx& ctx, int num_envs) : ctx_(ctx), num_envs_(num_envs) {
  int devices = 0;
  const cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess || devices == 0) {
    throw std::runtime_error(std::string("device='cuda' was asked for, but no CUDA GPU is usable here (") +
                             (err != cudaSuccess ? cudaGetErrorString(err) : "0 devices") +
                             "); use device='cpu'");
  }
  const long rows = static_cast<long>(num_envs) * G::agents(ctx);
  const long dim = G::obs_dim(ctx);
  try {
    states_ = device_alloc<State>(num_envs);
    actions_ = device_alloc<int32_t>(rows * G::action_dims);
    dev_.obs = device_alloc<float>(rows * dim);
    dev_.final_obs = device_alloc<float>(rows * dim);
    dev_.rewards = device_alloc<float>(rows);
    dev_.terminals = device_alloc<uint8_t>(rows);
    dev_.truncations = device_alloc<uint8_t>(rows);
    dev_.events = device_alloc<int32_t>(rows * G::num_events);
    dev_.outcome = device_alloc<int8_t>(num_envs);
    dev_.end_reason = device_alloc<int8_t>(num_envs);
    dev_.episode_length = device_alloc<int32_t>(num_envs);
    dev_.done = device_alloc<uint8_t>(num_envs);
  } catch (...) {
    free_all();  // the destructor does not run for a constructor that throws
    throw;
  }
}

template <class G>
void CudaBatch<G>::free_all() {
  void* ptrs[] = {states_,         actions_,        dev_.obs,     dev_.final_obs, dev_.rewards,
                  dev_.terminals,  dev_.truncations, dev_.events, dev_.outcome,   dev_.end_reason,
                  dev_.episode_length, dev_.done};
  for (void* p : ptrs) cudaFree(p);  // cudaFree(nullptr) does nothing
  states_ = nullptr;
  actions_ = nullptr;
  dev_ = BatchBuffers{};
}

template <class G>
CudaBatch<G>::~CudaBatch() {
  cudaDeviceSynchronize();  // no copy into a host buffer may outlive its registration
  for (void* p : registered_) cudaHostUnregister(p);
  free_all();
}

template <class G>
void CudaBatch<G>::upload_outputs(const BatchBuffers& h) {
  const long rows = static_cast<long>(num_envs_) * G::agents(ctx_);
  const long dim = G::obs_dim(ctx_), ev = G::num_events;
  const auto h2d = cudaMemcpyHostToDevice;
  copy_rows(dev_.obs, h.obs, 0, rows * dim, h2d);
  copy_rows(dev_.rewards, h.rewards, 0, rows, h2d);
  copy_rows(dev_.terminals, h.terminals, 0, rows, h2d);
  copy_rows(dev_.truncations, h.truncations, 0, rows, h2d);
  copy_rows(dev_.events, h.events, 0, rows * ev, h2d);
  copy_rows(dev_.outcome, h.outcome, 0, num_envs_, h2d);
  copy_rows(dev_.end_reason, h.end_reason, 0, num_envs_, h2d);
  copy_rows(dev_.episode_length, h.episode_length, 0, num_envs_, h2d);
  copy_rows(dev_.done, h.done, 0, num_envs_, h2d);
}

template <class G>
void CudaBatch<G>::upload(const State* host_states) {
  check(cudaMemcpy(states_, host_states, num_envs_ * sizeof(State), cudaMemcpyHostToDevice), "upload");
}

template <class G>
void CudaBatch<G>::download(State* host_states) {
  check(cudaMemcpy(host_states, states_, num_envs_ * sizeof(State), cudaMemcpyDeviceToHost), "download");
}

template <class G>
void CudaBatch<G>::upload_obs(const float* host_obs) {
  const long rows = static_cast<long>(num_envs_) * G::agents(ctx_);
  copy_rows(dev_.obs, host_obs, 0, rows * G::obs_dim(ctx_), cudaMemcpyHostToDevice);
}

template <class G>
void CudaBatch<G>::launch(const int32_t* device_actions, int begin, int end) {
  const int threads = 128;
  const int blocks = (end - begin + threads - 1) / threads;
  step_kernel<G><<<blocks, threads, 0, cudaStreamLegacy>>>(ctx_, states_, device_actions, dev_, begin, end);
  check(cudaGetLastError(), "step kernel launch");
}

template <class G>
void CudaBatch<G>::step(const int32_t* host_actions, int begin, int end) {
  if (end <= begin) return;
  const long agents = G::agents(ctx_);
  const long r0 = begin * agents, rn = (end - begin) * agents;
  // From pageable memory the copy is staged: the host buffer may change once this returns.
  copy_rows_async(actions_, host_actions, r0 * G::action_dims, rn * G::action_dims, cudaMemcpyHostToDevice);
  launch(actions_, begin, end);
}

template <class G>
void CudaBatch<G>::step_device(const int32_t* device_actions, int begin, int end) {
  if (end <= begin) return;
  launch(device_actions, begin, end);
}

// Page-locks every host output buffer once. Where the driver refuses (memory it cannot lock, or a
// range already registered by someone else), that buffer is copied from pageable memory instead:
// slower, same bytes.
template <class G>
void CudaBatch<G>::pin_host(const BatchBuffers& h) {
  pinned_ = true;
  const long rows = static_cast<long>(num_envs_) * G::agents(ctx_);
  const long dim = G::obs_dim(ctx_), ev = G::num_events;
  const struct {
    void* ptr;
    size_t bytes;
  } ranges[] = {{h.obs, rows * dim * sizeof(float)},
                {h.final_obs, rows * dim * sizeof(float)},
                {h.rewards, rows * sizeof(float)},
                {h.terminals, rows * sizeof(uint8_t)},
                {h.truncations, rows * sizeof(uint8_t)},
                {h.events, rows * ev * sizeof(int32_t)},
                {h.outcome, num_envs_ * sizeof(int8_t)},
                {h.end_reason, num_envs_ * sizeof(int8_t)},
                {h.episode_length, num_envs_ * sizeof(int32_t)},
                {h.done, num_envs_ * sizeof(uint8_t)}};
  for (const auto& r : ranges) {
    if (r.bytes == 0) continue;
    if (cudaHostRegister(r.ptr, r.bytes, cudaHostRegisterDefault) == cudaSuccess) {
      registered_.push_back(r.ptr);
    } else {
      cudaGetLastError();  // clears the error: this buffer stays pageable
    }
  }
}

template <class G>
void CudaBatch<G>::sync_host(int begin, int end, const BatchBuffers& h) {
  if (end <= begin) return;
  if (!pinned_) pin_host(h);
  const long agents = G::agents(ctx_), dim = G::obs_dim(ctx_), ev = G::num_events;
  const long r0 = begin * agents, rn = (end - begin) * agents;
  const auto d2h = cudaMemcpyDeviceToHost;
  copy_rows_async(h.obs, dev_.obs, r0 * dim, rn * dim, d2h);
  copy_rows_async(h.final_obs, dev_.final_obs, r0 * dim, rn * dim, d2h);
  copy_rows_async(h.rewards, dev_.rewards, r0, rn, d2h);
  copy_rows_async(h.terminals, dev_.terminals, r0, rn, d2h);
  copy_rows_async(h.truncations, dev_.truncations, r0, rn, d2h);
  copy_rows_async(h.events, dev_.events, r0 * ev, rn * ev, d2h);
  copy_rows_async(h.outcome, dev_.outcome, begin, end - begin, d2h);
  copy_rows_async(h.end_reason, dev_.end_reason, begin, end - begin, d2h);
  copy_rows_async(h.episode_length, dev_.episode_length, begin, end - begin, d2h);
  copy_rows_async(h.done, dev_.done, begin, end - begin, d2h);
  check(cudaStreamSynchronize(cudaStreamLegacy), "sync_host (a step kernel may have failed)");
}

#define ARENA_CUDA_INSTANTIATE(G, Name) template class CudaBatch<G>;
ARENA_GAMES(ARENA_CUDA_INSTANTIATE)
#undef ARENA_CUDA_INSTANTIATE

}  // namespace arena
