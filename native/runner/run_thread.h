#pragma once
// A joinable thread with a stack size of our choosing. std::thread takes the platform's
// default, which differs: 8 MiB on Linux, 512 KiB for macOS's secondary threads, 1 MiB
// on Windows; a run must not behave differently by platform.
#include <cstddef>
#include <functional>
#include <utility>

#ifndef _WIN32
#include <pthread.h>
#endif

namespace vramlab::runner {

// What every run and prediction thread gets: the engine needs far less (graphs are freed
// iteratively), this is headroom for deep models whatever the platform's default.
constexpr size_t kRunThreadStackBytes = size_t(8) << 20;

class RunThread {
 public:
  RunThread() = default;
  // Starts `body` on a new thread with a stack of at least `stack_bytes`; throws
  // std::system_error when the thread can't be created.
  RunThread(std::function<void()> body, size_t stack_bytes);
  RunThread(RunThread&& o) noexcept { *this = std::move(o); }
  RunThread& operator=(RunThread&&) noexcept;
  RunThread(const RunThread&) = delete;
  RunThread& operator=(const RunThread&) = delete;
  ~RunThread();  // a still-joinable thread is detached (its body owns what it uses)

  bool joinable() const { return running_; }
  bool is_current() const;  // called from this thread itself
  void join();
  void detach();

 private:
  bool running_ = false;  // started and neither joined nor detached
#ifdef _WIN32
  void* handle_ = nullptr;
  unsigned id_ = 0;
#else
  pthread_t thread_{};
#endif
};

}  // namespace vramlab::runner
