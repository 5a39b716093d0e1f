"""The pass manager: pass kinds, decorators, Sequential, PassContext semantics, instruments."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

import relay
from relay.errors import TypeCheckError
from relay.ir import Call, Function, Module, Op
from relay.passes import (
    CheckInstrument,
    DumpIR,
    FunctionPass,
    InferType,
    ModulePass,
    Pass,
    PassCheckError,
    PassContext,
    PassInfo,
    PassInstrument,
    PassTimingInstrument,
    PrintIR,
    Sequential,
    function_pass,
    module_pass,
    registered_passes,
    resolve_pass,
)

SRC = """#[version = "0.0.5"]
def @main(%x: Tensor[(2,), float32]) -> Tensor[(2,), float32] {
  add(%x, %x)
}
"""


def module() -> Module:
    return relay.parse(SRC)


def main_op(mod: Module) -> str:
    body = mod.function("main").body
    assert isinstance(body, Call) and isinstance(body.op, Op)
    return body.op.name


def rename_op(name: str) -> FunctionPass:
    """A pass replacing the operator of main's body (a call) by ``name``."""

    def fn(func: Function, mod: Module, ctx: PassContext) -> Function:
        body = func.body
        assert isinstance(body, Call)
        new = Call(Op.get(name), body.args, body.attrs)
        return Function(func.params, new, func.ret_type, func.type_params, func.attrs)

    return FunctionPass(fn, PassInfo(f"to_{name}", opt_level=1))


class Log(PassInstrument):
    """Records the hooks called, in order."""

    def __init__(self, tag: str, log: list[str], veto: str = "") -> None:
        self.tag, self.log, self.veto = tag, log, veto

    def enter_pass_ctx(self) -> None:
        self.log.append(f"{self.tag}:enter")

    def exit_pass_ctx(self) -> None:
        self.log.append(f"{self.tag}:exit")

    def should_run(self, mod: Module, info: PassInfo) -> bool:
        self.log.append(f"{self.tag}:should_run {info.name}")
        return info.name != self.veto

    def run_before_pass(self, mod: Module, info: PassInfo) -> None:
        self.log.append(f"{self.tag}:before {info.name}")

    def run_after_pass(self, mod: Module, info: PassInfo) -> None:
        self.log.append(f"{self.tag}:after {info.name}")


# ---- pass kinds -------------------------------------------------------------------------------


def test_a_function_pass_builds_a_new_module_and_leaves_its_input_alone() -> None:
    mod = module()
    out = rename_op("multiply")(mod)
    assert out is not mod
    assert main_op(out) == "multiply" and main_op(mod) == "add"
    x = relay.const([1.0, 2.0]).data
    assert relay.interpret(out, x).tolist() == [1.0, 4.0]


def test_a_function_pass_that_changes_nothing_returns_its_input() -> None:
    mod = module()
    assert FunctionPass(lambda f, m, c: f, PassInfo("Same"))(mod) is mod


def test_a_function_pass_skips_primitive_functions() -> None:
    mod = module()
    mod["prim"] = mod.function("main").with_attr("Primitive", 1)
    out = rename_op("subtract")(mod)
    assert main_op(out) == "subtract"
    assert out.function("prim") is mod.function("prim")


def test_a_module_pass_gets_a_copy() -> None:
    mod = module()

    def drop_main(m: Module, ctx: PassContext) -> Module:
        m.remove("main")
        return m

    out = ModulePass(drop_main, PassInfo("DropMain"))(mod)
    assert "main" in mod and "main" not in out


def test_a_module_pass_that_changes_nothing_returns_its_input() -> None:
    # (then the passes it requires need not run again after it)
    mod = module()
    assert ModulePass(lambda m, c: m, PassInfo("Same"))(mod) is mod

    def rebuilt(m: Module, ctx: PassContext) -> Module:
        return Module(dict(m.functions), dict(m.type_definitions))

    assert ModulePass(rebuilt, PassInfo("Rebuilt"))(mod) is mod

    def renamed(m: Module, ctx: PassContext) -> Module:
        m["other"] = m.function("main")
        m.remove("main")
        return m

    out = ModulePass(renamed, PassInfo("Renamed"))(mod)
    assert out is not mod and "other" in out


