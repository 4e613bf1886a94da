// Runs the host C++ compiler over a set of translation units already written to a build directory: one compiler
// process per unit (at most one per available core) then one link into a shared object. No shell is involved.
#pragma once
#include <string>
#include <vector>

namespace sinter::codegen::cpp {

struct Toolchain;

struct BuildRequest {
  const Toolchain* toolchain = nullptr;
  std::vector<std::string> extra_flags;
  std::string dir;                         // build directory (private); logs and objects go here
  std::vector<std::string> sources;        // absolute paths of the units
  std::string output;                      // absolute path of the shared object to produce
  std::string name;                        // readable name for messages
};

// Builds request.output. Throws sinter::Error naming the failing command, the source path and the first ~40 lines
// of the compiler's output. Removes the objects and logs it made when it succeeds.
void build_shared_object(const BuildRequest& request);

// The number of compiler processes run at once: the CPUs this process may use.
int parallel_compile_jobs();

}  // namespace sinter::codegen::cpp
