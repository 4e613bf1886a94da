// Builds the op table once: one OpDef per row of op_list.h with its parsed schema, then each family attaches its
// shape rules and kernels. Custom ops add rows after the built-ins at run time (add_custom_row).
#include <array>
#include <atomic>
#include <deque>
#include <mutex>
#include <unordered_map>

#include "ops/op_table.h"
#include "support/check.h"

namespace sinter {
namespace {

struct Table {
  std::vector<OpDef> defs;
  std::unordered_map<std::string, OpId> by_name;
};

const Table& table() {
  static const Table* t = [] {
    auto* tab = new Table();
    OpTable builder;
    std::vector<OpDef>& defs = builder.defs();
    auto parse = [](std::string_view text) {
      try {
        return parse_schema(text);
      } catch (const Error& e) {  // op_list.h is ours
        throw InternalError(e.what());
      }
    };
#define SINTER_OP_DEF(id_, flags_, schema_) \
  defs.push_back(OpDef{.id = OpId::id_, .flags = (flags_), .schema_text = (schema_), .schema = parse(schema_)});
    SINTER_OP_LIST(SINTER_OP_DEF)
#undef SINTER_OP_DEF
    register_core_ops(builder);
    register_pointwise_ops(builder);
    register_reduction_ops(builder);
    register_linalg_ops(builder);
    register_index_ops(builder);
    register_factory_ops(builder);
    tab->defs = std::move(defs);
    for (const OpDef& d : tab->defs) {
      bool inserted = tab->by_name.emplace(d.schema.full_name(), d.id).second;
      SINTER_INTERNAL_ASSERT(inserted, "op {} appears twice in op_list.h", d.schema.full_name());
    }
    return tab;
  }();
  return *t;
}

// The rows custom ops add. Appends and name lookups take the mutex; op_def reads a published row without it
// (rows never move or go away).
struct CustomRow {
  OpDef def;
  std::string name;         // the qualified name op_name returns
  std::string schema_text;  // what def.schema_text views
};

struct CustomRows {
  std::mutex mutex;
  std::deque<CustomRow> rows;
  std::unordered_map<std::string, OpId> by_name;
  std::array<std::atomic<const CustomRow*>, kMaxCustomOps> published{};
};

CustomRows& custom_rows() {
  static CustomRows* rows = new CustomRows();
  return *rows;
}

const CustomRow& custom_row(size_t index) {
  size_t k = index - kNumOps;
  const CustomRow* row = k < kMaxCustomOps ? custom_rows().published[k].load(std::memory_order_acquire) : nullptr;
  SINTER_INTERNAL_ASSERT(row, "op id {} is neither a built-in nor a registered custom op", index);
  return *row;
}

}  // namespace

void OpTable::set(OpId op, ShapeFn shape, KernelFn cpu_kernel) {
  OpDef& d = defs_.at(static_cast<size_t>(op));
  d.shape = shape;
  d.kernels[static_cast<int>(DeviceType::kCPU)] = cpu_kernel;
}

void OpTable::set_kernel(OpId op, Device device, KernelFn kernel) {
  defs_.at(static_cast<size_t>(op)).kernels[static_cast<int>(device.type)] = kernel;
}

const OpDef& op_def(OpId op) {
  const size_t i = static_cast<size_t>(op);
  if (i < static_cast<size_t>(kNumOps)) [[likely]]
    return table().defs[i];
  return custom_row(i).def;
}

std::string_view op_name(OpId op) {
  static const std::vector<std::string>* names = [] {
    auto* v = new std::vector<std::string>();
    for (const OpDef& d : table().defs) v->push_back(d.schema.full_name());
    return v;
  }();
  const size_t i = static_cast<size_t>(op);
  if (i < static_cast<size_t>(kNumOps)) [[likely]]
    return (*names)[i];
  return custom_row(i).name;
}

const OpDef* find_op(std::string_view qualified_name) {
  const Table& t = table();
  std::string key(qualified_name);
  if (auto it = t.by_name.find(key); it != t.by_name.end()) return &t.defs[static_cast<size_t>(it->second)];
  CustomRows& c = custom_rows();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto it = c.by_name.find(key);
  return it == c.by_name.end() ? nullptr : &c.rows[static_cast<size_t>(it->second) - kNumOps].def;
}

const std::vector<OpDef>& all_ops() { return table().defs; }

OpId add_custom_row(OpDef def, std::string schema_text) {
  std::string name = def.schema.full_name();
  SINTER_CHECK(!table().by_name.count(name), "{} is a built-in op; a custom op needs a name of its own", name);
  CustomRows& c = custom_rows();
  std::lock_guard<std::mutex> lock(c.mutex);
  SINTER_CHECK(!c.by_name.count(name), "the custom op {} is already defined (schema '{}')", name,
               c.rows[static_cast<size_t>(c.by_name.at(name)) - kNumOps].schema_text);
  SINTER_CHECK(c.rows.size() < static_cast<size_t>(kMaxCustomOps), "cannot define {}: the op table holds at most {} "
               "custom ops", name, kMaxCustomOps);
  const OpId id = static_cast<OpId>(kNumOps + c.rows.size());
  CustomRow& row = c.rows.emplace_back(CustomRow{std::move(def), name, std::move(schema_text)});
  row.def.id = id;
  row.def.schema_text = row.schema_text;
  c.by_name.emplace(name, id);
  c.published[c.rows.size() - 1].store(&row, std::memory_order_release);
  return id;
}

}  // namespace sinter
