"""Jobnik-compatible job manager: jobs made of ordered stages made of tasks."""

__version__ = "0.1.0"
