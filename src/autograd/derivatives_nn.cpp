// Derivative rows of the nn ops: matrix products, einsum, normalisations, convolutions, pooling, upsampling,
// attention, losses, embedding and dropout. Every formula is written with sinter's ops, so its result can itself
// be differentiated (pooling and upsampling scatter the gradient through index tables computed here as
// constants; max_pool2d's table is recomputed from the saved input).
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>

#include "autograd/derivatives.h"
#include "ops/dispatch.h"
#include "ops/upsample_taps.h"
#include "sinter/ops.h"
#include "support/check.h"

namespace sinter::autograd {
namespace {

using C = BackwardContext;

TensorOptions options_of(const Tensor& g) { return TensorOptions(g.dtype(), g.device()); }

// The last `n` dims of a tensor of rank `rank`.
DimList trailing_dims(int64_t rank, int64_t n) {
  DimList dims;
  for (int64_t d = rank - n; d < rank; ++d) dims.push_back(d);
  return dims;
}

// Every dim but `keep`.
DimList all_dims_but(int64_t rank, int64_t keep) {
  DimList dims;
  for (int64_t d = 0; d < rank; ++d)
    if (d != keep) dims.push_back(d);
  return dims;
}

// Sizes [1, ..., n, ..., 1] of rank `rank` with n at `dim`: a per-channel vector broadcast against the input.
SymIntList channel_shape(int64_t rank, int64_t dim, int64_t n) {
  std::vector<int64_t> s(static_cast<size_t>(rank), 1);
  s[static_cast<size_t>(dim)] = n;
  return SymIntList(s);
}

// An int[2] argument: two entries, or one used for both.
std::array<int64_t, 2> pair_arg(const Value& v, std::array<int64_t, 2> if_empty = {0, 0}) {
  std::vector<int64_t> l = v.to_int_list();
  if (l.empty()) return if_empty;
  if (l.size() == 1) return {l[0], l[0]};
  return {l[0], l[1]};
}

// ---- matrix products ----

Tensor transposed(const Tensor& t) { return t.transpose(-2, -1); }

// matmul's rank cases: a 1-D left operand acts as a row [1, k], a 1-D right operand as a column [k, 1]; the node
// sums each gradient over the batch dims broadcasting added.
void matmul_grads(C& c, const Tensor& a, const Tensor& b, const char* a_name, const char* b_name) {
  Tensor g = c.grad();
  const bool need_a = c.needs(a_name), need_b = c.needs(b_name);
  if (a.dim() == 1 && b.dim() == 1) {
    if (need_a) c.set(a_name, g * b);
    if (need_b) c.set(b_name, g * a);
    return;
  }
  if (a.dim() == 1) {  // [k] @ [..., k, m] -> [..., m]
    Tensor row = g.unsqueeze(-2);
    if (need_a) c.set(a_name, matmul(row, transposed(b)).squeeze(DimList{-2}));
    if (need_b) c.set(b_name, matmul(a.unsqueeze(-1), row));
    return;
  }
  if (b.dim() == 1) {  // [..., n, k] @ [k] -> [..., n]
    Tensor col = g.unsqueeze(-1);
    if (need_a) c.set(a_name, matmul(col, b.unsqueeze(0)));
    if (need_b) c.set(b_name, matmul(transposed(a), col).squeeze(DimList{-1}));
    return;
  }
  if (need_a) c.set(a_name, matmul(g, transposed(b)));
  if (need_b) c.set(b_name, matmul(transposed(a), g));
}

void linear_grads(C& c) {
  Tensor x = c.t("input"), w = c.t("weight"), g = c.grad();
  if (c.needs("bias")) c.set("bias", g);
  if (w.dim() == 1) {  // x [..., in] @ w [in] -> [...]
    if (c.needs("input")) c.set("input", g.unsqueeze(-1) * w);
    if (c.needs("weight")) c.set("weight", g.unsqueeze(-1) * x);
    return;
  }
  if (c.needs("input")) c.set("input", matmul(g, w));
  if (c.needs("weight")) {
    if (x.dim() == 1)
      c.set("weight", g.unsqueeze(-1) * x.unsqueeze(0));
    else
      // flatten, not reshape(-1, out): with no output features (or no rows) -1 would be ambiguous.
      c.set("weight", mm(g.flatten(0, -2).t(), x.flatten(0, -2)));
  }
}

// ---- einsum ----

// An einsum equation with every operand's letters spelled out: ellipses replaced by letters the equation does not
// use, and the output explicit (implicit: the ellipsis dims, then the letters used once, in alphabetical order,
// uppercase first).
struct ExplicitEinsum {
  std::vector<std::string> inputs;
  std::string output;
};

ExplicitEinsum explicit_einsum(const std::string& equation, const std::vector<int64_t>& ranks) {
  std::string eq;
  for (char ch : equation)
    if (ch != ' ') eq += ch;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  SINTER_CHECK(terms.size() == ranks.size(), "einsum backward: the equation '{}' has {} operands, not {}", equation,
               terms.size(), ranks.size());
  auto is_letter = [](char ch) { return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z'); };
  std::string free;
  for (char ch = 'A'; ch <= 'z'; ++ch)
    if (is_letter(ch) && eq.find(ch) == std::string::npos) free += ch;
  // Ellipsis dims per operand, right-aligned against the widest one.
  std::vector<int64_t> ell(terms.size(), 0);
  int64_t widest = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    const size_t dots = terms[i].find("...");
    if (dots == std::string::npos) continue;
    const int64_t named = static_cast<int64_t>(terms[i].size()) - 3;
    ell[i] = ranks[i] - named;
    widest = std::max(widest, ell[i]);
  }
  SINTER_CHECK(widest <= static_cast<int64_t>(free.size()),
               "einsum backward: the equation '{}' leaves too few unused letters for its ellipsis dims", equation);
  const std::string ell_letters = free.substr(0, static_cast<size_t>(widest));
  ExplicitEinsum e;
  std::array<int, 128> count{};
  for (size_t i = 0; i < terms.size(); ++i) {
    std::string term = terms[i];
    const size_t dots = term.find("...");
    if (dots != std::string::npos)
      term = term.substr(0, dots) + ell_letters.substr(static_cast<size_t>(widest - ell[i])) + term.substr(dots + 3);
    std::array<bool, 128> seen{};
    for (char ch : term) {
      SINTER_CHECK(!seen[static_cast<unsigned char>(ch)],
                   "the derivative of einsum is implemented only for equations without a repeated subscript within "
                   "one operand (a diagonal); '{}' repeats '{}' in operand {}",
                   equation, ch, i);
      seen[static_cast<unsigned char>(ch)] = true;
      ++count[static_cast<unsigned char>(ch)];
    }
    e.inputs.push_back(term);
  }
  if (arrow == std::string::npos) {
    e.output = ell_letters;
    for (char ch = 'A'; ch <= 'z'; ++ch)
      if (is_letter(ch) && ell_letters.find(ch) == std::string::npos && count[static_cast<unsigned char>(ch)] == 1)
        e.output += ch;
  } else {
    std::string out = eq.substr(arrow + 2);
    const size_t dots = out.find("...");
    if (dots != std::string::npos) out = out.substr(0, dots) + ell_letters + out.substr(dots + 3);
    e.output = out;
  }
  return e;
}

// Operand k's gradient: einsum of the other operands and the output's gradient into operand k's subscripts. A
// subscript only operand k has (summed in the forward) is put back by broadcasting.
std::vector<Tensor> einsum_grads(C& c) {
  std::vector<Tensor> ts = c.list("tensors");
  std::vector<int64_t> ranks;
  for (const Tensor& t : ts) ranks.push_back(t.dim());
  const ExplicitEinsum e = explicit_einsum(c.arg("equation").str_value(), ranks);
  Tensor g = c.grad();
  std::vector<Tensor> grads(ts.size());
  for (size_t k = 0; k < ts.size(); ++k) {
    if (!c.needs("tensors", k)) continue;
    std::string lhs, letters;
    std::vector<Tensor> operands;
    for (size_t j = 0; j < ts.size(); ++j) {
      if (j == k) continue;
      lhs += e.inputs[j] + ",";
      letters += e.inputs[j];
      operands.push_back(ts[j]);
    }
    lhs += e.output;
    letters += e.output;
    operands.push_back(g);
    std::string target;
    std::vector<int64_t> missing;
    for (size_t d = 0; d < e.inputs[k].size(); ++d) {
      if (letters.find(e.inputs[k][d]) != std::string::npos)
        target += e.inputs[k][d];
      else
        missing.push_back(static_cast<int64_t>(d));
    }
    Tensor r = einsum(lhs + "->" + target, operands);
    for (int64_t d : missing) r = r.unsqueeze(d);
    // Size-1 dims (summed-only subscripts, or subscripts the others broadcast) grow to the operand's sizes; dims
    // where the operand broadcast are summed back by the node.
    const SymIntList& want = ts[k].sizes();
    SymIntList sizes = r.sizes();
    bool grow = false;
    for (size_t d = 0; d < sizes.size(); ++d)
      if (sizes[d] == 1 && want[d] != 1) sizes[d] = want[d], grow = true;
    grads[k] = grow ? r.expand(sizes) : r;
  }
  return grads;
}

// ---- normalisations ----

// Gradient of the input of (x - mean) * rstd over `dims`, given the gradient `gx` of the normalised value.
Tensor normalized_input_grad(const Tensor& gx, const Tensor& xhat, const Tensor& rstd, const DimList& dims) {
  return rstd * (gx - mean(gx, dims, true) - xhat * mean(gx * xhat, dims, true));
}

void layer_norm_grads(C& c) {
  Tensor x = c.t("input"), w = c.t("weight"), g = c.grad();
  const DimList dims = trailing_dims(x.dim(), static_cast<int64_t>(c.arg("normalized_shape").int_list().size()));
  Tensor mu = mean(x, dims, true);
  Tensor centered = x - mu;
  Tensor rstd = rsqrt(mean(centered * centered, dims, true) + c.f("eps"));
  Tensor xhat = centered * rstd;
  if (c.needs("bias")) c.set("bias", g);
  if (c.needs("weight")) c.set("weight", g * xhat);
  if (c.needs("input")) c.set("input", normalized_input_grad(w.defined() ? g * w : g, xhat, rstd, dims));
}

// eps None: the input dtype's machine epsilon, as the forward.
double rms_eps(const C& c, DType dtype) {
  if (!c.arg("eps").is_none()) return c.f("eps");
  switch (dtype) {
    case kFloat64:
      return std::numeric_limits<double>::epsilon();
    case kFloat16:
      return 0.0009765625;
    case kBFloat16:
      return 0.0078125;
    default:
      return std::numeric_limits<float>::epsilon();
  }
}

void rms_norm_grads(C& c) {
  Tensor x = c.t("input"), w = c.t("weight"), g = c.grad();
  const DimList dims = trailing_dims(x.dim(), static_cast<int64_t>(c.arg("normalized_shape").int_list().size()));
  Tensor r = rsqrt(mean(x * x, dims, true) + rms_eps(c, x.dtype()));
  if (c.needs("weight")) c.set("weight", g * x * r);
  if (c.needs("input")) {
    Tensor gx = w.defined() ? g * w : g;
    c.set("input", r * (gx - x * (r * r) * mean(gx * x, dims, true)));
  }
}

void group_norm_grads(C& c) {
  Tensor x = c.t("input"), w = c.t("weight"), g = c.grad();
  const int64_t groups = c.i("num_groups"), n = x.size(0).guard_int(), channels = x.size(1).guard_int();
  const SymIntList grouped{n, groups, -1};
  Tensor xr = x.reshape(grouped);
  Tensor mu = mean(xr, {2}, true);
  Tensor centered = xr - mu;
  Tensor rstd = rsqrt(mean(centered * centered, {2}, true) + c.f("eps"));
  Tensor xhat_r = centered * rstd;
  const DimList reduce = all_dims_but(x.dim(), 1);
  if (c.needs("bias")) c.set("bias", sum(g, reduce));
  if (c.needs("weight")) c.set("weight", sum(g * xhat_r.reshape(x.sizes()), reduce));
  if (c.needs("input")) {
    Tensor gx = w.defined() ? g * w.reshape(channel_shape(x.dim(), 1, channels)) : g;
    c.set("input", normalized_input_grad(gx.reshape(grouped), xhat_r, rstd, {2}).reshape(x.sizes()));
  }
}

// batch_norm and batch_norm_functional: in training the batch statistics (biased variance) are functions of the
// input; otherwise the running statistics are constants. The running statistics get no gradient (nor do the
// updated copies batch_norm_functional returns pass one back).
void batch_norm_grads(C& c) {
  Tensor x = c.t("input"), w = c.t("weight"), g = c.grad(0);
  const int64_t channels = x.size(1).guard_int();
  const SymIntList per_channel = channel_shape(x.dim(), 1, channels);
  const DimList reduce = all_dims_but(x.dim(), 1);
  const double eps = c.f("eps");
  const bool training = c.b("training");
  Tensor mu, var;
  if (training) {
    mu = mean(x, reduce, true);
    var = mean(square(x - mu), reduce, true);
  } else {
    mu = c.t("running_mean").detach().reshape(per_channel);
    var = c.t("running_var").detach().reshape(per_channel);
  }
  Tensor rstd = rsqrt(var + eps);
  Tensor xhat = (x - mu) * rstd;
  if (c.needs("bias")) c.set("bias", sum(g, reduce));
  if (c.needs("weight")) c.set("weight", sum(g * xhat, reduce));
  if (c.needs("input")) {
    Tensor gx = w.defined() ? g * w.reshape(per_channel) : g;
    c.set("input", training ? normalized_input_grad(gx, xhat, rstd, reduce) : gx * rstd);
  }
}

// ---- convolutions ----

struct ConvGeometry {
  std::array<int64_t, 2> stride{1, 1}, pad{0, 0}, dilation{1, 1};
  int64_t groups = 1;
};

SymIntList pair_list(const std::array<int64_t, 2>& p) { return SymIntList{SymInt(p[0]), SymInt(p[1])}; }

// The input gradient of conv2d(x, w) (batched, symmetric padding) for an input of spatial sizes `in`: the
// transposed convolution of the gradient, with the output padding that restores the rows the forward's stride
// skipped.
Tensor conv2d_input_grad(const Tensor& g, const Tensor& w, const std::array<int64_t, 2>& in, const ConvGeometry& p) {
  std::array<int64_t, 2> out_pad{};
  for (int i = 0; i < 2; ++i) {
    const int64_t out = g.size(2 + i).guard_int(), k = w.size(2 + i).guard_int();
    out_pad[i] = in[i] + 2 * p.pad[i] - ((out - 1) * p.stride[i] + p.dilation[i] * (k - 1) + 1);
  }
  return conv_transpose2d(g, w, {}, pair_list(p.stride), pair_list(p.pad), pair_list(out_pad), p.groups,
                          pair_list(p.dilation));
}

// The weight gradient of conv2d(x, w) (batched, symmetric padding), w of spatial sizes `kernel`: the
// conv2d_weight_grad op (cuDNN's backward filter on CUDA; im2col and a matrix product per group otherwise).
Tensor conv2d_weight_grad(const Tensor& x, const Tensor& g, const std::array<int64_t, 2>& kernel,
                          const ConvGeometry& p) {
  const SymIntList size{g.sizes()[1], x.sizes()[1] / p.groups, SymInt(kernel[0]), SymInt(kernel[1])};
  return sinter::conv2d_weight_grad(x, size, g, pair_list(p.stride), pair_list(p.pad), pair_list(p.dilation),
                                    p.groups);
}

// conv1d/conv2d with padding `before`/`after` per spatial dim (they differ for padding='same' with an even
// kernel: the extra one on the right is padded onto the input explicitly).
void conv_grads(C& c, int spatial, ConvGeometry p, std::array<int64_t, 2> after) {
  Tensor x = c.t("input"), w = c.t("weight"), g = c.grad();
  const bool batched = x.dim() == spatial + 2;
  if (c.needs("bias")) c.set("bias", sum(g, all_dims_but(g.dim(), batched ? 1 : 0)));
  if (!c.needs("input") && !c.needs("weight")) return;
  Tensor x4 = batched ? x : x.unsqueeze(0), g4 = batched ? g : g.unsqueeze(0), w4 = w;
  if (spatial == 1) {
    x4 = x4.unsqueeze(2), g4 = g4.unsqueeze(2), w4 = w4.unsqueeze(2);
  }
  const std::array<int64_t, 2> in{x4.size(2).guard_int(), x4.size(3).guard_int()};
  const std::array<int64_t, 2> extra{after[0] - p.pad[0], after[1] - p.pad[1]};
  Tensor xp = extra[0] > 0 || extra[1] > 0 ? pad(x4, {0, extra[1], 0, extra[0]}) : x4;
  if (c.needs("input")) {
    Tensor gi = conv2d_input_grad(g4, w4, {in[0] + extra[0], in[1] + extra[1]}, p);
    if (extra[0] > 0 || extra[1] > 0) gi = gi.narrow(2, 0, in[0]).narrow(3, 0, in[1]);
    if (spatial == 1) gi = gi.squeeze(DimList{2});
    c.set("input", batched ? gi : gi.squeeze(DimList{0}));
  }
  if (c.needs("weight")) {
    Tensor gw = conv2d_weight_grad(xp, g4, {w4.size(2).guard_int(), w4.size(3).guard_int()}, p);
    c.set("weight", spatial == 1 ? gw.squeeze(DimList{2}) : gw);
  }
}

// conv1d/conv2d's geometry from the row's arguments; conv1d's single spatial dim is the width of a conv2d of
// height 1.
ConvGeometry conv_geometry(const C& c, int spatial) {
  ConvGeometry p;
  p.groups = c.i("groups");
  std::vector<int64_t> stride = c.arg("stride").to_int_list(), dilation = c.arg("dilation").to_int_list();
  for (int i = 0; i < spatial; ++i) {
    const int slot = spatial == 1 ? 1 : i;
    p.stride[slot] = stride.size() == 1 ? stride[0] : stride[i];
    p.dilation[slot] = dilation.size() == 1 ? dilation[0] : dilation[i];
  }
  return p;
}

void conv_int_padding_grads(C& c, int spatial) {
  ConvGeometry p = conv_geometry(c, spatial);
  std::vector<int64_t> pad = c.arg("padding").to_int_list();
  for (int i = 0; i < spatial; ++i) p.pad[spatial == 1 ? 1 : i] = pad.size() == 1 ? pad[0] : pad[i];
  conv_grads(c, spatial, p, p.pad);
}

void conv_mode_padding_grads(C& c, int spatial) {
  ConvGeometry p = conv_geometry(c, spatial);
  std::array<int64_t, 2> after{0, 0};
  if (c.arg("padding").str_value() == "same") {
    const SymIntList& ws = c.meta("weight").sizes;
    for (int i = 0; i < spatial; ++i) {
      const int slot = spatial == 1 ? 1 : i;
      const int64_t total = p.dilation[slot] * (ws[2 + i].guard_int() - 1);
      p.pad[slot] = total / 2;
      after[slot] = total - total / 2;
    }
  }
  conv_grads(c, spatial, p, after);
}

// conv2d_weight_grad(x, size, g) is bilinear in x and g: for the gradient gw of its result, g's is the forward
// conv of x with gw, and x's the input gradient of that conv for g.
void conv_weight_grad_grads(C& c) {
  Tensor x = c.t("input"), g = c.t("grad_output"), gw = c.grad();
  ConvGeometry p;
  p.groups = c.i("groups");
  p.stride = pair_arg(c.arg("stride"), {1, 1});
  p.pad = pair_arg(c.arg("padding"));
  p.dilation = pair_arg(c.arg("dilation"), {1, 1});
  if (c.needs("grad_output"))
    c.set("grad_output", conv2d(x, gw, {}, pair_list(p.stride), pair_list(p.pad), pair_list(p.dilation), p.groups));
  if (c.needs("input"))
    c.set("input", conv2d_input_grad(g, gw, {x.size(2).guard_int(), x.size(3).guard_int()}, p));
}

void conv_transpose2d_grads(C& c) {
  Tensor x = c.t("input"), w = c.t("weight"), g = c.grad();
  const bool batched = x.dim() == 4;
  ConvGeometry p;
  p.groups = c.i("groups");
  p.stride = pair_arg(c.arg("stride"), {1, 1});
  p.pad = pair_arg(c.arg("padding"));
  p.dilation = pair_arg(c.arg("dilation"), {1, 1});
  Tensor g4 = batched ? g : g.unsqueeze(0), x4 = batched ? x : x.unsqueeze(0);
  if (c.needs("bias")) c.set("bias", sum(g4, {0, 2, 3}));
  if (c.needs("input")) {
    // conv2d is the adjoint; with an output padding of a stride or more it yields rows past the input's.
    Tensor gi = conv2d(g4, w, {}, pair_list(p.stride), pair_list(p.pad), pair_list(p.dilation), p.groups);
    gi = gi.narrow(2, 0, x4.size(2).guard_int()).narrow(3, 0, x4.size(3).guard_int());
    c.set("input", batched ? gi : gi.squeeze(DimList{0}));
  }
  if (c.needs("weight"))
    c.set("weight", conv2d_weight_grad(g4, x4, {w.size(2).guard_int(), w.size(3).guard_int()}, p));
}

// ---- pooling and upsampling: index tables ----

// Per output pixel `k` taps: an input position h * W + w (H * W: none) and, when `weight` is not empty, its
// weight. Such an op's gradient is the output gradient scattered (added) into the taps' input positions.
struct Taps {
  int64_t k = 1;
  std::vector<int64_t> index;
  std::vector<double> weight;
};

Tensor index_table(const Taps& t, const Tensor& like) {
  return tensor(t.index, TensorOptions(kInt64)).to(like.device());
}

// The gradient `g` [..., OH, OW] of a tap-table op scattered into zeros [..., H, W].
Tensor spread(const Tensor& g, const Taps& t, int64_t h, int64_t w) {
  const int64_t rank = g.dim(), oh = g.size(rank - 2).guard_int(), ow = g.size(rank - 1).guard_int();
  SymIntList lead(g.sizes().begin(), g.sizes().end() - 2);
  const int64_t planes = sym_product(lead).guard_int(), cells = oh * ow * t.k;
  Tensor gf = g.reshape({planes, oh * ow, 1});
  if (!t.weight.empty())
    gf = gf * tensor(t.weight, TensorOptions(kFloat64)).to(g.device(), g.dtype()).reshape({oh * ow, t.k});
  else if (t.k > 1)
    gf = gf.expand({planes, oh * ow, t.k});
  gf = gf.reshape({planes, cells});
  Tensor idx = index_table(t, g).reshape({1, cells}).expand({planes, cells}).contiguous();
  Tensor out = scatter_add(zeros({planes, h * w + 1}, options_of(g)), 1, idx, gf);
  SymIntList sizes = lead;
  sizes.push_back(h);
  sizes.push_back(w);
  return out.narrow(1, 0, h * w).reshape(sizes);
}

struct PoolArgs {
  std::array<int64_t, 2> kernel{1, 1}, stride{1, 1}, pad{0, 0}, dilation{1, 1};
  bool ceil_mode = false;
};

PoolArgs pool_args(const C& c, bool is_max) {
  PoolArgs p;
  p.kernel = pair_arg(c.arg("kernel_size"));
  p.stride = pair_arg(c.arg("stride"), p.kernel);
  p.pad = pair_arg(c.arg("padding"));
  if (is_max) p.dilation = pair_arg(c.arg("dilation"), {1, 1});
  p.ceil_mode = c.b("ceil_mode");
  return p;
}

// max_pool2d: every tap of every window (padding taps as none), row-major in the window as the forward scans it.
Taps max_pool_taps(const PoolArgs& p, int64_t h, int64_t w, int64_t oh, int64_t ow) {
  Taps t;
  t.k = p.kernel[0] * p.kernel[1];
  t.index.reserve(static_cast<size_t>(oh * ow * t.k));
  for (int64_t i = 0; i < oh; ++i)
    for (int64_t j = 0; j < ow; ++j)
      for (int64_t a = 0; a < p.kernel[0]; ++a)
        for (int64_t b = 0; b < p.kernel[1]; ++b) {
          const int64_t r = i * p.stride[0] - p.pad[0] + a * p.dilation[0];
          const int64_t s = j * p.stride[1] - p.pad[1] + b * p.dilation[1];
          t.index.push_back(r >= 0 && r < h && s >= 0 && s < w ? r * w + s : h * w);
        }
  return t;
}

// One avg_pool2d window along one axis: the input range [lo, hi) and the padded length it divides by.
struct AvgWindow {
  int64_t lo, hi, padded;
};

AvgWindow avg_window(int64_t o, int64_t in, int64_t k, int64_t stride, int64_t pad) {
  const int64_t start = o * stride - pad;
  const int64_t end = std::min(start + k, in + pad);
  return {std::max<int64_t>(start, 0), std::min(end, in), end - start};
}

Taps avg_pool_taps(const C& c, int64_t h, int64_t w, int64_t oh, int64_t ow) {
  const PoolArgs p = pool_args(c, false);
  const bool include_pad = c.b("count_include_pad");
  const int64_t divisor_override = c.arg("divisor_override").is_none() ? 0 : c.i("divisor_override");
  Taps t;
  t.k = p.kernel[0] * p.kernel[1];
  t.index.assign(static_cast<size_t>(oh * ow * t.k), h * w);
  t.weight.assign(t.index.size(), 0.0);
  for (int64_t i = 0; i < oh; ++i) {
    const AvgWindow r = avg_window(i, h, p.kernel[0], p.stride[0], p.pad[0]);
    for (int64_t j = 0; j < ow; ++j) {
      const AvgWindow s = avg_window(j, w, p.kernel[1], p.stride[1], p.pad[1]);
      if (r.hi <= r.lo || s.hi <= s.lo) continue;  // a window wholly in the padding averages to 0
      const int64_t divisor = divisor_override ? divisor_override
                              : include_pad    ? r.padded * s.padded
                                               : (r.hi - r.lo) * (s.hi - s.lo);
      size_t slot = static_cast<size_t>((i * ow + j) * t.k);
      for (int64_t a = r.lo; a < r.hi; ++a)
        for (int64_t b = s.lo; b < s.hi; ++b, ++slot) {
          t.index[slot] = a * w + b;
          t.weight[slot] = 1.0 / static_cast<double>(divisor);
        }
    }
  }
  return t;
}

Taps adaptive_avg_taps(int64_t h, int64_t w, int64_t oh, int64_t ow) {
  auto lo = [](int64_t o, int64_t in, int64_t out) { return (o * in) / out; };
  auto hi = [](int64_t o, int64_t in, int64_t out) { return ((o + 1) * in + out - 1) / out; };
  int64_t kh = 0, kw = 0;
  for (int64_t i = 0; i < oh; ++i) kh = std::max(kh, hi(i, h, oh) - lo(i, h, oh));
  for (int64_t j = 0; j < ow; ++j) kw = std::max(kw, hi(j, w, ow) - lo(j, w, ow));
  Taps t;
  t.k = std::max<int64_t>(kh * kw, 1);
  t.index.assign(static_cast<size_t>(oh * ow * t.k), h * w);
  t.weight.assign(t.index.size(), 0.0);
  for (int64_t i = 0; i < oh; ++i)
    for (int64_t j = 0; j < ow; ++j) {
      const int64_t r0 = lo(i, h, oh), r1 = hi(i, h, oh), s0 = lo(j, w, ow), s1 = hi(j, w, ow);
      const double weight = 1.0 / static_cast<double>((r1 - r0) * (s1 - s0));
      size_t slot = static_cast<size_t>((i * ow + j) * t.k);
      for (int64_t a = r0; a < r1; ++a)
        for (int64_t b = s0; b < s1; ++b, ++slot) {
          t.index[slot] = a * w + b;
          t.weight[slot] = weight;
        }
    }
  return t;
}

// The forward's float32 weights, as doubles for the gradient's table.
std::vector<LinearTap<double>> widen(const std::vector<LinearTap<float>>& taps) {
  std::vector<LinearTap<double>> out;
  for (const LinearTap<float>& t : taps) out.push_back({t.i0, t.i1, t.l0, t.l1});
  return out;
}

Taps bilinear_taps(const C& c, DType dtype, int64_t h, int64_t w, int64_t oh, int64_t ow) {
  const bool align = c.b("align_corners");
  const bool wide = dtype == kFloat64;
  std::vector<LinearTap<double>> th = wide ? linear_taps<double>(h, oh, align, c.arg("scales_h"))
                                           : widen(linear_taps<float>(h, oh, align, c.arg("scales_h")));
  std::vector<LinearTap<double>> tw = wide ? linear_taps<double>(w, ow, align, c.arg("scales_w"))
                                           : widen(linear_taps<float>(w, ow, align, c.arg("scales_w")));
  Taps t;
  t.k = 4;
  for (const LinearTap<double>& a : th)
    for (const LinearTap<double>& b : tw) {
      t.index.insert(t.index.end(), {a.i0 * w + b.i0, a.i0 * w + b.i1, a.i1 * w + b.i0, a.i1 * w + b.i1});
      t.weight.insert(t.weight.end(), {a.l0 * b.l0, a.l0 * b.l1, a.l1 * b.l0, a.l1 * b.l1});
    }
  return t;
}

void max_pool2d_grads(C& c) {
  Tensor x = c.t("self").detach(), g = c.grad();
  const int64_t rank = x.dim(), h = x.size(rank - 2).guard_int(), w = x.size(rank - 1).guard_int();
  const int64_t oh = g.size(rank - 2).guard_int(), ow = g.size(rank - 1).guard_int();
  const PoolArgs p = pool_args(c, true);
  const Taps t = max_pool_taps(p, h, w, oh, ow);
  const int64_t planes = x.numel().guard_int() / (h * w), cells = oh * ow * t.k;
  // The window's first maximum (argmax's tie rule, the forward's strict comparison); the "none" tap reads -inf.
  Tensor flat = cat({x.reshape({planes, h * w}),
                     full({planes, 1}, -std::numeric_limits<double>::infinity(), options_of(x))},
                    1);
  Tensor idx = index_table(t, x).reshape({1, cells}).expand({planes, cells}).contiguous();
  Tensor vals = gather(flat, 1, idx).reshape({planes, oh * ow, t.k});
  Tensor pick = argmax(vals, 2, true);
  Tensor source = gather(idx.reshape({planes, oh * ow, t.k}), 2, pick).reshape({planes, oh * ow});
  Tensor out = scatter_add(zeros({planes, h * w + 1}, options_of(g)), 1, source, g.reshape({planes, oh * ow}));
  c.set("self", out.narrow(1, 0, h * w).reshape(x.sizes()));
}

// ---- attention ----

// Key/value heads repeated for grouped-query attention, as the forward: kv head j serves query heads
// j * r .. j * r + r - 1.
Tensor repeat_heads(const Tensor& kv, int64_t q_heads) {
  const int64_t r = kv.dim(), heads = kv.size(r - 3).guard_int();
  if (heads == q_heads) return kv;
  SymIntList grouped = kv.sizes(), expanded = kv.sizes(), out = kv.sizes();
  grouped.insert(grouped.begin() + (r - 2), SymInt(1));
  expanded.insert(expanded.begin() + (r - 2), SymInt(q_heads / heads));
  out[r - 3] = SymInt(q_heads);
  return kv.reshape(grouped).expand(expanded).reshape(out);
}

// The gradient of repeat_heads: each kv head's share summed over the query heads it served.
Tensor sum_heads(const Tensor& g, int64_t kv_heads) {
  const int64_t r = g.dim(), heads = g.size(r - 3).guard_int();
  if (heads == kv_heads) return g;
  SymIntList split = g.sizes();
  split[r - 3] = SymInt(kv_heads);
  split.insert(split.begin() + (r - 2), SymInt(heads / kv_heads));
  return sum(g.reshape(split), {r - 2});
}

void sdpa_grads(C& c) {
  Tensor q = c.t("query"), k = c.t("key"), v = c.t("value"), mask = c.t("attn_mask"), g = c.grad();
  const double p = c.f("dropout_p");
  if (p >= 1) {  // the forward's output is zeros
    for (const char* name : {"query", "key", "value", "attn_mask"})
      if (c.needs(name)) c.set(name, zeros(c.meta(name).sizes, options_of(g)));
    return;
  }
  SINTER_CHECK(p == 0,
               "the derivative of scaled_dot_product_attention with dropout_p={} is not implemented (the dropout "
               "mask is not kept); use dropout_p=0, or apply dropout to the attention weights outside the op",
               p);
  const int64_t e = q.size(-1).guard_int(), l = q.size(-2).guard_int(), s = k.size(-2).guard_int();
  const double scale = c.arg("scale").is_none() ? 1.0 / std::sqrt(static_cast<double>(e)) : c.f("scale");
  const bool gqa = c.b("enable_gqa") && q.dim() >= 3;
  auto batch = [](const Tensor& t) { return SymIntList(t.sizes().begin(), t.sizes().end() - 2); };
  // On CUDA, without a mask or grouped heads, one op whose kernel is flash attention's backward (it recomputes the
  // probabilities tile by tile instead of keeping [L, S] of them).
  if (q.is_cuda() && !mask.defined() && q.dim() == k.dim() && q.dim() == v.dim() && batch(q) == batch(k) &&
      batch(q) == batch(v)) {
    std::vector<Tensor> grads = scaled_dot_product_attention_backward(g.to(q.dtype()), q, k, v, c.b("is_causal"), scale);
    const char* names[] = {"query", "key", "value"};
    for (int i = 0; i < 3; ++i)
      if (c.needs(names[i])) c.set(names[i], grads[i]);
    return;
  }
  const int64_t kv_heads = gqa ? k.size(-3).guard_int() : 0;
  Tensor kr = gqa ? repeat_heads(k, q.size(-3).guard_int()) : k;
  Tensor vr = gqa ? repeat_heads(v, q.size(-3).guard_int()) : v;
  Tensor scores = matmul(q, transposed(kr)) * scale;
  if (mask.defined())
    scores = mask.dtype() == kBool ? masked_fill(scores, ~mask, -std::numeric_limits<double>::infinity())
                                   : scores + mask;
  if (c.b("is_causal")) {
    Tensor opts = arange(l, TensorOptions(kInt64, q.device())).unsqueeze(-1);
    Tensor keys = arange(s, TensorOptions(kInt64, q.device())).unsqueeze(0);
    scores = masked_fill(scores, keys > opts, -std::numeric_limits<double>::infinity());
  }
  // Rows with every key masked give zeros (the forward's _safe_softmax); they are kept finite here so that no
  // NaN reaches the other rows' gradients.
  Tensor live = amax(scores.detach(), {-1}, true) > -std::numeric_limits<double>::infinity();
  Tensor probs = where(live, softmax(where(live, scores, 0.0), -1), 0.0);
  if (c.needs("value")) {
    Tensor gv = matmul(transposed(probs), g);
    c.set("value", gqa ? sum_heads(gv, kv_heads) : gv);
  }
  if (!c.needs("query") && !c.needs("key") && !c.needs("attn_mask")) return;
  Tensor gp = matmul(g, transposed(vr));
  Tensor gs = probs * (gp - sum(gp * probs, {-1}, true));
  if (c.needs("attn_mask")) c.set("attn_mask", gs);
  if (c.needs("query")) c.set("query", matmul(gs, kr) * scale);
  if (c.needs("key")) {
    Tensor gk = matmul(transposed(gs), q) * scale;
    c.set("key", gqa ? sum_heads(gk, kv_heads) : gk);
  }
}

// ---- losses ----

// cross_entropy_loss (log_softmax of the input) and nll_loss (the input holds log-probabilities). Per position p
// and class c the loss numerator is sum_c weight[c] * a[p, c] * logp[p, c]; the gradient of logp is then
// weight * a times the reduction's factor, and cross_entropy's input gradient goes through log_softmax.
void class_loss_grads(C& c, bool from_logits) {
  Tensor x = c.t("self"), target = c.t("target"), w = c.t("weight"), g = c.grad();
  const std::string& reduction = c.arg("reduction").str_value();
  const int64_t rank = x.dim(), cd = rank == 1 ? 0 : 1, classes = x.size(cd).guard_int();
  const double eps = from_logits ? c.f("label_smoothing") : 0.0;
  const bool probabilities = from_logits && target.sizes() == x.sizes();
  const SymIntList per_class = channel_shape(rank, cd, classes);
  const DimList positions = all_dims_but(rank, cd);
  Tensor wv = w.defined() ? w.reshape(per_class) : Tensor();
  Tensor logp = from_logits ? log_softmax(x, cd) : x;
  Tensor a, counted;  // counted: the one-hot of the counted targets (index targets)
  if (probabilities) {
    a = -(target * (1.0 - eps) + eps / static_cast<double>(classes));
  } else {
    Tensor t = target.unsqueeze(cd);
    Tensor valid = (t != c.i("ignore_index")).to(x.dtype());
    counted = (arange(classes, TensorOptions(kInt64, x.device())).reshape(per_class) == t).to(x.dtype()) * valid;
    a = counted * -(1.0 - eps);
    if (eps > 0) a = a - valid * (eps / static_cast<double>(classes));
  }
  Tensor factor;
  if (reduction == "none")
    factor = g.unsqueeze(cd);
  else if (reduction == "sum")
    factor = g;
  else if (probabilities)
    factor = g / static_cast<double>(x.numel().guard_int() / std::max<int64_t>(classes, 1));
  else
    factor = g / sum(wv.defined() ? counted * wv : counted);
  if (c.needs("self")) {
    Tensor glogp = (wv.defined() ? a * wv : a) * factor;
    c.set("self", from_logits ? glogp - exp(logp) * sum(glogp, {cd}, true) : glogp);
  }
  if (probabilities && c.needs("target"))
    c.set("target", (wv.defined() ? logp * wv : logp) * (-(1.0 - eps)) * factor);
  if (c.needs("weight")) {
    Tensor per = a * logp * factor;
    // 'mean' divides by the counted targets' summed weights, which depend on the weights too.
    if (!probabilities && reduction == "mean") per = per - counted * (c.result() * factor);
    c.set("weight", positions.empty() ? per : sum(per, positions));
  }
}

void mse_loss_grads(C& c) {
  Tensor diff = c.t("self") - c.t("target"), g = c.grad();
  const std::string& reduction = c.arg("reduction").str_value();
  Tensor factor = reduction == "mean" ? g * (2.0 / static_cast<double>(diff.numel().guard_int())) : g * 2.0;
  Tensor grad = diff * factor;
  if (c.needs("self")) c.set("self", grad);
  if (c.needs("target")) c.set("target", -grad);
}

// ---- embedding, dropout ----

void embedding_grads(C& c) {
  Tensor indices = c.t("indices"), g = c.grad();
  const GradMeta& m = c.meta("weight");
  const int64_t dim = m.sizes[1].guard_int(), padding_idx = c.i("padding_idx");
  Tensor flat_idx = indices.reshape({-1}).to(kInt64);
  Tensor rows = g.reshape({-1, dim});
  if (padding_idx >= 0) rows = where((flat_idx == padding_idx).unsqueeze(-1), 0.0, rows);
  c.set("weight", index_put(zeros(m.sizes, options_of(g)), {flat_idx}, rows, true));
}

void dropout_grads(C& c) {
  const double p = c.f("p");
  Tensor g = c.grad();
  if (!c.b("train") || p == 0) return c.set("input", g);
  if (p >= 1) return c.set("input", zeros_like(g));
  c.set("input", where(c.result() != 0.0, g * (1.0 / (1.0 - p)), 0.0));
}

}  // namespace

void add_nn_rows(std::vector<DerivativeRow>& rows) {
  auto row = [&](OpId op, const char* saves, BackwardFormula f) { rows.push_back({op, saves, f}); };
  row(OpId::mm, "self, mat2", [](C& c) {
    Tensor g = c.grad();
    if (c.needs("self")) c.set("self", mm(g, c.t("mat2").t()));
    if (c.needs("mat2")) c.set("mat2", mm(c.t("self").t(), g));
  });
  row(OpId::bmm, "self, mat2", [](C& c) {
    Tensor g = c.grad();
    if (c.needs("self")) c.set("self", bmm(g, c.t("mat2").transpose(1, 2)));
    if (c.needs("mat2")) c.set("mat2", bmm(c.t("self").transpose(1, 2), g));
  });
  row(OpId::matmul, "self, other", [](C& c) { matmul_grads(c, c.t("self"), c.t("other"), "self", "other"); });
  row(OpId::addmm, "mat1, mat2", [](C& c) {
    Tensor g = c.grad();
    const Scalar alpha = c.arg("alpha").scalar();
    if (c.needs("self")) c.set("self", g * c.arg("beta").scalar());
    if (c.needs("mat1")) c.set("mat1", mm(g, c.t("mat2").t()) * alpha);
    if (c.needs("mat2")) c.set("mat2", mm(c.t("mat1").t(), g) * alpha);
  });
  row(OpId::linear, "input, weight", linear_grads);
  row(OpId::einsum, "tensors", [](C& c) { c.set_list("tensors", einsum_grads(c)); });
  row(OpId::layer_norm, "input, weight", layer_norm_grads);
  row(OpId::group_norm, "input, weight", group_norm_grads);
  row(OpId::rms_norm, "input, weight", rms_norm_grads);
  row(OpId::batch_norm, "input, weight, running_mean, running_var", batch_norm_grads);
  row(OpId::batch_norm_functional, "input, weight, running_mean, running_var", batch_norm_grads);
  row(OpId::conv1d, "input, weight", [](C& c) { conv_int_padding_grads(c, 1); });
  row(OpId::conv2d, "input, weight", [](C& c) { conv_int_padding_grads(c, 2); });
  row(OpId::conv1d_padding, "input, weight", [](C& c) { conv_mode_padding_grads(c, 1); });
  row(OpId::conv2d_padding, "input, weight", [](C& c) { conv_mode_padding_grads(c, 2); });
  row(OpId::conv_transpose2d, "input, weight", conv_transpose2d_grads);
  row(OpId::conv2d_weight_grad, "input, grad_output", conv_weight_grad_grads);
  row(OpId::max_pool2d, "self", max_pool2d_grads);
  row(OpId::avg_pool2d, "", [](C& c) {
    const SymIntList& in = c.meta("self").sizes;
    const int64_t h = in[in.size() - 2].guard_int(), w = in[in.size() - 1].guard_int();
    Tensor g = c.grad();
    const int64_t oh = g.size(-2).guard_int(), ow = g.size(-1).guard_int();
    c.set("self", spread(g, avg_pool_taps(c, h, w, oh, ow), h, w));
  });
  row(OpId::adaptive_avg_pool2d, "", [](C& c) {
    const SymIntList& in = c.meta("self").sizes;
    const int64_t h = in[in.size() - 2].guard_int(), w = in[in.size() - 1].guard_int();
    Tensor g = c.grad();
    c.set("self", spread(g, adaptive_avg_taps(h, w, g.size(-2).guard_int(), g.size(-1).guard_int()), h, w));
  });
  row(OpId::upsample_nearest2d, "", [](C& c) {
    const SymIntList& in = c.meta("self").sizes;
    const int64_t h = in[2].guard_int(), w = in[3].guard_int();
    Tensor g = c.grad();
    const int64_t oh = g.size(2).guard_int(), ow = g.size(3).guard_int();
    std::vector<int64_t> ih = nearest_taps(h, oh, c.arg("scales_h")), iw = nearest_taps(w, ow, c.arg("scales_w"));
    Taps t;
    for (int64_t r : ih)
      for (int64_t s : iw) t.index.push_back(r * w + s);
    c.set("self", spread(g, t, h, w));
  });
  row(OpId::upsample_bilinear2d, "", [](C& c) {
    const GradMeta& m = c.meta("self");
    const int64_t h = m.sizes[2].guard_int(), w = m.sizes[3].guard_int();
    Tensor g = c.grad();
    c.set("self", spread(g, bilinear_taps(c, m.dtype, h, w, g.size(2).guard_int(), g.size(3).guard_int()), h, w));
  });
  row(OpId::scaled_dot_product_attention, "query, key, value, attn_mask", sdpa_grads);
  row(OpId::cross_entropy_loss, "self, target, weight, result", [](C& c) { class_loss_grads(c, true); });
  row(OpId::nll_loss, "self, target, weight, result", [](C& c) { class_loss_grads(c, false); });
  row(OpId::mse_loss, "self, target", mse_loss_grads);
  row(OpId::embedding, "indices", embedding_grads);
  row(OpId::dropout, "result", dropout_grads);
}

}  // namespace sinter::autograd
