// A data-parallel job as real processes, one per rank (runner/dist_launch.h):
// - on the simulated device (runs everywhere): two rank processes started by the
//   launcher exchange the group id through the job directory, each runs DDP as its rank
//   and reports readings equal to the in-process simulation, and the DDP hooks launch
//   every parameter's bytes once per iteration through the group;
// - NCCL is loaded at run time: a missing library gives a reason naming it;
// - on a machine with NCCL and two GPUs, two ranks on cuda:0 / cuda:1 train for real
//   (EngineNccl.*; skipped with the reason elsewhere).
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>

#include "engine/backends/cuda/nccl_loader.h"
#include "engine/experiment/session.h"
#include "engine/models/family.h"
#include "engine/parallel/process_group.h"
#include "runner/dist_launch.h"
#include "spec_util.h"

#ifdef VRAMLAB_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

using namespace vramlab;
using engine::SpecValue;

namespace {

// The launcher binary built beside this one (VRAMLAB_DIST_EXE overrides where it was moved).
std::string dist_exe() {
  const char* e = std::getenv("VRAMLAB_DIST_EXE");
  return e && *e ? e : VRAMLAB_DIST_EXE;
}

std::vector<std::vector<std::string>> rank_argvs(int world, const std::string& dir, const std::string& spec) {
  std::vector<std::vector<std::string>> a;
  for (int r = 0; r < world; ++r) a.push_back({dist_exe(), "--rank", std::to_string(r), "--dir", dir, spec});
  return a;
}

std::vector<std::pair<std::string, int64_t>> readings_of(const SpecValue& rank) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (auto& kv : rank["readings"].items())
    out.emplace_back(kv.items()[0].as_string("key"), kv.items()[1].as_int("bytes"));
  return out;
}

// Parameter and buffer bytes of the model the spec builds, counted on a sized-only device.
std::pair<int64_t, int64_t> state_bytes(const engine::RunSpec& spec) {
  engine::Session s = engine::open_session("sim:custom:1024TiB", "sim", "");
  engine::ContextGuard guard(*s.ctx);
  auto model = engine::build_model(spec.model);
  int64_t params = 0, buffers = 0;
  for (auto& p : model->parameters()) params += int64_t(p.nbytes());
  std::function<void(engine::Module&)> walk = [&](engine::Module& m) {
    for (auto& [n, b] : m.own_buffers()) buffers += int64_t(b.nbytes());
    for (auto& [n, c] : m.children()) walk(*c);
  };
  walk(*model);
  return {params, buffers};
}

constexpr const char* kSmallGptDdp =
    R"({"model":{"kind":"gpt","vocab":512,"seq":64,"dim":64,"depth":2,"heads":4},"batch":4,)"
    R"("optimizer":"adamw","iterations":3,"parallel":{"kind":"ddp","world":2,"bucket_cap_mb":0.05}})";

}  // namespace

TEST(RunnerDistLaunch, TwoRankProcessesOnTheSimulatedDeviceReadAsTheSimulationAndReduceEveryGradient) {
  const std::string spec_json = std::string(R"({"device":"sim:h100-80gb",)") + (kSmallGptDdp + 1);
  const std::string dir = runner::make_job_dir();
  runner::LaunchResult job = runner::launch_ranks(rank_argvs(2, dir, spec_json), dir, 60);
  ASSERT_EQ(job.error, "");
  ASSERT_EQ(job.ranks.size(), 2u);

  engine::RunSpec spec = spectest::spec(spec_json);
  engine::RunResult sim = engine::run_experiment(spec);
  const auto [param_bytes, buffer_bytes] = state_bytes(spec);
  ASSERT_GT(param_bytes, 0);
  for (int r = 0; r < 2; ++r) {
    const SpecValue& rk = job.ranks[size_t(r)];
    EXPECT_EQ(rk["rank"].as_int("rank"), r);
    EXPECT_EQ(rk["device"].as_string("device"), "sim:h100-80gb");
    // one id, made by rank 0, reached every rank
    EXPECT_EQ(rk["id_hash"].as_string("id"), job.ranks[0]["id_hash"].as_string("id"));
    EXPECT_EQ(readings_of(rk), sim.readings) << "rank " << r;
    // each iteration all-reduces every gradient once (one bucket in the first, several
    // after the rebuild at a 0.05 MB cap); parameters and buffers are broadcast at
    // construction, buffers again before every forward
    const SpecValue& c = rk["collectives"];
    EXPECT_EQ(c["all_reduce_bytes"].as_int("b"), 3 * param_bytes);
    EXPECT_GT(c["all_reduce"].as_int("n"), 3 * 1);
    EXPECT_EQ(c["broadcast_bytes"].as_int("b"), param_bytes + 4 * buffer_bytes);
  }
  EXPECT_NE(job.ranks[0]["id_hash"].as_string("id"), "");
}

TEST(RunnerDistLaunch, ARankThatFailsEndsTheJobWithItsError) {
  // no "parallel": every rank refuses the job; the launcher reports rank 0's reason
  const std::string dir = runner::make_job_dir();
  runner::LaunchResult job =
      runner::launch_ranks(rank_argvs(2, dir, R"({"device":"sim:h100-80gb","model":{"kind":"mlp"}})"), dir, 60);
  EXPECT_NE(job.error.find("a launched job needs spec.parallel"), std::string::npos) << job.error;
  ASSERT_EQ(job.ranks.size(), 2u);
  EXPECT_TRUE(job.ranks[1].has("error"));
}

