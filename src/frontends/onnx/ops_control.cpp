// Control flow: If, Loop, Scan. Their bodies are ONNX subgraphs run by the same executor, with the enclosing
// graphs' values in scope. A condition or trip count that is not known on the host is read (inside compile()
// that is a graph break: each branch or iteration count gets its own graph).
#include <fmt/format.h>

#include "frontends/onnx/importer.h"

namespace sinter::onnx {
namespace {

Val host_scalar(const Scalar& v, DType d) { return Val{on_host([&] { return scalar_tensor(v, d); }), true}; }

std::vector<Tensor> tensors(const std::vector<Val>& vals) {
  std::vector<Tensor> out;
  for (const Val& v : vals) out.push_back(v.t);
  return out;
}

std::vector<Tensor> run_if(NodeCtx& c) {
  bool cond = c.int_at(0) != 0;
  const proto::Graph* g = c.attr_graph(cond ? "then_branch" : "else_branch");
  return tensors(c.executor().run(*g, {}));
}

std::vector<Tensor> run_loop(NodeCtx& c) {
  const proto::Graph* body = c.attr_graph("body");
  int64_t max_trips = c.has(0) ? c.int_at(0) : INT64_MAX;
  bool cond = c.has(1) ? c.int_at(1) != 0 : true;
  size_t n_carried = c.num_inputs() >= 2 ? c.num_inputs() - 2 : 0;
  std::vector<Val> carried;
  for (size_t i = 0; i < n_carried; ++i) carried.push_back(Val{c.in(2 + i), c.known(2 + i)});
  if (body->outputs.size() < 1 + n_carried) c.fail("the body has fewer outputs than loop-carried values");
  size_t n_scan = body->outputs.size() - 1 - n_carried;
  std::vector<std::vector<Tensor>> scans(n_scan);
  constexpr int64_t kMaxIterations = 1 << 24;  // a hostile model must not spin forever
  for (int64_t i = 0; i < max_trips && cond; ++i) {
    if (i >= kMaxIterations) c.fail("more than 2^24 iterations");
    std::vector<Val> ins{host_scalar(Scalar(i), kInt64), host_scalar(Scalar(cond), kBool)};
    ins.insert(ins.end(), carried.begin(), carried.end());
    std::vector<Val> outs = c.executor().run(*body, ins);
    cond = outs[0].known ? on_host([&] { return outs[0].t.item<bool>(); }) : outs[0].t.item<bool>();
    for (size_t k = 0; k < n_carried; ++k) carried[k] = outs[1 + k];
    for (size_t k = 0; k < n_scan; ++k) scans[k].push_back(outs[1 + n_carried + k].t);
  }
  std::vector<Tensor> result = tensors(carried);
  for (auto& s : scans) {
    if (s.empty()) c.unsupported("a Loop with zero iterations and scan outputs (their shape is unknown)");
    result.push_back(stack(s, 0));
  }
  return result;
}

// One Scan (opset 9 form): the body runs `steps` times over slices of the scan inputs along their axes, carrying
// the state; returns the final state, then each scan output stacked along its axis.
std::vector<Tensor> scan_core(NodeCtx& c, const proto::Graph* body, std::vector<Val> state,
                              const std::vector<Val>& xs, const std::vector<int64_t>& in_axes,
                              const std::vector<int64_t>& in_dirs, const std::vector<int64_t>& out_axes,
                              const std::vector<int64_t>& out_dirs, int64_t steps) {
  size_t n_state = state.size(), n_out = out_axes.size();
  std::vector<std::vector<Tensor>> outs(n_out);
  for (int64_t t = 0; t < steps; ++t) {
    std::vector<Val> ins = state;
    for (size_t j = 0; j < xs.size(); ++j) {
      int64_t at = in_dirs[j] ? steps - 1 - t : t;
      ins.push_back(Val{select(xs[j].t, in_axes[j], at), xs[j].known});
    }
    std::vector<Val> r = c.executor().run(*body, ins);
    if (r.size() != n_state + n_out) c.fail("the body's outputs do not match the state and scan outputs");
    for (size_t i = 0; i < n_state; ++i) state[i] = r[i];
    for (size_t k = 0; k < n_out; ++k) outs[k].push_back(r[n_state + k].t);
  }
  std::vector<Tensor> result = tensors(state);
  for (size_t k = 0; k < n_out; ++k) {
    if (outs[k].empty()) c.unsupported("a Scan with zero steps");
    if (out_dirs[k]) std::reverse(outs[k].begin(), outs[k].end());
    int64_t axis = norm_axis(out_axes[k], outs[k][0].dim() + 1, c);
    result.push_back(stack(outs[k], axis));
  }
  return result;
}

// Opset 8: inputs [sequence_lens], state..., scan inputs..., all with a leading batch dim; the scan axis is 1.
// Each batch element runs on its own for its sequence length; scan outputs are padded with zeros to the longest.
std::vector<Tensor> run_scan8(NodeCtx& c, const proto::Graph* body, int64_t m) {
  int64_t n_state = static_cast<int64_t>(c.num_inputs()) - 1 - m;
  if (m <= 0 || n_state < 0) c.fail("num_scan_inputs is out of range");
  std::vector<int64_t> dirs = c.attr_ints("directions", std::vector<int64_t>(m, 0));
  if (static_cast<int64_t>(dirs.size()) != m) c.fail("directions does not match num_scan_inputs");
  int64_t n_out = static_cast<int64_t>(body->outputs.size()) - n_state;
  if (n_out < 0) c.fail("the body has fewer outputs than state values");
  const Tensor& first = c.in(1 + n_state);
  if (first.dim() < 2) c.fail("scan inputs need a batch and a sequence dim");
  int64_t batch = static_cast<int64_t>(first.size(0)), len = static_cast<int64_t>(first.size(1));
  std::vector<int64_t> lens = c.has(0) ? c.ints(0) : std::vector<int64_t>(batch, len);
  if (static_cast<int64_t>(lens.size()) != batch) c.fail("sequence_lens must have one entry per batch element");
  for (int64_t j = 0; j < m; ++j) {
    const Tensor& x = c.in(1 + n_state + j);
    if (x.dim() < 2 || static_cast<int64_t>(x.size(0)) != batch || static_cast<int64_t>(x.size(1)) != len)
      c.fail("scan inputs have different batch or sequence sizes");
  }
  std::vector<int64_t> zeros_in(m, 0), zeros_out(n_out, 0);
  std::vector<std::vector<Tensor>> per_batch(n_state + n_out);
  for (int64_t b = 0; b < batch; ++b) {
    if (lens[b] < 1 || lens[b] > len) c.fail(fmt::format("sequence length {} is outside [1, {}]", lens[b], len));
    std::vector<Val> state, xs;
    for (int64_t i = 0; i < n_state; ++i) state.push_back(Val{select(c.in(1 + i), 0, b), c.known(1 + i)});
    for (int64_t j = 0; j < m; ++j)
      xs.push_back(Val{slice(select(c.in(1 + n_state + j), 0, b), 0, SymInt(0), SymInt(lens[b])), c.known(1 + n_state + j)});
    std::vector<Tensor> r = scan_core(c, body, state, xs, zeros_in, dirs, zeros_out, zeros_out, lens[b]);
    for (int64_t k = 0; k < n_out; ++k) {
      Tensor& y = r[n_state + k];
      if (lens[b] < len) {
        SymIntList p(2 * (y.dim() - 1), SymInt(0));
        p.push_back(0), p.push_back(len - lens[b]);
        y = pad(y, p, "constant", 0.0);
      }
    }
    for (size_t i = 0; i < r.size(); ++i) per_batch[i].push_back(r[i]);
  }
  std::vector<Tensor> result;
  for (auto& vs : per_batch) result.push_back(stack(vs, 0));
  return result;
}

std::vector<Tensor> run_scan(NodeCtx& c) {
  const proto::Graph* body = c.attr_graph("body");
  int64_t m = c.attr_int("num_scan_inputs", 0);
  if (c.opset() < 9) return run_scan8(c, body, m);
  int64_t n_state = static_cast<int64_t>(c.num_inputs()) - m;
  if (m <= 0 || n_state < 0) c.fail("num_scan_inputs is out of range");
  std::vector<int64_t> in_axes = c.attr_ints("scan_input_axes", std::vector<int64_t>(m, 0));
  std::vector<int64_t> in_dirs = c.attr_ints("scan_input_directions", std::vector<int64_t>(m, 0));
  int64_t n_out = static_cast<int64_t>(body->outputs.size()) - n_state;
  std::vector<int64_t> out_axes = c.attr_ints("scan_output_axes", std::vector<int64_t>(n_out, 0));
  std::vector<int64_t> out_dirs = c.attr_ints("scan_output_directions", std::vector<int64_t>(n_out, 0));
  if (static_cast<int64_t>(in_axes.size()) != m || static_cast<int64_t>(in_dirs.size()) != m || n_out < 0 ||
      static_cast<int64_t>(out_axes.size()) != n_out || static_cast<int64_t>(out_dirs.size()) != n_out)
    c.fail("scan attribute lengths do not match the inputs and outputs");
  std::vector<Val> state, xs;
  for (int64_t i = 0; i < n_state; ++i) state.push_back(Val{c.in(i), c.known(i)});
  int64_t steps = -1;
  for (int64_t j = 0; j < m; ++j) {
    const Tensor& x = c.in(n_state + j);
    in_axes[j] = norm_axis(in_axes[j], x.dim(), c);
    int64_t len = static_cast<int64_t>(x.size(in_axes[j]));
    if (steps >= 0 && len != steps) c.fail("scan inputs have different lengths");
    steps = len;
    xs.push_back(Val{x, c.known(n_state + j)});
  }
  return scan_core(c, body, state, xs, in_axes, in_dirs, out_axes, out_dirs, steps);
}

}  // namespace

void register_control_ops(OpTable& t) {
  t["If"] = {run_if, false, true};
  t["Loop"] = {run_loop, false, true};
  t["Scan"] = {run_scan, false, true};
}

}  // namespace sinter::onnx
