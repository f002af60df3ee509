// Config lines from Python: parse them into Python values (the classes of
// api_tracer.values), and format Python calls as config lines.
#include <pybind11/operators.h>
#include <pybind11/stl.h>

#include <cstdio>
#include <fstream>
#include <optional>
#include <tuple>

#include "core/format.h"
#include "core/parse.h"
#include "core/sources.h"
#include "core/recorder.h"
#include "core/writers.h"
#include "python/bindings.h"
#include "python/convert.h"

namespace api_tracer::python {
namespace {

struct ValueTypes {
  pybind11::object call, symbol, tensor_spec;
};
ValueTypes& Types() {
  static ValueTypes* types = new ValueTypes();  // lives as long as the module
  return *types;
}

// sys.get_int_max_str_digits, or None in a Python without the limit; looked
// up at import.
pybind11::object& GetIntMaxStrDigits() {
  static pybind11::object* get = new pybind11::object();  // lives as long as the module
  return *get;
}

// The bounds Python sets on a parsed line. The digit limit is read at each
// parse: a program may change it (sys.set_int_max_str_digits).
ParseOptions PythonParseOptions() {
  ParseOptions options;
  options.hashable_slices = PY_VERSION_HEX >= 0x030C0000;
  if (!GetIntMaxStrDigits().is_none()) options.max_int_digits = GetIntMaxStrDigits()().cast<size_t>();
  return options;
}

// A new reference from the C API, or the error it set raised as it is.
pybind11::object Checked(PyObject* result) {
  if (!result) throw pybind11::error_already_set();
  return pybind11::reinterpret_steal<pybind11::object>(result);
}

pybind11::object ToPython(const Value& v) {
  API_TRACER_HANDLES_VALUE_KINDS(15);
  using K = Value::Kind;
  auto items = [&](size_t begin, size_t end) {
    pybind11::list out;
    for (size_t i = begin; i < end; ++i) out.append(ToPython(v.items()[i]));
    return out;
  };
  switch (v.kind()) {
    case K::kNone: return pybind11::none();
    case K::kBool: return pybind11::bool_(v.as_bool());
    case K::kInt: return pybind11::int_(v.as_int());
    case K::kBigInt: return Checked(PyLong_FromString(v.text().c_str(), nullptr, 10));
    case K::kFloat: return pybind11::float_(v.real());
    case K::kComplex: return Checked(PyComplex_FromDoubles(v.real(), v.imag()));
    case K::kStr: return pybind11::str(v.text());
    case K::kEllipsis: return pybind11::ellipsis();
    case K::kList: return items(0, v.items().size());
    case K::kTuple: return pybind11::tuple(items(0, v.items().size()));
    case K::kDict: {
      pybind11::dict d;
      for (size_t i = 0; i + 1 < v.items().size(); i += 2) {
        d[ToPython(v.items()[i])] = ToPython(v.items()[i + 1]);
      }
      return d;
    }
    case K::kSlice:
      return Checked(
          PySlice_New(ToPython(v.items()[0]).ptr(), ToPython(v.items()[1]).ptr(), ToPython(v.items()[2]).ptr()));
    case K::kTensor: {
      const TensorInfo& t = v.tensor();
      pybind11::object stride = t.stride.empty() ? pybind11::object(pybind11::none()) : pybind11::cast(t.stride);
      pybind11::object layout = t.layout.empty() ? pybind11::object(pybind11::none()) : pybind11::str(t.layout);
      pybind11::object spec = Types().tensor_spec(
          pybind11::cast(t.shape), t.dtype, pybind11::arg("stride") = stride, pybind11::arg("device") = t.device,
          pybind11::arg("requires_grad") = t.requires_grad, pybind11::arg("layout") = layout);
      if (t.nnz >= 0) spec.attr("nnz") = t.nnz;
      if (t.storage_size >= 0) {
        spec.attr("storage_offset") = t.storage_offset;
        spec.attr("storage_size") = t.storage_size;
      }
      if (!t.qscheme.empty()) {
        spec.attr("qscheme") = t.qscheme;
        if (t.qscheme == kPerTensorAffine) {
          spec.attr("scale") = t.scale;
          spec.attr("zero_point") = t.zero_point;
        } else if (t.axis >= 0) {
          spec.attr("axis") = t.axis;
        }
      }
      return spec;
    }
    case K::kSymbol: return Types().symbol(v.text());
    case K::kObject: {
      size_t npos = v.positional_count();
      pybind11::list args = items(0, npos);
      args.insert(0, pybind11::str(v.text()));
      pybind11::dict kwargs;
      for (size_t i = 0; i < v.keywords().size(); ++i) {
        kwargs[pybind11::str(v.keywords()[i])] = ToPython(v.items()[npos + i]);
      }
      return Types().call(*pybind11::tuple(args), **kwargs);
    }
  }
  return pybind11::none();
}

// The UTF-8 of a line, valid while `line` lives. A lone surrogate has no
// UTF-8, and no place in the grammar: a parse error at its column.
std::string_view LineUtf8(const pybind11::str& line) {
  Py_ssize_t size;
  if (const char* p = PyUnicode_AsUTF8AndSize(line.ptr(), &size)) return {p, static_cast<size_t>(size)};
  if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) throw pybind11::error_already_set();
  PyErr_Clear();
  for (Py_ssize_t i = 0; i < PyUnicode_GET_LENGTH(line.ptr()); ++i) {
    Py_UCS4 c = PyUnicode_READ_CHAR(line.ptr(), i);
    if (c >= 0xd800 && c <= 0xdfff) {
      char text[64];
      std::snprintf(text, sizeof text, "a lone surrogate (U+%04X) is not a character", static_cast<unsigned>(c));
      RaiseIfError(Status::ParseError(text, i + 1));
    }
  }
  throw std::logic_error("a str with no UTF-8 form and no surrogate");
}

pybind11::tuple ParseCallToPython(const pybind11::str& line) {
  Call call;
  RaiseIfError(ParseCall(LineUtf8(line), &call, PythonParseOptions()));
  pybind11::list args;
  for (const Value& a : call.args) args.append(ToPython(a));
  pybind11::dict kwargs;
  for (const auto& [name, value] : call.kwargs) kwargs[pybind11::str(name)] = ToPython(value);
  return pybind11::make_tuple(call.api, args, kwargs);
}

std::string FormatFromPython(const std::string& api, pybind11::tuple args, pybind11::dict kwargs,
                             pybind11::object classify, pybind11::object tensor_type_name, bool show_device,
                             bool show_requires_grad) {
  Converter converter(classify.ptr(), tensor_type_name.ptr(), false, false, show_device);
  KeyWriter key;
  converter.WriteCall(0, CallArgs::Tuple(args.ptr(), kwargs.ptr()), &key);
  ApiId unused;
  Call call;
  RaiseIfError(DecodeCall(key.view(), &unused, &call));
  call.api = api;
  return FormatCall(call, {show_device, show_requires_grad});
}

void WriteSummary(const std::string& dir, const std::string& suffix,
                  const std::vector<std::pair<std::string, uint64_t>>& api_counts,
                  const std::vector<std::string>& config_lines,
                  const std::optional<std::vector<std::pair<std::string, std::vector<Stack>>>>& stacks,
                  const std::optional<std::vector<std::pair<std::string, Aggregator::PathProfiles>>>& value_ranges) {
  Summary s;
  s.api_counts = api_counts;
  s.config_lines = config_lines;
  if (stacks) s.stacks = *stacks;
  if (value_ranges) s.value_profiles = *value_ranges;
  TraceOptions asked;  // the optional files: those given data
  asked.record_stack = stacks.has_value();
  asked.value_ranges = value_ranges.has_value();
  RaiseIfError(WriteSummaryFiles(s, asked, dir, suffix));
}

pybind11::tuple EntryTuple(const SourcesReader& r, const SourceEntry& e) {
  pybind11::tuple top(e.top.size());
  for (size_t i = 0; i < e.top.size(); ++i) top[i] = pybind11::make_tuple(e.top[i].first, e.top[i].second);
  return pybind11::make_tuple(r.line(), e.config, e.calls, e.sources, top, e.at_most);
}

void InitSourcesBindings(pybind11::module_& m) {
  pybind11::class_<SourcesReader>(m, "SourcesReader",
                                  "api_config_sources.yaml read a record at a time, each checked (core/sources.h).")
      .def(pybind11::init([](const std::string& path) {
             std::unique_ptr<SourcesReader> r;
             RaiseIfError(SourcesReader::Open(path, &r));
             return r;
           }),
           pybind11::arg("path"))
      .def_property_readonly("labels", [](const SourcesReader& r) { return r.labels(); })
      .def("__iter__", [](SourcesReader& r) -> SourcesReader& { return r; })
      .def("__next__", [](SourcesReader& r) {
        SourceEntry e;
        if (r.Next(&e)) return EntryTuple(r, e);
        RaiseIfError(r.error());
        throw pybind11::stop_iteration();
      });
  m.def(
      "merge_sources",
      [](const std::vector<std::pair<std::string, std::string>>& pairs, const std::string& configs_path,
         const std::string& sources_path) {
        std::vector<MergeInput> inputs;
        for (const auto& [sources, configs] : pairs) inputs.push_back({sources, configs});
        ParseOptions options = PythonParseOptions();
        std::unique_ptr<FileSink> configs_out, sources_out;
        RaiseIfError(FileSink::Create(configs_path, &configs_out));
        RaiseIfError(FileSink::Create(sources_path, &sources_out));
        MergeResult result;
        Status error;
        {
          pybind11::gil_scoped_release release;
          error = MergeSources(inputs, configs_out.get(), sources_out.get(), options, &result);
        }
        RaiseIfError(error);
        RaiseIfError(configs_out->Close());
        RaiseIfError(sources_out->Close());
        return pybind11::make_tuple(result.configs, result.api_calls);
      },
      pybind11::arg("inputs"), pybind11::arg("configs_out"), pybind11::arg("sources_out"),
      "Merges sets' api_config_sources.yaml and api_configs.yaml ((sources, configs) paths per set) into the two "
      "files; (distinct configs, per input its calls per API). An InputError naming the file and line for bad "
      "input.");
}

}  // namespace

