"""Before/after snippets in the program's own text: the original lines, and the same lines with a
keyword replaced or added (one per line where the call is laid out that way), a line inserted, a
`with` block added. Positions are (line from 1, character column from 0)."""

import ast
from dataclasses import dataclass

from guidance.engine.code_check.program import Program

Position = tuple[int, int]
_WRAP_LIMIT = 40  # lines: a longer block is not rewritten, the fix says it in words
_WIDTH = 99  # a one-line call longer than this after the change is laid out one per line


@dataclass(frozen=True)
class Edit:
    start: Position
    end: Position
    text: str


@dataclass(frozen=True)
class Snippet:
    """`before` is the program's lines first..last as written, `after` what replaces them
    (an editor can swap the one for the other); first 0 where the lines are not known."""

    before: str
    after: str
    first: int = 0
    last: int = 0

    def without_after(self) -> "Snippet":
        return Snippet(self.before, "", self.first, self.last)


def apply(program: Program, first: int, last: int, edits: list[Edit]) -> Snippet:
    """Lines first..last as written, and with the edits made (positions inside those lines)."""
    before = program.line_text(first, last)
    offsets = [0]
    for line in program.lines[first - 1 : last]:
        offsets.append(offsets[-1] + len(line) + 1)

    def offset(position: Position) -> int:
        line, column = position
        return offsets[line - first] + column

    after = before
    for edit in sorted(edits, key=lambda e: offset(e.start), reverse=True):
        after = after[: offset(edit.start)] + edit.text + after[offset(edit.end) :]
    return Snippet(before, after, first, last)


def statement_lines(program: Program, node: ast.AST) -> tuple[int, int]:
    """The lines of the statement holding the node; of a compound statement (`for`, `with`,
    `def`), only its header, down to the node's last line; a node inside a statement that
    began on an earlier line, its own lines."""
    statement = program.statement_of(node)
    if statement.lineno < node.lineno or (
        program.lines[node.lineno - 1][: program.start(node)[1]].strip() == ""
    ):
        # A layer of nn.Sequential(...) on a line of its own, an argument of a call laid out
        # one per line, a loader in a dict: its own lines, which the fix's edits stay inside,
        # are the ones to show, at the line the finding names.
        return node.lineno, node.end_lineno or node.lineno
    first = min(statement.lineno, node.lineno)
    if hasattr(statement, "body"):
        return first, node.end_lineno or node.lineno
    return first, max(statement.end_lineno or statement.lineno, node.end_lineno or node.lineno)


def keyword_edits(program: Program, call: ast.Call, changes: dict[str, str]) -> list[Edit]:
    """Edits that give the call's keywords these values: a keyword it has is replaced in place,
    a missing one added after its last argument (on a line of its own where the arguments are
    one per line). Positional arguments are left alone."""
    given = {k.arg: k.value for k in call.keywords if k.arg}
    missing = [f"{name}={text}" for name, text in changes.items() if name not in given]
    spans = [(arg, arg) for arg in [*call.args, *call.keywords]]
    return _entry_edits(program, call, given, spans, changes, missing)


def _entry_edits(
    program: Program,
    container: ast.AST,
    given: dict[str, ast.AST],
    spans: list[tuple[ast.AST, ast.AST]],
    changes: dict[str, str],
    missing: list[str],
) -> list[Edit]:
    """A call's keywords or a dict's entries set: those it has replaced in place, the `missing`
    texts added after its last entry (one per line where the entries are laid out so). `spans`:
    each entry's first and last node (a dict entry starts at its key)."""
    edits = [
        Edit(program.start(given[name]), program.end(given[name]), text)
        for name, text in changes.items()
        if name in given
    ]
    if not missing:
        return edits
    if not spans:
        end_line, end_col = program.end(container)
        return [*edits, Edit((end_line, end_col - 1), (end_line, end_col - 1), ", ".join(missing))]
    first, last = max(spans, key=lambda span: (span[1].end_lineno, span[1].end_col_offset))
    first_start = program.start(first)
    position = program.end(last)
    line_before = program.lines[first_start[0] - 1][: first_start[1]]
    on_own_line = container.lineno != first.lineno and not line_before.strip()
    if on_own_line:
        text = "".join(f",\n{line_before}{entry}" for entry in missing)
    else:
        text = "".join(f", {entry}" for entry in missing)
    return [*edits, Edit(position, position, text)]


def set_dict_entries(program: Program, node: ast.Dict, changes: dict[str, str]) -> Snippet:
    """A literal dict with these string keys given these values (added where missing)."""
    given = {
        key.value: value
        for key, value in zip(node.keys, node.values, strict=True)
        if isinstance(key, ast.Constant) and isinstance(key.value, str)
    }
    missing = [f'"{name}": {text}' for name, text in changes.items() if name not in given]
    spans = [(key or value, value) for key, value in zip(node.keys, node.values, strict=True)]
    edits = _entry_edits(program, node, given, spans, changes, missing)
    first, last = statement_lines(program, node)
    return apply(program, first, last, edits)


def replace_values(program: Program, given: dict[str, ast.AST], changes: dict[str, str]) -> Snippet:
    """Values the program gives (a keyword's, a dict entry's) replaced, shown on their own
    lines only: the finding about a setting set wrong names that setting's line."""
    nodes = [given[name] for name in changes]
    spans = [statement_lines(program, node) for node in nodes]
    first, last = min(s[0] for s in spans), max(s[1] for s in spans)
    edits = [
        Edit(program.start(given[name]), program.end(given[name]), text)
        for name, text in changes.items()
    ]
    return apply(program, first, last, edits)


