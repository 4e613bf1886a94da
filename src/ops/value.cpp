// Value's accessors. A kind mismatch here means the dispatcher let a bad argument through: our bug.
#include "sinter/value.h"

#include "support/check.h"

namespace sinter {

namespace {
template <class T>
const T& get(const Value::Storage& v, const char* want, const Value& self) {
  if (const T* p = std::get_if<T>(&v)) return *p;
  throw InternalError(fmt::format("Value holds {}, not {}", self.kind_name(), want));
}
}  // namespace

const Tensor& Value::tensor() const { return get<Tensor>(v_, "Tensor", *this); }
const std::vector<Tensor>& Value::tensor_list() const { return get<std::vector<Tensor>>(v_, "Tensor[]", *this); }

Scalar Value::scalar() const {
  if (auto* s = std::get_if<Scalar>(&v_)) return *s;
  if (auto* i = std::get_if<SymInt>(&v_)) return Scalar(static_cast<int64_t>(*i));
  if (auto* d = std::get_if<double>(&v_)) return Scalar(*d);
  if (auto* b = std::get_if<bool>(&v_)) return Scalar(*b);
  throw InternalError(fmt::format("Value holds {}, not Scalar", kind_name()));
}

const SymInt& Value::sym_int() const { return get<SymInt>(v_, "int", *this); }

int64_t Value::to_int() const {
  if (auto* i = std::get_if<SymInt>(&v_)) return static_cast<int64_t>(*i);
  if (auto* s = std::get_if<Scalar>(&v_)) return s->to_int();
  if (auto* b = std::get_if<bool>(&v_)) return *b;
  throw InternalError(fmt::format("Value holds {}, not int", kind_name()));
}

const SymIntList& Value::int_list() const { return get<SymIntList>(v_, "int[]", *this); }
std::vector<int64_t> Value::to_int_list() const { return int_list().guard_ints(); }

double Value::to_double() const {
  if (auto* d = std::get_if<double>(&v_)) return *d;
  if (auto* i = std::get_if<SymInt>(&v_)) return static_cast<double>(static_cast<int64_t>(*i));
  if (auto* s = std::get_if<Scalar>(&v_)) return s->to_double();
  if (auto* b = std::get_if<bool>(&v_)) return *b;
  throw InternalError(fmt::format("Value holds {}, not float", kind_name()));
}

bool Value::to_bool() const {
  if (auto* b = std::get_if<bool>(&v_)) return *b;
  if (auto* s = std::get_if<Scalar>(&v_)) return s->to_bool();
  if (auto* i = std::get_if<SymInt>(&v_)) return static_cast<int64_t>(*i) != 0;
  throw InternalError(fmt::format("Value holds {}, not bool", kind_name()));
}

const std::string& Value::str_value() const { return get<std::string>(v_, "str", *this); }
DType Value::dtype() const { return get<DType>(v_, "ScalarType", *this); }
Device Value::device() const { return get<Device>(v_, "Device", *this); }
MemoryFormat Value::memory_format() const { return get<MemoryFormat>(v_, "MemoryFormat", *this); }
const std::vector<double>& Value::double_list() const { return get<std::vector<double>>(v_, "float[]", *this); }

std::string Value::kind_name() const {
  static constexpr const char* kNames[] = {"None", "Tensor", "Tensor[]", "Scalar", "int", "int[]", "float",
                                           "bool", "str",    "ScalarType", "Device", "MemoryFormat", "float[]"};
  return kNames[v_.index()];
}

}  // namespace sinter
