// The umbrella header: everything a user of sinter includes.
#pragma once
#include "sinter/compile.h"
#include "sinter/error.h"
#include "sinter/graph.h"
#include "sinter/nn.h"
#include "sinter/ops.h"
#include "sinter/symint.h"
#include "sinter/tensor.h"
#include "sinter/types.h"

namespace sinter {
// The intra-op thread pool's size, 1 to 1024; 0 restores the default (SINTER_NUM_THREADS, else the number of
// cores). Another value throws sinter::Error.
void set_num_threads(int n);
int get_num_threads();
}  // namespace sinter
