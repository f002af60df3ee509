// The public C++ API (include/api_tracer/tracer.h): a Recorder for level 3
// plus the native observer.
#include "api_tracer/tracer.h"

#include <stdexcept>

#include "aten/observer.h"
#include "core/recorder.h"

namespace api_tracer {

struct Tracer::Impl {
  Options options;
  std::unique_ptr<Recorder> recorder;
};

Tracer::Tracer(Options options) : impl_(std::make_unique<Impl>()) { impl_->options = std::move(options); }

Tracer::~Tracer() {
  try {
    stop();
  } catch (const std::exception&) {
    // Destructors do not throw; stop() explicitly to see write errors.
  }
}

void Tracer::start() {
  if (impl_->recorder) throw std::runtime_error("api_tracer: this tracer is already running");
  // Before the output is opened: the running one may write there.
  if (aten::ObserverInstalled()) throw std::runtime_error("api_tracer: another tracer's level 3 is already running");
  TraceOptions options{impl_->options};
  options.levels = {kNativeLevel};
  options.merge_output = true;
  std::unique_ptr<Recorder> recorder;
  Status st = Recorder::Open(options, &recorder);
  if (!st.ok()) throw std::runtime_error("api_tracer: " + st.message());
  st = aten::InstallObserver(recorder.get());
  if (!st.ok()) throw std::runtime_error("api_tracer: " + st.message());
  impl_->recorder = std::move(recorder);
}

void Tracer::stop() {
  if (!impl_->recorder) return;
  aten::RemoveObserver(impl_->recorder.get());
  Status st = impl_->recorder->Close();
  impl_->recorder.reset();
  if (!st.ok()) throw std::runtime_error("api_tracer: " + st.message());
}

bool Tracer::running() const { return impl_->recorder != nullptr; }

const Options& Tracer::options() const { return impl_->options; }

}  // namespace api_tracer
