-- The sqlite3 insert workload (issue 35): 200,000 rows into a table with two indexes,
-- in one transaction, with a 64 MiB page cache; the result is checked, and compared
-- byte for byte with the glibc run. Lines starting "BAD" mean a wrong result.
PRAGMA synchronous = OFF;
PRAGMA cache_size = -65536;
CREATE TABLE events(id INTEGER PRIMARY KEY, source INTEGER NOT NULL, score INTEGER NOT NULL,
                    label TEXT NOT NULL);
CREATE INDEX events_by_source ON events(source, score);
CREATE INDEX events_by_label ON events(label);
BEGIN;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200000)
INSERT INTO events
SELECT i, (i * 7919) % 9973, (i * 2654435761) % 100003,
       printf('event %08x from %s', (i * 40503) % 1000003, substr('abcdefghijklmnopqrstuvwxyz', 1 + i % 26, 5))
FROM n;
COMMIT;
SELECT CASE WHEN count(*) = 200000 THEN 'ok rows' ELSE 'BAD rows ' || count(*) END FROM events;
SELECT CASE WHEN (SELECT count(*) FROM events INDEXED BY events_by_label WHERE label > '')
               = 200000 THEN 'ok label index' ELSE 'BAD label index' END;
SELECT source, count(*), sum(score) FROM events INDEXED BY events_by_source
WHERE source < 3 GROUP BY source ORDER BY source;
