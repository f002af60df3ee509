#include <pybind11/stl.h>

#include "python/bindings.h"
#include "python/session.h"
#include "aten/observer.h"
#include "core/module_context.h"

namespace api_tracer::python {

void RaiseIfError(const Status& st) {
  if (st.ok()) return;
  switch (st.code()) {
    case Status::Code::kIOError:
      PyErr_SetString(PyExc_OSError, st.message().c_str());
      break;
    case Status::Code::kInvalidArgument:
      PyErr_SetString(PyExc_ValueError, st.message().c_str());
      break;
    case Status::Code::kFailedPrecondition:
      PyErr_SetString(PyExc_RuntimeError, st.message().c_str());
      break;
    case Status::Code::kParseError:
      PyErr_SetObject(PyExc_ValueError,
                      pybind11::make_tuple(st.message(), st.column()).ptr());
      break;
    default:
      PyErr_SetString(PyExc_RuntimeError, st.message().c_str());
  }
  throw pybind11::error_already_set();
}

namespace {

StackCapture::Format ParseStackFormat(const std::string& s) {
  if (s == "short") return StackCapture::Format::kShort;
  if (s == "full") return StackCapture::Format::kFull;
  if (s == "api") return StackCapture::Format::kApi;
  throw pybind11::value_error("stack_format must be 'short', 'full' or 'api', not '" + s + "'");
}

void Start(const std::string& output_dir, const std::vector<int>& levels, bool merge, bool record_stack,
           const std::string& stack_format, bool stream_trace, bool value_ranges, double snapshot_interval,
           uint64_t trace_limit, bool show_device, bool show_requires_grad,
           const std::vector<std::string>& include, const std::vector<std::string>& exclude,
           const std::vector<std::string>& stack_skip_prefixes, pybind11::object resolve,
           pybind11::object classify, pybind11::object tensor_type_name) {
  SessionOptions opts;
  opts.recorder.output_dir = output_dir;
  opts.recorder.levels = levels;
  opts.recorder.merge = merge;
  opts.recorder.record_stack = record_stack;
  opts.recorder.stream_trace = stream_trace;
  opts.recorder.value_ranges = value_ranges;
  opts.recorder.snapshot_interval = snapshot_interval;
  opts.recorder.trace_limit = trace_limit;
  opts.recorder.format = {show_device, show_requires_grad};
  opts.include = include;
  opts.exclude = exclude;
  opts.stack_format = ParseStackFormat(stack_format);
  opts.stack_skip_prefixes = stack_skip_prefixes;
  opts.resolve = resolve.ptr();
  opts.classify = classify.ptr();
  opts.tensor_type_name = tensor_type_name.ptr();
  RaiseIfError(Session::Start(opts));
}

Session& ActiveOrRaise() {
  Session* s = Session::Active();
  if (!s) {
    PyErr_SetString(PyExc_RuntimeError, "no tracer is running");
    throw pybind11::error_already_set();
  }
  return *s;
}

// A context manager: the tracer's own code, recorded nowhere on this thread.
struct Suspended {
  void Enter() { ++CurrentThread().suspended; }
  void Exit() { --CurrentThread().suspended; }
};

}  // namespace

void InitSessionBindings(pybind11::module_& m) {
  m.def("start", &Start, pybind11::kw_only(), pybind11::arg("output_dir"), pybind11::arg("levels"),
        pybind11::arg("merge"), pybind11::arg("record_stack"), pybind11::arg("stack_format"),
        pybind11::arg("stream_trace"), pybind11::arg("value_ranges"), pybind11::arg("snapshot_interval"),
        pybind11::arg("trace_limit"), pybind11::arg("show_device"),
        pybind11::arg("show_requires_grad"), pybind11::arg("include"), pybind11::arg("exclude"),
        pybind11::arg("stack_skip_prefixes"), pybind11::arg("resolve"), pybind11::arg("classify"),
        pybind11::arg("tensor_type_name"),
        "Opens the tracing session: creates the output directory and opens its files.");
  m.def("stop", [] { RaiseIfError(Session::Stop()); },
        "Closes the session: flushes the traces and writes the summary files.");
  m.def("abandon_after_fork", &Session::AbandonAfterFork,
        "In a forked child: drop the parent's session without writing its files.");
  m.def("allows", [](const std::string& api) { return ActiveOrRaise().Allows(api); },
        "Whether the running session's include/exclude patterns record `api`.");
  m.def(
      "record",
      [](int level, const std::string& api, pybind11::tuple args, pybind11::object kwargs) {
        Session& s = ActiveOrRaise();
        if (!s.Records(level)) throw pybind11::value_error("level " + std::to_string(level) + " is not traced");
        if (CurrentThread().suspended || !s.Allows(api)) return;
        Session::Pin pin(&s);
        s.Record(level, s.Intern(api), CallArgs::Tuple(args.ptr(), kwargs.is_none() ? nullptr : kwargs.ptr()));
      },
      pybind11::arg("level"), pybind11::arg("api"), pybind11::arg("args"), pybind11::arg("kwargs") = pybind11::none(),
      "Records one call of `api` at `level` (for hooks written in Python).");
  m.def(
      "observer_install",
      [](int level, const std::string& nesting, bool value_ranges) {
        Session& s = ActiveOrRaise();
        if (!s.Records(level)) throw pybind11::value_error("level " + std::to_string(level) + " is not traced");
        aten::ObserverOptions o;
        o.level = level;
        o.value_ranges = value_ranges;
        o.filter = s.filter();
        if (nesting == "outermost") {
          o.nesting = Nesting::kOutermost;
        } else if (nesting == "all") {
          o.nesting = Nesting::kAll;
        } else if (nesting == "innermost") {
          o.nesting = Nesting::kInnermost;
        } else {
          throw pybind11::value_error("nesting must be 'outermost', 'all' or 'innermost', not '" + nesting + "'");
        }
        RaiseIfError(aten::InstallObserver(s.recorder(), o));
      },
      pybind11::arg("level"), pybind11::arg("nesting"), pybind11::arg("value_ranges"),
      "Installs the native observer (at::RecordFunction) recording into the running session.");
  m.def("observer_installed", &aten::ObserverInstalled);
  m.def("module_paths", [](std::vector<std::string> paths) { ModuleContext::Set(std::move(paths)); },
        "Interns the module paths that module_enter(id) names (tag_modules).");
  m.def("module_paths_clear", &ModuleContext::Clear);
  m.def("module_enter", &ModuleContext::Push, pybind11::arg("id"));
  m.def("module_exit", &ModuleContext::Pop);
  m.def(
      "observer_remove",
      [] {
        if (Session* s = Session::Active()) s->RemoveObserver();
      },
      "Removes the running session's native observer and waits until no thread is inside it.");
  pybind11::class_<Suspended>(m, "suspended", "with suspended(): the tracer's own work, never recorded")
      .def(pybind11::init<>())
      .def("__enter__", [](Suspended& s) { s.Enter(); })
      .def("__exit__", [](Suspended& s, pybind11::args) { s.Exit(); });
}

}  // namespace api_tracer::python
