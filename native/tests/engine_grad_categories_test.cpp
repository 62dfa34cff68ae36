// Backward's buffers are activation gradients (the loss's, each layer output's) until
// AccumulateGrad keeps one as a parameter's .grad: the split by category files each where it
// belongs, and the categories still add up to what the allocator holds.
#include <gtest/gtest.h>

#include <numeric>

#include "engine/autograd/node.h"
#include "engine/ops/ops.h"
#include "engine_test_util.h"

using namespace vramlab::engine;
using vramlab::enginetest::EngineSession;

namespace {
int64_t all_categories(const EngineContext& ctx) {
  auto by = ctx.category_snapshot();
  return std::accumulate(by.begin(), by.end(), int64_t(0));
}
}  // namespace

TEST(engine_grad_categories, ParameterGradsAreGradientsLayerOutputGradsAreActivationGradients) {
  EngineSession s(false, "sim:h100-80gb");
  Tensor w1, w2, x;
  {
    CategoryScope cs(Category::Parameter);
    w1 = randn({1024, 1024});
    w2 = randn({1024, 512});
  }
  w1.requires_grad_();
  w2.requires_grad_();
  {
    CategoryScope cs(Category::Input);
    x = randn({4096, 1024});
  }
  Tensor loss;
  {
    CategoryScope cs(Category::Activation);
    loss = sum(mm(mm(x, w1), w2));
  }
  // When the first layer's backward starts, the gradient of its output (4096 x 1024 fp32)
  // is alive: an activation's gradient, no parameter's.
  const int64_t y1_grad = 4096 * 1024 * 4;
  int64_t act_grads_in_backward = -1;
  Node* first_layer = loss.grad_fn()->next_edges()[0].fn->next_edges()[0].fn.get();
  first_layer->pre_hooks.push_back(
      [&] { act_grads_in_backward = s.ctx->category_bytes(Category::ActivationGradient); });
  loss.backward();

  EXPECT_GE(act_grads_in_backward, y1_grad);
  // After backward only the parameters' .grad remain, as gradients; nothing of backward's own.
  EXPECT_EQ(s.ctx->category_bytes(Category::Gradient),
            int64_t(w1.grad().storage()->block.size + w2.grad().storage()->block.size));
  EXPECT_EQ(s.ctx->category_bytes(Category::ActivationGradient), 0);
  EXPECT_EQ(all_categories(*s.ctx), s.allocated());
}

TEST(engine_grad_categories, NewCardsResolveTheirOwnKernelFacts) {
  // "L40S" contains "L4": each card must get its own SM count and compute capability.
  struct Want {
    const char* id;
    int sms, cc;
  };
  for (const Want& w : {Want{"sim:l40s-48gb", 142, 89}, Want{"sim:l4-24gb", 58, 89}, Want{"sim:rtx3090-24gb", 82, 86},
                        Want{"sim:a10g-24gb", 80, 86}, Want{"sim:a6000-48gb", 84, 86}, Want{"sim:v100-16gb", 80, 70},
                        Want{"sim:v100-32gb", 80, 70}}) {
    EngineSession s(false, w.id);
    EXPECT_EQ(s.ctx->sm_count(), w.sms) << w.id;
    EXPECT_EQ(s.ctx->compute_capability(), w.cc) << w.id;
    // Not Hopper: cuBLAS's default workspace is ":4096:2:16:8" (8 MiB + 128 KiB).
    EXPECT_EQ(s.ctx->cublas_workspace_size(), size_t(4096) * 1024 * 2 + 16 * 1024 * 8) << w.id;
  }
}