TEST(EngineNcclLoader, AMissingLibraryGivesAReasonNamingIt) {
  std::string why;
  EXPECT_EQ(engine::cuda::load_nccl_from({"libnccl-vramlab-absent.so.2"}, &why), nullptr);
  EXPECT_NE(why.find("NCCL could not be loaded"), std::string::npos) << why;
  EXPECT_NE(why.find("libnccl-vramlab-absent.so.2"), std::string::npos) << why;
}

TEST(EngineNcclLoader, TheDefaultLoadServesNcclOrSaysWhyNot) {
  std::string why;
  const engine::cuda::NcclApi* api = engine::cuda::load_nccl(&why);
  if (!api) {
    EXPECT_NE(why.find("libnccl.so.2"), std::string::npos) << why;
    GTEST_SKIP() << why;
  }
  EXPECT_GE(api->version, 21000);
  EXPECT_TRUE(api->all_reduce && api->broadcast && api->comm_init_rank);
}

// Two ranks on cuda:0 and cuda:1 through NCCL: each rank's readings equal the simulated
// twin's (the held side DDP's simulation reports), losses and final parameters agree.
TEST(EngineNccl, TwoRanksOnTwoGpusReadAsTheSimulationAndAgree) {
  std::string why;
  if (!engine::cuda::load_nccl(&why)) GTEST_SKIP() << why;
  int count = 0;
#ifdef VRAMLAB_HAVE_CUDA
  // (the rank processes exec a fresh program: CUDA initialised here does not reach them)
  if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
#endif
  if (count < 2) GTEST_SKIP() << "needs two CUDA GPUs (" << count << " found)";
  const std::string spec_json = std::string(R"({"device":"cuda:0",)") + (kSmallGptDdp + 1);
  const std::string dir = runner::make_job_dir();
  runner::LaunchResult job = runner::launch_ranks(rank_argvs(2, dir, spec_json), dir, 120);
  ASSERT_EQ(job.error, "");
  engine::RunSpec spec = spectest::spec(spec_json);
  const std::string gpu = job.ranks[0]["device_name"].as_string("name");
  spec.device = gpu.find("H200") != std::string::npos ? "sim:h200-141gb" : "sim:h100-80gb";
  engine::RunResult sim = engine::run_experiment(spec);
  for (int r = 0; r < 2; ++r) {
    const SpecValue& rk = job.ranks[size_t(r)];
    EXPECT_EQ(rk["device"].as_string("device"), "cuda:" + std::to_string(r));
    EXPECT_EQ(readings_of(rk), sim.readings) << "rank " << r;
    EXPECT_EQ(rk["losses"].items().size(), 3u);
    EXPECT_EQ(rk["losses"].to_json(), job.ranks[0]["losses"].to_json());
    EXPECT_EQ(rk["params_fingerprint"].as_string("fp"), job.ranks[0]["params_fingerprint"].as_string("fp"));
    EXPECT_GT(rk["nccl"]["after_first_broadcast"].as_number("n"), rk["nccl"]["before_init"].as_number("n"));
  }
  EXPECT_NE(job.ranks[0]["params_fingerprint"].as_string("fp"), "0000000000000000");
}

namespace {

// A group of one on the CPU backend: the collectives leave values as they are (the mean
// and the broadcast of one rank), the fingerprint hashes host bytes.
class LoopbackGroup : public engine::ProcessGroup {
 public:
  int rank() const override { return 0; }
  int world() const override { return 1; }
  void all_reduce_mean(const engine::Tensor& t) override { count_all_reduce(t); }
  void broadcast(const engine::Tensor& t, int) override { count_broadcast(t); }
  uint64_t fingerprint(const std::vector<engine::Tensor>& ts) override {
    uint64_t h = 14695981039346656037ull;
    for (auto& t : ts) {
      auto* p = static_cast<const unsigned char*>(t.data_ptr());
      for (size_t i = 0; i < t.nbytes(); ++i) h = (h ^ p[i]) * 1099511628211ull;
    }
    return h;
  }
};

}  // namespace

// The real job's side of DDP with values (CPU backend, world 1): gradients go through the
// buckets and back, parameters and buffers through the coalesced broadcast's flat blocks,
// and training is bit for bit the same as without DDP.
TEST(RunnerDistLaunch, DdpWithAGroupTrainsExactlyAsWithoutOnTheCpuBackend) {
  const std::string model = R"("model":{"kind":"gpt","vocab":512,"seq":32,"dim":64,"depth":2,"heads":4},"batch":2,)"
                            R"("optimizer":"adamw","iterations":3)";
  engine::RunOptions o;
  o.backend = "cpu";
  LoopbackGroup g;
  engine::RunResult ddp = engine::run_experiment(
      spectest::spec("{" + model + R"(,"parallel":{"kind":"ddp","world":1,"bucket_cap_mb":0.05}})"), o, {}, &g);
  // the same training without DDP (the group only reads losses and parameters back)
  LoopbackGroup plain_g;
  engine::RunResult plain = engine::run_experiment(spectest::spec("{" + model + "}"), o, {}, &plain_g);
  ASSERT_EQ(ddp.losses.size(), 3u);
  EXPECT_EQ(ddp.losses, plain.losses);
  EXPECT_NE(ddp.losses.front(), ddp.losses.back());  // it trained
  EXPECT_EQ(ddp.params_fingerprint, plain.params_fingerprint);
  EXPECT_GT(g.counts().all_reduce, 3);
  EXPECT_GT(g.counts().broadcast, 0);
  EXPECT_EQ(plain_g.counts().all_reduce + plain_g.counts().broadcast, 0);
}
