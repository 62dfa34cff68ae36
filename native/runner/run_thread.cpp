#include "runner/run_thread.h"

#include <cerrno>
#include <exception>
#include <memory>
#include <utility>
#include <system_error>

#ifdef _WIN32
#include <process.h>
#include <windows.h>
#else
#include <limits.h>
#include <pthread.h>
#include <unistd.h>
#endif

namespace vramlab::runner {

namespace {
struct Start {
  std::function<void()> body;
};

#ifdef _WIN32
unsigned __stdcall trampoline(void* arg) {
#else
void* trampoline(void* arg) {
#endif
  std::unique_ptr<Start> s(static_cast<Start*>(arg));
  try {
    s->body();
  } catch (...) {
    std::terminate();  // as std::thread does; never unwind into the C runtime
  }
#ifdef _WIN32
  return 0;
#else
  return nullptr;
#endif
}
}  // namespace

RunThread::RunThread(std::function<void()> body, size_t stack_bytes) {
  auto start = std::make_unique<Start>(Start{std::move(body)});
#ifdef _WIN32
  uintptr_t r =
      _beginthreadex(nullptr, unsigned(stack_bytes), trampoline, start.get(), STACK_SIZE_PARAM_IS_A_RESERVATION, &id_);
  if (r == 0) throw std::system_error(errno, std::generic_category(), "_beginthreadex");
  handle_ = reinterpret_cast<void*>(r);
#else
  pthread_attr_t attr;
  int rc = pthread_attr_init(&attr);
  if (rc != 0) throw std::system_error(rc, std::generic_category(), "pthread_attr_init");
  // At least the minimum, in whole pages (macOS refuses anything else).
  if (stack_bytes < size_t(PTHREAD_STACK_MIN)) stack_bytes = size_t(PTHREAD_STACK_MIN);
  const long page = sysconf(_SC_PAGESIZE);
  if (page > 0) stack_bytes = (stack_bytes + size_t(page) - 1) / size_t(page) * size_t(page);
  rc = pthread_attr_setstacksize(&attr, stack_bytes);
  if (rc == 0) rc = pthread_create(&thread_, &attr, trampoline, start.get());
  pthread_attr_destroy(&attr);
  if (rc != 0) throw std::system_error(rc, std::generic_category(), "pthread_create");
#endif
  start.release();  // the thread owns it now
  running_ = true;
}

RunThread& RunThread::operator=(RunThread&& o) noexcept {
  if (this != &o) {
    detach();
    running_ = std::exchange(o.running_, false);
#ifdef _WIN32
    handle_ = o.handle_;
    id_ = o.id_;
#else
    thread_ = o.thread_;
#endif
  }
  return *this;
}

RunThread::~RunThread() { detach(); }

bool RunThread::is_current() const {
  if (!running_) return false;
#ifdef _WIN32
  return GetCurrentThreadId() == id_;
#else
  return pthread_equal(pthread_self(), thread_) != 0;
#endif
}

void RunThread::join() {
  if (!running_) return;
  running_ = false;
#ifdef _WIN32
  WaitForSingleObject(static_cast<HANDLE>(handle_), INFINITE);
  CloseHandle(static_cast<HANDLE>(handle_));
#else
  pthread_join(thread_, nullptr);
#endif
}

void RunThread::detach() {
  if (!running_) return;
  running_ = false;
#ifdef _WIN32
  CloseHandle(static_cast<HANDLE>(handle_));
#else
  pthread_detach(thread_);
#endif
}

}  // namespace vramlab::runner
