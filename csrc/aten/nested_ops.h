// NestedOps: the aten operators that run on the calling thread while one is
// on (at::RecordFunction, FUNCTION scope, a thread-local callback that boxes
// no inputs), each written "name" or "name.overload", once, in the order of
// its first call. What an operator call did inside, on a stock build of
// torch: fuzz steers by it (replay/behaviour.py's signature). One at a time
// on a thread; it starts and stops on the same thread (elsewhere Stop
// refuses: a thread-local callback is removed only by its own thread). What
// it saw is shared with the callback, so a NestedOps destroyed on another
// thread while on leaves nothing dangling.
#pragma once

#include <ATen/record_function.h>

#include <memory>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

namespace api_tracer::aten {

class NestedOps {
 public:
  struct Seen {
    std::vector<std::string> names;
    std::unordered_set<std::string> known;
  };

  NestedOps() = default;
  ~NestedOps();
  NestedOps(const NestedOps&) = delete;
  NestedOps& operator=(const NestedOps&) = delete;

  // Forgets what was seen and starts seeing; false if a NestedOps (this one
  // too) is already on on this thread.
  bool Start();
  // Stops seeing; false (and still on) when called on another thread than
  // Start's.
  bool Stop();
  bool on() const { return handle_ != 0; }
  const std::vector<std::string>& names() const;

 private:
  at::CallbackHandle handle_ = 0;
  std::thread::id owner_;
  std::shared_ptr<Seen> seen_;
};

}  // namespace api_tracer::aten
