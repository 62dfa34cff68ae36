#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "runner/job_spec.h"
#include "runner/worker.h"

using namespace vramlab::runner;
using Clock = std::chrono::steady_clock;

namespace {

JobRequest synthetic(int64_t steps, double step_ms) {
  JobRequest s;
  s.kind = "synthetic";
  s.synthetic.steps = steps;
  s.synthetic.step_ms = step_ms;
  return s;
}

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

size_t count_samples(const EventBatch& b) {
  size_t n = 0;
  for (auto& e : b.events) n += std::holds_alternative<Sample>(e);
  return n;
}

}  // namespace

TEST(RunnerWorker, RunsToCompletionAndStreamsEverySample) {
  std::atomic<int> notifies{0}, exits{0};
  RunWorker w(
      make_job(synthetic(50, 0)), [&] { ++notifies; }, [&] { ++exits; });
  w.start();
  ASSERT_TRUE(w.wait_for(5000));
  w.join();
  auto out = w.outcome();
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->status, RunStatus::Done);
  EXPECT_EQ(exits.load(), 1);
  auto batch = w.drain();
  EXPECT_EQ(count_samples(batch), 50u);
  EXPECT_EQ(batch.dropped, 0u);
  ASSERT_EQ(out->result.readings.size(), 2u);
  EXPECT_EQ(out->result.readings[0].first, "steps");
  EXPECT_EQ(out->result.readings[0].second, 50);
  // Wake-ups are latched: nobody drained, so there was exactly one.
  EXPECT_EQ(notifies.load(), 1);
}

TEST(RunnerWorker, NotifiesAgainOnlyAfterADrain) {
  std::atomic<int> notifies{0};
  RunWorker w(make_job(synthetic(200, 0.5)), [&] { ++notifies; });
  w.start();
  size_t samples = 0;
  int drains = 0;
  while (!w.outcome()) {
    int before = notifies.load();
    if (before > drains) {
      samples += count_samples(w.drain());
      ++drains;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  w.join();
  samples += count_samples(w.drain());
  EXPECT_EQ(samples, 200u);
  EXPECT_LE(notifies.load(), drains + 1);
  EXPECT_GT(drains, 1);
}

TEST(RunnerWorker, CancelStopsWithin100ms) {
  RunWorker w(make_job(synthetic(1'000'000, 1)), [] {});
  w.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  auto t0 = Clock::now();
  w.cancel();
  ASSERT_TRUE(w.wait_for(1000));
  EXPECT_LT(ms_since(t0), 100.0);
  EXPECT_EQ(w.outcome()->status, RunStatus::Cancelled);
}

TEST(RunnerWorker, CancelWithinALongStep) {
  RunWorker w(make_job(synthetic(3, 10'000)), [] {});
  w.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto t0 = Clock::now();
  w.cancel();
  ASSERT_TRUE(w.wait_for(1000));
  EXPECT_LT(ms_since(t0), 100.0);
  EXPECT_EQ(w.outcome()->status, RunStatus::Cancelled);
}

TEST(RunnerWorker, FailureBecomesAnErrorOutcome) {
  auto spec = synthetic(10, 0);
  spec.synthetic.throw_at = 4;
  RunWorker w(make_job(spec), [] {});
  w.start();
  w.join();
  EXPECT_EQ(w.outcome()->status, RunStatus::Error);
  EXPECT_NE(w.outcome()->error.find("step 4"), std::string::npos);
}

TEST(RunnerWorker, OomIsAResult) {
  auto spec = synthetic(10, 0);
  spec.synthetic.oom_at = 3;
  RunWorker w(make_job(spec), [] {});
  w.start();
  w.join();
  ASSERT_EQ(w.outcome()->status, RunStatus::Oom);
  ASSERT_TRUE(w.outcome()->result.oom.has_value());
  EXPECT_GT(w.outcome()->result.oom->requested, 0);
}

TEST(RunnerWorker, BackpressureMakesTheJobWaitAndLosesNothing) {
  RunWorker w(
      make_job(synthetic(100, 0)), [] {}, {}, 10);
  w.start();
  size_t samples = 0, markers = 0, largest = 0;
  while (!w.outcome()) {
    auto b = w.drain();
    largest = std::max(largest, b.events.size());
    samples += count_samples(b);
    for (auto& e : b.events) markers += std::holds_alternative<Phase>(e);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  w.join();
  auto rest = w.drain();
  samples += count_samples(rest);
  for (auto& e : rest.events) markers += std::holds_alternative<Phase>(e);
  EXPECT_EQ(w.outcome()->status, RunStatus::Done);
  EXPECT_EQ(samples, 100u);
  EXPECT_EQ(markers, 100u * 2 + 10 * 2);  // every phase begin/end and iteration begin/end
  EXPECT_LE(largest, 10u);
  EXPECT_GT(w.backpressure_waits(), 0u);
}

TEST(RunnerWorker, CancelWakesAJobWaitingOnAFullQueue) {
  RunWorker w(
      make_job(synthetic(1000, 0)), [] {}, {}, 10);
  w.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // nobody drains: the job waits
  EXPECT_FALSE(w.outcome().has_value());
  auto t0 = Clock::now();
  w.cancel();
  ASSERT_TRUE(w.wait_for(1000));
  EXPECT_LT(ms_since(t0), 100.0);
  EXPECT_EQ(w.outcome()->status, RunStatus::Cancelled);
}

TEST(RunnerWorker, DestructorCancelsARunningJob) {
  auto t0 = Clock::now();
  {
    RunWorker w(make_job(synthetic(1'000'000, 1)), [] {});
    w.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_LT(ms_since(t0), 500.0);
}

TEST(RunnerJobs, RejectsUnknownKindsBeforeStarting) {
  JobRequest s;
  s.kind = "bogus";
  EXPECT_THROW(make_job(s), std::invalid_argument);
  s = synthetic(-1, 0);
  EXPECT_THROW(make_job(s), std::invalid_argument);
}
