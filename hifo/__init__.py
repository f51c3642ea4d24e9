"""hifo: LLM-driven automated heuristic design (a Hindsight-Foresight agent with sandboxed evaluators).

The installed distribution has one import name, ``hifo``; the repository keeps its folders at the
root and ``pyproject.toml`` maps them: ``hifo.agents`` (the search, CLI, model clients),
``hifo.evaluators`` (fitness functions and the plug-in contract), ``hifo.problems`` (the
algorithms, usable on their own), ``hifo.sandbox`` (running untrusted code) and
``hifo.knowledge_base`` (the persistent store of design principles).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("hifo")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
