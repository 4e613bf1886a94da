// .safetensors: save + load round trips for every dtype, module loading, and corrupt or truncated files that
// must give a clear Error (naming the file) rather than a crash or an out-of-bounds read.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "sinter/nn.h"
#include "testing.h"

namespace sinter {
namespace {

using testing::random;

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "sinter_nn_" + std::to_string(::getpid()) + "_" + name + ".safetensors";
}

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>(v >> (8 * i));
  return s;
}

// A file with the given JSON header and `data_bytes` bytes of data.
std::string make_file(const std::string& header, size_t data_bytes) {
  return le64(header.size()) + header + std::string(data_bytes, '\0');
}

// Writes `bytes` and expects loading to throw an Error naming the file and containing `needle`.
void expect_corrupt(const std::string& bytes, const std::string& needle) {
  std::string path = temp_path("corrupt");
  write_bytes(path, bytes);
  EXPECT_ERROR(nn::load_safetensors(path), path, needle);
  EXPECT_ERROR(nn::map_safetensors(path), path, needle);
  std::remove(path.c_str());
}

TEST(NnSafetensors, RoundTripEveryDType) {
  nn::StateDict sd;
  for (DType dt : testing::kAllDTypes)
    sd.insert(std::string("t_") + std::string(dtype_name(dt)), random({3, 5}, dt, 40));
  sd.insert("scalar", scalar_tensor(2.5, kFloat64));
  sd.insert("empty", zeros({0, 4}, TensorOptions(kInt32)));
  sd.insert("strided", testing::non_contiguous(random({4, 6}, kFloat32, 41)));
  sd.insert("name with \"quotes\" and \\ and é", ones({2}, TensorOptions(kBFloat16)));
  std::string path = temp_path("round_trip");
  nn::save_safetensors(path, sd, {{"format", "pt"}, {"note", "line\nbreak"}});
  std::map<std::string, std::string> meta;
  std::map<std::string, Tensor> loaded = nn::load_safetensors(path, &meta);
  EXPECT_EQ(loaded.size(), sd.size());
  for (const auto& [name, t] : sd) {
    ASSERT_TRUE(loaded.count(name)) << name;
    const Tensor& l = loaded.at(name);
    EXPECT_EQ(l.dtype(), t.dtype()) << name;
    EXPECT_EQ(l.sizes().hints(), t.sizes().hints()) << name;
    EXPECT_TRUE(l.is_contiguous()) << name;
    EXPECT_TENSOR_EQ(l, t);
  }
  EXPECT_EQ(meta, (std::map<std::string, std::string>{{"format", "pt"}, {"note", "line\nbreak"}}));

  // The layout the reference writer produces, the header padded further so that the data starts 64-byte aligned.
  std::string bytes = read_bytes(path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  EXPECT_EQ((8 + n) % 64, 0u);
  EXPECT_EQ(bytes[8], '{');
  EXPECT_NE(bytes.find("\"dtype\":\"BF16\""), std::string::npos);
  EXPECT_NE(bytes.find("\"__metadata__\":{\"format\":\"pt\""), std::string::npos);
  std::remove(path.c_str());
}

// map_safetensors: the same tensors as views of the file's mapping; writes to them stay in this process; the
// mapping outlives the file's name.
TEST(NnSafetensors, MappedTensorsAreTheFileWithoutACopy) {
  nn::StateDict sd;
  for (DType dt : testing::kAllDTypes)
    sd.insert(std::string("t_") + std::string(dtype_name(dt)), random({7, 5}, dt, 42));
  sd.insert("empty", zeros({0, 3}));
  sd.insert("big", random({64, 64}, kFloat32, 43));
  std::string path = temp_path("mapped");
  nn::save_safetensors(path, sd);
  const std::string before = read_bytes(path);
  std::map<std::string, Tensor> mapped = nn::map_safetensors(path);
  ASSERT_EQ(mapped.size(), sd.size());
  for (const auto& [name, t] : sd) {
    SCOPED_TRACE(name);
    EXPECT_TENSOR_EQ(mapped.at(name), t);
  }
  EXPECT_EQ(reinterpret_cast<uintptr_t>(mapped.at("t_float64").data_ptr()) % 64, 0u) << "the data section's first";
  mapped.at("big").fill_(3.0);
  EXPECT_EQ(mapped.at("big").max().item<float>(), 3.0f);
  EXPECT_EQ(read_bytes(path), before) << "a write reached the file";
  Tensor kept = mapped.at("t_float32");
  mapped.clear();
  std::remove(path.c_str());
  EXPECT_TENSOR_EQ(kept, sd.at("t_float32"));
  EXPECT_ERROR(nn::map_safetensors(path), "cannot open it");
}

TEST(NnSafetensors, ReadsAHandWrittenFile) {
  // Two float32 values then one int64, as another writer would lay them out.
  std::string header = R"({"b":{"dtype":"I64","shape":[],"data_offsets":[8,16]},)"
                       R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  float fs[2] = {1.5f, -2.0f};
  int64_t i = -7;
  std::string data(reinterpret_cast<const char*>(fs), 8);
  data += std::string(reinterpret_cast<const char*>(&i), 8);
  std::string path = temp_path("hand");
  write_bytes(path, le64(header.size()) + header + data);
  auto m = nn::load_safetensors(path);
  EXPECT_EQ(m.at("a").to_vector<float>(), (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(m.at("b").dim(), 0);
  EXPECT_EQ(m.at("b").item<int64_t>(), -7);
  std::remove(path.c_str());
}

TEST(NnSafetensors, ModuleLoadsItsOwnFile) {
  struct Small : nn::Module {
    nn::Linear fc{4, 3};
    nn::BatchNorm2d bn{3};
    Small() {
      register_module("fc", fc);
      register_module("bn", bn);
    }
  } a, b;
  a.bn.running_var.fill_(3.0);
  a.bn.num_batches_tracked.fill_(5);
  std::string path = temp_path("module");
  nn::save_safetensors(path, a.state_dict());
  b.load_safetensors(path);
  for (const auto& [name, t] : a.state_dict()) EXPECT_TENSOR_EQ(b.state_dict().at(name), t);
  nn::Linear wrong(4, 4);
  EXPECT_ERROR(wrong.load_safetensors(path), "Unexpected key(s) in state_dict: \"bn.bias\"");
  std::remove(path.c_str());
}

TEST(NnSafetensors, SaveRejectsBadInput) {
  std::string path = temp_path("bad_save");
  EXPECT_ERROR(nn::save_safetensors(path, {{"x", Tensor()}}), "tensor \"x\" is undefined");
  EXPECT_ERROR(nn::save_safetensors(path, {{"__metadata__", zeros({1})}}), "reserved");
  EXPECT_ERROR(nn::save_safetensors("/nonexistent_dir/x.safetensors", {{"x", zeros({1})}}),
               "cannot open it for writing");
  std::remove(path.c_str());
}

TEST(NnSafetensors, CorruptFilesGiveErrors) {
  const std::string ok_entry = R"("w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]})";
  EXPECT_ERROR(nn::load_safetensors(temp_path("does_not_exist")), "cannot open it");
  expect_corrupt("", "truncated: 0 bytes");
  expect_corrupt("abc", "truncated: 3 bytes");
  expect_corrupt(le64(100) + "{}", "header length 100 exceeds the 2 bytes");
  expect_corrupt(le64(~0ull) + "{}", "exceeds");
  expect_corrupt(make_file("{\"w\":", 0), "invalid JSON");
  expect_corrupt(make_file("{" + ok_entry + ",}", 24), "expected a string key");
  expect_corrupt(make_file("{" + ok_entry + "," + ok_entry + "}", 24), "duplicate key \"w\"");
  expect_corrupt(make_file("{\"\xff\":1}", 0), "invalid UTF-8");
  expect_corrupt(make_file("{\"a\":\"\\ud800\"}", 0), "surrogate");
  expect_corrupt(make_file(std::string(10000, '[') + std::string(10000, ']'), 0), "nesting deeper than");
  expect_corrupt(make_file("[]", 0), "not a JSON object");
  expect_corrupt(make_file("{} x", 0), "unexpected characters after the JSON value");
  // Entries that do not fit their dtype, shape or the data section.
  expect_corrupt(make_file(R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})", 20),
                 "data_offsets [0, 20] span 20 bytes, but dtype F32 and shape [2, 3] need 24 bytes");
  expect_corrupt(make_file("{" + ok_entry + "}", 16), "lie outside the data section of 16 bytes");
  expect_corrupt(make_file(R"({"w":{"dtype":"F32","shape":[100],"data_offsets":[400,800]}})", 24), "outside");
  expect_corrupt(make_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8), "reversed");
  expect_corrupt(make_file(R"({"w":{"dtype":"I16","shape":[2],"data_offsets":[0,4]}})", 4),
                 "unsupported dtype \"I16\"");
  expect_corrupt(make_file(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4),
                 "non-negative integers");
  expect_corrupt(make_file(R"({"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4),
                 "non-negative integers");
  expect_corrupt(
      make_file(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,4]}})", 4),
      "overflows");
  expect_corrupt(make_file(R"({"w":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,4]}})", 4),
                 "too large");
  expect_corrupt(make_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,18446744073709551616]}})", 4),
                 "two non-negative integers");
  expect_corrupt(make_file(R"({"w":{"shape":[1],"data_offsets":[0,4]}})", 4), "\"dtype\" is missing");
  expect_corrupt(make_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4),
                 "\"data_offsets\" is missing");
  expect_corrupt(make_file(R"({"w":3})", 0), "not a JSON object");
  // The tensors must tile the data section.
  expect_corrupt(make_file(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                           R"("b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})",
                           24),
                 "tensors \"a\" and \"b\" overlap");
  expect_corrupt(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8),
                 "4 unused bytes before tensor \"a\"");
  expect_corrupt(make_file("{" + ok_entry + "}", 32),
                 "the data section has 32 bytes but its tensors cover 24");
  // Metadata must be strings; bools must be 0 or 1.
  expect_corrupt(make_file(R"({"__metadata__":{"k":1}})", 0), "metadata \"k\" is not a string");
  std::string bool_file =
      make_file(R"({"m":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})", 0) + std::string("\x01\x02", 2);
  expect_corrupt(bool_file, "BOOL element 1 holds byte value 2");
}