def test_type_inference_of_the_functions_it_checked_last_is_not_repeated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import relay.typecheck.checker as checker

    checked: list[Module] = []
    check_module = checker.check_module

    def counting(m: Module) -> Module:
        checked.append(m)
        return check_module(m)

    monkeypatch.setattr(checker, "check_module", counting)
    mod = module()
    assert InferType()(InferType()(mod)) is mod and len(checked) == 1
    mod["main"] = rename_op("subtract")(mod).function("main")  # (a function changed)
    InferType()(mod)
    assert len(checked) == 2 and main_op(mod) == "subtract"


def test_a_pass_must_return_the_right_kind() -> None:
    bad = ModulePass(lambda m, ctx: None, PassInfo("Bad"))  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError, match="module pass Bad returned NoneType, not a Module"):
        bad(module())
    worse = FunctionPass(lambda f, m, ctx: f.body, PassInfo("Worse"))  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError, match="function pass Worse returned Call for @main"):
        worse(module())
    with pytest.raises(TypeError, match="InferType takes a Module, got Function"):
        InferType()(module().function("main"))  # type: ignore[arg-type]


def test_pass_info_is_validated() -> None:
    with pytest.raises(ValueError, match="opt_level must be a non-negative int, got -1"):
        PassInfo("P", -1)
    with pytest.raises(ValueError, match="a pass needs a name"):
        PassInfo("")
    with pytest.raises(ValueError, match="opt_level must be a non-negative int"):
        PassContext(opt_level=-2)


# ---- decorators -------------------------------------------------------------------------------


def test_function_pass_decorator_on_a_function() -> None:
    @function_pass(opt_level=2)
    def negate_body(func: Function, mod: Module, ctx: PassContext) -> Function:
        body = relay.op.negative(func.body)
        return Function(func.params, body, func.ret_type)

    assert isinstance(negate_body, FunctionPass)
    assert (negate_body.name, negate_body.opt_level, negate_body.required) == (
        "negate_body",
        2,
        (),
    )
    out = negate_body(module())
    assert relay.interpret(out, relay.const([1.0, 2.0]).data).tolist() == [-2.0, -4.0]


def test_bare_decorators_and_names() -> None:
    @module_pass
    def identity(mod: Module, ctx: PassContext) -> Module:
        return mod

    @function_pass(name="Renamed", required=["InferType"])
    def f(func: Function, mod: Module, ctx: PassContext) -> Function:
        return func

    assert isinstance(identity, ModulePass) and identity.name == "identity"
    assert f.name == "Renamed" and f.required == ("InferType",)


def test_decorating_a_class_makes_a_pass_class() -> None:
    @function_pass(opt_level=1)
    class ScaleBody:
        """Multiply each body by a factor."""

        def __init__(self, factor: float) -> None:
            self.factor = factor

        def transform_function(self, func: Function, mod: Module, ctx: PassContext) -> Function:
            body = relay.op.multiply(func.body, relay.const(self.factor))
            return Function(func.params, body, func.ret_type)

    p = ScaleBody(3.0)
    assert isinstance(p, FunctionPass) and isinstance(p, Pass)
    assert p.name == "ScaleBody" and ScaleBody.__doc__ == "Multiply each body by a factor."
    out = p(module())
    assert relay.interpret(out, relay.const([1.0, 2.0]).data).tolist() == [6.0, 12.0]

    with pytest.raises(TypeError, match="needs a method transform_module, and NoMethod has none"):

        @module_pass(opt_level=0)
        class NoMethod:
            pass


def test_module_pass_class() -> None:
    @module_pass(opt_level=0)
    class AddCopy:
        def transform_module(self, mod: Module, ctx: PassContext) -> Module:
            mod["copy"] = mod.function("main")
            return mod

    out = AddCopy()(module())
    assert [gv.name_hint for gv in out.global_vars()] == ["main", "copy"]


