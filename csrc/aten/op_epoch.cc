#include "aten/op_epoch.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include <mutex>

namespace api_tracer::aten {

std::atomic<uint64_t> g_operator_epoch{0};

namespace {

class Listener final : public c10::OpRegistrationListener {
 public:
  void onOperatorRegistered(const c10::OperatorHandle&) override {}
  void onOperatorDeregistered(const c10::OperatorHandle&) override {
    g_operator_epoch.fetch_add(1, std::memory_order_acq_rel);
  }
};

}  // namespace

void WatchOperatorDeregistrations() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Kept for the life of the process: never deregistered.
    new c10::RegistrationHandleRAII(c10::Dispatcher::singleton().addRegistrationListener(std::make_unique<Listener>()));
  });
}

}  // namespace api_tracer::aten
