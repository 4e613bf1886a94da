#include "support/debug_dump.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>

#include "support/cache_files.h"
#include "support/log.h"
#include "support/warning.h"

namespace sinter::support {

namespace {

void warn_unusable(const std::string& root, const std::string& why) {
  warn_once("debug-dir:" + root, fmt::format("SINTER_DEBUG_DIR: {}; the compile stages are not written there", why));
}

}  // namespace

DebugDump::DebugDump(const std::string& root_dir, const std::string& name) {
  if (root_dir.empty()) return;
  std::string root = root_dir;
  if (root[0] != '/') {
    char cwd[4096];
    if (::getcwd(cwd, sizeof cwd)) root = std::string(cwd) + "/" + root;
  }
  std::string dir = fmt::format("{}/{}-pid{}", root, name, ::getpid());
  std::string why = make_dirs(root);
  if (why.empty()) {
    remove_tree(dir);  // a folder of an earlier process with the same pid
    why = make_dirs(dir);
  }
  if (why.empty()) dir_ = dir;
  else warn_unusable(root, why);
}

void DebugDump::stage(const std::string& stage, const std::string& text) {
  if (!active()) return;
  file(fmt::format("{:02}-{}.txt", next_++, stage), text);
}

void DebugDump::file(const std::string& file, const std::string& text) {
  if (!active()) return;
  std::string path = dir_ + "/" + file;
  ::unlink(path.c_str());
  if (std::string why = write_new_file(path, text, 0644); !why.empty()) {
    warn_once("debug-dir:" + dir_, fmt::format("SINTER_DEBUG_DIR: {}", why));
    dir_.clear();  // one message, not one per file
  }
}

}  // namespace sinter::support
