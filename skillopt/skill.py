"""The skill document (the weights): Markdown sections, protected blocks, sha.  (pure: no I/O)

A skill is kept as its exact text; sections and protected blocks are offsets into
that text, never copies, so rendering is byte-identical by construction and edits
can be applied by offset without reformatting anything the optimizer did not touch.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from .errors import SkillError

SLOW_START = "<!-- SLOW_UPDATE_START -->"
SLOW_END = "<!-- SLOW_UPDATE_END -->"
MARKERS = (SLOW_START, SLOW_END)
MAX_CHARS = 200_000
# Share of control characters above which a file is treated as binary, not prose.
MAX_CONTROL_SHARE = 0.01

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_LINE = re.compile(r"[^\n]*\n|[^\n]+$")


@dataclass(frozen=True)
class Section:
    """A heading and everything up to the next heading of the same or a higher level.

    `start`..`end` covers the heading line and the whole body including subsections;
    `content_start` is just after the heading line; `own_end` is where the section's
    own text stops (its first subsection, or `end`) — where an `add` belongs.
    """
    path: tuple[str, ...]
    level: int
    start: int
    end: int
    content_start: int
    own_end: int

    @property
    def path_str(self) -> str:
        return " > ".join(self.path)

    @property
    def title(self) -> str:
        return self.path[-1]


@dataclass(frozen=True)
class Skill:
    text: str
    sections: tuple[Section, ...]
    protected: tuple[tuple[int, int], ...]


def lines(text: str) -> list[tuple[int, int, str]]:
    """(start, end, line) for every line; `end` includes the newline, `line` drops it.

    Splits on "\\n" only (str.splitlines would also split on form feeds and U+2028,
    which would shift offsets); a trailing "\\r" is removed from `line`.
    """
    out = []
    for m in _LINE.finditer(text):
        raw = m.group(0)
        out.append((m.start(), m.end(), raw.rstrip("\n").rstrip("\r")))
    return out


def is_heading(line: str) -> bool:
    """Whether one line (without its newline) is an ATX heading, ignoring code-fence context."""
    return bool(_HEADING.match(line))


def code_lines(text: str) -> list[tuple[int, int, str, bool]]:
    """(start, end, line, in_code) for every line: `in_code` is true for a fenced code block's
    lines, its opening and closing fences included (a heading or a blank line there is code)."""
    out = []
    fence: tuple[str, int] | None = None  # (fence char, length) while inside a code block
    for start, end, line in lines(text):
        fm = _FENCE.match(line)
        if fence is not None:
            if fm and fm.group(1)[0] == fence[0] and len(fm.group(1)) >= fence[1] and not fm.group(2).strip():
                fence = None
            out.append((start, end, line, True))
            continue
        if fm and not (fm.group(1)[0] == "`" and "`" in fm.group(2)):
            fence = (fm.group(1)[0], len(fm.group(1)))
        out.append((start, end, line, fence is not None))
    return out


def headings(text: str) -> list[tuple[int, int, int, str]]:
    """(line_start, line_end, level, title) of every ATX heading outside fenced code."""
    found = []
    for start, end, line, in_code in code_lines(text):
        hm = None if in_code else _HEADING.match(line)
        if hm:
            title = _CLOSING_HASHES.sub("", hm.group(2) or "").strip()
            found.append((start, end, len(hm.group(1)), title))
    return found


def sections(text: str) -> tuple[Section, ...]:
    heads = headings(text)
    out = []
    stack: list[tuple[int, str]] = []  # (level, title) of the enclosing headings
    for i, (start, end, level, title) in enumerate(heads):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        close = next((h[0] for h in heads[i + 1:] if h[2] <= level), len(text))
        own = heads[i + 1][0] if i + 1 < len(heads) else len(text)
        out.append(Section(tuple(t for _, t in stack), level, start, close, end, min(own, close)))
    return tuple(out)


def parse(text: str) -> Skill:
    return Skill(text, sections(text), tuple(protected_spans(text)))


def render(skill: Skill) -> str:
    # Offsets, not copies, are what parse() keeps: the text is the single source of truth.
    return skill.text


def _norm_title(title: str) -> str:
    return " ".join(title.strip().strip("#").split()).casefold()


def find_sections(text: str, path: str) -> list[Section]:
    """Sections whose heading path equals `path`, else those it is a suffix of.

    "Rules > Dates" and "rules>dates" both name ("Rules", "Dates"); "Dates" alone
    names it too through the suffix rule. Several results mean the path is ambiguous.
    """
    want = tuple(_norm_title(p) for p in path.split(">"))
    if not path.strip() or not all(want):
        return []
    found = sections(text)
    full = [s for s in found if tuple(_norm_title(p) for p in s.path) == want]
    if full:
        return full
    return [s for s in found if tuple(_norm_title(p) for p in s.path)[-len(want):] == want]


def find_section(text: str, path: str) -> Section | None:
    """The one section named by `path` (see find_sections), or None if none or several."""
    found = find_sections(text, path)
    return found[0] if len(found) == 1 else None


def protected_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each protected block, markers included.

    Tolerant on purpose (validate() is the strict check): an unclosed block protects
    everything to the end and a stray end marker protects itself, so malformed text
    can never make a protected region editable.
    """
    spans = []
    pos = 0
    while True:
        s = text.find(SLOW_START, pos)
        e = text.find(SLOW_END, pos)
        if s < 0 and e < 0:
            return spans
        if s < 0 or (0 <= e < s):  # stray end marker
            spans.append((e, e + len(SLOW_END)))
            pos = e + len(SLOW_END)
            continue
        close = text.find(SLOW_END, s + len(SLOW_START))
        if close < 0:
            spans.append((s, len(text)))
            return spans
        spans.append((s, close + len(SLOW_END)))
        pos = close + len(SLOW_END)


