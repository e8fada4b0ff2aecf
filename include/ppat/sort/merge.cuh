// Stable merge sorts of what a group of lanes holds, from a few lanes of a warp up to a whole
// block: the segmented sort's short segments (sort/segmented.cuh) and the one-block sort of
// small inputs (sort/merge_tile.cuh) both run it.
//
//   sort_own_items      each lane's items sorted in its registers (odd-even transposition)
//   merge_sort_lanes    runs of Items, 2 x Items, ... merged in pairs through shared memory,
//                       each lane finding where its outputs start on the merge path
//
// A merge compares the keys' images alone and takes the left run's key where two are equal,
// so the sort is stable without positions in its compares; the positions the items came from
// travel with them where the caller needs them (values, keys whose image does not give them
// back, a sort by some of the bits).
#pragma once

namespace ppat::detail {

// A barrier over the lanes of one merge, `span` lanes of a group of Lanes: a warp's own while
// the span fits in one (groups of up to 32 lanes run in step in every warp), else the block's.
template <int Lanes>
__device__ __forceinline__ void sync_merging_lanes(int span) {
  if (Lanes <= 32 || span <= 32) {
    __syncwarp();
  } else {
    __syncthreads();
  }
}

// A lane's Items images (with their positions) in ascending order, stably: odd-even
// transposition, Items rounds of compares between neighbours.
template <int Items, bool CarryPositions, class Image>
__device__ __forceinline__ void sort_own_items(Image (&images)[Items],
                                               unsigned short (&positions)[Items]) {
#pragma unroll
  for (int pass = 0; pass < Items; ++pass) {
#pragma unroll
    for (int i = pass % 2; i + 1 < Items; i += 2) {
      if (images[i + 1] < images[i]) {
        const Image image = images[i];
        images[i] = images[i + 1];
        images[i + 1] = image;
        if constexpr (CarryPositions) {
          const unsigned short position = positions[i];
          positions[i] = positions[i + 1];
          positions[i + 1] = position;
        }
      }
    }
  }
}

// Stable merge sort of a group's Lanes x Items keys by image alone, lane l holding items
// l * Items to l * Items + Items - 1 (`images`, with the `positions` they came from where
// CarryPositions): each lane sorts its own, then runs of Items, 2 x Items, ... are merged in
// pairs through shared memory (`merged_images`, `merged_positions`, item i at slot `slot(i)`),
// each lane finding where its Items outputs start on the merge path and taking them one at a
// time, the left run's first where keys are equal. Every lane of the group (all of the block's
// threads where Lanes is more than a warp) calls it; on return each holds its Items of the
// sorted order, and the shared arrays may be written again. A compare reads the keys' images
// alone, where a sorting network compares (image, position) words (docs/patterns.md,
// "Segmented sorts").
template <int Lanes, int Items, bool CarryPositions = true, class Image, class Slot>
__device__ __forceinline__ void merge_sort_lanes(Image (&images)[Items],
                                                 unsigned short (&positions)[Items],
                                                 Image* merged_images,
                                                 unsigned short* merged_positions, unsigned lane,
                                                 Slot slot) {
  sort_own_items<Items, CarryPositions>(images, positions);
#pragma unroll
  for (int run_lanes = 1; run_lanes < Lanes; run_lanes *= 2) {
    constexpr unsigned items = unsigned(Items);
    const unsigned run = unsigned(run_lanes) * items;  // keys a run
#pragma unroll
    for (int i = 0; i < Items; ++i) {
      merged_images[slot(lane * items + unsigned(i))] = images[i];
      if constexpr (CarryPositions)
        merged_positions[slot(lane * items + unsigned(i))] = positions[i];
    }
    sync_merging_lanes<Lanes>(2 * run_lanes);  // only the lanes of the two runs read them
    const unsigned left = (lane & ~unsigned(2 * run_lanes - 1)) * items;
    const auto a = [&](unsigned i) { return merged_images[slot(left + i)]; };
    const auto b = [&](unsigned i) { return merged_images[slot(left + run + i)]; };
    const unsigned diagonal = (lane & unsigned(2 * run_lanes - 1)) * items;
    // The merge path: the fewest keys of `a` among the first `diagonal` outputs.
    unsigned low = diagonal > run ? diagonal - run : 0;
    unsigned high = min(diagonal, run);
    while (low < high) {
      const unsigned middle = (low + high) / 2;
      if (b(diagonal - 1 - middle) < a(middle)) {
        high = middle;
      } else {
        low = middle + 1;
      }
    }
    unsigned from_a = low;
    unsigned from_b = diagonal - low;
    Image next_a = a(min(from_a, run - 1));
    Image next_b = b(min(from_b, run - 1));
#pragma unroll
    for (int i = 0; i < Items; ++i) {
      const bool take_a = from_a < run && (from_b >= run || !(next_b < next_a));
      images[i] = take_a ? next_a : next_b;
      if constexpr (CarryPositions)
        positions[i] = merged_positions[slot(left + (take_a ? from_a : run + from_b))];
      if (take_a) {
        next_a = a(min(++from_a, run - 1));
      } else {
        next_b = b(min(++from_b, run - 1));
      }
    }
    sync_merging_lanes<Lanes>(2 * run_lanes);  // every lane's reads before the next writes
  }
}

}  // namespace ppat::detail
