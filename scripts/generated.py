"""A generated section of a document: the text between `<!-- scripts/NAME SECTION: begin -->` and its
`end` marker, replaced in place (written to a temporary file, then renamed), so a doc's figures come
from the script that measures them and never by hand."""
import os, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def replace_section(doc, script, section, text):
    """Replaces `script`'s `section` in docs/`doc` with `text` as a code block."""
    begin, end = f"<!-- scripts/{script} {section}: begin -->", f"<!-- scripts/{script} {section}: end -->"
    path = os.path.join(ROOT, "docs", doc)
    body = open(path).read()
    if begin not in body or end not in body:
        sys.exit(f"{path}: no {begin} ... {end} section to replace")
    head, rest = body.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(path + ".tmp", "w") as f:
        f.write(f"{head}{begin}\n```\n{text.strip(chr(10))}\n```\n{end}{tail}")
    os.replace(path + ".tmp", path)
    print(f"wrote the generated section of {path}")
