// The generated CUDA source of the graphs compiled while a test's code runs (SINTER_DEBUG_DIR pointed at a
// temporary folder for the time), for tests that check which kernel shape the generator chose.
#pragma once
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "scoped_env.h"

namespace sinter::testing {

inline std::string cuda_source_of(const std::function<void()>& run) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / fmt::format("sinter-cuda-source-{}", ::getpid());
  fs::remove_all(dir);
  {
    ScopedEnv env("SINTER_DEBUG_DIR", dir.string());
    run();
  }
  std::string text;
  if (fs::exists(dir))
    for (const auto& e : fs::recursive_directory_iterator(dir))
      if (e.path().extension() == ".cu") {
        std::ifstream in(e.path());
        std::stringstream s;
        s << in.rdbuf();
        text += s.str();
      }
  fs::remove_all(dir);
  return text;
}

}  // namespace sinter::testing
