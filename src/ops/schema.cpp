// Parser for PyTorch's schema notation, e.g.
//   "conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, ...) -> Tensor"
//   "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)"
//   "mylib::rms_gate(Tensor x, Tensor w, float eps=1e-6) -> Tensor"   (a custom op: a namespace, then the name)
// Custom ops' schemas are the user's, so a malformed schema is an Error naming the column (the op table turns one
// of its own rows' into an InternalError).
#include <cstdlib>

#include "ops/op_table.h"
#include "support/check.h"

namespace sinter {
namespace {

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  Schema parse() {
    Schema schema;
    std::string full = qualified_name();
    size_t dot = full.find('.');
    schema.name = full.substr(0, dot);
    if (dot != std::string::npos) schema.overload = full.substr(dot + 1);
    expect('(');
    bool kwarg_only = false;
    while (!peek(')')) {
      if (peek('*')) {
        ++pos_;
        kwarg_only = true;
      } else {
        SchemaArg arg = type();
        arg.name = ident();
        if (schema.find_arg(arg.name) >= 0) fail("argument '" + arg.name + "' appears twice");
        arg.kwarg_only = kwarg_only;
        if (peek('=')) {
          ++pos_;
          arg.has_default = true;
          arg.default_value = default_value(arg);
        }
        schema.args.push_back(std::move(arg));
      }
      if (!peek(')')) expect(',');
    }
    expect(')');
    expect('-');
    expect('>');
    if (peek('(')) {
      ++pos_;
      while (!peek(')')) {
        SchemaArg ret = type();
        skip_ws();
        if (pos_ < s_.size() && (is_alpha(s_[pos_]) || s_[pos_] == '_')) ret.name = ident();
        schema.returns.push_back(std::move(ret));
        if (!peek(')')) expect(',');
      }
      expect(')');
    } else {
      schema.returns.push_back(type());
    }
    skip_ws();
    if (pos_ != s_.size()) fail("trailing text");
    return schema;
  }

 private:
  SchemaArg type() {
    SchemaArg arg;
    size_t start = (skip_ws(), pos_);
    std::string base = ident();
    bool list = false, optional_elements = false;
    for (;;) {
      if (peek('(')) {
        ++pos_;
        if (pos_ >= s_.size() || !is_alpha(s_[pos_])) fail("expected an alias letter");
        arg.alias = s_[pos_++];
        if (peek('!')) {
          ++pos_;
          arg.is_write = true;
        }
        expect(')');
      } else if (peek('[')) {
        ++pos_;
        int n = 0;
        while (pos_ < s_.size() && is_digit(s_[pos_]) && n < 1000) n = n * 10 + (s_[pos_++] - '0');
        expect(']');
        list = true;
        arg.fixed_size = n;
        if (arg.optional) {  // `Tensor?[]`: the elements are optional, not the list
          arg.optional = false;
          optional_elements = true;
        }
      } else if (peek('?')) {
        ++pos_;
        arg.optional = true;
      } else {
        break;
      }
    }
    arg.type_str = std::string(s_.substr(start, pos_ - start));
    while (!arg.type_str.empty() && arg.type_str.back() == ' ') arg.type_str.pop_back();
    if (base == "Tensor") {
      arg.type = optional_elements ? ArgType::kOptionalTensorList : list ? ArgType::kTensorList : ArgType::kTensor;
    } else if (base == "int" || base == "SymInt") {
      arg.type = list ? ArgType::kIntList : ArgType::kInt;
    } else if (base == "float") {
      arg.type = list ? ArgType::kFloatList : ArgType::kFloat;
    } else if (base == "Scalar") {
      arg.type = ArgType::kScalar;
    } else if (base == "bool") {
      arg.type = ArgType::kBool;
    } else if (base == "str") {
      arg.type = ArgType::kStr;
    } else if (base == "ScalarType") {
      arg.type = ArgType::kScalarType;
    } else if (base == "Device") {
      arg.type = ArgType::kDevice;
    } else if (base == "MemoryFormat") {
      arg.type = ArgType::kMemoryFormat;
    } else {
      fail("unknown type " + base);
    }
    return arg;
  }