void InitConfigBindings(pybind11::module_& m) {
  InitSourcesBindings(m);
  GetIntMaxStrDigits() =
      pybind11::getattr(pybind11::module_::import("sys"), "get_int_max_str_digits", pybind11::none());
  m.def(
      "set_value_types",
      [](pybind11::object call, pybind11::object symbol, pybind11::object tensor_spec) {
        Types() = {call, symbol, tensor_spec};
        SetValueTypes(call.ptr(), symbol.ptr(), tensor_spec.ptr());
      },
      "Registers api_tracer.values' Call, Symbol and TensorSpec.");
  pybind11::class_<ValueProfile>(m, "ValueProfile", "What a tensor argument held (core/value_profile.h).")
      .def(pybind11::init<>())
      .def_readwrite("valid", &ValueProfile::valid)
      .def_readwrite("min", &ValueProfile::min)
      .def_readwrite("max", &ValueProfile::max)
      .def_readwrite("sorted", &ValueProfile::sorted)
      .def_readwrite("distinct", &ValueProfile::distinct)
      .def_readwrite("many", &ValueProfile::many)
      .def_readwrite("negatives", &ValueProfile::negatives)
      .def_readwrite("many_negatives", &ValueProfile::many_negatives)
      .def_readwrite("nonneg_min", &ValueProfile::nonneg_min)
      .def_readwrite("same_sum", &ValueProfile::same_sum)
      .def_readwrite("sum", &ValueProfile::sum)
      .def_readwrite("floating", &ValueProfile::floating)
      .def_readwrite("finite", &ValueProfile::finite)
      .def_readwrite("fmin", &ValueProfile::fmin)
      .def_readwrite("fmax", &ValueProfile::fmax)
      .def_readwrite("nan", &ValueProfile::nan)
      .def_readwrite("posinf", &ValueProfile::posinf)
      .def_readwrite("neginf", &ValueProfile::neginf)
      .def("merge", &ValueProfile::Merge, pybind11::arg("other"))
      .def_static(
          "of", [](const std::vector<int64_t>& values) { return ValueProfile::Of(values); },
          pybind11::arg("values"))
      .def(pybind11::self == pybind11::self)
      .def(pybind11::pickle(  // replay sends profiles to its worker processes
          [](const ValueProfile& p) {
            return pybind11::make_tuple(p.valid, p.min, p.max, p.sorted, p.distinct, p.many, p.negatives,
                                        p.many_negatives, p.nonneg_min, p.same_sum, p.sum, p.floating, p.finite, p.fmin,
                                        p.fmax, p.nan, p.posinf, p.neginf);
          },
          [](const pybind11::tuple& t) {
            if (t.size() != 18) throw std::runtime_error("a ValueProfile pickle of another version");
            ValueProfile p;
            size_t i = 0;
            auto next = [&]<typename T>(T* field) { *field = t[i++].cast<T>(); };
            next(&p.valid), next(&p.min), next(&p.max), next(&p.sorted), next(&p.distinct), next(&p.many);
            next(&p.negatives), next(&p.many_negatives), next(&p.nonneg_min), next(&p.same_sum), next(&p.sum);
            next(&p.floating), next(&p.finite), next(&p.fmin), next(&p.fmax), next(&p.nan), next(&p.posinf);
            next(&p.neginf);
            return p;
          }));
  pybind11::enum_<RuleKind>(m, "Rule", "How a dialect's classify() says a type's values are written (convert.h).")
      .value("opaque", RuleKind::kOpaque)
      .value("replace", RuleKind::kReplace)
      .value("instance", RuleKind::kInstance)
      .value("tensor", RuleKind::kTensor);
  pybind11::class_<TensorReader>(m, "TensorReader",
                                 "How a framework other than torch exposes its tensors' fields (convert.h).")
      .def(pybind11::init([](const std::string& shape, const std::string& dtype, const pybind11::dict& dtypes,
                             pybind11::object dtype_name, std::optional<std::string> stride,
                             std::optional<std::string> requires_grad, bool grad_negated, pybind11::object device,
                             pybind11::object values) {
             auto attr = [](const std::string& name) { return Steal(PyUnicode_InternFromString(name.c_str())); };
             auto callable = [](pybind11::object fn, const char* what) {
               if (fn.is_none()) return pybind11::object();
               if (!PyCallable_Check(fn.ptr()))
                 throw pybind11::type_error(std::string(what) + " must be callable or None");
               return fn;
             };
             TensorReader r;
             r.shape = attr(shape);
             r.dtype = attr(dtype);
             for (auto [k, v] : dtypes) r.dtypes.emplace(Borrow(k.ptr()), v.cast<std::string>());
             r.dtype_name = callable(dtype_name, "dtype_name");
             if (stride) r.stride = attr(*stride);
             if (requires_grad) r.requires_grad = attr(*requires_grad);
             r.grad_negated = grad_negated;
             r.device = callable(device, "device");
             r.values = callable(values, "values");
             return r;
           }),
           pybind11::kw_only(), pybind11::arg("shape"), pybind11::arg("dtype"), pybind11::arg("dtypes"),
           pybind11::arg("dtype_name") = pybind11::none(), pybind11::arg("stride") = pybind11::none(),
           pybind11::arg("requires_grad") = pybind11::none(), pybind11::arg("grad_negated") = false,
           pybind11::arg("device") = pybind11::none(), pybind11::arg("values") = pybind11::none(),
           "shape, dtype: attribute names; dtypes: dtype object -> name; dtype_name(dtype) for others; stride, "
           "requires_grad: attribute names (grad_negated: the attribute says the opposite); device(tensor) -> "
           "str, asked where devices are shown; values(tensor) -> an int64 or float64 buffer, for value profiles.");
  m.def("parse_call", &ParseCallToPython, pybind11::arg("line"),
        "Parses a config line into (api, args, kwargs); ConfigSyntaxError(message, column) if malformed.");
  m.def(
      "parse_value",
      [](const pybind11::str& text) {
        Value v;
        RaiseIfError(ParseValue(LineUtf8(text), &v, PythonParseOptions()));
        return ToPython(v);
      },
      pybind11::arg("text"));
  m.def("write_summary", &WriteSummary, pybind11::arg("dir"), pybind11::arg("suffix"), pybind11::arg("api_counts"),
        pybind11::arg("config_lines"), pybind11::arg("stacks") = pybind11::none(),
        pybind11::arg("value_ranges") = pybind11::none(),
        "Writes a file set's summary files from plain data (api-tracer merge).");
  m.def(
      "output_files",
      [] {
        pybind11::list files;
        for (const OutputFile& f : OutputFiles()) {
          files.append(pybind11::make_tuple(
              f.stem, f.ext, f.option.empty() ? pybind11::object(pybind11::none()) : pybind11::str(f.option),
              f.summary != nullptr));
        }
        return files;
      },
      "The files of an output set: (stem, ext, the option that asks for it or None, whether it is a summary).");
  m.attr("MAX_STACKS") = Aggregator::kMaxStacks;
  m.attr("MAX_LABEL") = kMaxLabel;
  m.attr("MAX_VALUE_DEPTH") = kMaxValueDepth;
  m.def(
      "count_trace_levels",
      [](const std::string& path) {
        std::ifstream yaml(path, std::ios::binary);
        if (!yaml) RaiseIfError(Status::IOError("cannot read " + path));
        TraceLevels levels = CountTraceLevels(yaml);
        return pybind11::make_tuple(levels.counts, levels.bad_line, levels.bad_value);
      },
      pybind11::arg("path"),
      "(per level, the records of a merged api_trace.yaml that carry it; the line of the first level field "
      "that is not a level, 0 if none; its value).");
  m.def("trace_limit_note", &TraceLimitNote, pybind11::arg("limit"), pybind11::arg("dropped"),
        "The last line of a trace that trace_limit cut.");
  m.def(
      "parse_trace_limit_note",
      [](std::string_view line) -> std::optional<std::pair<uint64_t, uint64_t>> {
        uint64_t limit, dropped;
        if (!ParseTraceLimitNote(line, &limit, &dropped)) return std::nullopt;
        return std::make_pair(limit, dropped);
      },
      pybind11::arg("line"), "(limit, calls not written) of a trace_limit_note() line, or None.");
  m.def("format_call", &FormatFromPython, pybind11::arg("api"), pybind11::arg("args"), pybind11::arg("kwargs"),
        pybind11::kw_only(), pybind11::arg("classify"), pybind11::arg("tensor_type_name"),
        pybind11::arg("show_device") = false, pybind11::arg("show_requires_grad") = false,
        "Formats a call of `api` with Python arguments as a config line.");
}

}  // namespace api_tracer::python
