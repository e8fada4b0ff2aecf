// The textbook rungs of every pattern, measured beside the production kernels.
#pragma once

#include "textbook/histogram.cuh"
#include "textbook/reduce.cuh"
#include "textbook/scan.cuh"
#include "textbook/segmented_sort.cuh"
#include "textbook/select.cuh"
#include "textbook/sort.cuh"
#include "textbook/top_k.cuh"
#include "textbook/transpose.cuh"
