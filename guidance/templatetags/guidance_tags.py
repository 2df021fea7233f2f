from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from guidance import article_values, citations, markdown
from guidance.engine.notes import describe_hours

register = template.Library()


@register.filter
def as_markdown(text: str) -> SafeString:
    # The output of render() is sanitized by nh3: safe to mark.
    return mark_safe(markdown.render(text))


@register.filter
def code_spans(text: str) -> SafeString:
    """The engine's words with `code` in backquotes (the training-code checker quotes the
    program so) shown as code; everything escaped, and unpaired backquotes left as they are."""
    parts = str(text).split("`")
    if len(parts) % 2 == 0:
        return escape(text)
    shown = (escape(p) if i % 2 == 0 else f"<code>{escape(p)}</code>" for i, p in enumerate(parts))
    return mark_safe("".join(shown))


@register.filter
def with_values(markdown_text: str, values: dict[str, str] | None) -> str:
    """An article's Markdown with its placeholders filled in; an unknown one marked (its name
    is letters, digits and "_.-" only, so it is safe in the HTML)."""
    return article_values.fill(
        markdown_text,
        values or {},
        lambda name: f'<mark class="{markdown.PLACEHOLDER_ERROR}">{{{{ {name} }}}}</mark>',
    )


@register.filter
def with_values_text(text: str, values: dict[str, str] | None) -> str:
    """The same for plain text (a title), escaped where it is shown."""
    return article_values.fill(text, values or {}, lambda name: f"{{{{ {name} }}}} (unknown)")


@register.filter
def get_item(mapping: dict, key: str):
    return mapping.get(key, ())


@register.filter
def hours(value: float) -> str:
    return describe_hours(value)


_DECIMAL_UNITS = ("B", "kB", "MB", "GB", "TB", "PB", "EB")


@register.filter
def decimal_size(size_bytes: int) -> str:
    """Bytes in the powers of 1000 that sites publish quotas in: 50 GB, 20 TB, 1.5 TB.

    Not filesizeformat, which divides by 1024 and so shows a 50 GB quota as "46.6 GB".
    """
    value, unit = float(size_bytes), 0
    # Rounded first, so that 999,999 MB reads "1 TB" rather than "1000 GB".
    while round(value, 2) >= 1000 and unit < len(_DECIMAL_UNITS) - 1:
        value, unit = value / 1000, unit + 1
    return f"{round(value, 2):g} {_DECIMAL_UNITS[unit]}"


@register.simple_tag
def cite(source) -> citations.Citation | None:
    """The source's label and link; None when there is nothing to cite."""
    source = citations.as_source(source)
    return citations.cite(source, citations.known_documents()) if source else None
