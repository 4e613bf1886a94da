// The strict JSON reader of json.h: recursive descent over a string_view, checking every byte it reads
// against the end, with a nesting limit so a hostile header cannot exhaust the stack.
#include "nn/json.h"

#include <fmt/format.h>

#include <set>

#include "sinter/error.h"

namespace sinter::nn {

const Json* Json::find(std::string_view key) const {
  for (const auto& [k, v] : members)
    if (k == key) return &v;
  return nullptr;
}

std::optional<uint64_t> Json::as_uint() const {
  if (kind != Kind::kNumber || text.empty()) return std::nullopt;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;  // sign, fraction or exponent
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, static_cast<uint64_t>(c - '0'), &v))
      return std::nullopt;
  }
  return v;
}

namespace {

class Parser {
 public:
  Parser(std::string_view text, int max_depth) : s_(text), max_depth_(max_depth) {}

  Json parse_document() {
    skip_ws();
    Json v = parse_value(0);
    skip_ws();
    if (pos_ != s_.size()) fail("unexpected characters after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(fmt::format("invalid JSON at byte {}: {}", pos_, what));
  }
  bool at_end() const { return pos_ >= s_.size(); }
  char peek() const { return at_end() ? '\0' : s_[pos_]; }
  void expect(char c) {
    if (at_end() || s_[pos_] != c) fail(fmt::format("expected '{}'", c));
    ++pos_;
  }
  void skip_ws() {
    while (!at_end() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  void literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) fail("invalid literal");
    pos_ += word.size();
  }

  Json parse_value(int depth) {
    if (depth > max_depth_) fail(fmt::format("nesting deeper than {} levels", max_depth_));
    if (at_end()) fail("unexpected end of input");
    Json v;
    switch (peek()) {
      case '{':
        parse_object(v, depth);
        break;
      case '[':
        parse_array(v, depth);
        break;
      case '"':
        v.kind = Json::Kind::kString;
        v.text = parse_string();
        break;
      case 't':
        literal("true"), v.kind = Json::Kind::kBool, v.boolean = true;
        break;
      case 'f':
        literal("false"), v.kind = Json::Kind::kBool;
        break;
      case 'n':
        literal("null");
        break;
      default:
        if (peek() == '-' || (peek() >= '0' && peek() <= '9')) {
          v.kind = Json::Kind::kNumber;
          v.text = parse_number();
        } else {
          fail(fmt::format("unexpected character 0x{:02x}", static_cast<unsigned char>(peek())));
        }
    }
    return v;
  }

  void parse_object(Json& v, int depth) {
    v.kind = Json::Kind::kObject;
    expect('{');
    skip_ws();
    if (peek() == '}') {
      ++pos_;
      return;
    }
    std::set<std::string> keys;
    while (true) {
      skip_ws();
      if (peek() != '"') fail("expected a string key");
      std::string key = parse_string();
      if (!keys.insert(key).second) fail(fmt::format("duplicate key \"{}\"", key));
      skip_ws();
      expect(':');
      skip_ws();
      v.members.emplace_back(std::move(key), parse_value(depth + 1));
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect('}');
      return;
    }
  }

  void parse_array(Json& v, int depth) {
    v.kind = Json::Kind::kArray;
    expect('[');
    skip_ws();
    if (peek() == ']') {
      ++pos_;
      return;
    }
    while (true) {
      skip_ws();
      v.items.push_back(parse_value(depth + 1));
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect(']');
      return;
    }
  }

  std::string parse_number() {
    size_t start = pos_;
    auto digits = [&] {
      size_t d = pos_;
      while (!at_end() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      if (pos_ == d) fail("expected a digit");
    };
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else {
      digits();
    }
    if (peek() == '.') {
      ++pos_;
      digits();
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      digits();
    }
    return std::string(s_.substr(start, pos_ - start));
  }

  unsigned hex4() {
    if (s_.size() - pos_ < 4) fail("truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = s_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= c - '0';
      else if (c >= 'a' && c <= 'f')
        v |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        v |= c - 'A' + 10;
      else
        fail("invalid hex digit in \\u escape");
    }
    return v;
  }

  static void put_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  // One raw UTF-8 sequence starting at pos_, validated (no overlong forms, surrogates or values past
  // U+10FFFF).
  void copy_utf8(std::string& out) {
    unsigned char c = static_cast<unsigned char>(s_[pos_]);
    int len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 0;
    if (len == 0 || c > 0xF4) fail("invalid UTF-8");
    if (s_.size() - pos_ < static_cast<size_t>(len)) fail("truncated UTF-8 sequence");
    unsigned cp = c & (0x7F >> len);
    for (int i = 1; i < len; ++i) {
      unsigned char cc = static_cast<unsigned char>(s_[pos_ + i]);
      if ((cc & 0xC0) != 0x80) fail("invalid UTF-8");
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
      fail("invalid UTF-8");
    out.append(s_.substr(pos_, len));
    pos_ += len;
  }

  std::string parse_string() {
    expect('"');
    std::string out;
    while (true) {
      if (at_end()) fail("unterminated string");
      unsigned char c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c < 0x20) fail("control character in string");
      if (c >= 0x80) {
        copy_utf8(out);
        continue;
      }
      ++pos_;
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (at_end()) fail("unterminated escape");
      char e = s_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xDC00 && cp <= 0xDFFF) fail("unpaired low surrogate in \\u escape");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (s_.substr(pos_, 2) != "\\u") fail("unpaired high surrogate in \\u escape");
            pos_ += 2;
            unsigned lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) fail("invalid low surrogate in \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          put_utf8(out, cp);
          break;
        }
        default:
          fail(fmt::format("invalid escape '\\{}'", e));
      }
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
  int max_depth_;
};

}  // namespace

Json parse_json(std::string_view text, int max_depth) { return Parser(text, max_depth).parse_document(); }

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"')
      out += "\\\"";
    else if (c == '\\')
      out += "\\\\";
    else if (c < 0x20)
      out += fmt::format("\\u{:04x}", c);
    else
      out += ch;
  }
  return out + "\"";
}

}  // namespace sinter::nn
