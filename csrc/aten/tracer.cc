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
  const Options& o = impl_->options;
  RecorderOptions ro;
  ro.output_dir = o.output_path;
  ro.levels = {3};
  ro.merge = true;
  ro.stream_trace = o.stream_trace;
  ro.value_ranges = o.value_ranges;
  ro.snapshot_interval = o.snapshot_interval;
  ro.trace_limit = o.trace_limit;
  ro.format = {o.show_device, o.show_requires_grad};
  std::unique_ptr<Recorder> recorder;
  Status st = Recorder::Open(ro, &recorder);
  if (!st.ok()) throw std::runtime_error("api_tracer: " + st.message());
  aten::ObserverOptions oo;
  oo.level = 3;
  oo.nesting = o.nesting;
  oo.value_ranges = o.value_ranges;
  oo.filter = ApiFilter(o.include_apis, o.exclude_apis);
  st = aten::InstallObserver(recorder.get(), oo);
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
