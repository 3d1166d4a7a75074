"""Reading a platform file (`models:`, issue 12): strict validation, and every model entry
checked as its own single-model scenario would be."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from planner.errors import InputError, unknown_name_message
from planner.inputs.catalog import Catalog
from planner.inputs.loading import read_yaml, validate
from planner.inputs.scenarios import _check_context, _check_ids, _import_model, _looks_like_path

if TYPE_CHECKING:  # issue #16: `planner solve` asks is_platform of every scenario
    from planner.schema.platform import Platform


def is_platform(path: str | Path) -> bool:
    """Does this scenario file list `models:` (a platform) rather than one `model:`?"""
    data: Any = read_yaml(Path(path))
    return isinstance(data, dict) and "models" in data


def load_platform(path: str | Path, catalog: Catalog) -> tuple[Platform, Catalog]:
    """Validate a platform file; its name defaults to the file's stem. Each model entry is
    checked (ids, context windows, a config.json import) as a scenario of its own."""
    from planner.schema.platform import Platform

    path = Path(path)
    platform = validate(read_yaml(path), Platform, path)
    if platform.name is None:
        platform = platform.model_copy(update={"name": path.stem})
    services = list(platform.models)
    for i in range(len(services)):
        where = f"{path}: models[{i}]"
        sub = platform.service_scenario(i)
        if sub.model not in catalog.models:
            if not _looks_like_path(sub.model):
                known = catalog.models
                raise InputError(
                    f"{where}.model: " + unknown_name_message("model", sub.model, known)
                )
            sub, catalog = _import_model(sub, path, catalog)
            services[i] = services[i].model_copy(update={"model": sub.model})
        try:
            _check_ids(sub, path, catalog)
            _check_context(sub, path, catalog.models[sub.model])
        except InputError as exc:
            raise InputError(exc.message.replace(f"{path}: ", f"{where}: ", 1)) from None
    return platform.model_copy(update={"models": services}), catalog
