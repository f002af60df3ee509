#include "core/device_timer.h"

namespace api_tracer {

DeviceTimer::DeviceTimer(std::unique_ptr<Backend> backend, int slots) : backend_(std::move(backend)) {
  sums_[0].assign(slots, 0);
  sums_[1].assign(slots, 0);
}

constexpr uint32_t kNoEvent = DeviceTimer::Backend::kNoEvent;

uint32_t DeviceTimer::Open() {
  std::lock_guard<std::mutex> lock(mu_);
  return backend_ ? backend_->Record() : kNoEvent;
}

void DeviceTimer::Close(uint32_t start, int slot, bool backward) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!backend_) return;
  uint32_t end = backend_->Record();
  if (start == kNoEvent || end == kNoEvent) {
    ++uncomparable_;
    if (start != kNoEvent) backend_->Release(start);
    if (end != kNoEvent) backend_->Release(end);
    return;
  }
  pending_.push_back({start, end, slot, backward});
  if (++since_harvest_ >= kHarvestEvery) {
    since_harvest_ = 0;
    Harvest();
  }
}

void DeviceTimer::Discard(uint32_t start) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!backend_ || start == kNoEvent) return;
  // Recorded already: released once the device has passed it, with the
  // pairs queued before it.
  pending_.push_back({start, start, -1, false});
}

void DeviceTimer::Account(const Pair& p) {
  if (p.slot >= 0) {
    int64_t ns = backend_->ElapsedNs(p.start, p.end);
    if (ns >= 0) {
      sums_[p.backward][p.slot] += ns;
    } else {
      ++uncomparable_;
    }
  }
  backend_->Release(p.start);
  if (p.end != p.start) backend_->Release(p.end);
}

void DeviceTimer::Harvest() {
  // Events pass in the order of their queue; with several queues the front
  // pair may wait for a later one, which only delays it to the next harvest.
  while (!pending_.empty() && backend_->Done(pending_.front().end)) {
    Account(pending_.front());
    pending_.pop_front();
  }
}

void DeviceTimer::Finish() {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Pair& p : pending_) {
    backend_->Wait(p.end);
    Account(p);
  }
  pending_.clear();
  backend_.reset();
}

}  // namespace api_tracer
