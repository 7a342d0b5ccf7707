"""Peer frameworks running the agent loop benchmark's standard session, so that the loop's
cost per round can be read against what other frameworks pay for the same five rounds.

``python -m benchmarks.peers`` runs them interleaved with our loop (docs/BENCHMARKS.md);
they need the optional ``bench`` extra: ``pip install -e '.[bench]'``.
"""
