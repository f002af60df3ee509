#include "core/device_timer.h"

namespace api_tracer {

constexpr uint32_t kNoEvent = DeviceTimer::Backend::kNoEvent;

DeviceTimer::DeviceTimer(std::unique_ptr<Backend> backend, int slots) : backend_(std::move(backend)) {
  for (Direction dir : {kForward, kBackward}) {
    total_[dir].assign(slots, 0);
    self_[dir].assign(slots, 0);
  }
}

uint32_t DeviceTimer::Open() { return backend_ ? backend_->Record() : kNoEvent; }

void DeviceTimer::Close(uint32_t start, int slot, bool backward, uint32_t outer, bool outermost) {
  if (!backend_) return;
  uint32_t end = backend_->Record();
  if (start == kNoEvent || end == kNoEvent) {
    ++untimed_;
    Discard(start);
    Discard(end);
    return;
  }
  pending_.push_back({start, end, outer, slot, backward, outermost});
  if (++since_harvest_ >= kHarvestEvery) {
    since_harvest_ = 0;
    Harvest();
  }
}

void DeviceTimer::Discard(uint32_t start) {
  // Recorded already: given back once the device has passed it, with the
  // pairs queued before it.
  if (backend_ && start != kNoEvent) pending_.push_back({start, start, kNoEvent, -1, false, false});
}

void DeviceTimer::Account(const Pair& p) {
  int64_t inside = 0;
  if (auto it = inside_.find(p.start); it != inside_.end()) {
    inside = it->second;
    inside_.erase(it);
  }
  if (p.slot >= 0) {
    int64_t ns = backend_->ElapsedNs(p.start, p.end);
    if (ns >= 0) {
      if (p.outermost) total_[p.backward][p.slot] += ns;
      self_[p.backward][p.slot] += ns - inside;
      if (p.outer != kNoEvent) inside_[p.outer] += ns;
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
  while (!pending_.empty() && backend_->Done(pending_.front().start) && backend_->Done(pending_.front().end)) {
    Account(pending_.front());
    pending_.pop_front();
  }
}

void DeviceTimer::Finish() {
  if (!backend_) return;
  for (const Pair& p : pending_) {
    backend_->Wait(p.start);
    backend_->Wait(p.end);
    Account(p);
  }
  pending_.clear();
  inside_.clear();
  backend_.reset();
}

}  // namespace api_tracer
