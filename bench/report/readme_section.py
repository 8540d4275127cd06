"""Replaces the part of a README between the strata-bench markers."""

BEGIN = "<!-- bench:begin -->"
END = "<!-- bench:end -->"


def update_readme(path, section):
    """Puts `section` between the markers; returns False when they are missing."""
    with open(path, encoding="utf-8") as file:
        text = file.read()
    start = text.find(BEGIN)
    end = text.find(END)
    if start < 0 or end < start:
        return False
    text = text[: start + len(BEGIN)] + "\n" + section.strip() + "\n" + text[end:]
    with open(path, "w", encoding="utf-8") as file:
        file.write(text)
    return True
