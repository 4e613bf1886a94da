// A bounded-time fuzz test of the ONNX loader: real and handmade models, truncated, bit-flipped, and given huge
// lengths, must load or throw sinter::Error; never crash, never throw anything else, never allocate without bound.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "frontends/onnx/onnx_writer.h"
#include "sinter/onnx.h"

namespace sinter {
namespace {
namespace fs = std::filesystem;
using namespace onnx_writer;

std::vector<std::string> seeds() {
  std::vector<std::string> s;
  std::string g = node({"x", "w"}, {"c"}, "Conv", "conv", attr_int("group", 1)) + node({"c"}, {"y"}, "Relu") +
                  field_bytes(5, float_tensor("w", {2, 1, 1, 1}, {1.f, 2.f})) + value_info(11, "x", 1, {-1, 1, 4, 4}, {"n"}) +
                  value_info(12, "y", 1, {-1, 2, 4, 4}, {"n"});
  s.push_back(model(g, 13));
  const char* env = std::getenv("SINTER_ONNX_DATA");
  fs::path data = env ? fs::path(env) : fs::path(__FILE__).parent_path().parent_path().parent_path().parent_path() / ".cache" / "onnx-data";
  for (const char* rel : {"light/test_squeezenet/model.onnx", "node/test_if/model.onnx", "node/test_resize_downsample_scales_linear/model.onnx",
                          "node/test_reshape_extended_dims/model.onnx", "pytorch-converted/test_Conv2d/model.onnx"}) {
    std::ifstream in(data / rel, std::ios::binary);
    if (in) s.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return s;
}

TEST(OnnxFuzz, MutatedModelsLoadOrThrowError) {
  std::vector<std::string> base = seeds();
  std::mt19937_64 rng(12345);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  int runs = 0, loaded = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    std::string m = base[rng() % base.size()];
    switch (rng() % 4) {
      case 0: m.resize(rng() % (m.size() + 1)); break;  // truncation
      case 1:
        for (int k = 0, n = 1 + static_cast<int>(rng() % 8); k < n && !m.empty(); ++k) m[rng() % m.size()] ^= static_cast<char>(1 << (rng() % 8));
        break;
      case 2: {  // a huge length or varint somewhere
        size_t at = rng() % (m.size() + 1);
        m.insert(at, varint(rng() >> (rng() % 64)));
        break;
      }
      default: {  // splice a chunk of the file into another place
        if (m.size() < 4) break;
        size_t a = rng() % m.size(), len = rng() % std::min<size_t>(64, m.size() - a);
        m.insert(rng() % m.size(), m.substr(a, len));
      }
    }
    ++runs;
    try {
      onnx::Model model = onnx::load_from_bytes(m);
      ++loaded;
    } catch (const Error&) {
    } catch (const std::exception& e) {
      FAIL() << "mutation " << runs << " threw a non-sinter exception: " << e.what();
    }
  }
  std::cout << "fuzz: " << runs << " mutated models, " << loaded << " still loaded\n";
  EXPECT_GT(runs, 100);
}

}  // namespace
}  // namespace sinter
