// ppat: the classic parallel patterns for CUDA C++, header-only.
//
// Every call is asynchronous on its stream, validates its arguments before launching
// anything (std::invalid_argument), and reports CUDA failures as ppat::cuda_error.
// The textbook rungs are not included: <ppat/textbook.cuh> brings them.
#pragma once

#include "core/error.cuh"
#include "core/memory.cuh"
#include "core/operators.cuh"
#include "histogram.cuh"
#include "reduce.cuh"
#include "scan.cuh"
#include "segmented.cuh"
#include "segmented_reduce.cuh"
#include "select.cuh"
#include "sort.cuh"
#include "top_k.cuh"
#include "transpose.cuh"
