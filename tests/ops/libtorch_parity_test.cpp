// LibTorch spellings a ported program reaches for (issue: API parity): an untyped item() returning a Scalar,
// sizes().vec(), and sizes and dtypes printed to a stream.
#include <gtest/gtest.h>

#include <sstream>

#include "sinter/sinter.h"
#include "testing.h"

namespace sinter {
namespace {

TEST(LibTorchParity, UntypedItemReturnsAScalarOfTheTensorsKind) {
  Scalar f = full({}, 2.5).item();
  EXPECT_TRUE(f.is_floating());
  EXPECT_EQ(f.to_double(), 2.5);
  Scalar i = arange(4).sum().item();
  EXPECT_FALSE(i.is_floating());
  EXPECT_EQ(i.to_int(), 6);
  Scalar b = (arange(3) > 1).any().item();
  EXPECT_TRUE(b.is_bool());
  EXPECT_TRUE(b.to_bool());
  EXPECT_ERROR(arange(3).item(), "cannot be converted to a scalar");
}

TEST(LibTorchParity, SizesVecAndPrinting) {
  Tensor x = zeros({2, 3, 4});
  std::vector<int64_t> v = x.sizes().vec();
  EXPECT_EQ(v, (std::vector<int64_t>{2, 3, 4}));
  std::ostringstream os;
  os << x.sizes() << " " << x.strides() << " " << x.dtype();
  EXPECT_EQ(os.str(), "[2, 3, 4] [12, 4, 1] float32");
}

}  // namespace
}  // namespace sinter
