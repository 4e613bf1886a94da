// Checks: SINTER_CHECK for the user's mistakes (throws sinter::Error naming the op being run, its operands and
// the caller's source line), SINTER_INTERNAL_ASSERT for our own bugs (throws sinter::InternalError).
#pragma once
#include <fmt/format.h>

#include <string>

#include "sinter/error.h"

namespace sinter::detail {

// What a user error raised on this thread should name besides its message: the op being dispatched (its name,
// operands and the caller's line). The dispatcher (src/ops/dispatch.cpp) sets it around each op call; this
// layer knows only the interface.
class ErrorContext {
 public:
  virtual ~ErrorContext() = default;
  virtual std::string describe(const std::string& message) const = 0;  // the whole error text
};
const ErrorContext* current_error_context();
void set_current_error_context(const ErrorContext* context);

[[noreturn]] void throw_user_error(const std::string& message);
[[noreturn]] void throw_user_error_at(const Loc& loc, const std::string& message);
[[noreturn]] void throw_internal_error(const char* cond, const char* file, int line, const std::string& message);

}  // namespace sinter::detail

#define SINTER_CHECK(cond, ...)                                                  \
  do {                                                                           \
    if (!(cond)) [[unlikely]]                                                    \
      ::sinter::detail::throw_user_error(fmt::format(__VA_ARGS__));              \
  } while (0)

#define SINTER_CHECK_AT(loc, cond, ...)                                          \
  do {                                                                           \
    if (!(cond)) [[unlikely]]                                                    \
      ::sinter::detail::throw_user_error_at((loc), fmt::format(__VA_ARGS__));    \
  } while (0)

#define SINTER_INTERNAL_ASSERT(cond, ...)                                                           \
  do {                                                                                              \
    if (!(cond)) [[unlikely]]                                                                       \
      ::sinter::detail::throw_internal_error(#cond, __FILE__, __LINE__, fmt::format("" __VA_ARGS__)); \
  } while (0)
