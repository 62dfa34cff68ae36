#include "runner/worker.h"

#include <chrono>

namespace vramlab::runner {

const char* status_name(RunStatus s) {
  switch (s) {
    case RunStatus::Done:
      return "done";
    case RunStatus::Oom:
      return "oom";
    case RunStatus::Cancelled:
      return "cancelled";
    case RunStatus::Error:
      return "error";
  }
  return "error";
}

RunWorker::RunWorker(std::unique_ptr<Job> job, std::function<void()> notify, std::function<void()> on_exit,
                     size_t max_queued, size_t stack_bytes)
    : job_(std::move(job)),
      notify_(std::move(notify)),
      on_exit_(std::move(on_exit)),
      max_queued_(max_queued ? max_queued : 1),
      stack_bytes_(stack_bytes) {
  if (!job_) throw std::invalid_argument("RunWorker needs a job");
}

RunWorker::~RunWorker() {
  cancel();
  join();
}

void RunWorker::start() {
  if (thread_.joinable()) throw std::logic_error("run already started");
  // An explicit stack: std::thread's default is 512 KiB on macOS, 8 MiB on Linux.
  thread_ = RunThread([this] { body(); }, stack_bytes_);
}

void RunWorker::join() {
  if (!thread_.joinable()) return;
  // Destroyed from its own thread (last owner let go inside notify): the body is done.
  if (thread_.is_current())
    thread_.detach();
  else
    thread_.join();
}

bool RunWorker::wait_for(double ms) {
  std::unique_lock<std::mutex> lock(mu_);
  return done_cv_.wait_for(lock, std::chrono::duration<double, std::milli>(ms), [&] { return outcome_.has_value(); });
}

void RunWorker::body() {
  Outcome out;
  JobContext ctx([this](RunEvent&& e) { push(std::move(e)); }, cancel_);
  try {
    out.result = job_->run(ctx);
    out.status = out.result.oom ? RunStatus::Oom : RunStatus::Done;
  } catch (const RunCancelled&) {
    out.status = RunStatus::Cancelled;
  } catch (const std::exception& e) {
    out.status = RunStatus::Error;
    out.error = e.what();
  } catch (...) {
    out.status = RunStatus::Error;
    out.error = "unknown C++ exception in the run";
  }
  out.duration_ms = ctx.elapsed_ms();
  // The job may hold device memory through its members: release it on this thread, now.
  job_.reset();
  {
    std::lock_guard<std::mutex> lock(mu_);
    outcome_ = std::move(out);
  }
  done_cv_.notify_all();
  signal();
  if (on_exit_) on_exit_();
}

void RunWorker::cancel() {
  {
    std::lock_guard<std::mutex> lock(mu_);  // no lost wake-up for a producer about to wait
    cancel_.store(true);
  }
  space_cv_.notify_all();
}

void RunWorker::push(RunEvent&& e) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (queue_.size() >= max_queued_) {
      ++waits_;
      space_cv_.wait(lock, [&] { return queue_.size() < max_queued_ || cancel_.load(); });
      if (cancel_.load()) throw RunCancelled();
    }
    queue_.push_back(std::move(e));
  }
  signal();
}

void RunWorker::signal() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (notify_pending_) return;
    notify_pending_ = true;
  }
  if (notify_) notify_();
}

EventBatch RunWorker::drain() {
  EventBatch b;
  {
    std::lock_guard<std::mutex> lock(mu_);
    b.events.swap(queue_);
    b.outcome = outcome_;
    notify_pending_ = false;
  }
  space_cv_.notify_all();
  return b;
}

uint64_t RunWorker::backpressure_waits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waits_;
}

std::optional<Outcome> RunWorker::outcome() const {
  std::lock_guard<std::mutex> lock(mu_);
  return outcome_;
}

}  // namespace vramlab::runner
