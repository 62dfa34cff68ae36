// Freeing an autograd graph takes bounded stack whatever its depth, and frees in
// PyTorch's order (torch/csrc/autograd/function.cpp deleteNode): a node's saved variables
// first, then the next nodes it owned alone, the last edge first. Each deep case runs in
// a child process (a death-test) on a thread with a small stack, so a regression is a
// reported failure, not a crash of the suite.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "allocator/history.h"
#include "engine/autograd/node.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/ops/ops.h"
#include "engine_test_util.h"
#include "runner/run_thread.h"

using namespace vramlab::engine;
using vramlab::enginetest::EngineSession;
using vramlab::runner::RunThread;

namespace {

// Below macOS's 512 KiB for secondary threads: a recursive release of a few thousand
// nodes already overflows it.
constexpr size_t kSmallStack = 256 << 10;
constexpr int kDeep = 100000;

// Runs `fn` on a fresh thread with a small stack, in a child process that exits 0 when
// it returns.
template <class F>
void in_child_on_small_stack(F fn) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        RunThread t(fn, kSmallStack);
        t.join();
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

// The parent frees what the child freed: on its own (main) stack, which a recursive
// release of these graphs overflows too, so after a failure it lets go without freeing
// and the suite reports the failure instead of crashing.
template <class T>
void release_unless_failed(T& x) {
  if (::testing::Test::HasFailure())
    (void)new T(std::move(x));  // leaked on purpose
  else
    x.reset();
}

// Records the order the graph is released in.
struct Probe : Node {
  std::string id;
  std::vector<std::string>* log;
  bool released = false;
  Probe(std::string i, std::vector<std::string>* l) : id(std::move(i)), log(l) {}
  std::string name() const override { return "Probe"; }
  TensorList apply(TensorList&) override { return {}; }
  void release_variables() override {
    if (!released) log->push_back("release " + id);
    released = true;
  }
  ~Probe() override { log->push_back("delete " + id); }
};

std::shared_ptr<Probe> probe(const std::string& id, std::vector<std::string>& log,
                             std::vector<std::shared_ptr<Node>> next = {}) {
  auto n = new_node<Probe>(id, &log);
  for (auto& x : next) n->next_edges().push_back(Edge{x, 0});
  return n;
}

// A node whose only link to the next one is a tensor it holds (as a checkpoint frame
// holds its region's inputs): freeing it frees the next one from inside its own release.
struct Holds : Node {
  Tensor held;
  std::string name() const override { return "Holds"; }
  TensorList apply(TensorList&) override { return {}; }
};

}  // namespace

TEST(engine_graph_release, FreesInPyTorchOrderLastEdgeFirst) {
  std::vector<std::string> log;
  {
    auto c = probe("c", log), d = probe("d", log);
    auto a = probe("a", log, {c}), b = probe("b", log, {d});
    auto shared = probe("shared", log);
    auto root = probe("root", log, {a, b, shared});
    auto keep = shared;  // owned elsewhere too: released only when `keep` goes
    c.reset(), d.reset(), a.reset(), b.reset(), shared.reset();
    root.reset();
    EXPECT_EQ(log, (std::vector<std::string>{"release root", "delete root", "release b", "delete b", "release d",
                                             "delete d", "release a", "delete a", "release c", "delete c"}));
    log.clear();
  }
  EXPECT_EQ(log, (std::vector<std::string>{"release shared", "delete shared"}));
}

TEST(engine_graph_release, SavedVariablesFreedInReleaseOrderBeforeTheOutput) {
  // MmBackward0's release_variables resets mat2_ then self_ (PyTorch's generated code emits
  // saved inputs sorted by name; gatherFunctions calls it when a graph goes unused too),
  // and the graph goes before the output's own storage (TensorImpl::release_resources).
  EngineSession s(false);
  Tensor x = randn({16, 16});
  x.requires_grad_(true);
  Tensor a = mul(x.slice(0, 0, 8), 2.0);  // 8 x 16: 512 B, saved as self
  Tensor b = mul(cat({x, x}, 1), 3.0);    // 16 x 32: 2048 B, saved as mat2
  Tensor y = mm(a, b);                    // 8 x 32: 1024 B
  a.reset(), b.reset();                   // the node's saved variables own them now
  s.allocator->set_history(true);
  y.reset();
  std::vector<uint64_t> freed;
  for (auto& e : s.allocator->history())
    if (e.action == vramlab::alloc::TraceAction::kFree) freed.push_back(e.size);
  EXPECT_EQ(freed, (std::vector<uint64_t>{2048, 512, 1024}));
}

TEST(engine_graph_release, DeepOpChainFreesOnASmallStack) {
  EngineSession s(false);
  Tensor x = randn({2, 2});
  x.requires_grad_(true);
  const int64_t before = s.allocated();
  Tensor y = x;
  for (int i = 0; i < kDeep; ++i) y = add(y, 1.0);  // a chain of AddBackward1 nodes
  in_child_on_small_stack([&] { y.reset(); });
  release_unless_failed(y);
  EXPECT_EQ(s.allocated(), before);
}

TEST(engine_graph_release, DeepNodeChainMadeWithoutTheDeleterFreesOnASmallStack) {
  // ~Node itself must not recurse: a node owned by a plain make_shared still goes through
  // the iterative release.
  std::shared_ptr<Node> head;
  for (int i = 0; i < kDeep; ++i) {
    auto n = std::make_shared<Holds>();
    if (head) n->next_edges().push_back(Edge{head, 0});
    head = n;
  }
  in_child_on_small_stack([&] { head.reset(); });
  release_unless_failed(head);
}

TEST(engine_graph_release, ChainThroughHeldTensorsFreesOnASmallStack) {
  // Node -> tensor -> grad_fn -> node ...: each release starts inside another's.
  std::shared_ptr<Node> head;
  for (int i = 0; i < kDeep; ++i) {
    auto n = new_node<Holds>();
    if (head) {
      n->held = Tensor(std::make_shared<TensorImpl>());
      n->held.impl()->grad_fn = head;
    }
    head = n;
  }
  std::weak_ptr<Node> first = head;
  in_child_on_small_stack([&] { head.reset(); });
  release_unless_failed(head);
  EXPECT_TRUE(first.expired() || HasFailure());
}

TEST(engine_graph_release, DeepCheckpointedGraphFreedWithoutBackwardOnASmallStack) {
  // Every block checkpointed: each region's frame keeps the previous region's output.
  EngineSession s(false);
  Tensor w = randn({4, 4});
  w.requires_grad_(true);
  mm(randn({2, 4}), w);  // the matmul thread's cuBLAS workspace, created once and kept
  const int64_t before = s.allocated();
  Tensor h = randn({2, 4});
  for (int i = 0; i < 4096; ++i) h = checkpoint([&](const Tensor& in) { return relu(add(mm(in, w), 1.0)); }, h);
  in_child_on_small_stack([&] { h.reset(); });
  release_unless_failed(h);
  EXPECT_EQ(s.allocated(), before);
}
