#include "support/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "support/check.h"

namespace sinter::support {

MappedFile::MappedFile(const std::string& path, const char* what, bool no_links) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (no_links ? O_NOFOLLOW : 0));
  SINTER_CHECK(fd >= 0, "{}: cannot open '{}': {}", what, path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(fmt::format("{}: '{}' is not a regular file", what, path));
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* at = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    const int err = errno;
    ::close(fd);
    SINTER_CHECK(at != MAP_FAILED, "{}: cannot map '{}': {}", what, path, std::strerror(err));
    at_ = at;
    return;
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (at_) ::munmap(at_, size_);
}

}  // namespace sinter::support
