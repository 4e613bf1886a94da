// The op table: schemas parse and print back, every row has a shape rule and a CPU kernel, errors name the op.
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
  EXPECT_THROW(parse_schema("bad(Tensor self -> Tensor"), InternalError);
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

}  // namespace
}  // namespace sinter
