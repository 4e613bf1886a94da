// The lexing half of the graph parser: a cursor over one line of graph text, reading names, numbers, strings and
// punctuation, with errors that name the line and column and point at the spot.
#pragma once
#include <string>
#include <string_view>

#include "sinter/types.h"

namespace sinter::graph_detail {

inline bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
inline bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9') || c == '.'; }

class LineCursor {
 protected:
  void reset(std::string_view line, int line_no) {
    line_ = line;
    line_no_ = line_no;
    pos_ = 0;
  }

  // Literals: an int or float (1, -2, 1.5, 1e-05, inf, nan), a quoted string with \ escapes.
  Scalar number();
  std::string string_literal();
  // Names: an identifier (letters, digits, '_', '.'), a %value name, a run of digits.
  std::string ident();
  std::string value_name();
  std::string digits();
  // A whole word (not the prefix of a longer name).
  bool eat_word(std::string_view word);

  void skip_ws() {
    while (pos_ < line_.size() && (line_[pos_] == ' ' || line_[pos_] == '\t')) ++pos_;
  }
  bool at_end() const { return pos_ >= line_.size() || line_[pos_] == '#'; }
  bool peek(char c) {
    skip_ws();
    return pos_ < line_.size() && line_[pos_] == c;
  }
  bool eat(char c) {
    if (!peek(c)) return false;
    ++pos_;
    return true;
  }
  void expect(char c);
  [[noreturn]] void fail(const std::string& what) const { fail(what, pos_); }
  [[noreturn]] void fail(const std::string& what, size_t col) const;

  std::string_view line_;
  int line_no_ = 0;
  size_t pos_ = 0;
};

}  // namespace sinter::graph_detail
