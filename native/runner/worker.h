#pragma once
// RunWorker: one thread per run. The job's events go into a queue guarded by a mutex;
// `notify` fires only when the queue goes from drained to non-empty (and once at the
// end), so the consumer (the JS thread, via a ThreadSafeFunction) gets at most one
// wake-up per drain however fast the job reports. Backpressure: when the consumer falls
// behind and the queue holds `max_queued` events, the job waits (a cancel still wakes
// it), so nothing is lost, memory stays bounded and no drain is larger than the cap.
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runner/job.h"
#include "runner/run_thread.h"

namespace vramlab::runner {

enum class RunStatus { Done, Oom, Cancelled, Error };
const char* status_name(RunStatus s);

struct Outcome {
  RunStatus status = RunStatus::Done;
  JobResult result;
  std::string error;  // RunStatus::Error: what went wrong
  double duration_ms = 0;
};

struct EventBatch {
  std::vector<RunEvent> events;
  uint64_t dropped = 0;  // events lost since the last drain (none: the queue blocks instead)
  // Set when the job had returned at the moment of this drain: taken under the same lock
  // as the events, so it is never missed. (Reading outcome() and then draining raced with
  // the end of the job: the final wake-up was swallowed by the latch, the run never ended.)
  std::optional<Outcome> outcome;
};

class RunWorker {
 public:
  // `notify` and `on_exit` run on the worker thread; on_exit is its very last action
  // (after the final notify), so a ThreadSafeFunction can be released there.
  // stack_bytes: the run thread's stack (tests choose a small one to prove the engine's
  // stack use is bounded).
  RunWorker(std::unique_ptr<Job> job, std::function<void()> notify, std::function<void()> on_exit = {},
            size_t max_queued = size_t(1) << 11, size_t stack_bytes = kRunThreadStackBytes);
  ~RunWorker();  // cancels and joins: never leaves a thread running
  RunWorker(const RunWorker&) = delete;
  RunWorker& operator=(const RunWorker&) = delete;

  void start();
  void cancel();
  bool cancel_requested() const { return cancel_.load(); }
  void join();
  // Waits up to `ms` for the job to return; true when it has.
  bool wait_for(double ms);

  // Every queued event and, once the job has returned, its outcome, atomically: a drain
  // that finds no outcome clears the latch, so the end of the job wakes the consumer again.
  EventBatch drain();
  // Set once the job returned, after its last event was queued.
  std::optional<Outcome> outcome() const;
  // How often the job had to wait for the consumer (backpressure), for tests and benches.
  uint64_t backpressure_waits() const;

 private:
  void body();
  void push(RunEvent&& e);
  void signal();  // call with mu_ held released; fires notify when the latch was clear

  std::unique_ptr<Job> job_;
  std::function<void()> notify_;
  std::function<void()> on_exit_;
  size_t max_queued_;
  size_t stack_bytes_;
  std::atomic<bool> cancel_{false};
  RunThread thread_;

  mutable std::mutex mu_;
  std::condition_variable done_cv_;
  std::condition_variable space_cv_;  // the producer waits here while the queue is full
  std::vector<RunEvent> queue_;
  uint64_t waits_ = 0;
  bool notify_pending_ = false;
  std::optional<Outcome> outcome_;
};

}  // namespace vramlab::runner
