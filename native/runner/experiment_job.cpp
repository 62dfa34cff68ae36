#include "runner/experiment_job.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "allocator/caching_allocator.h"
#include "allocator/settings.h"
#include "device/device.h"
#include "engine/backends/allocator_memory.h"
#include "engine/core/alloc_tag.h"
#include "engine/core/memory.h"
#include "engine/experiment/experiment.h"
#include "engine/parallel/nccl.h"

namespace vramlab::runner {

namespace {

// "Tried to allocate 400.00 MiB" -> bytes (to the message's two decimals).
int64_t tried_to_allocate(const std::string& msg) {
  auto at = msg.find("Tried to allocate ");
  if (at == std::string::npos) return 0;
  double v = 0;
  char unit[8] = {0};
  if (std::sscanf(msg.c_str() + at + 18, "%lf %7s", &v, unit) != 2) return 0;
  std::string u(unit);
  if (!u.empty() && u.back() == '.') u.pop_back();
  double m = u == "KiB"   ? 1024.0
             : u == "MiB" ? 1048576.0
             : u == "GiB" ? 1073741824.0
             : u == "TiB" ? 1099511627776.0
                          : 1.0;
  return int64_t(v * m);
}

// "activations|addmm|layers.3.net.0" (engine TagInfo::label) -> category index, op and module.
void parse_context(const std::string& label, int& category, std::string& op, std::string& module) {
  category = -1;
  op.clear();
  module.clear();
  auto bar = label.find('|');
  std::string name = label.substr(0, bar);
  for (int i = 0; i < engine::kNumCategories; ++i)
    if (name == engine::category_name(engine::Category(i))) category = i;
  if (bar != std::string::npos) {
    auto bar2 = label.find('|', bar + 1);
    op = label.substr(bar + 1, bar2 == std::string::npos ? std::string::npos : bar2 - bar - 1);
    if (bar2 != std::string::npos) module = label.substr(bar2 + 1);
  }
}

// The run's allocator, reached through the engine context that is current on this thread
// while run_protocol runs: stats for active/requested bytes, and the trace when history is on.
class AllocatorTap {
 public:
  explicit AllocatorTap(bool history) : history_(history) {}

  alloc::CachingAllocator* get() {
    if (allocator_) return allocator_;
    auto* ctx = engine::current_context_or_null();
    auto* mem = ctx ? dynamic_cast<engine::AllocatorMemory*>(&ctx->memory()) : nullptr;
    if (!mem) return nullptr;
    allocator_ = &mem->allocator();
    if (history_) {
      allocator_->set_history(true, kRing);
      // What existed before recording began, so the trace alone rebuilds the segment map.
      for (const auto& seg : allocator_->snapshot(false).segments) {
        AllocEvent s;
        s.action = "segment_alloc";
        s.addr = uint64_t(seg.address);
        s.size = int64_t(seg.total_size);
        pending_.push_back(std::move(s));
        for (const auto& b : seg.blocks)
          if (b.allocated) pending_.push_back(event("alloc", b.address, b.requested_size, b.size, b.context));
      }
    }
    return allocator_;
  }

  // Trace entries since the last call (the ring is drained by restarting the recording).
  std::vector<AllocEvent> take() {
    std::vector<AllocEvent> out;
    out.swap(pending_);
    if (!history_ || !allocator_) return out;
    auto entries = allocator_->history();
    if (entries.empty()) return out;
    allocator_->set_history(false);
    allocator_->set_history(true, kRing);
    for (const auto& t : entries)
      out.push_back(event(alloc::trace_action_name(t.action), t.addr, t.size, t.block_size, t.context));
    return out;
  }

 private:
  static constexpr size_t kRing = size_t(1) << 16;  // far more than one allocation's worth

  AllocEvent event(const char* action, uintptr_t addr, uint64_t size, uint64_t block_size, alloc::ContextId ctx) {
    AllocEvent e;
    e.action = action;
    e.addr = uint64_t(addr);
    e.size = int64_t(size);
    e.block_size = int64_t(block_size);  // the segment map draws blocks at this size, not the request's
    if (ctx != 0) parse_context(allocator_->contexts().name(ctx), e.category, e.op, e.module);
    return e;
  }