  Value default_value(const SchemaArg& arg) {
    skip_ws();
    if (s_.substr(pos_).starts_with("None")) {
      pos_ += 4;
      return Value();
    }
    if (s_.substr(pos_).starts_with("True")) {
      pos_ += 4;
      return Value(true);
    }
    if (s_.substr(pos_).starts_with("False")) {
      pos_ += 5;
      return Value(false);
    }
    if (peek('\'') || peek('"')) {
      char quote = s_[pos_++];
      size_t end = s_.find(quote, pos_);
      if (end == std::string_view::npos) fail("unterminated string");
      std::string text(s_.substr(pos_, end - pos_));
      pos_ = end + 1;
      return Value(std::move(text));
    }
    if (peek('[')) {
      ++pos_;
      std::vector<int64_t> items;
      while (!peek(']')) {
        items.push_back(static_cast<int64_t>(number().to_int()));
        if (!peek(']')) expect(',');
      }
      expect(']');
      return Value(SymIntList(items));
    }
    Scalar n = number();
    switch (arg.type) {
      case ArgType::kInt: return Value(n.to_int());
      case ArgType::kIntList:
        return Value(SymIntList(std::vector<int64_t>(std::max(arg.fixed_size, 1), n.to_int())));
      case ArgType::kFloat: return Value(n.to_double());
      case ArgType::kScalar: return Value(n);
      default: fail("bad default for " + arg.type_str);
    }
  }

  Scalar number() {
    skip_ws();
    size_t start = pos_;
    bool is_float = false;
    while (pos_ < s_.size() && (is_alnum(s_[pos_]) || s_[pos_] == '.' || s_[pos_] == '-' || s_[pos_] == '+')) {
      if (s_[pos_] == '.' || s_[pos_] == 'e') is_float = true;
      ++pos_;
    }
    std::string text(s_.substr(start, pos_ - start));
    if (text.empty()) fail("expected a number");
    char* end = nullptr;
    Scalar n = is_float ? Scalar(std::strtod(text.c_str(), &end))
                        : Scalar(static_cast<int64_t>(std::strtoll(text.c_str(), &end, 10)));
    if (end != text.c_str() + text.size()) fail("malformed number '" + text + "'");
    return n;
  }

  std::string ident() {
    skip_ws();
    size_t start = pos_;
    while (pos_ < s_.size() && (is_alnum(s_[pos_]) || s_[pos_] == '_')) ++pos_;
    if (start == pos_) fail("expected a name");
    return std::string(s_.substr(start, pos_ - start));
  }
  // `name`, `name.overload`, `ns::name`, `ns::name.overload`.
  std::string qualified_name() {
    std::string name = ident();
    if (s_.substr(pos_).starts_with("::")) {
      pos_ += 2;
      if (pos_ >= s_.size() || s_[pos_] == ' ') fail("expected a name after '::'");
      name += "::" + ident();
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (pos_ >= s_.size() || s_[pos_] == ' ') fail("expected an overload name after '.'");
      name += "." + ident();
    }
    return name;
  }
  static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
  static bool is_digit(char c) { return c >= '0' && c <= '9'; }
  static bool is_alnum(char c) { return is_alpha(c) || is_digit(c); }
  void skip_ws() {
    while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
  }
  bool peek(char c) {
    skip_ws();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  void expect(char c) {
    if (!peek(c)) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  [[noreturn]] void fail(const std::string& what) {
    throw Error(fmt::format("bad op schema '{}' at column {}: {}", s_, pos_, what));
  }

  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

Schema parse_schema(std::string_view text) { return Parser(text).parse(); }

namespace {
// A default value as schema text (None, True, 'none', [0, 1], 1e-05).
std::string default_text(const Value& v) {
  if (v.is_none()) return "None";
  if (v.is_bool()) return v.to_bool() ? "True" : "False";
  if (v.is_string()) return "'" + v.str_value() + "'";
  if (v.is_int()) return v.sym_int().str();
  if (v.is_scalar()) return v.scalar().str();
  if (v.is_double()) return Scalar(v.to_double()).str();
  if (v.is_int_list()) return v.int_list().str();
  return "?";
}
}  // namespace

bool Schema::is_view() const {
  for (const SchemaArg& r : returns)
    if (r.alias && !r.is_write) return true;
  return false;
}

bool Schema::is_inplace() const { return !returns.empty() && returns[0].is_write; }

bool Schema::returns_list() const { return returns.size() == 1 && returns[0].type == ArgType::kTensorList; }

int Schema::find_arg(std::string_view arg_name) const {
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].name == arg_name) return static_cast<int>(i);
  return -1;
}

std::string Schema::str() const {
  std::string out = full_name() + "(";
  bool star = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (i) out += ", ";
    if (args[i].kwarg_only && !star) {
      out += "*, ";
      star = true;
    }
    out += args[i].type_str + " " + args[i].name;
    if (args[i].has_default) out += "=" + default_text(args[i].default_value);
  }
  out += ") -> ";
  if (returns.size() == 1 && returns[0].name.empty()) return out + returns[0].type_str;
  out += "(";
  for (size_t i = 0; i < returns.size(); ++i) out += (i ? ", " : "") + returns[i].type_str + " " + returns[i].name;
  return out + ")";
}

}  // namespace sinter
