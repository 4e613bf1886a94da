// The op table: schemas parse and print back, every row has a shape rule and a CPU kernel, errors name the op.
#include <functional>

#include "ops/dispatch.h"
#include "testing.h"

namespace sinter {
namespace {

TEST(OpTable, HasAtLeast120OpsAndEveryRowIsImplemented) {
  EXPECT_GE(all_ops().size(), 120u);
  std::vector<std::string> missing;
  for (const OpDef& d : all_ops()) {
    if (!d.shape) missing.push_back(d.schema.full_name() + " (shape)");
    if (!d.schema.is_view() && !d.kernels[0]) missing.push_back(d.schema.full_name() + " (cpu kernel)");
  }
  EXPECT_TRUE(missing.empty()) << ::testing::PrintToString(missing);
}

TEST(OpTable, SchemasRoundTripThroughTheirText) {
  for (const OpDef& d : all_ops()) {
    Schema again = parse_schema(d.schema.str());
    EXPECT_EQ(again.str(), d.schema.str());
  }
}

TEST(OpTable, SchemaParsesAliasingDefaultsAndKeywords) {
  Schema s = parse_schema(
      "batch_norm(Tensor input, Tensor? weight, Tensor(a!)? running_mean, bool training, float eps=1e-05, *, "
      "int[2] stride=1, str mode='none') -> Tensor");
  ASSERT_EQ(s.args.size(), 7u);
  EXPECT_TRUE(s.args[1].optional);
  EXPECT_TRUE(s.args[2].is_write);
  EXPECT_EQ(s.args[2].alias, 'a');
  EXPECT_DOUBLE_EQ(s.args[4].default_value.to_double(), 1e-5);
  EXPECT_TRUE(s.args[5].kwarg_only);
  EXPECT_EQ(s.args[5].default_value.to_int_list(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(s.args[6].default_value.str_value(), "none");
  EXPECT_FALSE(s.is_inplace());
  Schema v = parse_schema("split.Tensor(Tensor(a) self, SymInt split_size, int dim=0) -> Tensor(a)[]");
  EXPECT_TRUE(v.is_view());
  EXPECT_TRUE(v.returns_list());
  EXPECT_EQ(v.full_name(), "split.Tensor");
  Schema m = parse_schema("max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)");
  EXPECT_EQ(m.returns.size(), 2u);
  EXPECT_EQ(m.returns[1].name, "indices");
  // Schemas of custom ops are the user's: a malformed one is a user error (the table makes its own rows' internal).
  EXPECT_THROW(parse_schema("bad(Tensor self -> Tensor"), Error);
}

TEST(OpTable, FindByQualifiedName) {
  ASSERT_NE(find_op("add.Tensor"), nullptr);
  EXPECT_EQ(find_op("add.Tensor")->id, OpId::add_Tensor);
  ASSERT_NE(find_op("relu"), nullptr);
  EXPECT_EQ(find_op("no_such_op"), nullptr);
  EXPECT_EQ(op_name(OpId::sum_dim_IntList), "sum.dim_IntList");
}

TEST(Dispatch, ArgumentKindErrorsNameTheArgument) {
  Args args{zeros({2}), std::string("oops")};
  EXPECT_ERROR(dispatch(OpId::unsqueeze, args, Loc::current()), "unsqueeze", "argument 'dim' must be an int");
  EXPECT_ERROR(dispatch(OpId::view, {}, Loc::current()), "view", "missing argument 'self'");
}

TEST(Dispatch, ErrorsNameTheCallersLine) {
  try {
    zeros({2, 3}).select(0, 9);
    FAIL() << "no error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("op_table_test.cpp:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("self=float32[2, 3]"), std::string::npos) << msg;
  }
}

TEST(Dispatch, InPlaceOnMismatchedShapeIsAnError) {
  Tensor x = zeros({3});
  EXPECT_ERROR(x.add_(zeros({2, 3})), "add_", "[2, 3]");
}

// Ops on data-less (meta) inputs run their shape rules only: the same sizes, strides and dtypes as on real
// inputs, and meta outputs.
TEST(Dispatch, MetaInputsGiveTheSameShapesAsRealOnes) {
  auto meta_of = [](const Tensor& t) { return empty_from_meta(t.meta(), /*with_data=*/false); };
  Tensor a = testing::random({4, 1, 6}, kFloat32, 1), b = testing::random({5, 1}, kFloat32, 2);
  Tensor img = testing::random({2, 3, 9, 9}, kFloat32, 3), w = testing::random({4, 3, 3, 3}, kFloat32, 4);
  Tensor q = testing::random({2, 3, 5, 8}, kFloat32, 5), ids = from_vector<int64_t>({0, 2, 1}, {3});
  using Ops = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
  const std::vector<std::pair<const char*, Ops>> cases = {
      {"add", [](const std::vector<Tensor>& t) { return std::vector<Tensor>{t[0] + t[1]}; }},
      {"matmul", [](const std::vector<Tensor>& t) { return std::vector<Tensor>{matmul(t[0], t[0].transpose(1, 2))}; }},
      {"sum", [](const std::vector<Tensor>& t) { return std::vector<Tensor>{sum(t[0], {0, 2}, true)}; }},
      {"softmax", [](const std::vector<Tensor>& t) { return std::vector<Tensor>{softmax(t[0], -1, kFloat64)}; }},
      {"max", [](const std::vector<Tensor>& t) {
         auto [v, i] = max(t[0], 2);
         return std::vector<Tensor>{v, i};
       }},
      {"topk", [](const std::vector<Tensor>& t) {
         auto [v, i] = topk(t[0], 2);
         return std::vector<Tensor>{v, i};
       }},
      {"conv2d", [](const std::vector<Tensor>& t) { return std::vector<Tensor>{conv2d(t[2], t[3], {}, {2}, {1})}; }},
      {"layer_norm", [](const std::vector<Tensor>& t) { return std::vector<Tensor>{layer_norm(t[2], {9, 9})}; }},
      {"cat", [](const std::vector<Tensor>& t) { return std::vector<Tensor>{cat({t[0], t[0]}, 1)}; }},
      {"index_select", [](const std::vector<Tensor>& t) { return std::vector<Tensor>{index_select(t[2], 1, t[5])}; }},
      {"embedding", [](const std::vector<Tensor>& t) { return std::vector<Tensor>{embedding(t[1], t[5])}; }},
      {"sdpa", [](const std::vector<Tensor>& t) {
         return std::vector<Tensor>{scaled_dot_product_attention(t[4], t[4], t[4], {}, 0.0, true)};
       }},
      {"permute+contiguous",
       [](const std::vector<Tensor>& t) { return std::vector<Tensor>{t[2].permute({0, 2, 3, 1}).contiguous()}; }},
  };
  const std::vector<Tensor> real = {a, b, img, w, q, ids};
  std::vector<Tensor> metas;
  for (const Tensor& t : real) metas.push_back(meta_of(t));
  for (const auto& [name, fn] : cases) {
    SCOPED_TRACE(name);
    std::vector<Tensor> want = fn(real), got = fn(metas);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(got[i].is_meta());
      EXPECT_EQ(got[i].sizes().hints(), want[i].sizes().hints());
      EXPECT_EQ(got[i].strides().hints(), want[i].strides().hints());
      EXPECT_EQ(got[i].dtype(), want[i].dtype());
    }
  }
}

// Tensors on two devices in one op: an error naming both (a meta tensor can sit on a device this build has no
// kernels for).
TEST(Dispatch, OperandsOnTwoDevicesAreAnError) {
  Tensor cpu = zeros({2, 3});
  Tensor cuda = empty_from_meta(TensorMeta{{2, 3}, {3, 1}, 0, kFloat32, kCUDA}, /*with_data=*/false);
  EXPECT_ERROR(add(cpu, cuda), "add", "same device", "cpu", "cuda");
  EXPECT_ERROR(cat({cpu, cuda}), "cat", "same device");
  EXPECT_ERROR(where(zeros({2, 3}, {kBool}), cuda, cpu), "where", "device");
}

}  // namespace
}  // namespace sinter
