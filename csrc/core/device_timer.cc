#include "core/device_timer.h"

namespace api_tracer {

constexpr uint32_t kNoEvent = DeviceTimer::Backend::kNoEvent;

DeviceTimer::DeviceTimer(std::unique_ptr<Backend> backend, int slots) : backend_(std::move(backend)) {
  for (int dir = 0; dir < 2; ++dir) {
    measured_[dir].assign(slots, 0);
    nested_[dir].assign(slots, 0);
  }
}

uint32_t DeviceTimer::Open() { return backend_ ? backend_->Record() : kNoEvent; }

void DeviceTimer::Close(uint32_t start, int slot, bool backward, int outer_slot, bool outer_backward) {
  if (!backend_) return;
  uint32_t end = backend_->Record();
  if (start == kNoEvent || end == kNoEvent) {
    ++untimed_;
    if (start != kNoEvent) pending_.push_back({start, start, -1, -1, false, false});
    if (end != kNoEvent) pending_.push_back({end, end, -1, -1, false, false});
    return;
  }
  pending_.push_back({start, end, slot, outer_slot, backward, outer_backward});
  if (++since_harvest_ >= kHarvestEvery) {
    since_harvest_ = 0;
    Harvest();
  }
}

void DeviceTimer::Discard(uint32_t start) {
  // Recorded already: given back once the device has passed it, with the
  // pairs queued before it.
  if (backend_ && start != kNoEvent) pending_.push_back({start, start, -1, -1, false, false});
}

void DeviceTimer::Account(const Pair& p) {
  if (p.slot >= 0) {
    int64_t ns = backend_->ElapsedNs(p.start, p.end);
    if (ns >= 0) {
      measured_[p.backward][p.slot] += ns;
      if (p.outer_slot >= 0) nested_[p.outer_backward][p.outer_slot] += ns;
    } else {
      ++untimed_;
    }
  }
  backend_->Release(p.start);
  if (p.end != p.start) backend_->Release(p.end);
}

void DeviceTimer::Harvest() {
  if (!backend_->MayQuery()) return;
  // Events pass in the order of their queue; with several queues the front
  // pair may wait for a later one, which only delays it to the next harvest.
  while (!pending_.empty() && backend_->Done(pending_.front().end)) {
    Account(pending_.front());
    pending_.pop_front();
  }
}

void DeviceTimer::Finish() {
  if (!backend_) return;
  for (const Pair& p : pending_) {
    backend_->Wait(p.end);
    Account(p);
  }
  pending_.clear();
  backend_.reset();
}

}  // namespace api_tracer
