"""Passes over modules: the pass manager, instruments, and the standard passes.

See docs/passes.md for the passes and docs/writing-passes.md for writing one.
"""

from relay.passes.infer_type import InferType
from relay.passes.instruments import (
    CheckInstrument,
    DumpIR,
    PassCheckError,
    PassInstrument,
    PassTimingInstrument,
    PrintIR,
)
from relay.passes.manager import (
    FunctionPass,
    ModulePass,
    Pass,
    PassContext,
    PassInfo,
    Sequential,
    function_pass,
    module_pass,
    register_pass,
    registered_passes,
    resolve_pass,
)

register_pass("InferType", InferType)

__all__ = [
    "CheckInstrument",
    "DumpIR",
    "FunctionPass",
    "InferType",
    "ModulePass",
    "Pass",
    "PassCheckError",
    "PassContext",
    "PassInfo",
    "PassInstrument",
    "PassTimingInstrument",
    "PrintIR",
    "Sequential",
    "function_pass",
    "module_pass",
    "register_pass",
    "registered_passes",
    "resolve_pass",
]
