"""The cache-rule judge's catalogue as the report and the log schema use it.

The judge holds the one catalogue (multiplier/src/judge/cache_rule_catalogue.hpp) and prints it with
`spe-multiplier --list-cache-rules`. That output is kept beside this module
(cache_rule_catalogue.json), so the report reads it without a built Multiplier, and the log schema's
`rule` and `advisory` enums (docs/multiplier-log.schema.json) are written from it. After a rule is added
to the judge, one command brings both up to date:

    .venv/bin/python -m analysis.cache_rule_catalogue --update

and tests/python/loopback/test_cache_rule_catalogue.py fails until it has been run.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE_JSON = Path(__file__).with_suffix(".json")
LOG_SCHEMA = ROOT / "docs/multiplier-log.schema.json"
MULTIPLIER = ROOT / "build/release/multiplier/spe-multiplier"
SEVERITY_DEF = {"violation": "rule", "advisory": "advisory"}  # the schema's $defs name per severity


def load(path: Path = CATALOGUE_JSON) -> list[dict]:
    """The catalogue, in the judge's order: [{"id", "section", "severity", "meaning"}, ...]."""
    return json.loads(path.read_text())


def of_severity(catalogue: list[dict], severity: str) -> dict[str, tuple[str, str]]:
    """rule id -> (its section, what breaking it means), for one severity, in catalogue order."""
    return {rule["id"]: (rule["section"], rule["meaning"]) for rule in catalogue if rule["severity"] == severity}


def listed_by(multiplier: Path) -> str:
    """What the judge itself prints (--list-cache-rules), as the kept file holds it."""
    listed = subprocess.run([str(multiplier), "--list-cache-rules"], capture_output=True, text=True, timeout=30,
                            check=True)
    return listed.stdout.rstrip("\n") + "\n"


def schema_with_enums(schema_text: str, catalogue: list[dict]) -> str:
    """The log schema's text with its `rule` and `advisory` enums set from the catalogue; the rest of the
    file, its layout included, is left as it is."""
    for severity, name in SEVERITY_DEF.items():
        ids = json.dumps([rule["id"] for rule in catalogue if rule["severity"] == severity])
        line = re.compile(rf'^(\s*"{name}": \{{"enum": )\[[^\]]*\](\}},?)$', re.MULTILINE)
        schema_text, found = line.subn(lambda m, ids=ids: m.group(1) + ids + m.group(2), schema_text)
        if found != 1:
            raise SystemExit(f"{LOG_SCHEMA}: expected one line '\"{name}\": {{\"enum\": [...]}}', found {found}")
    return schema_text


def update(multiplier: Path) -> None:
    CATALOGUE_JSON.write_text(listed_by(multiplier))
    LOG_SCHEMA.write_text(schema_with_enums(LOG_SCHEMA.read_text(), load()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--update", action="store_true", required=True,
                        help="write cache_rule_catalogue.json and the log schema's enums from the judge")
    parser.add_argument("--multiplier", type=Path, default=MULTIPLIER, help="the built Multiplier to ask")
    args = parser.parse_args()
    if not args.multiplier.exists():
        raise SystemExit(f"{args.multiplier} is not built: run ./spe build")
    update(args.multiplier)
    print(f"wrote {CATALOGUE_JSON.relative_to(ROOT)} and the enums of {LOG_SCHEMA.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
