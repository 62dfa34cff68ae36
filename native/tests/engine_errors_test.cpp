// Bad use gives PyTorch's errors as C++ exceptions.
#include <gtest/gtest.h>

#include "engine/core/grad_mode.h"
#include "engine/models/family.h"
#include "engine/nn/nn.h"
#include "engine/ops/ops.h"
#include "spec_util.h"
#include "engine_test_util.h"

using namespace vramlab::engine;
using vramlab::enginetest::EngineSession;

namespace {

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(engine_errors, MatmulShapeMismatchNamesBothShapes) {
  EngineSession s(false);
  Tensor a = randn({256, 1024}), b = randn({512, 2048});
  EXPECT_EQ(error_of([&] { mm(a, b); }), "mat1 and mat2 shapes cannot be multiplied (256x1024 and 512x2048)");
  Linear lin(512, 10);
  EXPECT_EQ(error_of([&] { lin(a); }), "mat1 and mat2 shapes cannot be multiplied (256x1024 and 512x10)");
}

TEST(engine_errors, InplaceOnSavedTensor) {
  EngineSession s(true);
  Tensor a = randn({4, 3});
  a.requires_grad_(true);
  Tensor r = relu(a);
  Tensor y = mul(r, 2.0);
  add_(r, 1.0);
  std::string msg = error_of([&] { sum(relu(mul(r, 1.0))).backward(); });
  // relu's own result was modified: the ReluBackward0 that saved it reports.
  Tensor r2 = relu(a);
  Tensor z = sum(r2);
  mul_(r2, 3.0);
  msg = error_of([&] { z.backward(); });
  EXPECT_EQ(msg,
            "one of the variables needed for gradient computation has been modified by an inplace operation: "
            "[torch.FloatTensor [4, 3]], which is output 0 of ReluBackward0, is at version 1; expected version 0 "
            "instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, "
            "with torch.autograd.set_detect_anomaly(True).");
}

TEST(engine_errors, BackwardTwice) {
  EngineSession s(false);
  Linear lin(8, 4);
  Tensor loss = sum(relu(lin(randn({2, 8}))));
  loss.backward(Tensor(), /*retain_graph=*/true);
  loss.backward();  // retained: fine
  std::string msg = error_of([&] { loss.backward(); });
  EXPECT_EQ(msg.rfind("Trying to backward through the graph a second time", 0), 0u) << msg;
}

TEST(engine_errors, MiscBadUse) {
  EngineSession s(false);
  Tensor a = randn({3, 4});
  EXPECT_EQ(error_of([&] { sum(a).backward(); }),
            "element 0 of tensors does not require grad and does not have a grad_fn");
  a.requires_grad_(true);
  EXPECT_EQ(error_of([&] { a.backward(); }), "grad can be implicitly created only for scalar outputs");
  EXPECT_EQ(error_of([&] { add_(a, 1.0); }),
            "a leaf Variable that requires grad is being used in an in-place operation.");
  EXPECT_EQ(error_of([&] { add(a, randn({5})); }),
            "The size of tensor a (4) must match the size of tensor b (5) at non-singleton dimension 1");
  EXPECT_NE(error_of([&] { sum(a).item(); }).find("simulated device"), std::string::npos);
  EXPECT_NE(error_of([&] { a.view({5, 5}); }).find("is invalid for input of size 12"), std::string::npos);
  RunSpec c = vramlab::spectest::spec("{}");
  c.model.kind = "transformer";
  EXPECT_NE(error_of([&] { run_experiment(c); }).find("unknown model"), std::string::npos);
}

TEST(engine_memory, LeafGradientIsStolenThenAccumulatedInPlace) {
  EngineSession s(false);
  Linear lin(256, 256);  // 256 KiB weight
  Tensor x = randn({4, 256});
  sum(lin(x)).backward();  // creates the forward/backward cuBLAS workspaces
  lin.zero_grad();
  int64_t before = s.allocated();
  sum(lin(x)).backward();
  int64_t after_first = s.allocated();
  void* grad_ptr = lin.weight.grad().storage().get();
  sum(lin(x)).backward();
  EXPECT_EQ(s.allocated(), after_first);  // accumulated in place
  EXPECT_EQ(lin.weight.grad().storage().get(), grad_ptr);
  EXPECT_EQ(after_first - before, int64_t(256 * 256 * 4 + 1024));  // weight grad + bias grad block
}

TEST(engine_memory, ViewsShareStorageCopiesDoNot) {
  EngineSession s(false);
  Tensor a = randn({64, 64});
  int64_t base = s.allocated();
  Tensor v = a.t();
  Tensor w = a.view({4096});
  Tensor sl = a.slice(0, 0, 8);
  EXPECT_EQ(s.allocated(), base);
  EXPECT_EQ(v.storage(), a.storage());
  Tensor c = v.contiguous();
  EXPECT_EQ(s.allocated(), base + 64 * 64 * 4);
  a.reset();
  v.reset();
  w.reset();
  EXPECT_EQ(s.allocated(), base + 64 * 64 * 4);  // sl keeps the storage alive
  sl.reset();
  EXPECT_EQ(s.allocated(), base);  // a's storage is gone; c (same size) remains
}
