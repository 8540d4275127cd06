#!/usr/bin/env python3
"""The code blocks of README.md and docs/*.md, compiled and run against an installed strata.

usage: code_blocks.py run --home HOME --source SOURCE --work DIR
       code_blocks.py show NAME FILE

`run` checks every block the way a reader would use it. HOME/.local holds the install (the
docs install to ~/.local), HOME is the readers' home, SOURCE the repository, DIR scratch space.
  - c, cpp: a whole program, compiled (-Wall -Wextra -Werror) against the install through
    find_package(strata) and run; it must exit 0. A block whose first line names a file
    (`// main.cpp`) is that file instead, saved for the shell blocks of its page.
  - cmake, make: a file of the page, named on its first line (`# CMakeLists.txt`).
  - sh: run with bash -e in the page's folder (after its files), or, marked
    `<!-- check: from the source root -->`, in SOURCE; it must exit 0.
  - python: run with python3, skipped with a reason when it needs PyTorch or CuPy and they
    cannot be imported (they need a GPU as well).
  - a block with no language is a program's output, not code.
A line `<!-- check: skip REASON -->` before a block skips it, saying why; `<!-- check: ci NAME -->`
names a block that .ci/run runs itself (`show NAME` prints it). A program that includes a
<strata/gpu/...> header links strata::gpu, which every install has (its simulated device).
Every block is reported on one line; any failure fails the run.
"""

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys

FILE_NAME = re.compile(r"^(?://|#)\s*([\w.-]+\.(?:c|cpp|hpp|h)|CMakeLists\.txt|Makefile)\s*$")
DIRECTIVE = re.compile(r"^<!--\s*check:\s*(.*?)\s*-->$")


class Block:
    def __init__(self, page, line, language, code, directive):
        self.page, self.line, self.language = page, line, language
        self.code, self.directive = code, directive
        first = code.split("\n", 1)[0]
        match = FILE_NAME.match(first)
        self.file_name = match.group(1) if match else None

    def where(self):
        return f"{self.page}:{self.line} ({self.language or 'output'})"


def read_blocks(source, page):
    """The fenced blocks of one page, with the directive on the line before each."""
    with open(os.path.join(source, page), encoding="utf-8") as file:
        lines = file.read().split("\n")
    blocks, i = [], 0
    while i < len(lines):
        if lines[i].startswith("```"):
            language = lines[i][3:].strip()
            start = i
            i += 1
            body = []
            while i < len(lines) and lines[i] != "```":
                body.append(lines[i])
                i += 1
            before = lines[start - 1].strip() if start > 0 else ""
            match = DIRECTIVE.match(before)
            blocks.append(Block(page, start + 1, language, "\n".join(body) + "\n",
                                match.group(1) if match else None))
        i += 1
    return blocks


def pages(source):
    return ["README.md"] + sorted(os.path.relpath(p, source)
                                  for p in glob.glob(os.path.join(source, "docs", "*.md")))


def page_folder(work, page):
    folder = os.path.join(work, page.replace("/", "_").replace(".md", ""))
    os.makedirs(folder, exist_ok=True)
    return folder


