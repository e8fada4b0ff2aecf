// Segment layouts for the tests of the segmented patterns: how a case's segments lie over n
// items, drawn from a suite's own lengths, listed out of order with gaps between them, or
// with offset pairs that are no range among them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <utility>
#include <vector>

#include "support.hpp"

namespace ppat_test {

enum class layout {
  tiny,           // lengths 0 to 40
  mixed,          // every path, from empty segments to the longest
  edges,          // lengths on each path's edges
  one,            // one segment of all n items
  shuffled_gaps,  // mixed lengths, listed out of order, gaps between them
  not_ranges,     // mixed, with pairs that are no range of [0, n] among them
};
constexpr layout layouts[] = {layout::tiny, layout::mixed,         layout::edges,
                              layout::one,  layout::shuffled_gaps, layout::not_ranges};

inline const char* name(layout l) {
  switch (l) {
    case layout::tiny:
      return "tiny";
    case layout::mixed:
      return "mixed";
    case layout::edges:
      return "edges";
    case layout::one:
      return "one";
    case layout::shuffled_gaps:
      return "shuffled with gaps";
    case layout::not_ranges:
      return "with offsets that are no range";
  }
  return "?";
}

struct segments {
  std::vector<long long> begins, ends;
};

// Segments over n items with lengths from `next_length()` (cut at n). For not_ranges, every
// third pair is broken: end before begin, a negative begin, or (where `ends_past_n`) an end
// past n.
template <class NextLength>
segments lay_out(std::size_t n, layout l, NextLength next_length, bool ends_past_n) {
  auto& random = rng();
  segments s;
  if (l == layout::one) {
    s.begins = {0};
    s.ends = {(long long)n};
    return s;
  }
  std::size_t at = 0;
  while (at < n) {
    const std::size_t length = std::min(n - at, std::size_t(next_length()));
    s.begins.push_back((long long)at);
    s.ends.push_back((long long)(at + length));
    at += length + (l == layout::shuffled_gaps ? random() % 3 : 0);
  }
  if (l == layout::shuffled_gaps || l == layout::not_ranges) {
    std::vector<std::size_t> listed(s.begins.size());
    std::iota(listed.begin(), listed.end(), std::size_t{0});
    std::shuffle(listed.begin(), listed.end(), random);
    segments shuffled;
    for (std::size_t i : listed) {
      shuffled.begins.push_back(s.begins[i]);
      shuffled.ends.push_back(s.ends[i]);
    }
    s = shuffled;
  }
  if (l == layout::not_ranges) {
    for (std::size_t i = 0; i < s.begins.size(); i += 3) {
      switch (random() % (ends_past_n ? 3 : 2)) {
        case 0:
          std::swap(s.begins[i], s.ends[i]);  // begin > end (or equal)
          break;
        case 1:
          s.begins[i] = -1 - (long long)(random() % 5);
          break;
        default:
          s.ends[i] = (long long)n + 1 + (long long)(random() % 5);
          break;
      }
    }
  }
  return s;
}

}  // namespace ppat_test
