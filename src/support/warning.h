// Warnings: what the user must hear about whatever SINTER_LOGS says (a compiled function that now runs
// eagerly, a backend that failed and was replaced), written to stderr as "[sinter:warning] text" (one line at
// a time with the log channels). Callers say each such thing once, not per call.
#pragma once
#include <string_view>

namespace sinter {

void log_warning(std::string_view text);

}  // namespace sinter
