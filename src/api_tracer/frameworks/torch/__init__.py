"""PyTorch: levels 0 to 3 (dialect.py), its API lists (api_list.py and the
YAML files), its modules and optimizers as constructor calls (objects.py),
replay's names (resolve.py), policy (policy.py) and preconditions
(preconditions.py), torch's side of a replayed call (replay.py), and
PyTorch's operator-inputs format (operator_inputs.py)."""

from .. import Export, Framework

FRAMEWORK = Framework(
    name="torch",
    dialect="api_tracer.frameworks.torch.dialect:PyTorchDialect",
    api_lists="api_tracer.frameworks.torch.api_list:TorchLists",
    replay="api_tracer.frameworks.torch.replay:TorchReplay",
    exports={
        "operator-inputs": Export(
            "the operator benchmarks' files of PyTorch (operator_inp_utils.py), tritonbench's and BackendBench's; "
            "aten operators only",
            "api_tracer.frameworks.torch.operator_inputs:write_operator_inputs",
            "api_tracer.frameworks.torch.operator_inputs:operators_held",
        )
    },
    reads=("api_tracer.frameworks.torch.operator_inputs:READER",),
)
