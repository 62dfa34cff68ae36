// Prints the allocator's trace of one experiment, one line per event ("A size addr op
// module" / "F ..." / "S ..." segment allocs), for comparing the engine's allocation
// sequence with a PyTorch trace of the same spec (bench/torch/trace_protocol.py):
//   vramlab_trace_spec '{"model":{"kind":"gpt",...},"batch":8}'   (a partial spec)
//   vramlab_trace_spec --hf '{"hf":{"arch":...},...}' [device]       (hf_protocol.py's spec,
//                                                                     sim:h100-80gb by default)
#include <cstdio>
#include <string>
#include <variant>

#include "runner/job_spec.h"
#include "runner/worker.h"
#include "hf_spec_util.h"
#include "spec_util.h"

using namespace vramlab::runner;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s SPEC_JSON\n", argv[0]);
    return 2;
  }
  JobRequest r;
  r.kind = "experiment";
  if (std::string(argv[1]) == "--hf") {
    if (argc < 3) {
      std::fprintf(stderr, "usage: %s --hf PROTOCOL_SPEC_JSON [device]\n", argv[0]);
      return 2;
    }
    const std::string device = argc > 3 ? argv[3] : "sim:h100-80gb";
    r.spec = vramlab::engine::read_run_spec(vramlab::spectest::hf_spec(vramlab::engine::parse_json(argv[2]), device));
  } else {
    r.spec = vramlab::spectest::spec(argv[1]);
  }
  r.spec.history = true;
  RunWorker w(make_job(r), [] {});
  w.start();
  auto print = [](EventBatch&& b) {
    for (auto& e : b.events) {
      if (auto* p = std::get_if<Phase>(&e)) {
        if (p->name != "module")
          std::printf("# %s %s %lld\n", p->begin ? "begin" : "end", p->name.c_str(), (long long)p->iteration);
        continue;
      }
      auto* a = std::get_if<AllocEvent>(&e);
      if (!a) continue;
      const char* tag = a->action == "alloc"                                     ? "A"
                        : (a->action == "free" || a->action == "free_completed") ? "F"
                        : a->action == "segment_alloc"                           ? "S"
                        : a->action == "segment_free"                            ? "X"
                                                                                 : "O";
      std::printf("%s %lld %llx %s %s\n", tag, (long long)a->size, (unsigned long long)a->addr, a->op.c_str(),
                  a->module.c_str());
    }
  };
  while (!w.wait_for(5)) print(w.drain());
  w.join();
  print(w.drain());
  auto o = w.outcome();
  std::printf("# status %d %s\n", int(o->status), o->error.c_str());
  for (auto& [k, v] : o->result.readings) std::printf("# reading %s %lld\n", k.c_str(), (long long)v);
  return 0;
}
