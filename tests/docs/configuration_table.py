#!/usr/bin/env python3
"""Every STRATA_* environment variable that strata reads is in a Configuration table (the
README's, or a docs/ page's for its feature), every variable of the tables is read somewhere,
and every one that is not an option is known to the option parser (so setting it prints no
"not a strata variable" warning).

usage: configuration_table.py SOURCE"""

import glob
import os
import re
import sys

# Where code reads a variable: getenv("STRATA_X"), os.environ.get("STRATA_X"), ${STRATA_X.
READS = [re.compile(r'getenv\("STRATA_([A-Z0-9_]+)"\)'),
         re.compile(r'environ(?:\.get\(|\[)"STRATA_([A-Z0-9_]+)"'),
         re.compile(r'\$\{?STRATA_([A-Z0-9_]+)')]
SOURCES = ("src", "tools", "bench", "gpu", "scripts")
SUFFIXES = (".c", ".cpp", ".hpp", ".h", ".py", ".sh")


def read_variables(source):
    """Variables read by strata's code: the option table's and those read elsewhere."""
    found = {}
    for top in SOURCES:
        for folder, _, files in os.walk(os.path.join(source, top)):
            for name in files:
                if not name.endswith(SUFFIXES):
                    continue
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8", errors="replace") as file:
                    text = file.read()
                for pattern in READS:
                    for variable in pattern.findall(text):
                        found.setdefault(variable, os.path.relpath(path, source))
    return found


def option_names(source):
    """The option table of src/options/options.cpp, and the variables it lets pass."""
    with open(os.path.join(source, "src/options/options.cpp"), encoding="utf-8") as file:
        text = file.read()
    options = set(re.findall(r'\{"([A-Z_]+)", kind::', text))
    others = re.search(r"other_variables\[\] = \{(.*?)\};", text, re.S)
    return options, set(re.findall(r'"([A-Z_]+)"', others.group(1))) if others else set()


def table_variables(source):
    """The variables of the Configuration tables: the README's, and a page of docs/ that has a
    section of its own for its feature's variables."""
    pages = [os.path.join(source, "README.md")] + sorted(glob.glob(os.path.join(source, "docs", "*.md")))
    found = set()
    for page in pages:
        with open(page, encoding="utf-8") as file:
            text = file.read()
        if "## Configuration" not in text:
            continue
        section = text.split("## Configuration", 1)[1].split("\n## ", 1)[0]
        rows = [line for line in section.split("\n") if line.startswith("| `STRATA_")]
        found |= {name for row in rows for name in re.findall(r"`STRATA_([A-Z0-9_]+)`", row.split("|")[1])}
    return found


def main():
    source = sys.argv[1]
    options, others = option_names(source)
    read = read_variables(source)
    for option in options:
        read.setdefault(option, "src/options/options.cpp")
    table = table_variables(source)
    problems = []
    for variable, where in sorted(read.items()):
        if variable not in table:
            problems.append(f"STRATA_{variable} (read in {where}) is not in the README's table")
        if variable not in options and variable not in others:
            problems.append(f"STRATA_{variable} (read in {where}) would be reported as unknown: "
                            "add it to other_variables in src/options/options.cpp")
    for variable in sorted(table - set(read)):
        problems.append(f"STRATA_{variable} is in the README's table but nothing reads it")
    for problem in problems:
        print("FAIL:", problem)
    print(f"{len(read)} variables read, {len(table)} in the table, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
