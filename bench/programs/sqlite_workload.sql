-- The sqlite3 workload: a 150,000-row database built, indexed, queried, updated,
-- checked and vacuumed. Lines starting "BAD" mean a wrong result; the rest is compared
-- byte for byte with the glibc run.
-- No fsync: the workload measures the allocator, not the disk.
PRAGMA synchronous = OFF;
PRAGMA cache_size = -65536;
CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT NOT NULL, region INTEGER NOT NULL);
CREATE TABLE orders(id INTEGER PRIMARY KEY, customer INTEGER NOT NULL, amount INTEGER NOT NULL,
                    note TEXT NOT NULL);
BEGIN;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000)
INSERT INTO customers SELECT i, 'customer-' || i, i % 17 FROM n;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 150000)
INSERT INTO orders
SELECT i, (i * 7919) % 5000 + 1, (i * 2654435761) % 10007,
       printf('order %d for %s', i, substr('abcdefghijklmnopqrstuvwxyz', 1 + i % 26))
FROM n;
COMMIT;

SELECT CASE WHEN count(*) = 150000 THEN 'ok orders' ELSE 'BAD orders ' || count(*) END FROM orders;
SELECT CASE WHEN sum(id) = 150000 * 150001 / 2 THEN 'ok id sum' ELSE 'BAD id sum' END FROM orders;
SELECT CASE WHEN count(*) = 5000 THEN 'ok customers' ELSE 'BAD customers' END FROM customers;

CREATE INDEX orders_by_customer ON orders(customer);
CREATE INDEX orders_by_amount ON orders(amount, note);
SELECT CASE WHEN (SELECT sum(amount) FROM orders INDEXED BY orders_by_amount WHERE amount >= 0)
               = (SELECT sum(amount) FROM orders NOT INDEXED)
            THEN 'ok index sum' ELSE 'BAD index sum' END;

SELECT region, count(*), sum(amount), min(amount), max(amount)
FROM orders JOIN customers ON customers.id = orders.customer
GROUP BY region ORDER BY region;
SELECT customer, count(*) AS n, sum(amount) FROM orders
GROUP BY customer ORDER BY n DESC, customer LIMIT 10;
SELECT count(DISTINCT note), count(DISTINCT amount) FROM orders;
SELECT note FROM orders ORDER BY note DESC, id LIMIT 5 OFFSET 70000;
SELECT id, customer, amount, rank FROM (
  SELECT id, customer, amount,
         rank() OVER (PARTITION BY customer % 10 ORDER BY amount DESC, id) AS rank
  FROM orders)
WHERE rank <= 2 ORDER BY customer % 10, rank;
SELECT length(group_concat(note, ',')), sum(length(note)) FROM orders WHERE amount < 500;
SELECT length(json_group_array(json_object('id', id, 'amount', amount, 'note', note)))
FROM orders WHERE customer < 200;

BEGIN;
UPDATE orders SET note = note || ' (repriced)', amount = amount + 1 WHERE amount % 3 = 0;
SELECT 'updated', changes();
DELETE FROM orders WHERE amount % 5 = 0;
CREATE TEMP TABLE deleted(n INTEGER);
INSERT INTO deleted VALUES (changes());
COMMIT;
SELECT CASE WHEN (SELECT count(*) FROM orders) + (SELECT n FROM deleted) = 150000
            THEN 'ok after delete' ELSE 'BAD after delete' END;
SELECT count(*), sum(amount), sum(length(note)) FROM orders;
PRAGMA integrity_check;
VACUUM;
SELECT count(*), total(amount) FROM orders;
SELECT customers.name, count(orders.id) FROM customers
LEFT JOIN orders ON orders.customer = customers.id
GROUP BY customers.id ORDER BY count(orders.id), customers.id LIMIT 5;
