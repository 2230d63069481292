"""Extract the project's messages, update the ``.po`` catalogs and compile them to ``.mo``.

A message is a call ``msg("English template {name:.3g}", name=...)`` (or ``Message(...)``) of
:mod:`transformer_math.i18n.message` whose first argument is a string literal; extraction reads
``src/`` with :mod:`ast` (nothing is imported or run), in the spirit of ``xgettext`` /
``pybabel extract`` with ``msg`` as the keyword. Updating keeps every translation whose msgid is
still used, adds new msgids with an empty ``msgstr`` (to be translated) and drops the unused
ones (printed). Compiling writes GNU ``.mo`` files (the format of
https://www.gnu.org/software/gettext/manual/gettext.html#MO-Files: magic, count, two tables of
(length, offset) pairs sorted by msgid, no hash table), byte-for-byte deterministic, so the
committed ``.mo`` can be compared with a fresh compile.

Usage::

    python tools/i18n_catalog.py            # extract + update every .po + compile (make i18n)
    python tools/i18n_catalog.py --check    # exit 1 when a .po or .mo is stale or incomplete

``tests/i18n/test_message_catalog.py`` runs the check's parts.
"""

from __future__ import annotations

import argparse
import ast
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "transformer_math"
LOCALE = SRC / "i18n" / "locale"
DOMAIN = "transformer_math"
LANGS = ("zh",)
CALLS = ("msg", "Message")
HEADER = {
    "zh": ("Project-Id-Version: transformer-math\n"
           "Language: zh\n"
           "MIME-Version: 1.0\n"
           "Content-Type: text/plain; charset=UTF-8\n"
           "Content-Transfer-Encoding: 8bit\n"),
}


@dataclass
class Entry:
    """One catalog entry: msgid, translation and where the msgid is used (``path:line``)."""

    msgid: str
    msgstr: str = ""
    where: list[str] = field(default_factory=list)


# --- extraction --------------------------------------------------------------------------------


def extract(src: Path = SRC) -> dict[str, list[str]]:
    """msgid -> the ``path:line`` of each call, for every message call in ``src`` (sorted)."""
    found: dict[str, list[str]] = {}
    for path in sorted(src.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else (
                func.attr if isinstance(func, ast.Attribute) else None)
            first = node.args[0]
            if name in CALLS and isinstance(first, ast.Constant) and isinstance(first.value, str):
                rel = (path.relative_to(ROOT) if path.is_relative_to(ROOT) else path).as_posix()
                found.setdefault(first.value, []).append(f"{rel}:{node.lineno}")
    return dict(sorted(found.items()))


# --- .po reading and writing ---------------------------------------------------------------------


def _unquote(token: str, where: str) -> str:
    if not (len(token) >= 2 and token[0] == token[-1] == '"'):
        raise ValueError(f"{where}: expected a quoted string, got {token!r}")
    out, i, body = [], 0, token[1:-1]
    escapes = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}
    while i < len(body):
        ch = body[i]
        if ch == "\\":
            nxt = body[i + 1] if i + 1 < len(body) else ""
            if nxt not in escapes:
                raise ValueError(f"{where}: unknown escape \\{nxt}")
            out.append(escapes[nxt])
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace(
        "\t", "\\t") + '"'


def read_po(path: Path) -> tuple[str, dict[str, Entry]]:
    """``(header, msgid -> entry)`` of a ``.po`` file (single msgid/msgstr entries, no
    plurals or contexts: the project has none)."""
    header = ""
    entries: dict[str, Entry] = {}
    key: str | None = None
    cur: dict[str, str] = {}
    where: list[str] = []

    def flush() -> None:
        nonlocal header, cur, where
        if "msgid" in cur:
            if cur["msgid"] == "":
                header = cur.get("msgstr", "")
            elif cur["msgid"] in entries:
                raise ValueError(f"{path}: msgid {cur['msgid'][:60]!r} appears twice")
            else:
                entries[cur["msgid"]] = Entry(cur["msgid"], cur.get("msgstr", ""), where)
        cur, where = {}, []

    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        at = f"{path}:{number}"
        if not line:
            continue
        if line.startswith("#:"):
            where += line[2:].split()
        elif line.startswith("#"):
            continue
        elif line.startswith(("msgid ", "msgstr ")):
            word, _, rest = line.partition(" ")
            if word == "msgid" and "msgid" in cur:
                flush()
            key = word
            cur[key] = _unquote(rest.strip(), at)
        elif line.startswith('"') and key is not None:
            cur[key] += _unquote(line, at)
        else:
            raise ValueError(f"{at}: cannot read {raw!r}")
    flush()
    return header, entries


