"""Inspect entry point (`[project.entry-points.inspect_ai]`): registers trustmh's tasks and model providers."""

from trustmh.models import gguf as _gguf  # noqa: F401  (registers the `gguf` provider)
from trustmh.models import http as _http  # noqa: F401  (registers the `http` provider: a product's own API)
from trustmh.pillars.conversation import keyword_product as _keyword  # noqa: F401  (`trustmh`: trustmh/keyword)
from trustmh.run.registry import TASKS as _TASKS  # noqa: F401  (registers one @task per sub-task)
