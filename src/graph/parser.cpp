// Reads the printer's text back into a Graph. Line-oriented: a `graph(...)` header with the inputs, then one node
// per line, then `return (...)`. Arguments are read by their schema type, then the graph's own add_op checks and
// shapes them, so the parser holds no op knowledge. Symbols (s0, s1) become symbols of a fresh ShapeEnv.
#include <fmt/format.h>

#include <cctype>
#include <cstring>
#include <unordered_map>

#include "graph/graph_util.h"
#include "graph/line_cursor.h"
#include "symbolic/expr.h"
#include "symbolic/shape_env.h"

namespace sinter {
namespace {

using graph_detail::dtype_from_short_name;
using graph_detail::is_ident_start;

class GraphParser : private graph_detail::LineCursor {
 public:
  GraphParser(std::string_view text, const ParseOptions& options) : options_(options) {
    size_t start = 0;
    while (start <= text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();
      std::string_view line = text.substr(start, end - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      lines_.push_back(line);
      start = end + 1;
    }
    env_ = std::make_shared<sym::ShapeEnv>();
    graph_.set_shape_env(env_);
  }

  Graph parse() {
    bool header = false, returned = false;
    for (size_t i = 0; i < lines_.size(); ++i) {
      reset(lines_[i], static_cast<int>(i) + 1);
      skip_ws();
      if (at_end()) continue;  // blank or comment-only
      if (returned) fail("text after the return line");
      if (!header) {
        parse_header();
        header = true;
      } else if (eat_word("return")) {
        parse_return();
        returned = true;
      } else {
        parse_node();
      }
      skip_ws();
      if (!at_end()) fail("unexpected text");
    }
    if (!header) throw Error("graph text is empty (expected 'graph(...):')");
    if (env_->num_symbols() == 0) graph_.set_shape_env(nullptr);
    return std::move(graph_);
  }

 private:
  // ---- Lines ----
  void parse_header() {
    if (!eat_word("graph")) fail("expected 'graph(' to start the graph");
    expect('(');
    while (!peek(')')) {
      size_t col = (skip_ws(), pos_);
      std::string name = value_name();
      if (!name.empty() && !is_ident_start(name[0]))
        fail(fmt::format("input name '%{}' must start with a letter or '_'", name), col);
      expect(':');
      TensorMeta meta = type();
      define(name, graph_.add_input(name, meta), col);
      if (!peek(')')) expect(',');
    }
    expect(')');
    expect(':');
  }

  void parse_return() {
    expect('(');
    std::vector<Tensor> values;
    while (!peek(')')) {
      values.push_back(tensor_ref());
      if (!peek(')')) expect(',');
    }
    expect(')');
    graph_.set_outputs(std::move(values));
  }

  void parse_node() {
    std::vector<std::pair<std::string, size_t>> lhs;
    if (peek('%')) {
      do {
        size_t col = (skip_ws(), pos_);
        lhs.emplace_back(value_name(), col);
      } while (eat(','));
      expect('=');
    }
    size_t op_col = (skip_ws(), pos_);
    std::string op = ident();
    if (line_.substr(pos_).starts_with("::")) {  // a custom op: mylib::rms_gate
      pos_ += 2;
      op += "::" + ident();
    }
    if (op == "constant") return parse_constant(lhs, op_col);
    const OpDef* def = find_op(op);
    if (!def) fail(fmt::format("unknown op '{}'", op), op_col);
    Args args = arguments(*def);
    std::vector<Tensor> outs;
    try {
      outs = graph_.add_op(def->id, std::move(args), Loc());
    } catch (const Error& e) {
      fail(e.what(), op_col);
    }
    if (outs.size() != lhs.size())
      fail(fmt::format("{} returns {} value(s) here, but the line names {}", op, outs.size(), lhs.size()), op_col);
    for (size_t k = 0; k < outs.size(); ++k) define(lhs[k].first, outs[k], lhs[k].second);
    check_comment(outs);
  }

  void parse_constant(const std::vector<std::pair<std::string, size_t>>& lhs, size_t col) {
    if (lhs.size() != 1) fail("a constant defines exactly one value", col);
    expect('(');
    expect(')');
    skip_ws();
    if (!eat('#')) fail("a constant needs its type as a comment: '%w = constant()  # f32[3, 4]'");
    TensorMeta meta = type();
    const std::string& name = lhs[0].first;
    if (meta.sizes.any_symbolic() || meta.strides.any_symbolic() || meta.offset.is_symbolic())
      fail("a constant's sizes must be concrete", col);
    Tensor value;
    if (auto it = options_.constants.find(name); it != options_.constants.end()) {
      value = it->second;
      if (!value.defined() || value.dtype() != meta.dtype || value.sizes().hints() != meta.sizes.hints())
        fail(fmt::format("the tensor given for constant %{} does not match its type {}", name,
                         graph_detail::meta_str(meta)), col);
    } else {
      value = empty_from_meta(meta);
      std::memset(value.storage()->data(), 0, value.storage()->nbytes());
    }
    define(name, graph_.add_constant(value, is_ident_start(name[0]) ? name : "c"), lhs[0].second);
  }

  // An op's `# type, type` comment, when it has one, must agree with the shape rule.
  void check_comment(const std::vector<Tensor>& outs) {
    skip_ws();
    if (!eat('#')) return;
    skip_ws();
    size_t save = pos_;
    std::string word;
    while (pos_ < line_.size() && std::isalnum(static_cast<unsigned char>(line_[pos_]))) word += line_[pos_++];
    bool is_type = dtype_from_short_name(word) && peek('[');
    pos_ = save;
    if (!is_type) {  // a free comment
      pos_ = line_.size();
      return;
    }
    for (size_t k = 0; k < outs.size(); ++k) {
      if (k) expect(',');
      size_t col = (skip_ws(), pos_);
      TensorMeta meta = type();
      if (!graph_detail::same_meta(meta, outs[k].meta()))
        fail(fmt::format("the comment says {} but the shape rule gives {}", graph_detail::meta_str(meta),
                         graph_detail::meta_str(outs[k].meta())), col);
    }
  }

  // ---- Arguments, read by schema type ----
  Args arguments(const OpDef& def) {
    const std::vector<SchemaArg>& schema = def.schema.args;
    std::vector<std::optional<Value>> given(schema.size());
    size_t next = 0;
    bool keywords = false;
    expect('(');
    while (!peek(')')) {
      size_t col = pos_;
      size_t index = schema.size();
      size_t save = pos_;
      if (pos_ < line_.size() && is_ident_start(line_[pos_])) {  // `name=value`?
        std::string name = ident();
        if (peek('=')) {
          ++pos_;
          int i = def.schema.find_arg(name);
          if (i < 0) fail(fmt::format("{} has no argument '{}'", def.schema.full_name(), name), col);
          index = static_cast<size_t>(i);
          keywords = true;
        } else {
          pos_ = save;
        }
      }
      if (index == schema.size()) {
        if (keywords) fail("a positional argument after a keyword argument", col);
        if (next >= schema.size() || schema[next].kwarg_only)
          fail(fmt::format("too many positional arguments for {}", def.schema.str()), col);
        index = next++;
      }
      if (given[index]) fail(fmt::format("argument '{}' is given twice", schema[index].name), col);
      given[index] = value(schema[index]);
      if (!peek(')')) expect(',');
    }
    expect(')');
    Args args;
    for (size_t i = 0; i < schema.size(); ++i) {
      if (given[i]) args.push_back(std::move(*given[i]));
      else if (schema[i].has_default) args.push_back(schema[i].default_value);
      else fail(fmt::format("missing argument '{}' of {}", schema[i].name, def.schema.str()));
    }
    return args;
  }

  Value value(const SchemaArg& a) {
    size_t col = (skip_ws(), pos_);
    if (eat_word("None")) {
      if (!a.optional) fail(fmt::format("argument '{}' ({}) cannot be None", a.name, a.type_str), col);
      return Value();
    }
    switch (a.type) {
      case ArgType::kTensor: return Value(tensor_ref());
      case ArgType::kTensorList:
      case ArgType::kOptionalTensorList: {
        std::vector<Tensor> items;
        expect('[');
        while (!peek(']')) {
          items.push_back(eat_word("None") ? Tensor() : tensor_ref());
          if (!peek(']')) expect(',');
        }
        expect(']');
        return Value(std::move(items));
      }
      case ArgType::kScalar: {
        if (eat_word("True")) return Value(Scalar(true));
        if (eat_word("False")) return Value(Scalar(false));
        return Value(number());
      }
      case ArgType::kInt: return Value(int_expr());
      case ArgType::kIntList: {
        if (!peek('[')) return Value(int_expr());
        return Value(int_list('[', ']'));
      }
      case ArgType::kFloat: return Value(number().to_double());
      case ArgType::kFloatList: {
        std::vector<double> items;
        expect('[');
        while (!peek(']')) {
          items.push_back(number().to_double());
          if (!peek(']')) expect(',');
        }
        expect(']');
        return Value(std::move(items));
      }
      case ArgType::kBool:
        if (eat_word("True")) return Value(true);
        if (eat_word("False")) return Value(false);
        fail(fmt::format("argument '{}' expects True or False", a.name), col);
      case ArgType::kStr: return Value(string_literal());
      case ArgType::kScalarType: {
        std::string name = ident();
        if (auto t = dtype_from_short_name(name)) return Value(*t);
        try {
          return Value(parse_dtype(name));
        } catch (const Error& e) {
          fail(e.what(), col);
        }
      }
      case ArgType::kDevice: {
        std::string name = ident();
        if (eat(':')) name += fmt::format(":{}", digits());
        try {
          return Value(parse_device(name));
        } catch (const Error& e) {
          fail(e.what(), col);
        }
      }
      case ArgType::kMemoryFormat: {
        std::string name = ident();
        if (name == "contiguous_format") return Value(MemoryFormat::kContiguous);
        if (name == "channels_last") return Value(MemoryFormat::kChannelsLast);
        if (name == "preserve_format") return Value(MemoryFormat::kPreserve);
        fail(fmt::format("unknown memory format '{}' (expected contiguous_format, channels_last or preserve_format)",
                         name), col);
      }
    }
    fail("unsupported argument type", col);
  }

  Tensor tensor_ref() {
    size_t col = (skip_ws(), pos_);
    std::string name = value_name();
    auto it = values_.find(name);
    if (it == values_.end()) fail(fmt::format("%{} is not defined before this line", name), col);
    return it->second;
  }

  void define(const std::string& name, const Tensor& value, size_t col) {
    if (!values_.emplace(name, value).second) fail(fmt::format("%{} is defined twice", name), col);
  }

  // ---- Types: f32[s0, 768]{768, 1}+8@cuda:0 ----
  TensorMeta type() {
    size_t col = (skip_ws(), pos_);
    std::string word;
    while (pos_ < line_.size() && std::isalnum(static_cast<unsigned char>(line_[pos_]))) word += line_[pos_++];
    std::optional<DType> dtype = dtype_from_short_name(word);
    if (!dtype) fail(fmt::format("unknown dtype '{}' (expected f32, f64, f16, bf16, i64, i32, i8, u8 or b8)", word), col);
    TensorMeta meta;
    meta.dtype = *dtype;
    meta.sizes = int_list('[', ']');
    meta.strides = peek('{') ? int_list('{', '}') : graph_detail::dense_strides(meta.sizes);
    if (meta.strides.size() != meta.sizes.size()) fail("strides and sizes differ in rank", col);
    if (eat('+')) meta.offset = peek('(') ? (++pos_, paren_expr()) : int_expr();
    if (eat('@')) {
      size_t dcol = pos_;
      std::string name = ident();
      if (eat(':')) name += fmt::format(":{}", digits());
      try {
        meta.device = parse_device(name);
      } catch (const Error& e) {
        fail(e.what(), dcol);
      }
    }
    return meta;
  }

  SymIntList int_list(char open, char close) {
    SymIntList items;
    expect(open);
    while (!peek(close)) {
      items.push_back(int_expr());
      if (!peek(close)) expect(',');
    }
    expect(close);
    return items;
  }

  SymInt paren_expr() {  // after '(': up to the matching ')'
    SymInt v = int_expr();
    expect(')');
    return v;
  }

  // An integer or a size expression ("s0", "2*s0 + 1", "Min(s0, s1)"): the text up to a ',', ']', '}', ')',
  // '@' or '#' outside parentheses.
  SymInt int_expr() {
    size_t col = (skip_ws(), pos_);
    int depth = 0;
    while (pos_ < line_.size()) {
      char c = line_[pos_];
      if (c == '(') ++depth;
      else if (c == ')' && depth == 0) break;
      else if (c == ')') --depth;
      else if (depth == 0 && std::strchr(",]}@#", c)) break;
      ++pos_;
    }
    std::string_view text = line_.substr(col, pos_ - col);
    while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
    if (text.empty()) fail("expected an integer or a size expression", col);
    ExprPtr e;
    try {
      e = sym::parse_expr(text);
    } catch (const Error& err) {
      fail(err.what(), col);
    }
    if (e->is_const()) return SymInt(e->value());
    std::vector<int64_t> symbols = sym::free_symbols(e);
    for (int64_t id : symbols) make_symbols_up_to(id, col);
    return SymInt(e, sym::evaluate(*e, env_->hints()));
  }

  void make_symbols_up_to(int64_t id, size_t col) {
    if (id > 10000) fail(fmt::format("symbol s{} is out of range", id), col);
    while (env_->num_symbols() <= id) {
      int64_t k = env_->num_symbols();
      int64_t hint = k < static_cast<int64_t>(options_.symbol_hints.size()) ? options_.symbol_hints[k] : 64 + 8 * k;
      if (hint < 2) fail(fmt::format("the hint {} for symbol s{} must be at least 2", hint, k), col);
      env_->create_symbol(hint, 2, sym::kInf, fmt::format("s{}", k));
    }
  }

  const ParseOptions& options_;
  std::vector<std::string_view> lines_;
  Graph graph_;
  std::shared_ptr<sym::ShapeEnv> env_;
  std::unordered_map<std::string, Tensor> values_;
};

}  // namespace

Graph parse_graph(std::string_view text, const ParseOptions& options) { return GraphParser(text, options).parse(); }

}  // namespace sinter
