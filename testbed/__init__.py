"""What the suite and the benchmarks both stand the product on, and which is not part of
it (not packaged): test doubles at the edge of the network, local servers that speak the
OpenAI-compatible (``fake_openai``) and the Anthropic Messages (``fake_anthropic``) APIs,
scripted turn by turn so that the real SDKs and HTTP stacks are exercised; and a real
Celery worker started as README deploys it (``worker``).

Script a whole agent conversation readably::

    fake.script(
        turn(tool_calls=[call("search_voices", {"language": "th"})]),
        turn(tool_calls=[call("create_voice_draft", {...}), call("create_music_draft", {...})]),
        turn("Done: voices v1 and music v1 are ready."),
    )
"""