def set_keywords(program: Program, call: ast.Call, changes: dict[str, str]) -> Snippet:
    return set_arguments(program, call, changes, {})


def insert_lines(program: Program, at: ast.stmt, lines: list[str], after: bool) -> Snippet:
    """New lines put before (or after) a statement, at its indentation. Of a compound
    statement (a class, a loop) only its first line is shown, with its decorators."""
    first, last = at.lineno, at.end_lineno or at.lineno
    if hasattr(at, "body"):
        first = min([first, *(d.lineno for d in getattr(at, "decorator_list", ()))])
        last = at.lineno
    indent = program.indent(first)
    new = "\n".join(indent + line for line in lines)
    before = program.line_text(first, last)
    return Snippet(before, f"{before}\n{new}" if after else f"{new}\n{before}", first, last)


def wrap_in_with(program: Program, head: ast.stmt, body: list[ast.stmt], header: str) -> Snippet:
    """`head` as it is, then the statements of `body` (those that follow it in its block)
    inside `with header:`. No mechanical after where the block is long or holds a string
    that spans lines (indenting it would change the string)."""
    if not body:
        last = head.end_lineno or head.lineno
        return Snippet(program.line_text(head.lineno, last), "", head.lineno, last)
    first, last = head.lineno, body[-1].end_lineno or body[-1].lineno
    before = program.line_text(first, last)
    if last - body[0].lineno > _WRAP_LIMIT or _has_multiline_string(program, body):
        return Snippet(before, "", first, last)
    indent = program.indent(body[0].lineno)
    head_text = program.line_text(first, head.end_lineno or head.lineno)
    rest = [
        (program.indent_unit + line) if line.strip() else line
        for line in program.lines[(head.end_lineno or head.lineno) : last]
    ]
    return Snippet(before, "\n".join([head_text, f"{indent}with {header}:", *rest]), first, last)


def _has_multiline_string(program: Program, body: list[ast.stmt]) -> bool:
    for statement in body:
        for node in ast.walk(statement):
            spans = isinstance(node, ast.expr) and node.lineno != node.end_lineno
            text = isinstance(node, ast.JoinedStr) or (
                isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))
            )
            if spans and text:
                return True
    return False


def short_call(program: Program, call: ast.Call) -> str:
    """`train_loader = DataLoader(train_set, ...)`: the call as a reader recognises it."""
    func = program.segment(call.func)
    if len(func) > 60:
        func = func[:57] + "..."
    first = program.segment(call.args[0]) if call.args else ""
    if len(first) > 30 or "\n" in first:
        first = "..."
    rest = len(call.args) + len(call.keywords) > (1 if call.args else 0)
    inside = ", ".join(filter(None, [first, "..." if rest else ""]))
    text = f"{func}({inside})"
    parent = program.parents.get(call)
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1:
        target = program.segment(parent.targets[0])
        if len(target) <= 40 and "\n" not in target:
            text = f"{target} = {text}"
    return text


def torch_name(program: Program) -> str:
    """What the file calls the torch module (`torch`, or its alias)."""
    for local, qualname in program.aliases.items():
        if qualname == "torch":
            return local
    return "torch"


def set_arguments(
    program: Program, call: ast.Call, changes: dict[str, str], positions: dict[str, int]
) -> Snippet:
    """Like set_keywords, where an argument given by position is replaced at its position."""
    edits: list[Edit] = []
    by_keyword: dict[str, str] = {}
    for name, text in changes.items():
        index = positions.get(name)
        given = not any(k.arg == name for k in call.keywords)
        if index is not None and given and index < len(call.args):
            arg = call.args[index]
            edits.append(Edit(program.start(arg), program.end(arg), text))
        else:
            by_keyword[name] = text
    first, last = statement_lines(program, call)
    snippet = apply(program, first, last, [*edits, *keyword_edits(program, call, by_keyword)])
    if first == last == call.end_lineno and max(map(len, snippet.after.split("\n"))) > _WIDTH:
        after = _one_per_line(program, call, changes, positions)
        return Snippet(snippet.before, after, first, last)
    return snippet


def _one_per_line(
    program: Program, call: ast.Call, changes: dict[str, str], positions: dict[str, int]
) -> str:
    """A one-line call that the change makes too long, laid out one argument per line."""
    by_position = {index: name for name, index in positions.items() if name in changes}
    texts = []
    for index, arg in enumerate(call.args):
        name = by_position.get(index)
        given_by_keyword = any(k.arg == name for k in call.keywords)
        texts.append(changes[name] if name and not given_by_keyword else program.segment(arg))
    done = {by_position[i] for i in range(len(call.args)) if i in by_position}
    for keyword in call.keywords:
        if keyword.arg in changes:
            texts.append(f"{keyword.arg}={changes[keyword.arg]}")
            done.add(keyword.arg)
        else:
            texts.append(program.segment(keyword))
    texts += [f"{name}={text}" for name, text in changes.items() if name not in done]
    line_text = program.lines[call.lineno - 1]
    opening = program.end(call.func)[1]
    opening = line_text.index("(", opening) + 1
    closing = program.end(call)[1]
    indent = program.indent(call.lineno)
    inner = "".join(f"{indent}{program.indent_unit}{text},\n" for text in texts)
    return f"{line_text[:opening]}\n{inner}{indent}){line_text[closing:]}"
