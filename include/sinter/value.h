// Value: one argument or result of an op, boxed, so that one dispatch point, the graph IR and the interpreter
// handle every op alike. The kinds follow PyTorch's schema types (int and SymInt are both SymInt here).
#pragma once
#include <string>
#include <variant>
#include <vector>

#include "sinter/tensor.h"

namespace sinter {

class Value {
 public:
  using Storage = std::variant<std::monostate, Tensor, std::vector<Tensor>, Scalar, SymInt, SymIntList, double, bool,
                               std::string, DType, Device, MemoryFormat, std::vector<double>>;
  Value() = default;
  Value(std::nullopt_t) {}
  Value(Tensor t) : v_(std::move(t)) {}
  Value(std::vector<Tensor> ts) : v_(std::move(ts)) {}
  Value(Scalar s) : v_(s) {}
  Value(SymInt i) : v_(std::move(i)) {}
  Value(int64_t i) : v_(SymInt(i)) {}
  Value(int i) : v_(SymInt(i)) {}
  Value(SymIntList l) : v_(std::move(l)) {}
  Value(const DimList& l) : v_(SymIntList(std::vector<int64_t>(l))) {}
  Value(double d) : v_(d) {}
  Value(bool b) : v_(b) {}
  Value(std::string s) : v_(std::move(s)) {}
  Value(const char* s) : v_(std::string(s)) {}
  Value(DType t) : v_(t) {}
  Value(Device d) : v_(d) {}
  Value(MemoryFormat f) : v_(f) {}
  Value(std::vector<double> l) : v_(std::move(l)) {}
  template <class T>
  Value(const std::optional<T>& o) {
    if (o) *this = Value(*o);
  }

  bool is_none() const { return std::holds_alternative<std::monostate>(v_); }
  bool is_tensor() const { return std::holds_alternative<Tensor>(v_); }
  bool is_tensor_list() const { return std::holds_alternative<std::vector<Tensor>>(v_); }
  bool is_scalar() const { return std::holds_alternative<Scalar>(v_); }
  bool is_int() const { return std::holds_alternative<SymInt>(v_); }
  bool is_int_list() const { return std::holds_alternative<SymIntList>(v_); }
  bool is_double() const { return std::holds_alternative<double>(v_); }
  bool is_bool() const { return std::holds_alternative<bool>(v_); }
  bool is_string() const { return std::holds_alternative<std::string>(v_); }
  bool is_dtype() const { return std::holds_alternative<DType>(v_); }
  bool is_device() const { return std::holds_alternative<Device>(v_); }
  bool is_memory_format() const { return std::holds_alternative<MemoryFormat>(v_); }
  bool is_double_list() const { return std::holds_alternative<std::vector<double>>(v_); }

  // Accessors throw InternalError on a kind mismatch (the schema check runs before any kernel does).
  const Tensor& tensor() const;
  const std::vector<Tensor>& tensor_list() const;
  // Scalars: a Scalar, or an int/double/bool stored plainly.
  Scalar scalar() const;
  const SymInt& sym_int() const;
  int64_t to_int() const;  // specialises a symbolic int
  const SymIntList& int_list() const;
  std::vector<int64_t> to_int_list() const;
  double to_double() const;  // a double, or an int/Scalar widened
  bool to_bool() const;
  const std::string& str_value() const;
  DType dtype() const;
  Device device() const;
  MemoryFormat memory_format() const;
  const std::vector<double>& double_list() const;
  const Storage& storage() const { return v_; }
  std::string kind_name() const;

 private:
  Storage v_;
};

using Args = std::vector<Value>;

}  // namespace sinter
