#pragma once
// A job is the work one run does on the worker thread. It reports through JobContext,
// whose emit() and check_cancel() throw RunCancelled once cancel was requested, so any
// job that reports or checks between ops stops within one op of a cancel.
#include <atomic>
#include <chrono>
#include <functional>
#include <stdexcept>

#include "runner/run_event.h"

namespace vramlab::runner {

class RunCancelled : public std::runtime_error {
 public:
  RunCancelled() : std::runtime_error("run cancelled") {}
};

class JobContext {
 public:
  using Sink = std::function<void(RunEvent&&)>;
  JobContext(Sink sink, const std::atomic<bool>& cancel_flag)
      : sink_(std::move(sink)), cancel_(cancel_flag), start_(std::chrono::steady_clock::now()) {}

  bool cancelled() const { return cancel_.load(std::memory_order_relaxed); }
  void check_cancel() const {
    if (cancelled()) throw RunCancelled();
  }
  void emit(RunEvent&& e) {
    check_cancel();
    sink_(std::move(e));
  }
  double elapsed_ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  Sink sink_;
  const std::atomic<bool>& cancel_;
  std::chrono::steady_clock::time_point start_;
};

class Job {
 public:
  virtual ~Job() = default;
  // Runs to completion, returns readings; an OOM is a result (JobResult::oom), not a throw.
  // Throws RunCancelled when cancelled, anything else for a failure.
  virtual JobResult run(JobContext& ctx) = 0;
};

}  // namespace vramlab::runner
