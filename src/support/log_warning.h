// Warnings that need no log setting: a setting of the user's that does not do what they asked (an unknown
// SINTER_LOGS name, a refused SINTER_CACHE_DIR, an unusable SINTER_DEBUG_DIR) is said on stderr as
// "[sinter:warning] text", once per process for each distinct `key`. (Implemented in log.cpp, beside the
// channels, sharing their stderr lock.)
#pragma once
#include <string_view>

namespace sinter {

void warn_once(std::string_view key, std::string_view text);

}  // namespace sinter
