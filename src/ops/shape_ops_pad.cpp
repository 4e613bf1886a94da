// pad (torch.nn.functional.pad): pads given from the last dim backwards, modes constant (negative pads crop),
// reflect and replicate. Constant fills the output and copies the overlap; reflect and replicate gather through
// a per-dim table of source coordinates.
#include <fmt/format.h>

#include "ops/index_loop.h"
#include "ops/index_ops.h"
#include "ops/shape_util.h"

namespace sinter {
namespace {

enum class PadMode { kConstant, kReflect, kReplicate };

PadMode parse_mode(const std::string& mode) {
  if (mode == "constant") return PadMode::kConstant;
  if (mode == "reflect") return PadMode::kReflect;
  if (mode == "replicate") return PadMode::kReplicate;
  SINTER_CHECK(false, "Unrecognised padding mode {}; expected \"constant\", \"reflect\" or \"replicate\"", mode);
  return PadMode::kConstant;
}

ShapeResult pad_shape(OpId, const Args& args) {
  const Tensor& self = args[0].tensor();
  const SymIntList& pad = args[1].int_list();
  const PadMode mode = parse_mode(args[2].str_value());
  const int64_t nd = self.dim(), npad = static_cast<int64_t>(pad.size());
  SINTER_CHECK(npad % 2 == 0, "Padding length must be divisible by 2");
  SINTER_CHECK(npad / 2 <= nd,
               "Padding length should be less than or equal to two times the input dimension but got padding "
               "length {} and input of dimension {}",
               npad, nd);
  SINTER_CHECK(mode == PadMode::kConstant || args[3].is_none(), "Padding mode \"{}\" doesn't take in value argument",
               args[2].str_value());
  SymIntList sizes = self.sizes();
  for (int64_t i = 0; i < npad / 2; ++i) {
    const int64_t d = nd - 1 - i;
    const SymInt &l = pad[2 * i], &r = pad[2 * i + 1], &n = self.size(d);
    if (mode == PadMode::kReflect) {
      SINTER_CHECK(l < n && r < n,
                   "Padding size should be less than the corresponding input dimension, but got: padding ({}, {}) "
                   "at dimension {} of input {}",
                   l.str(), r.str(), d, self.sizes().str());
    }
    sizes[d] = n + l + r;
    SINTER_CHECK(sizes[d] >= 0,
                 "The input size {}, plus negative padding {} and {} resulted in a negative output size, which is "
                 "invalid. Check dimension {} of your input.",
                 n.str(), l.str(), r.str(), d);
    if (mode == PadMode::kReplicate)
      SINTER_CHECK(n > 0 || sizes[d] == 0, "replicate padding needs a non-empty input, but dimension {} has size 0", d);
  }
  const bool channels_last = mode == PadMode::kConstant && strides_like_channels_last(self);
  return dense_meta(sizes, self.dtype(), self.device(),
                    channels_last ? MemoryFormat::kChannelsLast : MemoryFormat::kContiguous);
}

void pad_constant(const Tensor& self, const std::vector<int64_t>& pad, double value, const Tensor& out) {
  const ElementBytes v = scalar_to_element(Scalar(value), out.dtype());
  const StridedRef o = strided_ref(out);
  // A fill is a copy from one element repeated (zero strides).
  auto fill_of = [&](const StridedRef& r) {
    return StridedRef{const_cast<char*>(v.bytes), r.sizes, std::vector<int64_t>(r.sizes.size(), 0), r.dtype};
  };
  const int64_t nd = self.dim();
  // The overlap: each dim loses max(-pad, 0) input elements at an end and starts max(pad, 0) into the output.
  StridedRef s = strided_ref(self), inner = o;
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    const int64_t dim = nd - 1 - static_cast<int64_t>(i), l = pad[2 * i], r = pad[2 * i + 1];
    const int64_t len = s.sizes[dim] - std::max<int64_t>(-l, 0) - std::max<int64_t>(-r, 0);
    if (len <= 0) {  // nothing of the input survives
      fill_ref(o, v.bytes);
      return;
    }
    s.data += std::max<int64_t>(-l, 0) * s.strides[dim];
    s.sizes[dim] = len;
  }
  // Fill only the border: per padded dim, the slabs before and after the overlap, within the overlap of the dims
  // already done (so no element is written twice). All pieces run in one parallel region.
  std::vector<CopyJob> jobs;
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    const int64_t dim = nd - 1 - static_cast<int64_t>(i), begin = std::max<int64_t>(pad[2 * i], 0);
    const int64_t end = begin + s.sizes[dim];
    StridedRef before = inner, after = inner;
    before.sizes[dim] = begin;
    after.data += end * o.strides[dim];
    after.sizes[dim] = o.sizes[dim] - end;
    jobs.push_back({before, fill_of(before)});
    jobs.push_back({after, fill_of(after)});
    inner.data += begin * o.strides[dim];
    inner.sizes[dim] = s.sizes[dim];
  }
  jobs.push_back({inner, s});
  copy_refs(jobs);
}

