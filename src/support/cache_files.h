// File-system helpers of the kernel cache, written for a directory whose contents get executed: every check uses
// lstat (a symbolic link is never followed inside the cache), and "private" means owned by the effective user
// and writable by nobody else.
#pragma once
#include <string>

namespace sinter::support {

// "" when `path` is a directory (or a regular file when !directory) owned by this user and not writable by group
// or others; otherwise the reason it is refused ("owned by uid 0", "writable by group", "a symbolic link", ...).
// `follow` stats through a symbolic link (for the cache root only, which the user may link elsewhere).
std::string why_not_private(const std::string& path, bool directory, bool follow = false);

// Creates `path` and missing parents with mode 0700. Returns "" on success, else the reason.
std::string make_dirs(const std::string& path);

// Creates a fresh directory "<parent>/<prefix>XXXXXX" with mode 0700; returns its path or "" (errno set).
std::string make_temp_dir(const std::string& parent, const std::string& prefix);

// Reads a whole file (no symlink followed); false when it cannot be opened or read.
bool read_file(const std::string& path, std::string& out);
// Creates a new file (it must not exist) with `mode` and writes `data`; "" on success, else the reason.
std::string write_new_file(const std::string& path, const std::string& data, int mode = 0600);

// Removes a file or directory tree, ignoring errors (best effort, never follows symlinks).
void remove_tree(const std::string& path);

std::string errno_text();

}  // namespace sinter::support
