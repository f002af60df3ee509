// DeviceTimer: device (GPU) time of one thread's profiler frames (a
// module's forward call, an autograd node's run), without waiting for the
// device.
//
// A frame's start and end each record an event into the device's current
// queue (the thread's current stream); the device time of the frame is the
// time between the two events on the device. Pairs wait until the device
// has passed their end event, checked without blocking every so often, and
// are then summed and their events reused; the rest are read after one wait
// per pair at the end of the profile. As for CPU time, a frame's self time
// is its time minus the frames directly inside it (a reentrant checkpoint's
// node run holds forward calls and other node runs).
//
// The device itself is a Backend (aten/: CUDA events through c10::Event);
// tests use a fake.
// Thread-safety: one per thread, used by that thread only (Finish by the
// profile's owner once no frame runs): no lock, so recording an event never
// waits for another thread.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

namespace api_tracer {

// Which way a profiler frame goes: a module's forward call, or the run of
// an autograd node its forward made. Indexes per-direction tables.
enum Direction : int { kForward = 0, kBackward = 1 };

class DeviceTimer {
 public:
  class Backend {
   public:
    static constexpr uint32_t kNoEvent = UINT32_MAX;
    virtual ~Backend() = default;
    // Records an event (new, or one given back by Release) into the current
    // queue; returns its number, or kNoEvent when none could be recorded
    // (as while the queue is being captured into a CUDA graph).
    virtual uint32_t Record() = 0;
    // Whether the device may be asked about events now (not while this
    // thread's queue is being captured into a CUDA graph).
    virtual bool MayQuery() = 0;
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
  // The frame that Open returned `start` for ends, charged to `slot` in
  // direction `backward`; `outer` is the start event of the frame directly
  // around it (kNoEvent: none), whose self time does not hold it; only an
  // `outermost` frame (no frame of its slot open around it) adds to the
  // slot's total.
  void Close(uint32_t start, int slot, bool backward, uint32_t outer, bool outermost = true);
  // The frame that Open returned `start` for will not end (its exit never
  // came): nothing is charged.
  void Discard(uint32_t start);

  // Waits for the device to pass every pending pair and sums them; the
  // backend is let go (later frames are not timed).
  void Finish();
  // Per direction (0 forward, 1 backward) and slot, after Finish: the time
  // of the outermost frames, and the frames' self time (their time less the
  // frames directly inside them).
  const std::vector<int64_t>& total_ns(Direction dir) const { return total_[dir]; }
  const std::vector<int64_t>& self_ns(Direction dir) const { return self_[dir]; }
  // Frames that could not be timed (events on different devices, or not
  // recorded).
  int64_t untimed() const { return untimed_; }

 private:
  struct Pair {
    uint32_t start, end, outer;
    int slot;  // -1: a lone event, given back (a discarded or untimed frame's)
    bool backward;
    bool outermost;
  };
  void Account(const Pair& p);  // both events passed
  void Harvest();               // the passed pairs at the front

  static constexpr int kHarvestEvery = 64;
  std::unique_ptr<Backend> backend_;
  std::deque<Pair> pending_;
  std::vector<int64_t> total_[2], self_[2];
  // The time of frames inside a frame still pending, by its start event:
  // taken from its self time when it is timed (inner frames end first, so
  // they are accounted first), dropped when it is not.
  std::unordered_map<uint32_t, int64_t> inside_;
  int since_harvest_ = 0;
  int64_t untimed_ = 0;
};

}  // namespace api_tracer
