"""The flags module reads RELAY_* variables and can be overridden in tests."""

from __future__ import annotations

import pytest

from relay import flags


def test_from_env(monkeypatch):
    monkeypatch.setenv("RELAY_DEBUG", "3")
    monkeypatch.setenv("RELAY_DUMP_IR", "stderr")
    monkeypatch.setenv("RELAY_CHECKS", "1")
    f = flags.Flags.from_env()
    assert (f.debug, f.dump_ir, f.checks) == (3, "stderr", True)


def test_bad_integer_falls_back_to_default(monkeypatch):
    monkeypatch.setenv("RELAY_DEBUG", "lots")
    assert flags.Flags.from_env().debug == 0


def test_override_is_scoped():
    before = flags.get()
    with flags.override(debug=4, checks=True) as f:
        assert flags.get() is f
        assert (f.debug, f.checks) == (4, True)
    assert flags.get() is before


def test_override_rejects_unknown_flags():
    with pytest.raises(TypeError, match="unknown relay flag"), flags.override(verbose=1):
        pass


def test_debug_print_respects_level(capsys):
    with flags.override(debug=2):
        flags.debug_print(2, "shown")
        flags.debug_print(3, "hidden")
    assert capsys.readouterr().err == "[relay] shown\n"
