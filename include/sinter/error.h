// Errors: user mistakes throw sinter::Error (naming the op, operands and the caller's line); our own bugs throw
// sinter::InternalError and ask for a bug report. Nothing aborts on bad input.
#pragma once
#include <source_location>
#include <stdexcept>
#include <string>

namespace sinter {

using Loc = std::source_location;

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

}  // namespace sinter
