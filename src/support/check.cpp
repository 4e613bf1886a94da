#include "support/check.h"

#include <fmt/format.h>

namespace sinter::detail {

namespace {
std::string where(const Loc& loc) {
  if (loc.line() == 0) return "unknown location";
  return fmt::format("{}:{}", loc.file_name(), loc.line());
}

thread_local const ErrorContext* tls_context = nullptr;
}  // namespace

const ErrorContext* current_error_context() { return tls_context; }
void set_current_error_context(const ErrorContext* context) { tls_context = context; }

void throw_user_error(const std::string& message) {
  if (const ErrorContext* context = current_error_context()) throw Error(context->describe(message));
  throw Error(message);
}

void throw_user_error_at(const Loc& loc, const std::string& message) {
  throw Error(fmt::format("{}\n  called from {}", message, where(loc)));
}

void throw_internal_error(const char* cond, const char* file, int line, const std::string& message) {
  throw InternalError(fmt::format("internal error (a bug in sinter; please report it): {} [{} failed at {}:{}]",
                                  message, cond, file, line));
}

}  // namespace sinter::detail
