// scratch: not committed
#include <gtest/gtest.h>
#include <cstdio>
#include <fstream>
#include "engine/backends/allocator_memory.h"
#include "hf_spec_util.h"
using namespace vramlab::engine;
namespace alloc = vramlab::alloc;
TEST(scratch_hf, Trace) {
  const char* env = std::getenv("HF_IDX");
  const char* file = std::getenv("HF_FILE");
  SpecValue ref = load_json_file(std::string(VRAMLAB_SOURCE_DIR) + "/" + (file ? file : "test/refs/hf_reference.json"));
  const SpecValue& run = ref["runs"].items().at(env ? std::atoi(env) : 0);
  RunSpec s = read_run_spec(vramlab::spectest::hf_spec(run["spec"], std::getenv("HF_DEV") ? std::getenv("HF_DEV") : "sim:h200-141gb"));
  alloc::CachingAllocator* a = nullptr;
  std::vector<alloc::TraceEvent> tr;
  const char* stop = std::getenv("HF_STOP") ? std::getenv("HF_STOP") : "after_forward";
  bool started = false;
  run_experiment(s, {}, [&](const EngineEvent& e) {
    if (!a) {
      auto* mem = dynamic_cast<AllocatorMemory*>(&current_context().memory());
      a = &mem->allocator();
    }
    if (!started && e.kind == EngineEvent::Kind::PhaseBegin && e.name == "build_model") { a->set_history(true, 1000000); started = true; }
    if (e.kind == EngineEvent::Kind::Reading && e.name == stop) tr = a->snapshot(true).trace;
  });
  std::ofstream out("/tmp/engine_trace.txt");
  for (auto& t : tr) out << alloc::trace_action_name(t.action) << " " << t.block_size << " " << t.size << "\n";
}
