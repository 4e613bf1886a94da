// RNN, GRU and LSTM against a scalar float64 reference of ONNX's equations, in the forms the conformance cases
// leave out: bidirectional and reverse passes, per-batch sequence_lens, initial states, LSTM peepholes, GRU
// linear_before_reset, clip, layout 1; eager and under compile().
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "sinter/compile.h"
#include "sinter/onnx.h"
#include "testing.h"
#include "frontends/onnx/onnx_writer.h"

namespace sinter {
namespace {
using namespace onnx_writer;

constexpr int kDouble = 11, kInt32 = 6;

struct Spec {
  std::string op;  // RNN, GRU, LSTM
  int64_t seq = 4, batch = 3, input = 2, hidden = 3, dirs = 2;
  std::string direction = "bidirectional";
  std::vector<int32_t> lens{4, 2, 3};
  bool lbr = false;
  double clip = 0;  // 0: none
  bool layout1 = false;
  int gates() const { return op == "RNN" ? 1 : op == "GRU" ? 3 : 4; }
};

std::vector<double> random_values(size_t n, uint64_t seed) {
  std::mt19937 g(static_cast<unsigned>(seed));
  std::normal_distribution<double> nd(0, 0.5);
  std::vector<double> v(n);
  for (double& x : v) x = nd(g);
  return v;
}

double sig(double x) { return 1 / (1 + std::exp(-x)); }

// ONNX's equations, one batch entry and direction at a time. x: [seq][batch][input]; returns Y [seq][dirs][batch]
// [hidden] and Y_h [dirs][batch][hidden] flattened, plus Y_c for LSTM.
struct Ref {
  std::vector<double> y, yh, yc;
};
Ref reference(const Spec& s, const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& r,
              const std::vector<double>& b, const std::vector<double>& h0, const std::vector<double>& c0,
              const std::vector<double>& p) {
  int64_t H = s.hidden, G = s.gates(), I = s.input;
  Ref out{std::vector<double>(s.seq * s.dirs * s.batch * H, 0.0), std::vector<double>(s.dirs * s.batch * H),
          std::vector<double>(s.dirs * s.batch * H)};
  auto clip = [&](double v) { return s.clip > 0 ? std::clamp(v, -s.clip, s.clip) : v; };
  for (int64_t d = 0; d < s.dirs; ++d) {
    bool reverse = s.direction == "reverse" || d == 1;
    for (int64_t bt = 0; bt < s.batch; ++bt) {
      int64_t len = s.lens.empty() ? s.seq : s.lens[bt];
      std::vector<double> h(h0.begin() + (d * s.batch + bt) * H, h0.begin() + (d * s.batch + bt + 1) * H);
      std::vector<double> c(c0.begin() + (d * s.batch + bt) * H, c0.begin() + (d * s.batch + bt + 1) * H);
      for (int64_t k = 0; k < len; ++k) {
        int64_t t = reverse ? len - 1 - k : k;
        // xw[g*H + j] = x_t . W[g*H + j] + Wb; hr likewise with R and Rb.
        std::vector<double> xw(G * H), hr(G * H);
        for (int64_t q = 0; q < G * H; ++q) {
          xw[q] = b[d * 2 * G * H + q];
          hr[q] = b[d * 2 * G * H + G * H + q];
          for (int64_t i = 0; i < I; ++i) xw[q] += x[(t * s.batch + bt) * I + i] * w[(d * G * H + q) * I + i];
          for (int64_t i = 0; i < H; ++i) hr[q] += h[i] * r[(d * G * H + q) * H + i];
        }
        std::vector<double> hn(H), cn(H);
        for (int64_t j = 0; j < H; ++j) {
          if (s.op == "RNN") {
            hn[j] = std::tanh(clip(xw[j] + hr[j]));
          } else if (s.op == "GRU") {
            double z = sig(clip(xw[j] + hr[j])), rr = sig(clip(xw[H + j] + hr[H + j]));
            double rec;
            if (s.lbr) {
              rec = rr * hr[2 * H + j];
            } else {
              rec = b[d * 2 * G * H + G * H + 2 * H + j];
              for (int64_t i = 0; i < H; ++i) {
                double ri = sig(clip(xw[H + i] + hr[H + i]));
                rec += ri * h[i] * r[(d * G * H + 2 * H + j) * H + i];
              }
            }
            hn[j] = (1 - z) * std::tanh(clip(xw[2 * H + j] + rec)) + z * h[j];
          } else {
            const double* pd = p.data() + d * 3 * H;
            double i = sig(clip(xw[j] + hr[j] + pd[j] * c[j]));
            double f = sig(clip(xw[2 * H + j] + hr[2 * H + j] + pd[2 * H + j] * c[j]));
            cn[j] = f * c[j] + i * std::tanh(clip(xw[3 * H + j] + hr[3 * H + j]));
            double o = sig(clip(xw[H + j] + hr[H + j] + pd[H + j] * cn[j]));
            hn[j] = o * std::tanh(cn[j]);
          }
        }
        h = hn;
        if (s.op == "LSTM") c = cn;
        for (int64_t j = 0; j < H; ++j) out.y[((t * s.dirs + d) * s.batch + bt) * H + j] = h[j];
      }
      for (int64_t j = 0; j < H; ++j) {
        out.yh[(d * s.batch + bt) * H + j] = h[j];
        out.yc[(d * s.batch + bt) * H + j] = c[j];
      }
    }
  }
  return out;
}

void check(const Spec& s) {
  int64_t H = s.hidden, G = s.gates();
  std::vector<double> x = random_values(s.seq * s.batch * s.input, 1), w = random_values(s.dirs * G * H * s.input, 2),
                      r = random_values(s.dirs * G * H * H, 3), b = random_values(s.dirs * 2 * G * H, 4),
                      h0 = random_values(s.dirs * s.batch * H, 5), c0 = random_values(s.dirs * s.batch * H, 6),
                      p = random_values(s.dirs * 3 * H, 7);
  Ref want = reference(s, x, w, r, b, h0, c0, p);
  bool lstm = s.op == "LSTM";
  std::vector<std::string> ins{"x", "w", "r", "b", "lens", "h0"};
  if (lstm) ins.insert(ins.end(), {"c0", "p"});
  std::vector<std::string> outs{"y", "yh"};
  if (lstm) outs.push_back("yc");
  std::string attrs = attr_int("hidden_size", H) + attr_string("direction", s.direction);
  if (s.lbr) attrs += attr_int("linear_before_reset", 1);
  if (s.clip > 0) attrs += attr_float("clip", static_cast<float>(s.clip));
  if (s.layout1) attrs += attr_int("layout", 1);
  std::string g = node(ins, outs, s.op, "cell0", attrs) + field_bytes(5, double_tensor("w", {s.dirs, G * H, s.input}, w)) +
                  field_bytes(5, double_tensor("r", {s.dirs, G * H, H}, r)) +
                  field_bytes(5, double_tensor("b", {s.dirs, 2 * G * H}, b)) +
                  field_bytes(5, double_tensor("p", {s.dirs, 3 * H}, p));
  std::vector<int64_t> xd = s.layout1 ? std::vector<int64_t>{s.batch, s.seq, s.input} : std::vector<int64_t>{s.seq, s.batch, s.input};
  std::vector<int64_t> hd = s.layout1 ? std::vector<int64_t>{s.batch, s.dirs, H} : std::vector<int64_t>{s.dirs, s.batch, H};
  g += value_info(11, "x", kDouble, xd) + value_info(11, "lens", kInt32, {s.batch}) + value_info(11, "h0", kDouble, hd);
  if (lstm) g += value_info(11, "c0", kDouble, hd);
  for (const std::string& o : outs) g += value_info(12, o, kDouble, {});
  onnx::Model m = onnx::load_from_bytes(model(g, 14));
  Tensor xt = from_vector(x, {s.seq, s.batch, s.input}), h0t = from_vector(h0, {s.dirs, s.batch, H}),
         c0t = from_vector(c0, {s.dirs, s.batch, H});
  Tensor yw = from_vector(want.y, {s.seq, s.dirs, s.batch, H}), yhw = from_vector(want.yh, {s.dirs, s.batch, H}),
         ycw = from_vector(want.yc, {s.dirs, s.batch, H});
  if (s.layout1) {
    xt = transpose(xt, 0, 1).contiguous(), h0t = transpose(h0t, 0, 1).contiguous(), c0t = transpose(c0t, 0, 1).contiguous();
    yw = permute(yw, {2, 0, 1, 3}), yhw = transpose(yhw, 0, 1), ycw = transpose(ycw, 0, 1);
  }
  std::vector<Tensor> inputs{xt, from_vector(s.lens, {s.batch}), h0t};
  if (lstm) inputs.push_back(c0t);
  auto fast = compile(m, {.backend = "aot_eager"});
  for (const std::vector<Tensor>& got : {m(inputs), fast(inputs)}) {
    EXPECT_CLOSE(got[0], yw, 1e-12);
    EXPECT_CLOSE(got[1], yhw, 1e-12);
    if (lstm) EXPECT_CLOSE(got[2], ycw, 1e-12);
  }
}

TEST(OnnxRnn, RnnReverseWithLengths) { check({.op = "RNN", .dirs = 1, .direction = "reverse"}); }
TEST(OnnxRnn, GruBidirectionalBothResetForms) {
  check({.op = "GRU"});
  check({.op = "GRU", .lbr = true, .clip = 0.75});
}
TEST(OnnxRnn, LstmBidirectionalPeepholesLayout1) {
  check({.op = "LSTM"});
  check({.op = "LSTM", .lens = {4, 4, 1}, .clip = 0.5, .layout1 = true});
}

}  // namespace
}  // namespace sinter
