// A custom op's decomposition (sinter/library.h): the user's function, written with sinter ops, runs on the node's
// argument proxies while a dispatch hook records each op it calls just before the node, as capture would have
// recorded it (record, which built-in decompositions written with sinter ops use too). The ops then lower and
// fuse like any others.
#include "graph/graph_util.h"
#include "ops/autocast.h"
#include "ops/custom_ops.h"
#include "ops/dispatch.h"
#include "passes/decompositions/builder.h"
#include "sinter/autograd.h"
#include "support/check.h"

namespace sinter::passes::decomp {
namespace {

class Recorder final : public DispatchHook {
 public:
  Recorder(Builder& b, const Node& n) : b_(b), op_(n.op_name()) {}

  std::vector<Tensor> call(OpId op, const Args& args, const Loc&) override {
    auto check = [&](const Tensor& t) {
      SINTER_CHECK(!t.defined() || b_.graph().contains(t),
                   "the decomposition of {} calls {} on a tensor that is not one of its arguments ({}); a "
                   "decomposition may use its arguments and the tensors it makes with sinter ops only",
                   op_, op_name(op), t.defined() ? graph_detail::meta_str(t.meta()) : "undefined");
    };
    for (const Value& v : args) {
      if (v.is_tensor()) check(v.tensor());
      if (v.is_tensor_list())
        for (const Tensor& t : v.tensor_list()) check(t);
    }
    return b_.ops(op, args);
  }

  Tensor materialize(const Tensor&, std::string_view what, const Loc&) override {
    throw Error(fmt::format("the decomposition of {} reads tensor data ({}), which a decomposition cannot: it runs "
                            "on the compiler's values, not on data", op_, what));
  }

 private:
  Builder& b_;
  std::string op_;
};

bool same_meta(const TensorMeta& a, const TensorMeta& b, const sym::ShapeEnv* env) {
  if (a.dtype != b.dtype || a.device != b.device || a.sizes.size() != b.sizes.size()) return false;
  for (size_t d = 0; d < a.sizes.size(); ++d)
    if (!graph_detail::known_equal(a.sizes[d], b.sizes[d], env)) return false;
  return true;
}

}  // namespace

std::vector<Tensor> record(Builder& b, const Node& n, const std::function<std::vector<Tensor>()>& fn) {
  Recorder recorder(b, n);
  HookScope scope(&recorder);
  NoGradGuard no_grad;     // graph values are not differentiated here
  AutocastExcluded plain;  // the graph already holds the casts capture made
  return fn();
}

std::optional<std::vector<Tensor>> custom(Builder& b, const Node& n) {
  const CustomOp* custom = sinter::custom_op(n.op);
  SINTER_INTERNAL_ASSERT(custom && custom->decomposition, "{} has no decomposition", n.op_name());
  std::vector<Tensor> outs = record(b, n, [&] { return custom->decomposition(library::OpArgs(n.op, n.args)); });
  SINTER_CHECK(outs.size() == n.outputs.size(), "the decomposition of {} returned {} tensor(s); the op has {} output(s)",
               n.op_name(), outs.size(), n.outputs.size());
  const sym::ShapeEnv* env = b.graph().shape_env().get();
  for (size_t k = 0; k < outs.size(); ++k)
    SINTER_CHECK(outs[k].defined() && same_meta(outs[k].meta(), n.meta(k), env),
                 "the decomposition of {} returned output {} as {}, but the op's shape rule gives {}", n.op_name(), k,
                 outs[k].defined() ? graph_detail::meta_str(outs[k].meta()) : "an undefined tensor",
                 graph_detail::meta_str(n.meta(k)));
  return outs;
}

}  // namespace sinter::passes::decomp
