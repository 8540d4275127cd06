"""Writes a `git fast-import` stream for a repository with thousands of commits.

Usage: make_git_history.py COMMITS > stream
The history is fixed (seeded random, fixed dates and authors), so every run yields
the same commit ids. Each commit edits a few of a few hundred text files, with
occasional new files, renames, deletions and merges of short-lived branches.
"""
import random
import sys


def file_text(rng, lines):
    """A text file of `lines` pseudo-random source-like lines."""
    words = ["alpha", "beta", "gamma", "delta", "heap", "page", "segment", "free",
             "alloc", "size", "class", "thread", "arena", "pool", "block", "span"]
    return "".join("%s %s = %d;\n" % (rng.choice(words), rng.choice(words), rng.randrange(10**6))
                   for _ in range(lines))


def edited(rng, text):
    """`text` with a few lines replaced, inserted or removed."""
    lines = text.splitlines(keepends=True)
    for _ in range(rng.randrange(1, 6)):
        position = rng.randrange(len(lines) + 1)
        action = rng.randrange(3)
        if action == 0 and position < len(lines):
            lines[position] = "changed %d\n" % rng.randrange(10**9)
        elif action == 1 or len(lines) < 5:
            lines.insert(position, "added %d\n" % rng.randrange(10**9))
        elif position < len(lines):
            del lines[position]
    return "".join(lines)


def emit_commit(out, ref, mark, parent_marks, when, message, changes):
    """Writes one commit; `changes` are (path, text-or-None-for-delete) pairs."""
    out.write("commit %s\nmark :%d\n" % (ref, mark))
    out.write("author Ada Example <ada@example.org> %d +0000\n" % when)
    out.write("committer Ada Example <ada@example.org> %d +0000\n" % when)
    data = message.encode()
    out.write("data %d\n%s\n" % (len(data), message))
    for index, parent in enumerate(parent_marks):
        out.write("%s :%d\n" % ("from" if index == 0 else "merge", parent))
    for path, text in changes:
        if text is None:
            out.write("D %s\n" % path)
        else:
            payload = text.encode()
            out.write("M 100644 inline %s\ndata %d\n" % (path, len(payload)))
            out.write(text)
            out.write("\n")


def main():
    commits = int(sys.argv[1])
    rng = random.Random(4)
    out = sys.stdout
    files = {}
    for i in range(300):
        files["src/dir%02d/file%03d.txt" % (i % 20, i)] = file_text(rng, rng.randrange(20, 200))
    when = 1_600_000_000
    emit_commit(out, "refs/heads/main", 1, [], when, "initial import", sorted(files.items()))
    main_mark = 1
    for mark in range(2, commits + 1):
        when += 600
        changes = []
        for path in rng.sample(sorted(files), rng.randrange(1, 5)):
            files[path] = edited(rng, files[path])
            changes.append((path, files[path]))
        roll = rng.randrange(50)
        if roll == 0:
            path = "src/new/file%05d.txt" % mark
            files[path] = file_text(rng, 50)
            changes.append((path, files[path]))
        elif roll == 1 and len(files) > 100:
            path = rng.choice(sorted(files))
            del files[path]
            changes.append((path, None))
        if mark % 97 == 0:
            # A side branch commit merged back at once.
            emit_commit(out, "refs/heads/topic", mark, [main_mark], when,
                        "topic work %d\n\nDetails of change %d." % (mark, mark), changes)
            mark_merge = commits + mark
            emit_commit(out, "refs/heads/main", mark_merge, [main_mark, mark], when + 1,
                        "merge topic %d" % mark, [])
            main_mark = mark_merge
        else:
            emit_commit(out, "refs/heads/main", mark, [main_mark], when,
                        "change %d\n\nTouches %d files." % (mark, len(changes)), changes)
            main_mark = mark
    out.write("done\n")


if __name__ == "__main__":
    main()
