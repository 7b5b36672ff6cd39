"""Config templates (configs/proxies/<kind>/..., the Collector's squid.conf.in, the stand-in
Squids' squid.conf) rendered with one run's ports and paths: the project's one engine for them.

Jinja2, not autoescaped (these are config files, not HTML). Placeholders are `{{name}}`: a syntax
no proxy config uses (nginx and Varnish use `$`, Squid `%`), so templates stay readable copies of
the configs in the proxy notes. A placeholder without a value is an error, never an empty string.
"""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, StrictUndefined, meta

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = ROOT / "configs" / "proxies"
CONFIGS = Environment(autoescape=False, undefined=StrictUndefined, keep_trailing_newline=True)


class TemplateError(ValueError):
    pass


def placeholders(template: str) -> set[str]:
    return meta.find_undeclared_variables(CONFIGS.parse(template))


def render_text(template: str, values: dict[str, object], where: str = "template") -> str:
    missing = sorted(placeholders(template) - values.keys())
    if missing:
        raise TemplateError(f"{where}: no value for {{{{{missing[0]}}}}}")
    return CONFIGS.from_string(template).render(values)


def render_file(kind: str, template: str, out: Path, values: dict[str, object]) -> Path:
    """Render configs/proxies/<kind>/<template> to `out` (parents created)."""
    source = TEMPLATES / kind / template
    text = render_text(source.read_text(), values, str(source.relative_to(ROOT)))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return out
