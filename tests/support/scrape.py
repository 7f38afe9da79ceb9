"""A Prometheus text scrape, read back: sample values by name and labels."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families


class Scrape:
    def __init__(self, text: str) -> None:
        self.samples: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                key = (sample.name, frozenset(sample.labels.items()))
                self.samples[key] = self.samples.get(key, 0.0) + sample.value

    def value(self, name: str, **labels: str) -> float:
        """The sum of the samples named `name` whose labels include `labels` (0 when none)."""
        wanted = set(labels.items())
        return sum(v for (n, ls), v in self.samples.items() if n == name and wanted <= ls)

    def names(self) -> set[str]:
        return {name for name, _ in self.samples}