def write_po(path: Path, header: str, entries: dict[str, Entry]) -> str:
    """The text of a ``.po`` file (entries sorted by msgid; one line per string)."""
    lines = ["# Chinese catalog of transformer-math's messages (source language: English).",
             "# Updated by tools/i18n_catalog.py (make i18n); msgstr uses the msgid's "
             "placeholders and format specs.",
             'msgid ""', 'msgstr ""']
    lines += [_quote(h + "\n") for h in header.splitlines()]
    for msgid in sorted(entries):
        e = entries[msgid]
        lines.append("")
        lines += [f"#: {w}" for w in e.where]
        lines += ["#, python-brace-format", f"msgid {_quote(msgid)}", f"msgstr {_quote(e.msgstr)}"]
    text = "\n".join(lines) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return text


# --- .mo compiling -------------------------------------------------------------------------------


def compile_mo(header: str, entries: dict[str, Entry]) -> bytes:
    """GNU ``.mo`` bytes of the translated entries (untranslated ones are left out)."""
    pairs = [("", header)] + [(e.msgid, e.msgstr) for e in entries.values() if e.msgstr]
    pairs.sort(key=lambda p: p[0].encode("utf-8"))
    ids = [k.encode("utf-8") for k, _ in pairs]
    strs = [v.encode("utf-8") for _, v in pairs]
    n = len(pairs)
    start = 7 * 4 + 16 * n
    blob = b""
    id_table, str_table = [], []
    for s in ids:
        id_table += [len(s), start + len(blob)]
        blob += s + b"\0"
    for s in strs:
        str_table += [len(s), start + len(blob)]
        blob += s + b"\0"
    head = struct.pack("<7I", 0x950412DE, 0, n, 28, 28 + 8 * n, 0, start)
    return head + struct.pack(f"<{4 * n}I", *id_table, *str_table) + blob


def mo_path(lang: str) -> Path:
    return LOCALE / lang / "LC_MESSAGES" / f"{DOMAIN}.mo"


def po_path(lang: str) -> Path:
    return LOCALE / lang / "LC_MESSAGES" / f"{DOMAIN}.po"


# --- update / check ------------------------------------------------------------------------------


def merged(lang: str, used: dict[str, list[str]]) -> tuple[str, dict[str, Entry], list[str]]:
    """``lang``'s catalog with the msgids ``used`` now: ``(header, entries, dropped ids)``."""
    path = po_path(lang)
    header, old = read_po(path) if path.exists() else (HEADER[lang], {})
    entries = {m: Entry(m, old[m].msgstr if m in old else "", where)
               for m, where in used.items()}
    return header or HEADER[lang], entries, sorted(set(old) - set(used))


def update() -> int:
    used = extract()
    for lang in LANGS:
        header, entries, dropped = merged(lang, used)
        write_po(po_path(lang), header, entries)
        data = compile_mo(header, entries)
        tmp = mo_path(lang).with_suffix(".mo.tmp")
        tmp.write_bytes(data)
        tmp.replace(mo_path(lang))
        empty = [m for m, e in entries.items() if not e.msgstr]
        print(f"{lang}: {len(entries)} messages, {len(empty)} untranslated, "
              f"{len(dropped)} dropped")
        for m in dropped:
            print(f"  dropped: {m[:90]!r}")
        for m in empty:
            print(f"  untranslated: {m[:90]!r} ({entries[m].where[0]})")
    return 0


def check() -> list[str]:
    """Problems: a stale ``.po`` (msgids added, dropped or moved), an untranslated msgid, a
    ``.mo`` that is not the compile of its ``.po``."""
    problems = []
    used = extract()
    for lang in LANGS:
        path = po_path(lang)
        if not path.exists():
            problems.append(f"{path} is missing: run make i18n")
            continue
        header, entries = read_po(path)
        if set(entries) != set(used):
            problems.append(f"{path}: msgids differ from src/ ({len(set(used) - set(entries))} "
                            f"new, {len(set(entries) - set(used))} unused): run make i18n")
        problems += [f"{path}: no translation of {m[:70]!r}" for m, e in entries.items()
                     if not e.msgstr]
        mo = mo_path(lang)
        if not mo.exists() or mo.read_bytes() != compile_mo(header, entries):
            problems.append(f"{mo} is not the compile of {path.name}: run make i18n")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="report stale catalogs, exit 1")
    args = parser.parse_args(argv)
    if args.check:
        problems = check()
        for p in problems:
            print(p)
        return 1 if problems else 0
    return update()


if __name__ == "__main__":
    sys.exit(main())