def validate(text: str, origin: str = "skill") -> None:
    """Raise SkillError (one line naming `origin`) unless `text` is a usable skill."""
    if not text.strip():
        raise SkillError(f"{origin}: skill is empty")
    if len(text) > MAX_CHARS:
        raise SkillError(f"{origin}: skill has {len(text):,} characters, the limit is {MAX_CHARS:,}")
    if "\x00" in text:
        raise SkillError(f"{origin}: skill looks binary (contains NUL bytes)")
    control = sum(1 for ch in text if (ord(ch) < 32 and ch not in "\t\n\r") or ord(ch) == 127)
    if control > MAX_CONTROL_SHARE * len(text):
        raise SkillError(f"{origin}: skill looks binary ({control} control characters)")
    depth = 0
    for m in re.finditer(re.escape(SLOW_START) + "|" + re.escape(SLOW_END), text):
        line = text.count("\n", 0, m.start()) + 1
        if m.group(0) == SLOW_START:
            if depth:
                raise SkillError(f"{origin}:{line}: nested {SLOW_START} inside an open protected block")
            depth = 1
        else:
            if not depth:
                raise SkillError(f"{origin}:{line}: {SLOW_END} without a matching {SLOW_START}")
            depth = 0
    if depth:
        line = text.count("\n", 0, text.rfind(SLOW_START)) + 1
        raise SkillError(f"{origin}:{line}: {SLOW_START} is never closed by {SLOW_END}")


def guidance(text: str) -> str:
    """The slow-update guidance (inside the first protected block), stripped, "\n" line ends; "" if none."""
    s = text.find(SLOW_START)
    if s < 0:
        return ""
    e = text.find(SLOW_END, s)
    inner = text[s + len(SLOW_START):] if e < 0 else text[s + len(SLOW_START):e]
    return inner.replace("\r\n", "\n").strip()


def newline_of(text: str) -> str:
    """The document's line ending, so inserted lines match the rest of the file."""
    return "\r\n" if text.count("\r\n") * 2 > text.count("\n") else "\n"


def with_guidance(text: str, new_guidance: str) -> str:
    """Replace the guidance block's content, or append a new block at the very end."""
    nl = newline_of(text)
    body = "\n".join(line.rstrip() for line in new_guidance.strip().replace("\r\n", "\n").split("\n"))
    inner = nl + body.replace("\n", nl) + nl if body else nl
    s = text.find(SLOW_START)
    if s >= 0:
        e = text.find(SLOW_END, s)
        if e >= 0:
            return text[:s + len(SLOW_START)] + inner + text[e:]
        return text[:s + len(SLOW_START)] + inner + SLOW_END + nl
    head = text.rstrip()
    sep = nl + nl if head else ""
    return head + sep + SLOW_START + inner + SLOW_END + nl


def body_end(text: str) -> int:
    """Where the body ends: the start of the first protected block, else the end of text."""
    spans = protected_spans(text)
    return spans[0][0] if spans else len(text)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
