"""Config templates (configs/proxies/<kind>/...) rendered with one run's ports and paths.

Placeholders are `{{name}}`: a syntax no proxy config uses (nginx and Varnish use `$`, Squid `%`),
so templates stay readable copies of the configs in the proxy notes. A placeholder without a value
is an error, never an empty string.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "configs" / "proxies"
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


class TemplateError(ValueError):
    pass


def render_text(template: str, values: dict[str, object], where: str = "template") -> str:
    def value(match: re.Match) -> str:
        key = match.group(1)
        if key not in values:
            raise TemplateError(f"{where}: no value for {{{{{key}}}}}")
        return str(values[key])

    return PLACEHOLDER.sub(value, template)


def placeholders(template: str) -> set[str]:
    return set(PLACEHOLDER.findall(template))


def render_file(kind: str, template: str, out: Path, values: dict[str, object]) -> Path:
    """Render configs/proxies/<kind>/<template> to `out` (parents created)."""
    source = TEMPLATES / kind / template
    text = render_text(source.read_text(), values, str(source.relative_to(ROOT)))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return out