# ---- the context ------------------------------------------------------------------------------


def test_sequential_runs_passes_in_order() -> None:
    seq = Sequential([rename_op("subtract"), rename_op("multiply")])
    assert main_op(seq(module())) == "multiply"
    assert repr(seq) == "Sequential([to_subtract, to_multiply])"


def test_opt_level_disabled_and_required() -> None:
    high = FunctionPass(rename_op("multiply").fn, PassInfo("High", opt_level=3))
    seq = Sequential([high])
    assert main_op(seq(module())) == "add"  # the default context is opt_level 2
    with PassContext(opt_level=3):
        assert main_op(seq(module())) == "multiply"
    with PassContext(opt_level=3, disabled_pass=["High"]):
        assert main_op(seq(module())) == "add"
    with PassContext(opt_level=0, required_pass=["High"]):
        assert main_op(seq(module())) == "multiply"
    # a pass called directly always runs
    with PassContext(opt_level=0, disabled_pass=["High"]):
        assert main_op(high(module())) == "multiply"


def test_contexts_nest_and_the_innermost_is_current() -> None:
    outer = PassContext(opt_level=1)
    inner = PassContext(opt_level=3, config={"FoldConstant.max_elements": 10})
    default = PassContext.current()
    assert default.opt_level == 2
    with outer:
        assert PassContext.current() is outer
        with inner as ctx:
            assert ctx is inner and PassContext.current() is inner
            assert ctx.config["FoldConstant.max_elements"] == 10
        assert PassContext.current() is outer
    assert PassContext.current() is default
    assert repr(inner) == "PassContext(opt_level=3, config={'FoldConstant.max_elements': 10})"


def test_required_passes_run_first_unless_just_run() -> None:
    log: list[str] = []
    needs_types = FunctionPass(lambda f, m, c: f, PassInfo("NeedsTypes", 0, ("InferType",)))
    with PassContext(instruments=[Log("a", log)]):
        Sequential([needs_types])(module())
        assert log == [
            "a:enter",
            "a:should_run InferType",
            "a:before InferType",
            "a:after InferType",
            "a:should_run NeedsTypes",
            "a:before NeedsTypes",
            "a:after NeedsTypes",
        ]
        log.clear()
        # InferType returns its input annotated; the second pass finds it already run
        Sequential([InferType(), needs_types])(module())
        assert [e for e in log if "before" in e] == ["a:before InferType", "a:before NeedsTypes"]


def test_unknown_required_pass() -> None:
    p = FunctionPass(lambda f, m, c: f, PassInfo("P", 0, ("NoSuchPass",)))
    with pytest.raises(KeyError, match=r"unknown pass 'NoSuchPass'; the passes are: .*InferType"):
        Sequential([p])(module())


def test_registry() -> None:
    assert "InferType" in registered_passes()
    assert isinstance(resolve_pass("InferType"), InferType)


# ---- instruments ------------------------------------------------------------------------------


def test_instrument_hooks_run_in_order_and_may_veto() -> None:
    log: list[str] = []
    ctx = PassContext(instruments=[Log("a", log), Log("b", log, veto="to_multiply")])
    with ctx:
        out = Sequential([rename_op("subtract"), rename_op("multiply")])(module())
    assert main_op(out) == "subtract"  # b vetoed the second pass
    assert log == [
        "a:enter",
        "b:enter",
        "a:should_run to_subtract",
        "b:should_run to_subtract",
        "a:before to_subtract",
        "b:before to_subtract",
        "a:after to_subtract",
        "b:after to_subtract",
        "a:should_run to_multiply",
        "b:should_run to_multiply",
        "a:exit",
        "b:exit",
    ]


