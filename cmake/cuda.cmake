# The GPU build. CNNBENCH_WITH_CUDA=AUTO (the default) turns it on when CMake finds nvcc, the
# CUDA runtime, cuDNN and NCCL, and leaves the CPU build exactly as it is otherwise; ON makes a
# missing piece an error, OFF skips the search. Code for Hopper (sm_90) plus PTX for compute_75,
# which the driver compiles for any newer GPU.
include(CheckLanguage)
set(CNNBENCH_WITH_CUDA AUTO CACHE STRING "GPU build: AUTO (when CUDA, cuDNN and NCCL are found), ON or OFF")
set_property(CACHE CNNBENCH_WITH_CUDA PROPERTY STRINGS AUTO ON OFF)

set(CNNBENCH_CUDA_ENABLED OFF)
if(NOT CNNBENCH_WITH_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  set(missing "")
  if(NOT CMAKE_CUDA_COMPILER)
    list(APPEND missing "nvcc")
  else()
    get_filename_component(cuda_bin "${CMAKE_CUDA_COMPILER}" DIRECTORY)
    get_filename_component(cuda_root "${cuda_bin}" DIRECTORY)
    if(NOT CUDAToolkit_ROOT)
      set(CUDAToolkit_ROOT "${cuda_root}")
    endif()
    find_package(CUDAToolkit QUIET)
    if(NOT CUDAToolkit_FOUND)
      list(APPEND missing "the CUDA runtime")
    endif()
    set(hints ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib ${CUDAToolkit_LIBRARY_ROOT}/lib64 ${cuda_root}/lib
              ${cuda_root}/lib64)
    find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ${cuda_root}/include)
    find_library(CUDNN_LIBRARY cudnn HINTS ${hints})
    find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ${cuda_root}/include)
    find_library(NCCL_LIBRARY nccl HINTS ${hints})
    if(NOT CUDNN_INCLUDE_DIR OR NOT CUDNN_LIBRARY)
      list(APPEND missing "cuDNN")
    endif()
    if(NOT NCCL_INCLUDE_DIR OR NOT NCCL_LIBRARY)
      list(APPEND missing "NCCL")
    endif()
  endif()
  if(missing)
    if(CNNBENCH_WITH_CUDA STREQUAL "ON")
      message(FATAL_ERROR "CNNBENCH_WITH_CUDA=ON but not found: ${missing}")
    endif()
    message(STATUS "cnnbench: GPU build off (not found: ${missing})")
  else()
    set(CNNBENCH_CUDA_ENABLED ON)
  endif()
endif()

if(CNNBENCH_CUDA_ENABLED)
  if(NOT CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90-real 75-virtual)
  endif()
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  message(STATUS "cnnbench: GPU build on: CUDA ${CUDAToolkit_VERSION}, ${CUDNN_LIBRARY}, ${NCCL_LIBRARY}; "
                 "architectures ${CMAKE_CUDA_ARCHITECTURES}")
  add_library(cnnbench_cuda STATIC kernels/cuda/device.cc kernels/cuda/elementwise.cu kernels/cuda/tensor_kernels.cu kernels/cuda/lrn_kernels.cu
              kernels/cuda/loss_kernels.cu kernels/cuda/cuda_plan.cc kernels/cuda/memory.cc kernels/cuda/plan_state.cc kernels/cuda/conv.cc kernels/cuda/batch_norm.cc
              kernels/cuda/pool.cc kernels/cuda/elementwise_ops.cc kernels/cuda/linear_loss.cc kernels/cuda/sgd.cc
              kernels/cuda/matmul_peak.cc kernels/cuda/cudnn_graph.cc kernels/cuda/conv_bn.cc kernels/cuda/conv_bn_kernels.cu
              kernels/cuda/pool_kernels.cu kernels/cuda/conv_epilogues.cc kernels/cuda/plan_report.cc
              kernels/cuda/search_recall.cc)
  target_include_directories(cnnbench_cuda PUBLIC ${CUDNN_INCLUDE_DIR} ${NCCL_INCLUDE_DIR})
  # the CUDA runtime linked statically: the binary runs where only the driver and the cuDNN,
  # cuBLAS and NCCL libraries are installed
  target_link_libraries(cnnbench_cuda PUBLIC cnnbench_kernels CUDA::cudart_static CUDA::cublas ${CUDNN_LIBRARY}
                        ${NCCL_LIBRARY})
  target_compile_definitions(cnnbench_cuda PUBLIC CNNBENCH_WITH_CUDA=1)
  # backend.cc (in cnnbench_kernels) compiles the cuda plan: the two static libraries refer to
  # each other, which CMake links in a repeated group
  target_link_libraries(cnnbench_kernels PUBLIC cnnbench_cuda)
endif()
