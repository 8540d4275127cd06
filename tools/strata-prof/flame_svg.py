"""A self-contained SVG flame graph (no script, no external file): one box per
frame, its width its share of the value, callers below callees, a tooltip
(<title>) with the frame's name and value."""
from xml.sax.saxutils import escape

WIDTH = 1200
ROW = 17
FONT = 11


def tree_of(stacks):
    """A tree of nested dicts: name -> [value, children]."""
    root = [0, {}]
    for frames, value in stacks:
        root[0] += value
        node = root
        for name in frames:
            child = node[1].setdefault(name, [0, {}])
            child[0] += value
            node = child
    return root


def depth_of(node):
    return 1 + max((depth_of(c) for c in node[1].values()), default=0)


def colour(name):
    h = sum(name.encode()) % 60
    return f"rgb({205 + h % 50},{80 + h * 2},{40 + h % 30})"


def boxes(node, x, depth, scale, height, out):
    for name, child in sorted(node[1].items()):
        w = child[0] * scale
        if w >= 0.5:
            y = height - (depth + 2) * ROW
            label = escape(name if len(name) * FONT * 0.6 < w - 4 else name[: max(0, int((w - 4) / (FONT * 0.6)) - 2)] + ".." if w > 30 else "")
            out.append(
                f'<g><title>{escape(name)}: {child[0]}</title>'
                f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{ROW - 1}" fill="{colour(name)}" rx="2"/>'
                f'<text x="{x + 3:.1f}" y="{y + ROW - 5}">{label}</text></g>'
            )
            boxes(child, x, depth + 1, scale, height, out)
        x += w


def write_svg(path, stacks, title):
    root = tree_of(stacks)
    height = (depth_of(root) + 2) * ROW
    scale = (WIDTH - 20) / root[0] if root[0] else 0
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'font-family="monospace" font-size="{FONT}">',
        f'<rect width="100%" height="100%" fill="#fdfdf6"/>',
        f'<text x="10" y="{ROW - 4}">{escape(title)}, total {root[0]}</text>',
    ]
    boxes(root, 10, 0, scale, height, out)
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