TEST(NnSafetensors, EveryTruncationOfAValidFileIsAnError) {
  std::string path = temp_path("valid");
  nn::save_safetensors(path, {{"a", random({3, 4})}, {"b", random({5}, kInt64)}, {"c", random({2}, kBool)}});
  std::string bytes = read_bytes(path);
  for (size_t len = 0; len < bytes.size(); ++len) {
    std::string cut = temp_path("cut");
    write_bytes(cut, bytes.substr(0, len));
    EXPECT_TRUE(testing::throws_error([&] { nn::load_safetensors(cut); }, {cut})) << "length " << len;
    EXPECT_TRUE(testing::throws_error([&] { nn::map_safetensors(cut); }, {cut})) << "length " << len;
    std::remove(cut.c_str());
  }
  // Flipping any single header byte either still loads or gives an Error, never anything else.
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  for (size_t pos = 0; pos < 8 + n; ++pos) {
    std::string flipped = bytes;
    flipped[pos] = static_cast<char>(flipped[pos] ^ 0x5a);
    std::string f = temp_path("flip");
    write_bytes(f, flipped);
    for (auto* load : {&nn::load_safetensors, &nn::map_safetensors}) {
      try {
        load(f, nullptr);
      } catch (const Error&) {
      }
    }
    std::remove(f.c_str());
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace sinter
