#include <pybind11/stl.h>

#include <cstring>

#include "python/bindings.h"
#include "python/session.h"
#include "aten/observer.h"
#include "core/module_context.h"

namespace api_tracer::python {

namespace {

void Start(const TraceOptions& options, const std::vector<std::string>& stack_skip_prefixes, pybind11::object resolve,
           pybind11::object classify, pybind11::object tensor_type_name) {
  DialectHooks dialect{stack_skip_prefixes, resolve.ptr(), classify.ptr(), tensor_type_name.ptr()};
  RaiseIfError(Session::Start(options, dialect));
}

// TraceOptions and its enums, for api_tracer.options: the names Python
// knows the fields and values by, and (from a default-made one) their
// defaults.
void BindOptions(pybind11::module_& m) {
  pybind11::enum_<StackFormat>(m, "StackFormat")
      .value("short", StackFormat::kShort)
      .value("full", StackFormat::kFull)
      .value("api", StackFormat::kApi);
  pybind11::enum_<Nesting>(m, "Nesting")
      .value("outermost", Nesting::kOutermost)
      .value("all", Nesting::kAll)
      .value("innermost", Nesting::kInnermost);
  pybind11::enum_<Level>(m, "Level", pybind11::arithmetic())
      .value("setattr", kSetattrLevel)
      .value("torch_function", kTorchFunctionLevel)
      .value("torch_dispatch", kTorchDispatchLevel)
      .value("native", kNativeLevel)
      .value("max", kMaxLevel);
  pybind11::class_<TraceOptions>(m, "TraceOptions", "The options of a tracing session (core/options.h).")
      .def(pybind11::init<>())
      .def_readwrite("output_path", &TraceOptions::output_path)
      .def_readwrite("levels", &TraceOptions::levels)
      .def_readwrite("merge_output", &TraceOptions::merge_output)
      .def_readwrite("record_stack", &TraceOptions::record_stack)
      .def_readwrite("stack_format", &TraceOptions::stack_format)
      .def_readwrite("nesting", &TraceOptions::nesting)
      .def_readwrite("stream_trace", &TraceOptions::stream_trace)
      .def_readwrite("value_ranges", &TraceOptions::value_ranges)
      .def_readwrite("float_ranges", &TraceOptions::float_ranges)
      .def_readwrite("show_device", &TraceOptions::show_device)
      .def_readwrite("show_requires_grad", &TraceOptions::show_requires_grad)
      .def_readwrite("snapshot_interval", &TraceOptions::snapshot_interval)
      .def_readwrite("trace_limit", &TraceOptions::trace_limit)
      .def_readwrite("label", &TraceOptions::label)
      .def_readwrite("include_apis", &TraceOptions::include_apis)
      .def_readwrite("exclude_apis", &TraceOptions::exclude_apis);
}

Session& ActiveOrRaise() {
  Session* s = Session::Active();
  if (!s) {
    PyErr_SetString(PyExc_RuntimeError, "no tracer is running");
    throw pybind11::error_already_set();
  }
  return *s;
}

// Before the process image is replaced (os.execv and its kin raise the audit
// event "os.exec" first), the callable given to on_exec runs while a session
// is active: the tracer writes its files there. A C audit hook costs a
// string comparison per audited event; it can never be removed, so it is
// added once and does nothing without a session.
PyObject* g_on_exec = nullptr;

int ExecAuditHook(const char* event, PyObject* /*args*/, void* /*data*/) {
  if (g_on_exec && Session::Active() && std::strcmp(event, "os.exec") == 0) {
    PyObject* r = PyObject_CallNoArgs(g_on_exec);
    Py_XDECREF(r);
    if (!r) PyErr_WriteUnraisable(g_on_exec);  // never refuse the exec: a -1 would
  }
  return 0;
}

void OnExec(pybind11::object callback) {
  if (!g_on_exec && PySys_AddAuditHook(ExecAuditHook, nullptr) < 0) throw pybind11::error_already_set();
  Py_XSETREF(g_on_exec, callback.release().ptr());
}

// A context manager: the tracer's own code, recorded nowhere on this thread.
struct Suspended {
  void Enter() { suspend.emplace(); }
  void Exit() { suspend.reset(); }
  std::optional<Suspend> suspend;
};

}  // namespace

void InitSessionBindings(pybind11::module_& m) {
  BindOptions(m);
  m.def("start", &Start, pybind11::arg("options"), pybind11::kw_only(), pybind11::arg("stack_skip_prefixes"),
        pybind11::arg("resolve"), pybind11::arg("classify"), pybind11::arg("tensor_type_name"),
        "Opens the tracing session: creates the output directory and opens its files.");
  m.def(
      "stop", [] { RaiseIfError(Session::Stop()); },
      "Closes the session: flushes the traces and writes the summary files.");
  m.def("abandon_after_fork", &Session::AbandonAfterFork,
        "In a forked child: drop the parent's session without writing its files.");
  m.def(
      "allows", [](const std::string& api) { return ActiveOrRaise().Allows(api); },
      "Whether the running session's include/exclude patterns record `api`.");
  m.def(
      "record",
      [](int level, const std::string& api, pybind11::tuple args, pybind11::object kwargs) {
        Session& s = ActiveOrRaise();
        if (!s.Records(level)) throw pybind11::value_error("level " + std::to_string(level) + " is not traced");
        if (SuspendRecording::Active() || !s.Allows(api)) return;
        Session::Pin pin(&s);
        s.Record(level, s.Intern(api), CallArgs::Tuple(args.ptr(), kwargs.is_none() ? nullptr : kwargs.ptr()));
      },
      pybind11::arg("level"), pybind11::arg("api"), pybind11::arg("args"), pybind11::arg("kwargs") = pybind11::none(),
      "Records one call of `api` at `level` (for hooks written in Python).");
  m.def(
      "observer_install",
      [](int level) {
        Session& s = ActiveOrRaise();
        if (!s.Records(level)) throw pybind11::value_error("level " + std::to_string(level) + " is not traced");
        RaiseIfError(aten::InstallObserver(s.recorder(), level));
      },
      pybind11::arg("level"),
      "Installs the native observer (at::RecordFunction) recording into the running session, with its options.");
  m.def("observer_installed", &aten::ObserverInstalled);
  m.def(
      "module_paths", [](std::vector<std::string> paths) { ModuleContext::Set(std::move(paths)); },
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
  m.def("on_exec", &OnExec, pybind11::arg("callback"),
        "Calls callback() before the process execs (the audit event os.exec) while a session is active.");
  pybind11::class_<Suspended>(m, "suspended", "with suspended(): the tracer's own work, never recorded")
      .def(pybind11::init<>())
      .def("__enter__", [](Suspended& s) { s.Enter(); })
      .def("__exit__", [](Suspended& s, pybind11::args) { s.Exit(); });
}

}  // namespace api_tracer::python
