"""A small PromQL parser for the expressions of deploy/grafana and deploy/prometheus.

No PromQL library is among the project's dependencies, and a regular expression that
only picks out metric names would pass a typo in a function, an unbalanced bracket or
`rate()` of an instant vector, all of which Prometheus refuses. This parser covers the
language those files use (selectors, ranges, subqueries, offsets, functions,
aggregations, binary operators with bool, on/ignoring and group_left/right) and checks
the argument types of the functions it knows, as Prometheus's own parser does. Grafana's
interval variables ($__rate_interval and the like) are read as durations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

SCALAR, VECTOR, MATRIX, STRING = "scalar", "instant vector", "range vector", "string"

# Functions of one range vector, and of one instant vector element by element.
RANGE_FUNCTIONS = """rate irate increase delta idelta deriv changes resets avg_over_time
min_over_time max_over_time sum_over_time count_over_time last_over_time stddev_over_time
stdvar_over_time present_over_time absent_over_time"""
ELEMENTWISE_FUNCTIONS = "abs ceil floor exp ln log2 log10 sqrt sgn timestamp absent sort sort_desc"

# name: (argument types, how many of the last ones may be left out, result type)
FUNCTIONS: dict[str, tuple[tuple[str, ...], int, str]] = {
    **{f: ((MATRIX,), 0, VECTOR) for f in RANGE_FUNCTIONS.split()},
    **{f: ((VECTOR,), 0, VECTOR) for f in ELEMENTWISE_FUNCTIONS.split()},
    "quantile_over_time": ((SCALAR, MATRIX), 0, VECTOR),
    "predict_linear": ((MATRIX, SCALAR), 0, VECTOR),
    "histogram_quantile": ((SCALAR, VECTOR), 0, VECTOR),
    "clamp": ((VECTOR, SCALAR, SCALAR), 0, VECTOR),
    "clamp_min": ((VECTOR, SCALAR), 0, VECTOR),
    "clamp_max": ((VECTOR, SCALAR), 0, VECTOR),
    "round": ((VECTOR, SCALAR), 1, VECTOR),
    "label_replace": ((VECTOR, STRING, STRING, STRING, STRING), 0, VECTOR),
    "scalar": ((VECTOR,), 0, SCALAR),
    "vector": ((SCALAR,), 0, VECTOR),
    "time": ((), 0, SCALAR),
}
AGGREGATIONS: dict[str, str | None] = {
    **dict.fromkeys(["sum", "min", "max", "avg", "count", "group", "stddev", "stdvar"]),
    "topk": SCALAR,
    "bottomk": SCALAR,
    "quantile": SCALAR,
    "count_values": STRING,
}
# Binary operators by precedence, lowest first; ^ binds right to left.
PRECEDENCE: tuple[tuple[str, ...], ...] = (
    ("or",),
    ("and", "unless"),
    ("==", "!=", "<=", ">=", "<", ">"),
    ("+", "-"),
    ("*", "/", "%", "atan2"),
    ("^",),
)
COMPARISONS = PRECEDENCE[2]
SET_OPERATORS = ("and", "or", "unless")

# Grafana's built-in interval variables, given a value of their kind.
GRAFANA_INTERVALS = re.compile(r"\$(?:__rate_interval|__interval|__range)\b|\$\{__\w+\}")

DURATION = r"(?:\d+(?:ms|s|m|h|d|w|y))+"
TOKEN = re.compile(
    rf"""\s*(?:
      (?P<duration>{DURATION})(?![\w.])
    | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|0x[0-9a-fA-F]+|Inf|NaN)(?![\w.])
    | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
    | (?P<ident>[a-zA-Z_][a-zA-Z0-9_:]*)
    | (?P<op>=~|!~|==|!=|<=|>=|[-+*/%^<>=,(){{}}\[\]:@])
    )""",
    re.X,
)


class PromQLError(ValueError):
    pass


@dataclass
class Parsed:
    type: str
    # Each selector's metric name with the function or aggregation it is the direct
    # argument of ("" at the top or under an operator).
    selectors: list[tuple[str, str]] = field(default_factory=list)
    # Each aggregation's `by` labels; None for `without`, which keeps unknown labels.
    groupings: list[frozenset[str] | None] = field(default_factory=list)

    @property
    def metrics(self) -> set[str]:
        return {name for name, _ in self.selectors}


def tokenize(text: str) -> list[tuple[str, str]]:
    tokens, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        match = TOKEN.match(text, pos)
        if not match or match.end() == pos:
            raise PromQLError(f"cannot read {text[pos : pos + 20]!r}")
        kind = match.lastgroup
        assert kind is not None
        tokens.append((kind, match.group(kind)))
        pos = match.end()
    return tokens


class Parser:
    def __init__(self, text: str) -> None:
        self.tokens = tokenize(GRAFANA_INTERVALS.sub("5m", text))
        self.pos = 0
        self.selectors: list[tuple[str, str]] = []
        self.groupings: list[frozenset[str] | None] = []
        # The functions and aggregations being read, innermost last; None for brackets
        # and operators, whose operands are no function's direct arguments.
        self.within: list[str | None] = []

    def peek(self, offset: int = 0) -> tuple[str, str]:
        at = self.pos + offset
        return self.tokens[at] if at < len(self.tokens) else ("end", "")

    def take(self, value: str | None = None, kind: str | None = None) -> str:
        got_kind, got = self.peek()
        if (value is not None and got != value) or (kind is not None and got_kind != kind):
            raise PromQLError(f"expected {value or kind}, found {got or 'the end'!r}")
        self.pos += 1
        return got

    def at(self, *values: str) -> bool:
        return self.peek()[1] in values and self.peek()[0] in ("op", "ident")

    def parse(self) -> Parsed:
        result = self.expression(0)
        if self.peek()[0] != "end":
            raise PromQLError(f"unexpected {self.peek()[1]!r}")
        return Parsed(result, self.selectors, self.groupings)

    def expression(self, level: int) -> str:
        if level == len(PRECEDENCE):
            return self.unary()
        left = self.expression(level + 1)
        while self.at(*PRECEDENCE[level]):
            op = self.take()
            is_bool = self.at("bool") and op in COMPARISONS
            if is_bool:
                self.take()
            matching = self.vector_matching()
            # ^ is right-associative: its right side may hold another ^.
            self.within.append(None)
            right = self.expression(level if op == "^" else level + 1)
            self.within.pop()
            left = self.binary_type(op, left, right, is_bool, matching)
        return left

    def vector_matching(self) -> bool:
        matching = False
        if self.at("on", "ignoring"):
            self.take()
            self.label_list()
            matching = True
        if self.at("group_left", "group_right"):
            self.take()
            if self.at("("):
                self.label_list()
            matching = True
        return matching

    @staticmethod
    def binary_type(op: str, left: str, right: str, is_bool: bool, matching: bool) -> str:
        if MATRIX in (left, right) or STRING in (left, right):
            raise PromQLError(f"{op} needs scalars or instant vectors, not {left} and {right}")
        if op in SET_OPERATORS and (left, right) != (VECTOR, VECTOR):
            raise PromQLError(f"{op} needs instant vectors on both sides")
        if left == right == SCALAR:
            if op in COMPARISONS and not is_bool:
                raise PromQLError(f"comparing two scalars needs `{op} bool`")
            if matching:
                raise PromQLError("vector matching between two scalars")
            return SCALAR
        return VECTOR

    def unary(self) -> str:
        if self.at("-", "+"):
            self.take()
            operand = self.unary()
            if operand not in (SCALAR, VECTOR):
                raise PromQLError(f"unary minus of a {operand}")
            return operand
        return self.postfix(self.primary())

    def postfix(self, kind: str) -> str:
        if self.at("["):
            self.take()
            self.take(kind="duration")
            if self.at(":"):
                self.take()
                if self.peek()[0] == "duration":
                    self.take()
                if kind != VECTOR:
                    raise PromQLError(f"a subquery of a {kind}")
            elif not self.selector_just_read:
                raise PromQLError("a range needs a plain selector; use a subquery [range:step]")
            self.take("]")
            kind = MATRIX
        if self.at("offset"):
            self.take()
            if self.at("-"):
                self.take()
            self.take(kind="duration")
        self.selector_just_read = False
        return kind

    selector_just_read = False

    def primary(self) -> str:
        kind, value = self.peek()
        if kind == "number":
            self.take()
            return SCALAR
        if kind == "string":
            self.take()
            return STRING
        if value == "(":
            self.take()
            self.within.append(None)
            inner = self.expression(0)
            self.within.pop()
            self.take(")")
            return inner
        if value == "{":
            self.matchers(name=None)
            return VECTOR
        if kind != "ident":
            raise PromQLError(f"unexpected {value or 'end'!r}")
        if value in AGGREGATIONS and self.peek(1)[1] in ("(", "by", "without"):
            return self.aggregation()
        if self.peek(1)[1] == "(":
            return self.call()
        self.take()
        self.selected(value)
        if self.at("{"):
            self.matchers(name=value)
        self.selector_just_read = True
        return VECTOR

    def matchers(self, name: str | None) -> None:
        self.take("{")
        named = name is not None
        while not self.at("}"):
            label = self.take(kind="ident")
            if not self.at("=", "!=", "=~", "!~"):
                raise PromQLError(f"label {label} has no matcher")
            self.take()
            value = self.take(kind="string")
            if label == "__name__":
                named = True
                self.selected(value.strip("\"'`"))
            if not self.at(","):
                break
            self.take(",")
        self.take("}")
        if not named:
            raise PromQLError("a selector without a metric name")
        self.selector_just_read = True

    def selected(self, metric: str) -> None:
        self.selectors.append((metric, (self.within[-1] if self.within else None) or ""))

    def label_list(self) -> frozenset[str]:
        labels = set()
        self.take("(")
        while not self.at(")"):
            labels.add(self.take(kind="ident"))
            if not self.at(","):
                break
            self.take(",")
        self.take(")")
        return frozenset(labels)

    def grouping(self) -> frozenset[str] | None:
        keyword = self.take()
        labels = self.label_list()
        return labels if keyword == "by" else None

    def aggregation(self) -> str:
        name = self.take()
        grouping: frozenset[str] | None = frozenset()
        grouped = self.at("by", "without")
        if grouped:
            grouping = self.grouping()
        self.take("(")
        self.within.append(name)
        parameter = AGGREGATIONS[name]
        if parameter is not None:
            self.expect_type(self.expression(0), parameter, name)
            self.take(",")
        self.expect_type(self.expression(0), VECTOR, name)
        self.within.pop()
        self.take(")")
        if self.at("by", "without"):
            if grouped:
                raise PromQLError(f"{name} grouped twice")
            grouping = self.grouping()
        self.groupings.append(grouping)
        return VECTOR

    def call(self) -> str:
        name = self.take()
        if name not in FUNCTIONS:
            raise PromQLError(f"unknown function {name}()")
        wanted, optional, result = FUNCTIONS[name]
        self.take("(")
        self.within.append(name)
        got: list[str] = []
        while not self.at(")"):
            got.append(self.expression(0))
            if not self.at(","):
                break
            self.take(",")
        self.within.pop()
        self.take(")")
        if not len(wanted) - optional <= len(got) <= len(wanted):
            raise PromQLError(f"{name}() takes {len(wanted)} arguments, given {len(got)}")
        for arg, want in zip(got, wanted, strict=False):
            self.expect_type(arg, want, f"{name}()")
        return result

    @staticmethod
    def expect_type(got: str, want: str, where: str) -> None:
        if got != want:
            raise PromQLError(f"{where} expects {want}, given {got}")


def parse(expr: str) -> Parsed:
    """The expression's type and the metric names it selects; PromQLError if invalid."""
    return Parser(expr).parse()
