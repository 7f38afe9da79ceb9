"""domain.auth: who may do what to the job, stage or task the facts describe. Here the
rules for a task's user metadata, which is where the SDK's `update_progress` writes a
handler's progress, so the worker that may report a task must be allowed to write it."""

from __future__ import annotations

import pytest

from jobnik_manager.domain.auth import Action, Facts, Principal, Role, allows, needs_facts

A, B = "type-a", "type-b"
ALICES_A_TASK = Facts(True, "alice", frozenset([A]))

ALICE = Principal("alice", Role.PRODUCER)
BOB = Principal("bob", Role.PRODUCER)
ANY_WORKER = Principal("any", Role.WORKER)
A_WORKER = Principal("a-only", Role.WORKER, frozenset([A]))
B_WORKER = Principal("b-only", Role.WORKER, frozenset([B]))
OPERATOR = Principal("ops", Role.OPERATOR)
ADMIN = Principal("root", Role.ADMIN)

RULES = [
    # (who, action, allowed on alice's task of type A)
    (ALICE, Action.ANNOTATE, True),
    (BOB, Action.ANNOTATE, False),
    (ANY_WORKER, Action.ANNOTATE, True),
    (A_WORKER, Action.ANNOTATE, True),
    (B_WORKER, Action.ANNOTATE, False),
    (OPERATOR, Action.ANNOTATE, False),
    (ADMIN, Action.ANNOTATE, True),
    # A job's or stage's user metadata and priority stay the owner's.
    (ANY_WORKER, Action.EDIT, False),
    (A_WORKER, Action.EDIT, False),
    (ALICE, Action.EDIT, True),
    (BOB, Action.EDIT, False),
]


@pytest.mark.parametrize(("who", "action", "allowed"), RULES)
def test_who_may_write_a_tasks_user_metadata(who: Principal, action: Action, allowed: bool) -> None:
    assert allows(who, action, ALICES_A_TASK) is allowed


@pytest.mark.parametrize(
    ("who", "needed"),
    [(ALICE, True), (A_WORKER, True), (ANY_WORKER, False), (ADMIN, False), (OPERATOR, False)],
)
def test_the_task_is_looked_up_only_when_the_rule_depends_on_it(
    who: Principal, needed: bool
) -> None:
    assert needs_facts(who, Action.ANNOTATE) is needed
