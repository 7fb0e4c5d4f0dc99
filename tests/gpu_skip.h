// tests/gpu_skip.h — GPU tests skip, with the runtime's reason, where no CUDA device is visible.
#pragma once

#include <gtest/gtest.h>

#include "kernels/cuda/device.h"

#define SKIP_WITHOUT_GPU()                                                                                \
  do {                                                                                                   \
    if (::cnnbench::cuda::visible_devices() == 0)                                                        \
      GTEST_SKIP() << "no CUDA device visible (" << ::cnnbench::cuda::build_info().no_device_reason << ")"; \
  } while (0)
