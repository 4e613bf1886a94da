// Builds the op table once: one OpDef per row of op_list.h with its parsed schema, then each family attaches its
// shape rules and kernels.
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
#define SINTER_OP_DEF(id_, flags_, schema_) \
  defs.push_back(OpDef{.id = OpId::id_, .flags = (flags_), .schema_text = (schema_), .schema = parse_schema(schema_)});
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

}  // namespace

void OpTable::set(OpId op, ShapeFn shape, KernelFn cpu_kernel) {
  OpDef& d = defs_.at(static_cast<size_t>(op));
  d.shape = shape;
  d.kernels[static_cast<int>(DeviceType::kCPU)] = cpu_kernel;
}

void OpTable::set_kernel(OpId op, Device device, KernelFn kernel) {
  defs_.at(static_cast<size_t>(op)).kernels[static_cast<int>(device.type)] = kernel;
}

const OpDef& op_def(OpId op) { return table().defs[static_cast<size_t>(op)]; }

std::string_view op_name(OpId op) {
  static const std::vector<std::string>* names = [] {
    auto* v = new std::vector<std::string>();
    for (const OpDef& d : table().defs) v->push_back(d.schema.full_name());
    return v;
  }();
  return (*names)[static_cast<size_t>(op)];
}

const OpDef* find_op(std::string_view qualified_name) {
  const Table& t = table();
  auto it = t.by_name.find(std::string(qualified_name));
  return it == t.by_name.end() ? nullptr : &t.defs[static_cast<size_t>(it->second)];
}

const std::vector<OpDef>& all_ops() { return table().defs; }

}  // namespace sinter
