"""HAR 1.2's JSON Schema, from the npm package har-schema (the schema HAR validators use; no Python package ships
one), installed by `./spe setup` into tests/har-schema/node_modules (tests/har-schema/package.json pins it): the
HAR files SPE writes are checked against it with the jsonschema package, never against a copy kept here.

Its schemas are draft-06, one file per HAR object, each naming the others by file ("request.json#"); the
"date-time" format (startedDateTime) is checked too."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT6

PACKAGE = Path(__file__).resolve().parents[1] / "har-schema/node_modules/har-schema"
SCHEMAS = PACKAGE / "lib"


def missing() -> list[str]:
    """Why the schema cannot be had here ([] if it can): for parts.require."""
    return [] if (SCHEMAS / "har.json").is_file() else [f"{PACKAGE} (npm ci --prefix tests/har-schema)"]


def validator() -> jsonschema.Validator:
    """A validator of a whole HAR document, every file of the package registered under its own name."""
    schemas = {path.name: json.loads(path.read_text()) for path in SCHEMAS.glob("*.json")}
    registry = Registry().with_resources(
        (name, Resource.from_contents(schema, default_specification=DRAFT6)) for name, schema in schemas.items())
    return jsonschema.Draft6Validator(schemas["har.json"], registry=registry,
                                      format_checker=jsonschema.Draft6Validator.FORMAT_CHECKER)


def problems(doc: object) -> list[str]:
    """What in `doc` the schema refuses, each as PATH: MESSAGE ([]: a valid HAR 1.2 file)."""
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator().iter_errors(doc)]
