// SINTER_DEBUG_DIR=dir: every stage of every inductor compile as files, one folder per compiled graph
// (dir/graph_<n>-pid<pid>/), numbered in pipeline order so `ls` shows them as they happened:
//   00-captured.txt              the graph the backend was given
//   01-after-<pass>.txt ...      the graph after each pass that changed it (passes.txt: every pass, changed or not)
//   NN-before-lowering.txt       the graph lowered: the fusion log, the kernel comments and the profile name its
//                                values (%5) as this file does
//   NN-loop-program.txt          the loop IR (its "node 3" are the "loop node 3" of the fusion log and kernels)
//   NN-schedule.txt              the kernels with their loop nodes, and every fusion decision with its reason
//   kernels.cpp (kernels_<i>.cpp) the generated source, as compiled
// The variable is read at each compile. A folder that cannot be written is reported once on stderr.
#pragma once
#include <string>

namespace sinter::support {

class DebugDump {
 public:
  // Inactive (every call a no-op) when `root` (the compile context's SINTER_DEBUG_DIR) is empty or its folder
  // cannot be made. `name` is the graph's readable name ("graph_3").
  DebugDump(const std::string& root, const std::string& name);
  bool active() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }  // "" when inactive
  // Writes `text` as "<NN>-<stage>.txt", NN counting the stages written so far.
  void stage(const std::string& stage, const std::string& text);
  // Writes `text` as `file` (no number).
  void file(const std::string& file, const std::string& text);

 private:
  std::string dir_;
  int next_ = 0;
};

}  // namespace sinter::support
