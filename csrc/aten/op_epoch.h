// OperatorEpoch(): a number that changes whenever an operator is
// deregistered (a torch.library Library destroyed). The observers cache
// operators by the address of their schema's name, which is fast and stable
// while the operator is registered; once it is gone a later schema may be
// put at the same address, so a cache made in another epoch is dropped.
// Thread-safety: any thread.
#pragma once

#include <atomic>
#include <cstdint>

namespace api_tracer::aten {

extern std::atomic<uint64_t> g_operator_epoch;

// Starts counting deregistrations (once per process; before an observer
// relies on OperatorEpoch()).
void WatchOperatorDeregistrations();

inline uint64_t OperatorEpoch() { return g_operator_epoch.load(std::memory_order_acquire); }

}  // namespace api_tracer::aten
