// A fixed pool of worker threads that runs one parallel-for at a time. The caller
// thread takes the first chunk itself, so num_threads == 1 starts no thread at all.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace arena {

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads) : num_threads_(num_threads < 1 ? 1 : num_threads) {
    for (int t = 1; t < num_threads_; ++t) workers_.emplace_back([this, t] { worker(t); });
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    start_.notify_all();
    for (auto& w : workers_) w.join();
  }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return num_threads_; }

  // Calls body(i) for every i in [begin, end), split into one contiguous chunk per thread.
  // Which thread runs which i never changes a result: every i is independent.
  void parallel_for(int begin, int end, const std::function<void(int)>& body) {
    const int n = end - begin;
    if (n <= 0) return;
    const int threads = n < num_threads_ ? n : num_threads_;
    if (threads == 1) {
      for (int i = begin; i < end; ++i) body(i);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      body_ = &body;
      begin_ = begin;
      end_ = end;
      active_ = threads;
      pending_ = threads - 1;
      ++generation_;
    }
    start_.notify_all();
    run_chunk(0);
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return pending_ == 0; });
    body_ = nullptr;
  }

 private:
  void run_chunk(int t) {
    const long n = end_ - begin_;
    const int lo = begin_ + static_cast<int>(n * t / active_);
    const int hi = begin_ + static_cast<int>(n * (t + 1) / active_);
    for (int i = lo; i < hi; ++i) (*body_)(i);
  }

  void worker(int t) {
    unsigned long seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        start_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        if (t >= active_) continue;
      }
      run_chunk(t);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (--pending_ == 0) done_.notify_one();
      }
    }
  }

  int num_threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_, done_;
  const std::function<void(int)>* body_ = nullptr;
  int begin_ = 0, end_ = 0, active_ = 1, pending_ = 0;
  unsigned long generation_ = 0;
  bool stop_ = false;
};

}  // namespace arena
