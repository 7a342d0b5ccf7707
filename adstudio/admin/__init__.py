"""What the apps' admin pages share: columns that fit a laptop's screen (``columns.py``),
readable JSON (``json.py``), pages of records only the product writes (``readonly.py``)
and search by id (``search.py``). The project package is no installed app, so Django's
admin does not import this package; the apps' ``admin.py`` import its modules."""
