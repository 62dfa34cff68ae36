#pragma once
// Thread-local grad mode (torch.no_grad / torch.enable_grad).
namespace vramlab::engine {

struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool e);
};

class NoGradGuard {
 public:
  NoGradGuard() : saved_(GradMode::is_enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(saved_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool saved_;
};

class EnableGradGuard {
 public:
  EnableGradGuard() : saved_(GradMode::is_enabled()) { GradMode::set_enabled(true); }
  ~EnableGradGuard() { GradMode::set_enabled(saved_); }
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool saved_;
};

}  // namespace vramlab::engine
