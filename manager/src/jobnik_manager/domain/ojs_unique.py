"""The Open Job Spec's unique jobs, as rules: which of a job's dimensions make its
fingerprint (its type always), the fingerprint itself (SHA-256 of canonical JSON: keys
sorted, compact, strings in NFC), and whether an existing job in a given state is a
duplicate. Our unique-key rows (services/unique_jobs.py) hold the fingerprint. Pure."""

from __future__ import annotations

import hashlib
import json
import unicodedata
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import Any

from .ojs import State

DIMENSIONS = frozenset({"type", "queue", "args", "meta"})
DEFAULT_STATES = frozenset(
    {State.AVAILABLE, State.ACTIVE, State.SCHEDULED, State.RETRYABLE, State.PENDING}
)


class OnConflict(StrEnum):
    REJECT = "reject"  # 409 duplicate
    IGNORE = "ignore"  # 200, the existing job
    REPLACE = "replace"  # the existing one cancelled, the new one made
    REPLACE_EXCEPT_SCHEDULE = "replace_except_schedule"  # ... at the existing one's time


@dataclass(frozen=True, slots=True)
class UniquePolicy:
    keys: frozenset[str]
    args_keys: tuple[str, ...] | None
    meta_keys: tuple[str, ...]
    period: timedelta | None
    states: frozenset[State]
    on_conflict: OnConflict

    def fingerprint(self, kind: str, queue: str, args: list[Any], meta: dict[str, Any]) -> str:
        """The job's uniqueness key: its type, and the dimensions the policy names."""
        picked: dict[str, Any] = {"type": kind}
        if "queue" in self.keys:
            picked["queue"] = queue
        if "args" in self.keys:
            picked["args"] = args if self.args_keys is None else _only(args, self.args_keys)
        if "meta" in self.keys:
            picked["meta"] = {k: meta.get(k) for k in self.meta_keys}
        canonical = json.dumps(_nfc(picked), sort_keys=True, separators=(",", ":"))
        return "ojs:" + hashlib.sha256(canonical.encode()).hexdigest()

    def is_duplicate(self, state: State) -> bool:
        """An existing job with the fingerprint, in `state` (within the period, if any)."""
        return state in self.states


def _only(args: list[Any], keys: tuple[str, ...]) -> list[Any]:
    """The args' objects narrowed to `keys` (other values as they are)."""
    return [{k: a[k] for k in keys if k in a} if isinstance(a, dict) else a for a in args]


def missing_args_keys(args: list[Any], keys: tuple[str, ...]) -> list[str]:
    """The `args_keys` that no object of the args holds."""
    held = {k for a in args if isinstance(a, dict) for k in a}
    return [k for k in keys if k not in held]


def _nfc(value: Any) -> Any:
    if isinstance(value, str):
        return unicodedata.normalize("NFC", value)
    if isinstance(value, dict):
        return {_nfc(k): _nfc(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nfc(v) for v in value]
    return value
