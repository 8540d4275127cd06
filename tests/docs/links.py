#!/usr/bin/env python3
"""Every relative link of README.md and docs/*.md leads to a file of the repository, and a link
to a heading (#anchor) to a heading that exists, as GitHub spells its anchors.

usage: links.py SOURCE"""

import glob
import os
import re
import sys

LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(path):
    """GitHub's anchors of a markdown file: headings lowercased, punctuation dropped."""
    with open(path, encoding="utf-8") as file:
        text = re.sub(r"```.*?```", "", file.read(), flags=re.S)
    result = set()
    for heading in re.findall(r"^#+\s+(.*)$", text, re.M):
        result.add(re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-"))
    return result


def main():
    source = sys.argv[1]
    pages = [os.path.join(source, "README.md")] + glob.glob(os.path.join(source, "docs", "*.md"))
    problems = []
    for page in pages:
        with open(page, encoding="utf-8") as file:
            text = re.sub(r"```.*?```", "", file.read(), flags=re.S)
        for target in LINK.findall(text):
            if re.match(r"^[a-z]+:", target):
                continue  # http:, https:, mailto:
            path, _, anchor = target.partition("#")
            resolved = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            name = os.path.relpath(page, source)
            if not os.path.exists(resolved):
                problems.append(f"{name}: {target}: no such file")
            elif anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
                problems.append(f"{name}: {target}: no such heading")
    for problem in problems:
        print("FAIL:", problem)
    print(f"{len(pages)} pages, {len(problems)} broken links")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
