// A fixed pool of worker threads that runs one parallel-for at a time. The caller thread
// works too, so num_threads == 1 starts no thread at all.
//
// Work is handed out in small chunks from a shared counter rather than split once into equal
// parts: envs differ in cost (missiles in flight, resets) and a thread may be descheduled for
// a while, so fixed halves leave a core idle at the end of a call. Between calls a worker
// spins for a moment before it sleeps, because waking a sleeping thread costs tens of
// microseconds, a few percent of a step of thousands of envs. Which thread runs which index
// never changes a result: every index is independent.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace arena {

// One beat of a spin-wait: tells the core it may give its resources to the other hardware thread.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads) : num_threads_(num_threads < 1 ? 1 : num_threads) {
    for (int t = 1; t < num_threads_; ++t) workers_.emplace_back([this] { worker(); });
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_.store(true);
    }
    start_.notify_all();
    for (auto& w : workers_) w.join();
  }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return num_threads_; }

  // Calls body(i) once for every i in [begin, end), on all threads of the pool.
  void parallel_for(int begin, int end, const std::function<void(int)>& body) {
    const int n = end - begin;
    if (n <= 0) return;
    if (num_threads_ == 1 || n == 1) {
      for (int i = begin; i < end; ++i) body(i);
      return;
    }
    // About 64 chunks per thread: a thread finishes at most one short chunk after the
    // others, and the counter is still touched rarely.
    const int chunks = 64 * num_threads_;
    body_ = &body;
    end_ = end;
    chunk_ = n / chunks > 1 ? n / chunks : 1;
    next_.store(begin, std::memory_order_relaxed);
    pending_.store(num_threads_ - 1, std::memory_order_relaxed);
    {
      // Under the lock, so that a worker about to sleep cannot miss the new generation.
      std::lock_guard<std::mutex> lock(mutex_);
      generation_.fetch_add(1, std::memory_order_release);
    }
    start_.notify_all();
    run_chunks();
    // The workers finish within about one chunk of the caller.
    while (pending_.load(std::memory_order_acquire) != 0) cpu_relax();
  }

 private:
  void run_chunks() {
    for (;;) {
      const int lo = next_.fetch_add(chunk_, std::memory_order_relaxed);
      if (lo >= end_) return;
      const int hi = lo + chunk_ < end_ ? lo + chunk_ : end_;
      for (int i = lo; i < hi; ++i) (*body_)(i);
    }
  }

  // Waits for a generation other than `seen`: spinning first, then asleep.
  unsigned long next_generation(unsigned long seen) {
    const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(SPIN_US);
    for (int k = 0;; ++k) {
      const unsigned long g = generation_.load(std::memory_order_acquire);
      if (g != seen || stop_.load(std::memory_order_relaxed)) return g;
      if ((k & 63) == 63 && std::chrono::steady_clock::now() > spin_until) break;
      cpu_relax();
    }
    std::unique_lock<std::mutex> lock(mutex_);
    start_.wait(lock, [&] { return stop_.load() || generation_.load() != seen; });
    return generation_.load(std::memory_order_acquire);
  }

  void worker() {
    unsigned long seen = 0;
    for (;;) {
      seen = next_generation(seen);
      if (stop_.load()) return;
      run_chunks();
      pending_.fetch_sub(1, std::memory_order_release);
    }
  }

  static constexpr int SPIN_US = 100;
  int num_threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_;
  // Set by the caller before the generation is published (release) and read by the workers
  // after they see it (acquire).
  const std::function<void(int)>* body_ = nullptr;
  int end_ = 0, chunk_ = 1;
  std::atomic<int> next_{0}, pending_{0};
  std::atomic<unsigned long> generation_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace arena
