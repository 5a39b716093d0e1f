"""Analyses of expressions and modules: variables, globals and well-formedness.

``free_vars``, ``bound_vars``, ``all_vars`` and ``global_vars`` are those of
:mod:`relay.ir.analysis`; ``well_formed`` and ``check_well_formed`` check that
every variable is bound once and used in scope and that globals and
constructors exist (see :mod:`relay.analysis.well_formed`).
"""

from relay.analysis.well_formed import check_well_formed, well_formed, well_formed_errors
from relay.ir.analysis import all_vars, bound_vars, free_vars, global_vars

__all__ = [
    "all_vars",
    "bound_vars",
    "check_well_formed",
    "free_vars",
    "global_vars",
    "well_formed",
    "well_formed_errors",
]
