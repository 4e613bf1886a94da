// Warnings: what the user must hear whatever SINTER_LOGS says (a compiled function that now runs eagerly, a
// backend that failed and was replaced, a setting that does not do what was asked: an unknown SINTER_LOGS name,
// a refused SINTER_CACHE_DIR, an unusable SINTER_DEBUG_DIR), written to stderr as "[sinter:warning] text", one
// line at a time with the log channels (implemented in log.cpp). Callers say each such thing once, not per call.
#pragma once
#include <string_view>

namespace sinter {

void log_warning(std::string_view text);

// log_warning once per process for each distinct `key`.
void warn_once(std::string_view key, std::string_view text);

}  // namespace sinter
