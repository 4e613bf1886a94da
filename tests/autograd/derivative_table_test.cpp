// The derivative table as a whole: every row has a gradient-check sample, and every row's saved names exist.
#include <set>

#include "autograd/gradcheck.h"

namespace sinter::testing {
namespace {

TEST(DerivativeTable, EveryRowHasAGradcheckSample) {
  std::set<OpId> sampled;
  for (auto* family : {&pointwise_samples, &reduction_samples, &shape_samples, &nn_samples})
    for (const GradSample& s : (*family)()) sampled.insert(s.op);
  for (const autograd::DerivativeRow& r : autograd::derivative_rows())
    EXPECT_TRUE(sampled.count(r.op)) << op_def(r.op).schema.full_name() << " has no gradient-check sample";
}

TEST(DerivativeTable, InPlaceOpsBorrowTheirFunctionalRow) {
  EXPECT_EQ(autograd::derivative_row(OpId::add__Tensor), autograd::derivative_row(OpId::add_Tensor));
  EXPECT_EQ(autograd::derivative_row(OpId::sin_), autograd::derivative_row(OpId::sin));
  EXPECT_NE(autograd::derivative_row(OpId::sin), nullptr);
}

}  // namespace
}  // namespace sinter::testing
