// The workspace PyTorch 2.11's cuDNN attention backward takes (the cudnn-frontend graph's:
// a float dQ accumulator, the softmax row sums, 256 B, and with grouped kv heads dK and dV
// at the query's head count in the input dtype), held to our H100 measurements of 130
// shapes (test/refs/measured/h100_cudnn_sdpa_backward_workspace.json).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "allocator/history.h"
#include "engine/ops/attention.h"
#include "engine/ops/ops.h"
#include "engine_test_util.h"
#include "spec_util.h"

using namespace vramlab::engine;
using vramlab::enginetest::EngineSession;

namespace {

// Every block requested during backward other than dq, dk and dv, with q, k, v laid out as
// HF's attention makes them: projections (B, S, heads * D) viewed and transposed.
std::vector<uint64_t> backward_workspaces(int64_t B, int64_t H, int64_t KV, int64_t S, int64_t D) {
  EngineSession s(false, "sim:h100-80gb");
  Tensor qb = randn({B, S, H * D}, DType::BFloat16), kb = randn({B, S, KV * D}, DType::BFloat16),
         vb = randn({B, S, KV * D}, DType::BFloat16);
  for (Tensor* t : {&qb, &kb, &vb}) t->requires_grad_(true);
  Tensor q = qb.view({B, S, H, D}).transpose(1, 2), k = kb.view({B, S, KV, D}).transpose(1, 2),
         v = vb.view({B, S, KV, D}).transpose(1, 2);
  Tensor o = scaled_dot_product_attention(q, k, v, true, KV != H, 0.0);
  Tensor y = o.transpose(1, 2).contiguous();
  Tensor go = randn({B, S, H, D}, DType::BFloat16);
  s.allocator->set_history(true);
  y.backward(go);
  const uint64_t dq = uint64_t(B * H * S * D * 2), dkv = uint64_t(B * KV * S * D * 2);
  std::vector<uint64_t> out;
  for (auto& e : s.allocator->history())
    if (e.action == vramlab::alloc::TraceAction::kAlloc && e.size != dq && e.size != dkv) out.push_back(e.size);
  return out;
}

}  // namespace

TEST(engine_cudnn_workspace, BackwardWorkspaceMatchesTheMeasuredShapes) {
  const auto& ref = vramlab::spectest::repo_json("test/refs/measured/h100_cudnn_sdpa_backward_workspace.json");
  int checked = 0;
  for (const auto& row : ref["rows"].items()) {
    const auto& r = row.items();
    const int64_t B = r[0].as_int("batch"), H = r[1].as_int("heads"), KV = r[2].as_int("kv_heads"),
                  S = r[3].as_int("seq"), D = r[4].as_int("head_dim");
    SCOPED_TRACE("B=" + std::to_string(B) + " H=" + std::to_string(H) + " KV=" + std::to_string(KV) +
                 " S=" + std::to_string(S) + " D=" + std::to_string(D));
    EXPECT_EQ(backward_workspaces(B, H, KV, S, D), std::vector<uint64_t>{uint64_t(r[5].as_int("workspace"))});
    ++checked;
  }
  EXPECT_EQ(checked, 130);
}
