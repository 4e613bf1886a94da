// Tests of the public API's composite functions (reshape, flatten, squeeze, movedim, contiguous, to, *_like,
// interpolate, ...) and of the operators: views versus copies, PyTorch's promotion of C++ numbers, and the
// errors that bad composite use raises.
#include <cmath>
#include <numeric>

#include "testing.h"

namespace sinter {
namespace {

// 0, 1, 2, ... laid out contiguously with the given sizes.
Tensor seq(const SymIntList& sizes, DType dtype = kFloat32) {
  std::vector<double> v(static_cast<size_t>(sym_product(sizes).hint()));
  std::iota(v.begin(), v.end(), 0.0);
  return from_vector<double>(v, sizes.empty() ? SymIntList{1} : sizes, dtype).view(sizes);
}

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }
std::vector<int64_t> sizes_of(const Tensor& t) { return t.sizes().hints(); }
std::vector<int64_t> strides_of(const Tensor& t) { return t.strides().hints(); }
bool shares_storage(const Tensor& a, const Tensor& b) { return a.storage().get() == b.storage().get(); }

// Element values of `x` (contiguous, of `sizes`) read in the order of `x.permute(dims)`.
std::vector<double> permuted(const std::vector<double>& x, const std::vector<int64_t>& sizes,
                             const std::vector<int64_t>& dims) {
  size_t n = sizes.size();
  std::vector<int64_t> strides(n, 1), out_sizes(n), idx(n, 0);
  for (size_t d = n - 1; d > 0; --d) strides[d - 1] = strides[d] * sizes[d];
  for (size_t d = 0; d < n; ++d) out_sizes[d] = sizes[dims[d]];
  std::vector<double> out;
  for (size_t k = 0; k < x.size(); ++k) {
    int64_t offset = 0;
    for (size_t d = 0; d < n; ++d) offset += idx[d] * strides[dims[d]];
    out.push_back(x[offset]);
    for (size_t d = n; d-- > 0;) {
      if (++idx[d] < out_sizes[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

using V = std::vector<double>;
using I = std::vector<int64_t>;

// ---- reshape ----

TEST(ApiReshape, ContiguousInputGivesAViewOfTheSameStorage) {
  Tensor x = seq({2, 3, 4});
  Tensor y = x.reshape({4, 6});
  EXPECT_EQ(sizes_of(y), (I{4, 6}));
  EXPECT_EQ(y.data_ptr(), x.data_ptr());
  EXPECT_TRUE(shares_storage(x, y));
  EXPECT_EQ(values(y), values(x));
}

TEST(ApiReshape, NonContiguousInputIsCopied) {
  Tensor x = seq({3, 4}).t();  // [4, 3], strides [1, 4]
  Tensor y = x.reshape({12});
  EXPECT_EQ(sizes_of(y), (I{12}));
  EXPECT_NE(y.data_ptr(), x.data_ptr());
  EXPECT_FALSE(shares_storage(x, y));
  EXPECT_TRUE(y.is_contiguous());
  EXPECT_EQ(values(y), permuted(values(seq({3, 4})), {3, 4}, {1, 0}));
}

TEST(ApiReshape, NonContiguousInputWhoseStridesAllowItIsAView) {
  // [3, 2, 4] with strides [4, 12, 1]: splitting the last dim needs no copy.
  Tensor x = seq({2, 3, 4}).permute({1, 0, 2});
  Tensor y = x.reshape({3, 2, 2, 2});
  EXPECT_TRUE(shares_storage(x, y));
  EXPECT_EQ(values(y), values(x));
  // Every second row: rows stay apart, columns merge only within a row.
  Tensor rows = seq({4, 6}).slice(0, 0, 4, 2);
  Tensor z = rows.reshape({2, 2, 3});
  EXPECT_TRUE(shares_storage(rows, z));
  EXPECT_EQ(values(z), values(rows));
  // Merging the two rows is not possible without a copy.
  Tensor w = rows.reshape({12});
  EXPECT_FALSE(shares_storage(rows, w));
  EXPECT_EQ(values(w), values(rows));
}

TEST(ApiReshape, InfersTheMinusOneDim) {
  Tensor x = seq({3, 4});
  EXPECT_EQ(sizes_of(x.reshape({-1, 2})), (I{6, 2}));
  EXPECT_EQ(sizes_of(x.reshape({2, -1, 3})), (I{2, 2, 3}));
  EXPECT_EQ(sizes_of(x.reshape({-1})), (I{12}));
  EXPECT_EQ(sizes_of(seq({}).reshape({-1})), (I{1}));
  EXPECT_EQ(sizes_of(seq({1, 1}).reshape({})), (I{}));
  EXPECT_EQ(sizes_of(zeros({0, 3}).reshape({-1, 3})), (I{0, 3}));
  EXPECT_EQ(sizes_of(zeros({0, 3}).reshape({3, 0, 5})), (I{3, 0, 5}));
}

TEST(ApiReshape, IncompatibleShapeNamesBothShapes) {
  Tensor x = seq({3, 4});
  EXPECT_ERROR(x.reshape({2, 5}), "reshape", "[2, 5]", "[3, 4]", "12 elements", "api_test.cpp");
  EXPECT_ERROR(x.reshape({-1, 5}), "[-1, 5]", "[3, 4]");
  EXPECT_ERROR(x.reshape({-1, -1}), "only one dimension can be inferred");
  EXPECT_ERROR(x.reshape({-2, -6}), "invalid shape dimension -2");
  EXPECT_ERROR(zeros({0, 3}).reshape({0, -1}), "ambiguous");
}

TEST(ApiReshape, ViewAsAndReshapeAsTakeTheOthersSizes) {
  Tensor x = seq({2, 6});
  Tensor like = zeros({3, 4});
  EXPECT_EQ(sizes_of(x.view_as(like)), (I{3, 4}));
  EXPECT_EQ(sizes_of(x.t().reshape_as(like)), (I{3, 4}));
  EXPECT_EQ(values(x.t().reshape_as(like)), permuted(values(x), {2, 6}, {1, 0}));
}

// ---- flatten, unflatten ----

TEST(ApiFlatten, MergesARangeOfDims) {
  Tensor x = seq({2, 3, 4});
  EXPECT_EQ(sizes_of(x.flatten()), (I{24}));
  EXPECT_EQ(sizes_of(x.flatten(1)), (I{2, 12}));
  EXPECT_EQ(sizes_of(x.flatten(0, 1)), (I{6, 4}));
  EXPECT_EQ(sizes_of(x.flatten(-2, -1)), (I{2, 12}));
  EXPECT_EQ(sizes_of(x.flatten(1, 1)), (I{2, 3, 4}));
  EXPECT_EQ(sizes_of(seq({}).flatten()), (I{1}));
  EXPECT_TRUE(shares_storage(x, x.flatten()));
  EXPECT_EQ(values(x.flatten()), values(x));
  Tensor xt = x.transpose(0, 2);  // [4, 3, 2]
  EXPECT_EQ(values(xt.flatten()), permuted(values(x), {2, 3, 4}, {2, 1, 0}));
}

TEST(ApiFlatten, BadDimsAreErrors) {
  Tensor x = seq({2, 3, 4});
  EXPECT_ERROR(x.flatten(2, 1), "flatten", "start_dim", "end_dim");
  EXPECT_ERROR(x.flatten(3), "flatten", "out of range");
}

TEST(ApiUnflatten, SplitsOneDimIntoAView) {
  Tensor x = seq({2, 12});
  Tensor y = x.unflatten(1, {3, 4});
  EXPECT_EQ(sizes_of(y), (I{2, 3, 4}));
  EXPECT_TRUE(shares_storage(x, y));
  EXPECT_EQ(values(y), values(x));
  EXPECT_EQ(sizes_of(x.unflatten(-1, {2, -1, 3})), (I{2, 2, 2, 3}));
  EXPECT_EQ(sizes_of(x.unflatten(0, {1, 2})), (I{1, 2, 12}));
}

TEST(ApiUnflatten, SizesMustMultiplyUpToTheDim) {
  Tensor x = seq({2, 12});
  EXPECT_ERROR(x.unflatten(1, {5, 3}), "unflatten", "[5, 3]", "12");
  EXPECT_ERROR(x.unflatten(1, {5, -1}), "unflatten", "[5, -1]");
  EXPECT_ERROR(x.unflatten(1, {}), "unflatten", "non-empty");
  EXPECT_ERROR(x.unflatten(2, {2, 6}), "unflatten", "out of range");
}

// ---- squeeze, movedim, t, narrow ----

TEST(ApiSqueeze, WithoutDimsRemovesEverySizeOneDim) {
  Tensor x = seq({1, 3, 1, 2});
  EXPECT_EQ(sizes_of(x.squeeze()), (I{3, 2}));
  EXPECT_TRUE(shares_storage(x, x.squeeze()));
  EXPECT_EQ(values(x.squeeze()), values(x));
  EXPECT_EQ(sizes_of(x.squeeze({0})), (I{3, 1, 2}));
  EXPECT_EQ(sizes_of(seq({2, 3}).squeeze()), (I{2, 3}));
  EXPECT_EQ(sizes_of(seq({1, 1}).squeeze()), (I{}));
  EXPECT_EQ(sizes_of(zeros({0, 1}).squeeze()), (I{0}));
}

TEST(ApiMovedim, MovesDimsAndKeepsTheOthersInOrder) {
  Tensor x = seq({2, 3, 4, 5});
  Tensor a = movedim(x, 0, -1);
  EXPECT_EQ(sizes_of(a), (I{3, 4, 5, 2}));
  EXPECT_EQ(values(a), permuted(values(x), {2, 3, 4, 5}, {1, 2, 3, 0}));
  // Source 0 goes to 2 and source 1 to 0; dims 2 and 3 fill the free places 1 and 3 in order.
  Tensor b = movedim(x, {0, 1}, {2, 0});
  EXPECT_EQ(sizes_of(b), (I{3, 4, 2, 5}));
  EXPECT_EQ(values(b), permuted(values(x), {2, 3, 4, 5}, {1, 2, 0, 3}));
  EXPECT_TRUE(shares_storage(x, b));
  EXPECT_EQ(sizes_of(movedim(x, {}, {})), (I{2, 3, 4, 5}));
}

TEST(ApiMovedim, BadDimsAreErrors) {
  Tensor x = seq({2, 3, 4});
  EXPECT_ERROR(movedim(x, {0, 1}, {2}), "movedim", "same number of dims");
  EXPECT_ERROR(movedim(x, {0, 0}, {1, 2}), "movedim", "repeated dim");
  EXPECT_ERROR(movedim(x, {0, 1}, {2, -1}), "movedim", "repeated dim");
  EXPECT_ERROR(movedim(x, 3, 0), "movedim", "out of range");
}

TEST(ApiTranspose, TOfAMatrixSwapsItsDims) {
  Tensor x = seq({2, 3});
  Tensor y = x.t();
  EXPECT_EQ(sizes_of(y), (I{3, 2}));
  EXPECT_EQ(strides_of(y), (I{1, 3}));
  EXPECT_TRUE(shares_storage(x, y));
  EXPECT_EQ(sizes_of(seq({5}).t()), (I{5}));
  EXPECT_EQ(sizes_of(seq({}).t()), (I{}));
  EXPECT_EQ(sizes_of(seq({2, 3, 4}).mT()), (I{2, 4, 3}));
}

TEST(ApiTranspose, TOfA3dTensorIsAnError) {
  EXPECT_ERROR(seq({2, 3, 4}).t(), "t() expects a tensor with <= 2 dimensions, but self is 3D",
               "api_test.cpp");
  EXPECT_ERROR(seq({4}).mT(), "mT", "1-D");
}

TEST(ApiNarrow, TakesARangeOfOneDim) {
  Tensor x = seq({5, 2});
  Tensor y = x.narrow(0, 1, 3);
  EXPECT_EQ(sizes_of(y), (I{3, 2}));
  EXPECT_TRUE(shares_storage(x, y));
  EXPECT_EQ(values(y), (V{2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(values(x.narrow(0, -2, 2)), (V{6, 7, 8, 9}));
  EXPECT_EQ(values(x.narrow(-1, 1, 1)), (V{1, 3, 5, 7, 9}));
  EXPECT_EQ(sizes_of(x.narrow(0, 5, 0)), (I{0, 2}));
  EXPECT_ERROR(x.narrow(0, 3, 3), "narrow", "exceeds dimension size");
  EXPECT_ERROR(x.narrow(0, -6, 1), "narrow", "out of range");
  EXPECT_ERROR(seq({}).narrow(0, 0, 1), "narrow", "0-dim");
}

// ---- contiguous, to ----

TEST(ApiContiguous, AlreadyContiguousReturnsTheSameTensor) {
  Tensor x = seq({3, 4});
  EXPECT_TRUE(x.contiguous().is_same(x));
  Tensor xt = x.t();
  Tensor c = xt.contiguous();
  EXPECT_FALSE(shares_storage(c, x));
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(values(c), values(xt));
}

TEST(ApiContiguous, ChannelsLast) {
  Tensor x = seq({2, 3, 4, 5});
  Tensor cl = x.contiguous(kChannelsLast);
  EXPECT_TRUE(cl.is_contiguous(kChannelsLast));
  EXPECT_EQ(strides_of(cl), (I{60, 1, 15, 3}));
  EXPECT_EQ(values(cl), values(x));
  EXPECT_TRUE(cl.contiguous(kChannelsLast).is_same(cl));
  EXPECT_EQ(strides_of(cl.contiguous()), (I{60, 20, 5, 1}));
  EXPECT_ERROR(x.contiguous(kPreserveFormat), "contiguous", "preserve");
  EXPECT_ERROR(seq({2, 3}).contiguous(kChannelsLast), "contiguous", "rank 4");
}

TEST(ApiTo, ReturnsSelfWhenNothingChanges) {
  Tensor x = seq({2, 3});
  EXPECT_TRUE(x.to(kFloat32).is_same(x));
  EXPECT_TRUE(x.to(kCPU).is_same(x));
  EXPECT_TRUE(x.to(kCPU, kFloat32).is_same(x));
  EXPECT_TRUE(x.to(TensorOptions{}).is_same(x));
  Tensor d = x.to(kFloat64);
  EXPECT_EQ(d.dtype(), kFloat64);
  EXPECT_EQ(values(d), values(x));
  Tensor i = x.to(kInt32);
  EXPECT_EQ(i.dtype(), kInt32);
  EXPECT_EQ(values(i), values(x));
}

TEST(ApiTo, MemoryFormatCopiesOnlyWhenTheLayoutDiffers) {
  Tensor x = seq({2, 3, 4, 5});
  Tensor cl = x.to(kChannelsLast);
  EXPECT_FALSE(cl.is_same(x));
  EXPECT_TRUE(cl.is_contiguous(kChannelsLast));
  EXPECT_TRUE(cl.to(kChannelsLast).is_same(cl));
  EXPECT_TRUE(x.to(kContiguousFormat).is_same(x));
  EXPECT_TRUE(cl.to(kContiguousFormat).is_contiguous());
}

// ---- operators ----

TEST(ApiOperators, CppNumbersAreWeakScalars) {
  Tensor i64 = from_vector<int64_t>({1, 2, 3});
  Tensor f = i64 + 1.5;
  EXPECT_EQ(f.dtype(), kFloat32);
  EXPECT_EQ(values(f), (V{2.5, 3.5, 4.5}));
  EXPECT_EQ((i64 + 2).dtype(), kInt64);
  EXPECT_EQ((from_vector<int32_t>({1, 2}) * 3).dtype(), kInt32);
  EXPECT_EQ((from_vector<int8_t>({1, 2}) + 300).dtype(), kInt8);
  Tensor bf = from_vector<float>({1, 2, 3}, {}, kBFloat16);
  Tensor b = bf * 2.5;
  EXPECT_EQ(b.dtype(), kBFloat16);
  EXPECT_EQ(values(b), (V{2.5, 5, 7.5}));
  EXPECT_EQ((2.5 * bf).dtype(), kBFloat16);
  EXPECT_EQ((from_vector<float>({1, 2}, {}, kFloat16) + 1).dtype(), kFloat16);
  EXPECT_EQ((from_vector<bool>({true, false}) + 1).dtype(), kInt64);
  EXPECT_EQ((from_vector<bool>({true, false}) + 1.5).dtype(), kFloat32);
}

TEST(ApiOperators, TensorOperandsPromote) {
  Tensor i64 = from_vector<int64_t>({1, 2, 4});
  Tensor f32 = from_vector<float>({0.5, 0.5, 0.5});
  EXPECT_EQ((i64 + f32).dtype(), kFloat32);
  EXPECT_EQ((f32 * from_vector<double>({1, 1, 1})).dtype(), kFloat64);
  // A 0-dim tensor decides the dtype only when its category is higher than every dimensioned operand's.
  EXPECT_EQ((i64 * scalar_tensor(2.0, kFloat64)).dtype(), kFloat64);
  EXPECT_EQ((f32 * scalar_tensor(2.0, kFloat64)).dtype(), kFloat32);
  EXPECT_EQ((from_vector<int32_t>({1}) * scalar_tensor(2, kInt64)).dtype(), kInt32);
  Tensor q = i64 / 2;  // true division
  EXPECT_EQ(q.dtype(), kFloat32);
  EXPECT_EQ(values(q), (V{0.5, 1, 2}));
}

TEST(ApiOperators, ScalarOnTheLeft) {
  Tensor x = from_vector<float>({1, 2, 4});
  EXPECT_EQ(values(1 - x), (V{0, -1, -3}));
  EXPECT_EQ(values(2 + x), (V{3, 4, 6}));
  EXPECT_EQ(values(3 * x), (V{3, 6, 12}));
  EXPECT_EQ(values(2 / x), (V{2, 1, 0.5}));
  Tensor r = 2 / from_vector<int64_t>({1, 2, 4});
  EXPECT_EQ(r.dtype(), kFloat32);
  EXPECT_EQ(values(r), (V{2, 1, 0.5}));
  EXPECT_EQ(values(-x), (V{-1, -2, -4}));
}

TEST(ApiOperators, ComparisonsAndBitwiseOps) {
  Tensor x = from_vector<int64_t>({1, 2, 3});
  Tensor y = from_vector<int64_t>({3, 2, 1});
  EXPECT_EQ((x < y).dtype(), kBool);
  EXPECT_EQ(values(x < y), (V{1, 0, 0}));
  EXPECT_EQ(values(x == y), (V{0, 1, 0}));
  EXPECT_EQ(values(x != 2), (V{1, 0, 1}));
  EXPECT_EQ(values(x >= 2), (V{0, 1, 1}));
  EXPECT_EQ(values(x > 2.5), (V{0, 0, 1}));
  EXPECT_EQ(values(x & y), (V{1, 2, 1}));
  EXPECT_EQ(values(x | y), (V{3, 2, 3}));
  EXPECT_EQ(values(x ^ y), (V{2, 0, 2}));
  EXPECT_EQ(values(~x), (V{-2, -3, -4}));
  Tensor m = from_vector<bool>({true, false});
  EXPECT_EQ(values(~m), (V{0, 1}));
}

TEST(ApiOperators, CompoundAssignmentWritesInPlace) {
  Tensor x = from_vector<float>({1, 2, 3});
  Tensor alias = x;
  void* data = x.data_ptr();
  uint64_t version = x.version();
  x += 1;
  x *= from_vector<float>({2, 2, 2});
  x -= 0.5;
  x /= 2;
  EXPECT_EQ(x.data_ptr(), data);
  EXPECT_TRUE(alias.is_same(x));
  EXPECT_GT(x.version(), version);
  EXPECT_EQ(values(alias), (V{1.75, 2.75, 3.75}));
  // Writing a float result into an integer tensor is refused, as in PyTorch.
  Tensor i = from_vector<int64_t>({1, 2});
  EXPECT_THROW(i += 1.5, Error);
}

TEST(ApiOperators, IndexingSelectsAlongTheFirstDim) {
  Tensor x = seq({3, 2});
  Tensor row = x[1];
  EXPECT_EQ(sizes_of(row), (I{2}));
  EXPECT_TRUE(shares_storage(x, row));
  EXPECT_EQ(values(row), (V{2, 3}));
  EXPECT_EQ(values(x[-1]), (V{4, 5}));
}

// ---- other composites ----

TEST(ApiBroadcast, BroadcastTensorsExpandsToTheCommonShape) {
  std::vector<Tensor> out = broadcast_tensors({seq({3, 1}), seq({4}), seq({})});
  ASSERT_EQ(out.size(), 3u);
  for (const Tensor& t : out) EXPECT_EQ(sizes_of(t), (I{3, 4}));
  EXPECT_EQ(strides_of(out[0]), (I{1, 0}));
  EXPECT_EQ(values(out[1]), (V{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_ERROR(broadcast_tensors({seq({3}), seq({4})}), "broadcast_tensors", "[3]", "[4]");
  Tensor e = seq({2, 1}).expand_as(zeros({2, 5}));
  EXPECT_EQ(sizes_of(e), (I{2, 5}));
}

TEST(ApiPointwise, ClampMinClampMaxAndRelu6) {
  Tensor x = from_vector<float>({-2, 0.5, 3, 7});
  EXPECT_EQ(values(clamp_min(x, 0)), (V{0, 0.5, 3, 7}));
  EXPECT_EQ(values(clamp_max(x, 1)), (V{-2, 0.5, 1, 1}));
  EXPECT_EQ(values(relu6(x)), (V{0, 0.5, 3, 6}));
}

TEST(ApiWhere, ConditionAloneGivesOneIndexTensorPerDim) {
  Tensor c = from_vector<bool>({true, false, false, true, true, false}, {2, 3});
  std::vector<Tensor> idx = where(c);
  ASSERT_EQ(idx.size(), 2u);
  EXPECT_EQ(idx[0].dtype(), kInt64);
  EXPECT_EQ(values(idx[0]), (V{0, 1, 1}));
  EXPECT_EQ(values(idx[1]), (V{0, 0, 1}));
}

TEST(ApiFactory, ArangeAndRandintDefaults) {
  Tensor a = arange(5);
  EXPECT_EQ(a.dtype(), kInt64);
  EXPECT_EQ(values(a), (V{0, 1, 2, 3, 4}));
  Tensor f = arange(2.5);
  EXPECT_EQ(f.dtype(), kFloat32);
  EXPECT_EQ(values(f), (V{0, 1, 2}));
  Tensor r = randint(10, {1000});
  EXPECT_EQ(r.dtype(), kInt64);
  for (double v : values(r)) {
    EXPECT_GE(v, 0);
    EXPECT_LT(v, 10);
  }
  EXPECT_EQ(full({2}, 3).dtype(), kInt64);
  EXPECT_EQ(full({2}, 3.0).dtype(), kFloat32);
  EXPECT_EQ(empty({2, 3, 4, 5}, {}, kChannelsLast).is_contiguous(kChannelsLast), true);
}

TEST(ApiFactory, LikeFactoriesFollowSelf) {
  Tensor x = seq({2, 3}, kInt32);
  Tensor z = zeros_like(x);
  EXPECT_EQ(z.dtype(), kInt32);
  EXPECT_EQ(sizes_of(z), (I{2, 3}));
  EXPECT_EQ(values(z), (V(6, 0)));
  EXPECT_EQ(ones_like(x, kFloat64).dtype(), kFloat64);
  EXPECT_EQ(values(full_like(x, 7)), (V(6, 7)));
  EXPECT_EQ(empty_like(x).dtype(), kInt32);
  // The layout of a dense input is kept (preserve_format), so pointwise results line up with it.
  Tensor xt = seq({3, 4}).t();
  EXPECT_EQ(strides_of(empty_like(xt)), strides_of(xt));
  EXPECT_EQ(strides_of(zeros_like(xt)), strides_of(xt));
  Tensor cl = seq({2, 3, 4, 5}).contiguous(kChannelsLast);
  EXPECT_TRUE(ones_like(cl).is_contiguous(kChannelsLast));
  EXPECT_EQ(values(ones_like(cl)), V(120, 1));
  // A non-dense input gets contiguous strides.
  Tensor every_other = seq({4, 6}).slice(1, 0, 6, 2);
  EXPECT_TRUE(zeros_like(every_other).is_contiguous());
  Tensor r = rand_like(xt);
  EXPECT_EQ(sizes_of(r), (I{4, 3}));
  for (double v : values(r)) {
    EXPECT_GE(v, 0);
    EXPECT_LT(v, 1);
  }
}

TEST(ApiInterpolate, OutputSizeComesFromSizeOrScaleFactor) {
  Tensor x = seq({1, 1, 2, 3});
  EXPECT_EQ(sizes_of(interpolate(x, std::nullopt, std::vector<double>{2.0})), (I{1, 1, 4, 6}));
  EXPECT_EQ(sizes_of(interpolate(x, std::nullopt, std::vector<double>{1.5, 0.5})), (I{1, 1, 3, 1}));
  EXPECT_EQ(sizes_of(interpolate(x, SymIntList{3, 5})), (I{1, 1, 3, 5}));
  EXPECT_EQ(sizes_of(interpolate(x, SymIntList{4}, std::nullopt, "bilinear", true)), (I{1, 1, 4, 4}));
  Tensor up = interpolate(x, std::nullopt, std::vector<double>{2.0});
  EXPECT_EQ(values(up), (V{0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 3, 3, 4, 4, 5, 5}));
}

TEST(ApiInterpolate, BadArgumentsAreErrors) {
  Tensor x = seq({1, 1, 2, 3});
  EXPECT_ERROR(interpolate(seq({1, 2, 3}), SymIntList{4}), "interpolate", "4-D", "[1, 2, 3]");
  EXPECT_ERROR(interpolate(x), "interpolate", "either size or scale_factor");
  EXPECT_ERROR(interpolate(x, SymIntList{4, 4}, std::vector<double>{2.0}), "interpolate", "only one of");
  EXPECT_ERROR(interpolate(x, SymIntList{4, 4}, std::nullopt, "nearest", false), "interpolate",
               "align_corners");
  EXPECT_ERROR(interpolate(x, SymIntList{4, 4}, std::nullopt, "bicubic"), "interpolate", "bicubic");
  EXPECT_ERROR(interpolate(x, SymIntList{4, 4, 4}), "interpolate", "size");
  EXPECT_ERROR(interpolate(x, std::nullopt, std::vector<double>{-1.0}), "interpolate", "scale_factor");
}

}  // namespace
}  // namespace sinter
