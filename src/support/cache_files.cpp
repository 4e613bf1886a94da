#include "support/cache_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

namespace sinter::support {

std::string errno_text() { return std::strerror(errno); }

std::string why_not_private(const std::string& path, bool directory, bool follow) {
  struct stat st;
  if ((follow ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st)) != 0)
    return fmt::format("cannot stat it ({})", errno_text());
  if (S_ISLNK(st.st_mode)) return "it is a symbolic link";
  if (directory && !S_ISDIR(st.st_mode)) return "it is not a directory";
  if (!directory && !S_ISREG(st.st_mode)) return "it is not a regular file";
  if (st.st_uid != ::geteuid()) return fmt::format("it is owned by uid {}, not by this user (uid {})", st.st_uid, ::geteuid());
  if (st.st_mode & S_IWOTH) return fmt::format("others can write it (mode {:o})", st.st_mode & 07777);
  if (st.st_mode & S_IWGRP) return fmt::format("its group can write it (mode {:o})", st.st_mode & 07777);
  return "";
}

std::string make_dirs(const std::string& path) {
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    partial = path.substr(0, pos);
    if (partial.empty()) continue;
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST)
      return fmt::format("cannot create {} ({})", partial, errno_text());
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return fmt::format("{} is not a directory", path);
  return "";
}

std::string make_temp_dir(const std::string& parent, const std::string& prefix) {
  std::string templ = parent + "/" + prefix + "XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) return "";  // mkdtemp creates it with mode 0700
  return std::string(buf.data());
}

bool read_file(const std::string& path, std::string& out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  struct stat st;
  bool ok = ::fstat(fd, &st) == 0;
  out.clear();
  if (ok) out.reserve(size_t(st.st_size));
  char buf[1 << 16];
  while (ok) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) out.append(buf, size_t(n));
    else if (n == 0) break;
    else if (errno != EINTR) ok = false;
  }
  ::close(fd);
  return ok;
}

std::string write_new_file(const std::string& path, const std::string& data, int mode) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) return fmt::format("cannot create {} ({})", path, errno_text());
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string why = fmt::format("cannot write {} ({})", path, errno_text());
      ::close(fd);
      return why;
    }
    done += size_t(n);
  }
  // The umask may have removed bits but never adds them; fchmod makes the mode exact either way.
  ::fchmod(fd, mode);
  if (::close(fd) != 0) return fmt::format("cannot write {} ({})", path, errno_text());
  return "";
}

void remove_tree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

}  // namespace sinter::support
