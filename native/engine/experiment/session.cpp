#include "engine/experiment/session.h"

#include <stdexcept>

#include "engine/backends/backend.h"
#include "engine/nn/linear.h"
#include "engine/ops/ops.h"

namespace vramlab::engine {

Session open_session(const std::string& device_id, const std::string& backend_in, const std::string& conf) {
  Session s;
  s.device = std::shared_ptr<Device>(open_device(device_id));
  s.allocator = std::make_shared<alloc::CachingAllocator>(s.device, alloc::AllocatorSettings::parse(conf));
  s.memory = std::make_unique<AllocatorMemory>(s.allocator);
  std::string backend = backend_in.empty() ? (device_id.rfind("cuda:", 0) == 0 ? "cuda" : "sim") : backend_in;
  std::shared_ptr<Backend> be;
  if (backend == "sim") {
    be = make_sim_backend(s.device->info());
  } else if (backend == "cpu") {
    be = make_cpu_backend();
  } else if (backend == "cuda") {
    std::string why;
    be = make_cuda_backend(&why);
    if (!be) throw std::runtime_error("cuda backend unavailable: " + why);
  } else {
    throw std::invalid_argument("unknown backend '" + backend + "' (expected sim, cpu or cuda)");
  }
  s.ctx = std::make_unique<EngineContext>(be, s.memory.get(), s.device->info());
  return s;
}

void warm_up(const std::string& kind) {
  CategoryScope cs(Category::Temporary);
  if (kind == "linear") {
    // torch_protocol.py: w = nn.Linear(8, 8).cuda(); w(torch.randn(4, 8)).sum().backward()
    // (Python frees each temporary as soon as the next op has taken it: the output of
    // w(...) goes before backward, unlike a C++ full expression's temporaries)
    Linear w(8, 8);
    Tensor loss;
    {
      Tensor y = w(randn({4, 8}));
      loss = sum(y);
    }
    loss.backward();
  } else if (kind == "matmul") {
    // bench/torch/protocol.py's matmul warm-up: (a @ a).sum().backward(), a 64x64 leaf
    Tensor a = randn({64, 64});
    a.requires_grad_(true);
    Tensor loss;
    {
      Tensor y = mm(a, a);
      loss = sum(y);
    }
    loss.backward();
  } else {
    throw std::invalid_argument("unknown warmup '" + kind + "' (expected linear or matmul)");
  }
}

}  // namespace vramlab::engine
