"""Handlers, and how a task's data becomes the handler's first argument."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, TypeAdapter
from pydantic import ValidationError as PydanticValidationError

from ._context import TaskContext
from ._exceptions import NonRetryableError
from ._models import Task

DataT_contra = TypeVar("DataT_contra", contravariant=True)

# What a handler may return: the task's result, or nothing.
HandlerResult = Mapping[str, Any] | BaseModel | None


class Handler(Protocol[DataT_contra]):
    """`async def handle(data, ctx: TaskContext) -> None`, run once per claimed task.

    The annotation of `data` says what it receives: a pydantic model (or any type
    pydantic validates) gets the task's `data` validated into it; `Task` gets the
    whole task; no annotation, `Any` or `dict` gets the raw `data`.

    Returning reports the task COMPLETED; a returned dict (or pydantic model, dumped
    as JSON) is stored as the task's `result`. Raising reports it FAILED, and the
    manager tries it again while attempts remain; NonRetryableError fails it at once,
    RetryLaterError hands it back for later without spending an attempt.
    """

    def __call__(self, data: DataT_contra, ctx: TaskContext, /) -> Awaitable[HandlerResult]: ...


def data_binder(handler: Callable[..., Any], data_model: Any = None) -> Callable[[Task], Any]:
    """The function that turns a claimed task into the handler's first argument.

    Data that does not validate raises NonRetryableError: the same data would fail
    the same way on every attempt.
    """
    target = data_model if data_model is not None else _first_annotation(handler)
    if target is Task:
        return lambda task: task
    if target in (inspect.Parameter.empty, Any, object):
        return lambda task: task.data
    adapter: TypeAdapter[Any] = TypeAdapter(target)
    name = getattr(target, "__name__", repr(target))

    def bind(task: Task) -> Any:
        try:
            return adapter.validate_python(task.data)
        except PydanticValidationError as exc:
            raise NonRetryableError(f"task data is not a valid {name}: {exc}") from exc

    return bind


def _first_annotation(handler: Callable[..., Any]) -> Any:
    try:
        signature = inspect.signature(handler, eval_str=True)
    except (NameError, SyntaxError, TypeError):
        # Another parameter's annotation may name something imported only for type
        # checking; only the first one matters here.
        signature = inspect.signature(handler)
    params = [
        p
        for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
    ]
    if len(params) < 2 and not any(p.kind is p.VAR_POSITIONAL for p in params):
        raise TypeError("a handler takes two positional arguments: (data, ctx)")
    annotation = params[0].annotation
    if isinstance(annotation, str):
        annotation = _resolve(handler, annotation)
    return annotation


def _resolve(handler: Callable[..., Any], annotation: str) -> Any:
    target: Any = handler.func if isinstance(handler, functools.partial) else handler
    target = inspect.unwrap(target)
    if not inspect.isfunction(target) and not inspect.ismethod(target):
        target = type(target).__call__
    namespace = getattr(target, "__globals__", {})
    try:
        return eval(annotation, namespace)
    except Exception as exc:
        raise TypeError(
            f"cannot resolve the handler's data annotation {annotation!r}; pass data_model="
        ) from exc
