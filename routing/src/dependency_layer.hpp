// Internal to routing/: one virtual layer's channel dependency graph, kept acyclic as
// dependencies are added (layering.cpp spreads fixed routes over such layers).
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_set>
#include <vector>

#include "weft/types.hpp"

namespace weft::routing::detail {

// One layer's channel dependency graph, kept acyclic under edge insertions with a
// topological order maintained incrementally. An edge a -> b that agrees with the order
// costs nothing. One that does not searches forward from b among the channels ordered
// before a: reaching a means a cycle (refused); otherwise the channels found (F) move,
// in their order, to just after a. That keeps the order topological: an edge into a
// channel of F comes from F or from one ordered before it, so before a; an edge out of
// F leads into F or past a (a channel before a that b reaches is in F). Pearce and
// Kelly also search backward from a, to swap F with what reaches a in place; on the
// radix-56 tree that second search was the larger, and its bound refused edges the
// forward search had already cleared. The order is a linked list under 64-bit labels
// with gaps; a crowded gap is relabelled over a window that widens until its labels
// spread far apart (order maintenance, after Dietz and Sleator).
class DependencyLayer {
 public:
  // `order`: each channel's position in an initial order, as near to topological for the
  // edges to come as can be. `port`: each channel's port number, so that "a leads to b"
  // is one bit of a's mask.
  DependencyLayer(const std::vector<uint32_t>& order, const std::vector<PortNum>& port)
      : out_(order.size()),
        at_(order.size() + 2),
        next_(order.size() + 2),
        prev_(order.size() + 2),
        port_(&port),
        words_(port.empty() ? 1 : *std::max_element(port.begin(), port.end()) / 64 + 1),
        bits_(order.size() * words_, 0) {
    const auto n = static_cast<uint32_t>(order.size());
    head_ = n, tail_ = n + 1;
    std::vector<uint32_t> by_pos(n);
    for (uint32_t c = 0; c < n; ++c) by_pos[order[c]] = c;
    uint32_t p = head_;
    for (uint32_t c : by_pos) next_[p] = c, prev_[c] = p, p = c;
    next_[p] = tail_, prev_[tail_] = p;
    at_[tail_].ord = ~uint64_t(0);  // the head's is 0
    spread(head_, tail_, n);
  }

  bool has(uint32_t a, uint32_t b) const {
    const PortNum q = (*port_)[b];
    return bits_[size_t(a) * words_ + (q >> 6)] >> (q & 63) & 1;
  }

  // Adds a -> b unless it closes a cycle. An edge that closed a cycle is remembered and
  // refused at once from then on: the layer only grows but for a failed try's own edges
  // taken out again (undo), so it nearly always would again, and refusing is always safe.
  bool add(uint32_t a, uint32_t b, size_t limit) {
    if (a == b) return false;
    if (has(a, b)) return true;
    const uint64_t key = uint64_t(a) << 32 | b;
    if (refused_.contains(key)) return false;
    if (at_[a].ord > at_[b].ord) {
      const uint64_t hi = at_[a].ord;
      ++stamp_;
      fwd_.clear();
      stack_.assign(1, b);
      at_[b].mark = stamp_;
      while (!stack_.empty()) {  // forward from b, among channels ordered before a
        const uint32_t v = stack_.back();
        stack_.pop_back();
        fwd_.push_back(v);
        // A search past `limit` is abandoned and the edge refused, though it may not close
        // a cycle: refusing is always safe (the path tries another layer), and it bounds
        // the time on large fabrics. Only edges that do close one are remembered.
        if (fwd_.size() > limit) return false;
        for (uint32_t w : out_[v]) {
          if (w == a) {  // b reaches a: a -> b would close a cycle
            refused_.insert(key);
            return false;
          }
          if (at_[w].mark != stamp_ && at_[w].ord < hi) at_[w].mark = stamp_, stack_.push_back(w);
        }
      }
      move_after(a);
    }
    out_[a].push_back(b);
    const PortNum q = (*port_)[b];
    bits_[size_t(a) * words_ + (q >> 6)] |= uint64_t(1) << (q & 63);
    return true;
  }

  // Removes a -> b, added last from a (an undo). The order stays topological.
  void undo(uint32_t a, uint32_t b) {
    out_[a].pop_back();
    const PortNum q = (*port_)[b];
    bits_[size_t(a) * words_ + (q >> 6)] &= ~(uint64_t(1) << (q & 63));
  }

  // Channel c's label: the order's labels increase along it (for tests).
  uint64_t label(uint32_t c) const { return at_[c].ord; }

 private:
  // Moves fwd_'s channels, in their order, to just after a, and labels them.
  void move_after(uint32_t a) {
    std::sort(fwd_.begin(), fwd_.end(),
              [&](uint32_t x, uint32_t y) { return at_[x].ord < at_[y].ord; });
    for (uint32_t v : fwd_) next_[prev_[v]] = next_[v], prev_[next_[v]] = prev_[v];
    uint32_t p = a;
    for (uint32_t v : fwd_) {
      const uint32_t q = next_[p];
      next_[p] = v, prev_[v] = p, next_[v] = q, prev_[q] = v;
      p = v;
    }
    const uint32_t right = next_[p];
    const auto k = static_cast<uint32_t>(fwd_.size());
    if (at_[right].ord - at_[a].ord > k) {
      spread(a, right, k);
      return;
    }
    // Too crowded: widen the window both ways until its labels leave a wide gap between
    // neighbours (or it holds the whole list), and spread the channels in it evenly.
    uint32_t l = a, r = right, inside = k;
    for (uint32_t step = 1;; step *= 2) {
      for (uint32_t i = 0; i < step && l != head_; ++i) l = prev_[l], ++inside;
      for (uint32_t i = 0; i < step && r != tail_; ++i) r = next_[r], ++inside;
      // `inside` counts a and right too once they are inside the window.
      if ((l == head_ && r == tail_) || (at_[r].ord - at_[l].ord) / (uint64_t(inside) + 1) >= kGap)
        break;
    }
    spread(l, r, inside);
  }

  // Labels the `count` channels strictly between l and r evenly between their labels.
  void spread(uint32_t l, uint32_t r, uint32_t count) {
    const uint64_t lo = at_[l].ord, step = (at_[r].ord - lo) / (uint64_t(count) + 1);
    uint64_t x = lo;
    for (uint32_t v = next_[l]; v != r; v = next_[v]) at_[v].ord = x += step;
  }

  static constexpr uint64_t kGap = uint64_t(1) << 16;  // the spread a relabelled window keeps

  std::vector<std::vector<uint32_t>> out_;
  // Per channel (and the list's two ends, last), side by side (a search reads both for
  // every channel it meets): its label in the topological order, and the stamp of the
  // search that last marked it.
  struct Slot {
    uint64_t ord = 0;
    uint32_t mark = 0;
  };
  std::vector<Slot> at_;
  std::vector<uint32_t> next_, prev_;  // the order as a list; head_ and tail_ its ends
  uint32_t head_ = 0, tail_ = 0;
  const std::vector<PortNum>* port_;
  // a -> the next ports it leads to: words_ 64-bit words per channel, as few as the
  // highest port needs (one on switches of up to 63 ports: a quarter of the bytes the
  // searches and tries read at random).
  size_t words_;
  std::vector<uint64_t> bits_;
  std::unordered_set<uint64_t> refused_;
  uint32_t stamp_ = 0;
  std::vector<uint32_t> stack_, fwd_;
};

}  // namespace weft::routing::detail
