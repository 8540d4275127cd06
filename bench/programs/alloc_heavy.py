"""An allocation-heavy Python workload with deterministic output.

Builds and tears down dicts, lists, sets, strings, tuples and objects with reference
cycles, round-trips nested structures through json, and runs the cycle collector.
Every result is printed, so two runs print the same bytes unless memory went wrong.
"""
import gc
import hashlib
import json
import random
import sys


def digest(value):
    """A short, stable fingerprint of a JSON-serialisable value."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def dict_churn(rng, rounds):
    """Grows and shrinks dicts keyed by strings and ints."""
    table = {}
    for i in range(rounds):
        key = "k%d" % rng.randrange(rounds // 4)
        table[key] = [i, str(i) * (i % 7), {"n": i}]
        table[i] = key
        if i % 3 == 0:
            table.pop("k%d" % rng.randrange(rounds // 4), None)
    return len(table), digest(sorted((str(k), str(v)) for k, v in table.items())[:500])


def string_work(rng, rounds):
    """Concatenation, splitting, joining, formatting and bytes conversion."""
    words = ["".join(rng.choice("abcdefghij") for _ in range(rng.randrange(1, 12)))
             for _ in range(rounds)]
    text = " ".join(words)
    pieces = text.split(" ")
    upper = [w.upper() + "-" + w[::-1] for w in pieces]
    encoded = "|".join(upper).encode("utf-8")
    counts = {}
    for word in pieces:
        counts[word] = counts.get(word, 0) + 1
    return len(encoded), hashlib.sha256(encoded).hexdigest()[:16], len(counts)


def json_round_trips(rng, rounds):
    """Builds nested documents and round-trips them through json."""
    checksum = 0
    for i in range(rounds):
        doc = {
            "id": i,
            "tags": ["t%d" % rng.randrange(100) for _ in range(rng.randrange(20))],
            "child": {"values": [rng.random() for _ in range(rng.randrange(30))],
                      "name": "node-%d" % i, "flags": [True, False, None]},
        }
        text = json.dumps(doc)
        back = json.loads(text)
        assert back == doc
        checksum = (checksum * 31 + len(text)) % (1 << 61)
    return checksum


class Node:
    """A graph node; graphs of them form reference cycles only gc can free."""

    def __init__(self, label):
        self.label = label
        self.edges = []
        self.payload = bytearray(64)


def cycle_graphs(rng, graphs, size):
    """Creates cyclic graphs, drops them and lets the cycle collector free them."""
    collected = 0
    for _ in range(graphs):
        nodes = [Node(i) for i in range(size)]
        for node in nodes:
            node.edges = [nodes[rng.randrange(size)] for _ in range(3)]
        del nodes
        collected += gc.collect()
    return collected > 0


def list_and_set_work(rng, size):
    """Sorting, slicing, comprehension and set algebra over large collections."""
    numbers = [rng.randrange(1 << 30) for _ in range(size)]
    numbers.sort()
    squares = [n * n % 1000003 for n in numbers[::3]]
    left = set(numbers[: size // 2])
    right = set(n // 2 for n in numbers)
    tuples = sorted((n % 97, n % 89, n) for n in squares)
    return sum(squares) % 1000003, len(left & right), len(left ^ right), tuples[len(tuples) // 2]


def main():
    scale = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    rng = random.Random(20240611)
    print("dicts", dict_churn(rng, 150000 * scale))
    print("strings", string_work(rng, 200000 * scale))
    print("json", json_round_trips(rng, 15000 * scale))
    print("cycles", cycle_graphs(rng, 20 * scale, 5000))
    print("lists", list_and_set_work(rng, 300000 * scale))


if __name__ == "__main__":
    main()
