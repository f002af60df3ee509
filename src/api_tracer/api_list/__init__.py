"""The API lists level 0 wraps by default, per dialect.

- ``torch_api_list.yaml``: torch's public API (functions of torch and of
  its public function namespaces, Tensor methods and operators, torch.nn
  modules and their forward, optimizers).
- ``torch_api_list_full.yaml``: everything a full scan of torch's public
  modules finds (used with ``APITracer(disable_torch_api_list=True)``).
- ``paddle_api_list.yaml``, ``paddle_api_list_full.yaml``: the same for
  PaddlePaddle (functions of paddle and its computing namespaces,
  paddle.Tensor methods and operators, paddle.nn layers and their forward,
  optimizers); ``paddle_names.py`` says, with reasons, what level 0 never
  wraps of it.

They are generated against the installed framework by
``python -m api_tracer.api_list [--dialect paddle]`` (see generate.py);
entries level 0 must not wrap (the dialect's skip_reason) are left out.
"""
