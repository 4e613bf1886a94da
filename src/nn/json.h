// A small, strict JSON reader (RFC 8259: no comments, no trailing commas, no duplicate keys, valid UTF-8,
// bounded nesting) and a string quoter, enough for the header of a .safetensors file. Internal to src/nn.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sinter::nn {

struct Json {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  std::string text;                                   // a string's value, or a number's literal text
  std::vector<Json> items;                            // an array's elements
  std::vector<std::pair<std::string, Json>> members;  // an object's members, in file order

  // The member named key, or null when absent (or this is not an object).
  const Json* find(std::string_view key) const;
  // A number written as a plain non-negative integer that fits in uint64; nullopt otherwise.
  std::optional<uint64_t> as_uint() const;
};

// Parses one JSON value filling the whole text (surrounding whitespace allowed). Throws sinter::Error saying
// at which byte and what is wrong.
Json parse_json(std::string_view text, int max_depth = 64);

// `s` as a JSON string literal, quotes included.
std::string json_quote(std::string_view s);

}  // namespace sinter::nn
