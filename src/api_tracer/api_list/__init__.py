"""The API lists level 0 wraps by default.

- ``torch_api_list.yaml``: torch's public API (functions of torch and of
  its public function namespaces, Tensor methods and operators, torch.nn
  modules and their forward, optimizers).
- ``torch_api_list_full.yaml``: everything a full scan of torch's public
  modules finds (used with ``APITracer(disable_torch_api_list=True)``).

Both are generated against the installed torch by
``python -m api_tracer.api_list`` (see generate.py); entries level 0 must
not wrap (PyTorchDialect.skip_reason) are left out.
"""
