// The view ops' shape rules (they need no kernels: the dispatcher makes the views).
#pragma once
#include "ops/op_table.h"

namespace sinter {
void register_view_ops(OpTable& t);
}