def test_print_ir_before_and_after_selected_passes() -> None:
    buf = io.StringIO()
    printer = PrintIR(before=True, after=True, passes=["to_multiply"], file=buf)
    with PassContext(instruments=[printer]):
        Sequential([rename_op("subtract"), rename_op("multiply")])(module())
    text = buf.getvalue()
    assert text == (
        "// IR before to_multiply\n"
        + SRC.replace("add", "subtract")
        + "// IR after to_multiply\n"
        + SRC.replace("add", "multiply")
    )


def test_pass_timing() -> None:
    timing = PassTimingInstrument()
    assert timing.render() == "no passes ran"
    with PassContext(instruments=[timing]):
        Sequential([rename_op("subtract"), InferType()])(module())
    assert [name for name, _ in timing.timings] == ["to_subtract", "InferType"]
    assert all(secs >= 0 for _, secs in timing.timings)
    lines = timing.render().splitlines()
    assert [line.split()[0] for line in lines] == ["to_subtract", "InferType", "total"]
    assert all(line.endswith(" ms") for line in lines)


def break_types(func: Function, mod: Module, ctx: PassContext) -> Function:
    body = relay.op.add(func.body, relay.const(1, "int32"))
    return Function(func.params, body, func.ret_type)


def test_check_instrument_names_the_pass_that_broke_the_ir() -> None:
    breaker = FunctionPass(break_types, PassInfo("Breaker"))
    with PassContext(instruments=[CheckInstrument()]):
        rename_op("subtract")(module())  # fine
        with pytest.raises(PassCheckError) as info:
            Sequential([rename_op("subtract"), breaker])(module())
    assert info.value.message == (
        "pass Breaker produced an invalid module: add: dtypes differ: "
        "Tensor[(2,), float32] and int32"
    )
    assert isinstance(info.value, relay.CompileError)


def test_check_instrument_rejects_an_invalid_input_and_ill_formed_output() -> None:
    bad = relay.parse(SRC.replace("add(%x, %x)", "add(%x, 1)"))
    with PassContext(instruments=[CheckInstrument()]), pytest.raises(PassCheckError) as info:
        rename_op("subtract")(bad)
    assert info.value.message.startswith("the input of pass to_subtract is not valid: ")

    def rebind(func: Function, mod: Module, ctx: PassContext) -> Function:
        (x,) = func.params
        inner = Function((x,), x)  # x bound twice
        return Function(func.params, Call(inner, (x,)), func.ret_type)

    with PassContext(instruments=[CheckInstrument()]), pytest.raises(PassCheckError) as info:
        FunctionPass(rebind, PassInfo("Rebind"))(module())
    assert info.value.message == (
        "pass Rebind produced an invalid module: variable %x is bound more than once"
    )


def test_relay_checks_flag_turns_checking_on() -> None:
    breaker = FunctionPass(break_types, PassInfo("Breaker"))
    assert main_op(breaker(module())) == "add"  # unchecked: the broken module comes back
    with relay.flags.override(checks=True), pytest.raises(PassCheckError, match="Breaker"):
        breaker(module())


def test_relay_dump_ir_to_a_directory(tmp_path: Path) -> None:
    with relay.flags.override(dump_ir=str(tmp_path / "dump")):
        Sequential([rename_op("subtract"), rename_op("multiply")])(module())
    files = sorted(os.listdir(tmp_path / "dump"))
    assert files == ["000-to_subtract.rly", "001-to_multiply.rly"]
    text = (tmp_path / "dump" / files[1]).read_text()
    assert text == SRC.replace("add", "multiply")


def test_relay_dump_ir_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    with relay.flags.override(dump_ir="stderr"):
        rename_op("subtract")(module())
    assert capsys.readouterr().err == "// IR after to_subtract\n" + SRC.replace("add", "subtract")
    assert repr(DumpIR("stderr")) == "DumpIR('stderr')"


def test_infer_type_pass_errors_are_type_errors() -> None:
    bad = relay.parse(SRC.replace("add(%x, %x)", "add(%x, 1)"))
    with pytest.raises(TypeCheckError, match="dtypes differ"):
        InferType()(bad)
