"""The database, as the apps use it beyond the ORM: plain SQL (``sql.py``), the
database's clock (``clock.py``), a thread's connection handed back before a long wait
(``connection.py``), a step's writes in one statement (``batch.py``), what PostgreSQL
cannot store (``storable.py``) and a lost database answered with a retry or a 503
(``outage.py``). The package itself holds nothing: import its modules."""
