"""A rating system's configuration: the system and its parameters from a preset, a YAML file or a bare system name."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from pipeline.rules.model import load_yaml, names_a_file, parse_override
from pipeline.systems import RatingSystem, SystemParams, get_system, system_names

#: The systems' YAML presets (pipeline/systems/presets/; the rule sets' are pipeline.rules.model.PRESET_PACKAGE).
PRESET_PACKAGE = "pipeline.systems.presets"
#: `ratings evaluate`'s initial rating when neither `--init` nor the document sets one (its protocol's, PlayerRatings'
#: too); everywhere else a system starts unrated players at its own `init_rating` (docs/systems.md).
DEFAULT_INIT = 2200.0


@dataclass(frozen=True)
class SystemRules:
    """A system with its parameters, under the name the user gave (preset, file or system)."""

    name: str
    system: RatingSystem
    params: SystemParams

    def settings(self) -> dict[str, Any]:
        return self.params.model_dump(by_alias=True)


def system_preset_names() -> list[str]:
    """The systems' presets (`--rules NAME` of `ratings evaluate`), by name."""
    return sorted(
        p.name[: -len(".yaml")] for p in resources.files(PRESET_PACKAGE).iterdir() if p.name.endswith(".yaml")
    )


def rules_document(name_or_path: str) -> dict[str, Any]:
    """{'system': ..., parameters...} from a YAML file, a preset, or a bare system name (its defaults)."""
    path = Path(name_or_path)
    # As for a rule set: a file in the current directory named like a preset never stands in for it.
    if names_a_file(name_or_path):
        if not path.is_file():
            raise ValueError(f"rules file not found: {name_or_path}")
        text, origin = path.read_text(encoding="utf-8"), str(path)
    elif (resources.files(PRESET_PACKAGE) / f"{name_or_path}.yaml").is_file():
        text, origin = (
            (resources.files(PRESET_PACKAGE) / f"{name_or_path}.yaml").read_text(encoding="utf-8"),
            f"preset {name_or_path}",
        )
    else:
        if Path(name_or_path).is_file() and name_or_path not in system_names():
            raise ValueError(
                f"unknown rating system {name_or_path!r} (a file {name_or_path!r} is in the current folder: a name "
                f"without .yaml and without a folder names a preset or a system; write ./{name_or_path}); systems: "
                f"{', '.join(system_names())}"
            )
        get_system(name_or_path)  # raises, naming the systems, when it is none
        return {"system": name_or_path, "name": name_or_path}
    try:
        document = load_yaml(text) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"{origin}: not valid YAML: {exc}") from None
    if not isinstance(document, dict) or "system" not in document:
        raise ValueError(
            f"{origin}: expected a mapping with 'system: NAME' ({', '.join(system_names())}) and its parameters"
        )
    document.setdefault("name", path.stem if origin == str(path) else name_or_path)
    return document


def load_system_rules(
    name_or_path: str,
    overrides: list[str] | tuple[str, ...] = (),
    init: float | None = None,
    values: dict[str, Any] | None = None,
    default_init: float | None = None,
) -> SystemRules:
    """The system and parameters of `--rules`, then `--init`, then `--set key=value` overrides, then `values` (a grid
    point).

    Everybody starts at `init` when given; otherwise at the document's `init_rating`, else at `default_init` when
    given (`ratings evaluate`'s DEFAULT_INIT), else at the system's own `init_rating`, as a scenario's `system:`.
    """
    document = copy.deepcopy(rules_document(name_or_path))
    system = get_system(str(document["system"]))
    name = str(document["name"])
    return SystemRules(name, system, system_params(document, system.params, overrides, init, values, default_init))


P = TypeVar("P", bound=BaseModel)


def system_params(
    document: dict[str, Any],
    model: type[P],
    overrides: list[str] | tuple[str, ...] = (),
    init: float | None = None,
    values: dict[str, Any] | None = None,
    default_init: float | None = None,
) -> P:
    """A system's parameters (`model`) from its document's settings (all but system, name, description and source),
    then `--init` (else the document's `init_rating`, else `default_init`, else the model's own), then
    `--set key=value` (flat names), then `values` (a grid point); ValueError naming the document, the problems and
    the known parameters.
    """
    settings = {k: v for k, v in document.items() if k not in ("system", "name", "description", "source")}
    if init is not None:
        settings["init_rating"] = init
    if default_init is not None:
        settings.setdefault("init_rating", default_init)
    for assignment in overrides:
        path, value = parse_override(assignment)
        if len(path) != 1:
            raise ValueError(f"--set {assignment!r}: system parameters are flat names, e.g. c=15")
        settings[path[0]] = value
    settings.update(values or {})
    try:
        return model.model_validate(settings)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc']) or '(top)'}: {err['msg']}" for err in exc.errors())
        known = ", ".join(sorted(f.alias or n for n, f in model.model_fields.items()))
        raise ValueError(
            f"{document['name']}: invalid {document['system']} parameters: {problems} (parameters: {known})"
        ) from None
