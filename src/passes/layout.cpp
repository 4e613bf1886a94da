// Convolutions in channels-last (see layout.h).
#include "passes/layout.h"

#include <optional>
#include <unordered_set>
#include <vector>

#include "ops/conv_direct.h"
#include "ops/dispatch.h"
#include "ops/op_table.h"
#include "ops/shape_util.h"
#include "support/log.h"
#include "symbolic/shape_env.h"

namespace sinter::passes {
namespace {

bool channels_last(const Tensor& t) { return t.dim() == 4 && t.is_contiguous(MemoryFormat::kChannelsLast); }

// A conv of few input channels (an RGB stem) that the direct kernel computes into channels-last output from
// its input in any layout (ops/conv_direct.h): only its weight changes layout.
bool few_channels(const Node& n) {
  return n.args[1].tensor().sizes()[1].hint() <= conv::kFewChannels && conv::few_channels_available();
}

// A conv the implicit GEMM runs well: float32, 4-D, one group, at least 16 input channels (an RGB stem's 3 pack
// every panel of its im2col, slower than the NCHW kernel), or one the direct kernel of few channels takes, on
// the CPU, in a layout other than channels-last.
bool converts(const Node& n) {
  if (!(n.is_op(OpId::conv2d) || n.is_op(OpId::conv2d_padding))) return false;
  const Tensor& out = n.output();
  const Tensor& w = n.args[1].tensor();
  return out.dim() == 4 && out.dtype() == kFloat32 && out.device().is_cpu() && n.arg("groups").to_int() == 1 &&
         w.dtype() == kFloat32 && w.dim() == 4 && (w.sizes()[1].hint() >= 16 || few_channels(n)) &&
         !channels_last(out);
}

// Only graphs whose conv weights are all constants (a frozen module, an imported ONNX model): inference graphs.
// Where weights are inputs (training steps, their forward and backward graphs), the converted layouts met the
// backward's transposed products and copies and made resnet_block's compiled step 1.8x slower.
bool weights_constant(const Graph& g, const std::vector<const Node*>& convs) {
  for (const Node* n : convs)
    if (g.producer(n->args[1].tensor()).kind != NodeKind::kConstant) return false;
  return true;
}

// The memory format a graph output had before the pass, when it is one that a copy can restore.
std::optional<MemoryFormat> format_of(const Tensor& t) {
  if (t.is_contiguous()) return MemoryFormat::kContiguous;
  if (channels_last(t)) return MemoryFormat::kChannelsLast;
  return std::nullopt;
}

Tensor eager_clone(const Tensor& t, MemoryFormat f) {
  Args args{t, f};
  normalize_args(op_def(OpId::clone), args);
  return run_eager(OpId::clone, args, Loc{})[0];
}

}  // namespace

bool convs_channels_last(Graph& g) {
  std::vector<const Node*> convs;
  for (const Node& n : g.nodes()) {
    if (n.is_op(OpId::as_strided) || n.is_op(OpId::as_strided_scatter)) return false;
    if (converts(n)) convs.push_back(&n);
  }
  if (convs.empty() || !weights_constant(g, convs)) return false;
  const Node& out_node = g.node(g.num_nodes() - 1);
  std::vector<std::optional<MemoryFormat>> out_formats;
  for (const Value& v : out_node.args) {
    out_formats.push_back(v.is_tensor() ? format_of(v.tensor()) : std::nullopt);
    // An output in a layout no copy here restores (a permuted or strided view) keeps the graph as it is.
    if (v.is_tensor() && !out_formats.back()) return false;
  }
  std::optional<sym::ShapeEnvScope> scope;
  if (g.shape_env()) scope.emplace(g.shape_env().get());
  Rewriter rw(g);
  const std::unordered_set<const Node*> to_convert(convs.begin(), convs.end());
  // One walk from the first conv: each conv takes channels-last operands (its input is cloned only where the
  // layouts that flowed down so far leave it otherwise), and every other op re-runs its shape rule, so the new
  // layouts flow down; a view the new strides cannot express reads a contiguous copy.
  for (int i = convs.front()->id; i < g.num_nodes(); ++i) {
    const Node& n = g.node(i);
    if (!n.is_op()) continue;
    if (to_convert.count(&n)) {
      Args args = n.args;
      for (int k : {0, 1}) {
        const Tensor& t = args[k].tensor();
        if (channels_last(t) || (k == 0 && few_channels(n))) continue;
        const Node& p = g.producer(t);
        if (p.kind == NodeKind::kConstant) {  // the weight always; the input when a constant
          args[k] = g.add_constant(eager_clone(p.constant, MemoryFormat::kChannelsLast), p.name + "_cl");
        } else {
          args[k] = rw.insert_op1_before(n, OpId::clone, {t, MemoryFormat::kChannelsLast});
        }
      }
      rw.set_args(n, std::move(args));
      i = n.id;  // n moved down past what was added before it (nodes keep their addresses)
      continue;
    }
    if (n.is_op(OpId::view)) {
      const Tensor& src = n.args[0].tensor();
      if (!compute_view_strides(src.sizes(), src.strides(), n.args[1].int_list())) {
        Tensor dense = rw.insert_op1_before(n, OpId::clone, {src, MemoryFormat::kContiguous});
        Args args = n.args;
        args[0] = dense;
        rw.set_args(n, std::move(args));
        i = n.id;
        continue;
      }
    }
    rw.recompute_meta(n);
  }
  // Outputs go back to the layouts eager returns.
  const Node& out = g.node(g.num_nodes() - 1);
  for (size_t k = 0; k < out.args.size(); ++k) {
    if (!out.args[k].is_tensor()) continue;
    const Tensor& t = out.args[k].tensor();
    if (format_of(t) == out_formats[k]) continue;
    rw.set_output(k, rw.insert_op1_before(out, OpId::clone, {t, *out_formats[k]}));
  }
  SINTER_LOG(kPasses, "layout: {} conv2d in channels-last", convs.size());
  return true;
}

}  // namespace sinter::passes
