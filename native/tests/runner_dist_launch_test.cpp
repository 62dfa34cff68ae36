// A data-parallel job as real processes, one per rank (runner/dist_launch.h):
// - on the simulated device (runs everywhere): two rank processes started by the
//   launcher exchange the group id through the job directory, each runs DDP or FSDP2 as
//   its rank and reports readings equal to the in-process simulation, and the hooks
//   launch every parameter's bytes once per iteration through the group;
// - on the CPU backend, a group of one moves real values: DDP and FSDP2 train bit for
//   bit as without them;
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
#include "hf_spec_util.h"
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

constexpr const char* kSmallGptFsdp =
    R"({"model":{"kind":"gpt","vocab":512,"seq":64,"dim":64,"depth":2,"heads":4},"batch":4,)"
    R"("optimizer":"adamw","iterations":3,"parallel":{"kind":"fsdp2","world":2}})";

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

TEST(RunnerDistLaunch, TwoFsdp2RankProcessesOnTheSimulatedDeviceReadAsTheSimulationAndShardEveryGradient) {
  const std::string spec_json = std::string(R"({"device":"sim:h100-80gb",)") + (kSmallGptFsdp + 1);
  const std::string dir = runner::make_job_dir();
  runner::LaunchResult job = runner::launch_ranks(rank_argvs(2, dir, spec_json), dir, 60);
  ASSERT_EQ(job.error, "");
  ASSERT_EQ(job.ranks.size(), 2u);
  engine::RunSpec spec = spectest::spec(spec_json);
  engine::RunResult sim = engine::run_experiment(spec);
  ASSERT_EQ(sim.ranks.size(), 2u);
  const int64_t param_bytes = state_bytes(spec).first;
  for (int r = 0; r < 2; ++r) {
    const SpecValue& rk = job.ranks[size_t(r)];
    EXPECT_EQ(readings_of(rk), sim.ranks[size_t(r)]) << "rank " << r;
    const SpecValue& c = rk["collectives"];
    // every dim splits evenly: each iteration reduce-scatters every fp32 gradient once,
    // and all-gathers every parameter at least once (backward gathers resharded groups again)
    EXPECT_EQ(c["reduce_scatter_bytes"].as_int("b"), 3 * param_bytes);
    EXPECT_EQ(c["reduce_scatter"].as_int("n"), 3 * (1 + 2));  // root + 2 blocks per iteration
    EXPECT_GE(c["all_gather_bytes"].as_int("b"), 3 * param_bytes);
    EXPECT_EQ(c["all_reduce"].as_int("n"), 0);
  }
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

namespace {

// Why the two-GPU NCCL tests cannot run here ("" when they can): NCCL missing or fewer
// than two CUDA GPUs. (The rank processes exec a fresh program: CUDA initialised here does
// not reach them.)
std::string why_not_two_gpus_with_nccl() {
  std::string why;
  if (!engine::cuda::load_nccl(&why)) return why;
  int count = 0;
#ifdef VRAMLAB_HAVE_CUDA
  if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
#endif
  return count < 2 ? "needs two CUDA GPUs (" + std::to_string(count) + " found)" : "";
}

// The simulated card a rank's readings are compared with: the preset of the GPU it ran on.
std::string sim_twin_of(const std::string& gpu_name) {
  return gpu_name.find("H200") != std::string::npos ? "sim:h200-141gb" : "sim:h100-80gb";
}

}  // namespace

// Two ranks on cuda:0 and cuda:1 through NCCL: each rank's readings equal the simulated
// twin's (the held side DDP's simulation reports), losses and final parameters agree.
TEST(EngineNccl, TwoRanksOnTwoGpusReadAsTheSimulationAndAgree) {
  if (const std::string why = why_not_two_gpus_with_nccl(); !why.empty()) GTEST_SKIP() << why;
  const std::string spec_json = std::string(R"({"device":"cuda:0",)") + (kSmallGptDdp + 1);
  const std::string dir = runner::make_job_dir();
  runner::LaunchResult job = runner::launch_ranks(rank_argvs(2, dir, spec_json), dir, 120);
  ASSERT_EQ(job.error, "");
  engine::RunSpec spec = spectest::spec(spec_json);
  const std::string gpu = job.ranks[0]["device_name"].as_string("name");
  spec.device = sim_twin_of(gpu);
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

// FSDP2 through NCCL: each rank's readings equal its simulated rank's, the ranks agree, and
// since every rank draws the same batch, rank 0 trains as one GPU does with FSDP2 at world
// 1 (the average of equal fp32 gradients is exact) and as one GPU without FSDP2.
TEST(EngineNccl, TwoFsdp2RanksOnTwoGpusReadAsTheSimulationAndTrainAsOneGpu) {
  if (const std::string why = why_not_two_gpus_with_nccl(); !why.empty()) GTEST_SKIP() << why;
  const std::string spec_json = std::string(R"({"device":"cuda:0",)") + (kSmallGptFsdp + 1);
  const std::string dir = runner::make_job_dir();
  runner::LaunchResult job = runner::launch_ranks(rank_argvs(2, dir, spec_json), dir, 120);
  ASSERT_EQ(job.error, "");
  engine::RunSpec spec = spectest::spec(spec_json);
  const std::string gpu = job.ranks[0]["device_name"].as_string("name");
  engine::RunSpec sspec = spec;
  sspec.device = sim_twin_of(gpu);
  engine::RunResult sim = engine::run_experiment(sspec);
  for (int r = 0; r < 2; ++r) {
    const SpecValue& rk = job.ranks[size_t(r)];
    EXPECT_EQ(readings_of(rk), sim.ranks[size_t(r)]) << "rank " << r;
    EXPECT_EQ(rk["losses"].items().size(), 3u);
    EXPECT_EQ(rk["losses"].to_json(), job.ranks[0]["losses"].to_json());
    EXPECT_EQ(rk["params_fingerprint"].as_string("fp"), job.ranks[0]["params_fingerprint"].as_string("fp"));
    EXPECT_GT(rk["collectives"]["reduce_scatter"].as_int("n"), 0);
  }
  engine::RunSpec one = spec;
  one.parallel.world = 1;
  engine::LocalGroup g1;
  engine::RunResult fsdp1 = engine::run_experiment(one, {}, {}, &g1);
  one.parallel = engine::RunSpec{}.parallel;
  engine::LocalGroup g0;
  engine::RunResult plain = engine::run_experiment(one, {}, {}, &g0);
  std::vector<double> rank0;
  for (auto& l : job.ranks[0]["losses"].items()) rank0.push_back(l.as_number("loss"));
  EXPECT_EQ(fsdp1.losses, rank0);
  EXPECT_EQ(plain.losses, rank0);
  char fp[17];
  std::snprintf(fp, sizeof fp, "%016llx", static_cast<unsigned long long>(plain.params_fingerprint));
  EXPECT_EQ(job.ranks[0]["params_fingerprint"].as_string("fp"), fp);
  EXPECT_EQ(fsdp1.params_fingerprint, plain.params_fingerprint);
}

namespace {

// A group of one on the CPU backend: the collectives leave values as they are (the mean
// and the broadcast of one rank), the fingerprint hashes host bytes.
using LoopbackGroup = engine::LocalGroup;

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

// FSDP2's side with values (CPU backend, world 1): the shards take the unsharded build's
// initial values (parameters from the same seed, Llama's rotary buffers), the all-gather's
// copy-in and copy-out and the reduce-scatter's copy-in move them, and training is bit for
// bit the same as without FSDP2: tied GPT weights, Llama, parameters kept unsharded after
// forward, and blocks recomputed under checkpointing (unsharded again in backward).
TEST(RunnerDistLaunch, Fsdp2WithAGroupOfOneTrainsExactlyAsWithoutOnTheCpuBackend) {
  const std::string gpt = R"("model":{"kind":"gpt","vocab":512,"seq":16,"dim":64,"depth":2,"heads":4})";
  const std::string llama = R"("model":{"kind":"llama","vocab":512,"seq":16,"dim":64,"depth":2,"heads":4,)"
                            R"("kv_heads":2,"ffn":96})";
  struct Case {
    std::string model, extra, parallel;
  };
  for (const Case& c : {Case{gpt, "", ""}, Case{llama, "", ""}, Case{gpt, "", R"(,"reshard_after_forward":false)"},
                        Case{gpt, R"(,"checkpoint":"block")", ""}}) {
    SCOPED_TRACE(c.model + c.extra + c.parallel);
    const std::string common = c.model + R"(,"batch":2,"optimizer":"adamw","iterations":2)" + c.extra;
    engine::RunOptions o;
    o.backend = "cpu";
    LoopbackGroup g;
    engine::RunResult fsdp = engine::run_experiment(
        spectest::spec("{" + common + R"(,"parallel":{"kind":"fsdp2","world":1)" + c.parallel + "}}"), o, {}, &g);
    LoopbackGroup plain_g;
    engine::RunResult plain = engine::run_experiment(spectest::spec("{" + common + "}"), o, {}, &plain_g);
    ASSERT_EQ(fsdp.losses.size(), 2u);
    EXPECT_EQ(fsdp.losses, plain.losses);
    EXPECT_NE(fsdp.losses.front(), fsdp.losses.back());  // it trained
    EXPECT_EQ(fsdp.params_fingerprint, plain.params_fingerprint);
    EXPECT_EQ(g.counts().reduce_scatter, 2 * (1 + 2));  // the root and two blocks per iteration
    EXPECT_EQ(plain_g.counts().reduce_scatter, 0);
  }
}

// The mixed-precision policy with values: the unsharded parameters are bf16 copies of the
// shards, gradients reduce in fp32 and land in the fp32 shards; the first loss is the fp32
// model's to bf16 precision, and it trains.
TEST(RunnerDistLaunch, Fsdp2BfloatParamsWithAGroupOfOneTrainOnTheCpuBackend) {
  const std::string common = R"("model":{"kind":"gpt","vocab":512,"seq":32,"dim":64,"depth":2,"heads":4},)"
                             R"("batch":2,"optimizer":"adamw","iterations":3)";
  engine::RunOptions o;
  o.backend = "cpu";
  LoopbackGroup g;
  engine::RunResult bf16 = engine::run_experiment(
      spectest::spec("{" + common +
                     R"(,"parallel":{"kind":"fsdp2","world":1,"param_dtype":"bf16","reduce_dtype":"fp32"}})"),
      o, {}, &g);
  LoopbackGroup plain_g;
  engine::RunResult fp32 = engine::run_experiment(spectest::spec("{" + common + "}"), o, {}, &plain_g);
  ASSERT_EQ(bf16.losses.size(), 3u);
  EXPECT_NE(bf16.losses.front(), fp32.losses.front());  // computed in bf16
  EXPECT_NEAR(bf16.losses.front(), fp32.losses.front(), 0.02 * fp32.losses.front());
  EXPECT_LT(bf16.losses.back(), bf16.losses.front());
  EXPECT_NE(bf16.params_fingerprint, fp32.params_fingerprint);
}

// A Hugging Face model is built as users build it and sharded in place: each rank's padded
// shard takes its rows of the built parameter. With values and a group of one, training is
// bit for bit the same as without FSDP2.
TEST(RunnerDistLaunch, Fsdp2OnAHuggingFaceModelWithAGroupOfOneTrainsExactlyAsWithoutOnTheCpuBackend) {
  using spectest::num;
  const SpecValue cfg = SpecValue::object({{"hidden_size", num(32)},
                                           {"intermediate_size", num(64)},
                                           {"num_hidden_layers", num(2)},
                                           {"num_attention_heads", num(4)},
                                           {"num_key_value_heads", num(2)},
                                           {"vocab_size", num(64)},
                                           {"max_position_embeddings", num(64)}});
  const SpecValue protocol =
      SpecValue::object({{"hf", SpecValue::object({{"arch", SpecValue::string("LlamaForCausalLM")}, {"config", cfg}})},
                         {"batch", num(2)},
                         {"seq", num(16)},
                         {"iterations", num(3)}});
  auto fields = spectest::hf_spec(protocol).fields();
  const engine::RunSpec plain_spec = engine::read_run_spec(SpecValue::object(fields));
  fields["parallel"] = merge_values(*spectest::defaults()["parallel"].find("fsdp2"),
                                    SpecValue::object({{"kind", SpecValue::string("fsdp2")}, {"world", num(1)}}));
  const engine::RunSpec fsdp_spec = engine::read_run_spec(SpecValue::object(fields));
  engine::RunOptions o;
  o.backend = "cpu";
  LoopbackGroup g, plain_g;
  engine::RunResult fsdp = engine::run_experiment(fsdp_spec, o, {}, &g);
  engine::RunResult plain = engine::run_experiment(plain_spec, o, {}, &plain_g);
  ASSERT_EQ(fsdp.losses.size(), 3u);
  EXPECT_EQ(fsdp.losses, plain.losses);
  EXPECT_NE(fsdp.losses.front(), fsdp.losses.back());
  EXPECT_EQ(fsdp.params_fingerprint, plain.params_fingerprint);
  EXPECT_EQ(g.counts().reduce_scatter, 3 * (1 + 2));
}
