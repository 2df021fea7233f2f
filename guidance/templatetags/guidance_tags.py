from django import template
from django.utils.safestring import SafeString, mark_safe

from guidance import markdown
from guidance.engine.notes import describe_hours

register = template.Library()


@register.filter
def as_markdown(text: str) -> SafeString:
    # The output of render() is sanitized by nh3: safe to mark.
    return mark_safe(markdown.render(text))


@register.filter
def get_item(mapping: dict, key: str):
    return mapping.get(key, ())


@register.filter
def hours(value: float) -> str:
    return describe_hours(value)
