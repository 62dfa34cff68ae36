// "sim:custom:SIZE@PRESET": a preset's GPU at another size. The engine takes its kernels' facts
// from the device name, so the twin must carry the card's model, not only its size.
#include <gtest/gtest.h>

#include "device/device.h"
#include "device/presets.h"
#include "engine_test_util.h"

namespace vramlab {
namespace {

using enginetest::EngineSession;

TEST(DeviceModel, CustomSizeWithPresetIsNamedAfterThePresetsGpuWithoutContext) {
  auto d = open_device("sim:custom:1TiB@h100-80gb");
  DeviceInfo info = d->info();
  EXPECT_EQ(info.id, "sim:custom:1TiB@h100-80gb");
  EXPECT_EQ(info.name, "NVIDIA H100 80GB (simulated, 1TiB)");
  EXPECT_EQ(d->total_memory(), 1ull << 40);
  EXPECT_EQ(info.context, 0u);
  EXPECT_EQ(d->free_memory(), 1ull << 40);
  // The preset's speeds, for the time model.
  auto a100 = find_sim_preset("a100-40gb");
  DeviceInfo a = open_device("sim:custom:2GiB@a100-40gb")->info();
  EXPECT_EQ(a.mem_bandwidth_gbs, a100->mem_bandwidth_gbs);
  EXPECT_EQ(a.bf16_tflops, a100->bf16_tflops);
}

TEST(DeviceModel, UnknownModelOrSizeIsRefused) {
  EXPECT_THROW(open_device("sim:custom:1TiB@h100"), std::invalid_argument);
  EXPECT_THROW(open_device("sim:custom:1TiB@"), std::invalid_argument);
  EXPECT_THROW(open_device("sim:custom:lots@h100-80gb"), std::invalid_argument);
  EXPECT_THROW(open_device("sim:custom:1TiB@cuda:99"), std::invalid_argument);
}

TEST(DeviceModel, EngineFactsFollowThePresetNotTheGenericDevice) {
  // cuBLAS's default workspace is 32 MiB on Hopper and 8 MiB + 128 KiB elsewhere; SM counts
  // and compute capability (SDPA's backend choice) follow the card as well.
  struct Want {
    const char* preset;
    size_t workspace;
  };
  const size_t hopper = size_t(4096) * 8 * 1024, other = size_t(4096) * 1024 * 2 + 16 * 1024 * 8;
  for (const Want& w : {Want{"h100-80gb", hopper}, Want{"h200-141gb", hopper}, Want{"a100-80gb", other},
                        Want{"l40s-48gb", other}, Want{"t4-16gb", other}}) {
    EngineSession card(false, std::string("sim:") + w.preset);
    EngineSession twin(false, std::string("sim:custom:1099511627776@") + w.preset);
    EXPECT_EQ(twin.ctx->cublas_workspace_size(), w.workspace) << w.preset;
    EXPECT_EQ(twin.ctx->cublas_workspace_size(), card.ctx->cublas_workspace_size()) << w.preset;
    EXPECT_EQ(twin.ctx->sm_count(), card.ctx->sm_count()) << w.preset;
    EXPECT_EQ(twin.ctx->compute_capability(), card.ctx->compute_capability()) << w.preset;
    EXPECT_EQ(twin.ctx->max_threads_per_sm(), card.ctx->max_threads_per_sm()) << w.preset;
  }
  // The generic device is no Hopper card: the bug this form fixes.
  EngineSession generic(false, "sim:custom:1099511627776");
  EXPECT_EQ(generic.ctx->cublas_workspace_size(), other);
}

}  // namespace
}  // namespace vramlab
