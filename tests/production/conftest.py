"""The deployments the tests of this folder run against: the production profile and the
minimal one, each started once per module."""

from __future__ import annotations

from ..support.profiles import running

__all__ = ["running"]
