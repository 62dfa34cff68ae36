#include "engine/core/context.h"

#include <stdexcept>

#include "engine/backends/backend.h"
#include "engine/core/driver_use.h"
#include "engine/core/grad_mode.h"

namespace vramlab::engine {

namespace {
thread_local bool t_grad_enabled = true;
thread_local EngineContext* t_context = nullptr;
}  // namespace

bool GradMode::is_enabled() { return t_grad_enabled; }
void GradMode::set_enabled(bool e) { t_grad_enabled = e; }

ThreadRole& thread_role() {
  thread_local ThreadRole r = ThreadRole::Forward;
  return r;
}

EngineContext::EngineContext(std::shared_ptr<Backend> backend, MemoryBackend* memory, DeviceInfo info)
    : backend_(std::move(backend)), memory_(memory), info_(std::move(info)) {
  if (!backend_ || !memory_) throw std::invalid_argument("EngineContext needs a backend and a memory backend");
}

EngineContext::~EngineContext() { workspaces_.clear(); }

double EngineContext::modeled_time_s() const { return backend_->modeled_time_s(); }

bool EngineContext::on_device() const { return backend_->models_cuda(); }

std::shared_ptr<Storage> EngineContext::allocate_storage(size_t nbytes, TagId tag) {
  auto s = std::make_shared<Storage>();
  s->block = memory_->allocate(nbytes, tag);
  s->ctx = this;
  s->nbytes = nbytes;
  s->tag = tag;
  category_bytes_[size_t(tag_category(tag))] += int64_t(s->block.size);
  backend_->attach_data(*s);
  if (sample_every > 0 && on_event && (++alloc_count_ % sample_every) == 0) emit(EngineEvent{});
  return s;
}

void EngineContext::storage_freed(const Storage& s) {
  category_bytes_[size_t(tag_category(s.tag))] -= int64_t(s.block.size);
}

void EngineContext::recategorize(Storage& s, Category c) {
  if (tag_category(s.tag) == c) return;
  const TagInfo info = tag_info(s.tag);
  if (s.block) {
    category_bytes_[size_t(tag_category(s.tag))] -= int64_t(s.block.size);
    category_bytes_[size_t(c)] += int64_t(s.block.size);
  }
  s.tag = intern_tag(c, intern_module_path(info.module_path), info.op.c_str());
}

void EngineContext::resize_storage(Storage& s, size_t nbytes) {
  if (nbytes == 0) {
    if (!s.block) return;
    storage_freed(s);
    memory_->release(s.block);
    s.block = MemBlock{};
    s.data = nullptr;  // the values went with the block
    s.host.reset();
    return;
  }
  if (s.block) throw std::logic_error("resize_storage: the storage still holds its block");
  s.block = memory_->allocate(nbytes, s.tag);
  s.nbytes = nbytes;
  s.ctx = this;
  category_bytes_[size_t(tag_category(s.tag))] += int64_t(s.block.size);
  backend_->attach_data(s);  // the new block's memory (uninitialised, as resize_'s)
}

Storage::~Storage() {
  if (ctx) {
    ctx->storage_freed(*this);
    ctx->memory().release(block);
  }
}

size_t EngineContext::cublas_workspace_size() const {
  // PyTorch's default CUBLAS_WORKSPACE_CONFIG: ":4096:8" (32 MiB) on sm90 (Hopper),
  // ":4096:2:16:8" elsewhere (aten/src/ATen/cuda/CublasHandlePool.cpp).
  const std::string& n = info_.name;
  bool sm90 = n.find("H100") != std::string::npos || n.find("H200") != std::string::npos ||
              n.find("GH200") != std::string::npos || n.find("H800") != std::string::npos;
  return sm90 ? size_t(4096) * 8 * 1024 : size_t(4096) * 1024 * 2 + 16 * 1024 * 8;
}

namespace {
struct SmFacts {
  const char* name_part;
  int sms, threads, cc;  // cc: compute capability x 10
};
// SXM parts unless the name says PCIe; sm70/sm80/sm90: 2048 threads per SM, sm86/sm89: 1536, sm75: 1024.
// "L40S" before "L4": the first entry the name contains wins.
constexpr SmFacts kSmFacts[] = {
    {"H100 PCIe", 114, 2048, 90}, {"H200", 132, 2048, 90}, {"H100", 132, 2048, 90},    {"H800", 132, 2048, 90},
    {"A100", 108, 2048, 80},      {"A800", 108, 2048, 80}, {"L40S", 142, 1536, 89},    {"L4", 58, 1536, 89},
    {"RTX 4090", 128, 1536, 89},  {"T4", 40, 1024, 75},    {"RTX 3090", 82, 1536, 86}, {"A10G", 80, 1536, 86},
    {"A6000", 84, 1536, 86},      {"V100", 80, 2048, 70},
};
const SmFacts* sm_facts(const std::string& name) {
  for (const auto& f : kSmFacts)
    if (name.find(f.name_part) != std::string::npos) return &f;
  return nullptr;
}
}  // namespace

int EngineContext::sm_count() const {
  const SmFacts* f = sm_facts(info_.name);
  return f ? f->sms : 132;
}

int EngineContext::compute_capability() const {
  const SmFacts* f = sm_facts(info_.name);
  return f ? f->cc : 90;
}

int EngineContext::max_threads_per_sm() const {
  const SmFacts* f = sm_facts(info_.name);
  return f ? f->threads : 2048;
}

void EngineContext::ensure_blas_workspace(bool lt) {
  if (!backend_->models_cuda()) return;
  int role = int(thread_role());
  // getCurrentCUDABlasHandle() sets the cuBLAS workspace first; the Lt workspace
  // (getCUDABlasLtWorkspace) is a separate 1 MiB block per handle and stream.
  auto key = std::make_pair(role, 0);
  if (!workspaces_.count(key)) {
    // the handle's creation: cuBLAS's kernels once per process, a handle per thread
    driver_use(DriverUse::CublasCode);
    driver_use(DriverUse::CublasHandle);
    CategoryScope cs(Category::Workspace);
    ModuleScope ms(0);
    workspaces_[key] = allocate_storage(cublas_workspace_size(), current_tag("cublas_workspace"));
  }
  if (lt) {
    auto lkey = std::make_pair(role, 1);
    if (!workspaces_.count(lkey)) {
      driver_use(DriverUse::CublasLt);
      CategoryScope cs(Category::Workspace);
      ModuleScope ms(0);
      workspaces_[lkey] = allocate_storage(cublaslt_workspace_size(), current_tag("cublaslt_workspace"));
    }
  }
}

void EngineContext::clear_blas_workspaces() { workspaces_.clear(); }

const Storage* EngineContext::blas_workspace() const {
  auto it = workspaces_.find(std::make_pair(int(thread_role()), 0));
  return it == workspaces_.end() ? nullptr : it->second.get();
}

void EngineContext::emit(EngineEvent e) {
  if (!on_event) return;
  e.allocated = memory_->memory_allocated();
  e.reserved = memory_->memory_reserved();
  e.by_category = category_bytes_;
  e.sim_time_s = modeled_time_s();
  on_event(e);
}

void EngineContext::phase(bool begin, const std::string& name, int64_t iteration, int64_t micro,
                          const std::string& module) {
  if (!on_event) return;
  EngineEvent e;
  e.kind = begin ? EngineEvent::Kind::PhaseBegin : EngineEvent::Kind::PhaseEnd;
  e.name = name;
  e.iteration = iteration;
  e.micro_batch = micro;
  e.module = module;
  emit(std::move(e));
}

EngineContext& current_context() {
  if (!t_context) throw std::logic_error("no engine context is current on this thread");
  return *t_context;
}
EngineContext* current_context_or_null() { return t_context; }

ContextGuard::ContextGuard(EngineContext& c) : saved_(t_context) { t_context = &c; }
ContextGuard::~ContextGuard() { t_context = saved_; }

}  // namespace vramlab::engine