// Output coordinate k of a padded dim reads input coordinate k - left, reflected about the ends or clamped.
int64_t pad_source(int64_t k, int64_t left, int64_t n, PadMode mode) {
  int64_t j = k - left;
  if (mode == PadMode::kReflect) {
    if (j < 0) j = -j;
    if (j >= n) j = 2 * (n - 1) - j;
    return j;
  }
  return std::clamp<int64_t>(j, 0, n - 1);
}

void pad_gather(const Tensor& self, const std::vector<int64_t>& pad, PadMode mode, const Tensor& out) {
  const StridedRef s = strided_ref(self), o = strided_ref(out);
  const int64_t nd = self.dim(), last = nd - 1;
  // Padded dims other than the last read through a table of source coordinates; their index is constant along
  // a row, so rows stay plain copies.
  IndexLoop base;
  base.sizes = o.sizes;
  base.dst = o.data;
  base.dst_strides = o.strides;
  base.src = s.data;
  base.src_strides = s.strides;
  std::vector<std::vector<int64_t>> tables(pad.size() / 2);
  auto add_table = [&](IndexLoop& loop, size_t i, int64_t k0, int64_t k1) {
    const int64_t dim = last - static_cast<int64_t>(i);
    for (int64_t k = k0; k < k1; ++k) tables[i].push_back(pad_source(k, pad[2 * i], s.sizes[dim], mode));
    IndexOperand op;
    op.data = tables[i].data() + (tables[i].size() - (k1 - k0));
    op.strides.assign(nd, 0);
    op.strides[dim] = 1;
    op.step = s.strides[dim];
    op.size = s.sizes[dim];
    loop.indices.push_back(std::move(op));
    loop.src_strides[dim] = 0;
  };
  for (size_t i = 1; i < tables.size(); ++i) add_table(base, i, 0, o.sizes[last - i]);
  // The last dim splits into the left border, the middle (a plain shifted copy) and the right border.
  const int64_t left = pad[0], n = s.sizes[last], width = o.sizes[last];
  const int64_t a = std::clamp<int64_t>(left, 0, width), b = std::clamp<int64_t>(left + n, a, width);
  tables[0].reserve(width);  // both borders' entries, so the first border's pointer stays valid
  std::vector<IndexLoop> loops;
  auto piece = [&](int64_t k0, int64_t k1, bool middle) {
    if (k1 <= k0) return;
    IndexLoop loop = base;
    loop.sizes[last] = k1 - k0;
    loop.dst += k0 * o.strides[last];
    if (middle) loop.src += (k0 - left) * s.strides[last];
    else add_table(loop, 0, k0, k1);
    loops.push_back(std::move(loop));
  };
  piece(0, a, false);
  piece(a, b, true);
  piece(b, width, false);
  visit_element_size(self.element_size(), [&]<class E>() { run_index_loops(loops.data(), loops.size(), CopyRow<E>{}); });
}

void pad_kernel(OpId, const Args& args, std::vector<Tensor>& outs) {
  const Tensor& self = args[0].tensor();
  const Tensor& out = outs[0];
  if (out.numel().hint() == 0) return;
  const std::vector<int64_t> pad = args[1].to_int_list();
  const PadMode mode = parse_mode(args[2].str_value());
  if (pad.empty()) copy_tensor(out, self);
  else if (mode == PadMode::kConstant) pad_constant(self, pad, args[3].is_none() ? 0.0 : args[3].to_double(), out);
  else pad_gather(self, pad, mode, out);
}

}  // namespace

void register_pad_ops(OpTable& t) { t.set(OpId::pad, pad_shape, pad_kernel); }

}  // namespace sinter
