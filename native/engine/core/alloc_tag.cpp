#include "engine/core/alloc_tag.h"

#include <mutex>
#include <unordered_map>
#include <vector>

namespace vramlab::engine {

// The one spelling of each category, the contract's (main/contract/runs.ts CATEGORIES; the
// addon exports this list and loading it checks the two agree).
const char* category_name(Category c) {
  switch (c) {
    case Category::Parameter:
      return "parameters";
    case Category::Gradient:
      return "gradients";
    case Category::OptimizerState:
      return "optimizer_state";
    case Category::Activation:
      return "activations";
    case Category::Temporary:
      return "temporaries";
    case Category::Input:
      return "inputs";
    case Category::Workspace:
      return "workspace";
    case Category::Other:
      return "other";
    case Category::Attention:
      return "attention";
    case Category::Mlp:
      return "mlp";
    case Category::Norm:
      return "norms";
    case Category::Logits:
      return "logits";
    case Category::KvCache:
      return "kv_cache";
    case Category::ActivationGradient:
      return "activation_gradients";
  }
  return "other";
}

std::string TagInfo::label() const { return std::string(category_name(category)) + "|" + op + "|" + module_path; }

namespace {

struct Tables {
  std::mutex mu;
  std::vector<std::string> paths{""};
  std::unordered_map<std::string, uint32_t> path_ids{{"", 0}};
  std::vector<TagInfo> tags{TagInfo{}};
  std::unordered_map<uint64_t, TagId> tag_ids;       // key: category | path | op id
  std::unordered_map<std::string, uint32_t> op_ids;  // op name -> small id
};

Tables& tables() {
  static Tables* t = new Tables;  // leaked on purpose: used from static destructors
  return *t;
}

}  // namespace

uint32_t intern_module_path(std::string_view path) {
  auto& t = tables();
  std::lock_guard<std::mutex> lock(t.mu);
  std::string key(path);
  auto it = t.path_ids.find(key);
  if (it != t.path_ids.end()) return it->second;
  uint32_t id = uint32_t(t.paths.size());
  t.paths.push_back(key);
  t.path_ids.emplace(std::move(key), id);
  return id;
}

const std::string& module_path_name(uint32_t id) {
  auto& t = tables();
  std::lock_guard<std::mutex> lock(t.mu);
  return id < t.paths.size() ? t.paths[id] : t.paths[0];
}

TagId intern_tag(Category c, uint32_t path, const char* op) {
  auto& t = tables();
  std::lock_guard<std::mutex> lock(t.mu);
  std::string opname = op ? op : "";
  auto oit = t.op_ids.find(opname);
  uint32_t op_id;
  if (oit == t.op_ids.end()) {
    op_id = uint32_t(t.op_ids.size());
    t.op_ids.emplace(opname, op_id);
  } else {
    op_id = oit->second;
  }
  uint64_t key = (uint64_t(c) << 56) | (uint64_t(path) << 24) | op_id;
  auto it = t.tag_ids.find(key);
  if (it != t.tag_ids.end()) return it->second;
  TagId id = TagId(t.tags.size());
  t.tags.push_back(TagInfo{c, t.paths[path], opname});
  t.tag_ids.emplace(key, id);
  return id;
}

TagInfo tag_info(TagId id) {
  auto& t = tables();
  std::lock_guard<std::mutex> lock(t.mu);
  return id < t.tags.size() ? t.tags[id] : TagInfo{};
}

Category tag_category(TagId id) {
  auto& t = tables();
  std::lock_guard<std::mutex> lock(t.mu);
  return id < t.tags.size() ? t.tags[id].category : Category::Other;
}

AllocScopeState& alloc_scope() {
  thread_local AllocScopeState s;
  return s;
}

TagId current_tag(const char* op) { return current_tag(op, alloc_scope().category); }
TagId current_tag(const char* op, Category c) { return intern_tag(c, alloc_scope().module_path, op); }

}  // namespace vramlab::engine
