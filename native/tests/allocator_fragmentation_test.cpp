// test/refs/pytorch_reference.json "fragmentation_scenario": a 1100 MiB cap set with
// set_per_process_memory_fraction on an H200; allocate 1000 MiB and free it, allocate
// 5 x 200 MiB, free parts 0, 2, 4, then allocate 400 MiB.
#include <gtest/gtest.h>

#include "allocator_test_util.h"

namespace vramlab::alloc::testing {
namespace {

struct Outcome {
  bool oom = false;
  std::string message;
  int64_t reserved_after_parts = 0, allocated_before = 0, reserved_before = 0, reserved_end = 0;
  int64_t num_ooms = 0, num_alloc_retries = 0;
};

Outcome run_scenario(const std::string& conf) {
  auto dev = sim("sim:h200-141gb");
  CachingAllocator a(dev, AllocatorSettings::parse(conf));
  a.set_memory_fraction(static_cast<double>(1100 * MiB) / static_cast<double>(dev->total_memory()));
  Outcome o;
  a.free(a.malloc(1000 * MiB));
  std::vector<Allocation> parts;
  for (int i = 0; i < 5; ++i) parts.push_back(a.malloc(200 * MiB));
  o.reserved_after_parts = static_cast<int64_t>(a.memory_reserved());
  for (int i : {0, 2, 4}) a.free(parts[i]);
  o.allocated_before = static_cast<int64_t>(a.memory_allocated());
  o.reserved_before = static_cast<int64_t>(a.memory_reserved());
  try {
    a.malloc(400 * MiB);
  } catch (const OutOfMemoryError& e) {
    o.oom = true;
    o.message = e.what();
  }
  o.reserved_end = static_cast<int64_t>(a.memory_reserved());
  o.num_ooms = stat(a, "num_ooms");
  o.num_alloc_retries = stat(a, "num_alloc_retries");
  EXPECT_EQ(check_invariants(a, *dev), "") << conf;
  return o;
}

class Fragmentation : public ::testing::TestWithParam<const char*> {};

TEST_P(Fragmentation, MatchesPyTorch) {
  const std::string conf = GetParam();
  const std::string ref =
      json_object(json_object(read_source_file("test/refs/pytorch_reference.json"), "fragmentation_scenario"),
                  conf == "" ? "default" : conf);
  Outcome o = run_scenario(conf);
  EXPECT_EQ(o.reserved_after_parts, json_int(ref, "reserved_after_parts"));
  EXPECT_EQ(o.allocated_before, json_int(ref, "allocated_before"));
  EXPECT_EQ(o.reserved_before, json_int(ref, "reserved_before"));
  EXPECT_EQ(o.oom, json_string(ref, "outcome") == "oom");
  EXPECT_EQ(o.reserved_end, json_int(ref, "reserved_end"));
  EXPECT_EQ(o.num_ooms, json_int(ref, "num_ooms"));
  EXPECT_EQ(o.num_alloc_retries, json_int(ref, "num_alloc_retries"));
}

INSTANTIATE_TEST_SUITE_P(Reference, Fragmentation,
                         ::testing::Values("", "max_split_size_mb:128", "expandable_segments:True"));

TEST(Fragmentation, OomMessageHasPyTorchsShape) {
  const std::string ref = json_string(
      json_object(json_object(read_source_file("test/refs/pytorch_reference.json"), "fragmentation_scenario"),
                  "default"),
      "message");
  Outcome o = run_scenario("");
  ASSERT_TRUE(o.oom);
  // Everything up to "is free. " and from "allowed; " on is PyTorch's own text; the
  // middle names the other processes NVML saw on that machine.
  const std::string head =
      "CUDA out of memory. Tried to allocate 400.00 MiB. GPU 0 has a total capacity of 139.80 GiB of which ";
  ASSERT_EQ(ref.rfind(head, 0), 0u);
  EXPECT_EQ(o.message.rfind(head, 0), 0u) << o.message;
  const std::string tail_ref = ref.substr(ref.find("1.07 GiB allowed; "));
  const size_t at = o.message.find("1.07 GiB allowed; ");
  ASSERT_NE(at, std::string::npos) << o.message;
  // The reference was cut after "#optimizing-"; compare that much exactly.
  EXPECT_EQ(o.message.substr(at, tail_ref.size()), tail_ref);
  EXPECT_NE(o.message.find("600.00 MiB is reserved by PyTorch but unallocated"), std::string::npos);
  // The sim device reports its free memory: total minus the 1000 MiB reserved and the 767 MiB
  // CUDA context; the process holds both, as NVML counts it.
  EXPECT_NE(o.message.find(
                "of which 138.08 GiB is free. Including non-PyTorch memory, this process has 1.73 GiB memory in use. "),
            std::string::npos)
      << o.message;
}

TEST(Fragmentation, OomErrorCarriesTheNumbers) {
  auto dev = sim("sim:h200-141gb");
  CachingAllocator a(dev);
  a.set_capacity_limit(100 * MiB);
  auto keep = a.malloc(60 * MiB);
  try {
    a.malloc(50 * MiB);
    FAIL() << "expected OOM";
  } catch (const OutOfMemoryError& e) {
    EXPECT_EQ(e.requested, 50 * MiB);
    EXPECT_EQ(e.alloc_size, 50 * MiB);
    EXPECT_EQ(e.allocated, 60 * MiB);
    EXPECT_EQ(e.reserved, 60 * MiB);
    ASSERT_TRUE(e.allowed.has_value());
    EXPECT_EQ(*e.allowed, 100 * MiB);
    EXPECT_EQ(e.device_total, dev->total_memory());
    EXPECT_NE(std::string(e.what()).find("100.00 MiB allowed; "), std::string::npos);
  }
  a.free(keep);
}

}  // namespace
}  // namespace vramlab::alloc::testing
