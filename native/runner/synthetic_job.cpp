#include "runner/synthetic_job.h"

#include <algorithm>
#include <stdexcept>
#include <thread>

namespace vramlab::runner {

SyntheticJob::SyntheticJob(const SyntheticSettings& settings) : spec_(settings) {
  if (spec_.steps < 0 || spec_.steps > 100'000'000) throw std::invalid_argument("synthetic job: steps out of range");
  if (!(spec_.step_ms >= 0 && spec_.step_ms <= 60'000))
    throw std::invalid_argument("synthetic job: step_ms out of range");
}

JobResult SyntheticJob::run(JobContext& ctx) {
  constexpr int64_t kMiB = 1 << 20;
  JobResult r;
  r.baseline = 32 * kMiB;
  const auto step_dur = std::chrono::duration<double, std::milli>(spec_.step_ms);
  auto next = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < spec_.steps; ++i) {
    ctx.check_cancel();
    const int64_t iteration = i / 10;
    const char* phase = (i % 10) < 5 ? "forward" : "backward";
    if (i % 10 == 0) ctx.emit(Phase{ctx.elapsed_ms(), true, "iteration", "", iteration, -1});
    ctx.emit(Phase{ctx.elapsed_ms(), true, phase, "", iteration, 0});
    Sample s;
    s.t_ms = ctx.elapsed_ms();
    s.by[0] = 8 * kMiB;               // parameters
    s.by[3] = (1 + (i % 10)) * kMiB;  // activations grow through the "forward"
    s.by[6] = r.baseline;             // workspace
    for (auto b : s.by) s.allocated += b;
    s.active = s.allocated;
    s.requested = s.allocated;
    s.reserved = (s.allocated + 2 * kMiB - 1) / (2 * kMiB) * (2 * kMiB);
    r.peak_allocated = std::max(r.peak_allocated, s.allocated);
    r.peak_reserved = std::max(r.peak_reserved, s.reserved);
    if (i == spec_.throw_at) throw std::runtime_error("synthetic failure at step " + std::to_string(i));
    if (i == spec_.oom_at) {
      OomInfo o;
      o.requested = 64 * kMiB;
      o.allocated = s.allocated;
      o.reserved = s.reserved;
      o.capacity = spec_.capacity ? spec_.capacity : 80 * 1024 * kMiB;
      o.by = s.by;
      o.phase = phase;
      o.iteration = iteration;
      o.message = "CUDA out of memory. Tried to allocate 64.00 MiB (synthetic).";
      r.oom = o;
      return r;
    }
    ctx.emit(std::move(s));
    ctx.emit(Phase{ctx.elapsed_ms(), false, phase, "", iteration, 0});
    if (i % 10 == 9 || i + 1 == spec_.steps) ctx.emit(Phase{ctx.elapsed_ms(), false, "iteration", "", iteration, -1});
    // Sleep in slices so a cancel is seen within a millisecond or two even for long steps.
    next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(step_dur);
    while (std::chrono::steady_clock::now() < next) {
      ctx.check_cancel();
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(next - std::chrono::steady_clock::now(),
                                                                                std::chrono::milliseconds(2)));
    }
  }
  r.readings.emplace_back("steps", spec_.steps);
  r.readings.emplace_back("peak", r.peak_allocated - r.baseline);
  return r;
}

}  // namespace vramlab::runner