  bool history_;
  alloc::CachingAllocator* allocator_ = nullptr;
  std::vector<AllocEvent> pending_;
};

}  // namespace

ExperimentJob::ExperimentJob(const engine::RunSpec& spec, const engine::RunOptions& options)
    : spec_(spec), options_(options), alloc_conf_(spec.alloc_conf) {
  // Spec and settings errors name the key; raise them now, not on the worker thread.
  engine::check_run_spec(spec_);
  auto settings = alloc::AllocatorSettings::parse(alloc_conf_);
  auto device = open_device(spec_.device);  // throws std::invalid_argument for an unknown id
  const int64_t total = int64_t(device->info().total);
  context_ = int64_t(device->info().context);
  sim_clock_ = device->info().kind == "sim";
  capacity_ = total;
  if (spec_.capacity > 0) {
    if (settings.per_process_memory_fraction)
      throw std::invalid_argument("set either capacity or alloc_conf's per_process_memory_fraction, not both");
    if (spec_.capacity > total)
      throw std::invalid_argument("capacity (" + std::to_string(spec_.capacity) + " bytes) is more than " +
                                  spec_.device + " has (" + std::to_string(total) + " bytes)");
    // PyTorch caps a process with set_per_process_memory_fraction; the allocator models it.
    char frac[64];
    std::snprintf(frac, sizeof frac, "%.17f", double(spec_.capacity) / double(total));
    alloc_conf_ += (alloc_conf_.empty() ? "" : ",") + std::string("per_process_memory_fraction:") + frac;
    capacity_ = spec_.capacity;
  } else if (settings.per_process_memory_fraction) {
    capacity_ = int64_t(*settings.per_process_memory_fraction * double(total));
  }
}

JobResult ExperimentJob::run(JobContext& ctx) {
  JobResult r;
  r.context = context_;
  std::vector<std::pair<std::string, int64_t>> readings;
  int64_t base = -1;
  Sample last;
  std::string phase;  // innermost work phase, for the OOM report
  std::vector<std::string> open;
  int64_t iteration = -1;
  double last_t = -1e-6;
  AllocatorTap tap(spec_.history);

  // Strictly increasing times keep samples and markers in the order they happened even
  // when the sim's clock has not moved between them.
  auto stamp = [&](double sim_s) {
    double t = sim_clock_ ? sim_s * 1e3 : ctx.elapsed_ms();
    t = std::max(t, last_t + 1e-6);
    last_t = t;
    return t;
  };

  auto on_event = [&](const engine::EngineEvent& e) {
    using K = engine::EngineEvent::Kind;
    ctx.check_cancel();  // every allocation and marker is a cancel point
    auto* allocator = tap.get();
    for (auto& a : tap.take()) {
      a.t_ms = stamp(e.sim_time_s);
      ctx.emit(std::move(a));
    }
    const double t = stamp(e.sim_time_s);
    if (e.kind == K::PhaseBegin || e.kind == K::PhaseEnd) {
      const bool begin = e.kind == K::PhaseBegin;
      if (e.name != "module" && e.name != "iteration" && e.name != "microbatch") {
        if (begin)
          open.push_back(e.name);
        else if (!open.empty())
          open.pop_back();
        phase = open.empty() ? "" : open.back();
      }
      if (e.name == "iteration") iteration = begin ? e.iteration : iteration;
      ctx.emit(Phase{t, begin, e.name, e.module, e.iteration, e.micro_batch});
    } else if (e.kind == K::Reading) {
      if (base < 0) base = e.allocated - e.value;
      readings.emplace_back(e.name, e.value);
    }
    Sample s;
    s.t_ms = stamp(e.sim_time_s);  // just after a marker at the same moment: it reads the state there
    s.allocated = e.allocated;
    s.reserved = e.reserved;
    if (allocator) {
      auto st = allocator->stats();
      s.active = st.active_bytes[alloc::kAggregate].current;
      s.requested = st.requested_bytes[alloc::kAggregate].current;
    } else {
      s.active = e.allocated;
      s.requested = -1;  // no caching allocator behind this memory backend
    }
    for (int i = 0; i < kNumCategories; ++i) s.by[i] = e.by_category[size_t(i)];
    r.peak_allocated = std::max(r.peak_allocated, s.allocated);
    r.peak_reserved = std::max(r.peak_reserved, s.reserved);
    last = s;
    ctx.emit(std::move(s));
  };

  auto oom = [&](const std::string& message, int64_t requested, int64_t allocated, int64_t reserved) {
    OomInfo o;
    o.message = message;
    o.requested = requested;
    o.allocated = allocated;
    o.reserved = reserved;
    o.capacity = capacity_;
    o.by = last.by;
    o.phase = phase;
    o.iteration = iteration;
    r.oom = o;
    if (spec_.history) {
      // The allocator is gone with the session; record the failure as PyTorch's trace does.
      AllocEvent a;
      a.t_ms = stamp(0);  // just after the last event (stamp never goes back)
      a.action = "oom";
      a.addr = uint64_t(std::max<int64_t>(0, capacity_ - reserved));  // free bytes, like PyTorch
      a.size = requested;
      ctx.emit(std::move(a));
    }
  };

  try {
    engine::RunSpec spec = spec_;
    spec.alloc_conf = alloc_conf_;
    engine::RunOptions options = options_;
    if (options.sample_every <= 0) options.sample_every = 1;
    auto res = engine::run_experiment(spec, options, on_event);
    r.readings = res.readings;
    r.baseline = res.base;
    r.num_parameters = res.num_parameters;
    r.trainable_parameters = res.trainable_parameters;
    r.sdpa_backend = res.sdpa_backend;
    r.ranks = res.ranks;
    r.rank_class = res.rank_class;
    r.ranges = res.ranges;
    r.nccl = res.nccl;
    r.sim_time_ms = sim_clock_ ? res.modeled_time_ms : -1;
  } catch (const alloc::OutOfMemoryError& e) {
    oom(e.what(), int64_t(e.alloc_size), int64_t(e.allocated), int64_t(e.reserved));
  } catch (const engine::OutOfMemoryError& e) {
    oom(e.what(), tried_to_allocate(e.what()), last.allocated, last.reserved);
  }
  if (r.oom) {
    r.readings = readings;  // those taken before the failure
    r.baseline = std::max<int64_t>(0, base);
    // NCCL's buffers were held from the start: the whole card at the OOM counts them too.
    if (!spec_.parallel.kind.empty()) r.nccl = engine::nccl_device_bytes(spec_.parallel.world);
  }
  return r;
}

}  // namespace vramlab::runner
