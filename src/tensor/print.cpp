// Printing tensors as PyTorch does: `tensor([[ 1.0000, -2.5000], ...], dtype=torch.float64)`, with the same
// choice between integer-looking, fixed and scientific float formats, and "..." summaries above 1000 elements.
#include <fmt/format.h>

#include <cmath>
#include <ostream>

#include "tensor/dtype_dispatch.h"
#include "tensor/cuda_device.h"
#include "tensor/read_hook.h"

namespace sinter {
namespace {

constexpr int64_t kThreshold = 1000, kEdgeItems = 3;

struct Formatter {
  bool floating = false, is_bool = false, int_mode = false, sci = false;
  int width = 1;

  std::string one(double v) const {
    if (is_bool) return v != 0 ? "True" : "False";
    if (!floating) return fmt::format("{}", static_cast<int64_t>(v));
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (sci) return fmt::format("{:.4e}", v);
    if (int_mode) return fmt::format("{:.0f}.", v);
    return fmt::format("{:.4f}", v);
  }
};

Formatter make_formatter(const std::vector<double>& values, DType dtype) {
  Formatter f;
  f.floating = is_floating(dtype);
  f.is_bool = dtype == kBool;
  if (f.floating) {
    double lo = INFINITY, hi = 0;
    bool all_int = true, any_finite = false;
    for (double v : values) {
      if (!std::isfinite(v)) continue;
      any_finite = true;
      double a = std::fabs(v);
      if (a != 0) lo = std::min(lo, a);
      hi = std::max(hi, a);
      if (v != std::floor(v)) all_int = false;
    }
    if (any_finite) {
      f.int_mode = all_int;
      if (all_int) f.sci = hi > 1e8;
      else f.sci = hi / (lo == INFINITY ? 1 : lo) > 1000 || hi > 1e8 || (lo != INFINITY && lo < 1e-4);
    }
  }
  for (double v : values) f.width = std::max<int>(f.width, static_cast<int>(f.one(v).size()));
  return f;
}

// Flat values of the summarised view (edges only, per dim, when the tensor is large).
void collect(const Tensor& t, bool summarize, std::vector<double>& out) {
  if (t.dim() == 0) {
    out.push_back(t.item<double>());
    return;
  }
  int64_t n = t.sizes()[0].hint();
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) i = n - kEdgeItems;
    collect(t.select(0, i), summarize, out);
  }
}

void render(const Tensor& t, const Formatter& f, bool summarize, int indent, std::string& out) {
  if (t.dim() == 0) {
    std::string s = f.one(t.item<double>());
    out += std::string(f.width - s.size(), ' ') + s;
    return;
  }
  int64_t n = t.sizes()[0].hint();
  out += "[";
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) {
      if (t.dim() == 1) out += "..., ";
      else out += "...," + std::string(t.dim() - 1, '\n') + std::string(indent + 1, ' ');
      i = n - kEdgeItems;
    }
    render(t.select(0, i), f, summarize, indent + 1, out);
    if (i + 1 < n) {
      if (t.dim() == 1) out += ", ";
      else out += "," + std::string(t.dim() - 1, '\n') + std::string(indent + 1, ' ');
    }
  }
  out += "]";
}

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  Tensor t = *this;
  if (ReadHook* hook = current_read_hook()) t = hook->materialize(t, "printing", Loc());
  std::string suffix;
  bool default_dtype = t.dtype() == kFloat32 || t.dtype() == kInt64 || t.dtype() == kBool;
  if (t.is_meta()) return fmt::format("tensor(..., size={}, dtype=torch.{}, device='meta')", t.sizes().str(),
                                      dtype_name(t.dtype()));
  if (!t.is_cpu()) {
    suffix += fmt::format(", device='{}'", t.device().str());
    t = cuda::host_values(t);
  }
  int64_t numel = t.numel().hint();
  if (numel == 0 && t.dim() != 1) suffix = fmt::format(", size={}", t.sizes().str()) + suffix;
  if (!default_dtype || (numel == 0 && t.dtype() != kFloat32)) suffix += fmt::format(", dtype=torch.{}", dtype_name(t.dtype()));
  bool summarize = numel > kThreshold;
  std::vector<double> values;
  collect(t, summarize, values);
  Formatter f = make_formatter(values, t.dtype());
  std::string body;
  render(t, f, summarize, 7, body);  // aligned under "tensor("
  return "tensor(" + body + suffix + ")";
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

std::ostream& operator<<(std::ostream& os, const TensorOptions& o) {
  return os << "TensorOptions(dtype=" << (o.has_dtype() ? dtype_name(o.dtype()) : "None")
            << ", device=" << o.device().str() << ", requires_grad=" << (o.requires_grad() ? "true" : "false")
            << (o.pinned_memory() ? ", pinned_memory=true)" : ")");
}

}  // namespace sinter
