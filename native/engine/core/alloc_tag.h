#pragma once
// Every allocation carries a tag: what the memory is for (category), which module
// made it and which op. Tags are interned to a small id so the hot path passes an
// integer; the thread-local scope below says what the current code is doing.
#include <cstdint>
#include <string>
#include <string_view>

namespace vramlab::engine {

// Activations of transformer layers split by what made them (attention, MLP, norms,
// logits and loss), since that is where users look first; the KV cache of generation
// is its own category. Backward's buffers are activation gradients (the logits' and every
// layer output's gradient) until AccumulateGrad makes one a parameter's .grad: only those
// are Gradient. New categories go last: stored runs index MemorySample.by by position.
enum class Category : uint8_t {
  Parameter,
  Gradient,
  OptimizerState,
  Activation,
  Temporary,
  Input,
  Workspace,
  Other,
  Attention,
  Mlp,
  Norm,
  Logits,
  KvCache,
  ActivationGradient
};
constexpr int kNumCategories = 14;
const char* category_name(Category c);

using TagId = uint32_t;  // 0 = untagged

struct TagInfo {
  Category category = Category::Other;
  std::string module_path;    // "layers.3.net.0"
  std::string op;             // "addmm"
  std::string label() const;  // "activations|addmm|layers.3.net.0"
};

// Interns (category, module path id, op) -> TagId. Thread-safe; lookups are a hash probe.
TagId intern_tag(Category c, uint32_t module_path_id, const char* op);
uint32_t intern_module_path(std::string_view path);
const std::string& module_path_name(uint32_t id);
TagInfo tag_info(TagId id);
Category tag_category(TagId id);

// What the calling thread is doing. Ops read it when they allocate.
struct AllocScopeState {
  Category category = Category::Temporary;
  uint32_t module_path = 0;  // interned; 0 = ""
};
AllocScopeState& alloc_scope();

// RAII: set the category for allocations made inside.
class CategoryScope {
 public:
  explicit CategoryScope(Category c) : saved_(alloc_scope().category) { alloc_scope().category = c; }
  ~CategoryScope() { alloc_scope().category = saved_; }
  CategoryScope(const CategoryScope&) = delete;
  CategoryScope& operator=(const CategoryScope&) = delete;

 private:
  Category saved_;
};

// RAII: enter a module (path is absolute, e.g. "layers.3.net.0").
class ModuleScope {
 public:
  explicit ModuleScope(uint32_t path_id) : saved_(alloc_scope().module_path) { alloc_scope().module_path = path_id; }
  ~ModuleScope() { alloc_scope().module_path = saved_; }
  ModuleScope(const ModuleScope&) = delete;
  ModuleScope& operator=(const ModuleScope&) = delete;

 private:
  uint32_t saved_;
};

// Tag for an allocation made now by `op` under the current scope.
TagId current_tag(const char* op);
TagId current_tag(const char* op, Category c);

}  // namespace vramlab::engine
