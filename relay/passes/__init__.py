"""Passes over modules: the pass manager, instruments, and the standard passes.

See docs/passes.md for the passes and docs/writing-passes.md for writing one.
"""

from relay.passes.alter_layout import AlterProductLayout
from relay.passes.common_subexpr import EliminateCommonSubexpr, eliminate_common_subexpr
from relay.passes.constant_fold import FoldConstant, fold_constant
from relay.passes.dead_code import DeadCodeElimination, dead_code_elimination
from relay.passes.defunctionalize import Defunctionalization, defunctionalize
from relay.passes.eta_expand import EtaExpand, eta_expand
from relay.passes.forward_ad import jvp
from relay.passes.fuse_ops import FuseOps, fuse_ops
from relay.passes.gradient import Gradient, gradient
from relay.passes.infer_type import InferType
from relay.passes.inline import Inline, inline
from relay.passes.inline_local import InlineLocalFunctions, inline_local_functions
from relay.passes.instruments import (
    CheckInstrument,
    DumpIR,
    PassCheckError,
    PassInstrument,
    PassTimingInstrument,
    PrintIR,
)
from relay.passes.lambda_lift import LambdaLift, lambda_lift
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
from relay.passes.normal_form import (
    ToANormalForm,
    ToBasicBlockNormalForm,
    ToGraphNormalForm,
    is_a_normal_form,
    is_basic_block_normal_form,
    to_a_normal_form,
    to_basic_block_normal_form,
    to_graph_normal_form,
)
from relay.passes.partial_eval import PartialEvaluate, partial_evaluate
from relay.passes.pattern import (
    DFPattern,
    DFPatternCallback,
    is_constant,
    is_expr,
    is_if,
    is_let,
    is_op,
    is_tuple,
    is_tuple_get_item,
    is_var,
    rewrite,
    rewrite_module,
    rule,
    wildcard,
)
from relay.passes.pipeline import standard_pipeline
from relay.passes.remove_unused import RemoveUnusedFunctions, remove_unused_functions
from relay.passes.simplify import CanonicalizeOps, DivToMul, SimplifyExpr, SimplifyInference

for _factory in (
    InferType,
    SimplifyExpr,
    SimplifyInference,
    CanonicalizeOps,
    DivToMul,
    Inline,
    LambdaLift,
    Defunctionalization,
    RemoveUnusedFunctions,
    DeadCodeElimination,
    ToANormalForm,
    ToGraphNormalForm,
    ToBasicBlockNormalForm,
    EtaExpand,
    InlineLocalFunctions,
    PartialEvaluate,
    EliminateCommonSubexpr,
    FoldConstant,
    FuseOps,
    Gradient,
    AlterProductLayout,
):
    register_pass(_factory.__name__, _factory)
del _factory

__all__ = [
    "AlterProductLayout",
    "CanonicalizeOps",
    "CheckInstrument",
    "DFPattern",
    "DFPatternCallback",
    "DeadCodeElimination",
    "Defunctionalization",
    "DivToMul",
    "DumpIR",
    "EliminateCommonSubexpr",
    "EtaExpand",
    "FoldConstant",
    "FunctionPass",
    "FuseOps",
    "Gradient",
    "InferType",
    "Inline",
    "InlineLocalFunctions",
    "LambdaLift",
    "ModulePass",
    "PartialEvaluate",
    "Pass",
    "PassCheckError",
    "PassContext",
    "PassInfo",
    "PassInstrument",
    "PassTimingInstrument",
    "PrintIR",
    "RemoveUnusedFunctions",
    "Sequential",
    "SimplifyExpr",
    "SimplifyInference",
    "ToANormalForm",
    "ToBasicBlockNormalForm",
    "ToGraphNormalForm",
    "dead_code_elimination",
    "defunctionalize",
    "eliminate_common_subexpr",
    "eta_expand",
    "fold_constant",
    "function_pass",
    "fuse_ops",
    "gradient",
    "inline",
    "inline_local_functions",
    "is_a_normal_form",
    "is_basic_block_normal_form",
    "is_constant",
    "is_expr",
    "is_if",
    "is_let",
    "is_op",
    "is_tuple",
    "is_tuple_get_item",
    "is_var",
    "jvp",
    "lambda_lift",
    "module_pass",
    "partial_evaluate",
    "register_pass",
    "registered_passes",
    "remove_unused_functions",
    "resolve_pass",
    "rewrite",
    "rewrite_module",
    "rule",
    "standard_pipeline",
    "to_a_normal_form",
    "to_basic_block_normal_form",
    "to_graph_normal_form",
    "wildcard",
]
