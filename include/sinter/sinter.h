// The umbrella header: everything a user of sinter includes.
#pragma once
#include "sinter/amp.h"
#include "sinter/autograd.h"
#include "sinter/compile.h"
#include "sinter/cuda.h"
#include "sinter/error.h"
#include "sinter/graph.h"
#include "sinter/indexing.h"
#include "sinter/library.h"
#include "sinter/nn.h"
#include "sinter/ops.h"
#include "sinter/optim.h"
#include "sinter/precision.h"
#include "sinter/symint.h"
#include "sinter/tensor.h"
#include "sinter/threads.h"
#include "sinter/types.h"

