// RNN, GRU and LSTM, composed from sinter's ops and unrolled over the (static) sequence length: the input
// projection X W^T + Wb is one matmul over all steps, then each step adds H R^T + Rb and applies the gates.
// Directions forward, reverse and bidirectional; layout 0 ([seq, batch, ...]) and 1 ([batch, seq, ...]);
// sequence_lens as a per-batch mask (a batch entry keeps its state and outputs zeros past its length, and a
// reverse pass starts at its own last step); initial states; LSTM peepholes; GRU linear_before_reset; clip;
// the activation functions named by `activations` with activation_alpha/beta (one entry per activation).
#include <fmt/format.h>

#include <functional>

#include "frontends/onnx/importer.h"

namespace sinter::onnx {
namespace {

enum class Cell { kRnn, kGru, kLstm };

using Act = std::function<Tensor(const Tensor&)>;

Act activation(const std::string& name, std::optional<double> alpha, std::optional<double> beta, NodeCtx& c) {
  auto a = [&](double d) { return alpha.value_or(d); };
  auto b = [&](double d) { return beta.value_or(d); };
  if (name == "Sigmoid") return [](const Tensor& x) { return sigmoid(x); };
  if (name == "Tanh") return [](const Tensor& x) { return tanh(x); };
  if (name == "Relu") return [](const Tensor& x) { return relu(x); };
  if (name == "Softsign") return [](const Tensor& x) { return div(x, add(abs(x), Scalar(1))); };
  if (name == "Softplus") return [](const Tensor& x) { return log1p(exp(x)); };
  double al = 0, be = 0;
  if (name == "LeakyRelu") al = a(0.01);
  else if (name == "ThresholdedRelu" || name == "Elu") al = a(1.0);
  else if (name == "HardSigmoid") al = a(0.2), be = b(0.5);
  else if (name == "Affine" || name == "ScaledTanh") al = a(1.0), be = b(name == "Affine" ? 0.0 : 1.0);
  else c.fail(fmt::format("activation '{}' is not one ONNX defines for recurrent operators", name));
  if (name == "LeakyRelu") return [al](const Tensor& x) { return where(ge(x, Scalar(0)), x, mul(x, Scalar(al))); };
  if (name == "ThresholdedRelu") return [al](const Tensor& x) { return where(gt(x, Scalar(al)), x, Scalar(0)); };
  if (name == "Elu") return [al](const Tensor& x) { return where(ge(x, Scalar(0)), x, mul(expm1(x), Scalar(al))); };
  if (name == "HardSigmoid")
    return [al, be](const Tensor& x) { return clamp(add(mul(x, Scalar(al)), Scalar(be)), Scalar(0), Scalar(1)); };
  if (name == "Affine") return [al, be](const Tensor& x) { return add(mul(x, Scalar(al)), Scalar(be)); };
  return [al, be](const Tensor& x) { return mul(tanh(mul(x, Scalar(be))), Scalar(al)); };  // ScaledTanh
}

struct Setup {
  Cell cell;
  int64_t gates, hidden, dirs, seq, batch;
  std::vector<Act> acts;  // per direction: RNN f; GRU f, g; LSTM f, g, h
  std::optional<double> clip;
  bool linear_before_reset = false;
};

Tensor gate(const Setup& s, const Act& f, const Tensor& pre) {
  return f(s.clip ? clamp(pre, Scalar(-*s.clip), Scalar(*s.clip)) : pre);
}

// One direction over the whole sequence: returns Y [seq, batch, hidden] and the final H (and C).
struct DirOut {
  Tensor y, h, c;
};
DirOut run_direction(const Setup& s, int64_t d, bool reverse, const Tensor& x, const Tensor& w, const Tensor& r,
                     const Tensor& b, const Tensor& lens, Tensor h, Tensor cst, const Tensor& p) {
  int64_t H = s.hidden, G = s.gates;
  const Act* act = &s.acts[static_cast<size_t>(d) * (s.cell == Cell::kRnn ? 1 : s.cell == Cell::kGru ? 2 : 3)];
  Tensor wd = select(w, 0, d), rd = select(r, 0, d);
  Tensor wb = narrow(select(b, 0, d), 0, 0, G * H), rb = narrow(select(b, 0, d), 0, G * H, G * H);
  Tensor xw = add(matmul(x, t(wd)), wb);  // [seq, batch, G*H]
  std::vector<Tensor> ys(static_cast<size_t>(s.seq));
  for (int64_t k = 0; k < s.seq; ++k) {
    int64_t step = reverse ? s.seq - 1 - k : k;
    Tensor xt = select(xw, 0, step);
    auto part = [&](const Tensor& v, int64_t g) { return narrow(v, -1, g * H, H); };
    Tensor h_new, c_new;
    if (s.cell == Cell::kRnn) {
      h_new = gate(s, act[0], add(xt, add(matmul(h, t(rd)), rb)));
    } else if (s.cell == Cell::kGru) {
      // Gates z, r, h; the h gate's recurrent part is reset before (0) or after (1) its product with R.
      Tensor rec = matmul(h, t(narrow(rd, 0, 0, 2 * H)));
      Tensor z = gate(s, act[0], add(add(part(xt, 0), part(rec, 0)), part(rb, 0)));
      Tensor rr = gate(s, act[0], add(add(part(xt, 1), part(rec, 1)), part(rb, 1)));
      Tensor rh = t(narrow(rd, 0, 2 * H, H));
      Tensor hh = s.linear_before_reset ? mul(rr, add(matmul(h, rh), part(rb, 2))) : add(matmul(mul(rr, h), rh), part(rb, 2));
      Tensor ht = gate(s, act[1], add(part(xt, 2), hh));
      h_new = add(mul(rsub(z, Scalar(1)), ht), mul(z, h));  // (1 - z) h~ + z H
    } else {
      // Gates i, o, f, c; peepholes P = [Pi, Po, Pf].
      Tensor pre = add(add(xt, matmul(h, t(rd))), rb);
      Tensor pi = part(pre, 0), po = part(pre, 1), pf = part(pre, 2), pc = part(pre, 3);
      if (p.defined()) {
        Tensor pd = select(p, 0, d);
        pi = add(pi, mul(narrow(pd, 0, 0, H), cst));
        pf = add(pf, mul(narrow(pd, 0, 2 * H, H), cst));
      }
      Tensor i = gate(s, act[0], pi), f = gate(s, act[0], pf), cc = gate(s, act[1], pc);
      c_new = add(mul(f, cst), mul(i, cc));
      if (p.defined()) po = add(po, mul(narrow(select(p, 0, d), 0, H, H), c_new));
      Tensor o = gate(s, act[0], po);
      h_new = mul(o, act[2](c_new));
    }
    if (lens.defined()) {
      // Past its length a batch entry keeps its state and outputs zeros.
      Tensor valid = unsqueeze(gt(lens, Scalar(step)), -1);
      ys[static_cast<size_t>(step)] = where(valid, h_new, Scalar(0));
      h = where(valid, h_new, h);
      if (c_new.defined()) cst = where(valid, c_new, cst);
    } else {
      ys[static_cast<size_t>(step)] = h_new;
      h = h_new;
      if (c_new.defined()) cst = c_new;
    }
  }
  return {stack(ys, 0), h, cst};
}

std::vector<Tensor> recurrent(NodeCtx& c, Cell cell) {
  Setup s{};
  s.cell = cell;
  s.gates = cell == Cell::kRnn ? 1 : cell == Cell::kGru ? 3 : 4;
  bool batch_first = c.attr_int("layout", 0) != 0;
  Tensor x = c.in(0), w = c.in(1), r = c.in(2);
  if (x.dim() != 3 || w.dim() != 3 || r.dim() != 3) c.fail("X, W and R must be 3-D");
  if (batch_first) x = transpose(x, 0, 1);
  s.seq = static_cast<int64_t>(x.size(0));
  s.batch = static_cast<int64_t>(x.size(1));
  s.hidden = c.attr_int("hidden_size", static_cast<int64_t>(r.size(-1)));
  std::string direction = c.attr_str("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    c.fail(fmt::format("direction '{}' is not forward, reverse or bidirectional", direction));
  s.dirs = direction == "bidirectional" ? 2 : 1;
  if (w.size(0) != s.dirs || w.size(1) != s.gates * s.hidden || r.size(2) != s.hidden)
    c.fail(fmt::format("W {} and R {} do not fit {} direction(s) of hidden size {}", w.sizes().str(), r.sizes().str(),
                       s.dirs, s.hidden));
  if (cell == Cell::kLstm && c.attr_int("input_forget", 0) != 0) c.fail("input_forget=1 is not supported");
  s.linear_before_reset = c.attr_int("linear_before_reset", 0) != 0;
  if (c.has_attr("clip")) s.clip = c.attr_float("clip", 0);

  std::vector<std::string> names;
  if (const proto::Attribute* a = c.node().attr("activations")) names = a->strings;
  std::vector<std::string> defaults = cell == Cell::kRnn   ? std::vector<std::string>{"Tanh"}
                                      : cell == Cell::kGru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                           : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  size_t per_dir = defaults.size();
  if (names.empty())
    for (int64_t d = 0; d < s.dirs; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  if (names.size() == per_dir && s.dirs == 2) names.insert(names.end(), defaults.begin(), defaults.end());
  if (names.size() != per_dir * static_cast<size_t>(s.dirs))
    c.fail(fmt::format("{} activations given, {} expected", names.size(), per_dir * static_cast<size_t>(s.dirs)));
  std::vector<double> alphas = c.attr_floats("activation_alpha"), betas = c.attr_floats("activation_beta");
  for (size_t i = 0; i < names.size(); ++i)
    s.acts.push_back(activation(names[i], i < alphas.size() ? std::optional<double>(alphas[i]) : std::nullopt,
                                i < betas.size() ? std::optional<double>(betas[i]) : std::nullopt, c));

  TensorOptions o = c.options(x.dtype());
  Tensor b = c.has(3) ? c.in(3) : zeros({s.dirs, 2 * s.gates * s.hidden}, o);
  Tensor lens = c.has(4) ? c.in(4) : Tensor();
  auto state = [&](size_t i) {
    if (!c.has(i)) return zeros({s.dirs, s.batch, s.hidden}, o);
    return batch_first ? transpose(c.in(i), 0, 1) : c.in(i);
  };
  Tensor h0 = state(5), c0 = cell == Cell::kLstm ? state(6) : Tensor();
  Tensor p = cell == Cell::kLstm && c.has(7) ? c.in(7) : Tensor();

  std::vector<Tensor> ys, hs, cs;
  for (int64_t d = 0; d < s.dirs; ++d) {
    bool reverse = direction == "reverse" || d == 1;
    DirOut out = run_direction(s, d, reverse, x, w, r, b, lens, select(h0, 0, d),
                               c0.defined() ? select(c0, 0, d) : Tensor(), p);
    ys.push_back(out.y), hs.push_back(out.h), cs.push_back(out.c);
  }
  Tensor y = stack(ys, 1), yh = stack(hs, 0);  // [seq, dirs, batch, hidden], [dirs, batch, hidden]
  Tensor yc = cell == Cell::kLstm ? stack(cs, 0) : Tensor();
  if (batch_first) {
    y = permute(y, {2, 0, 1, 3});
    yh = transpose(yh, 0, 1);
    if (yc.defined()) yc = transpose(yc, 0, 1);
  }
  std::vector<Tensor> outs{y, yh};
  if (yc.defined()) outs.push_back(yc);
  return outs;
}

}  // namespace

void register_rnn_ops(OpTable& t) {
  t["RNN"] = {[](NodeCtx& c) { return recurrent(c, Cell::kRnn); }};
  t["GRU"] = {[](NodeCtx& c) { return recurrent(c, Cell::kGru); }};
  t["LSTM"] = {[](NodeCtx& c) { return recurrent(c, Cell::kLstm); }};
}

}  // namespace sinter::onnx
