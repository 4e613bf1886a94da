// The lexing half of the graph parser (see line_cursor.h).
#include "graph/line_cursor.h"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "sinter/error.h"

namespace sinter::graph_detail {

Scalar LineCursor::number() {
  size_t col = (skip_ws(), pos_);
  size_t start = pos_;
  if (pos_ < line_.size() && line_[pos_] == '-') ++pos_;
  bool is_float = false;
  if (line_.substr(pos_, 3) == "inf" || line_.substr(pos_, 3) == "nan") {
    pos_ += 3;
    is_float = true;
  } else {
    size_t digits_start = pos_;
    while (pos_ < line_.size() && std::isdigit(static_cast<unsigned char>(line_[pos_]))) ++pos_;
    if (pos_ < line_.size() && line_[pos_] == '.') {
      is_float = true;
      ++pos_;
      while (pos_ < line_.size() && std::isdigit(static_cast<unsigned char>(line_[pos_]))) ++pos_;
    }
    if (pos_ < line_.size() && (line_[pos_] == 'e' || line_[pos_] == 'E')) {
      is_float = true;
      ++pos_;
      if (pos_ < line_.size() && (line_[pos_] == '+' || line_[pos_] == '-')) ++pos_;
      while (pos_ < line_.size() && std::isdigit(static_cast<unsigned char>(line_[pos_]))) ++pos_;
    }
    if (pos_ == digits_start) fail("expected a number", col);
  }
  std::string text(line_.substr(start, pos_ - start));
  if (pos_ < line_.size() && is_ident_char(line_[pos_])) fail(fmt::format("malformed number '{}'", text), col);
  errno = 0;
  char* end = nullptr;
  if (is_float) return Scalar(std::strtod(text.c_str(), &end));
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno == ERANGE) fail(fmt::format("{} is out of the int64 range", text), col);
  return Scalar(static_cast<int64_t>(v));
}

std::string LineCursor::string_literal() {
  size_t col = (skip_ws(), pos_);
  if (pos_ >= line_.size() || (line_[pos_] != '\'' && line_[pos_] != '"')) fail("expected a quoted string", col);
  char quote = line_[pos_++];
  std::string out;
  while (pos_ < line_.size() && line_[pos_] != quote) {
    char c = line_[pos_++];
    if (c == '\\' && pos_ < line_.size()) {
      c = line_[pos_++];
      if (c == 'n') c = '\n';
    }
    out += c;
  }
  if (pos_ >= line_.size()) fail("unterminated string", col);
  ++pos_;
  return out;
}

std::string LineCursor::ident() {
  size_t col = (skip_ws(), pos_);
  if (pos_ >= line_.size() || !is_ident_start(line_[pos_])) fail("expected a name", col);
  while (pos_ < line_.size() && is_ident_char(line_[pos_])) ++pos_;
  return std::string(line_.substr(col, pos_ - col));
}

std::string LineCursor::value_name() {
  expect('%');
  size_t start = pos_;
  while (pos_ < line_.size() && is_ident_char(line_[pos_])) ++pos_;
  if (start == pos_) fail("expected a value name after '%'", start);
  return std::string(line_.substr(start, pos_ - start));
}

std::string LineCursor::digits() {
  size_t start = pos_;
  while (pos_ < line_.size() && std::isdigit(static_cast<unsigned char>(line_[pos_]))) ++pos_;
  if (start == pos_) fail("expected digits");
  return std::string(line_.substr(start, pos_ - start));
}

bool LineCursor::eat_word(std::string_view word) {
  skip_ws();
  if (line_.substr(pos_, word.size()) != word) return false;
  if (pos_ + word.size() < line_.size() && is_ident_char(line_[pos_ + word.size()])) return false;
  pos_ += word.size();
  return true;
}

void LineCursor::expect(char c) {
  if (!eat(c)) fail(fmt::format("expected '{}'", c));
}

void LineCursor::fail(const std::string& what, size_t col) const {
  throw Error(fmt::format("graph text, line {}, column {}: {}\n  {}\n  {}^", line_no_, col + 1, what, line_,
                          std::string(std::min(col, line_.size()), ' ')));
}

}  // namespace sinter::graph_detail
