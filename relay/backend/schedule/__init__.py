"""Schedules: how each lowered primitive function's loops run on a target.

:func:`schedule_cpu` picks a schedule by the group's anchor operator (see
:mod:`relay.backend.schedule.cpu`)."""

from relay.backend.schedule.cpu import schedule_cpu

__all__ = ["schedule_cpu"]
