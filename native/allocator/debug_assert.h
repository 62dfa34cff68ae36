#pragma once
// VRAMLAB_DEBUG_ASSERT(cond, msg): an internal invariant, checked in builds without NDEBUG
// (Debug, the sanitized test build) and compiled out otherwise, like c10's
// TORCH_INTERNAL_ASSERT_DEBUG_ONLY. A failure is a bug in vramlab, never bad input, so it
// aborts with file:line instead of throwing into callers that might carry on.
#include <cstdio>
#include <cstdlib>

namespace vramlab::detail {
[[noreturn]] inline void debug_assert_fail(const char* cond, const char* msg, const char* file, int line) {
  std::fprintf(stderr, "%s:%d: internal assert failed: %s (%s)\n", file, line, msg, cond);
  std::fflush(stderr);
  std::abort();
}
}  // namespace vramlab::detail

#ifdef NDEBUG
// Unevaluated, so variables kept only for an assert do not warn as unused in Release.
#define VRAMLAB_DEBUG_ASSERT(cond, msg) ((void)sizeof(!(cond)))
#else
#define VRAMLAB_DEBUG_ASSERT(cond, msg) \
  ((cond) ? (void)0 : ::vramlab::detail::debug_assert_fail(#cond, msg, __FILE__, __LINE__))
#endif
