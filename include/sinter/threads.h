// The intra-op thread pool's size (src/tensor/thread_pool.cpp), part of the public API through sinter/sinter.h.
#pragma once

namespace sinter {

// 1 to 1024; 0 restores the default (SINTER_NUM_THREADS, else the number of cores). Another value throws
// sinter::Error.
void set_num_threads(int n);
int get_num_threads();

}  // namespace sinter
