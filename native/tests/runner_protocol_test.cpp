#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "runner/job_spec.h"
#include "spec_util.h"
#include "runner/worker.h"

using namespace vramlab::runner;
using Clock = std::chrono::steady_clock;

namespace {

// An experiment job for a spec written as a user writes it, on the H200.
JobRequest experiment(const std::string& extra = "") {
  JobRequest r;
  r.kind = "experiment";
  auto partial = vramlab::engine::parse_json("{" + extra + "}");
  auto f = partial.fields();
  if (!f.count("device")) f["device"] = vramlab::engine::SpecValue::string("sim:h200-141gb");
  r.spec = vramlab::spectest::spec(vramlab::engine::SpecValue::object(f));
  return r;
}

// Runs the job, draining from this thread as a consumer would.
Outcome run(const JobRequest& s, size_t* samples = nullptr) {
  RunWorker w(make_job(s), [] {});
  w.start();
  size_t n = 0;
  while (!w.wait_for(1)) n += w.drain().events.size();
  w.join();
  n += w.drain().events.size();
  if (samples) *samples = n;
  return *w.outcome();
}

int64_t reading(const Outcome& o, const std::string& key) {
  for (auto& [k, v] : o.result.readings)
    if (k == key) return v;
  ADD_FAILURE() << "no reading " << key;
  return 0;
}

}  // namespace

TEST(RunnerProtocol, ReproducesTheSeedMlpAdamReadings) {
  auto s = experiment(R"("optimizer":"adam")");
  size_t events = 0;
  auto o = run(s, &events);
  ASSERT_EQ(o.status, RunStatus::Done) << o.error;
  // test/refs/pytorch_reference.json parity_examples[1]
  EXPECT_EQ(reading(o, "params"), 25264640);
  EXPECT_EQ(reading(o, "after_forward"), 30517760);
  EXPECT_EQ(reading(o, "it0_peak_step"), 127371776);
  EXPECT_EQ(reading(o, "it1_after_zero_grad"), 76842496);
  EXPECT_GT(events, 50u);
  EXPECT_GT(o.result.peak_allocated, o.result.baseline + 127371776 - 1);
  EXPECT_GE(o.result.sim_time_ms, 0);
}

TEST(RunnerProtocol, PassesTheLossToTheEngine) {
  // test/refs/measured/h200_protocol_loss_matmul_warmup.json, less the 1 MiB cuBLASLt
  // workspace from after_forward on: the runner uses the published Linear warm-up.
  const int64_t MiB = int64_t(1) << 20;
  auto ce = run(experiment(R"("optimizer":"adam","loss":"cross_entropy")"));
  ASSERT_EQ(ce.status, RunStatus::Done) << ce.error;
  EXPECT_EQ(reading(ce, "input"), 26315264);  // + 256 int64 labels
  EXPECT_EQ(reading(ce, "after_forward"), 31568384 - MiB);
  EXPECT_EQ(reading(ce, "it1_after_zero_grad"), 77893120 - MiB);
  auto mse = run(experiment(R"("optimizer":"adam","loss":"mse")"));
  ASSERT_EQ(mse.status, RunStatus::Done) << mse.error;
  EXPECT_EQ(reading(mse, "input"), 26323456);  // + a [256, 10] fp32 target
  EXPECT_EQ(reading(mse, "it0_peak_step"), 128430592 - MiB);
}

TEST(RunnerProtocol, CapacityBecomesAnOomResultWithTheAllocatorsNumbers) {
  auto s = experiment(R"("optimizer":"sgd","batch":65536,"capacity":2147483648)");
  auto o = run(s);
  ASSERT_EQ(o.status, RunStatus::Oom) << o.error;
  const auto& oom = *o.result.oom;
  EXPECT_NE(oom.message.find("CUDA out of memory. Tried to allocate"), std::string::npos);
  EXPECT_NE(oom.message.find("2.00 GiB allowed"), std::string::npos);
  EXPECT_EQ(oom.capacity, int64_t(2) << 30);
  EXPECT_GT(oom.requested, 0);
  EXPECT_LE(oom.allocated, oom.reserved);
  EXPECT_LE(oom.reserved, oom.capacity);
  EXPECT_FALSE(oom.phase.empty());
  EXPECT_EQ(reading(o, "params"), 25264640);  // readings taken before the failure are kept
}

