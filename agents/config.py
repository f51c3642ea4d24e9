"""Run configuration: a pydantic model filled from an optional TOML file and CLI flags
(flags win). Saved as ``config.json`` in the run directory so ``hifo resume`` and
``hifo show`` know exactly what ran."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


# the embedded 270M model at 1.0 writes mostly invalid code (issue 12); see README "The embedded model"
LOCAL_TEMPERATURE = 0.7


def default_runs_dir() -> Path:
    return Path(os.environ.get("HIFO_RUNS", "runs"))


def runs_index_path() -> Path:
    """Where ``hifo run`` notes every run directory it makes, so ``hifo runs`` also finds runs made with
    ``--run-dir`` elsewhere: ``$HIFO_RUNS_INDEX``, else ``$XDG_DATA_HOME/hifo/runs.index`` (beside the
    default knowledge base)."""
    explicit = os.environ.get("HIFO_RUNS_INDEX")
    if explicit:
        return Path(explicit).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home).expanduser() / "hifo" / "runs.index"


def note_run_dir(run_dir: Path) -> str | None:
    """Add ``run_dir`` (absolute) to the runs index; returns why not when the index cannot be written (the run
    goes on: the index only helps ``hifo runs`` find it)."""
    index = runs_index_path()
    line = str(Path(run_dir).resolve())
    try:
        index.parent.mkdir(parents=True, exist_ok=True)
        known = index.read_text(encoding="utf-8").splitlines() if index.exists() else []
        if line not in known:
            with index.open("a", encoding="utf-8") as f:  # one short append: safe beside other runs
                f.write(line + "\n")
    except OSError as exc:
        return f"the runs index {index} cannot be written ({exc.strerror}); `hifo runs --root` still finds this run"
    return None


def indexed_run_dirs() -> list[Path]:
    """Run directories in the runs index that still exist, in the order they were made."""
    index = runs_index_path()
    try:
        lines = index.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    seen: dict[str, Path] = {}
    for line in lines:
        p = Path(line.strip())
        if line.strip() and line.strip() not in seen and ((p / "run.sqlite").exists() or (p / "config.json").exists()):
            seen[line.strip()] = p
    return list(seen.values())


class RunConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    problem: str
    model: str = Field(default_factory=lambda: os.environ.get("HIFO_MODEL", "local"))
    generations: int = Field(4, ge=0, le=10_000)
    population: int = Field(6, ge=1, le=1000, description="mu: survivors kept per generation")
    offspring: int | None = Field(None, ge=1, le=1000, description="LLM offspring per generation (default: population)")
    init_samples: int | None = Field(None, ge=0, description="LLM samples for the initial population (default: population)")
    hyper_lambda: int = Field(4, ge=0, le=100, description="constant-tuning variants per generation at full weight")
    max_evaluations: int | None = Field(None, ge=1)
    max_cost: float | None = Field(None, ge=0)
    max_calls: int | None = Field(None, ge=1)
    max_wall_s: float | None = Field(None, gt=0)
    target: float | None = Field(None, description="stop once the best reaches this value of the primary metric")
    patience: int | None = Field(None, ge=1, description="stop after this many generations without a new best")
    seed: int = 0
    temperature: float = Field(1.0, ge=0, le=2, description="sampling temperature; when not set, "
                               f"{LOCAL_TEMPERATURE} for the embedded model (local / local:*), the recorded one for "
                               "replay:PATH, 1.0 for others")
    max_tokens: int = Field(384, ge=16, le=8192)
    train_set: str | None = None
    test_set: str | None = None
    workers: int = Field(default_factory=lambda: os.cpu_count() or 1, ge=1)
    recall_k: int = Field(5, ge=0, le=50)
    cross_problem: bool = True
    distill: bool = True
    repair: bool = Field(True, description="error feedback: a reply whose code fails a static check goes back to "
                                           "the model once, with its error, within the call budget")
    novelty_redraws: int = Field(2, ge=0, le=10, description="a reply whose normalised code equals an earlier "
                                 "candidate's is not evaluated; its prompt is asked again (new seed, hotter) up to "
                                 "this many times; every re-draw is a model call within --max-calls")
    redraw_feedback: bool = Field(False, description="a re-draw shows the model the reply that repeated an earlier "
                                  "candidate and why it is not new (agents/repair_loop.py, redraw_messages) instead "
                                  "of asking the same prompt again; off by default until the discovery benchmark "
                                  "shows it helps (docs/models.md)")
    probe_novelty: bool = Field(False, description="novelty by behaviour as well as by code: before a new candidate "
                                "is evaluated it runs on the evaluator's probe instances (when it declares them); one "
                                "whose solutions there equal an earlier candidate's is a duplicate and re-drawn "
                                "like one (agents/probe.py). A probe has a time limit, so its verdict can depend on "
                                "load: a recording run writes each verdict into its cassette and the replay uses it. "
                                "Off by default until the discovery benchmark shows it helps the embedded model "
                                "(docs/models.md). Duplicates by normalised code are rejected either way")
    grammar: bool = Field(True, description="constrain the embedded model (local / local:*) to the evaluator's "
                                            "slot grammar, when it declares one (agents/llm/grammar.py); other "
                                            "models are never constrained")
    foresight: bool = Field(True, description="off: no regime or directive in the prompts, fixed operator weights "
                                              "(the ablation of benchmarks/discovery.py)")
    operators: list[Literal["e1", "e2", "m1", "m2", "m3"]] | None = Field(
        None, description="only these evolution operators, drawn uniformly (EoH mode of benchmarks/discovery.py: "
                          "e1 e2 m1 m2); default: all, weighted by the foresight regime")
    selection: Literal["hifo", "eoh"] = Field(
        "hifo", description="survivors and parents: hifo = best first, behavioural clones demoted to leftover slots, "
                            "parents without replacement with p(rank r) ~ 1/(r + n); eoh = EoH's pop_greedy (equal "
                            "objectives dropped) and prob_rank parents, see hifo.agents.eoh_selection")
    model_principles: Literal["auto", "on", "off"] = Field(
        "auto", description="model-written principles: auto = on for chat models, off for base models")
    recall_min_utility: float = Field(-0.25, ge=-1, le=1, description="hide principles below this utility "
                                      "once credited 5 times")
    kb: str | None = None
    run_dir: str | None = None
    record: str | None = Field(None, description="write a replay cassette of every model call here")
    isolation: Literal["strict", "standard", "minimal"] = "standard"
    executor: Literal["local", "ray"] = "local"
    address: str | None = Field(None, description="Ray cluster address (with executor='ray')")
    llm_cache: bool = True

    @field_validator("problem")
    @classmethod
    def _problem(cls, v: str) -> str:
        path, sep, attr = v.rpartition(":")
        if sep and path.endswith(".py") and attr.isidentifier():
            return v  # a plug-in evaluator given as path/to/file.py:Class
        if not v or not v.replace("_", "").replace("-", "").isalnum():
            raise ValueError(f"invalid problem name {v!r} (a registered name, or path/to/file.py:Class)")
        return v

    @model_validator(mode="after")
    def _model_temperature(self) -> "RunConfig":
        if "temperature" not in self.model_fields_set and (self.model == "local" or self.model.startswith("local:")):
            self.temperature = LOCAL_TEMPERATURE  # set explicitly in config.json, so a resume keeps it
        elif "temperature" not in self.model_fields_set and self.model.startswith("replay:"):
            from hifo.agents.llm.replay import recorded_temperature

            recorded = recorded_temperature(Path(self.model[len("replay:"):]).expanduser())
            if recorded is not None:  # replay with the sampling settings the cassette was recorded with
                self.temperature = recorded
        return self

    @property
    def n_offspring(self) -> int:
        return self.offspring or self.population

    @property
    def n_init(self) -> int:
        return self.population if self.init_samples is None else self.init_samples


def load_config(path: str | Path | None, overrides: dict[str, Any]) -> RunConfig:
    data: dict[str, Any] = {}
    if path is not None:
        p = Path(path)
        if not p.exists():
            raise FileNotFoundError(f"config file {p} does not exist")
        with p.open("rb") as fh:
            data = tomllib.load(fh)
        data = data.get("run", data)
    data.update({k: v for k, v in overrides.items() if v is not None})
    return RunConfig(**data)


# settings whose command-line flag is not simply --the-field-name
_FLAGS = {"max_wall_s": "--max-wall", "distill": "--no-distill", "llm_cache": "--no-cache",
          "repair": "--repair/--no-repair"}
_CLI_FIELDS = {"problem", "model", "generations", "population", "offspring", "max_evaluations", "max_cost",
               "max_calls", "max_wall_s", "run_dir", "kb", "seed", "train_set", "test_set", "workers", "record",
               "distill", "model_principles", "isolation", "executor", "address", "llm_cache", "target",
               "patience", "repair"}


def flag_name(field: str) -> str:
    """How a user sets ``field``: its flag, or the key in the ``--config`` file for TOML-only settings."""
    if field in _CLI_FIELDS:
        return _FLAGS.get(field, "--" + field.replace("_", "-"))
    return f"'{field}' (in the --config file)"


def explain_validation_error(exc: Any) -> str:
    """A pydantic ``ValidationError`` as one line that names flags, not model fields, with a
    "did you mean" for a misspelt key in the TOML file."""
    import difflib

    parts = []
    for e in exc.errors():
        field = str(e["loc"][0]) if e.get("loc") else ""
        if e.get("type") == "extra_forbidden":
            close = difflib.get_close_matches(field, list(RunConfig.model_fields), n=1)
            parts.append(f"unknown setting {field!r} in the --config file"
                         + (f"; did you mean {close[0]!r}?" if close else ""))
            continue
        msg = str(e.get("msg", "invalid")).removeprefix("Value error, ")
        value = e.get("input")
        shown = f" (got {value!r})" if value is not None and not isinstance(value, dict) else ""
        parts.append(f"{flag_name(field) if field else 'settings'}: {msg}{shown}")
    return "; ".join(parts)
