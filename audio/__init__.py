"""The sound of a scratch track, with no network and no system package: the guide voice
(``speech``), where each part plays (``timeline``) and the mix (``mix``). It reads draft
payloads as plain dicts and knows nothing of the apps; ``renders`` keeps what it makes."""
