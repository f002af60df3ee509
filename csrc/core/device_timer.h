// DeviceTimer: device (GPU) time of the profiler's frames (a module's
// forward call, an autograd node's run), without waiting for the device.
//
// A frame's start and end each record an event into the device's current
// queue (the thread's current stream); the device time of the frame is the
// time between the two events on the device. Pairs wait until the device
// has passed their end event, checked without blocking every so often, and
// are then summed per scope and direction and their events reused; the rest
// are read after one synchronization, at the end of the profile.
//
// The device itself is a Backend (aten/: CUDA events through c10::Event);
// tests use a fake.
// Thread-safety: every call under one mutex (device-timed frames cost a few
// microseconds of event recording each; the lock is not what is slow).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

namespace api_tracer {

class DeviceTimer {
 public:
  class Backend {
   public:
    virtual ~Backend() = default;
    static constexpr uint32_t kNoEvent = UINT32_MAX;
    // Records an event (new, or one given back by Release) into the current
    // queue; returns its number, or kNoEvent when none could be recorded.
    virtual uint32_t Record() = 0;
    // Whether the device has passed event `e` (does not block).
    virtual bool Done(uint32_t e) = 0;
    // Waits until the device has passed event `e`.
    virtual void Wait(uint32_t e) = 0;
    // Nanoseconds from `start` to `end` on the device, both passed; -1 when
    // they cannot be compared (recorded on different devices).
    virtual int64_t ElapsedNs(uint32_t start, uint32_t end) = 0;
    // `e` may be recorded again.
    virtual void Release(uint32_t e) = 0;
  };

  // `slots`: scopes plus one for "unattributed".
  DeviceTimer(std::unique_ptr<Backend> backend, int slots);

  // A frame starts: the start event's number, for Close or Discard.
  uint32_t Open();
  // The frame that Open returned `start` for ends, charged to `slot`.
  void Close(uint32_t start, int slot, bool backward);
  // The frame that Open returned `start` for will not end (its exit never
  // came): nothing is charged.
  void Discard(uint32_t start);

  // Waits for the device to pass every pending pair and sums them. Then the
  // device time per slot: forward frames as measured (nested frames inside),
  // backward frames likewise.
  void Finish();
  // The sums, after Finish (the backend is let go then: later frames are
  // not timed).
  const std::vector<int64_t>& forward_ns() const { return sums_[0]; }
  const std::vector<int64_t>& backward_ns() const { return sums_[1]; }
  // Pairs that could not be timed (events on different devices, or not
  // recorded).
  int64_t uncomparable() const { return uncomparable_; }

 private:
  struct Pair {
    uint32_t start, end;
    int slot;
    bool backward;
  };
  void Account(const Pair& p);  // under mu_, both events passed
  void Harvest();               // under mu_: the passed pairs at the front

  static constexpr int kHarvestEvery = 64;
  std::mutex mu_;
  std::unique_ptr<Backend> backend_;
  std::deque<Pair> pending_;
  std::vector<int64_t> sums_[2];
  int since_harvest_ = 0;
  int64_t uncomparable_ = 0;
};

}  // namespace api_tracer
