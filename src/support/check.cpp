#include "support/check.h"

#include <fmt/format.h>

#include "ops/dispatch.h"

namespace sinter::detail {

namespace {
std::string where(const Loc& loc) {
  if (loc.line() == 0) return "unknown location";
  return fmt::format("{}:{}", loc.file_name(), loc.line());
}
}  // namespace

void throw_user_error(const std::string& message) {
  if (const OpCallContext* call = current_op_call()) {
    const OpDef& def = op_def(call->op);
    throw Error(fmt::format("{}: {}\n  operands: {}\n  called from {}", def.schema.name, message,
                            describe_operands(def, *call->args), where(call->loc)));
  }
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
