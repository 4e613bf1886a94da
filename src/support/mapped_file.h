// A file's bytes through a private read-only mapping: no copy into the heap, the page cache's pages read in
// place. For loaders that parse a file once (ONNX models, artifact digests).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace sinter::support {

class MappedFile {
 public:
  // Throws sinter::Error "`what`: cannot ... 'path': reason" when the file cannot be opened (with no_links, also
  // when the path is a symbolic link), is not a regular file, or cannot be mapped. An empty file maps to no bytes.
  MappedFile(const std::string& path, const char* what, bool no_links = false);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::string_view bytes() const { return {static_cast<const char*>(at_), size_}; }

 private:
  void* at_ = nullptr;
  size_t size_ = 0;
};

}  // namespace sinter::support
