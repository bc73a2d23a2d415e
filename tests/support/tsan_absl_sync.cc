// ThreadSanitizer builds only: makes absl::Mutex visible to TSan.
//
// Why: Debian's abseil is a prebuilt, uninstrumented shared library, so TSan
// never sees the happens-before edges absl::Mutex::Lock/Unlock and
// CondVar::Wait create, and reports every access those locks protect as a
// race (hundreds of reports, all false, which would bury a real one). This
// file defines those member functions in the test executable — the dynamic
// linker binds every call to them here — and each forwards to abseil's own
// definition (dlsym RTLD_NEXT) while telling TSan what the lock means:
// acquire after locking, release before unlocking.
//
// Linked into every test binary when SHAPESHIFT_SANITIZE contains "thread"
// (cmake/ShapeshiftLibrary.cmake); never part of a normal build.
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/base/config.h"
#include "absl/base/options.h"
#include "absl/synchronization/mutex.h"

#if !ABSL_OPTION_USE_INLINE_NAMESPACE
#error "tsan_absl_sync.cc assumes abseil's inline namespace (as Debian builds it)"
#endif

namespace {

// abseil's own definition of `absl::<inline ns>::<tail>` (Itanium mangling).
template <typename Fn>
Fn RealAbsl(const char* tail) {
  const std::string ns = ABSL_INTERNAL_TOKEN_STR(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  const std::string mangled = "_ZN4absl" + std::to_string(ns.size()) + ns + tail;
  void* fn = dlsym(RTLD_NEXT, mangled.c_str());
  if (fn == nullptr) {
    std::fprintf(stderr, "tsan_absl_sync: abseil has no %s\n", mangled.c_str());
    std::abort();
  }
  return reinterpret_cast<Fn>(fn);
}

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

void Mutex::Lock() {
  static const auto real = RealAbsl<void (*)(Mutex*)>("5Mutex4LockEv");
  real(this);
  __tsan_acquire(this);
}

void Mutex::Unlock() {
  static const auto real = RealAbsl<void (*)(Mutex*)>("5Mutex6UnlockEv");
  __tsan_release(this);
  real(this);
}

bool Mutex::TryLock() {
  static const auto real = RealAbsl<bool (*)(Mutex*)>("5Mutex7TryLockEv");
  const bool locked = real(this);
  if (locked) __tsan_acquire(this);
  return locked;
}

void Mutex::ReaderLock() {
  static const auto real = RealAbsl<void (*)(Mutex*)>("5Mutex10ReaderLockEv");
  real(this);
  __tsan_acquire(this);
}

void Mutex::ReaderUnlock() {
  static const auto real = RealAbsl<void (*)(Mutex*)>("5Mutex12ReaderUnlockEv");
  __tsan_release(this);
  real(this);
}

void CondVar::Wait(Mutex* mu) {
  static const auto real = RealAbsl<void (*)(CondVar*, Mutex*)>("7CondVar4WaitEPNS0_5MutexE");
  __tsan_release(mu);  // Wait unlocks mu while it sleeps ...
  real(this, mu);
  __tsan_acquire(mu);  // ... and holds it again when it returns
}

ABSL_NAMESPACE_END
}  // namespace absl