class Run:
    def __init__(self, args):
        self.home, self.source, self.work = (os.path.abspath(args.home),
                                             os.path.abspath(args.source),
                                             os.path.abspath(args.work))
        self.failures = 0
        self.counts = {"ok": 0, "skipped": 0, "output": 0}
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith("STRATA_") and k not in ("LD_PRELOAD", "PKG_CONFIG_PATH")}
        self.env["HOME"] = self.home

    def report(self, status, block, detail=""):
        if status == "FAIL":
            self.failures += 1
        else:
            self.counts[status] += 1
        print(f"{status:7} {block.where()}{': ' + detail if detail else ''}", flush=True)

    def run_command(self, block, command, cwd, stdin=None):
        done = subprocess.run(command, cwd=cwd, env=self.env, input=stdin, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
        if done.returncode != 0:
            self.report("FAIL", block, f"exit {done.returncode}\n{done.stdout[-3000:]}")
            return False
        return True

    # ---- classification --------------------------------------------------

    def python_reason(self, block):
        for module, what in (("torch", "PyTorch"), ("cupy", "CuPy")):
            if re.search(rf"^\s*import .*\b{module}\b", block.code, re.M):
                found = subprocess.run([sys.executable, "-c", f"import {module}"],
                                       capture_output=True).returncode == 0
                if not found:
                    return f"needs {what} and a GPU ({module} cannot be imported here)"
        return None

    # ---- the checks ------------------------------------------------------

    def check_programs(self, programs):
        """Every standalone C and C++ block as one CMake project against the install."""
        if not programs:
            return
        project = os.path.join(self.work, "programs")
        shutil.rmtree(project, ignore_errors=True)
        os.makedirs(project)
        lines = ["cmake_minimum_required(VERSION 3.25)", "project(doc_programs C CXX)",
                 "find_package(strata REQUIRED)"]
        for n, block in enumerate(programs):
            name = f"block_{n}"
            source = f"{name}.{'c' if block.language == 'c' else 'cpp'}"
            with open(os.path.join(project, source), "w", encoding="utf-8") as file:
                file.write(block.code)
            gpu = "<strata/gpu/" in block.code
            target = "strata::gpu" if gpu else "strata::strata"
            lines += [f"add_executable({name} {source})",
                      f"target_link_libraries({name} PRIVATE {target})",
                      f"target_compile_options({name} PRIVATE -Wall -Wextra -Werror)"]
        with open(os.path.join(project, "CMakeLists.txt"), "w", encoding="utf-8") as file:
            file.write("\n".join(lines) + "\n")
        build = os.path.join(project, "build")
        configure = subprocess.run(
            ["cmake", "-S", project, "-B", build, "-G", "Ninja",
             f"-DCMAKE_PREFIX_PATH={os.path.join(self.home, '.local')}"],
            env=self.env, text=True, capture_output=True)
        if configure.returncode != 0:
            for block in programs:
                self.report("FAIL", block, "configure failed\n" + configure.stderr[-3000:])
            return
        for n, block in enumerate(programs):
            name = f"block_{n}"
            built = subprocess.run(["cmake", "--build", build, "--target", name],
                                   env=self.env, text=True, capture_output=True)
            if built.returncode != 0:
                self.report("FAIL", block, "does not compile\n" + built.stdout[-3000:])
                continue
            if self.run_command(block, [os.path.join(build, name)], project):
                self.report("ok", block, "compiled and ran")

    def check_page_block(self, block, folder):
        """A file, a shell or a python block, in page order."""
        if block.file_name:
            with open(os.path.join(folder, block.file_name), "w", encoding="utf-8") as file:
                file.write(block.code)
            self.report("ok", block, f"saved as {block.file_name} for the commands below it")
        elif block.language == "sh":
            cwd = self.source if block.directive == "from the source root" else folder
            if self.run_command(block, ["bash", "-e", "-o", "pipefail", "-s"], cwd, block.code):
                self.report("ok", block, "ran")
        elif block.language == "python":
            reason = self.python_reason(block)
            if reason:
                self.report("skipped", block, reason)
            elif self.run_command(block, [sys.executable, "-"], folder, block.code):
                self.report("ok", block, "ran")
        else:
            self.report("FAIL", block, f"a {block.language} block must name its file on its first line")

    def check(self):
        os.makedirs(self.work, exist_ok=True)
        programs, in_order = [], []
        for page in pages(self.source):
            for block in read_blocks(self.source, page):
                reason = None
                if block.directive and block.directive.startswith("skip "):
                    reason = block.directive[len("skip "):]
                if reason:
                    self.report("skipped", block, reason)
                elif block.directive and block.directive.startswith("ci "):
                    self.report("skipped", block, "run by .ci/run: code_blocks.py show "
                                + block.directive[len("ci "):])
                elif not block.language:
                    self.report("output", block, "a program's output, not code")
                elif block.language in ("c", "cpp") and not block.file_name:
                    if "main(" not in block.code:
                        self.report("FAIL", block, "not a whole program (no main)")
                    else:
                        programs.append(block)
                else:
                    in_order.append(block)
        self.check_programs(programs)
        for block in in_order:
            self.check_page_block(block, page_folder(self.work, block.page))
        c = self.counts
        print(f"{c['ok']} blocks checked, {c['skipped']} skipped, {c['output']} outputs, "
              f"{self.failures} failed")
        return 1 if self.failures else 0


def show(name, page):
    """Print the block named by `<!-- check: ci NAME -->` in `page`."""
    for block in read_blocks(os.path.dirname(os.path.abspath(page)), os.path.basename(page)):
        if block.directive == f"ci {name}":
            sys.stdout.write(block.code)
            return 0
    print(f"code_blocks.py: no block '{name}' in {page}", file=sys.stderr)
    return 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run")
    run.add_argument("--home", required=True)
    run.add_argument("--source", required=True)
    run.add_argument("--work", required=True)
    shown = commands.add_parser("show")
    shown.add_argument("name")
    shown.add_argument("page")
    args = parser.parse_args()
    if args.command == "show":
        return show(args.name, args.page)
    return Run(args).check()


if __name__ == "__main__":
    sys.exit(main())