TEST(RunnerProtocol, CancelStopsALongRunWithin100ms) {
  auto s = experiment(R"("model":{"kind":"residual","dim":64,"depth":4},"batch":8,"iterations":10000000)");
  RunWorker w(make_job(s), [] {});
  w.start();
  auto until = Clock::now() + std::chrono::milliseconds(100);
  while (Clock::now() < until) {
    w.drain();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  auto t0 = Clock::now();
  w.cancel();
  bool stopped = false;
  while (!(stopped = w.wait_for(1)) && Clock::now() - t0 < std::chrono::seconds(2)) w.drain();
  EXPECT_TRUE(stopped);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  EXPECT_LT(ms, 100.0);
  EXPECT_EQ(w.outcome()->status, RunStatus::Cancelled);
}

TEST(RunnerProtocol, RejectsBadSettingsBeforeAnyThreadStarts) {
  EXPECT_THROW(make_job(experiment(R"("alloc_conf":"max_split_size_mb:1")")), std::invalid_argument);
  EXPECT_THROW(make_job(experiment(R"("device":"sim:nonesuch")")), std::invalid_argument);
  EXPECT_THROW(make_job(experiment(R"("capacity":1125899906842624)")), std::invalid_argument);
  EXPECT_THROW(make_job(experiment(R"("capacity":1073741824,"alloc_conf":"per_process_memory_fraction:0.5")")),
               std::invalid_argument);
  EXPECT_THROW(make_job(experiment(R"("loss":"hinge")")), std::invalid_argument);
  EXPECT_THROW(make_job(experiment(R"("model":{"kind":"gpt","vocab":100,"seq":16,"dim":30,"depth":1,"heads":4})")),
               std::invalid_argument);
}

TEST(RunnerProtocol, HistoryStreamsAllocatorEventsThatRebuildTheFinalState) {
  auto s = experiment(R"("history":true,"optimizer":"sgd")");
  RunWorker w(make_job(s), [] {});
  w.start();
  std::vector<RunEvent> all;
  while (!w.wait_for(1))
    for (auto& e : w.drain().events) all.push_back(std::move(e));
  w.join();
  for (auto& e : w.drain().events) all.push_back(std::move(e));
  ASSERT_EQ(w.outcome()->status, RunStatus::Done) << w.outcome()->error;
  // Replaying the trace: live bytes per address must match the last sample's counters,
  // requested sizes the requested bytes and block sizes the allocated bytes.
  std::map<uint64_t, int64_t> live, blocks;
  std::set<std::string> ops;
  int64_t segments = 0, allocs = 0, last_requested = -1, last_allocated = -1;
  double last_t = -1;
  for (auto& e : all) {
    double t = std::visit([](auto& x) { return x.t_ms; }, e);
    EXPECT_GT(t, last_t);
    last_t = t;
    if (auto* s = std::get_if<Sample>(&e)) {
      last_requested = s->requested;
      last_allocated = s->allocated;
    }
    auto* a = std::get_if<AllocEvent>(&e);
    if (!a) continue;
    if (a->action == "alloc") {
      ++allocs;
      EXPECT_TRUE(live.emplace(a->addr, a->size).second);
      EXPECT_GE(a->block_size, a->size);
      EXPECT_EQ(a->block_size % 512, 0);
      blocks[a->addr] = a->block_size;
      EXPECT_GE(a->category, 0);
      EXPECT_FALSE(a->op.empty());
      ops.insert(a->op);
    } else if (a->action == "free") {
      EXPECT_EQ(live.erase(a->addr), 1u);
      EXPECT_EQ(blocks[a->addr], a->block_size);
      blocks.erase(a->addr);
    } else if (a->action == "segment_alloc") {
      ++segments;
    }
  }
  EXPECT_GT(allocs, 20);
  EXPECT_GT(segments, 2);
  int64_t requested = 0;
  for (auto& [addr, size] : live) requested += size;
  EXPECT_EQ(requested, last_requested);
  int64_t allocated = 0;
  for (auto& [addr, size] : blocks) allocated += size;
  EXPECT_EQ(allocated, last_allocated);
  EXPECT_TRUE(ops.count("addmm")) << "the linear layers' outputs are tagged with their op";
}
